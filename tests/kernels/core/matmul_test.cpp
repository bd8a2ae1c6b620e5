// MatMul(): shapes, batching, transposes and the three modes.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "kernels/matmul.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

Tensor Random(std::mt19937_64& rng, Shape shape) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> normal;
  for (float& x : t.values()) x = normal(rng);
  return t;
}

// Element (r, c) of the last two dims of batch `b`.
float At(const Tensor& t, std::int64_t b, std::int64_t r, std::int64_t c) {
  const std::int64_t rows = t.dim(-2), cols = t.dim(-1);
  return t[b * rows * cols + r * cols + c];
}

// fp64 reference of op(a)·op(b) per batch (b is shared when rank 2).
std::vector<double> ReferenceF64(const Tensor& a, const Tensor& b, MatMulOptions o, std::int64_t& m,
                                 std::int64_t& n) {
  m = o.trans_a ? a.dim(-1) : a.dim(-2);
  const std::int64_t k = o.trans_a ? a.dim(-2) : a.dim(-1);
  n = o.trans_b ? b.dim(-2) : b.dim(-1);
  const std::int64_t batch = NumElements(Shape(a.shape().begin(), a.shape().end() - 2));
  std::vector<double> out(static_cast<std::size_t>(batch * m * n));
  for (std::int64_t bt = 0; bt < batch; ++bt) {
    const std::int64_t bb = b.rank() == 2 ? 0 : bt;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double av = o.trans_a ? At(a, bt, p, i) : At(a, bt, i, p);
          const double bv = o.trans_b ? At(b, bb, j, p) : At(b, bb, p, j);
          s += av * bv;
        }
        out[static_cast<std::size_t>((bt * m + i) * n + j)] = s;
      }
    }
  }
  return out;
}

struct MmCase {
  Shape a, b;
  MatMulOptions o;
  Shape out;
};

const MmCase kCases[] = {
    {{5, 7}, {7, 3}, {}, {5, 3}},
    {{7, 5}, {7, 3}, {true, false}, {5, 3}},
    {{5, 7}, {3, 7}, {false, true}, {5, 3}},
    {{7, 5}, {3, 7}, {true, true}, {5, 3}},
    {{2, 3, 5, 7}, {7, 4}, {}, {2, 3, 5, 4}},           // batched a, shared b (folded into one GEMM)
    {{2, 3, 7, 5}, {7, 4}, {true, false}, {2, 3, 5, 4}},  // batched, transposed a, shared b
    {{4, 5, 7}, {4, 7, 6}, {}, {4, 5, 6}},              // batched a and b
    {{4, 5, 7}, {4, 6, 7}, {false, true}, {4, 5, 6}},
    {{1, 1}, {1, 1}, {}, {1, 1}},
    {{3, 0}, {0, 2}, {}, {3, 2}},  // k = 0: zeros
};

TEST(MatMulTest, AllModesMatchTheFp64ReferenceOnEveryLayout) {
  std::mt19937_64 rng(test::TestSeed());
  for (const MmCase& cs : kCases) {
    const Tensor a = Random(rng, cs.a), b = Random(rng, cs.b);
    std::int64_t m = 0, n = 0;
    const std::vector<double> want = ReferenceF64(a, b, cs.o, m, n);
    for (Mode mode : {Mode::kNative, Mode::kRepops, Mode::kRounded}) {
      ExecConfig config;
      config.mode = mode;
      config.threads = 2;
      NodeRounding rounding = NodeRounding::Record(config.rounding);
      Tensor out;
      ASSERT_TRUE(MatMul(OpContext(config, &rounding), a, b, out, cs.o).ok());
      ASSERT_EQ(out.shape(), cs.out) << ModeName(mode);
      const std::int64_t k = cs.o.trans_a ? cs.a.end()[-2] : cs.a.back();
      for (std::size_t i = 0; i < want.size(); ++i) {
        if (mode == Mode::kRounded) {
          // fp64 accuracy then one rounding: within half an ulp plus a hair.
          ASSERT_NEAR(out[static_cast<std::int64_t>(i)], want[i], std::fabs(want[i]) * 0x1p-23 + 1e-30) << i;
        } else {
          ASSERT_NEAR(out[static_cast<std::int64_t>(i)], want[i], 1e-5 * static_cast<double>(k + 1)) << i;
        }
      }
    }
  }
}

