#pragma once
// Payloads of the P2P frames (docs/formats.md, "P2P wire format"), encoded
// with the canonical encoder of common/encoding.h. Decoders are strict: they
// reject trailing bytes, lengths over the caps below and unknown enum values
// with the enc-* reasons of common/encoding.h, and add these:
//   msg-empty-gossip      a tx/block payload of zero bytes
//   msg-bad-count         a request asking for 0 items, or more than the cap
//
// Gossip frames (kTx, kBlock) carry the opaque item itself as the payload;
// there is no struct for them.

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/limits.h"
#include "common/result.h"
#include "crypto/keys.h"

namespace vt::net {

// Version of this wire protocol; peers must match exactly (the handshake
// rejects others with "handshake-bad-version"). 2: node ids are proven keys
// (Hello carries a challenge, Auth a signature; net/handshake.h).
// 3: X25519 ephemeral keys in hello, every frame after auth sealed with
// ChaCha20-Poly1305 (docs/net.md, "Frame encryption").
inline constexpr std::uint32_t kProtocolVersion = 3;

inline constexpr std::size_t kMaxChainIdBytes = 64;
inline constexpr std::size_t kMaxUserAgentBytes = 64;
inline constexpr std::size_t kMaxReasonBytes = 200;
// Items in one Headers/Blocks response, whatever the request asked for.
inline constexpr std::uint32_t kMaxItemsPerResponse = 1024;
// One sync item: a block with room for what travels beside it (a final
// block's commit certificate, at most ~70 KB for 1024 validators; the node
// checks that it fits). Above the gossip block cap, within the frame cap.
inline constexpr std::size_t kMaxSyncItemBytes = limits::kMaxBlockBytes + (std::size_t{1} << 17);
// Data bytes in one BlobChunk.
inline constexpr std::uint32_t kMaxBlobChunk = std::uint32_t{8} << 20;

struct Hello {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string chain_id;
  Hash256 genesis_hash;
  // The sender's node key: a BIP-340 x-only secp256k1 public key. Only a
  // claim until the sender's Auth proves it (net/handshake.h).
  Hash256 node_id;
  // 32 fresh random bytes per connection; the peer's Auth signs over it.
  Hash256 challenge;
  // A fresh X25519 public key per connection: with the peer's, it gives the
  // session keys that seal every frame after Auth (net/handshake.h). Both
  // Auth signatures cover it, so nobody in the path can swap it.
  Hash256 ephemeral;
  std::uint16_t listen_port = 0;  // 0: not accepting connections
  std::uint64_t best_height = 0;  // BlockSource::TipHeight() when sent
  std::string user_agent;

  bool operator==(const Hello&) const = default;
};

// The sender's proof of its node key: a BIP-340 signature over the
// handshake transcript (net/handshake.h) with the key named in its Hello.
struct AuthMsg {
  crypto::Signature signature;
  bool operator==(const AuthMsg&) const = default;
};

struct DisconnectMsg {
  std::string reason;  // a stable reason code such as "handshake-wrong-chain"
  bool operator==(const DisconnectMsg&) const = default;
};

struct PingMsg {
  std::uint64_t nonce = 0;
  bool operator==(const PingMsg&) const = default;
};

// kGetHeaders / kGetBlocks: items at heights from, from+1, … (at most max_count).
struct GetItems {
  std::uint64_t request_id = 0;
  std::uint64_t from_height = 0;
  std::uint32_t max_count = 0;
  bool operator==(const GetItems&) const = default;
};

// kHeaders / kBlocks: the answer; `items[i]` is at height first_height + i.
// Fewer items than asked means the responder has no more (or hit its
// per-response byte limit); zero items means it has nothing at from_height.
struct Items {
  std::uint64_t request_id = 0;
  std::uint64_t first_height = 0;
  std::vector<Bytes> items;
  bool operator==(const Items&) const = default;
};

struct GetBlob {
  std::uint64_t request_id = 0;
  Hash256 hash;  // SHA-256 of the whole blob
  std::uint64_t offset = 0;
  std::uint32_t max_len = 0;
  bool operator==(const GetBlob&) const = default;
};

struct BlobChunk {
  std::uint64_t request_id = 0;
  Hash256 hash;
  std::uint64_t total_size = 0;
  std::uint64_t offset = 0;
  Bytes data;
  bool operator==(const BlobChunk&) const = default;
};

struct BlobNotFound {
  std::uint64_t request_id = 0;
  Hash256 hash;
  bool operator==(const BlobNotFound&) const = default;
};

void Encode(Writer& w, const Hello& v);
Result<Hello> Decode(Reader& r, DecodeAs<Hello>);
void Encode(Writer& w, const AuthMsg& v);
Result<AuthMsg> Decode(Reader& r, DecodeAs<AuthMsg>);
void Encode(Writer& w, const DisconnectMsg& v);
Result<DisconnectMsg> Decode(Reader& r, DecodeAs<DisconnectMsg>);
void Encode(Writer& w, const PingMsg& v);
Result<PingMsg> Decode(Reader& r, DecodeAs<PingMsg>);
void Encode(Writer& w, const GetItems& v);
Result<GetItems> Decode(Reader& r, DecodeAs<GetItems>);
void Encode(Writer& w, const Items& v);
Result<Items> Decode(Reader& r, DecodeAs<Items>);
void Encode(Writer& w, const GetBlob& v);
Result<GetBlob> Decode(Reader& r, DecodeAs<GetBlob>);
void Encode(Writer& w, const BlobChunk& v);
Result<BlobChunk> Decode(Reader& r, DecodeAs<BlobChunk>);
void Encode(Writer& w, const BlobNotFound& v);
Result<BlobNotFound> Decode(Reader& r, DecodeAs<BlobNotFound>);

}  // namespace vt::net
