// (No #pragma once: included once per ISA namespace.)
// The method and the error bound of every function are argued in
// docs/kernels.md, "Correctly rounded functions (certified mode)"; the comments
// here name the quantities the argument uses. u = 2^-53 is the unit roundoff
// of double.

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/crmath.h"
#include "common/detmath.h"

#if defined(__FMA__) && defined(__AVX__)
#include <immintrin.h>
#define VT_CRMATH_VECTOR4 1  // the FMA copy: four fast evaluations per instruction
#else
#define VT_CRMATH_VECTOR4 0
#endif

#if defined(__FAST_MATH__)
#error "common/crmath_impl.h needs IEEE arithmetic: do not build with -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "common/crmath_impl.h needs double expressions evaluated in double (FLT_EVAL_METHOD == 0)"
#endif
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

// This file is the whole implementation, included twice (common/crmath.cpp
// dispatches): once as vt::crmath::base, compiled for the baseline ISA, where
// std::fma is a libm call; once as vt::crmath::fma_isa, in crmath_fma.cpp
// compiled with -mfma, where it is one instruction. fma is exact either way,
// so both give the same bits (CrmathIsa.FmaAndBaselineAgree checks it).
#ifndef VT_CRMATH_ISA
#error "define VT_CRMATH_ISA (the namespace of this copy) before including common/crmath_impl.h"
#endif

