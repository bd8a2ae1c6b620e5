// TreeSum is the order of every repops reduction: its value must be the
// definition's (blocks of kTreeBlock terms left to right from +0, block sums
// combined by halving, the left half taking the odd block) bit for bit,
// however the implementation schedules the blocks — interleaved chains,
// stack-sized runs, threads.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/ops/op_util.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::testing {
namespace {

using opsdetail::kTreeBlock;

// The definition, written from the comment and nothing else.
template <class T>
T DefinitionTreeSum(const std::vector<T>& x, std::int64_t begin, std::int64_t n) {
  const std::int64_t blocks = (n + kTreeBlock - 1) / kTreeBlock;
  if (blocks <= 1) {
    T acc = T(0);
    for (std::int64_t i = 0; i < n; ++i) acc = acc + x[static_cast<std::size_t>(begin + i)];
    return acc;
  }
  const std::int64_t left = (blocks + 1) / 2 * kTreeBlock;
  return DefinitionTreeSum(x, begin, left) + DefinitionTreeSum(x, begin + left, n - left);
}

template <class T>
auto Bits(T v) {
  if constexpr (sizeof(T) == 4) {
    return std::bit_cast<std::uint32_t>(v);
  } else {
    return std::bit_cast<std::uint64_t>(v);
  }
}

// Values whose sums depend on the order: magnitudes spread over 2^±40,
// exact cancellations, signed zeros, and (when asked) infinities and NaNs.
template <class T>
std::vector<T> Terms(std::int64_t n, std::mt19937_64& rng, bool specials) {
  std::vector<T> x(static_cast<std::size_t>(n));
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-40, 40), pick(0, 99);
  for (std::int64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
    const int p = pick(rng);
    if (p < 5 && i > 0) v = -x[static_cast<std::size_t>(i - 1)];
    if (p == 5) v = T(-0.0);
    if (specials && p == 6) v = std::numeric_limits<T>::infinity();
    if (specials && p == 7) v = std::numeric_limits<T>::quiet_NaN();
    x[static_cast<std::size_t>(i)] = v;
  }
  return x;
}

template <class T>
void ExpectDefinition(std::int64_t n, std::mt19937_64& rng, bool specials) {
  const std::vector<T> x = Terms<T>(n, rng, specials);
  const auto get = [&](std::int64_t i) { return x[static_cast<std::size_t>(i)]; };
  const T want = DefinitionTreeSum(x, 0, n);
  EXPECT_EQ(Bits(opsdetail::TreeSum<T>(n, get)), Bits(want)) << "n = " << n;
  for (int threads : {2, 3}) {
    EXPECT_EQ(Bits(opsdetail::ParallelTreeSum<T>(threads, n, get)), Bits(want))
        << "n = " << n << ", threads = " << threads;
  }
}

// Lengths around every boundary the implementation has: one block, the
// interleaved group of blocks, the stack-sized run, and ragged last blocks.
std::vector<std::int64_t> Lengths() {
  std::vector<std::int64_t> ns = {0, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 12544, 100000};
  for (std::int64_t blocks : {7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200}) {
    for (std::int64_t delta : {-1, 0, 1}) ns.push_back(blocks * kTreeBlock + delta);
  }
  return ns;
}

TEST(TreeSum, EqualsTheDefinitionBitForBit) {
  std::mt19937_64 rng(vt::test::TestSeed());
  for (std::int64_t n : Lengths()) {
    ExpectDefinition<float>(n, rng, false);
    ExpectDefinition<double>(n, rng, false);
  }
}

TEST(TreeSum, EqualsTheDefinitionWithInfinitiesAndNaNs) {
  std::mt19937_64 rng(vt::test::TestSeed() + 1);
  for (std::int64_t n : Lengths()) {
    ExpectDefinition<float>(n, rng, true);
    ExpectDefinition<double>(n, rng, true);
  }
}

}  // namespace
}  // namespace vt::kernels::testing