TEST(MatMulTest, RepopsMatMulEqualsGemmRepopsPerBatch) {
  std::mt19937_64 rng(test::TestSeed() ^ 3);
  const Tensor a = Random(rng, {3, 17, 29}), b = Random(rng, {29, 13});
  Tensor out;
  ExecConfig config;
  ASSERT_TRUE(MatMul(OpContext(config), a, b, out).ok());
  for (std::int64_t bt = 0; bt < 3; ++bt) {
    std::vector<float> c(17 * 13);
    GemmRepopsReference({17, 13, 29, false, false, 29, 13, 13, false}, a.data() + bt * 17 * 29, b.data(), c.data());
    for (std::int64_t i = 0; i < 17 * 13; ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[bt * 17 * 13 + i]), std::bit_cast<std::uint32_t>(c[i]));
    }
  }
}

// The rounded output recorded with MatMul replays exactly from an fp64
// computation done in a different order (the naive loop above): the log
// absorbs the difference.
TEST(MatMulTest, RoundedRecordReplaysFromAnotherFp64Order) {
  std::mt19937_64 rng(test::TestSeed() ^ 5);
  const Tensor a = Random(rng, {2, 40, 300}), b = Random(rng, {300, 50});
  ExecConfig config;
  config.mode = Mode::kRounded;
  config.rounding = {27, 4096};
  NodeRounding rec = NodeRounding::Record(config.rounding);
  Tensor out;
  ASSERT_TRUE(MatMul(OpContext(config, &rec), a, b, out).ok());
  ASSERT_TRUE(rec.Finish().ok());
  std::int64_t m = 0, n = 0;
  const std::vector<double> other = ReferenceF64(a, b, {}, m, n);
  NodeRounding rep = NodeRounding::Replay(config.rounding, rec.log());
  std::vector<float> replayed(other.size());
  ASSERT_TRUE(rep.Round(other, replayed).ok());
  ASSERT_TRUE(rep.Finish().ok());
  for (std::size_t i = 0; i < other.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(replayed[i]), std::bit_cast<std::uint32_t>(out[static_cast<std::int64_t>(i)]))
        << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(replayed[i]) & 0x1Fu, 0u);  // b = 27: 5 low bits clear
  }
}

TEST(MatMulTest, ShapeErrorsAndMissingRoundingState) {
  const Tensor a({2, 3}), b({4, 5}), v({3});
  Tensor out;
  ExecConfig config;
  EXPECT_EQ(MatMul(OpContext(config), a, b, out).reason(), "shape-mismatch");
  EXPECT_EQ(MatMul(OpContext(config), v, b, out).reason(), "shape-mismatch");
  EXPECT_EQ(MatMul(OpContext(config), Tensor({2, 2, 3}), Tensor({3, 3, 4}), out).reason(), "shape-mismatch");
  EXPECT_EQ(MatMul(OpContext(config), Tensor({2, 2, 3}), Tensor({2, 3}), out).reason(), "shape-mismatch");
  EXPECT_TRUE(MatMul(OpContext(config), Tensor({2, 3}), Tensor({3, 4}), out).ok());
  config.mode = Mode::kRounded;
  const Status s = MatMul(OpContext(config), Tensor({2, 3}), Tensor({3, 4}), out);
  EXPECT_TRUE(s.is_error());
  EXPECT_EQ(s.reason(), "rounding-state-missing");
}

}  // namespace
}  // namespace vt::kernels
