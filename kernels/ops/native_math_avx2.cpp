// Native mode's vectorised functions on AVX2 + FMA lanes (4 doubles); this
// translation unit alone is compiled with -mavx2 -mfma. The code is
// kernels/ops/native_math_impl.h.

#include "kernels/ops/native_math_impl.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace vt::kernels::nativemath::detail {
namespace {

#define VT_INLINE static inline __attribute__((always_inline))
struct Avx2 {
  using D = __m256d;
  static constexpr int kLanes = 4;
  VT_INLINE D Load(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
  VT_INLINE void Store(float* p, D v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v)); }
  VT_INLINE D Set(double x) { return _mm256_set1_pd(x); }
  VT_INLINE D Add(D a, D b) { return _mm256_add_pd(a, b); }
  VT_INLINE D Sub(D a, D b) { return _mm256_sub_pd(a, b); }
  VT_INLINE D Mul(D a, D b) { return _mm256_mul_pd(a, b); }
  VT_INLINE D Div(D a, D b) { return _mm256_div_pd(a, b); }
  VT_INLINE D Fma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
  VT_INLINE D Min(D a, D b) { return _mm256_min_pd(a, b); }
  VT_INLINE D Max(D a, D b) { return _mm256_max_pd(a, b); }
  VT_INLINE D Abs(D a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
  VT_INLINE D Round(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n built in the exponent field: n + 1.5·2^52 holds n in its low
  // mantissa bits (|n| ≤ 1022), so its bits minus those of 1.5·2^52 are n.
  VT_INLINE D Scale(D p, D n) {
    const __m256d magic = _mm256_set1_pd(6755399441055744.0);
    const __m256i ni = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n, magic)), _mm256_castpd_si256(magic));
    const __m256i bits = _mm256_slli_epi64(_mm256_add_epi64(ni, _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
  }
  VT_INLINE D SelectGe(D a, D b, D x, D y) { return _mm256_blendv_pd(y, x, _mm256_cmp_pd(a, b, _CMP_GE_OQ)); }
  VT_INLINE D NanOr(D z, D v) { return _mm256_blendv_pd(v, z, _mm256_cmp_pd(z, z, _CMP_UNORD_Q)); }
};
#undef VT_INLINE

}  // namespace

Kernels Avx2Kernels() { return KernelsOf<Avx2>(); }

}  // namespace vt::kernels::nativemath::detail

#else
namespace vt::kernels::nativemath::detail {
Kernels Avx2Kernels() { return {}; }
}  // namespace vt::kernels::nativemath::detail
#endif
