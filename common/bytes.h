#pragma once
// Byte buffers and fixed-size hashes shared by every library.

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vt {

using Bytes = std::vector<std::uint8_t>;
using ByteSpan = std::span<const std::uint8_t>;

// Lower-case hex of any bytes.
std::string ToHex(ByteSpan bytes);
// Strict hex decoding: even length, [0-9a-fA-F] only.
Result<Bytes> FromHex(std::string_view hex);

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// A 32-byte hash (SHA-256 output, Merkle roots, ids). Ordered bytewise.
struct Hash256 {
  std::array<std::uint8_t, 32> bytes{};

  static constexpr std::size_t kSize = 32;
  std::string Hex() const { return ToHex(bytes); }
  static Result<Hash256> FromHex(std::string_view hex);
  bool IsZero() const;
  ByteSpan span() const { return bytes; }

  auto operator<=>(const Hash256&) const = default;
};

// Overwrite memory that held a secret so the compiler cannot drop the store.
void SecureWipe(void* data, std::size_t size);

}  // namespace vt