namespace vt::crmath::VT_CRMATH_ISA {

namespace {

using detmath::BitsFloat;
using detmath::CanonicalNaN;
using detmath::FloatBits;

std::uint64_t DoubleBits(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

double BitsDouble(std::uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

// 2^k as a double, exact for -1022 <= k <= 1023.
double Pow2(int k) { return BitsDouble(static_cast<std::uint64_t>(k + 1023) << 52); }

// Round to the nearest integer (ties to even), valid for |t| < 2^51.
double RoundToInteger(double t) {
  constexpr double kShift = 0x1.8p52;
  return (t + kShift) - kShift;
}

// ---- double-double arithmetic ---------------------------------------------------
// A DD is hi + lo with |lo| <= ulp(hi)/2. The algorithms are those of Joldes,
// Muller and Popescu, "Tight and rigorous error bounds for basic building
// blocks of double-word arithmetic" (ACM TOMS 44, 2017); each returns its
// exact result times (1 + d) with |d| <= 15u^2 + 56u^3 < 2^-100, the bound
// every slow-path argument uses per operation.

struct DD {
  double hi;
  double lo;
};

DD TwoSum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

DD FastTwoSum(double a, double b) {  // |a| >= |b| (or a == 0)
  const double s = a + b;
  return {s, b - (s - a)};
}

DD TwoProd(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}

DD Neg(DD x) { return {-x.hi, -x.lo}; }

DD Add(DD x, DD y) {  // AccurateDWPlusDW (Alg. 6): <= 3u^2 / (1 - 4u)
  const DD s = TwoSum(x.hi, y.hi);
  const DD t = TwoSum(x.lo, y.lo);
  const DD v = FastTwoSum(s.hi, s.lo + t.hi);
  return FastTwoSum(v.hi, t.lo + v.lo);
}

DD MulD(DD x, double y) {  // DWTimesFP3 (Alg. 9): <= 2u^2
  const DD c = TwoProd(x.hi, y);
  return FastTwoSum(c.hi, std::fma(x.lo, y, c.lo));
}

DD Mul(DD x, DD y) {  // DWTimesDW3 (Alg. 12): <= 4u^2
  const DD c = TwoProd(x.hi, y.hi);
  const double t = std::fma(x.hi, y.lo, x.lo * y.lo);
  return FastTwoSum(c.hi, c.lo + std::fma(x.lo, y.hi, t));
}

DD DivD(DD x, double y) {  // DWDivFP3 (Alg. 15): <= 3u^2
  const double th = x.hi / y;
  const DD p = TwoProd(th, y);
  const double d = ((x.hi - p.hi) - p.lo) + x.lo;
  return FastTwoSum(th, d / y);
}

DD Div(DD x, DD y) {  // DWDivDW2 (Alg. 17): <= 15u^2 + 56u^3
  const double th = x.hi / y.hi;
  const DD r = MulD(y, th);
  const double d = (x.hi - r.hi) + (x.lo - r.lo);
  return FastTwoSum(th, d / y.hi);
}

// ln 2 and pi/2 as sums of three doubles, 2/sqrt(pi) as two (from MPFR).
constexpr double kLn2Hi = 0x1.62e42fefa39efp-1;
constexpr double kLn2Mid = 0x1.abc9e3b39803fp-56;
constexpr double kLn2Lo = 0x1.7b57a079a1934p-111;
constexpr double kInvLn2 = 0x1.71547652b82fep0;  // any value near 1/ln 2 serves
constexpr double kPiOver2Hi = 0x1.921fb54442d18p0;
constexpr double kPiOver2Mid = 0x1.1a62633145c07p-54;
constexpr double kTwoOverSqrtPiHi = 0x1.20dd750429b6dp0;
constexpr double kTwoOverSqrtPiLo = 0x1.1ae3a914fed8p-56;

// ---- the rounding decision -----------------------------------------------------

// The float interval around |v|: `below` is the largest float <= |v| (as bits,
// FLT_MAX above it), `mid` the midpoint between it and the next float (the
// only rounding boundary a value this close can cross).
struct Bracket {
  std::uint32_t below;
  double mid;
};

Bracket BracketOf(double a /* >= 0 */) {
  if (a >= 0x1p128) return {0x7f7fffffu, 0x1p128 - 0x1p103};  // FLT_MAX and the overflow boundary
  if (a >= 0x1p-126) {
    // Truncate the double to float precision (clear the 29 low mantissa bits).
    const double t = BitsDouble(DoubleBits(a) & ~((std::uint64_t{1} << 29) - 1));
    const int e = static_cast<int>(DoubleBits(t) >> 52) - 1023;
    return {FloatBits(static_cast<float>(t)), t + Pow2(e - 24)};
  }
  const auto n = static_cast<std::uint32_t>(a * 0x1p149);  // subnormal spacing 2^-149
  return {n, (static_cast<double>(n) + 0.5) * 0x1p-149};
}

// True (and *out set) when every real within `bound` of hi + lo rounds to
// the same float; bound must be below a quarter of a float ulp there.
bool Decide(DD v, double bound, float* out) {
  const bool negative = std::signbit(v.hi);
  const double a = std::fabs(v.hi);
  const double l = negative ? -v.lo : v.lo;
  const Bracket b = BracketOf(a);
  const double dm = a - b.mid;
  const double d = dm + l;
  // d is computed with error <= 2.01u (|dm| + |l|); the factor covers the two
  // roundings of the right-hand side.
  const double need = (bound + 0x1p-50 * (std::fabs(dm) + std::fabs(l))) * (1.0 + 0x1p-50);
  if (!(std::fabs(d) > need)) return false;
  const std::uint32_t bits = d > 0 ? b.below + 1 : b.below;  // below + 1 of FLT_MAX is +inf
  *out = BitsFloat(bits | (negative ? 0x80000000u : 0u));
  return true;
}

using SlowFn = DD (*)(float);

float Finish(double fast, double fast_rel, float x, SlowFn slow, double slow_rel) {
  float r;
  if (Decide({fast, 0.0}, fast_rel * std::fabs(fast), &r)) return r;
  PathCounts& counts = ThreadPathCounts();
  ++counts.slow;
  const DD v = slow(x);
  if (Decide(v, slow_rel * std::fabs(v.hi), &r)) return r;
  ++counts.undecided;
  return static_cast<float>(v.hi);
}

// Relative error bounds used (each at least twice the proven one, which also
// covers the step from "relative to the exact value" to "relative to the
// computed one").
constexpr double kExpFastRel = 0x1p-47;    // proven 29u
constexpr double kLogFastRel = 0x1p-47;    // proven 17u
constexpr double kTrigFastRel = 0x1p-46;   // proven 27u
constexpr double kTanhFastRel = 0x1p-45;   // proven 121u
constexpr double kErfFastRel = 0x1p-42;    // proven 285u
constexpr double kRsqrtFastRel = 0x1p-50;  // proven 2u + 2u^2
constexpr double kSlowRel = 0x1p-88;       // proven < 2^-89 for every slow path

// ---- Taylor polynomials ------------------------------------------------------------

// 1/n! for n <= 18 (n! < 2^53 is exact, so each is the double nearest 1/n!).
constexpr std::array<double, 19> kInverseFactorial = [] {
  std::array<double, 19> t{};
  double f = 1.0;
  for (int n = 0; n <= 18; ++n) {
    if (n > 0) f *= n;
    t[static_cast<std::size_t>(n)] = 1.0 / f;
  }
  return t;
}();

// Σ_{n=kBottom}^{kTop} x^(n−kBottom)/n! by Horner with fma, from 1/kTop!
// down (the degrees are template arguments: the loop unrolls into fma with
// constant coefficients, as a hot fast path needs).
template <int kTop, int kBottom>
double InverseFactorialHorner(double x) {
  static_assert(0 <= kBottom && kBottom < kTop && kTop <= 18);
  double p = kInverseFactorial[kTop];
#pragma GCC unroll 18
  for (int n = kTop - 1; n >= kBottom; --n)
    p = std::fma(p, x, kInverseFactorial[static_cast<std::size_t>(n)]);
  return p;
}

// ---- exp -------------------------------------------------------------------------

// e^a for a double |a| <= 105 that is a multiple of 2^-53 when |a| >= ln2/2
// (true for floats, 2*float and -float^2); relative error <= 29u.
double ExpFast(double a) {
  const double kd = RoundToInteger(a * kInvLn2);
  // |r| <= 0.3466 + 2^-40; abs error <= 0.71u (two roundings of |r| <= 0.35,
  // ln 2 - kLn2Hi - kLn2Mid < 2^-110 times |k| <= 152).
  double r = std::fma(-kd, kLn2Hi, a);
  r = std::fma(-kd, kLn2Mid, r);
  // Taylor to degree 13 (truncation < 2^-57 e^r), Horner with fma.
  const double p = InverseFactorialHorner<13, 0>(r);
  return p * Pow2(static_cast<int>(kd));  // exact: the result is a normal double
}

// e^a in double-double for the same a; relative error < 2^-93.
DD ExpSlow(double a) {
  const double kd = RoundToInteger(a * kInvLn2);
  // r = a - k ln 2 with k ln 2 as three exact products (the last rounded,
  // < 2^-150); |r| <= 0.35, abs error <= 3 * 2^-100 * 0.35 + 2^-150.
  DD r = Add({a, 0.0}, Neg(TwoProd(kd, kLn2Hi)));
  r = Add(r, Neg(TwoProd(kd, kLn2Mid)));
  r = Add(r, {-(kd * kLn2Lo), 0.0});
  // Taylor to degree 27 (truncation < 2^-140); terms t_n = t_{n-1} r / n.
  DD sum{1.0, 0.0};
  DD term{1.0, 0.0};
  for (int n = 1; n <= 27; ++n) {
    term = DivD(Mul(term, r), n);
    sum = Add(sum, term);
  }
  const double scale = Pow2(static_cast<int>(kd));
  return {sum.hi * scale, sum.lo * scale};
}

// ---- log -------------------------------------------------------------------------

// x = 2^e m with m in [sqrt(1/2), sqrt(2)), for finite x > 0.
struct LogArg {
  int e;
  double m;
};

LogArg SplitLog(float x) {
  std::uint32_t bits = FloatBits(x);
  int e;
  std::uint32_t frac;
  if (bits >= 0x00800000u) {
    e = static_cast<int>(bits >> 23) - 127;
    frac = bits & 0x7fffffu;
  } else {  // subnormal: shift the leading 1 to bit 23
    int shift = 0;
    while ((bits & 0x800000u) == 0) {
      bits <<= 1;
      ++shift;
    }
    e = -126 - shift;
    frac = bits & 0x7fffffu;
  }
  double m = 1.0 + static_cast<double>(frac) * 0x1p-23;  // exact
  if (m >= 1.4142135623730951) {
    m *= 0.5;
    e += 1;
  }
  return {e, m};
}

float LogSpecial(float x, bool* done) {
  const std::uint32_t bits = FloatBits(x);
  *done = true;
  if ((bits & 0x7fffffffu) == 0) return -detmath::Infinity();  // log(+-0) = -inf
  if (detmath::IsNaN(x) || (bits >> 31) != 0) return CanonicalNaN();
  if (bits == 0x7f800000u) return x;
  if (bits == 0x3f800000u) return 0.0f;  // log(1) = +0 exactly
  *done = false;
  return 0.0f;
}

double LogFast(float x) {
  const LogArg s = SplitLog(x);
  // log m = 2 atanh f, f = (m-1)/(m+1): m-1 and m+1 exact, f rel error <= u,
  // |f| <= 0.1716, z = f^2 <= 0.02944.
  const double f = (s.m - 1.0) / (s.m + 1.0);
  const double z = f * f;
  // P(z) = sum_{i<=10} z^i/(2i+1) in [1, 1.0101]; truncation < 2^-60.
  double p = 1.0 / 21.0;
  p = std::fma(p, z, 1.0 / 19.0);
  p = std::fma(p, z, 1.0 / 17.0);
  p = std::fma(p, z, 1.0 / 15.0);
  p = std::fma(p, z, 1.0 / 13.0);
  p = std::fma(p, z, 1.0 / 11.0);
  p = std::fma(p, z, 1.0 / 9.0);
  p = std::fma(p, z, 1.0 / 7.0);
  p = std::fma(p, z, 1.0 / 5.0);
  p = std::fma(p, z, 1.0 / 3.0);
  p = std::fma(p, z, 1.0);
  const double lm = (f + f) * p;  // rel error <= 14.3u, |lm| <= 0.3466 <= |result|
  const auto ed = static_cast<double>(s.e);
  return std::fma(ed, kLn2Hi, std::fma(ed, kLn2Mid, lm));
}

DD LogSlow(float x) {
  const LogArg s = SplitLog(x);
  const DD f = Div({s.m - 1.0, 0.0}, {s.m + 1.0, 0.0});
  const DD z = Mul(f, f);
  // P(z) = sum_{i<=25} z^i/(2i+1): positive terms, truncation < 2^-130.
  DD sum{1.0, 0.0};
  DD power{1.0, 0.0};
  for (int i = 1; i <= 25; ++i) {
    power = Mul(power, z);
    sum = Add(sum, DivD(power, 2 * i + 1));
  }
  const DD lm = Mul(f, sum);
  const DD twice{2.0 * lm.hi, 2.0 * lm.lo};
  const auto ed = static_cast<double>(s.e);
  DD y = Add(TwoProd(ed, kLn2Hi), TwoProd(ed, kLn2Mid));  // e ln2, error <= |e| 2^-163
  y = Add(y, {ed * kLn2Lo, 0.0});
  return Add(y, twice);
}

// ---- sin and cos ---------------------------------------------------------------------

// |x| = (4n + q + f) pi/2 with |f| <= 1/2: |f| = sum_k limb[k] 2^(32k - 190).
struct Quarter {
  std::uint32_t q;
  bool negative;  // f < 0
  std::uint32_t limb[6];
};

// Payne-Hanek reduction, exact in integers, of a finite |x| >= pi/4: a 192-bit
// window of the bits of 2/pi times the 24-bit mantissa. Bits before the window
// add multiples of 4 quarter turns; bits after it less than 2^-166 of one.
Quarter ReduceQuarter(std::uint32_t abits) {
  const std::uint64_t m = (abits & 0x7fffffu) | 0x800000u;  // |x| = m 2^(E-150)
  const int s = static_cast<int>(abits >> 23) - 152;
  // Window limbs, least significant first: bits s+161..s+192 are limb 0.
  Quarter red{};
  std::uint64_t carry = 0;
  for (int k = 0; k < 6; ++k) {
    const std::uint64_t p = m * detmath::detail::TwoOverPiBits(s + 160 - 32 * k) + carry;
    red.limb[k] = static_cast<std::uint32_t>(p);
    carry = p >> 32;
  }
  // The final carry (bits 192 and up) counts whole turns: dropped.
  // The binary point lies 190 bits up: quadrant = bits 190-191, fraction below.
  red.q = red.limb[5] >> 30;
  red.limb[5] &= 0x3fffffffu;
  red.negative = (red.limb[5] >> 29) != 0;  // fraction >= 1/2: take it from the next quadrant
  if (red.negative) {
    red.q = (red.q + 1) & 3u;
    std::uint64_t c = 1;  // 2^190 - F as the two's complement masked to 190 bits
    for (std::uint32_t& l : red.limb) {
      const std::uint64_t t = static_cast<std::uint64_t>(~l) + c;
      l = static_cast<std::uint32_t>(t);
      c = t >> 32;
    }
    red.limb[5] &= 0x3fffffffu;
  }
  return red;
}

// f rounded to double: the top 64 bits from the leading nonzero limb, one
// rounding (relative error <= u + 2^-63).
double QuarterDouble(const Quarter& red) {
  int k = 5;
  while (k > 1 && red.limb[k] == 0) --k;
  const std::uint64_t hi = (static_cast<std::uint64_t>(red.limb[k]) << 32) | red.limb[k - 1];
  const std::uint32_t next = red.limb[k >= 2 ? k - 2 : 0];
  const int lead = 63 - std::countl_zero(hi | 1u);
  // Shift the leading bit to bit 63, filling from the next limb.
  const int sh = 63 - lead;
  const std::uint64_t top64 =
      sh == 0 ? hi : (hi << sh) | (k >= 2 ? (static_cast<std::uint64_t>(next) >> (32 - sh)) : 0);
  const double f = static_cast<double>(top64) * Pow2(32 * (k - 1) - 190 - sh);
  return red.negative ? -f : f;
}

// f as a double-double: the limbs summed from the top (positive terms, six
// additions: relative error <= 6 * 2^-100).
DD QuarterDD(const Quarter& red) {
  DD f{0.0, 0.0};
  for (int k = 5; k >= 0; --k) f = Add(f, {static_cast<double>(red.limb[k]) * Pow2(32 * k - 190), 0.0});
  return red.negative ? Neg(f) : f;
}

// sin r / r and cos r for |r| <= 0.786 in double (Taylor to r^18, Horner).
double SinOverR(double z /* r^2 */) {
  double p = -1.0 / 121645100408832000.0;  // -1/19!
  p = std::fma(p, z, 1.0 / 355687428096000.0);
  p = std::fma(p, z, -1.0 / 1307674368000.0);
  p = std::fma(p, z, 1.0 / 6227020800.0);
  p = std::fma(p, z, -1.0 / 39916800.0);
  p = std::fma(p, z, 1.0 / 362880.0);
  p = std::fma(p, z, -1.0 / 5040.0);
  p = std::fma(p, z, 1.0 / 120.0);
  p = std::fma(p, z, -1.0 / 6.0);
  return std::fma(p, z, 1.0);
}

double CosR(double z) {
  double p = -1.0 / 6402373705728000.0;  // -1/18!
  p = std::fma(p, z, 1.0 / 20922789888000.0);
  p = std::fma(p, z, -1.0 / 87178291200.0);
  p = std::fma(p, z, 1.0 / 479001600.0);
  p = std::fma(p, z, -1.0 / 3628800.0);
  p = std::fma(p, z, 1.0 / 40320.0);
  p = std::fma(p, z, -1.0 / 720.0);
  p = std::fma(p, z, 1.0 / 24.0);
  p = std::fma(p, z, -0.5);
  return std::fma(p, z, 1.0);
}

// The same in double-double: alternating Taylor series to degree 30.
DD SinSlowR(DD r) {
  const DD z = Mul(r, r);
  DD sum{1.0, 0.0};
  DD term{1.0, 0.0};
  for (int n = 1; n <= 15; ++n) {
    term = Neg(DivD(Mul(term, z), static_cast<double>((2 * n) * (2 * n + 1))));
    sum = Add(sum, term);
  }
  return Mul(r, sum);
}

DD CosSlowR(DD r) {
  const DD z = Mul(r, r);
  DD sum{1.0, 0.0};
  DD term{1.0, 0.0};
  for (int n = 1; n <= 15; ++n) {
    term = Neg(DivD(Mul(term, z), static_cast<double>((2 * n - 1) * (2 * n))));
    sum = Add(sum, term);
  }
  return sum;
}

constexpr std::uint32_t kQuarterPiBits = 0x3f490fdbu;  // float just above pi/4

// Which function of r and which sign give sin or cos of |x| in quadrant q.
struct TrigPlan {
  bool use_cos;
  bool negate;
};

TrigPlan PlanSin(std::uint32_t q) { return {(q & 1u) != 0, (q & 2u) != 0}; }
TrigPlan PlanCos(std::uint32_t q) { return {(q & 1u) == 0, q == 1u || q == 2u}; }

double TrigFast(float x, bool cosine) {
  const std::uint32_t abits = FloatBits(x) & 0x7fffffffu;
  double r;
  std::uint32_t q = 0;
  if (abits <= kQuarterPiBits) {
    r = static_cast<double>(BitsFloat(abits));
  } else {
    const Quarter red = ReduceQuarter(abits);
    q = red.q;
    r = QuarterDouble(red) * kPiOver2Hi;  // rel error <= 2.01u + 2^-166/|f|
  }
  const TrigPlan plan = cosine ? PlanCos(q) : PlanSin(q);
  const double z = r * r;
  double y = plan.use_cos ? CosR(z) : r * SinOverR(z);
  if (plan.negate) y = -y;
  if (!cosine && std::signbit(x)) y = -y;
  return y;
}

DD TrigSlow(float x, bool cosine) {
  const std::uint32_t abits = FloatBits(x) & 0x7fffffffu;
  DD r;
  std::uint32_t q = 0;
  if (abits <= kQuarterPiBits) {
    r = {static_cast<double>(BitsFloat(abits)), 0.0};
  } else {
    const Quarter red = ReduceQuarter(abits);
    q = red.q;
    r = Mul(QuarterDD(red), {kPiOver2Hi, kPiOver2Mid});
  }
  const TrigPlan plan = cosine ? PlanCos(q) : PlanSin(q);
  DD y = plan.use_cos ? CosSlowR(r) : SinSlowR(r);
  if (plan.negate) y = Neg(y);
  if (!cosine && std::signbit(x)) y = Neg(y);
  return y;
}

DD SinSlow(float x) { return TrigSlow(x, false); }
DD CosSlow(float x) { return TrigSlow(x, true); }

// ---- tanh ----------------------------------------------------------------------------

// Beyond this |x|, 1 - tanh|x| < 2 e^{-2|x|} < 2^-25: tanh rounds to +-1.
constexpr float kTanhOne = 9.1f;

// (e^a − 1) for 0 <= a < 0.7: (e^a - 1)/a = sum_{n<=16} a^n/(n+1)! in
// [1, 1.43]; truncation < 2^-61; rel error <= 27u.
double TanhSmallEm1(double a) { return a * InverseFactorialHorner<17, 1>(a); }

// tanh|x| = (e^a − 1)/(e^a + 1), a = 2|x|, with x's sign.
double TanhFromEm1(double em1, float x) {
  const double t = em1 / (em1 + 2.0);
  return std::signbit(x) ? -t : t;
}

double TanhFast(float x) {
  const double a = 2.0 * std::fabs(static_cast<double>(x));  // exact
  // e^a - 1; above 0.7: e^a >= 2, rel error <= 2 * 29u + u
  const double em1 = a < 0.7 ? TanhSmallEm1(a) : ExpFast(a) - 1.0;
  return TanhFromEm1(em1, x);
}

// TanhFast for |x| < kTanhOne with both formulas evaluated and one selected:
// the same operations and value, without a branch on the data, so that a
// loop over many values runs its evaluations side by side (TanhArray).
double TanhFastUnbranched(float x) {
  const double a = 2.0 * std::fabs(static_cast<double>(x));
  const double small = TanhSmallEm1(a);
  const double large = ExpFast(a) - 1.0;
  return TanhFromEm1(a < 0.7 ? small : large, x);
}

#if VT_CRMATH_VECTOR4
// ExpFast and TanhFastUnbranched on four lanes (the FMA copy): each lane
// runs the scalar function's operations in its order — the same fma, ×, +,
// −, ÷ and the same exact conversions — so it gets the same value, and the
// scalar proofs hold. (`fma(−kd, c, a)` is `fnmadd(kd, c, a)`: the negation
// is exact.)
inline __m256d ExpFast4(__m256d a) {
  const __m256d shift = _mm256_set1_pd(0x1.8p52);
  const __m256d kd = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(a, _mm256_set1_pd(kInvLn2)), shift), shift);
  __m256d r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(kLn2Hi), a);
  r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(kLn2Mid), r);
  __m256d p = _mm256_set1_pd(kInverseFactorial[13]);
  for (int n = 12; n >= 0; --n)
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kInverseFactorial[static_cast<std::size_t>(n)]));
  // Pow2(k): (k + 1023) << 52 per lane (kd is an integer: the conversion is exact).
  const __m128i k = _mm_add_epi32(_mm256_cvtpd_epi32(kd), _mm_set1_epi32(1023));
  const __m128i lo = _mm_slli_epi64(_mm_cvtepi32_epi64(k), 52);
  const __m128i hi = _mm_slli_epi64(_mm_cvtepi32_epi64(_mm_srli_si128(k, 8)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(_mm256_set_m128i(hi, lo)));
}

