#include "common/detmath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "common/philox.h"
#include "tests/support/bit_hash.h"
#include "tests/support/test_seed.h"

namespace vt::detmath {
namespace {

constexpr double kFltMax = 3.4028234663852886e38;

// |got - ref| in units of the float ulp at ref (ref from double-precision libm,
// whose own error is ~2^-29 float ulps). Returns +inf for a wrong special value.
double UlpError(float got, double ref) {
  if (std::isnan(ref)) return std::isnan(got) ? 0.0 : HUGE_VAL;
  const float ref_rounded = static_cast<float>(ref);
  if (std::isinf(ref_rounded)) {
    if (got == ref_rounded) return 0.0;
    // Just below the overflow threshold a finite FLT_MAX is within an ulp.
    return std::fabs(got) == static_cast<float>(kFltMax) ? 1.0 : HUGE_VAL;
  }
  if (std::isinf(got) || std::isnan(got)) return HUGE_VAL;
  int e;
  std::frexp(ref, &e);  // |ref| in [2^(e-1), 2^e)
  const int ulp_exp = std::max(e - 24, -149);
  return std::fabs(static_cast<double>(got) - ref) / std::ldexp(1.0, ulp_exp);
}

struct Func {
  const char* name;
  float (*f)(float);
  double (*ref)(double);
  double bound_ulp;
  float lo, hi;  // main range for uniform samples
};

const Func kFuncs[] = {
    {"Exp", Exp, [](double x) { return std::exp(x); }, 2.0, -104.0f, 89.0f},
    {"Log", Log, [](double x) { return std::log(x); }, 2.0, 0.0f, 4.0f},
    {"Sin", Sin, [](double x) { return std::sin(x); }, 2.0, -30.0f, 30.0f},
    {"Cos", Cos, [](double x) { return std::cos(x); }, 2.0, -30.0f, 30.0f},
    {"Tanh", Tanh, [](double x) { return std::tanh(x); }, 3.0, -10.0f, 10.0f},
    {"Erf", Erf, [](double x) { return std::erf(x); }, 3.0, -6.0f, 6.0f},
    {"Rsqrt", Rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 2.0, 0.0f, 100.0f},
};

float Next(float x, int steps) {
  std::uint32_t b = FloatBits(x);
  return BitsFloat(static_cast<std::uint32_t>(static_cast<std::int64_t>(b) + steps));
}

// Inputs at every branch point and special of the implementations, with neighbours.
std::vector<float> EdgeInputs() {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> base = {0.0f,
                             1.0f,
                             2.0f,
                             0.5f,
                             0x1p-149f,
                             0x1p-126f,
                             0x1.fffffcp-127f,
                             0x1p-28f,
                             1e-20f,
                             std::numeric_limits<float>::max(),
                             inf,
                             88.7228317f,
                             88.7228394f,
                             89.0f,
                             87.33654f,
                             103.972076f,
                             103.972084f,
                             104.0f,
                             0.785398185f /* pi/4 */,
                             1.57079637f,
                             3.14159274f,
                             4.71238899f,
                             6.28318548f,
                             0.625f,
                             10.0f,
                             9.01091290f,  // tanh branches
                             0.84375f,
                             1.25f,
                             2.857143f,
                             6.0f,
                             3.9192f,  // erf branches
                             0.707106781f,
                             1.41421354f,
                             8388608.0f,
                             1e10f,
                             1e30f};
  std::vector<float> out;
  for (float b : base)
    for (int d = -2; d <= 2; ++d)
      for (float sign : {1.0f, -1.0f}) {
        const float x = sign * Next(b, d);
        if (!std::isnan(x)) out.push_back(x);
      }
  // Floats nearest to multiples of pi/2: the hard cases of argument reduction.
  for (int k = 1; k <= 200000; k += (k < 1000 ? 1 : 97))
    out.push_back(static_cast<float>(k * 1.5707963267948966));
  out.push_back(std::numeric_limits<float>::quiet_NaN());
  return out;
}

TEST(DetMath, AccuracyAgainstLibm) {
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  const std::vector<float> edges = EdgeInputs();
  constexpr std::uint64_t kUniform = 500000, kBits = 300000;
  for (std::size_t fi = 0; fi < std::size(kFuncs); ++fi) {
    const Func& f = kFuncs[fi];
    double worst = 0.0;
    float worst_x = 0.0f;
    auto check = [&](float x) {
      const double err = UlpError(f.f(x), f.ref(static_cast<double>(x)));
      if (err > worst) {
        worst = err;
        worst_x = x;
      }
    };
    for (float x : edges) check(x);
    for (std::uint64_t i = 0; i < kUniform; ++i) {
      const float u =
          static_cast<float>(PhiloxWord(key, 1, static_cast<std::uint32_t>(fi), i) >> 8) * 0x1p-24f;
      check(f.lo + (f.hi - f.lo) * u);
    }
    for (std::uint64_t i = 0; i < kBits; ++i) {  // any finite float, every binade equally often
      const float x = BitsFloat(PhiloxWord(key, 2, static_cast<std::uint32_t>(fi), i));
      if (!std::isnan(x)) check(x);
    }
    std::printf("[detmath] %-5s max error %.3f ulp (bound %.0f) at x=%a\n", f.name, worst, f.bound_ulp,
                static_cast<double>(worst_x));
    EXPECT_LE(worst, f.bound_ulp) << f.name << " at x=" << worst_x;
  }
}

// Every 8th float of the binades where the algorithms switch branches.
TEST(DetMath, DenseNearBranches) {
  struct Range {
    const Func* f;
    float lo, hi;
  };
  const Range ranges[] = {{&kFuncs[0], 0.5f, 1.0f},          {&kFuncs[0], 86.0f, 104.0f},
                          {&kFuncs[1], 0.5f, 2.0f},          {&kFuncs[2], 0.5f, 1.0f},
                          {&kFuncs[3], 0.5f, 1.0f},          {&kFuncs[4], 0.5f, 1.0f},
                          {&kFuncs[5], 0.75f, 1.5f},         {&kFuncs[5], 2.5f, 3.0f},
                          {&kFuncs[1], 0x1p-149f, 0x1p-126f}};  // Log of subnormals
  for (const Range& r : ranges) {
    ASSERT_LT(FloatBits(r.lo), FloatBits(r.hi));  // positive ranges; -x is checked alongside x
    double worst = 0.0;
    for (std::uint32_t b = FloatBits(r.lo); b <= FloatBits(r.hi); b += 8) {  // every 8th float
      const float x = BitsFloat(b);
      const float xs[2] = {x, -x};
      for (float y : xs) worst = std::max(worst, UlpError(r.f->f(y), r.f->ref(static_cast<double>(y))));
    }
    EXPECT_LE(worst, r.f->bound_ulp) << r.f->name << " on [" << r.lo << ", " << r.hi << "]";
  }
}

TEST(DetMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float neg_nan = BitsFloat(0xffc00001u);  // a NaN with sign and payload
  auto bits = [](float x) { return FloatBits(x); };
  for (auto fn : {Exp, Log, Sin, Cos, Tanh, Erf, Rsqrt}) {
    EXPECT_EQ(bits(fn(nan)), kCanonicalNaNBits);
    EXPECT_EQ(bits(fn(neg_nan)), kCanonicalNaNBits);
  }
  EXPECT_EQ(Exp(inf), inf);
  EXPECT_EQ(bits(Exp(-inf)), bits(0.0f));
  EXPECT_EQ(Exp(0.0f), 1.0f);
  EXPECT_EQ(Exp(-0.0f), 1.0f);
  EXPECT_EQ(Exp(88.7228394f), inf);  // first float whose exp overflows
  EXPECT_LT(Exp(88.7228317f), inf);
  EXPECT_EQ(Exp(-103.972084f), 0.0f);       // rounds to zero
  EXPECT_EQ(Exp(-103.972076f), 0x1p-149f);  // rounds to the smallest subnormal
  EXPECT_EQ(Log(0.0f), -inf);
  EXPECT_EQ(Log(-0.0f), -inf);
  EXPECT_EQ(bits(Log(-1.0f)), kCanonicalNaNBits);
  EXPECT_EQ(bits(Log(-inf)), kCanonicalNaNBits);
  EXPECT_EQ(Log(inf), inf);
  EXPECT_EQ(bits(Log(1.0f)), bits(0.0f));
  EXPECT_NEAR(Log(0x1p-149f), -103.27893f, 1e-5f);
  EXPECT_EQ(bits(Sin(0.0f)), bits(0.0f));
  EXPECT_EQ(bits(Sin(-0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(Sin(-0x1p-149f)), bits(-0x1p-149f));
  EXPECT_EQ(Cos(0.0f), 1.0f);
  EXPECT_EQ(Cos(-0.0f), 1.0f);
  for (float x : {inf, -inf}) {
    EXPECT_EQ(bits(Sin(x)), kCanonicalNaNBits);
    EXPECT_EQ(bits(Cos(x)), kCanonicalNaNBits);
  }
  EXPECT_EQ(Tanh(inf), 1.0f);
  EXPECT_EQ(Tanh(-inf), -1.0f);
  EXPECT_EQ(bits(Tanh(-0.0f)), bits(-0.0f));
  EXPECT_EQ(Erf(inf), 1.0f);
  EXPECT_EQ(Erf(-inf), -1.0f);
  EXPECT_EQ(bits(Erf(-0.0f)), bits(-0.0f));
  EXPECT_EQ(bits(Erf(-0x1p-149f)), bits(-0x1p-149f));  // erf(x) ~ 1.128 x rounds back for the smallest
  EXPECT_EQ(Rsqrt(0.0f), inf);
  EXPECT_EQ(Rsqrt(-0.0f), -inf);
  EXPECT_EQ(bits(Rsqrt(inf)), bits(0.0f));
  EXPECT_EQ(bits(Rsqrt(-1.0f)), kCanonicalNaNBits);
  EXPECT_EQ(Rsqrt(4.0f), 0.5f);
}

TEST(DetMath, Symmetries) {
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  for (std::uint64_t i = 0; i < 100000; ++i) {
    const float x = BitsFloat(PhiloxWord(key, 3, 0, i) & 0x7fffffffu);
    if (std::isnan(x)) continue;
    ASSERT_EQ(FloatBits(Sin(-x)), FloatBits(-Sin(x))) << x;
    ASSERT_EQ(FloatBits(Cos(-x)), FloatBits(Cos(x))) << x;
    ASSERT_EQ(FloatBits(Tanh(-x)), FloatBits(-Tanh(x))) << x;
    ASSERT_EQ(FloatBits(Erf(-x)), FloatBits(-Erf(x))) << x;
  }
}

// Golden hashes of the exact output bits over a fixed input set. They must be
// equal under every compiler (g++ and clang++ are checked) and on the GPU; a
// change means the functions changed and every repops result with them.
TEST(DetMath, GoldenBitHashes) {
  std::vector<float> inputs = EdgeInputs();
  const PhiloxKey key = PhiloxKeyFromSeed(0x6465746d617468ull);  // "detmath"
  for (std::uint64_t i = 0; i < (1u << 16); ++i) {
    const std::uint32_t w = PhiloxWord(key, 0, 0, i);
    const float bits_input = BitsFloat(w);
    inputs.push_back(std::isnan(bits_input) ? 0.0f : bits_input);
    inputs.push_back((static_cast<float>(w >> 8) * 0x1p-24f - 0.5f) * 40.0f);  // [-20, 20)
  }
  struct Golden {
    float (*f)(float);
    const char* name;
    std::uint64_t hash;
  };
  const Golden goldens[] = {
      {Exp, "Exp", 0x12fd57aa95471961ull},     {Log, "Log", 0x64011ab3d24973d7ull},
      {Sin, "Sin", 0xd5a5c0726f721d87ull},     {Cos, "Cos", 0xa7b37e9e04dd63cbull},
      {Tanh, "Tanh", 0x322b87b94a5466d5ull},   {Erf, "Erf", 0x5c560c9b3c86db09ull},
      {Rsqrt, "Rsqrt", 0x02ce4ea0c2796c7cull},
  };
  for (const Golden& g : goldens) {
    test::BitHasher h;
    for (float x : inputs) h.AddFloat(g.f(x));
    std::printf("[detmath] golden %-5s 0x%016llx over %zu inputs\n", g.name,
                static_cast<unsigned long long>(h.value()), inputs.size());
    EXPECT_EQ(h.value(), g.hash) << g.name;
  }
}

}  // namespace
}  // namespace vt::detmath
