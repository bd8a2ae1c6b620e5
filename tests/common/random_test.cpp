#include "common/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "tests/support/bit_hash.h"
#include "tests/support/test_seed.h"

namespace vt {
namespace {

TEST(Random, BitsToUnitInterval) {
  EXPECT_EQ(UniformFloatFromBits(0), 0.0f);
  EXPECT_EQ(UniformFloatFromBits(0xffffffffu), 1.0f - 0x1p-24f);  // never 1
  EXPECT_EQ(UniformFloatFromBits(0x00000100u), 0x1p-24f);
  EXPECT_EQ(UniformFloatFromBits(0x000000ffu), 0.0f);  // low 8 bits ignored
  EXPECT_EQ(UniformFloatOpen0FromBits(0), 0x1p-24f);   // never 0
  EXPECT_EQ(UniformFloatOpen0FromBits(0xffffffffu), 1.0f);
  EXPECT_EQ(UniformDoubleFromBits(0), 0.0);
  EXPECT_EQ(UniformDoubleFromBits(~0ull), 1.0 - 0x1p-53);
  EXPECT_EQ(UniformDoubleFromBits(1ull << 11), 0x1p-53);
}

TEST(Random, ElementAddressingMatchesSequentialStream) {
  const std::uint64_t seed = test::TestSeed();
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  PhiloxStream uniform(seed, 3, 9);
  PhiloxStream normal(seed, 3, 9);
  for (std::uint64_t e = 0; e < 1000; ++e) {
    ASSERT_EQ(NextUniformFloat(uniform), UniformAt(key, 3, 9, e)) << e;
    ASSERT_EQ(NextNormal(normal), NormalAt(key, 3, 9, e)) << e;
  }
  EXPECT_EQ(uniform.position(), 1000u);
  EXPECT_EQ(normal.position(), 2000u);
}

TEST(Random, UniformMoments) {
  PhiloxStream s(test::TestSeed(), 0, 1);
  constexpr int kN = 100000;
  double sum = 0, sum2 = 0, dsum = 0;
  for (int i = 0; i < kN; ++i) {
    const float u = NextUniformFloat(s);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum2 += static_cast<double>(u) * u;
    const double d = NextUniformDouble(s);
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    dsum += d;
  }
  // Standard error of the mean is 0.289/sqrt(1e5) = 0.0009; bounds are ~6 sigma.
  EXPECT_NEAR(sum / kN, 0.5, 0.0055);
  EXPECT_NEAR(sum2 / kN - (sum / kN) * (sum / kN), 1.0 / 12, 0.003);
  EXPECT_NEAR(dsum / kN, 0.5, 0.0055);
}

TEST(Random, NormalMoments) {
  PhiloxStream s(test::TestSeed(), 0, 2);
  constexpr int kN = 100000;
  double sum = 0, sum2 = 0, sum4 = 0;
  int within_one = 0;
  for (int i = 0; i < kN; ++i) {
    const double z = NextNormal(s);
    ASSERT_TRUE(std::isfinite(z));
    ASSERT_LE(std::fabs(z), 5.78);  // Box-Muller with 24-bit u1 cuts at sqrt(48 ln 2)
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
    within_one += std::fabs(z) < 1.0;
  }
  const double mean = sum / kN, var = sum2 / kN - mean * mean;
  // Standard errors: mean 0.0032, variance 0.0045, kurtosis ~0.025, P(|z|<1) 0.0015.
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
  EXPECT_NEAR(sum4 / kN, 3.0, 0.15);
  EXPECT_NEAR(static_cast<double>(within_one) / kN, 0.682689, 0.01);
}

TEST(Random, UniformIntRange) {
  PhiloxStream s(test::TestSeed(), 0, 3);
  EXPECT_EQ(NextUniformInt(s, 1), 0u);
  for (std::uint64_t n :
       {2ull, 3ull, 1000ull, (1ull << 32) - 1, 1ull << 32, (1ull << 32) + 1, 1ull << 63, ~0ull})
    for (int i = 0; i < 200; ++i) ASSERT_LT(NextUniformInt(s, n), n) << n;
}

// n = 3 * 2^30: plain `word % n` would give [0, 2^30) twice the weight of the
// rest. Rejection must make the three 2^30-wide buckets equally likely.
TEST(Random, UniformIntHasNoModuloBias) {
  PhiloxStream s(test::TestSeed(), 0, 4);
  const std::uint64_t n = 3ull << 30;
  constexpr int kN = 60000;
  int bucket[3] = {};
  for (int i = 0; i < kN; ++i) ++bucket[NextUniformInt(s, n) >> 30];
  for (int b = 0; b < 3; ++b) EXPECT_NEAR(bucket[b], kN / 3, 600) << "bucket " << b;  // sigma ~115
  // A quarter of the draws are rejected, so more words than results were used.
  EXPECT_GT(s.position(), static_cast<std::uint64_t>(kN) * 5 / 4 - 1000);
  EXPECT_LT(s.position(), static_cast<std::uint64_t>(kN) * 4 / 3 + 1000);
}

TEST(Random, UniformIntChiSquare) {
  PhiloxStream s(test::TestSeed(), 0, 5);
  constexpr int kK = 10, kN = 100000;
  int counts[kK] = {};
  for (int i = 0; i < kN; ++i) ++counts[NextUniformInt(s, kK)];
  double chi2 = 0;
  for (int c : counts) chi2 += (c - kN / kK) * (c - kN / kK) / static_cast<double>(kN / kK);
  EXPECT_LT(chi2, 40.0);  // 9 degrees of freedom: P(chi2 > 40) < 1e-5
}

TEST(Random, UniformIntRejectionIsReproducible) {
  // Rejection sampling by hand from the raw words gives the same results.
  const std::uint64_t seed = test::TestSeed();
  const std::uint64_t n = (1ull << 31) + 1;  // about half of all words are rejected
  const std::uint64_t limit = (1ull << 32) - (1ull << 32) % n;
  PhiloxStream s(seed, 1, 1);
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  std::uint64_t word = 0;
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t w;
    do w = PhiloxWord(key, 1, 1, word++);
    while (w >= limit);
    ASSERT_EQ(NextUniformInt(s, n), w % n);
  }
  EXPECT_EQ(s.position(), word);
}

TEST(Random, PermutationIsAPermutation) {
  const std::uint64_t seed = test::TestSeed();
  for (std::uint64_t n : {0ull, 1ull, 2ull, 17ull, 1000ull}) {
    std::vector<std::uint64_t> p = Permutation(seed, 0, 0, n);
    ASSERT_EQ(p.size(), n);
    std::sort(p.begin(), p.end());
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(p[i], i);
  }
  EXPECT_EQ(Permutation(seed, 0, 0, 1000), Permutation(seed, 0, 0, 1000));
  EXPECT_NE(Permutation(seed, 0, 0, 1000), Permutation(seed + 1, 0, 0, 1000));
  EXPECT_NE(Permutation(seed, 0, 0, 1000), Permutation(seed, 1, 0, 1000));  // e.g. the next epoch
}

TEST(Random, PermutationsUniform) {
  // All 6 orders of 3 items appear equally often over many streams.
  const std::uint64_t seed = test::TestSeed();
  std::map<std::vector<std::uint64_t>, int> counts;
  constexpr int kN = 6000;
  for (std::uint32_t step = 0; step < kN; ++step) ++counts[Permutation(seed, step, 0, 3)];
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [perm, c] : counts) EXPECT_NEAR(c, kN / 6, 170);  // sigma ~29
}

// Golden values: the same bits on every platform and compiler. A change here
// changes every training run and must be deliberate.
TEST(Random, GoldenSequences) {
  const std::uint64_t seed = 0x5eed;
  EXPECT_EQ(Permutation(seed, 0, 0, 10), (std::vector<std::uint64_t>{9, 7, 6, 5, 3, 0, 1, 4, 8, 2}));
  test::BitHasher h;
  PhiloxStream s(seed, 1, 2);
  for (int i = 0; i < 1000; ++i) {
    h.AddFloat(NextUniformFloat(s));
    h.AddFloat(NextNormal(s));
    h.AddDouble(NextUniformDouble(s));
    h.AddU64(NextUniformInt(s, 1000003));
  }
  EXPECT_EQ(h.value(), 8505243563116987898ull);
  EXPECT_EQ(s.position(), 6000u);  // 1 + 2 + 2 + 1 words, no rejection here
}

}  // namespace
}  // namespace vt