inline void TanhFastUnbranched4(const float* x, double* out) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d xd = _mm256_cvtps_pd(_mm_loadu_ps(x));
  const __m256d a = _mm256_mul_pd(_mm256_set1_pd(2.0), _mm256_andnot_pd(sign, xd));
  __m256d p = _mm256_set1_pd(kInverseFactorial[17]);  // TanhSmallEm1
  for (int n = 16; n >= 1; --n)
    p = _mm256_fmadd_pd(p, a, _mm256_set1_pd(kInverseFactorial[static_cast<std::size_t>(n)]));
  const __m256d small = _mm256_mul_pd(a, p);
  const __m256d large = _mm256_sub_pd(ExpFast4(a), _mm256_set1_pd(1.0));
  const __m256d em1 = _mm256_blendv_pd(large, small, _mm256_cmp_pd(a, _mm256_set1_pd(0.7), _CMP_LT_OQ));
  const __m256d t = _mm256_div_pd(em1, _mm256_add_pd(em1, _mm256_set1_pd(2.0)));
  _mm256_storeu_pd(out, _mm256_xor_pd(t, _mm256_and_pd(xd, sign)));  // −t where x is negative
}

// The same on eight lanes, for CPUs with AVX-512F (chosen at run time: the
// copy itself is compiled for FMA and AVX2 only): the four-lane functions'
// operations, lane by lane, with AVX-512F's own forms of the bit operations
// (abs and the sign by integer and/xor: the floating ones need AVX-512DQ).
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which it
// reports as maybe-uninitialized when they are inlined into a target
// function (a false positive: every lane is written).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define VT_CRMATH_AVX512 __attribute__((target("avx512f,fma"), always_inline)) inline
VT_CRMATH_AVX512 __m512d ExpFast8(__m512d a) {
  const __m512d shift = _mm512_set1_pd(0x1.8p52);
  const __m512d kd = _mm512_sub_pd(_mm512_add_pd(_mm512_mul_pd(a, _mm512_set1_pd(kInvLn2)), shift), shift);
  __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(kLn2Hi), a);
  r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(kLn2Mid), r);
  __m512d p = _mm512_set1_pd(kInverseFactorial[13]);
  for (int n = 12; n >= 0; --n)
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kInverseFactorial[static_cast<std::size_t>(n)]));
  const __m256i k = _mm256_add_epi32(_mm512_cvtpd_epi32(kd), _mm256_set1_epi32(1023));
  return _mm512_mul_pd(p, _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_cvtepi32_epi64(k), 52)));
}

