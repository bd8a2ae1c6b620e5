// AVX-512 micro-kernels: the repops one (16-lane fp32 vectors, an 8×32 tile
// by default) and two fp64 ones (8-lane vectors, a 12×16 tile): with fma
// (GemmWidenedF64, GemmF64) and with a multiply then an add
// (GemmF64Reference). This translation unit alone is compiled with -mavx512f (F only:
// DetectSimd checks avx512f, so no VL/BW/DQ encodings may appear); the kernel
// body is the shared one of gemm_microkernel_simd.h (internal linkage, see
// there).

#include "kernels/gemm_microkernel.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#include "kernels/gemm_microkernel_simd.h"

namespace vt::kernels::detail {
namespace {

// The repops tile: 8 rows × 2 vectors. Per step of p it loads two B vectors
// and broadcasts 8 A values for 16 products, where 16 × 1 broadcasts 16 for
// 16: on Zen 5 (separate multiply and add pipes) GPT-2-sized products ran
// ~7 % faster and the small presets no slower (docs/kernels.md, seventeenth
// pass). The tile changes no bits: each output still sums p = 0, 1, … in order.
#ifndef VT_AVX512_MR
#define VT_AVX512_MR 8
#endif
#ifndef VT_AVX512_V
#define VT_AVX512_V 2
#endif

#define VT_INLINE static inline __attribute__((always_inline))
struct Avx512 {
  using Scalar = float;
  using Vec = __m512;
  static constexpr int kLanes = 16;
  VT_INLINE Vec Zero() { return _mm512_setzero_ps(); }
  VT_INLINE Vec Load(const float* p) { return _mm512_load_ps(p); }
  VT_INLINE Vec LoadU(const float* p) { return _mm512_loadu_ps(p); }
  VT_INLINE void StoreU(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  VT_INLINE Vec Broadcast(float x) { return _mm512_set1_ps(x); }
  // Repops: a rounded multiply, then a rounded add.
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm512_add_ps(acc, _mm512_mul_ps(a, b)); }
};
// Widening: fp64 lanes and fma (the packs hold fp32 values, so every product
// is exact and the fma rounds only the sum).
struct Avx512F64 {
  using Scalar = double;
  using Vec = __m512d;
  static constexpr int kLanes = 8;
  VT_INLINE Vec Zero() { return _mm512_setzero_pd(); }
  VT_INLINE Vec Load(const double* p) { return _mm512_load_pd(p); }
  VT_INLINE Vec LoadU(const double* p) { return _mm512_loadu_pd(p); }
  VT_INLINE void StoreU(double* p, Vec v) { _mm512_storeu_pd(p, v); }
  VT_INLINE Vec Broadcast(double x) { return _mm512_set1_pd(x); }
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm512_fmadd_pd(a, b, acc); }
};
// The canonical reference's order (kernels/matmul.h GemmF64Reference): a
// rounded multiply, then a rounded add — never fused.
struct Avx512F64Reference : Avx512F64 {
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm512_add_pd(acc, _mm512_mul_pd(a, b)); }
};
#undef VT_INLINE

#ifndef VT_AVX512_F64_MR
#define VT_AVX512_F64_MR 12
#endif
#ifndef VT_AVX512_F64_V
#define VT_AVX512_F64_V 2
#endif

}  // namespace

MicroKernel Avx512MicroKernel() { return MakeSimdMicroKernel<Avx512, VT_AVX512_MR, VT_AVX512_V>("avx512"); }
F64Kernel Avx512FmaKernel() {
  return MakeSimdMicroKernel<Avx512F64, VT_AVX512_F64_MR, VT_AVX512_F64_V>("avx512-f64");
}
F64Kernel Avx512ReferenceKernel() {
  return MakeSimdMicroKernel<Avx512F64Reference, VT_AVX512_F64_MR, VT_AVX512_F64_V>("avx512-f64-reference");
}

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx512MicroKernel() { return {}; }
F64Kernel Avx512FmaKernel() { return {}; }
F64Kernel Avx512ReferenceKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
