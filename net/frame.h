#pragma once
// P2P framing (docs/formats.md, "P2P wire format"). Every message on a peer
// connection is one frame:
//
//   offset size field
//   0      4    magic      u32 LE, per chain (ChainMagic)
//   4      2    type       u16 LE, a MsgType
//   6      4    length     u32 LE, payload bytes, <= MaxPayload(type) <= 16 MiB
//   10     4    checksum   first 4 bytes of SHA-256(payload)
//   14     len  payload
//
// The decoder is incremental and never trusts the announced length: it checks
// the magic as soon as 4 bytes are in, then type and length against the
// per-type cap before it keeps a single payload byte, and it grows the payload
// buffer only as bytes actually arrive. Every rejection is Status::Invalid
// with a stable reason:
//   frame-bad-magic       the first 4 bytes are not this chain's magic
//   frame-unknown-type    a type that MsgType does not define
//   frame-oversize        announced length above the type's cap
//   frame-bad-checksum    payload does not match the checksum
//   frame-truncated       input ended inside a frame (Finish / DecodeFrame)
//   frame-trailing-bytes  DecodeFrame: bytes after the one frame
//   frame-bad-tag         a sealed frame that does not open (see below)
//
// Sealed frames (protocol version 3, docs/net.md "Frame encryption"): once a
// side has sent its Auth, every frame it sends is sealed with its session
// key (net/handshake.h DeriveSessionKeys): the header keeps magic and type,
// length = payload + 16, checksum = 0 (the tag authenticates instead); the
// body is ChaCha20-Poly1305(payload) ‖ 16-byte tag, with the 14 header bytes
// as associated data and the direction's frame counter (0, 1, 2, …) as
// nonce. The receiver opens frames in order from the peer's Auth on, so any
// altered, injected, replayed, reordered or dropped frame fails to open.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/session_cipher.h"
#include "net/msg_types.h"