VT_CRMATH_AVX512 void TanhFastUnbranched8(const float* x, double* out) {
  const __m512i sign = _mm512_set1_epi64(std::int64_t{1} << 63);
  const __m512d xd = _mm512_cvtps_pd(_mm256_loadu_ps(x));
  const __m512d a = _mm512_mul_pd(_mm512_set1_pd(2.0), _mm512_abs_pd(xd));
  __m512d p = _mm512_set1_pd(kInverseFactorial[17]);  // TanhSmallEm1
  for (int n = 16; n >= 1; --n)
    p = _mm512_fmadd_pd(p, a, _mm512_set1_pd(kInverseFactorial[static_cast<std::size_t>(n)]));
  const __m512d small = _mm512_mul_pd(a, p);
  const __m512d large = _mm512_sub_pd(ExpFast8(a), _mm512_set1_pd(1.0));
  const __m512d em1 =
      _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, _mm512_set1_pd(0.7), _CMP_LT_OQ), large, small);
  const __m512d t = _mm512_div_pd(em1, _mm512_add_pd(em1, _mm512_set1_pd(2.0)));
  const __m512i x_sign = _mm512_and_si512(_mm512_castpd_si512(xd), sign);
  _mm512_storeu_pd(out, _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(t), x_sign)));
}

