#pragma once
// The authenticated P2P handshake (docs/net.md, "Handshake").
//
// A node id is a secp256k1 x-only public key (crypto/keys.h). Each side of a
// connection sends a Hello with its node id and a fresh 32-byte random
// challenge; on the peer's Hello it answers Auth: a BIP-340 signature, with
// its node key, of
//
//   TaggedHash("veritrain/net/handshake/v1",
//              u32 protocol version ‖ string chain id ‖ genesis hash ‖
//              dialer id ‖ dialer challenge ‖ dialer ephemeral ‖
//              listener id ‖ listener challenge ‖ listener ephemeral ‖
//              u16 listener port ‖ u8 signer role)
//
// and it accepts the peer only when the peer's Auth verifies under the node id
// the peer claimed. What each binding stops:
// * the verifier's own fresh challenge: replay of any earlier signature;
// * both ids: a signature the honest node gave to one peer (its "peer id")
//   is useless at any other node;
// * the signer role (dialer/listener): reflecting a node's own proof back at
//   it, or using the proof of one direction in the other;
// * chain id and genesis: use on another network;
// * the listener port (the port the dialer connected to, which the listener
//   sees as its local port): a relay that the honest node dials and that
//   passes the challenges on to a victim listening on another port.
// * both ephemeral X25519 keys: the session keys (DeriveSessionKeys) come
//   from them, so a relay on the path (a byte relay the honest node dials,
//   or one at the same port number on another host) can pass the handshake
//   on but never learns the keys: every later frame is sealed under them
//   (docs/net.md, "Frame encryption"), and it can neither read, alter,
//   inject, replay, reorder nor drop a frame without the connection closing.
// * the tag: the signature is never valid for a block, tx or vote, although
//   validators sign it with their block key.

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/keys.h"
#include "crypto/session_cipher.h"

namespace vt::net {

enum class HandshakeRole : std::uint8_t { kDialer = 0, kListener = 1 };

// Everything both sides know once they have seen each other's Hello.
struct HandshakeTranscript {
  std::uint32_t protocol_version = 0;
  std::string chain_id;
  Hash256 genesis_hash;
  Hash256 dialer_id;
  Hash256 dialer_challenge;
  Hash256 dialer_ephemeral;  // X25519 public keys (Hello::ephemeral)
  Hash256 listener_id;
  Hash256 listener_challenge;
  Hash256 listener_ephemeral;
  std::uint16_t listener_port = 0;
};

// The 32 bytes that `signer` signs.
Hash256 HandshakeDigest(const HandshakeTranscript& t, HandshakeRole signer);

// The signer's id is dialer_id or listener_id by role; the key must match it
// (Error "handshake-wrong-key" otherwise, a programmer error).
Result<crypto::Signature> SignHandshake(const crypto::SecretKey& key, const HandshakeTranscript& t,
                                        HandshakeRole signer);
// True when `sig` is the signer's (by role) valid signature of the transcript;
// false also when the signer's id is not a valid x-only key.
bool VerifyHandshake(const HandshakeTranscript& t, HandshakeRole signer, const crypto::Signature& sig);

// The two keys of one side of a connection: `send` seals what it sends,
// `recv` opens what it receives (the peer's send key).
struct SessionKeys {
  crypto::AeadKey send{};
  crypto::AeadKey recv{};
};

// Session keys for the side `ours`, whose ephemeral key is `ephemeral`:
//   secret = X25519(our ephemeral, the peer's ephemeral in the transcript)
//   key(d) = TaggedHash("veritrain/net/session-key/v1",
//                       secret ‖ the transcript as signed, without the role ‖ u8 d)
// with d = 0 for dialer → listener and 1 for listener → dialer. Invalid
// "handshake-bad-ephemeral" when the peer's key is a low-order point (the
// secret would be known to anyone).
Result<SessionKeys> DeriveSessionKeys(const HandshakeTranscript& t, HandshakeRole ours,
                                      const crypto::X25519Key& ephemeral);

// A node id from a key.
Hash256 NodeIdOf(const crypto::PublicKey& key);

}  // namespace vt::net
