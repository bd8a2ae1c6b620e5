#pragma once
// Deterministic float32 math: Exp, Log, Sin, Cos, Tanh, Erf, Rsqrt.
//
// Why: libm (and CUDA's libdevice) differ between vendors and versions in the
// last bit, so repops kernels may not call them (docs/kernels.md, "Modes").
// These functions use only IEEE-754 binary32 +, -, *, /, sqrt, an explicit fma
// where written, and integer/bit operations, in a fixed order. The same source
// compiles for the CPU and (VT_HD) for CUDA, so results are bit-identical on
// every platform that evaluates float expressions in float.
//
// Build requirements: no -ffast-math; -ffp-contract=off on the host and
// --fmad=false under nvcc (no fma contraction); no flush-to-zero (-ftz=false,
// no --use_fast_math); FLT_EVAL_METHOD == 0 (x86-64 SSE, AArch64, CUDA; not x87).
//
// Exp, Tanh and the scaling by 2^k compute every case and keep one by a
// select on the bits (detail::Select), with no branch, so that a loop over
// many values vectorises (kernels/ops/repops_math.h) with the bits of a call
// per value; checked over all 2^32 inputs when the branches were removed.
//
// Results for NaN input and for invalid input are the canonical quiet NaN
// 0x7fc00000 (NaN payloads differ between CPUs and GPUs, so none are passed on).
//
// Algorithms (polynomial coefficients are the published float minimax fits of
// Cephes (S. Moshier) and fdlibm (Sun, via musl's erff.c)):
//   Exp   k = round(x*log2 e); r = (x - k*C1) - k*C2 with C1 + C2 = ln 2 split
//         so k*C1 is exact (Cody-Waite); e^r = 1 + r + r^2*P5(r) (Cephes expf);
//         result scaled by 2^k with at most one rounding, also into subnormals.
//   Log   x = 2^e * m, m in [sqrt(1/2), sqrt 2); f = m - 1;
//         log(1+f) = f - f^2/2 + f^3*P8(f) (Cephes logf); + e*ln 2 in two parts.
//   Sin/Cos  |x| <= pi/4: odd/even polynomials (Cephes sinf/cosf); sin x = x
//         for |x| < 2^-12, where that is the correctly rounded result.
//         Otherwise Payne-Hanek reduction done exactly in integers: |x|*2/pi
//         modulo 4 from a 96-bit window of the bits of 2/pi, keeping 62
//         fraction bits; r = fraction*pi/2 computed in float-float with one fma.
//         Accurate over the whole float range, not only near zero.
//   Tanh  |x| < 2^-12: x; |x| < 0.625: x + x^3*P4(x^2) (Cephes tanhf);
//         else 1 - 2/(Exp(2|x|)+1); |x| > 10: +-1.
//   Erf   fdlibm erff: rational fits on [0, 0.84375), [0.84375, 1.25) around
//         erf(1); for [1.25, 6): 1 - exp(-z^2 - 0.5625)*exp((z-x)(z+x) + R/S)/x
//         with z = x rounded to 11 bits so z*z is exact; |x| >= 6: +-1.
//   Rsqrt 1/sqrt(x): two correctly rounded IEEE operations.
// Accuracy against double-precision libm, over every third float (all finite
// inputs, both signs): max 0.98 ulp Exp, 0.82 Log, 1.58 Sin, 1.58 Cos,
// 1.33 Tanh, 0.97 Erf, 1.49 Rsqrt. tests/common/detmath_test asserts 2 ulp
// (3 for Tanh, Erf) on random and edge inputs and pins golden output hashes.

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/hd.h"

#if defined(__FAST_MATH__)
#error "common/detmath.h needs IEEE arithmetic: do not build with -ffast-math"
#endif
#if !defined(__CUDA_ARCH__) && defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "common/detmath.h needs float expressions evaluated in float (FLT_EVAL_METHOD == 0)"
#endif

