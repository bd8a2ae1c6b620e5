#include "net/frame.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <iterator>
#include <string>

#include "common/limits.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::net {
namespace {

constexpr std::size_t kKiB = 1024;

std::uint32_t LoadLe32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
std::uint16_t LoadLe16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | p[1] << 8);
}
void StoreLe32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// The payload buffer never grows ahead of the bytes that arrived by more than
// this, so a peer that announces 16 MiB and sends 10 bytes costs ~64 KiB.
constexpr std::size_t kMaxReserveAhead = 64 * kKiB;

}  // namespace

static_assert(limits::kMaxBlockBytes <= kMaxFramePayload && limits::kMaxTxBytes <= limits::kMaxBlockBytes);

namespace {

constexpr MsgSpec kMsgSpecs[] = {
#define VT_NET_MSG_SPEC(enumerator, wire, name, max_payload, phase, handler) \
  {MsgType::enumerator, name, static_cast<std::uint32_t>(max_payload), MsgPhase::phase},
    VT_NET_MSG_TYPES(VT_NET_MSG_SPEC)
#undef VT_NET_MSG_SPEC
};

constexpr bool SpecsAreSound() {
  for (std::size_t i = 0; i < std::size(kMsgSpecs); ++i) {
    const MsgSpec& a = kMsgSpecs[i];
    if (a.max_payload == 0 || a.max_payload > kMaxFramePayload || a.name.empty()) return false;
    for (std::size_t j = i + 1; j < std::size(kMsgSpecs); ++j) {
      if (a.type == kMsgSpecs[j].type || a.name == kMsgSpecs[j].name) return false;
    }
  }
  return true;
}
static_assert(SpecsAreSound(), "net/msg_types.h: wire numbers and names are unique, caps within the frame cap");

}  // namespace

const MsgSpec* FindMsgSpec(std::uint16_t type) {
  for (const MsgSpec& spec : kMsgSpecs) {
    if (static_cast<std::uint16_t>(spec.type) == type) return &spec;
  }
  return nullptr;
}

std::uint32_t MaxPayload(std::uint16_t type) {
  const MsgSpec* spec = FindMsgSpec(type);
  return spec == nullptr ? 0 : spec->max_payload;
}

std::string_view MsgTypeName(MsgType type) {
  const MsgSpec* spec = FindMsgSpec(static_cast<std::uint16_t>(type));
  return spec == nullptr ? "unknown" : spec->name;
}

std::uint32_t ChainMagic(std::string_view chain_id) {
  const Hash256 h = crypto::TaggedHash(crypto::tags::kNetMagic, AsBytes(chain_id));
  return LoadLe32(h.bytes.data());
}

Checksum PayloadChecksum(ByteSpan payload) {
  const Hash256 h = crypto::Sha256Digest(payload);
  Checksum c;
  std::copy_n(h.bytes.begin(), c.size(), c.begin());
  return c;
}

FrameHeaderBytes EncodeFrameHeader(std::uint32_t magic, MsgType type, ByteSpan payload) {
  return EncodeFrameHeader(magic, type, payload.size(), crypto::Sha256Digest(payload));
}

FrameHeaderBytes EncodeFrameHeader(std::uint32_t magic, MsgType type, std::size_t payload_size,
                                   const Hash256& payload_sha256) {
  assert(payload_size <= MaxPayload(type) && "frame payload over its type's cap");
  FrameHeaderBytes h{};
  StoreLe32(&h[0], magic);
  const auto t = static_cast<std::uint16_t>(type);
  h[4] = static_cast<std::uint8_t>(t);
  h[5] = static_cast<std::uint8_t>(t >> 8);
  StoreLe32(&h[6], static_cast<std::uint32_t>(payload_size));
  std::copy_n(payload_sha256.bytes.begin(), 4, h.begin() + 10);
  return h;
}

Bytes EncodeFrame(std::uint32_t magic, MsgType type, ByteSpan payload) {
  const auto header = EncodeFrameHeader(magic, type, payload);
  // resize + memcpy rather than two inserts: GCC 12 reports a bogus
  // -Wstringop-overflow for vector::insert after reserve.
  Bytes out(header.size() + payload.size());
  std::memcpy(out.data(), header.data(), header.size());
  if (!payload.empty()) std::memcpy(out.data() + header.size(), payload.data(), payload.size());
  return out;
}

namespace {
Status CheckMagic(std::uint32_t expected, const std::uint8_t* p) {
  const std::uint32_t got = LoadLe32(p);
  if (got != expected) {
    return Status::Invalid("frame-bad-magic", "magic " + std::to_string(got) + " is not this chain's");
  }
  return Status::Ok();
}
}  // namespace

