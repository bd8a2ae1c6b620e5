// GemmNormsSq (kernels/matmul.h): the squared 2-norms of op(A)'s rows and
// op(B)'s columns that β, the GEMM error bound of rounded mode, is made of.
// Each norm is one sequential fp64 sum over p — x² rounded, then added —
// from the value already there, so its bits are fixed; the loops below only
// choose which norms advance side by side.

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/matmul.h"
#include "kernels/mode.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {

namespace {

// x² in fp64 (exact for an fp32 x, so the same bits as on its fp64 copy).
template <class In>
double Square(In x) {
  const auto d = static_cast<double>(x);
  return d * d;
}

// acc[l] += Σ_p x[l·ld + p]² for lines [l0, lines), sequential over p per
// line; four lines side by side so that four chains of dependent additions
// overlap instead of one waiting on another.
template <class In>
void AddLineSquaresScalar(const In* x, std::int64_t l0, std::int64_t lines, std::int64_t k, std::int64_t ld,
                          double* acc) {
  std::int64_t l = l0;
  for (; l + 4 <= lines; l += 4) {
    const In* r0 = x + l * ld;
    const In* r1 = r0 + ld;
    const In* r2 = r1 + ld;
    const In* r3 = r2 + ld;
    double a0 = acc[l], a1 = acc[l + 1], a2 = acc[l + 2], a3 = acc[l + 3];
    for (std::int64_t p = 0; p < k; ++p) {
      a0 = a0 + Square(r0[p]);
      a1 = a1 + Square(r1[p]);
      a2 = a2 + Square(r2[p]);
      a3 = a3 + Square(r3[p]);
    }
    acc[l] = a0;
    acc[l + 1] = a1;
    acc[l + 2] = a2;
    acc[l + 3] = a3;
  }
  for (; l < lines; ++l) {
    const In* row = x + l * ld;
    double a = acc[l];
    for (std::int64_t p = 0; p < k; ++p) a = a + Square(row[p]);
    acc[l] = a;
  }
}

#if defined(__x86_64__)
// The scalar loop is bound by its three fp64 operations per value (widen,
// square, add); with four lines in the lanes of a vector it does the same
// operations four at a time, after transposing 4 × 4 blocks (lanes = lines,
// one vector per p). No FMA: the target is AVX2 alone, and -ffp-contract=off.

// Lines r[0..3]'s values p..p+3 as four vectors, vector t = (r0[p+t], …, r3[p+t]).
__attribute__((target("avx2"))) inline void Transpose4(const float* const r[4], std::int64_t p,
                                                       __m256d out[4]) {
  __m128 a = _mm_loadu_ps(r[0] + p), b = _mm_loadu_ps(r[1] + p), c = _mm_loadu_ps(r[2] + p),
         d = _mm_loadu_ps(r[3] + p);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  out[0] = _mm256_cvtps_pd(a);
  out[1] = _mm256_cvtps_pd(b);
  out[2] = _mm256_cvtps_pd(c);
  out[3] = _mm256_cvtps_pd(d);
}
__attribute__((target("avx2"))) inline void Transpose4(const double* const r[4], std::int64_t p,
                                                       __m256d out[4]) {
  const __m256d a = _mm256_loadu_pd(r[0] + p), b = _mm256_loadu_pd(r[1] + p), c = _mm256_loadu_pd(r[2] + p),
                d = _mm256_loadu_pd(r[3] + p);
  const __m256d ab_even = _mm256_unpacklo_pd(a, b),
                ab_odd = _mm256_unpackhi_pd(a, b);  // a0 b0 a2 b2 / a1 b1 a3 b3
  const __m256d cd_even = _mm256_unpacklo_pd(c, d), cd_odd = _mm256_unpackhi_pd(c, d);
  out[0] = _mm256_permute2f128_pd(ab_even, cd_even, 0x20);
  out[1] = _mm256_permute2f128_pd(ab_odd, cd_odd, 0x20);
  out[2] = _mm256_permute2f128_pd(ab_even, cd_even, 0x31);
  out[3] = _mm256_permute2f128_pd(ab_odd, cd_odd, 0x31);
}

// Lines in groups of eight (two vectors: the chains of one vector wait on
// their additions' latency while the other's issue), p four at a time; the
// last k % 4 values and the last lines % 8 lines by the scalar loop.
template <class In>
__attribute__((target("avx2"))) void AddLineSquaresAvx2(const In* x, std::int64_t lines, std::int64_t k,
                                                        std::int64_t ld, double* acc) {
  const std::int64_t k4 = k / 4 * 4;
  std::int64_t l = 0;
  for (; l + 8 <= lines; l += 8) {
    const In* lo[4] = {x + l * ld, x + (l + 1) * ld, x + (l + 2) * ld, x + (l + 3) * ld};
    const In* hi[4] = {x + (l + 4) * ld, x + (l + 5) * ld, x + (l + 6) * ld, x + (l + 7) * ld};
    __m256d s_lo = _mm256_loadu_pd(acc + l), s_hi = _mm256_loadu_pd(acc + l + 4);
    for (std::int64_t p = 0; p < k4; p += 4) {
      __m256d v_lo[4], v_hi[4];
      Transpose4(lo, p, v_lo);
      Transpose4(hi, p, v_hi);
      for (int t = 0; t < 4; ++t) {
        s_lo = _mm256_add_pd(s_lo, _mm256_mul_pd(v_lo[t], v_lo[t]));
        s_hi = _mm256_add_pd(s_hi, _mm256_mul_pd(v_hi[t], v_hi[t]));
      }
    }
    _mm256_storeu_pd(acc + l, s_lo);
    _mm256_storeu_pd(acc + l + 4, s_hi);
    if (k4 < k) AddLineSquaresScalar(x + k4, l, l + 8, k - k4, ld, acc);
  }
  AddLineSquaresScalar(x, l, lines, k, ld, acc);
}
#endif

// acc[l] += Σ_p x[l·ld + p]² for l < lines, sequential over p per line.
template <class In>
void AddLineSquares(const In* x, std::int64_t lines, std::int64_t k, std::int64_t ld, double* acc) {
#if defined(__x86_64__)
  static const bool avx2 = SimdSupported(Simd::kAvx2);
  if (avx2) return AddLineSquaresAvx2(x, lines, k, ld, acc);
#endif
  AddLineSquaresScalar(x, 0, lines, k, ld, acc);
}

// acc[j] += Σ_p x[p·ld + j]² for j < cols, sequential over p per column
// (lanes over j: ISA clones, one plain function per operand type). Four rows
// per pass over acc, each value still added in order of p: a quarter of the
// loads and stores of acc.
template <class In>
[[gnu::always_inline]] inline void AddColumnSquaresBody(const In* x, std::int64_t k, std::int64_t cols,
                                                        std::int64_t ld, double* acc) {
  std::int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const In* r0 = x + p * ld;
    const In* r1 = r0 + ld;
    const In* r2 = r1 + ld;
    const In* r3 = r2 + ld;
    for (std::int64_t j = 0; j < cols; ++j) {
      acc[j] = (((acc[j] + Square(r0[j])) + Square(r1[j])) + Square(r2[j])) + Square(r3[j]);
    }
  }
  for (; p < k; ++p) {
    const In* row = x + p * ld;
    for (std::int64_t j = 0; j < cols; ++j) acc[j] = acc[j] + Square(row[j]);
  }
}
VT_SIMD_CLONES void AddColumnSquares(const double* x, std::int64_t k, std::int64_t cols, std::int64_t ld,
                                     double* acc) {
  AddColumnSquaresBody(x, k, cols, ld, acc);
}
VT_SIMD_CLONES void AddColumnSquares(const float* x, std::int64_t k, std::int64_t cols, std::int64_t ld,
                                     double* acc) {
  AddColumnSquaresBody(x, k, cols, ld, acc);
}

template <class In>
void GemmNormsSqOf(const GemmArgs& g, const In* a, const In* b, double* row_sq, double* col_sq) {
  // Per element sequential over p in both loop shapes (same bits).
  if (!g.trans_a) {
    AddLineSquares(a, g.m, g.k, g.lda, row_sq);
  } else {
    AddColumnSquares(a, g.k, g.m, g.lda, row_sq);
  }
  if (g.trans_b) {
    AddLineSquares(b, g.n, g.k, g.ldb, col_sq);
  } else {
    AddColumnSquares(b, g.k, g.n, g.ldb, col_sq);
  }
}

}  // namespace

void GemmNormsSq(const GemmArgs& g, const double* a, const double* b, double* row_sq, double* col_sq) {
  GemmNormsSqOf(g, a, b, row_sq, col_sq);
}
void GemmNormsSq(const GemmArgs& g, const float* a, const float* b, double* row_sq, double* col_sq) {
  GemmNormsSqOf(g, a, b, row_sq, col_sq);
}

}  // namespace vt::kernels
