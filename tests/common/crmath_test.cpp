#include "common/crmath.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/detmath.h"
#include "common/philox.h"
#include "tests/support/test_seed.h"

#if VT_CRMATH_HAVE_MPFR
#include "common/tools/crmath_reference.h"
#endif

namespace vt::crmath {
namespace {

constexpr std::uint32_t kNaN = 0x7fc00000u;
constexpr std::uint32_t kPosInf = 0x7f800000u;
constexpr std::uint32_t kNegInf = 0xff800000u;
constexpr std::uint32_t kOne = 0x3f800000u;
constexpr std::uint32_t kMinusOne = 0xbf800000u;
constexpr std::uint32_t kNegZero = 0x80000000u;

struct Case {
  const char* fn;
  float (*f)(float);
  std::uint32_t x;
  std::uint32_t want;
};

// Values fixed by the definition (exact results, IEEE special cases, the
// conventions of common/crmath.h) and overflow/underflow boundaries (the
// boundary inputs were found with MPFR and are asserted without it).
const Case kSpecial[] = {
    // NaN in (quiet, signalling, negative, payloads) -> canonical NaN.
    {"exp", Exp, 0x7fc00001u, kNaN},
    {"exp", Exp, 0x7f800001u, kNaN},
    {"log", Log, 0xffc12345u, kNaN},
    {"sin", Sin, 0x7fffffffu, kNaN},
    {"cos", Cos, 0xff800001u, kNaN},
    {"tanh", Tanh, 0x7fa00000u, kNaN},
    {"erf", Erf, 0xffffffffu, kNaN},
    {"rsqrt", Rsqrt, 0x7fc00000u, kNaN},
    // Zeros and infinities.
    {"exp", Exp, 0u, kOne},
    {"exp", Exp, kNegZero, kOne},
    {"exp", Exp, kPosInf, kPosInf},
    {"exp", Exp, kNegInf, 0u},
    {"log", Log, 0u, kNegInf},
    {"log", Log, kNegZero, kNegInf},
    {"log", Log, kPosInf, kPosInf},
    {"log", Log, kNegInf, kNaN},
    {"log", Log, 0xbf800000u /* -1 */, kNaN},
    {"log", Log, 0x80000001u /* -least subnormal */, kNaN},
    {"log", Log, kOne, 0u},
    {"sin", Sin, 0u, 0u},
    {"sin", Sin, kNegZero, kNegZero},
    {"sin", Sin, kPosInf, kNaN},
    {"sin", Sin, kNegInf, kNaN},
    {"cos", Cos, 0u, kOne},
    {"cos", Cos, kNegZero, kOne},
    {"cos", Cos, kPosInf, kNaN},
    {"tanh", Tanh, 0u, 0u},
    {"tanh", Tanh, kNegZero, kNegZero},
    {"tanh", Tanh, kPosInf, kOne},
    {"tanh", Tanh, kNegInf, kMinusOne},
    {"erf", Erf, 0u, 0u},
    {"erf", Erf, kNegZero, kNegZero},
    {"erf", Erf, kPosInf, kOne},
    {"erf", Erf, kNegInf, kMinusOne},
    {"rsqrt", Rsqrt, 0u, kPosInf},
    {"rsqrt", Rsqrt, kNegZero, kNegInf},
    {"rsqrt", Rsqrt, kPosInf, 0u},
    {"rsqrt", Rsqrt, kNegInf, kNaN},
    {"rsqrt", Rsqrt, kMinusOne, kNaN},
    // Exact results.
    {"rsqrt", Rsqrt, 0x40800000u /* 4 */, 0x3f000000u /* 0.5 */},
    {"rsqrt", Rsqrt, 0x00000001u /* 2^-149 */, 0x64b504f3u /* RN(2^74.5) */},
    {"rsqrt", Rsqrt, 0x7f7fffffu /* FLT_MAX */, 0x1f800000u /* RN(2^-64 (1 + 2^-25)) */},
    {"log", Log, 0x00000001u /* 2^-149 */, 0xc2ce8ed0u /* RN(-149 ln 2) */},
    // Overflow and underflow of exp: e^88.7228317 < FLT_MAX rounding boundary <= e^88.7228394.
    {"exp", Exp, 0x42b17217u, 0x7f7fff84u},
    {"exp", Exp, 0x42b17218u, kPosInf},
    {"exp", Exp, 0x7f7fffffu, kPosInf},
    // The least subnormal result and the first +0 below it.
    {"exp", Exp, 0xc2cff1b4u /* -103.972076 */, 0x00000001u},
    {"exp", Exp, 0xc2cff1b5u /* -103.972084 */, 0u},
    {"exp", Exp, 0xff7fffffu, 0u},
    // Tiny arguments: the result is the argument (sin, tanh) or 1 (exp, cos).
    {"sin", Sin, 0x00000001u, 0x00000001u},
    {"tanh", Tanh, 0x80000001u, 0x80000001u},
    {"exp", Exp, 0x33000000u /* 2^-25 */, kOne},
    {"cos", Cos, 0x39000000u /* 2^-13 */, kOne},
    // Saturation.
    {"tanh", Tanh, 0x41200000u /* 10 */, kOne},
    {"erf", Erf, 0xc0800000u /* -4 */, kMinusOne},
};

TEST(CrMath, SpecialValues) {
  for (const Case& c : kSpecial) {
    EXPECT_EQ(detmath::FloatBits(c.f(detmath::BitsFloat(c.x))), c.want) << c.fn << "(0x" << std::hex << c.x << ")";
  }
}

// The FMA copy (common/crmath_fma.cpp, -mfma: fma is an instruction) and
// the baseline copy (fma is a libm call) give the same bits: on a million
// random bit patterns per function, the special values and the hard cases.
TEST(CrMath, FmaAndBaselineCopiesAgree) {
  if (!detail::SetFmaPathForTesting(1)) {
    detail::SetFmaPathForTesting(-1);
    GTEST_SKIP() << "no FMA copy on this CPU or build";
  }
  struct Fn {
    const char* name;
    float (*f)(float);
  };
  const Fn fns[] = {{"exp", Exp}, {"log", Log}, {"sin", Sin}, {"cos", Cos},
                    {"tanh", Tanh}, {"erf", Erf}, {"rsqrt", Rsqrt}};
  struct Hard {
    const char* fn;
    std::uint32_t x;
  };
  const Hard hard[] = {
#include "tests/common/crmath_hard_cases.inc"
  };
  std::vector<std::uint32_t> inputs;
  PhiloxStream s(test::TestSeed(), 0, 41);
  for (int i = 0; i < 1000000; ++i) inputs.push_back(s.NextU32());
  for (const Case& c : kSpecial) inputs.push_back(c.x);
  for (const Hard& h : hard) inputs.push_back(h.x);
  const auto run = [&](int mode, const Fn& fn) {
    detail::SetFmaPathForTesting(mode);
    std::vector<std::uint32_t> out;
    out.reserve(inputs.size());
    for (const std::uint32_t x : inputs) out.push_back(detmath::FloatBits(fn.f(detmath::BitsFloat(x))));
    return out;
  };
  for (const Fn& fn : fns) {
    const std::vector<std::uint32_t> with_fma = run(1, fn), baseline = run(0, fn);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (with_fma[i] != baseline[i] && differ++ < 3) {
        ADD_FAILURE() << fn.name << "(0x" << std::hex << inputs[i] << "): fma 0x" << with_fma[i] << ", baseline 0x"
                      << baseline[i];
      }
    }
    EXPECT_EQ(differ, 0u) << fn.name;
  }
  detail::SetFmaPathForTesting(-1);
}

// An array function is its scalar function, bit for bit, in both copies: on
// a million random bit patterns, a million values of the range the
// operators feed it, the special values and the hard cases, in place and
// not, over lengths that leave a partial block.
void ExpectArrayIsScalar(const char* fn, void (*array)(const float*, float*, std::int64_t),
                         float (*scalar)(float), float range_lo, float range_hi) {
  struct Hard {
    const char* fn;
    std::uint32_t x;
  };
  const Hard hard[] = {
#include "tests/common/crmath_hard_cases.inc"
  };
  std::vector<float> inputs;
  PhiloxStream s(test::TestSeed(), 0, 43);
  for (int i = 0; i < 1000000; ++i) inputs.push_back(detmath::BitsFloat(s.NextU32()));
  for (int i = 0; i < 1000000; ++i)
    inputs.push_back(range_lo + (range_hi - range_lo) * static_cast<float>(s.NextU32() >> 8) * 0x1p-24f);
  for (const Case& c : kSpecial) inputs.push_back(detmath::BitsFloat(c.x));
  std::size_t hard_cases = 0;
  for (const Hard& h : hard) {
    if (std::string(h.fn) != fn) continue;
    inputs.push_back(detmath::BitsFloat(h.x));
    ++hard_cases;
  }
  ASSERT_GT(hard_cases, 0u) << "the hard cases should include " << fn << " inputs that reach the slow path";
  for (const int mode : {1, 0}) {
    if (detail::SetFmaPathForTesting(mode) != (mode == 1)) continue;  // no FMA copy: the baseline only
    std::vector<float> out(inputs.size()), in_place = inputs;
    // Uneven pieces: every block boundary and a partial last block.
    for (std::size_t i0 = 0, len = 1; i0 < inputs.size(); i0 += len, len = len * 3 % 1000 + 1) {
      const std::size_t n = std::min(len, inputs.size() - i0);
      array(inputs.data() + i0, out.data() + i0, static_cast<std::int64_t>(n));
      array(in_place.data() + i0, in_place.data() + i0, static_cast<std::int64_t>(n));
    }
    std::size_t differ = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::uint32_t want = detmath::FloatBits(scalar(inputs[i]));
      if ((detmath::FloatBits(out[i]) != want || detmath::FloatBits(in_place[i]) != want) && differ++ < 3) {
        ADD_FAILURE() << fn << "(0x" << std::hex << detmath::FloatBits(inputs[i]) << "): scalar 0x" << want
                      << ", array 0x" << detmath::FloatBits(out[i]) << " (in place 0x"
                      << detmath::FloatBits(in_place[i]) << "), fma copy " << mode;
      }
    }
    EXPECT_EQ(differ, 0u) << fn << ", fma copy " << mode;
  }
  detail::SetFmaPathForTesting(-1);
}

