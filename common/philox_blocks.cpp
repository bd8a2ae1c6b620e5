#include "common/philox_blocks.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace vt {

namespace detail {
void PhiloxStreamBlocksScalar(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t first,
                              std::size_t count, PhiloxBlock* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = PhiloxStreamBlock(key, step, tensor, first + i);
}
}  // namespace detail

namespace {

#if defined(__x86_64__)
constexpr int kLanes = 8;

// hi and lo words of m · x per 32-bit lane (m < 2^32).
struct MulHiLo {
  __m256i hi, lo;
};
__attribute__((target("avx2"))) inline MulHiLo MulWide(__m256i x, __m256i m) {
  const __m256i even = _mm256_mul_epu32(x, m);                        // lanes 0, 2, 4, 6 as 64-bit products
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(x, 32), m);  // lanes 1, 3, 5, 7
  return {_mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA),
          _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA)};
}

// Philox4x32 (common/philox.h) on eight counters, word w of lane l in c[w].
__attribute__((target("avx2"))) void Philox4x32x8(PhiloxKey key, __m256i c[4]) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(kPhiloxM0));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(kPhiloxM1));
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key.k[0] += kPhiloxW0;
      key.k[1] += kPhiloxW1;
    }
    const MulHiLo p0 = MulWide(c[0], m0), p1 = MulWide(c[2], m1);
    const __m256i k0 = _mm256_set1_epi32(static_cast<int>(key.k[0]));
    const __m256i k1 = _mm256_set1_epi32(static_cast<int>(key.k[1]));
    c[0] = _mm256_xor_si256(_mm256_xor_si256(p1.hi, c[1]), k0);
    c[1] = p1.lo;
    c[2] = _mm256_xor_si256(_mm256_xor_si256(p0.hi, c[3]), k1);
    c[3] = p0.lo;
  }
}

__attribute__((target("avx2"))) std::size_t PhiloxStreamBlocksAvx2(PhiloxKey key, std::uint32_t step,
                                                                   std::uint32_t tensor, std::uint64_t first,
                                                                   std::size_t count, PhiloxBlock* out) {
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    // Word w of lane l's counter (PhiloxCounter's layout) in words[w][l].
    alignas(32) std::uint32_t words[4][kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const PhiloxBlock counter = PhiloxCounter(step, tensor, first + i + static_cast<std::uint64_t>(l));
      for (int w = 0; w < 4; ++w) words[w][l] = counter.v[w];
    }
    __m256i c[4];
    for (int w = 0; w < 4; ++w) c[w] = _mm256_load_si256(reinterpret_cast<const __m256i*>(words[w]));
    Philox4x32x8(key, c);
    for (int w = 0; w < 4; ++w) _mm256_store_si256(reinterpret_cast<__m256i*>(words[w]), c[w]);
    for (int l = 0; l < kLanes; ++l) {
      out[i + static_cast<std::size_t>(l)] =
          PhiloxBlock{{words[0][l], words[1][l], words[2][l], words[3][l]}};
    }
  }
  return i;
}
#endif

}  // namespace

void PhiloxStreamBlocks(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t first,
                        std::size_t count, PhiloxBlock* out) {
  std::size_t done = 0;
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) done = PhiloxStreamBlocksAvx2(key, step, tensor, first, count, out);
#endif
  detail::PhiloxStreamBlocksScalar(key, step, tensor, first + done, count - done, out + done);
}

}  // namespace vt
