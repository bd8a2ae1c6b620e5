#pragma once
// Fixed-sequence fp64 transcendentals of rounded mode: Exp, Log, Tanh, Cos.
//
// Why: rounded mode computes every operator in fp64 and the arbiter judges
// log entries against a canonical reference value (docs/kernels.md, "The
// canonical reference"). libm's last bit differs between vendors and
// versions, so no party may call it there: every party — trainer, replayer,
// arbiter — evaluates these functions instead, which use only IEEE-754
// binary64 + − × ÷ (correctly rounded everywhere), integer/bit operations
// and no fused multiply-add, in a fixed order. Element-wise operators built
// on them are therefore bit-identical on every machine (OpFp64IsExact).
//
// Algorithms and coefficients: fdlibm (Sun Microsystems, freely
// redistributable) e_exp.c, e_log.c, k_cos.c, k_sin.c and the medium branch
// of e_rem_pio2.c; Cephes (S. Moshier) tanh.c for |x| < 0.625. Accuracy: below
// 1 fp64 ulp for Exp and Log, about 1 ulp for Tanh and for Cos with
// |x| ≤ 2^19·π/2 (the argument reduction is the three-part Cody–Waite one;
// larger arguments get the same deterministic reduction with growing error —
// rounded mode only takes Cos of π·q, q ∈ [0, 1]). NaN in → canonical NaN out.
//
// Build requirements (as common/detmath.h): no -ffast-math, no fma
// contraction (-ffp-contract=off; clang is switched off below), and double
// expressions evaluated in double (FLT_EVAL_METHOD == 0).

#include <cfloat>
#include <cstdint>
#include <cstring>

#if defined(__FAST_MATH__)
#error "kernels/f64_math.h needs IEEE arithmetic: do not build with -ffast-math"
#endif
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "kernels/f64_math.h needs double expressions evaluated in double (FLT_EVAL_METHOD == 0)"
#endif

#if defined(__clang__)
#pragma float_control(push)
#pragma clang fp contract(off)
#endif

