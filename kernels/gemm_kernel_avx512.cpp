// AVX-512 repops micro-kernel: 16-lane vectors, a 16×16 tile by default. This
// translation unit alone is compiled with -mavx512f (F only: DetectSimd checks
// avx512f, so no VL/BW/DQ encodings may appear); the kernel body is the
// shared one of gemm_microkernel_simd.h (internal linkage, see there).

#include "kernels/gemm_microkernel.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#include "kernels/gemm_microkernel_simd.h"

namespace vt::kernels::detail {
namespace {

#ifndef VT_AVX512_MR
#define VT_AVX512_MR 16
#endif
#ifndef VT_AVX512_V
#define VT_AVX512_V 1
#endif

#define VT_INLINE static inline __attribute__((always_inline))
struct Avx512 {
  using Vec = __m512;
  static constexpr int kLanes = 16;
  VT_INLINE Vec Zero() { return _mm512_setzero_ps(); }
  VT_INLINE Vec Load(const float* p) { return _mm512_load_ps(p); }
  VT_INLINE Vec LoadU(const float* p) { return _mm512_loadu_ps(p); }
  VT_INLINE void StoreU(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  VT_INLINE Vec Broadcast(float x) { return _mm512_set1_ps(x); }
  VT_INLINE Vec Mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  VT_INLINE Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
};
#undef VT_INLINE

}  // namespace

MicroKernel Avx512MicroKernel() { return MakeSimdMicroKernel<Avx512, VT_AVX512_MR, VT_AVX512_V>("avx512"); }

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx512MicroKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