Result<FrameHeader> ParseFrameHeader(std::uint32_t magic, ByteSpan header, std::uint32_t overhead) {
  if (header.size() < kFrameHeaderSize) return Status::Invalid("frame-truncated", "short frame header");
  VT_TRY(CheckMagic(magic, header.data()));
  FrameHeader h;
  h.magic = magic;
  h.type = LoadLe16(header.data() + 4);
  h.length = LoadLe32(header.data() + 6);
  std::copy_n(header.begin() + 10, h.checksum.size(), h.checksum.begin());
  if (MaxPayload(h.type) == 0) return Status::Invalid("frame-unknown-type", "message type " + std::to_string(h.type));
  const std::uint32_t cap = MaxPayload(h.type) + overhead;
  if (h.length > cap) {
    return Status::Invalid("frame-oversize", "announced " + std::to_string(h.length) + " bytes, cap " +
                                                 std::to_string(cap));
  }
  return h;
}

Result<SealedFrame> SealFrame(crypto::SessionCipher& cipher, const FrameHeaderBytes& header, ByteSpan payload) {
  SealedFrame out;
  out.header = header;
  StoreLe32(&out.header[6], static_cast<std::uint32_t>(payload.size() + kSealOverhead));
  std::fill(out.header.begin() + 10, out.header.end(), std::uint8_t{0});
  out.body.reserve(payload.size() + kSealOverhead);
  VT_TRY(cipher.Seal(out.header, payload, out.body));
  return out;
}

Status FrameDecoder::Fail(Status status) {
  m_error = std::move(status);
  m_payload = Bytes();  // release what the bad frame held
  m_parsed.reset();
  return m_error;
}

Result<std::size_t> FrameDecoder::Feed(ByteSpan data) {
  if (!m_error.ok()) return m_error;
  if (m_ready) return std::size_t{0};  // the caller must take the frame first
  std::size_t used = 0;
  if (!m_parsed) {
    const std::size_t before = m_header_fill;
    const std::size_t take = std::min(kFrameHeaderSize - m_header_fill, data.size());
    std::copy_n(data.begin(), take, m_header.begin() + static_cast<std::ptrdiff_t>(m_header_fill));
    m_header_fill += take;
    used += take;
    // Garbage is rejected at the 4th byte, not after a whole header.
    if (before < 4 && m_header_fill >= 4) {
      if (Status s = CheckMagic(m_magic, m_header.data()); !s.ok()) return Fail(std::move(s));
    }
    if (m_header_fill < kFrameHeaderSize) return used;
    auto parsed = ParseFrameHeader(m_magic, m_header, m_cipher ? kSealOverhead : 0);
    if (!parsed.ok()) return Fail(parsed.status());
    m_parsed = *parsed;
    m_payload.clear();
    m_payload.reserve(std::min<std::size_t>(m_parsed->length, kMaxReserveAhead));
  }
  const std::size_t want = m_parsed->length - m_payload.size();
  const std::size_t take = std::min(want, data.size() - used);
  m_payload.insert(m_payload.end(), data.begin() + static_cast<std::ptrdiff_t>(used),
                   data.begin() + static_cast<std::ptrdiff_t>(used + take));
  used += take;
  if (m_payload.size() < m_parsed->length) return used;

  if (m_cipher) {
    // The tag covers the header too; the plaintext's SHA-256 is still
    // computed below (gossip uses it as the content id).
    Result<Bytes> plain = m_cipher->Open(m_header, m_payload);
    if (!plain.ok()) return Fail(Status::Invalid("frame-bad-tag", "a sealed frame did not open"));
    m_payload = std::move(plain).value();
  }
  const Hash256 digest = crypto::Sha256Digest(m_payload);
  if (!m_cipher && !std::equal(m_parsed->checksum.begin(), m_parsed->checksum.end(), digest.bytes.begin())) {
    return Fail(Status::Invalid("frame-bad-checksum", "payload checksum mismatch"));
  }
  m_ready = Frame{static_cast<MsgType>(m_parsed->type), std::move(m_payload), digest};
  m_payload = Bytes();
  m_parsed.reset();
  m_header_fill = 0;
  return used;
}

std::optional<Frame> FrameDecoder::TakeFrame() {
  std::optional<Frame> out = std::move(m_ready);
  m_ready.reset();
  return out;
}

Status FrameDecoder::Finish() const {
  if (!m_error.ok()) return m_error;
  if (m_header_fill > 0 || m_parsed) {
    return Status::Invalid("frame-truncated", "input ended inside a frame");
  }
  return Status::Ok();
}

Result<Frame> DecodeFrame(std::uint32_t magic, ByteSpan bytes) {
  FrameDecoder decoder(magic);
  VT_ASSIGN_OR_RETURN(std::size_t used, decoder.Feed(bytes));
  std::optional<Frame> frame = decoder.TakeFrame();
  if (!frame) {
    VT_TRY(decoder.Finish());
    return Status::Invalid("frame-truncated", "no bytes");
  }
  if (used != bytes.size()) {
    return Status::Invalid("frame-trailing-bytes", std::to_string(bytes.size() - used) + " bytes after the frame");
  }
  return std::move(*frame);
}

}  // namespace vt::net
