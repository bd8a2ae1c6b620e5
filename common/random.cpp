#include "common/random.h"

#include <cassert>
#include <numeric>
#include <utility>

namespace vt {

float NextUniformFloat(PhiloxStream& s) { return UniformFloatFromBits(s.NextU32()); }

double NextUniformDouble(PhiloxStream& s) { return UniformDoubleFromBits(s.NextU64()); }

float NextNormal(PhiloxStream& s) {
  const std::uint32_t a = s.NextU32();
  return BoxMuller(a, s.NextU32()).z0;
}

std::uint64_t NextUniformInt(PhiloxStream& s, std::uint64_t n) {
  assert(n >= 1);
  if (n <= (std::uint64_t{1} << 32)) {
    // limit = 2^32 - (2^32 mod n): draws at or above it would bias the result.
    const std::uint64_t limit = (std::uint64_t{1} << 32) - (std::uint64_t{1} << 32) % n;
    for (;;) {
      const std::uint64_t w = s.NextU32();
      if (w < limit) return w % n;
    }
  }
  // 2^64 - (2^64 mod n), computed without 128-bit arithmetic; 0 stands for 2^64.
  const std::uint64_t rem = (0 - n) % n;  // == 2^64 mod n
  const std::uint64_t limit = 0 - rem;
  for (;;) {
    const std::uint64_t w = s.NextU64();
    if (limit == 0 || w < limit) return w % n;
  }
}

std::vector<std::uint64_t> Permutation(PhiloxStream& s, std::uint64_t n) {
  std::vector<std::uint64_t> p(n);
  std::iota(p.begin(), p.end(), std::uint64_t{0});
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = NextUniformInt(s, i);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

}  // namespace vt
