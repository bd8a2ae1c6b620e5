// AVX2 micro-kernels: the repops one (8-lane fp32 vectors, a 6×16 tile by
// default) and two fp64 ones (4-lane vectors, a 6×8 tile): with fma
// (GemmWidenedF64, GemmF64) and with a multiply then an add
// (GemmF64Reference). This translation unit alone is compiled with -mavx2
// -mfma (the fma kernel is called only where the CPU has FMA; the build's
// -ffp-contract=off keeps the others' multiplies and adds apart); the kernel
// body is the shared one of gemm_microkernel_simd.h (internal linkage, see
// there).

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
// Widening: fp64 lanes and fma (the packs hold fp32 values, so every product
// is exact and the fma rounds only the sum).
struct Avx2F64 {
  using Scalar = double;
  using Vec = __m256d;
  static constexpr int kLanes = 4;
  VT_INLINE Vec Zero() { return _mm256_setzero_pd(); }
  VT_INLINE Vec Load(const double* p) { return _mm256_load_pd(p); }
  VT_INLINE Vec LoadU(const double* p) { return _mm256_loadu_pd(p); }
  VT_INLINE void StoreU(double* p, Vec v) { _mm256_storeu_pd(p, v); }
  VT_INLINE Vec Broadcast(double x) { return _mm256_set1_pd(x); }
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm256_fmadd_pd(a, b, acc); }
};
// The canonical reference's order (kernels/matmul.h GemmF64Reference): a
// rounded multiply, then a rounded add — never fused.
struct Avx2F64Reference : Avx2F64 {
  VT_INLINE Vec MulAdd(Vec acc, Vec a, Vec b) { return _mm256_add_pd(acc, _mm256_mul_pd(a, b)); }
};
#undef VT_INLINE

// 12 accumulators, two B vectors, the broadcast A value and (mul, then add)
// the product: the 16 ymm registers.
#ifndef VT_AVX2_F64_MR
#define VT_AVX2_F64_MR 6
#endif
#ifndef VT_AVX2_F64_V
#define VT_AVX2_F64_V 2
#endif

}  // namespace

MicroKernel Avx2MicroKernel() { return MakeSimdMicroKernel<Avx2, VT_AVX2_MR, VT_AVX2_V>("avx2"); }
F64Kernel Avx2FmaKernel() { return MakeSimdMicroKernel<Avx2F64, VT_AVX2_F64_MR, VT_AVX2_F64_V>("avx2-f64"); }
F64Kernel Avx2ReferenceKernel() {
  return MakeSimdMicroKernel<Avx2F64Reference, VT_AVX2_F64_MR, VT_AVX2_F64_V>("avx2-f64-reference");
}

}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
MicroKernel Avx2MicroKernel() { return {}; }
F64Kernel Avx2FmaKernel() { return {}; }
F64Kernel Avx2ReferenceKernel() { return {}; }
}  // namespace vt::kernels::detail
#endif