// GELU feeds tanh values in [-10, 10]; softmax, cross-entropy and attention
// feed exp differences x − max ≤ 0, down past its underflow at -104.
TEST(CrMath, TanhArrayIsTanhBitForBit) { ExpectArrayIsScalar("tanh", TanhArray, Tanh, -10.0f, 10.0f); }
TEST(CrMath, ExpArrayIsExpBitForBit) { ExpectArrayIsScalar("exp", ExpArray, Exp, -110.0f, 95.0f); }

// Odd functions return exactly the negated result for -x, Cos the same
// result (correct rounding to nearest-even is symmetric), NaN inputs of any
// payload the canonical NaN.
TEST(CrMath, SymmetryOverRandomInputs) {
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  for (std::uint32_t i = 0; i < (1u << 16); ++i) {
    const std::uint32_t w = PhiloxWord(key, 7, 0, i) & 0x7fffffffu;
    const float x = detmath::BitsFloat(w);
    const float nx = detmath::BitsFloat(w | 0x80000000u);
    if (w > 0x7f800000u) {
      EXPECT_EQ(detmath::FloatBits(Exp(nx)), kNaN);
      EXPECT_EQ(detmath::FloatBits(Log(x)), kNaN);
      continue;
    }
    EXPECT_EQ(detmath::FloatBits(Sin(nx)), detmath::FloatBits(Sin(x)) ^ (w == 0x7f800000u ? 0u : 0x80000000u)) << std::hex << w;
    EXPECT_EQ(detmath::FloatBits(Cos(nx)), detmath::FloatBits(Cos(x))) << std::hex << w;
    EXPECT_EQ(detmath::FloatBits(Tanh(nx)), detmath::FloatBits(Tanh(x)) ^ 0x80000000u) << std::hex << w;
    EXPECT_EQ(detmath::FloatBits(Erf(nx)), detmath::FloatBits(Erf(x)) ^ 0x80000000u) << std::hex << w;
  }
}

