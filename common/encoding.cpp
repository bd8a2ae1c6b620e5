#include "common/encoding.h"

namespace vt {

std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void Writer::PutVarint(std::uint64_t v) {
  while (v >= 0x80) {
    m_out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  m_out.push_back(static_cast<std::uint8_t>(v));
}

void Writer::PutBytes(ByteSpan v) {
  PutVarint(v.size());
  PutFixed(v);
}

Status Reader::Need(std::size_t n) const {
  if (remaining() < n)
    return Status::Invalid("enc-truncated", "need " + std::to_string(n) + " bytes at offset " +
                                                std::to_string(m_pos) + ", have " +
                                                std::to_string(remaining()));
  return Status::Ok();
}

Result<std::uint64_t> Reader::GetLe(std::size_t n) {
  VT_TRY(Need(n));
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(m_in[m_pos + i]) << (8 * i);
  m_pos += n;
  return v;
}

Result<std::uint8_t> Reader::GetU8() {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, GetLe(1));
  return static_cast<std::uint8_t>(v);
}
Result<std::uint16_t> Reader::GetU16() {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, GetLe(2));
  return static_cast<std::uint16_t>(v);
}
Result<std::uint32_t> Reader::GetU32() {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, GetLe(4));
  return static_cast<std::uint32_t>(v);
}
Result<std::uint64_t> Reader::GetU64() { return GetLe(8); }
Result<std::int64_t> Reader::GetI64() {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, GetLe(8));
  return static_cast<std::int64_t>(v);  // two's complement (well-defined since C++20)
}

Result<std::uint64_t> Reader::GetVarint() {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (remaining() == 0) return Status::Invalid("enc-truncated", "varint runs past the end of the input");
    const std::uint8_t byte = m_in[m_pos++];
    const std::uint64_t group = byte & 0x7f;
    // The 10th byte holds bit 63 only.
    if (i == kMaxVarintBytes - 1 && group > 1)
      return Status::Invalid("enc-varint-overflow", "varint exceeds 64 bits");
    v |= group << (7 * i);
    if ((byte & 0x80) == 0) {
      // A last group of zero (after the first) could have been left out.
      if (i > 0 && group == 0)
        return Status::Invalid("enc-non-minimal-varint", "varint has a redundant zero group");
      return v;
    }
  }
  return Status::Invalid("enc-varint-overflow", "varint longer than 10 bytes");
}

Result<bool> Reader::GetBool() {
  VT_TRY(Need(1));
  const std::uint8_t b = m_in[m_pos];
  if (b > 1) return Status::Invalid("enc-bad-bool", "bool byte " + std::to_string(b));
  ++m_pos;
  return b == 1;
}

Result<ByteSpan> Reader::GetBytesView(std::size_t max_len) {
  VT_ASSIGN_OR_RETURN(std::uint64_t len, GetVarint());
  if (len > max_len)
    return Status::Invalid("enc-length-over-cap",
                           "length " + std::to_string(len) + " over cap " + std::to_string(max_len));
  return GetFixed(static_cast<std::size_t>(len));
}

Result<Bytes> Reader::GetBytes(std::size_t max_len) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, GetBytesView(max_len));
  return Bytes(view.begin(), view.end());
}

Result<std::string> Reader::GetString(std::size_t max_len) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, GetBytesView(max_len));
  return std::string(view.begin(), view.end());
}

Result<Hash256> Reader::GetHash() {
  VT_ASSIGN_OR_RETURN(ByteSpan view, GetFixed(Hash256::kSize));
  Hash256 h;
  std::copy(view.begin(), view.end(), h.bytes.begin());
  return h;
}

Result<ByteSpan> Reader::GetFixed(std::size_t n) {
  VT_TRY(Need(n));
  ByteSpan view = m_in.subspan(m_pos, n);
  m_pos += n;
  return view;
}

Status Reader::Finish() const {
  if (remaining() != 0)
    return Status::Invalid("enc-trailing-bytes", std::to_string(remaining()) + " bytes after the value");
  return Status::Ok();
}

}  // namespace vt
