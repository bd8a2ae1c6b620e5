// Rounded-mode rounding against a slow, obviously-correct reference.
//
// The reference works on fp32 values and long double (x86 80-bit, 64-bit
// significand): the largest fp32 ≤ |x| is found with nextafterf, the b-bit grid
// neighbours by clearing/adding the low 32−b pattern bits (the grid's
// definition), and the midpoint, ulp and distances in long double, where
// every quantity involved is exact.

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/rounding.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

static_assert(std::numeric_limits<long double>::digits >= 64, "the reference needs x87 long double");

struct Ref {
  bool special = false;
  std::uint32_t nearest = 0, down = 0, up = 0;
  bool nearest_is_up = false, near = false, window = false;
};

std::uint32_t Bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float FromBits(std::uint32_t u) { return std::bit_cast<float>(u); }

long double GridValue(std::uint32_t pattern) {
  // Pattern 0x7F800000 (the step past max) stands for 2^128.
  if (pattern == 0x7F800000u) return std::ldexp(1.0L, 128);
  return static_cast<long double>(FromBits(pattern));
}

Ref Reference(double x, int bits, std::uint32_t tau_q16) {
  Ref r;
  if (std::isnan(x)) {
    r.special = true;
    r.nearest = r.down = r.up = 0x7FC00000u;
    return r;
  }
  const bool neg = std::signbit(x);
  const std::uint32_t sign = neg ? 0x80000000u : 0u;
  const long double ax = std::fabs(static_cast<long double>(x));
  if (std::isinf(x) || ax >= std::ldexp(1.0L, 128)) {
    r.special = true;
    r.nearest = r.down = r.up = sign | 0x7F800000u;
    return r;
  }
  // Largest fp32 ≤ |x|.
  float c = static_cast<float>(ax);
  while (static_cast<long double>(c) > ax) c = std::nextafterf(c, 0.0f);
  const std::uint32_t mask = (1u << (32 - bits)) - 1;
  const std::uint32_t lo = Bits(c) & ~mask;
  const std::uint32_t hi = lo + mask + 1;
  const long double vlo = GridValue(lo), vhi = GridValue(hi);
  EXPECT_LE(vlo, ax);
  EXPECT_LT(ax, vhi);
  const long double u = vhi - vlo;
  const long double m = (vlo + vhi) / 2;
  const long double below = ax - vlo, above = vhi - ax;
  bool away;
  if (below != above) {
    away = above < below;
  } else {
    away = ((lo >> (32 - bits)) & 1u) != 0;  // tie: to the even kept LSB
  }
  r.nearest = sign | (away ? hi : lo);
  r.down = sign | (neg ? hi : lo);
  r.up = sign | (neg ? lo : hi);
  r.nearest_is_up = away != neg;
  const long double tau = static_cast<long double>(tau_q16) / 65536.0L;
  const long double dist = std::fabs(ax - m);
  r.near = dist < tau * u;
  // The acceptance rule's outer window (2w), written as a bound on the
  // distance to the nearer grid value so that it stays exact for values far
  // below the spacing (u/2 − below would round in long double).
  r.window = std::min(below, above) > u * (0.5L - 2 * tau);
  return r;
}

void Check(double x, int bits, std::uint32_t tau_q16) {
  const Ref ref = Reference(x, bits, tau_q16);
  const RoundingRegion got = ClassifyRounding(x, RoundingSpec{bits, tau_q16});
  SCOPED_TRACE(::testing::Message() << "x=" << std::hexfloat << x << " bits=" << bits << " tau_q16=" << tau_q16);
  ASSERT_EQ(Bits(RoundToBits(x, bits)), ref.nearest);
  ASSERT_EQ(Bits(got.nearest), ref.nearest);
  ASSERT_EQ(got.has_boundary, !ref.special);
  if (ref.special) return;
  ASSERT_EQ(Bits(got.down), ref.down);
  ASSERT_EQ(Bits(got.up), ref.up);
  ASSERT_EQ(got.nearest_is_up, ref.nearest_is_up);
  ASSERT_EQ(got.near_boundary, ref.near);
  ASSERT_EQ(got.within_replay_window, ref.window);
}

