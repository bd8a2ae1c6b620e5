#pragma once
// Certified mode (docs/kernels.md "Certified mode"): every GEMM-like output
// and every reduction is DEFINED as the fp32 value nearest to the exact real
// result of its fp32 inputs (round to nearest, ties to even) — a value that
// does not depend on how it is computed. Definitions (x_p, a_p, b_p fp32):
//
//   Gemm     c_ij = CR(c0_ij + Σ_p a_ip·b_pj)    (c0: the accumulated C, or 0)
//   Sum      CR(Σ x_p)        Mean  CR((Σ x_p) / n)
//   Dot      CR(Σ a_p·b_p)    MeanDot CR((Σ a_p·b_p) / n)
//   Norm     CR(sqrt(Σ a_p·a_p))
//
// Special values, the same for every kind (the IEEE rules, which for these
// sums do not depend on the order): a NaN term, 0·inf, or +inf and −inf
// together give NaN (the canonical 0x7fc00000); otherwise an infinite term
// gives that infinity. A finite exact result rounds like IEEE
// round-to-nearest-even: past FLT_MAX + ulp/2 it is ±inf, tiny results land on
// the subnormal grid (a nonzero result that rounds to zero keeps its sign),
// and an EXACT zero is +0 (as x − x is in IEEE arithmetic), whatever the signs
// of the zero terms.
//
// How: the fast path computes in fp64 in any order (OpenBLAS dgemm with every
// thread, any blocking or split-K): products of two fp32 values are exact in
// fp64 and no partial sum can overflow or lose bits to underflow, so
// |ĉ − c| ≤ γ_K Σ|a_p b_p| ≤ γ_K ‖a‖₂‖b‖₂ for every order. When every real
// number within that bound of ĉ rounds to the same fp32 value, that value IS
// the correctly rounded result (CertifyApprox). The rare outputs the bound
// cannot decide (near a rounding boundary, exact ties, cancellation, special
// inputs) take the slow path: an exact long fixed-point accumulator
// (ExactAccumulator), rounded once.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/certify_hd.h"
#include "kernels/matmul.h"
#include "kernels/mode.h"

namespace vt::kernels {

// ---- statistics: outputs and slow-path outputs per kind (process-wide) -------

enum class CertKind : std::uint8_t { kGemm = 0, kSum = 1, kMean = 2, kDot = 3, kNorm = 4 };
inline constexpr int kCertKinds = 5;
std::string_view CertKindName(CertKind kind);

// slow: outputs the fast path's certificate left open, each evaluated a
// second time; exact: those of them the exact accumulator summed (a
// reduction's slow path is the exact sum itself; a GEMM's first takes the
// compensated second look, kernels/certified_dot.h).
struct CertCounts {
  std::uint64_t outputs[kCertKinds] = {};
  std::uint64_t slow[kCertKinds] = {};
  std::uint64_t exact[kCertKinds] = {};
};
CertCounts CertifiedCounts();
// exact < 0: all `slow` outputs were summed exactly.
void CountCertified(CertKind kind, std::uint64_t outputs, std::uint64_t slow, std::int64_t exact = -1);

// ---- the certificate -----------------------------------------------------------

// CertifyInterval, CertifyApprox, CertifySum, CertifyGemmOutput and their
// helpers (Pow2, NextUp, NextDown, LowBitExponent, SumIsExact) are in
// kernels/certify_hd.h: one source for the CPU and the CUDA fast path.

// The rigorous error bound of any fp64 evaluation (any order, fma or not) of
// a sum of `terms` exact fp64 terms whose absolute values sum to abs_sum (as
// computed in fp64): γ_terms·(1 + 2^-16)·abs_sum. The factor also covers the
// rounding of abs_sum itself and of this product. +inf for absurd counts.
double CertSumBound(std::int64_t terms, double abs_sum);

// ---- the slow path: an exact accumulator ---------------------------------------

// Σ of fp32 values and fp32·fp32 products, exactly: a fixed-point number with
// its least significant bit at 2^-298 (the smallest product of two fp32
// subnormals) and room above 2^256 · 2^31 (the largest product times the
// largest term count), held as 32-bit digits in int64 limbs so that each
// addition touches three limbs without carrying (carries are resolved every
// 2^30 additions and at the end).
//
// Add and AddProduct go through exponent buckets first: a finite fp32 value
// is m·2^(e − 149) (|m| < 2^24, e ∈ [0, 253]), a product of two
// (m_a·m_b)·2^(s − 298) with s = e_a + e_b ∈ [0, 506] (a value: s = e + 149).
// Bucket s >> 2 receives the integer m·2^(s & 3) (< 2^51): one add, no
// shifts across limbs, no carries. Every kBucketFoldEvery terms, and (into a
// copy) when rounding, the buckets are folded into the limbs; a bucket then
// holds < 2^12 · 2^51 = 2^63. (Four exponents per bucket: a fold scans a
// quarter of what one per exponent would; more per bucket would fold too
// often.) The exact GEMM uses the same buckets on pre-decoded operands.
class ExactAccumulator {
 public:
  void Add(float x);
  void AddProduct(float a, float b);
  // Another accumulator's exact sum (a sum of sums: the certified walk's
  // outer stage adding the exact dots of col2im's taps, docs/referee.md).
  void Add(const ExactAccumulator& other);
  // value · 2^exponent, exactly (exponent ≥ kLsbExponent; the result stays
  // inside the accumulator's range, e.g. |value| < 2^63 and exponent ≤ 208,
  // as the exact GEMM's exponent buckets are).
  void AddInteger(std::int64_t value, int exponent);
  // Σ bucket[b] · 2^(exponent0 + b·exponent_step) over b in [lo, hi],
  // exactly, and zeroes those buckets (the exact GEMM's fold; branch-free per
  // bucket, as many buckets are zero on spread-out inputs). Each
  // |bucket[b]| < 2^63; 1 ≤ exponent_step ≤ 32.
  void AddBuckets(std::int64_t* bucket, int lo, int hi, int exponent0, int exponent_step);
  // CR(Σ), CR(Σ / divisor) (divisor ≥ 1), CR(sqrt(Σ)) (NaN if Σ < 0).
  float Round() const;
  float RoundDivided(std::uint64_t divisor) const;
  float RoundSqrt() const;