// The eight-lane part of a block: returns how many values it did (a
// multiple of eight).
__attribute__((target("avx512f,fma"))) std::int64_t TanhFastBlock8(const float* x, double* out,
                                                                   std::int64_t m) {
  std::int64_t j = 0;
  for (; j + 8 <= m; j += 8) TanhFastUnbranched8(x + j, out + j);
  return j;
}
__attribute__((target("avx512f,fma"))) std::int64_t ExpFastBlock8(const float* x, double* out,
                                                                  std::int64_t m) {
  std::int64_t j = 0;
  for (; j + 8 <= m; j += 8) _mm512_storeu_pd(out + j, ExpFast8(_mm512_cvtps_pd(_mm256_loadu_ps(x + j))));
  return j;
}
#undef VT_CRMATH_AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Whether the eight-lane blocks run (the CPU and the OS support AVX-512F;
// VT_CRMATH_NO_AVX512 set non-empty in the environment turns them off, so
// that a test can check the four-lane blocks on the same machine).
bool UseEightLanes() {
  static const bool use = [] {
    const char* off = std::getenv("VT_CRMATH_NO_AVX512");
    return __builtin_cpu_supports("avx512f") && (off == nullptr || *off == '\0');
  }();
  return use;
}
#endif

// out[j] = TanhFastUnbranched(x[j]) / ExpFast(x[j]) for j < m, eight or four
// at a time where the copy has vectors.
void TanhFastBlock(const float* x, double* out, std::int64_t m) {
  std::int64_t j = 0;
#if VT_CRMATH_VECTOR4
  if (UseEightLanes()) j = TanhFastBlock8(x, out, m);
  for (; j + 4 <= m; j += 4) TanhFastUnbranched4(x + j, out + j);
#endif
  for (; j < m; ++j) out[j] = TanhFastUnbranched(x[j]);
}