// The operation order must not depend on the includer's flags: clang (whose
// default is -ffp-contract=on) would fuse a*b+c here. GCC's ISO mode and our
// build already use -ffp-contract=off; nvcc needs --fmad=false (see hd.h).
#if defined(__clang__) && !defined(__CUDA__)
#pragma float_control(push)
#pragma clang fp contract(off)
#endif

namespace vt::detmath {

// ---- bit access and the primitive IEEE operations ---------------------------

VT_HD inline std::uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

VT_HD inline float BitsFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

VT_HD inline float Sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

VT_HD inline float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

inline constexpr std::uint32_t kCanonicalNaNBits = 0x7fc00000u;

VT_HD inline float CanonicalNaN() { return BitsFloat(kCanonicalNaNBits); }
VT_HD inline float Infinity() { return BitsFloat(0x7f800000u); }
VT_HD inline bool IsNaN(float x) { return (FloatBits(x) & 0x7fffffffu) > 0x7f800000u; }

namespace detail {

// c ? a : b on the bits: a select the compiler keeps branch-free, so that a
// loop over many values vectorises (every case computed, one kept).
VT_HD inline float Select(bool c, float a, float b) {
  const std::uint32_t keep_a = 0u - static_cast<std::uint32_t>(c);
  return BitsFloat((FloatBits(a) & keep_a) | (FloatBits(b) & ~keep_a));
}

// y * 2^k for y in about [0.5, 2] and k in [-152, 128], rounded once. The
// three cases are computed side by side and one is kept (no branch, so that
// a loop over many values vectorises; the lanes not kept may hold anything).
VT_HD inline float ScaleByPow2(float y, int k) {
  const std::uint32_t uk = static_cast<std::uint32_t>(k);
  // k > 127: 2^127, then 2^(k-127).
  const float above = (y * BitsFloat(0x7f000000u)) * BitsFloat(uk << 23);
  // k < -126: the first step is exact (stays normal); the second rounds into
  // the subnormals.
  const float below = (y * BitsFloat((uk + 64u + 127u) << 23)) * BitsFloat(0x1f800000u /* 2^-64 */);
  const float normal = y * BitsFloat((uk + 127u) << 23);
  return Select(k > 127, above, Select(k < -126, below, normal));
}

// 32 bits of 2/pi: word i covers bits 32i+1 .. 32i+32 after the binary point
// (384 bits in all, checked against MPFR's pi).
VT_HD inline std::uint32_t TwoOverPiWord(int i) {
  switch (i) {
    case 0:
      return 0xA2F9836Eu;
    case 1:
      return 0x4E441529u;
    case 2:
      return 0xFC2757D1u;
    case 3:
      return 0xF534DDC0u;
    case 4:
      return 0xDB629599u;
    case 5:
      return 0x3C439041u;
    case 6:
      return 0xFE5163ABu;
    case 7:
      return 0xDEBBC561u;
    case 8:  // words 8..11 serve crmath's 192-bit window; detmath reads words <= 6
      return 0xB7246E3Au;
    case 9:
      return 0x424DD2E0u;
    case 10:
      return 0x06492EEAu;
    case 11:
      return 0x09D1921Cu;
    default:
      return 0u;  // before the binary point (i < 0): 2/pi < 1
  }
}

// Bits p+1 .. p+32 of 2/pi (bit 1 is the first after the point).
VT_HD inline std::uint32_t TwoOverPiBits(int p) {
  const int k = p >= 0 ? p / 32 : -((31 - p) / 32);  // floor(p / 32)
  const int sh = p - 32 * k;
  const std::uint32_t hi = TwoOverPiWord(k);
  if (sh == 0) return hi;
  return (hi << sh) | (TwoOverPiWord(k + 1) >> (32 - sh));
}

struct Reduced {
  float r;          // in [-pi/4, pi/4]
  std::uint32_t q;  // quadrant: ax = (4n + q) * pi/2 + r
};

// Payne-Hanek reduction of a finite ax >= pi/4.
VT_HD inline Reduced ReduceQuarterTurns(float ax) {
  const std::uint32_t bits = FloatBits(ax);
  const std::uint64_t m = (bits & 0x7fffffu) | 0x800000u;  // ax = m * 2^(E-150)
  // Window of 2/pi bits s+1 .. s+96 with s = (E-150) - 2: bits before it add
  // multiples of 4 quarter turns, bits after it less than 2^-70 of one.
  const int s = static_cast<int>(bits >> 23) - 152;
  const std::uint64_t w2 = TwoOverPiBits(s), w1 = TwoOverPiBits(s + 32), w0 = TwoOverPiBits(s + 64);
  // Low 96 bits of m * (w2:w1:w0); the binary point lies 94 bits up.
  const std::uint64_t p0 = m * w0;
  const std::uint64_t p1 = m * w1 + (p0 >> 32);
  const std::uint32_t lo2 = static_cast<std::uint32_t>(m * w2 + (p1 >> 32));
  const std::uint32_t lo1 = static_cast<std::uint32_t>(p1);
  const std::uint32_t lo0 = static_cast<std::uint32_t>(p0);
  std::uint32_t q = lo2 >> 30;
  // Fraction of a quarter turn in 2^-64 units; a fraction >= 1/2 becomes a
  // negative one from the next quadrant (two's complement does exactly that).
  const std::uint64_t f = (static_cast<std::uint64_t>(lo2 & 0x3fffffffu) << 34) |
                          (static_cast<std::uint64_t>(lo1) << 2) | (lo0 >> 30);
  q = (q + static_cast<std::uint32_t>(f >> 63)) & 3u;
  const std::int64_t v = static_cast<std::int64_t>(f) >> 1;  // 2^-63 units, |v| <= 2^62
  // v = a + d exactly, then r = (a + d) * 2^-63 * pi/2 in float-float.
  const float a = static_cast<float>(v);
  const float d = static_cast<float>(v - static_cast<std::int64_t>(a));
  const float kTwoPowMinus63 = BitsFloat(0x20000000u);
  const float kPiOver2Hi = BitsFloat(0x3fc90fdbu);  // 1.57079637
  const float kPiOver2Lo = BitsFloat(0xb33bbd2eu);  // pi/2 - kPiOver2Hi = -4.37113883e-8
  const float hi = a * kTwoPowMinus63;
  const float lo = d * kTwoPowMinus63;
  const float prod = hi * kPiOver2Hi;
  const float err = Fma(hi, kPiOver2Hi, -prod);
  return {prod + (err + (hi * kPiOver2Lo + lo * kPiOver2Hi)), q};
}

// sin and cos on [-pi/4, pi/4] (Cephes sinf.c / cosf.c coefficients).
VT_HD inline float SinPoly(float x) {
  const float z = x * x;
  return (((-1.9515295891E-4f * z + 8.3321608736E-3f) * z - 1.6666654611E-1f) * z) * x + x;
}
VT_HD inline float CosPoly(float x) {
  const float z = x * x;
  float y = ((2.443315711809948E-5f * z - 1.388731625493765E-3f) * z + 4.166664568298827E-2f) * z * z;
  y = y - 0.5f * z;
  return y + 1.0f;
}

}  // namespace detail

// ---- the functions ------------------------------------------------------------

// Exp, Tanh: every case computed and one kept, no branch (as ScaleByPow2).
VT_HD inline float Exp(float x) {
  const float xr =
      detail::Select((x >= -104.0f) & (x <= 89.0f), x, 0.0f);  // in range (NaN: 0): k fits an int
  const float t = xr * 1.44269504088896341f;                   // log2(e)
  const float below = t - 0.5f, above = t + 0.5f;
  const int k = static_cast<int>(detail::Select(t < 0.0f, below, above));  // round half away from 0
  const float kf = static_cast<float>(k);
  float r = xr - kf * 0.693359375f;  // exact: the constant has 9 significant bits
  r = r - kf * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  const float y = (p * z + r) + 1.0f;
  const float scaled = detail::ScaleByPow2(y, k);
  return detail::Select(IsNaN(x), CanonicalNaN(),
                        detail::Select(x > 89.0f, Infinity(), detail::Select(x < -104.0f, 0.0f, scaled)));
}

VT_HD inline float Log(float x) {
  std::uint32_t bits = FloatBits(x);
  if (IsNaN(x) || (bits >> 31) != 0) {
    if ((bits & 0x7fffffffu) == 0) return -Infinity();  // log(-0) = -inf
    return CanonicalNaN();
  }
  if (bits == 0) return -Infinity();
  if (bits == 0x7f800000u) return x;
  int e = 0;
  if (bits < 0x00800000u) {            // subnormal: normalise exactly
    bits = FloatBits(x * 8388608.0f);  // 2^23
    e = -23;
  }
  e += static_cast<int>(bits >> 23) - 126;
  float m = BitsFloat((bits & 0x007fffffu) | 0x3f000000u);  // in [0.5, 1)
  if (m < 0.707106781186547524f) {
    e -= 1;
    m = m + m - 1.0f;
  } else {
    m = m - 1.0f;
  }
  const float z = m * m;
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
  y = y * m * z;
  const float ef = static_cast<float>(e);
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  const float r = m + y;
  return r + ef * 0.693359375f;
}

VT_HD inline float Sin(float x) {
  const std::uint32_t abits = FloatBits(x) & 0x7fffffffu;
  if (abits >= 0x7f800000u) return CanonicalNaN();  // NaN, +-inf
  if (abits < 0x39800000u) return x;  // |x| < 2^-12: sin x rounds to x (and keeps the sign of -0)
  if (abits <= 0x3f490fdbu) return detail::SinPoly(x);  // |x| <= pi/4
  const detail::Reduced red = detail::ReduceQuarterTurns(BitsFloat(abits));
  float y = (red.q & 1u) ? detail::CosPoly(red.r) : detail::SinPoly(red.r);
  if (red.q & 2u) y = -y;
  return (FloatBits(x) >> 31) ? -y : y;
}

VT_HD inline float Cos(float x) {
  const std::uint32_t abits = FloatBits(x) & 0x7fffffffu;
  if (abits >= 0x7f800000u) return CanonicalNaN();
  if (abits <= 0x3f490fdbu) return detail::CosPoly(x);
  const detail::Reduced red = detail::ReduceQuarterTurns(BitsFloat(abits));
  switch (red.q) {
    case 0:
      return detail::CosPoly(red.r);
    case 1:
      return -detail::SinPoly(red.r);
    case 2:
      return -detail::CosPoly(red.r);
    default:
      return detail::SinPoly(red.r);
  }
}

VT_HD inline float Tanh(float x) {
  const float ax = BitsFloat(FloatBits(x) & 0x7fffffffu);
  const float z = x * x;
  float p = -5.70498872745E-3f;
  p = p * z + 2.06390887954E-2f;
  p = p * z - 5.37397155531E-2f;
  p = p * z + 1.33314422036E-1f;
  p = p * z - 3.33332819422E-1f;
  const float near0 = p * z * x + x;  // ax < 0.625
  const float from_exp = 1.0f - 2.0f / (Exp(ax + ax) + 1.0f);
  const float y = detail::Select(ax <= 10.0f, from_exp, 1.0f);               // ax >= 0.625
  const float far = BitsFloat(FloatBits(y) | (FloatBits(x) & 0x80000000u));  // y >= 0: x's sign
  // ax < 2^-12: tanh x rounds to x (and keeps the sign of -0).
  return detail::Select(IsNaN(x), CanonicalNaN(),
                        detail::Select(ax < 0x1p-12f, x, detail::Select(ax < 0.625f, near0, far)));
}

VT_HD inline float Erf(float x) {
  // Coefficients: fdlibm s_erff.c (Sun Microsystems, freely redistributable).
  const std::uint32_t bits = FloatBits(x);
  const std::uint32_t ix = bits & 0x7fffffffu;
  const bool negative = (bits >> 31) != 0;
  if (ix > 0x7f800000u) return CanonicalNaN();
  if (ix < 0x3f580000u) {                                                      // |x| < 0.84375
    if (ix < 0x31800000u) return 0.125f * (8.0f * x + 1.0270333290e+00f * x);  // |x| < 2^-28
    const float z = x * x;
    const float r = 1.2837916613e-01f +
                    z * (-3.2504209876e-01f +
                         z * (-2.8481749818e-02f + z * (-5.7702702470e-03f + z * -2.3763017452e-05f)));
    const float s =
        1.0f + z * (3.9791721106e-01f +
                    z * (6.5022252500e-02f +
                         z * (5.0813062117e-03f + z * (1.3249473704e-04f + z * -3.9602282413e-06f))));
    return x + x * (r / s);
  }
  const float ax = BitsFloat(ix);
  float y;
  if (ix < 0x3fa00000u) {  // |x| < 1.25: erf(1) + P(s)/Q(s), s = |x| - 1
    const float s = ax - 1.0f;
    const float p =
        -2.3621185683e-03f +
        s * (4.1485610604e-01f +
             s * (-3.7220788002e-01f +
                  s * (3.1834661961e-01f +
                       s * (-1.1089469492e-01f + s * (3.5478305072e-02f + s * -2.1663755178e-03f)))));
    const float q =
        1.0f + s * (1.0642088205e-01f +
                    s * (5.4039794207e-01f +
                         s * (7.1828655899e-02f +
                              s * (1.2617121637e-01f + s * (1.3637083583e-02f + s * 1.1984500103e-02f)))));
    y = 8.4506291151e-01f + p / q;
  } else if (ix < 0x40c00000u) {  // |x| < 6: 1 - erfc(|x|)
    const float s = 1.0f / (ax * ax);
    float r, t;
    if (ix < 0x4036db6du) {  // |x| < 1/0.35
      r = -9.8649440333e-03f +
          s * (-6.9385856390e-01f +
               s * (-1.0558626175e+01f +
                    s * (-6.2375331879e+01f +
                         s * (-1.6239666748e+02f +
                              s * (-1.8460508728e+02f +
                                   s * (-8.1287437439e+01f + s * -9.8143291473e+00f))))));
      t = 1.0f + s * (1.9651271820e+01f +
                      s * (1.3765776062e+02f +
                           s * (4.3456588745e+02f +
                                s * (6.4538726807e+02f +
                                     s * (4.2900814819e+02f +
                                          s * (1.0863500214e+02f +
                                               s * (6.5702495575e+00f + s * -6.0424413532e-02f)))))));
    } else {
      r = -9.8649431020e-03f +
          s * (-7.9928326607e-01f +
               s * (-1.7757955551e+01f +
                    s * (-1.6063638306e+02f +
                         s * (-6.3756646729e+02f + s * (-1.0250950928e+03f + s * -4.8351919556e+02f)))));
      t = 1.0f +
          s * (3.0338060379e+01f +
               s * (3.2579251099e+02f +
                    s * (1.5367296143e+03f +
                         s * (3.1998581543e+03f +
                              s * (2.5530502930e+03f + s * (4.7452853394e+02f + s * -2.2440952301e+01f))))));
    }
    const float z = BitsFloat(ix & 0xffffe000u);  // 11 significant bits: z*z is exact
    const float erfc = Exp(-z * z - 0.5625f) * Exp((z - ax) * (z + ax) + r / t) / ax;
    y = 1.0f - erfc;
  } else {
    y = 1.0f;
  }
  return negative ? -y : y;
}

VT_HD inline float Rsqrt(float x) {
  if (IsNaN(x) || x < 0.0f) return CanonicalNaN();
  return 1.0f / Sqrt(x);
}

}  // namespace vt::detmath

#if defined(__clang__) && !defined(__CUDA__)
#pragma float_control(pop)
#endif