  // The exact state as kEncodedBytes canonical bytes: a flags byte (bit 0
  // a NaN term, bit 1 a +inf, bit 2 a −inf) and the value · 2^298 as a
  // 640-bit two's complement integer, kDigits little-endian u32 digits,
  // least significant first. FromEncoding is its inverse on every byte string
  // whose flags byte is < 8 (every 640-bit pattern is a value), so
  // FromEncoding(x)->Encode() == x, and equal states encode equally however their
  // terms were added. The element-level dispute commits a certified dot
  // product's exact partial sums this way (docs/referee.md).
  static constexpr std::size_t kEncodedBytes = 1 + 4 * 20;  // 1 + 4·kDigits
  using Encoded = std::array<std::uint8_t, kEncodedBytes>;
  Encoded Encode() const;
  static std::optional<ExactAccumulator> FromEncoding(const Encoded& bytes);

  static constexpr int kLsbExponent = -298;
  static constexpr int kDigits = 20;
  static constexpr int kBucketShift = 2;                          // 2^kBucketShift exponents per bucket
  static constexpr int kBuckets = (506 >> kBucketShift) + 1;      // s ∈ [0, 506]
  static constexpr std::int64_t kBucketFoldEvery = std::int64_t{1} << 12;

 private:
  // m·2^(s − 298), |m| < 2^48, s ∈ [0, 506].
  void AddTerm(std::int64_t m, int s);
  void FoldedDigits(std::int64_t* digit) const;  // m_digit plus the buckets
  void AddScaled(std::uint64_t mantissa, int exponent, bool negative);
  void Normalize();
  bool Special(float* out) const;  // NaN / inf results