void ExpFastBlock(const float* x, double* out, std::int64_t m) {
  std::int64_t j = 0;
#if VT_CRMATH_VECTOR4
  if (UseEightLanes()) j = ExpFastBlock8(x, out, m);
  for (; j + 4 <= m; j += 4) _mm256_storeu_pd(out + j, ExpFast4(_mm256_cvtps_pd(_mm_loadu_ps(x + j))));
#endif
  for (; j < m; ++j) out[j] = ExpFast(x[j]);
}

DD TanhSlow(float x) {
  const double a = 2.0 * std::fabs(static_cast<double>(x));
  DD em1;
  if (a < 0.7) {
    // sum_{n=1..30} a^n/n!: positive terms, truncation < 2^-150.
    DD term{a, 0.0};
    em1 = term;
    for (int n = 2; n <= 30; ++n) {
      term = DivD(MulD(term, a), n);
      em1 = Add(em1, term);
    }
  } else {
    em1 = Add(ExpSlow(a), {-1.0, 0.0});
  }
  const DD t = Div(em1, Add(em1, {2.0, 0.0}));
  return std::signbit(x) ? Neg(t) : t;
}

// ---- erf -----------------------------------------------------------------------------

// Beyond this |x|, erfc|x| <= erfc(4) < 1.6e-8 < 2^-25: erf rounds to +-1.
constexpr float kErfOne = 4.0f;

