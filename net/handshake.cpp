#include "net/handshake.h"

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::net {

namespace {
// The transcript as both sides sign it, without the signer's role.
void PutTranscript(Writer& w, const HandshakeTranscript& t) {
  w.PutU32(t.protocol_version);
  w.PutString(t.chain_id);
  w.PutHash(t.genesis_hash);
  w.PutHash(t.dialer_id);
  w.PutHash(t.dialer_challenge);
  w.PutHash(t.dialer_ephemeral);
  w.PutHash(t.listener_id);
  w.PutHash(t.listener_challenge);
  w.PutHash(t.listener_ephemeral);
  w.PutU16(t.listener_port);
}
}  // namespace

Hash256 HandshakeDigest(const HandshakeTranscript& t, HandshakeRole signer) {
  Writer w;
  PutTranscript(w, t);
  w.PutU8(static_cast<std::uint8_t>(signer));
  return crypto::TaggedHash(crypto::tags::kNetHandshake, w.bytes());
}

Result<SessionKeys> DeriveSessionKeys(const HandshakeTranscript& t, HandshakeRole ours,
                                      const crypto::X25519Key& ephemeral) {
  const Hash256& theirs = ours == HandshakeRole::kDialer ? t.listener_ephemeral : t.dialer_ephemeral;
  crypto::X25519Public peer{};
  std::copy(theirs.bytes.begin(), theirs.bytes.end(), peer.begin());
  Result<crypto::SharedSecret> secret = ephemeral.Agree(peer);
  if (!secret.ok()) return Status::Invalid("handshake-bad-ephemeral", secret.status().reason());
  auto key = [&](std::uint8_t direction) {
    Writer w;
    w.PutFixed(*secret);
    PutTranscript(w, t);
    w.PutU8(direction);
    const Hash256 h = crypto::TaggedHash(crypto::tags::kNetSessionKey, w.bytes());
    crypto::AeadKey k{};
    std::copy(h.bytes.begin(), h.bytes.end(), k.begin());
    return k;
  };
  const crypto::AeadKey to_listener = key(0), to_dialer = key(1);
  secret->fill(0);
  return ours == HandshakeRole::kDialer ? SessionKeys{to_listener, to_dialer} : SessionKeys{to_dialer, to_listener};
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