  std::int64_t m_digit[kDigits] = {};
  std::int64_t m_bucket[kBuckets] = {};
  int m_bucket_lo = kBuckets, m_bucket_hi = -1;  // buckets reached since the last fold
  std::int64_t m_bucket_terms = 0;               // terms since the last fold
  std::uint32_t m_adds = 0;
  bool m_nan = false, m_pos_inf = false, m_neg_inf = false;
};

// ---- GEMM -----------------------------------------------------------------------

// c (m×n, ldc) = CR(c0 + Σ over every piece of op(A)·op(B)); all pieces have
// the same m and n (their k may differ; their `accumulate` flags are ignored):
// one exact sum over all pieces' K, e.g. a gradient summed over images. With
// `accumulate`, c's current values are c0, else c0 = 0. Fast path: OpenBLAS
// dgemm with config.threads.
struct CertGemmPiece {
  GemmArgs g;
  const float* a = nullptr;
  const float* b = nullptr;
};
void CertifiedGemmPieces(const ExecConfig& config, std::int64_t m, std::int64_t n,
                         std::span<const CertGemmPiece> pieces, float* c, std::int64_t ldc, bool accumulate);
// One GEMM (g.accumulate: c's values are c0, e.g. a bias written there first).
void CertifiedGemm(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c);

// ---- reductions -------------------------------------------------------------------

enum class CertFinish : std::uint8_t { kNone, kDivide, kSqrt };

namespace certdetail {
// Marker for "no second factor" (plain sums).
struct NoFactor {};
// Certifies the finished value of a sum known to within `bound` of `sum`.
// `exact`: sum is the exact value (SumIsExact); bound is then ignored.
bool CertifyFinished(double sum, double bound, bool exact, CertFinish finish, std::int64_t n, float* out);
float FinishExact(const ExactAccumulator& acc, CertFinish finish, std::int64_t n);
}  // namespace certdetail

// CR(finish(Σ_{i<n} ga(i)·gb(i))) (gb = NoFactor: Σ ga(i)); the getters return
// fp32 values and may be called up to three times per index (the fast path,
// the exactness test, the slow path).
// kDivide divides by `divisor` (0: by n).
template <class GA, class GB>
float CertifiedReduce(CertKind kind, std::int64_t n, const GA& ga, const GB& gb, CertFinish finish,
                      std::int64_t divisor = 0) {
  if (divisor == 0) divisor = n;
  constexpr bool kProducts = !std::is_same_v<GB, certdetail::NoFactor>;
  auto term = [&](std::int64_t i) -> double {
    if constexpr (kProducts) {
      return static_cast<double>(static_cast<float>(ga(i))) * static_cast<double>(static_cast<float>(gb(i)));
    } else {
      (void)gb;
      return static_cast<double>(static_cast<float>(ga(i)));
    }
  };
  if (n == 1 && finish == CertFinish::kNone) {
    // One term is exact in fp64 (an fp32 value or a product of two), so its
    // IEEE conversion is its correct rounding; an exact zero is +0.
    const double t = term(0);
    if (std::isfinite(t)) {
      CountCertified(kind, 1, 0);
      return t == 0.0 ? 0.0f : static_cast<float>(t);
    }
  }
  double sum = 0.0, abs_sum = 0.0;
  if (F64ShuffleSeed() == 0) {
    // Four interleaved chains (the bound holds for every order): one chain
    // of dependent additions would leave a long sum waiting on their latency.
    double s[4] = {}, a[4] = {};
    std::int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int u = 0; u < 4; ++u) {
        const double t = term(i + u);
        s[u] = s[u] + t;
        a[u] = a[u] + std::fabs(t);
      }
    }
    for (; i < n; ++i) {
      const double t = term(i);
      s[0] = s[0] + t;
      a[0] = a[0] + std::fabs(t);
    }
    sum = (s[0] + s[1]) + (s[2] + s[3]);
    abs_sum = (a[0] + a[1]) + (a[2] + a[3]);
  } else {
    const ShuffledOrder o = DrawShuffledOrder(n);
    std::vector<double> parts;
    std::int64_t begin = 0;
    for (std::int64_t end : o.splits) {
      double s = 0.0;
      for (std::int64_t q = begin; q < end; ++q) {
        const double t = term(o.order[static_cast<std::size_t>(q)]);
        s = s + t;
        abs_sum = abs_sum + std::fabs(t);
      }
      parts.push_back(s);
      begin = end;
    }
    for (std::size_t idx : o.combine) sum = sum + parts[idx];
  }
  float out = 0.0f;
  const double bound = CertSumBound(n, abs_sum);
  // The bound first; the exactness test (which reads every term's low bit)
  // only when the bound leaves the value open. Both decide the same value —
  // the correctly rounded one — wherever both decide it.
  bool certified = certdetail::CertifyFinished(sum, bound, false, finish, divisor, &out);
  if (!certified) {
    int lsb = 1 << 20;  // the smallest LowBitExponent of a nonzero term
    for (std::int64_t i = 0; i < n; ++i) {
      const float a = static_cast<float>(ga(i));
      if constexpr (kProducts) {
        const float b = static_cast<float>(gb(i));
        if (a != 0.0f && b != 0.0f) lsb = std::min(lsb, LowBitExponent(a) + LowBitExponent(b));
      } else {
        if (a != 0.0f) lsb = std::min(lsb, LowBitExponent(a));
      }
    }
    if (SumIsExact(abs_sum, lsb))
      certified = certdetail::CertifyFinished(sum, bound, true, finish, divisor, &out);
  }
  if (!certified) {
    ExactAccumulator acc;
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (kProducts) {
        acc.AddProduct(static_cast<float>(ga(i)), static_cast<float>(gb(i)));
      } else {
        acc.Add(static_cast<float>(ga(i)));
      }
    }
    out = certdetail::FinishExact(acc, finish, divisor);
  }
  CountCertified(kind, 1, certified ? 0 : 1);
  return out;
}

// Conveniences over CertifiedReduce.
template <class G>
float CertifiedSum(std::int64_t n, const G& get) {
  return CertifiedReduce(CertKind::kSum, n, get, certdetail::NoFactor{}, CertFinish::kNone);
}
template <class G>
float CertifiedMean(std::int64_t n, const G& get) {
  return CertifiedReduce(CertKind::kMean, n, get, certdetail::NoFactor{}, CertFinish::kDivide);
}
template <class GA, class GB>
float CertifiedDot(std::int64_t n, const GA& ga, const GB& gb) {
  return CertifiedReduce(CertKind::kDot, n, ga, gb, CertFinish::kNone);
}
template <class GA, class GB>
float CertifiedMeanDot(std::int64_t n, const GA& ga, const GB& gb, std::int64_t divisor = 0) {
  return CertifiedReduce(CertKind::kMean, n, ga, gb, CertFinish::kDivide, divisor);
}
template <class G>
float CertifiedNorm(std::int64_t n, const G& get) {
  return CertifiedReduce(CertKind::kNorm, n, get, get, CertFinish::kSqrt);
}

}  // namespace vt::kernels
