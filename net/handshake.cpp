#include "net/handshake.h"

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::net {

Hash256 HandshakeDigest(const HandshakeTranscript& t, HandshakeRole signer) {
  Writer w;
  w.PutU32(t.protocol_version);
  w.PutString(t.chain_id);
  w.PutHash(t.genesis_hash);
  w.PutHash(t.dialer_id);
  w.PutHash(t.dialer_challenge);
  w.PutHash(t.listener_id);
  w.PutHash(t.listener_challenge);
  w.PutU16(t.listener_port);
  w.PutU8(static_cast<std::uint8_t>(signer));
  return crypto::TaggedHash(crypto::tags::kNetHandshake, w.bytes());
}

namespace {
const Hash256& SignerId(const HandshakeTranscript& t, HandshakeRole signer) {
  return signer == HandshakeRole::kDialer ? t.dialer_id : t.listener_id;
}
}  // namespace

Hash256 NodeIdOf(const crypto::PublicKey& key) {
  Hash256 id;
  std::copy(key.bytes().begin(), key.bytes().end(), id.bytes.begin());
  return id;
}

Result<crypto::Signature> SignHandshake(const crypto::SecretKey& key, const HandshakeTranscript& t,
                                        HandshakeRole signer) {
  if (NodeIdOf(key.public_key()) != SignerId(t, signer)) return Status::Error("handshake-wrong-key");
  const Hash256 digest = HandshakeDigest(t, signer);
  return crypto::Sign(key, digest.bytes);
}

bool VerifyHandshake(const HandshakeTranscript& t, HandshakeRole signer, const crypto::Signature& sig) {
  const Hash256 digest = HandshakeDigest(t, signer);
  return crypto::VerifyBytes(SignerId(t, signer).bytes, digest.bytes, sig.bytes);
}

}  // namespace vt::net
