// AVX2 repops micro-kernel: 8-lane vectors, a 6×16 tile by default. This
// translation unit alone is compiled with -mavx2; the kernel body is the
// shared one of gemm_microkernel_simd.h (internal linkage, see there).

#include "kernels/gemm_microkernel.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include "kernels/gemm_microkernel_simd.h"

namespace vt::kernels::detail {
namespace {

#ifndef VT_AVX2_MR
#define VT_AVX2_MR 6
#endif
#ifndef VT_AVX2_V
#define VT_AVX2_V 2
#endif

#define VT_INLINE static inline __attribute__((always_inline))
struct Avx2 {
  using Scalar = float;
  using Vec = __m256;
  static constexpr int kLanes = 8;
  VT_INLINE Vec Zero() { return _mm256_setzero_ps(); }
  VT_INLINE Vec Load(const float* p) { return _mm256_load_ps(p); }
  VT_INLINE Vec LoadU(const float* p) { return _mm256_loadu_ps(p); }
  VT_INLINE void StoreU(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  VT_INLINE Vec Broadcast(float x) { return _mm256_set1_ps(x); }
  // Repops: a rounded multiply, then a rounded add.
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm256_add_ps(acc, _mm256_mul_ps(a, b)); }
};
#undef VT_INLINE

}  // namespace

MicroKernel Avx2MicroKernel() { return MakeSimdMicroKernel<Avx2, VT_AVX2_MR, VT_AVX2_V>("avx2"); }

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx2MicroKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