namespace vt::net {

inline constexpr std::size_t kFrameHeaderSize = 14;
using FrameHeaderBytes = std::array<std::uint8_t, kFrameHeaderSize>;
// The hard cap over all types; no frame is ever larger.
inline constexpr std::uint32_t kMaxFramePayload = std::uint32_t{16} << 20;
// Bytes a sealed frame adds to its payload (the AEAD tag).
inline constexpr std::uint32_t kSealOverhead = static_cast<std::uint32_t>(crypto::kAeadTagBytes);
// The largest length field on the wire (a sealed frame at the cap).
inline constexpr std::uint32_t kMaxFrameLength = kMaxFramePayload + kSealOverhead;

enum class MsgType : std::uint16_t {
#define VT_NET_MSG_ENUM(enumerator, wire, ...) enumerator = wire,
  VT_NET_MSG_TYPES(VT_NET_MSG_ENUM)
#undef VT_NET_MSG_ENUM
};

// When a message may arrive (net/msg_types.h).
enum class MsgPhase : std::uint8_t { kAny, kHandshake, kEstablished };

// One row of the table in net/msg_types.h.
struct MsgSpec {
  MsgType type;
  std::string_view name;
  std::uint32_t max_payload;
  MsgPhase phase;
};

// The row of a wire type number; nullptr for a type we do not know.
const MsgSpec* FindMsgSpec(std::uint16_t type);
inline const MsgSpec& SpecOf(MsgType type) { return *FindMsgSpec(static_cast<std::uint16_t>(type)); }

// Largest payload a frame of `type` may carry; 0 for a type we do not know.
std::uint32_t MaxPayload(std::uint16_t type);
inline std::uint32_t MaxPayload(MsgType type) { return MaxPayload(static_cast<std::uint16_t>(type)); }
inline bool IsKnownType(std::uint16_t type) { return FindMsgSpec(type) != nullptr; }
std::string_view MsgTypeName(MsgType type);

// The frame magic of a chain: the first 4 bytes (LE) of
// TaggedHash("veritrain/net/magic/v1", chain_id). Nodes of different chains
// therefore see each other's bytes as garbage at the first frame.
std::uint32_t ChainMagic(std::string_view chain_id);

using Checksum = std::array<std::uint8_t, 4>;
Checksum PayloadChecksum(ByteSpan payload);

struct Frame {
  MsgType type{};
  Bytes payload;
  // SHA-256(payload), computed once by the decoder to check the checksum and
  // reused by gossip as the content id (the checksum is its first 4 bytes).
  Hash256 payload_sha256;
};

struct FrameHeader {
  std::uint32_t magic = 0;
  std::uint16_t type = 0;
  std::uint32_t length = 0;
  Checksum checksum{};
};

// The 14 header bytes for `payload` (the payload itself is sent after it, so a
// payload shared between peers is never copied). Precondition: the payload is
// within MaxPayload(type) (programmer error otherwise).
FrameHeaderBytes EncodeFrameHeader(std::uint32_t magic, MsgType type, ByteSpan payload);
// Same, when SHA-256(payload) is already known (gossip: the content id).
FrameHeaderBytes EncodeFrameHeader(std::uint32_t magic, MsgType type, std::size_t payload_size,
                                   const Hash256& payload_sha256);
// Header and payload in one buffer.
Bytes EncodeFrame(std::uint32_t magic, MsgType type, ByteSpan payload);

// Parses a complete header and checks magic, type and cap (not the checksum);
// `overhead` is added to the type's cap (kSealOverhead for a sealed frame).
Result<FrameHeader> ParseFrameHeader(std::uint32_t magic, ByteSpan header, std::uint32_t overhead = 0);

// The sealed form of a frame whose plaintext header is `header` (its length
// must be payload.size(); its checksum is ignored): the sealed header and
// body. Error from the cipher (counter exhausted).
struct SealedFrame {
  FrameHeaderBytes header;
  Bytes body;  // ciphertext ‖ tag
};
Result<SealedFrame> SealFrame(crypto::SessionCipher& cipher, const FrameHeaderBytes& header, ByteSpan payload);

class FrameDecoder {
 public:
  explicit FrameDecoder(std::uint32_t magic) : m_magic(magic) {}

  // Consumes bytes from `data` up to the end of the current frame and returns
  // how many it took. When a frame completes it stops there; TakeFrame() then
  // yields it. After an error the decoder is poisoned: every later call
  // returns the same error.
  Result<std::size_t> Feed(ByteSpan data);
  // The completed frame, if any (once).
  std::optional<Frame> TakeFrame();

  // Every frame after the one in progress (call it between frames, e.g. from
  // the handler of the frame just taken) is sealed and opened with `cipher`.
  void OpenFromNow(crypto::SessionCipher cipher) { m_cipher.emplace(std::move(cipher)); }
  bool sealed() const { return m_cipher.has_value(); }

  // Ok when no partial frame is buffered; frame-truncated otherwise. Call it
  // when the input ended (end of stream, end of a test vector).
  Status Finish() const;

  // Bytes held for the frame in progress (header + payload so far).
  std::size_t buffered() const { return m_header_fill + m_payload.size(); }
  // Capacity of the payload buffer: tests check that an announced length is
  // never turned into an allocation.
  std::size_t payload_capacity() const { return m_payload.capacity(); }

 private:
  Status Fail(Status status);

  std::uint32_t m_magic;
  std::array<std::uint8_t, kFrameHeaderSize> m_header{};
  std::size_t m_header_fill = 0;
  std::optional<FrameHeader> m_parsed;
  Bytes m_payload;
  std::optional<Frame> m_ready;
  Status m_error;
  std::optional<crypto::SessionCipher> m_cipher;  // set: frames are sealed
};

// Decodes exactly one frame spanning all of `bytes`.
Result<Frame> DecodeFrame(std::uint32_t magic, ByteSpan bytes);

}  // namespace vt::net
