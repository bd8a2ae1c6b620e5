// Repops mode's array transcendentals (kernels/ops/repops_math.h) give the
// bits of one detmath call per element: over a strided sweep of all 2^32
// bit patterns, the edges of every case of Exp, Tanh and the scaling by 2^k
// (their neighbours one ulp either side), several shifts m, lengths that are
// not a multiple of any vector width, and in place. (The clone tested is the
// one this CPU runs; tests/common/detmath_test pins the scalar values.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/detmath.h"
#include "kernels/ops/repops_math.h"

namespace vt::kernels::repopsmath {
namespace {

std::uint32_t Bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Every 251st bit pattern, the case edges and their float neighbours.
std::vector<float> Inputs() {
  std::vector<float> x;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 251)
    x.push_back(FromBits(static_cast<std::uint32_t>(u)));
  const float edges[] = {0.0f,
                         89.0f,
                         104.0f,
                         88.72f,
                         87.33f,
                         0x1p-12f,
                         0.625f,
                         10.0f,
                         0.3465736f,
                         1.0f,
                         0.5f,
                         20.0f,
                         44.0f,
                         88.0f,
                         103.97f,
                         0x1p-149f,
                         std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN()};
  for (const float e : edges) {
    for (const float s : {e, -e}) {
      x.push_back(s);
      x.push_back(std::nextafter(s, std::numeric_limits<float>::infinity()));
      x.push_back(std::nextafter(s, -std::numeric_limits<float>::infinity()));
    }
  }
  // x·log2(e) at the rounding boundaries of k (k ± 0.5) and where the
  // scaling changes case (k = 127, 128, -126, -127, -150).
  for (int k = -151; k <= 129; ++k) {
    for (const double h : {-0.5, 0.5}) {
      const float b = static_cast<float>((k + h) * 0.6931471805599453);
      x.push_back(b);
      x.push_back(std::nextafter(b, 1e30f));
      x.push_back(std::nextafter(b, -1e30f));
    }
  }
  return x;
}

TEST(RepopsMath, ExpShiftedIsDetmathExpPerElement) {
  const std::vector<float> x = Inputs();
  std::vector<float> out(x.size());
  for (const float m : {0.0f, 1.5f, -3.25f, 80.0f, -0.0f}) {
    ExpShifted(x.data(), m, out.data(), static_cast<std::int64_t>(x.size()));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float want = detmath::Exp(x[i] - m);
      if (Bits(out[i]) != Bits(want) && bad++ < 5) {
        ADD_FAILURE() << "exp(" << x[i] << " - " << m << "): array " << out[i] << " scalar " << want;
      }
    }
    EXPECT_EQ(bad, 0u) << "m = " << m;
  }
}

TEST(RepopsMath, TanhArrayIsDetmathTanhPerElement) {
  const std::vector<float> x = Inputs();
  std::vector<float> out(x.size());
  TanhArray(x.data(), out.data(), static_cast<std::int64_t>(x.size()));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float want = detmath::Tanh(x[i]);
    if (Bits(out[i]) != Bits(want) && bad++ < 5) {
      ADD_FAILURE() << "tanh(" << x[i] << "): array " << out[i] << " scalar " << want;
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(RepopsMath, ShortLengthsAndInPlace) {
  const std::vector<float> all = Inputs();
  for (std::int64_t n : {0, 1, 7, 15, 16, 17, 33, 63}) {
    std::vector<float> x(all.end() - 64 - n, all.end() - 64), e(x), t(x);  // edge values
    ExpShifted(e.data(), 0.75f, e.data(), n);
    TanhArray(t.data(), t.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(Bits(e[i]), Bits(detmath::Exp(x[i] - 0.75f))) << "n " << n << " i " << i;
      EXPECT_EQ(Bits(t[i]), Bits(detmath::Tanh(x[i]))) << "n " << n << " i " << i;
    }
  }
}

// The properties the branch-free form must keep: the special values.
TEST(RepopsMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float x[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 89.5f, -105.0f, -0.0f, 0.0f};
  float e[7], t[7];
  ExpShifted(x, 0.0f, e, 7);
  TanhArray(x, t, 7);
  EXPECT_EQ(Bits(e[0]), detmath::kCanonicalNaNBits);
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(Bits(e[2]), 0u);
  EXPECT_EQ(e[3], inf);
  EXPECT_EQ(Bits(e[4]), 0u);
  EXPECT_EQ(e[5], 1.0f);
  EXPECT_EQ(e[6], 1.0f);
  EXPECT_EQ(Bits(t[0]), detmath::kCanonicalNaNBits);
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_EQ(Bits(t[5]), Bits(-0.0f));  // tanh keeps the sign of zero
  EXPECT_EQ(Bits(t[6]), 0u);
}

}  // namespace
}  // namespace vt::kernels::repopsmath