constexpr std::uint32_t kTaus[] = {0, 1, 4096, 16384, 1234};

double RandomDouble(std::mt19937_64& rng) {
  // Mostly the fp32 range (exponents −160..130), sometimes any bit pattern.
  if (rng() % 8 == 0) return std::bit_cast<double>(rng());
  const int e = static_cast<int>(rng() % 291) - 160;
  const std::uint64_t mant = rng() & 0x000FFFFFFFFFFFFFull;
  const std::uint64_t sign = (rng() & 1) << 63;
  return std::bit_cast<double>(sign | (static_cast<std::uint64_t>(e + 1023) << 52) | mant);
}

TEST(RoundingTest, RandomValuesMatchReference) {
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 400000; ++i) {
    const double x = RandomDouble(rng);
    const int bits = 23 + static_cast<int>(rng() % 10);
    Check(x, bits, kTaus[rng() % 5]);
  }
}

// Boundaries and midpoints of the grid, for every b and many intervals.
TEST(RoundingTest, AdversarialValuesMatchReference) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x5eed);
  std::vector<double> xs;
  std::vector<std::uint32_t> edge_tau;
  for (int bits = 23; bits <= 32; ++bits) {
    const std::uint32_t step = 1u << (32 - bits);
    std::vector<std::uint32_t> los;
    // Random grid points over all exponents, subnormals, and special spots.
    for (int i = 0; i < 150; ++i) los.push_back(static_cast<std::uint32_t>(rng()) & 0x7F7FFFFFu & ~(step - 1));
    for (std::uint32_t e = 0; e < 255; ++e) {
      los.push_back(e << 23);                  // a power of two (binade start)
      if (e > 0) los.push_back((e << 23) - step);  // the last interval below it
    }
    los.push_back(0);                               // [0, smallest grid value)
    los.push_back(step);                            // smallest non-zero grid value
    los.push_back(0x00800000u - step);              // largest subnormal grid value
    los.push_back(0x7F7FFFFFu & ~(step - 1));       // max: [max, 2^128)
    for (std::uint32_t lo : los) {
      const long double vlo = GridValue(lo), vhi = GridValue(lo + step);
      const long double u = vhi - vlo, m = (vlo + vhi) / 2;
      for (std::uint32_t tau_q16 : {std::uint32_t{4096}, std::uint32_t{16384}, std::uint32_t{1}}) {
        const long double t = static_cast<long double>(tau_q16) / 65536.0L * u;
        for (long double target : {vlo, m, m - t, m + t, m - 4 * t, m + 4 * t, vhi}) {
          const double d = static_cast<double>(target);
          if (static_cast<long double>(d) != target) continue;  // not representable: skip
          for (double v : {d, std::nextafter(d, 0.0), std::nextafter(d, HUGE_VAL)}) {
            xs.push_back(v);
            xs.push_back(-v);
            edge_tau.push_back(tau_q16);
            edge_tau.push_back(tau_q16);
          }
        }
      }
    }
    // Each x against one τ that put it on a region edge and a random other.
    for (std::size_t i = 0; i < xs.size(); ++i) {
      Check(xs[i], bits, edge_tau[i]);
      Check(xs[i], bits, kTaus[rng() % 5]);
    }
    edge_tau.clear();
    xs.clear();
  }
}