// erf x = 2x/sqrt(pi) e^{-x^2} S, S = sum_n (2x^2)^n / (2n+1)!!: positive terms.
// The sum stops once the ratio y/(2n+3) of consecutive terms is <= 1/2 (so the
// tail is at most the last term) and the last term is below `tiny` of S.
constexpr int kErfMaxTerms = 128;

// 1/(2n+1) rounded to double (compile-time IEEE division).
constexpr std::array<double, kErfMaxTerms> kInvOdd = [] {
  std::array<double, kErfMaxTerms> t{};
  for (int n = 0; n < kErfMaxTerms; ++n)
    t[static_cast<std::size_t>(n)] = 1.0 / static_cast<double>(2 * n + 1);
  return t;
}();

double ErfFast(float x) {
  const double ax = std::fabs(static_cast<double>(x));
  const double sq = ax * ax;  // exact (48 bits)
  const double y = 2.0 * sq;
  double sum = 1.0;
  double term = 1.0;
  for (int n = 1; n < kErfMaxTerms; ++n) {
    term = term * y * kInvOdd[static_cast<std::size_t>(n)];  // rel error <= 3n u
    sum += term;
    if (y <= (2 * n + 3) * 0.5 && term <= 0x1p-60 * sum) break;
  }
  const double v = (ax * kTwoOverSqrtPiHi) * sum * ExpFast(-sq);
  return std::signbit(x) ? -v : v;
}

DD ErfSlow(float x) {
  const double ax = std::fabs(static_cast<double>(x));
  const double sq = ax * ax;
  const double y = 2.0 * sq;
  DD sum{1.0, 0.0};
  DD term{1.0, 0.0};
  for (int n = 1; n < kErfMaxTerms; ++n) {
    term = DivD(MulD(term, y), static_cast<double>(2 * n + 1));
    sum = Add(sum, term);
    if (y <= (2 * n + 3) * 0.5 && term.hi <= 0x1p-115 * sum.hi) break;
  }
  DD v = Mul(MulD(sum, ax), {kTwoOverSqrtPiHi, kTwoOverSqrtPiLo});
  v = Mul(v, ExpSlow(-sq));
  return std::signbit(x) ? Neg(v) : v;
}

}  // namespace

// ---- the functions ---------------------------------------------------------------

float Exp(float x) {
  const std::uint32_t bits = FloatBits(x);
  if (detmath::IsNaN(x)) return CanonicalNaN();
  if (bits == 0xff800000u) return 0.0f;
  if (x > 89.0f) return detmath::Infinity();  // e^89 > 2^128: also +inf itself
  if (x < -104.0f) return 0.0f;               // e^-104 < 2^-150
  return Finish(
      ExpFast(x), kExpFastRel, x, [](float v) { return ExpSlow(v); }, kSlowRel);
}

float Log(float x) {
  bool done;
  const float special = LogSpecial(x, &done);
  if (done) return special;
  return Finish(LogFast(x), kLogFastRel, x, LogSlow, kSlowRel);
}

float Sin(float x) {
  if ((FloatBits(x) & 0x7fffffffu) >= 0x7f800000u) return CanonicalNaN();
  return Finish(TrigFast(x, false), kTrigFastRel, x, SinSlow, kSlowRel);
}

float Cos(float x) {
  if ((FloatBits(x) & 0x7fffffffu) >= 0x7f800000u) return CanonicalNaN();
  return Finish(TrigFast(x, true), kTrigFastRel, x, CosSlow, kSlowRel);
}

float Tanh(float x) {
  if (detmath::IsNaN(x)) return CanonicalNaN();
  if (std::fabs(x) >= kTanhOne) return std::signbit(x) ? -1.0f : 1.0f;
  return Finish(TanhFast(x), kTanhFastRel, x, TanhSlow, kSlowRel);
}

