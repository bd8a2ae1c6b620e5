#pragma once
// The one canonical encoder for everything that is hashed or signed
// (docs/style.md, "Consensus data is canonical"; byte format in docs/formats.md).
//
//   u8/u16/u32/u64  fixed width, little-endian
//   i64             two's complement, 8 bytes little-endian
//   varint          unsigned LEB128, minimal (no redundant 0x80 / trailing 0x00 groups), <= 64 bits
//   bool            one byte, 0x00 or 0x01
//   bytes / string  varint length, then the raw bytes
//   hash            32 raw bytes
//   fixed           raw bytes whose length the schema fixes (no prefix)
//   vector<T>       varint count, then each element
//   optional<T>     bool tag, then the value when the tag is 1
//   enum            varint of the underlying value
// Fields go in declaration order; there are no floats in consensus objects.
//
// The Reader is strict: one value has exactly one encoding. Every rejection is
// Status::Invalid with one of these stable reason codes (part of the protocol):
//   enc-truncated           input ends inside a value
//   enc-non-minimal-varint  a varint with a redundant trailing zero group
//   enc-varint-overflow     a varint longer than 10 bytes or above 2^64-1
//   enc-length-over-cap     a byte length or element count above the caller's cap
//   enc-bad-bool            a bool (or optional tag) byte other than 0x00/0x01
//   enc-unknown-enum        an enum value above the caller's maximum
//   enc-trailing-bytes      Finish(): bytes left after the value
//
// Convention for a type T in any namespace (found by argument-dependent lookup):
//   void Encode(Writer& w, const T& v);
//   Result<T> Decode(Reader& r, DecodeAs<T>);
// then EncodeToBytes(v) and DecodeExact<T>(bytes) work for it, and so do
// Writer::PutVector / Reader::GetVector without an element callable.

#include <algorithm>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace vt {

// Default caps. Callers that know a tighter bound pass it; callers that need a
// larger one (tensor payloads) pass that explicitly.
inline constexpr std::size_t kMaxEncodedBytes = std::size_t{16} << 20;  // 16 MiB
inline constexpr std::size_t kMaxEncodedCount = std::size_t{1} << 20;   // 1 Mi elements
inline constexpr std::size_t kMaxVarintBytes = 10;

// Tag type that selects the Decode overload for T (return types cannot overload).
template <typename T>
struct DecodeAs {};

// Number of bytes PutVarint(v) appends.
std::size_t VarintSize(std::uint64_t v);

class Writer {
 public:
  Writer() = default;
  // Appends after `prefix` (e.g. a hash tag).
  explicit Writer(Bytes prefix) : m_out(std::move(prefix)) {}

  void PutU8(std::uint8_t v) { m_out.push_back(v); }
  void PutU16(std::uint16_t v) { PutLe(v, 2); }
  void PutU32(std::uint32_t v) { PutLe(v, 4); }
  void PutU64(std::uint64_t v) { PutLe(v, 8); }
  void PutI64(std::int64_t v) { PutLe(static_cast<std::uint64_t>(v), 8); }
  void PutVarint(std::uint64_t v);
  void PutBool(bool v) { m_out.push_back(v ? 1 : 0); }
  void PutBytes(ByteSpan v);
  void PutString(std::string_view v) { PutBytes(AsBytes(v)); }
  void PutHash(const Hash256& h) { PutFixed(h.bytes); }
  void PutFixed(ByteSpan v) { m_out.insert(m_out.end(), v.begin(), v.end()); }

  template <typename E>
  void PutEnum(E v) {
    static_assert(std::is_enum_v<E>);
    using U = std::underlying_type_t<E>;
    if constexpr (std::is_signed_v<U>)
      assert(static_cast<U>(v) >= 0 && "negative enum values have no encoding");
    PutVarint(static_cast<std::uint64_t>(static_cast<U>(v)));
  }

  // put_elem(Writer&, const Elem&): a lambda or a member pointer such as &Writer::PutU32.
  template <typename Range, typename F>
  void PutVector(const Range& items, F&& put_elem) {
    PutVarint(static_cast<std::uint64_t>(std::size(items)));
    for (const auto& item : items) std::invoke(put_elem, *this, item);
  }
  // Elements encoded with their own Encode(Writer&, const Elem&).
  template <typename Range>
  void PutVector(const Range& items) {
    PutVector(items, [](Writer& w, const auto& item) { Encode(w, item); });
  }

  template <typename T, typename F>
  void PutOptional(const std::optional<T>& v, F&& put_value) {
    PutBool(v.has_value());
    if (v) std::invoke(put_value, *this, *v);
  }