#if VT_CRMATH_HAVE_MPFR

using reference::FnInfo;

void ExpectMatches(const FnInfo& info, float x) {
  const float want = reference::Reference(info.fn, x);
  const float got = info.crmath(x);
  ASSERT_EQ(detmath::FloatBits(got), detmath::FloatBits(want)) << info.name << "(0x" << std::hex << detmath::FloatBits(x) << " = " << x << ")";
}

// The special-value table agrees with MPFR too (where MPFR has an opinion:
// not for NaN payloads or rsqrt(-0), whose conventions are ours).
TEST(CrMath, SpecialValuesAgreeWithMpfr) {
  for (const Case& c : kSpecial) {
    const auto info = reference::FindFunction(c.fn);
    ASSERT_TRUE(info.has_value()) << c.fn;
    EXPECT_EQ(detmath::FloatBits(reference::Reference(info->fn, detmath::BitsFloat(c.x))), c.want)
        << c.fn << "(0x" << std::hex << c.x << ")";
  }
}

// Random bit patterns (the whole float line) and random values in each
// function's working range, against MPFR.
TEST(CrMath, RandomInputsMatchMpfr) {
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  constexpr std::uint32_t kPerFunction = 1u << 19;
  std::uint32_t fi = 0;
  for (const FnInfo& info : reference::AllFunctions()) {
    for (std::uint32_t i = 0; i < kPerFunction; ++i) {
      const std::uint32_t w = PhiloxWord(key, 1, fi, i);
      float x;
      if (i % 2 == 0) {
        x = detmath::BitsFloat(w);
      } else {
        // |x| < 16 with a random exponent: the range the models live in.
        const std::uint32_t exponent = 127 + 3 - (w >> 24) % 40;
        x = detmath::BitsFloat((w & 0x807fffffu) | (exponent << 23));
      }
      ExpectMatches(info, x);
    }
    ++fi;
  }
}