namespace vt::kernels::f64 {

inline std::uint64_t Bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline double FromBits(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline std::uint32_t HighWord(double x) { return static_cast<std::uint32_t>(Bits(x) >> 32); }
inline double CanonicalNaN() { return FromBits(0x7FF8000000000000ull); }
inline bool IsNaN(double x) { return (Bits(x) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull; }
// 2^k for -1022 ≤ k ≤ 1023 (exact).
inline double Pow2(int k) { return FromBits(static_cast<std::uint64_t>(k + 1023) << 52); }

// e^x (fdlibm e_exp.c).
inline double Exp(double x) {
  if (IsNaN(x)) return CanonicalNaN();
  if (x > 7.09782712893383973096e+02) return FromBits(0x7FF0000000000000ull);  // overflow
  if (x < -7.45133219101941108420e+02) return 0.0;                              // underflow
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kInvLn2 = 1.44269504088896338700e+00;
  constexpr double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03,
                   P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06,
                   P5 = 4.13813679705723846039e-08;
  const std::uint32_t hx = HighWord(x) & 0x7fffffffu;
  const bool negative = (HighWord(x) >> 31) != 0;
  double hi = 0, lo = 0;
  int k = 0;
  if (hx > 0x3fd62e42u) {  // |x| > 0.5 ln2
    if (hx < 0x3FF0A2B2u) {  // |x| < 1.5 ln2
      hi = negative ? x + kLn2Hi : x - kLn2Hi;
      lo = negative ? -kLn2Lo : kLn2Lo;
      k = negative ? -1 : 1;
    } else {
      k = static_cast<int>(kInvLn2 * x + (negative ? -0.5 : 0.5));
      const double t = static_cast<double>(k);
      hi = x - t * kLn2Hi;  // t·kLn2Hi is exact
      lo = t * kLn2Lo;
    }
    x = hi - lo;
  } else if (hx < 0x3e300000u) {  // |x| < 2^-28
    return 1.0 + x;
  }
  const double t = x * x;
  const double c = x - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  if (k == 0) return 1.0 - ((x * c) / (c - 2.0) - x);
  const double y = 1.0 - ((lo - (x * c) / (2.0 - c)) - hi);
  if (k > 1023) return (y * 2.0) * Pow2(1023);
  if (k >= -1021) return y * Pow2(k);
  return (y * Pow2(k + 1000)) * Pow2(-1000);  // the second product rounds once into the subnormals
}

// ln x (fdlibm e_log.c). ln(±0) = −inf, ln(x < 0) = NaN, ln(+inf) = +inf.
inline double Log(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  constexpr double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                   Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                   Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                   Lg7 = 1.479819860511658591e-01;
  if (IsNaN(x)) return CanonicalNaN();
  std::uint64_t bits = Bits(x);
  if ((bits & 0x7FFFFFFFFFFFFFFFull) == 0) return FromBits(0xFFF0000000000000ull);
  if ((bits >> 63) != 0) return CanonicalNaN();
  if (bits == 0x7FF0000000000000ull) return x;
  int k = 0;
  if ((bits >> 52) == 0) {  // subnormal: scale up by 2^54
    k -= 54;
    x = x * 1.80143985094819840000e+16;
    bits = Bits(x);
  }
  std::int32_t hx = static_cast<std::int32_t>(bits >> 32);
  k += (hx >> 20) - 1023;
  hx &= 0x000fffff;
  const std::int32_t i0 = (hx + 0x95f64) & 0x100000;
  // Normalize x or x/2 into [sqrt(2)/2, sqrt(2)).
  x = FromBits((static_cast<std::uint64_t>(static_cast<std::uint32_t>(hx | (i0 ^ 0x3ff00000))) << 32) |
               (bits & 0xffffffffull));
  k += i0 >> 20;
  const double f = x - 1.0;
  const double dk = static_cast<double>(k);
  if ((0x000fffff & (2 + hx)) < 3) {  // -2^-20 ≤ f < 2^-20
    if (f == 0.0) return k == 0 ? 0.0 : dk * kLn2Hi + dk * kLn2Lo;
    const double r = f * f * (0.5 - 0.33333333333333333 * f);
    if (k == 0) return f - r;
    return dk * kLn2Hi - ((r - dk * kLn2Lo) - f);
  }
  const double s = f / (2.0 + f);
  const double z = s * s;
  std::int32_t i = hx - 0x6147a;
  const double w = z * z;
  const std::int32_t j = 0x6b851 - hx;
  const double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
  const double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
  i |= j;
  const double r = t2 + t1;
  if (i > 0) {
    const double hfsq = 0.5 * f * f;
    if (k == 0) return f - (hfsq - s * (hfsq + r));
    return dk * kLn2Hi - ((hfsq - (s * (hfsq + r) + dk * kLn2Lo)) - f);
  }
  if (k == 0) return f - s * (f - r);
  return dk * kLn2Hi - ((s * (f - r) - dk * kLn2Lo) - f);
}

// tanh x: |x| < 0.625 Cephes' rational fit x + x·x²·P(x²)/Q(x²); otherwise
// 1 − 2/(Exp(2|x|) + 1) (relative error below 2 ulp there, result ≥ 0.55);
// |x| ≥ 22: ±1.
inline double Tanh(double x) {
  if (IsNaN(x)) return CanonicalNaN();
  const double ax = FromBits(Bits(x) & 0x7FFFFFFFFFFFFFFFull);
  const bool negative = (Bits(x) >> 63) != 0;
  if (ax < 0.625) {
    if (ax < 0x1p-28) return x;  // tanh x rounds to x (keeps the sign of −0)
    const double s = x * x;
    const double p = (-9.64399179425052238628E-1 * s + -9.92877231001918586564E1) * s + -1.61468768441708447952E3;
    const double q = ((s + 1.12811678491632931402E2) * s + 2.23548839060100448583E3) * s + 4.84406305325125486048E3;
    return x + x * s * (p / q);
  }
  double y = 1.0;
  if (ax < 22.0) y = 1.0 - 2.0 / (Exp(ax + ax) + 1.0);
  return negative ? -y : y;
}

namespace detail {

// cos and sin of x + y on [-π/4, π/4] (fdlibm k_cos.c, k_sin.c with iy = 1).
inline double KernelCos(double x, double y) {
  constexpr double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                   C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                   C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
  const std::uint32_t ix = HighWord(x) & 0x7fffffffu;
  if (ix < 0x3e400000u) return 1.0;  // |x| < 2^-27
  const double z = x * x;
  const double r = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
  if (ix < 0x3FD33333u) return 1.0 - (0.5 * z - (z * r - x * y));
  const double qx = ix > 0x3fe90000u ? 0.28125 : FromBits(static_cast<std::uint64_t>(ix - 0x00200000u) << 32);
  const double hz = 0.5 * z - qx;
  const double a = 1.0 - qx;
  return a - (hz - (z * r - x * y));
}

inline double KernelSin(double x, double y) {
  constexpr double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                   S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                   S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
  const std::uint32_t ix = HighWord(x) & 0x7fffffffu;
  if (ix < 0x3e400000u) return x;
  const double z = x * x;
  const double v = z * x;
  const double r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
  return x - ((z * (0.5 * y - v * r) - y) - v * S1);
}

}  // namespace detail

// cos x. ±inf → NaN.
inline double Cos(double x) {
  if (IsNaN(x)) return CanonicalNaN();
  const double ax = FromBits(Bits(x) & 0x7FFFFFFFFFFFFFFFull);
  if (ax == FromBits(0x7FF0000000000000ull)) return CanonicalNaN();
  if (ax <= 7.85398163397448278999e-01) return detail::KernelCos(ax, 0.0);  // |x| ≤ π/4
  // ax = n·π/2 + (y0 + y1), π/2 in three parts (fdlibm e_rem_pio2.c, first round).
  constexpr double kInvPio2 = 6.36619772367581382433e-01;
  constexpr double kPio2_1 = 1.57079632673412561417e+00, kPio2_1t = 6.07710050650619224932e-11;
  const double t = ax * kInvPio2 + 0.5;
  // n = floor(t) without libm: t > 0; above 2^52 every double is an integer.
  const double fn = t < 0x1p52 ? static_cast<double>(static_cast<std::int64_t>(t)) : t;
  const std::uint64_t n = fn < 0x1p63 ? static_cast<std::uint64_t>(fn) : 0;
  const double r = ax - fn * kPio2_1;
  const double w = fn * kPio2_1t;
  const double y0 = r - w;
  const double y1 = (r - y0) - w;
  switch (n & 3u) {
    case 0:
      return detail::KernelCos(y0, y1);
    case 1:
      return -detail::KernelSin(y0, y1);
    case 2:
      return -detail::KernelCos(y0, y1);
    default:
      return detail::KernelSin(y0, y1);
  }
}

}  // namespace vt::kernels::f64

#if defined(__clang__)
#pragma float_control(pop)
#endif
