// AVX-512 repops micro-kernel. This translation unit alone is compiled with
// AVX-512 flags; it includes nothing but <immintrin.h> and the kernel
// interface so that no inline function from a shared header gets an AVX-512
// body that the linker could pick for baseline code.
//
// Order (kernels/gemm_repops.h): lane j of accumulator (r, v) is output
// C[r][16v + j]; for p = 0..kc−1: acc = acc + (a[p][r] * b[p][16v + j]), one
// rounded multiply then one rounded add (vmulps, vaddps — never vfmadd).
// The tile is MR×(16·V); all loops over r and v are fully unrolled so the
// accumulators live in registers.

#include "kernels/gemm_microkernel.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

namespace vt::kernels::detail {
namespace {

#ifndef VT_AVX512_MR
#define VT_AVX512_MR 16
#endif
#ifndef VT_AVX512_V
#define VT_AVX512_V 1
#endif
constexpr int kMr = VT_AVX512_MR;
constexpr int kVecs = VT_AVX512_V;
constexpr int kNr = 16 * kVecs;

template <bool kLoadC>
inline __attribute__((always_inline)) void KernelImpl(std::int64_t kc, const float* ap, const float* bp, float* c,
                                                      std::int64_t ldc) {
  __m512 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      acc[r][v] = kLoadC ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
    }
  }
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    __m512 bv[kVecs];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_load_ps(bp + p * kNr + 16 * v);
#pragma GCC unroll 32
    for (int r = 0; r < kMr; ++r) {
      const __m512 a = _mm512_set1_ps(ap[p * kMr + r]);
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_mul_ps(a, bv[v]));
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
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

MicroKernel Avx512MicroKernel() { return {kMr, kNr, &Kernel, "avx512"}; }

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx512MicroKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