// The array functions (TanhArray, ExpArray): blocks of fast evaluations side
// by side (fast_block; in_range(x) false: the evaluation at 0 instead, never
// used), then
// a branch-free test per value: the fp64 interval [f − w, f + w], w =
// accept_rel·|f|, holds the exact function value, because accept_rel is
// Finish's relative bound widened by 2^-49, which covers the roundings of
// computing the interval's ends (w: one product, < 2^-53 of it; each end:
// < 2^-52·|f|). Where both ends round to the same float, that float IS the
// correctly rounded value (rounding is monotone) — the value the scalar
// function returns for every input (checked against MPFR). Anything else (x
// outside in_range, NaN, −0, an interval across a rounding boundary) is the
// scalar function itself. So the same bits as the scalar function; x and out
// may be the same array.
template <class InRange>
void EvaluateArray(const float* x, float* out, std::int64_t n, const InRange& in_range,
                   void (*fast_block)(const float*, double*, std::int64_t), double accept_rel,
                   float (*scalar)(float)) {
  constexpr std::int64_t kBlock = 64;
  float in[kBlock];  // the block's inputs (out may be x: it is written last)
  float arg[kBlock];
  double fast[kBlock];
  float value[kBlock];
  bool decided[kBlock];
  // (Loops without calls, so that they vectorise; the scalar function runs
  // in a loop of its own over the rare values left undecided.)
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    for (std::int64_t j = 0; j < m; ++j) {
      const float v = x[i0 + j];
      in[j] = v;
      arg[j] = in_range(v) ? v : 0.0f;
    }
    fast_block(arg, fast, m);
    for (std::int64_t j = 0; j < m; ++j) {
      const double w = accept_rel * std::fabs(fast[j]);
      const float lo = static_cast<float>(fast[j] - w), hi = static_cast<float>(fast[j] + w);
      value[j] = lo;
      const bool in_domain = in_range(in[j]);  // (named: clang rejects `&` on a call's bool)
      decided[j] = in_domain & (FloatBits(lo) == FloatBits(hi));
    }
    for (std::int64_t j = 0; j < m; ++j) out[i0 + j] = value[j];
    for (std::int64_t j = 0; j < m; ++j) {
      if (!decided[j]) out[i0 + j] = scalar(in[j]);
    }
  }
}

void TanhArray(const float* x, float* out, std::int64_t n) {
  EvaluateArray(
      x, out, n, [](float v) { return std::fabs(v) < kTanhOne; },  // false for NaN
      TanhFastBlock, kTanhFastRel + 0x1p-49, Tanh);
}

void ExpArray(const float* x, float* out, std::int64_t n) {
  // Exp's own range for Finish (beyond it Exp saturates before any arithmetic).
  EvaluateArray(
      x, out, n, [](float v) { return (v >= -104.0f) & (v <= 89.0f); },  // false for NaN
      ExpFastBlock, kExpFastRel + 0x1p-49, Exp);
}

float Erf(float x) {
  if (detmath::IsNaN(x)) return CanonicalNaN();
  if (std::fabs(x) >= kErfOne) return std::signbit(x) ? -1.0f : 1.0f;
  return Finish(ErfFast(x), kErfFastRel, x, ErfSlow, kSlowRel);
}

namespace detail {
double QuarterTurnFraction(float ax) {
  return std::fabs(QuarterDouble(ReduceQuarter(FloatBits(ax) & 0x7fffffffu)));
}

std::optional<float> SlowPathOnly(float (*fn)(float), float x) {
  struct Entry {
    float (*fn)(float);
    SlowFn slow;
  };
  const Entry table[] = {{Exp, [](float v) { return ExpSlow(v); }},
                         {Log, LogSlow},
                         {Sin, SinSlow},
                         {Cos, CosSlow},
                         {Tanh, TanhSlow},
                         {Erf, ErfSlow}};
  for (const Entry& e : table) {
    if (e.fn != fn) continue;
    const DD v = e.slow(x);
    float r;
    if (Decide(v, kSlowRel * std::fabs(v.hi), &r)) return r;
    return std::nullopt;
  }
  return std::nullopt;
}
}  // namespace detail

float Rsqrt(float x) {
  const std::uint32_t bits = FloatBits(x);
  if (detmath::IsNaN(x)) return CanonicalNaN();
  if ((bits & 0x7fffffffu) == 0) return std::signbit(x) ? -detmath::Infinity() : detmath::Infinity();
  if ((bits >> 31) != 0) return CanonicalNaN();
  if (bits == 0x7f800000u) return 0.0f;
  const double xd = x;
  const double y = 1.0 / std::sqrt(xd);  // two roundings: rel error <= 2u + 2u^2
  float r;
  if (Decide({y, 0.0}, kRsqrtFastRel * y, &r)) return r;
  // Exact decision: 1/sqrt(x) > mid  <=>  mid^2 x < 1. mid has 25 bits, so
  // mid^2 is exact in double and mid^2 x = p + e exactly (TwoProd); p is
  // within a factor 2 of 1, so 1 - p is exact, and the sign of (1 - p) - e is
  // that of its rounding. A tie (mid^2 x == 1) would need 1/sqrt(x) to have
  // 25 significant bits, which no float x allows.
  ++ThreadPathCounts().slow;
  const Bracket b = BracketOf(y);
  const DD p = TwoProd(b.mid * b.mid, xd);
  const double d = (1.0 - p.hi) - p.lo;
  return BitsFloat(d > 0 ? b.below + 1 : b.below);
}

}  // namespace vt::crmath::VT_CRMATH_ISA