  const Bytes& bytes() const { return m_out; }
  std::size_t size() const { return m_out.size(); }
  Bytes Take() && { return std::move(m_out); }

 private:
  void PutLe(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) m_out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }

  Bytes m_out;
};

class Reader {
 public:
  explicit Reader(ByteSpan in) : m_in(in) {}

  Result<std::uint8_t> GetU8();
  Result<std::uint16_t> GetU16();
  Result<std::uint32_t> GetU32();
  Result<std::uint64_t> GetU64();
  Result<std::int64_t> GetI64();
  Result<std::uint64_t> GetVarint();
  Result<bool> GetBool();
  Result<Bytes> GetBytes(std::size_t max_len = kMaxEncodedBytes);
  // Like GetBytes but without a copy: a view into the input.
  Result<ByteSpan> GetBytesView(std::size_t max_len = kMaxEncodedBytes);
  Result<std::string> GetString(std::size_t max_len = kMaxEncodedBytes);
  Result<Hash256> GetHash();
  Result<ByteSpan> GetFixed(std::size_t n);

  // Values above `max` (the largest defined enumerator) are rejected.
  template <typename E>
  Result<E> GetEnum(E max) {
    static_assert(std::is_enum_v<E>);
    using U = std::underlying_type_t<E>;
    VT_ASSIGN_OR_RETURN(std::uint64_t v, GetVarint());
    if (v > static_cast<std::uint64_t>(static_cast<U>(max)))
      return Status::Invalid("enc-unknown-enum", "enum value " + std::to_string(v) + " is undefined");
    return static_cast<E>(static_cast<U>(v));
  }

  // get_elem(Reader&) -> Result<T>: a lambda or a member pointer such as &Reader::GetU32.
  template <typename T, typename F>
  requires std::invocable<F&, Reader&> Result<std::vector<T>> GetVector(
      F&& get_elem, std::size_t max_count = kMaxEncodedCount) {
    VT_ASSIGN_OR_RETURN(std::uint64_t count, GetVarint());
    if (count > max_count)
      return Status::Invalid("enc-length-over-cap", "element count " + std::to_string(count) + " over cap " +
                                                        std::to_string(max_count));
    std::vector<T> out;
    // Every element takes at least one byte in any schema we use, so a count
    // larger than the input cannot succeed; do not let it reserve memory.
    out.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, remaining())));
    for (std::uint64_t i = 0; i < count; ++i) {
      VT_ASSIGN_OR_RETURN(T item, std::invoke(get_elem, *this));
      out.push_back(std::move(item));
    }
    return out;
  }
  // Elements decoded with their own Decode(Reader&, DecodeAs<T>).
  template <typename T>
  Result<std::vector<T>> GetVector(std::size_t max_count = kMaxEncodedCount) {
    return GetVector<T>([](Reader& r) { return Decode(r, DecodeAs<T>{}); }, max_count);
  }

  template <typename T, typename F>
  requires std::invocable<F&, Reader&> Result<std::optional<T>> GetOptional(F&& get_value) {
    VT_ASSIGN_OR_RETURN(bool present, GetBool());
    if (!present) return std::optional<T>();
    VT_ASSIGN_OR_RETURN(T v, std::invoke(get_value, *this));
    return std::optional<T>(std::move(v));
  }

  // Ok only if every byte was consumed.
  Status Finish() const;

  std::size_t remaining() const { return m_in.size() - m_pos; }
  std::size_t position() const { return m_pos; }

 private:
  Result<std::uint64_t> GetLe(std::size_t n);
  Status Need(std::size_t n) const;

  ByteSpan m_in;
  std::size_t m_pos = 0;
};

// Encoding of a Hash256 on its own, so vectors of hashes need no callable.
inline void Encode(Writer& w, const Hash256& h) { w.PutHash(h); }
inline Result<Hash256> Decode(Reader& r, DecodeAs<Hash256>) { return r.GetHash(); }

template <typename T>
Bytes EncodeToBytes(const T& value) {
  Writer w;
  Encode(w, value);
  return std::move(w).Take();
}

// Decodes exactly one T that spans all of `bytes` (rejects trailing bytes).
template <typename T>
Result<T> DecodeExact(ByteSpan bytes) {
  Reader r(bytes);
  VT_ASSIGN_OR_RETURN(T value, Decode(r, DecodeAs<T>{}));
  VT_TRY(r.Finish());
  return value;
}

}  // namespace vt
