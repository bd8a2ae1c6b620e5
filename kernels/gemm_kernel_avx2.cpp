// AVX2 repops micro-kernel. This translation unit alone is compiled with
// -mavx2; it includes nothing but <immintrin.h> and the kernel
// interface so that no inline function from a shared header gets an AVX2
// body that the linker could pick for baseline code.
//
// Order (kernels/gemm_repops.h): lane j of accumulator (r, v) is output
// C[r][8v + j]; for p = 0..kc−1: acc = acc + (a[p][r] * b[p][8v + j]), one
// rounded multiply then one rounded add (vmulps, vaddps — never vfmadd).
// The tile is MR×(8·V); all loops over r and v are fully unrolled so the
// accumulators live in registers.

#include "kernels/gemm_microkernel.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

namespace vt::kernels::detail {
namespace {

#ifndef VT_AVX2_MR
#define VT_AVX2_MR 6
#endif
#ifndef VT_AVX2_V
#define VT_AVX2_V 2
#endif
constexpr int kMr = VT_AVX2_MR;
constexpr int kVecs = VT_AVX2_V;
constexpr int kNr = 8 * kVecs;

template <bool kLoadC>
inline __attribute__((always_inline)) void KernelImpl(std::int64_t kc, const float* ap, const float* bp, float* c,
                                                      std::int64_t ldc) {
  __m256 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      acc[r][v] = kLoadC ? _mm256_loadu_ps(c + r * ldc + 8 * v) : _mm256_setzero_ps();
    }
  }
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    __m256 bv[kVecs];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm256_load_ps(bp + p * kNr + 8 * v);
#pragma GCC unroll 32
    for (int r = 0; r < kMr; ++r) {
      const __m256 a = _mm256_set1_ps(ap[p * kMr + r]);
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm256_add_ps(acc[r][v], _mm256_mul_ps(a, bv[v]));
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
  }
}

void Kernel(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc, bool load_c) {
  if (load_c) {
    KernelImpl<true>(kc, ap, bp, c, ldc);
  } else {
    KernelImpl<false>(kc, ap, bp, c, ldc);
  }
}

}  // namespace

MicroKernel Avx2MicroKernel() { return {kMr, kNr, &Kernel, "avx2"}; }

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx2MicroKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
