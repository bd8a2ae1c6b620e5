#pragma once
// The certificate of certified mode (docs/kernels.md, "Method and the proof
// of the certificate"), written once as VT_HD inline functions: the CPU's
// certified GEMM and reductions (kernels/certified.cpp) and the CUDA fast
// path (kernels/cuda/device.cu) decide every output with this code, so the
// two cannot drift. Integer bit manipulation and single IEEE fp64 operations
// and conversions only; no libm except ldexp outside the normal range.
//
// The certificate runs once per output, so it makes no libm calls for the
// common cases (they measured 12 % of a certified step on the CPU): Pow2,
// NextUp and NextDown return exactly what std::ldexp and std::nextafter
// return, for every input (tested against libm).

#include <cmath>
#include <cstdint>
#include <cstring>

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

#include "common/hd.h"
#include "kernels/arith_hd.h"

namespace vt::kernels {

namespace certbits {
using hd::DoubleBits;
using hd::DoubleFromBits;
using hd::FloatBits;
// The number of trailing zero bits of a nonzero x.
VT_HD inline int TrailingZeros(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(x)) - 1;
#else
  return std::countr_zero(x);
#endif
}
inline constexpr std::uint64_t kPosInf = 0x7ff0000000000000ull;
}  // namespace certbits

// std::ldexp(1.0, e): built in the exponent field for a normal result.
VT_HD inline double Pow2(int e) {
  if (e >= -1022 && e <= 1023) return certbits::DoubleFromBits(static_cast<std::uint64_t>(e + 1023) << 52);
#if defined(__CUDA_ARCH__)
  return ldexp(1.0, e);
#else
  return std::ldexp(1.0, e);
#endif
}

// std::nextafter(x, +inf): one step of the bit pattern away from zero for
// x > 0, towards it for x < 0; +0 and −0 go to the least subnormal; NaN and
// +inf stay.
VT_HD inline double NextUp(double x) {
  if (!(x < certbits::DoubleFromBits(certbits::kPosInf))) return x;
  if (x == 0.0) return certbits::DoubleFromBits(1);  // the least subnormal
  const std::uint64_t bits = certbits::DoubleBits(x);
  return certbits::DoubleFromBits(x > 0.0 ? bits + 1 : bits - 1);
}

// std::nextafter(x, −inf).
VT_HD inline double NextDown(double x) { return -NextUp(-x); }

// The exponent of the lowest set bit of a nonzero fp32 value: x is an odd
// multiple of 2^LowBitExponent(x). For NaN/inf a value that never matters
// (their bound is not finite).
VT_HD inline int LowBitExponent(float x) {
  const std::uint32_t bits = certbits::FloatBits(x);
  const int e = static_cast<int>((bits >> 23) & 0xffu);
  const std::uint32_t mantissa = (bits & 0x7fffffu) | (e == 0 ? 0u : 0x800000u);
  return (e == 0 ? 1 : e) - 150 + (mantissa == 0 ? 0 : certbits::TrailingZeros(mantissa));
}

// Exactness: if every term is an integer multiple of 2^lsb_exponent and the
// terms' absolute values sum (as computed in fp64, abs_sum) to less than
// 2^(lsb_exponent + 52), then every partial sum in every order — fma or
// not — is such a multiple below 2^(lsb_exponent + 53): exactly representable,
// so the fp64 result IS the exact value. (Sums of a few fp32 values of
// similar size are the common case, and half of them are exact ties that no
// error bound could decide.)
VT_HD inline bool SumIsExact(double abs_sum, int lsb_exponent) { return abs_sum < Pow2(lsb_exponent + 52); }

// `lo ≤ exact ≤ hi` is known. If every real number in [lo, hi] rounds to the
// same fp32 value under the definition (kernels/certified.h), writes it and
// returns true. (Round-to-nearest is monotone, so it suffices that lo and hi
// round to the same bits; an interval that touches zero only certifies the
// exact zero.)
VT_HD inline bool CertifyInterval(double lo, double hi, float* out) {
  if (!(lo <= hi)) return false;  // NaN included
  const float rl = static_cast<float>(lo);
  const float rh = static_cast<float>(hi);
  if (certbits::FloatBits(rl) != certbits::FloatBits(rh)) return false;
  if (rl == 0.0f) {
    // Only a point interval at zero is the exact zero (+0); an interval
    // containing 0 and tiny values of one sign could be either.
    if (lo == 0.0 && hi == 0.0) {
      *out = 0.0f;
      return true;
    }
    if (lo <= 0.0 && hi >= 0.0) return false;
  }
  *out = rl;
  return true;
}

