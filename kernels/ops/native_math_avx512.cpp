// Native mode's vectorised functions on AVX-512F lanes (8 doubles); this
// translation unit alone is compiled with -mavx512f (AVX-512F instructions
// only: DetectSimd checks avx512f). The code is kernels/ops/native_math_impl.h.

#include "kernels/ops/native_math_impl.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about the intrinsics' own _mm512_undefined_pd() pass-through
// operands once they are inlined here (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace vt::kernels::nativemath::detail {
namespace {

#define VT_INLINE static inline __attribute__((always_inline))
struct Avx512 {
  using D = __m512d;
  static constexpr int kLanes = 8;
  VT_INLINE D Load(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
  VT_INLINE void Store(float* p, D v) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(v)); }
  VT_INLINE D Set(double x) { return _mm512_set1_pd(x); }
  VT_INLINE D Add(D a, D b) { return _mm512_add_pd(a, b); }
  VT_INLINE D Sub(D a, D b) { return _mm512_sub_pd(a, b); }
  VT_INLINE D Mul(D a, D b) { return _mm512_mul_pd(a, b); }
  VT_INLINE D Div(D a, D b) { return _mm512_div_pd(a, b); }
  VT_INLINE D Fma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
  VT_INLINE D Min(D a, D b) { return _mm512_min_pd(a, b); }
  VT_INLINE D Max(D a, D b) { return _mm512_max_pd(a, b); }
  VT_INLINE D Abs(D a) { return _mm512_abs_pd(a); }
  VT_INLINE D Round(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  VT_INLINE D Scale(D p, D n) { return _mm512_scalef_pd(p, n); }
  VT_INLINE D SelectGe(D a, D b, D x, D y) { return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_GE_OQ), y, x); }
  VT_INLINE D NanOr(D z, D v) { return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(z, z, _CMP_UNORD_Q), v, z); }
};
#undef VT_INLINE

}  // namespace

Kernels Avx512Kernels() { return KernelsOf<Avx512>(); }

}  // namespace vt::kernels::nativemath::detail

#else
namespace vt::kernels::nativemath::detail {
Kernels Avx512Kernels() { return {}; }
}  // namespace vt::kernels::nativemath::detail
#endif
