#pragma once
// FNV-1a (64-bit) over the exact bits of values: golden hashes in tests that
// must catch a single flipped bit across compilers and platforms. Not a
// cryptographic hash; consensus hashing lives in crypto/.

#include <cstdint>
#include <cstring>

namespace vt::test {

class BitHasher {
 public:
  void AddU32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
      m_h ^= (v >> (8 * i)) & 0xff;
      m_h *= 0x100000001b3ull;
    }
  }
  void AddFloat(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    AddU32(u);
  }
  void AddU64(std::uint64_t v) {
    AddU32(static_cast<std::uint32_t>(v));
    AddU32(static_cast<std::uint32_t>(v >> 32));
  }
  void AddDouble(double d) {
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    AddU64(u);
  }
  std::uint64_t value() const { return m_h; }

 private:
  std::uint64_t m_h = 0xcbf29ce484222325ull;
};

}  // namespace vt::test