// Every float next to the places where the implementations switch method
// or saturate, and next to large multiples of pi/2.
TEST(CrMath, DenseNearBoundariesMatchMpfr) {
  const std::uint32_t centres[] = {
      0x42b17218u, 0xc2aeac50u, 0xc2cff1b5u, 0x33000000u, 0xb3000000u,  // exp: overflow, subnormal, zero, 1
      0x3f800000u, 0x00800000u, 0x3fb504f3u, 0x3f3504f3u,               // log: 1, least normal, sqrt 2 split
      0x3f490fdbu, 0x40490fdbu, 0x40c90fdbu, 0x4b490fdbu, 0x7f7fffffu,  // sin/cos: pi/4, pi, 2pi, big
      0x3eb33333u, 0x41119999u, 0x40800000u, 0x3f580000u,               // tanh 0.35 and 9.1, erf 4, 0.84
  };
  for (const FnInfo& info : reference::AllFunctions()) {
    for (const std::uint32_t c : centres) {
      for (std::uint32_t d = 0; d < 2048; ++d) {
        ExpectMatches(info, detmath::BitsFloat(c - 1024 + d));
        ExpectMatches(info, detmath::BitsFloat((c ^ 0x80000000u) - 1024 + d));
      }
    }
  }
}

// Inputs whose double evaluation lies within its error bound of a rounding
// boundary (found by vt-crmath-check): the slow path must engage and decide.
TEST(CrMath, HardCasesTakeTheSlowPathAndMatchMpfr) {
  struct Hard {
    const char* fn;
    std::uint32_t x;
  };
  const Hard hard[] = {
#include "tests/common/crmath_hard_cases.inc"
  };
  for (const Hard& h : hard) {
    const auto info = reference::FindFunction(h.fn);
    ASSERT_TRUE(info.has_value()) << h.fn;
    const std::uint64_t before = ThreadPathCounts().slow;
    ExpectMatches(*info, detmath::BitsFloat(h.x));
    EXPECT_EQ(ThreadPathCounts().slow, before + 1)
        << h.fn << "(0x" << std::hex << h.x << ") left the fast path";
  }
  EXPECT_EQ(ThreadPathCounts().undecided, 0u);
}

// The double-double slow paths alone (normally reached by about one input in
// 2^20) against MPFR on random inputs of each function's evaluated range.
TEST(CrMath, SlowPathAloneMatchesMpfr) {
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  struct Range {
    const char* fn;
    float lo;
    float hi;
  };
  const Range ranges[] = {{"exp", -104.0f, 89.0f},  {"log", 0.0f, 1e30f},  {"sin", -1e6f, 1e6f},
                          {"cos", -100.0f, 100.0f}, {"tanh", -9.0f, 9.0f}, {"erf", -3.99f, 3.99f}};
  std::uint32_t ri = 0;
  for (const Range& r : ranges) {
    const auto info = reference::FindFunction(r.fn);
    ASSERT_TRUE(info.has_value()) << r.fn;
    for (std::uint32_t i = 0; i < 16384; ++i) {
      const std::uint32_t w = PhiloxWord(key, 9, ri, i);
      // Uniform in [lo, hi] for half the inputs, small magnitudes for the rest.
      const float u = static_cast<float>(w >> 8) * 0x1p-24f;
      float x = r.lo + (r.hi - r.lo) * u;
      if (i % 2 == 1) x = detmath::BitsFloat((w & 0x807fffffu) | ((100u + w % 30u) << 23));  // |x| in [2^-27, 2^3)
      if (r.fn == std::string("log")) x = std::fabs(x) + 1e-30f;
      const auto slow = detail::SlowPathOnly(info->crmath, x);
      ASSERT_TRUE(slow.has_value()) << r.fn << "(0x" << std::hex << detmath::FloatBits(x) << ") undecided";
      ASSERT_EQ(detmath::FloatBits(*slow), detmath::FloatBits(reference::Reference(info->fn, x)))
          << r.fn << "(0x" << std::hex << detmath::FloatBits(x) << " = " << x << ") slow path";
    }
    ++ri;
  }
}

#else

TEST(CrMath, MpfrComparisons) {
  GTEST_SKIP() << "MPFR headers were not found at configure time (install libmpfr-dev): "
                  "the comparisons against MPFR are not built";
}

#endif

}  // namespace
}  // namespace vt::crmath