// |approx − exact| ≤ bound (both fp64, bound ≥ 0): the interval rounded outward.
VT_HD inline bool CertifyApprox(double approx, double bound, float* out) {
  if (bound == 0.0) {
    // No term was nonzero (the bound is a positive multiple of Σ|terms| plus
    // |c0|): the value is exact. Only zero is expected here; anything else
    // means the evaluation was not what the bound assumes — decide exactly.
    if (approx == 0.0) {
      *out = 0.0f;
      return true;
    }
    return false;
  }
  // Each endpoint is computed with one rounding; the neighbour outward of a
  // rounded value lies on the far side of the real value, so [lo, hi] ⊇
  // [approx − bound, approx + bound].
  return CertifyInterval(NextDown(approx - bound), NextUp(approx + bound), out);
}

// CertifyApprox's common case, branch-free so that a loop of it vectorises:
// the value is accepted when a WIDER interval than CertifyApprox's,
// [approx − w, approx + w] with
//   w = bound + (|approx| + bound)·2^-48 + 2^-1000   (each step rounded),
// rounds at both ends to one finite nonzero fp32 value v, or when bound and
// approx are both zero (v = +0: CertifyApprox's zero case). Why v is then
// CertifyApprox's own value: its interval is [NextDown(fl(approx − bound)),
// NextUp(fl(approx + bound))], whose ends lie within bound + 2^-50.9·S +
// 2^-1073 of approx (S = |approx| + bound: one rounding and one neighbour
// step, each ≤ 2^-52·S plus a subnormal step), and the computed w exceeds
// that (its three roundings cost < 2^-52·S). Round-to-nearest is monotone
// and both intervals' ends are fp64 numbers, so approx ± w rounded still
// contain CertifyApprox's ends, which therefore round to v too (v ≠ 0: its
// zero rules do not apply). bound > 0 is required: CertifyApprox decides a
// zero bound only at a zero value. So this test decides a subset of what
// CertifyApprox decides, with the same values (CertifiedHelpers tests it).
// Returns v, or `otherwise` and adds 1 to `undecided`. (`&`, not `&&`, and no
// struct or out-parameter: GCC vectorises a loop around it.)
VT_HD inline float CertifyApproxFast(double approx, double bound, float otherwise, std::int64_t& undecided) {
  const double abs_approx = approx < 0.0 ? -approx : approx;
  const double w = bound + (abs_approx + bound) * 0x1p-48 + 0x1p-1000;
  const float lo = static_cast<float>(approx - w), hi = static_cast<float>(approx + w);
  const float abs_lo = lo < 0.0f ? -lo : lo;
  const bool value = (bound > 0.0) & (lo == hi) & (abs_lo <= 0x1.fffffep127f) & (lo != 0.0f);
  const bool zero = (bound == 0.0) & (approx == 0.0);
  undecided += !(value | zero);
  return value ? lo : zero ? 0.0f : otherwise;
}

// A sum with no finishing operation, known to within `bound` of `sum`, or
// exactly (`exact`, SumIsExact: bound ignored). An exact zero is +0 whatever
// the signs of its terms.
VT_HD inline bool CertifySum(double sum, double bound, bool exact, float* out) {
  if (exact) {
    *out = sum == 0.0 ? 0.0f : static_cast<float>(sum);  // IEEE conversion: RNE of the exact value
    return true;
  }
  return CertifyApprox(sum, bound, out);
}

// One certified GEMM output c = CR(c0 + Σ_p a_p·b_p) from its fp64 fast-path
// value c64 (any order): ‖row‖₂·‖col‖₂ + |c0| bounds Σ|terms| (Cauchy–
// Schwarz), `half` = CertSumBound(terms, 1.0), `lsb` = the row's plus the
// column's smallest LowBitExponent (every product is a multiple of 2^lsb).
VT_HD inline bool CertifyGemmOutput(double c64, double row_norm, double col_norm, float c0, int lsb, double half,
                                    float* out) {
  const double c0d = static_cast<double>(c0);
  const double abs_bound = row_norm * col_norm + (c0d < 0.0 ? -c0d : c0d);
  if (c0 != 0.0f) {
    const int c0_lsb = LowBitExponent(c0);
    lsb = c0_lsb < lsb ? c0_lsb : lsb;
  }
  return CertifySum(c64, half * abs_bound, SumIsExact(abs_bound, lsb), out);
}

}  // namespace vt::kernels
