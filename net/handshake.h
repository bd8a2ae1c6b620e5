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
//              dialer id ‖ dialer challenge ‖ listener id ‖ listener challenge ‖
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
//   passes the challenges on to a victim listening on another port. A relay
//   at the same port number on another host, or a full byte relay that the
//   honest node dials, is on the path and can only be stopped by transport
//   encryption (not done: docs/net.md, "Limits").
// * the tag: the signature is never valid for a block, tx or vote, although
//   validators sign it with their block key.

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/keys.h"

namespace vt::net {

enum class HandshakeRole : std::uint8_t { kDialer = 0, kListener = 1 };

// Everything both sides know once they have seen each other's Hello.
struct HandshakeTranscript {
  std::uint32_t protocol_version = 0;
  std::string chain_id;
  Hash256 genesis_hash;
  Hash256 dialer_id;
  Hash256 dialer_challenge;
  Hash256 listener_id;
  Hash256 listener_challenge;
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

// A node id from a key.
Hash256 NodeIdOf(const crypto::PublicKey& key);

}  // namespace vt::net