TEST(RoundingTest, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int bits = 23; bits <= 32; ++bits) {
    EXPECT_EQ(Bits(RoundToBits(0.0, bits)), 0u);
    EXPECT_EQ(Bits(RoundToBits(-0.0, bits)), 0x80000000u);
    EXPECT_EQ(Bits(RoundToBits(inf, bits)), 0x7F800000u);
    EXPECT_EQ(Bits(RoundToBits(-inf, bits)), 0xFF800000u);
    EXPECT_EQ(Bits(RoundToBits(nan, bits)), 0x7FC00000u);
    EXPECT_EQ(Bits(RoundToBits(-nan, bits)), 0x7FC00000u);
    EXPECT_EQ(Bits(RoundToBits(std::bit_cast<double>(0x7FF0000000000001ull), bits)), 0x7FC00000u);  // sNaN
    EXPECT_EQ(Bits(RoundToBits(1e300, bits)), 0x7F800000u);
    EXPECT_EQ(Bits(RoundToBits(-1e300, bits)), 0xFF800000u);
    EXPECT_EQ(Bits(RoundToBits(-1e-300, bits)), 0x80000000u);  // underflow keeps the sign
    EXPECT_EQ(Bits(RoundToBits(std::bit_cast<double>(std::uint64_t{1}), bits)), 0u);  // fp64 subnormal
    for (std::uint32_t tau : kTaus) {
      EXPECT_FALSE(ClassifyRounding(inf, {bits, tau}).has_boundary);
      EXPECT_FALSE(ClassifyRounding(nan, {bits, tau}).has_boundary);
      EXPECT_FALSE(ClassifyRounding(0.0, {bits, tau}).near_boundary);
    }
  }
  // b = 32 is exactly the hardware double → float conversion (round to
  // nearest even), including subnormals and overflow.
  std::mt19937_64 rng(test::TestSeed() ^ 0xf10a7);
  for (int i = 0; i < 200'000; ++i) {
    const double x = RandomDouble(rng);
    if (std::isnan(x)) continue;
    ASSERT_EQ(Bits(RoundToBits(x, 32)), Bits(static_cast<float>(x))) << std::hexfloat << x;
  }
  // Overflow threshold: max + u/2 is a tie and goes to the even "2^128" → inf.
  const double max32 = FLT_MAX;
  const double half_ulp = std::ldexp(1.0, 103);
  EXPECT_EQ(Bits(RoundToBits(max32 + half_ulp, 32)), 0x7F800000u);
  EXPECT_EQ(Bits(RoundToBits(std::nextafter(max32 + half_ulp, 0.0), 32)), Bits(FLT_MAX));
  // b = 24: grid max is 0x7F7FFF00; its kept LSB is 1 as well.
  const double max24 = static_cast<double>(FromBits(0x7F7FFF00u));
  EXPECT_EQ(Bits(RoundToBits(max24 + std::ldexp(1.0, 111), 24)), 0x7F800000u);
  EXPECT_EQ(Bits(RoundToBits(std::nextafter(max24 + std::ldexp(1.0, 111), 0.0), 24)), 0x7F7FFF00u);
}

TEST(RoundingTest, LowBitsAreZeroAndIdempotent) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x1de);
  for (int i = 0; i < 200'000; ++i) {
    const double x = RandomDouble(rng);
    const int bits = 23 + static_cast<int>(rng() % 10);
    const float r = RoundToBits(x, bits);
    if (std::isnan(r)) continue;
    ASSERT_EQ(Bits(r) & ((1u << (32 - bits)) - 1), 0u);
    ASSERT_EQ(Bits(RoundToBits(static_cast<double>(r), bits)), Bits(r));
  }
}

// The spec's validation bounds.
TEST(RoundingTest, SpecValidation) {
  EXPECT_TRUE((RoundingSpec{32, 4096}).Validate().ok());
  EXPECT_TRUE((RoundingSpec{23, 0}).Validate().ok());
  EXPECT_TRUE((RoundingSpec{24, kMaxTauQ16}).Validate().ok());
  EXPECT_EQ((RoundingSpec{22, 4096}).Validate().reason(), "rounding-bits-out-of-range");
  EXPECT_EQ((RoundingSpec{33, 4096}).Validate().reason(), "rounding-bits-out-of-range");
  EXPECT_EQ((RoundingSpec{32, kMaxTauQ16 + 1}).Validate().reason(), "rounding-tau-out-of-range");
}

}  // namespace
}  // namespace vt::kernels
