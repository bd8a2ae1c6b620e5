// verify/element.h against the kernel it judges: every value of a repops
// linear layer is reproduced from its row of x, its row of W and its bias
// through the partial sums the level-5 bisection walks, and a liar who
// plants a wrong value fails the one step where its partial sums first
// leave the honest ones.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor.h"
#include "tests/support/random_values.h"
#include "tests/support/test_seed.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

// Values over several binades, so that partial sums round at every step.
float RandomValue(std::mt19937_64& rng) { return test::RandomFp32(rng, -12, 6); }

struct Linear {
  std::int64_t rows = 0, k = 0, n = 0;
  kernels::Tensor x, w, b, y;
};

Linear RandomLinear(std::mt19937_64& rng) {
  Linear l;
  l.rows = 1 + static_cast<std::int64_t>(rng() % 5);
  l.k = 1 + static_cast<std::int64_t>(rng() % 300);
  l.n = 1 + static_cast<std::int64_t>(rng() % 7);
  l.x = kernels::Tensor({l.rows, l.k});
  l.w = kernels::Tensor({l.n, l.k});
  l.b = kernels::Tensor({l.n});
  for (float& v : l.x.values()) v = RandomValue(rng);
  for (float& v : l.w.values()) v = RandomValue(rng);
  for (float& v : l.b.values()) v = RandomValue(rng);
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRepops;
  config.threads = 1 + static_cast<int>(rng() % 2);
  const kernels::OpContext ctx(config);
  std::vector<kernels::Tensor> out;
  const std::vector<const kernels::Tensor*> in{&l.x, &l.w, &l.b};
  EXPECT_TRUE(kernels::RunOp(ctx, kernels::OpKind::kLinear, {}, in, out).ok());
  l.y = std::move(out.at(0));
  return l;
}

std::span<const float> Row(const kernels::Tensor& t, std::int64_t r, std::int64_t len) {
  return t.values().subspan(static_cast<std::size_t>(r * len), static_cast<std::size_t>(len));
}

TEST(VerifyElement, EveryLinearValueIsItsPartialSumsPlusTheBias) {
  std::mt19937_64 rng(test::TestSeed());
  std::size_t values = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Linear l = RandomLinear(rng);
    for (std::int64_t r = 0; r < l.rows; ++r) {
      for (std::int64_t j = 0; j < l.n; ++j) {
        const std::span<const float> a = Row(l.x, r, l.k), b = Row(l.w, j, l.k);
        const std::vector<float> p = RepopsDotPartials(a, b);
        ASSERT_EQ(p.size(), static_cast<std::size_t>(l.k) + 1);
        EXPECT_TRUE(SameBits(p[0], +0.0f));
        for (std::int64_t m = 0; m < l.k; ++m) ASSERT_TRUE(RepopsDotStepHolds(p[m], a[m], b[m], p[m + 1]));
        const float y = l.y.values()[static_cast<std::size_t>(r * l.n + j)];
        EXPECT_TRUE(SameBits(RepopsLinearValue(p.back(), l.b.values()[static_cast<std::size_t>(j)]), y))
            << "y[" << r << "," << j << "] of a " << l.rows << "x" << l.k << " · " << l.n << "x" << l.k;
        ++values;
      }
    }
  }
  EXPECT_GT(values, 100u);
}

TEST(VerifyElement, ALiarsPartialSumsFailTheStepWhereTheyFirstDiffer) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x5eed);
  std::size_t caught_at_step = 0, caught_at_bias = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const Linear l = RandomLinear(rng);
    const std::int64_t r = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(l.rows));
    const std::int64_t j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(l.n));
    const std::span<const float> a = Row(l.x, r, l.k), b = Row(l.w, j, l.k);
    const float bias = l.b.values()[static_cast<std::size_t>(j)];
    const std::vector<float> honest = RepopsDotPartials(a, b);
    // The planted cheat: one output value off by one ulp or more. The liar
    // keeps p_0 = +0 (the referee opens it) and follows the honest sums up
    // to a point of its choosing, then anything, ending where its value needs.
    std::vector<float> lie = honest;
    const std::size_t from = 1 + rng() % static_cast<std::size_t>(l.k);
    for (std::size_t m = from; m < lie.size(); ++m) {
      if (rng() % 3 == 0) lie[m] = std::nextafter(lie[m], rng() % 2 ? INFINITY : -INFINITY);
      else if (rng() % 2 == 0) lie[m] = RandomValue(rng);
    }
    const float claimed = RepopsLinearValue(lie.back(), bias);
    if (SameBits(claimed, RepopsLinearValue(honest.back(), bias))) continue;  // no cheat in the output
    // Leftmost difference (what the level-5 walk finds).
    std::size_t m = 0;
    while (m < lie.size() && SameBits(lie[m], honest[m])) ++m;
    ASSERT_GE(m, 1u) << "both start at +0";
    ASSERT_LT(m, lie.size()) << "equal partial sums cannot give another value";
    EXPECT_FALSE(RepopsDotStepHolds(honest[m - 1], a[m - 1], b[m - 1], lie[m])) << "the liar's step " << m;
    EXPECT_TRUE(RepopsDotStepHolds(honest[m - 1], a[m - 1], b[m - 1], honest[m])) << "the honest step " << m;
    ++caught_at_step;
  }
  // And a liar whose sums are all honest but whose value is not: the
  // epilogue (p_K + bias) refuses it — the value is opened with p_K.
  for (int trial = 0; trial < 50; ++trial) {
    const Linear l = RandomLinear(rng);
    const std::vector<float> honest = RepopsDotPartials(Row(l.x, 0, l.k), Row(l.w, 0, l.k));
    const float y = l.y.values()[0];
    const float wrong = std::nextafter(y, INFINITY);
    EXPECT_FALSE(SameBits(RepopsLinearValue(honest.back(), l.b.values()[0]), wrong));
    ++caught_at_bias;
  }
  EXPECT_GT(caught_at_step, 100u);
  EXPECT_EQ(caught_at_bias, 50u);
}

}  // namespace
}  // namespace vt::verify
