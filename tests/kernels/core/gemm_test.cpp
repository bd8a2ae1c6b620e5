// Repops GEMM: every SIMD path × thread count equals the sequential fp32 sum
// (tests/kernels/sequential_gemm.h) bitwise; golden hashes pin the bits;
// native sgemm is checked against fp64; the widening fp64 GEMM (certified
// mode's fast path) equals the sequential fp64 sum bitwise.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/tensor.h"
#include "tests/kernels/sequential_gemm.h"
#include "tests/kernels/supported_simds.h"
#include "tests/kernels/values_hash.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

std::vector<float> RandomFloats(std::mt19937_64& rng, std::size_t n) {
  std::vector<float> v(n);
  std::normal_distribution<float> normal;
  for (auto& x : v) {
    x = normal(rng);
    // Some exact zeros, negative zeros and wide magnitudes.
    const auto r = rng() % 64;
    if (r == 0) x = 0.0f;
    if (r == 1) x = -0.0f;
    if (r == 2) x *= 1e20f;
    if (r == 3) x *= 1e-30f;
  }
  return v;
}

// Uniform in [-1, 1) from a Philox stream: exact, the same everywhere.
std::vector<float> PhiloxFloats(std::uint64_t seed, std::uint32_t tensor, std::size_t n) {
  PhiloxStream s(seed, 0, tensor);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(s.NextU32() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

using testing::SupportedSimds;

bool SameBits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct Case {
  std::int64_t m, n, k;
  bool ta, tb, acc;
};

// A case's arguments (leading dimensions with some padding) and random
// operands and initial C.
struct CaseData {
  GemmArgs g;
  std::vector<float> a, b, c0;
};
CaseData MakeCase(std::mt19937_64& rng, const Case& cs) {
  CaseData d;
  d.g = GemmArgs{cs.m, cs.n, cs.k, cs.ta, cs.tb, 0, 0, 0, cs.acc};
  d.g.lda = (cs.ta ? cs.m : cs.k) + static_cast<std::int64_t>(rng() % 3);
  d.g.ldb = (cs.tb ? cs.k : cs.n) + static_cast<std::int64_t>(rng() % 3);
  d.g.ldc = cs.n + static_cast<std::int64_t>(rng() % 3);
  const std::int64_t a_rows = cs.ta ? cs.k : cs.m, b_rows = cs.tb ? cs.n : cs.k;
  d.a = RandomFloats(rng, static_cast<std::size_t>(std::max<std::int64_t>(1, a_rows * d.g.lda)));
  d.b = RandomFloats(rng, static_cast<std::size_t>(std::max<std::int64_t>(1, b_rows * d.g.ldb)));
  d.c0 = RandomFloats(rng, static_cast<std::size_t>(std::max<std::int64_t>(1, cs.m * d.g.ldc)));
  return d;
}

void RunCase(std::mt19937_64& rng, const Case& cs) {
  const auto [g, a, b, c0] = MakeCase(rng, cs);
  std::vector<float> want = c0;
  testing::SequentialGemm<float>(g, a.data(), b.data(), want.data());
  std::vector<float> ref = c0;
  GemmRepopsReference(g, a.data(), b.data(), ref.data());
  ASSERT_TRUE(SameBits(ref, want)) << "GemmRepopsReference";
  for (Simd simd : SupportedSimds()) {
    for (int threads : {1, 2, 3, 8}) {
      std::vector<float> got = c0;
      ExecConfig config;
      config.threads = threads;
      config.simd = simd;
      GemmRepops(config, g, a.data(), b.data(), got.data());
      ASSERT_TRUE(SameBits(got, want)) << "m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " ta=" << cs.ta
                                       << " tb=" << cs.tb << " acc=" << cs.acc << " simd=" << SimdName(simd)
                                       << " threads=" << threads;
    }
  }
}

TEST(GemmRepopsTest, MatchesNaiveLoopBitwiseOnEdgeShapes) {
  std::mt19937_64 rng(test::TestSeed());
  const std::int64_t dims[] = {1, 2, 7, 16, 17, 31, 33, 97};
  for (std::int64_t m : dims) {
    for (std::int64_t n : dims) {
      const std::int64_t k = dims[rng() % 8];
      RunCase(rng, {m, n, k, (rng() & 1) != 0, (rng() & 1) != 0, (rng() & 1) != 0});
    }
  }
  // k = 0: C = 0 (or unchanged when accumulating).
  RunCase(rng, {5, 6, 0, false, false, false});
  RunCase(rng, {5, 6, 0, true, true, true});
}

TEST(GemmRepopsTest, MatchesNaiveLoopBitwiseOnRandomShapes) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x9e77);
  for (int i = 0; i < 12; ++i) {
    // Crosses the k blocking (256), the row blocking (192) and column groups.
    const Case cs{1 + static_cast<std::int64_t>(rng() % 300), 1 + static_cast<std::int64_t>(rng() % 300),
                  1 + static_cast<std::int64_t>(rng() % 600), (rng() & 1) != 0, (rng() & 1) != 0,
                  (rng() & 1) != 0};
    RunCase(rng, cs);
  }
  RunCase(rng, {257, 389, 521, false, false, false});  // primes over every block size
}

// GemmRepopsRows reads op(B)'s rows through a table: rows that overlap,
// repeat, run backwards and cross the k blocking must give the bits of
// GemmRepops on the same matrix copied out row by row.
TEST(GemmRepopsRowsTest, EqualsGemmRepopsOnTheCopiedMatrix) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x70b5);
  for (int i = 0; i < 16; ++i) {
    const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 40),
                       n = 1 + static_cast<std::int64_t>(rng() % 300),
                       k = i == 0 ? 1100 : 1 + static_cast<std::int64_t>(rng() % 200);
    const bool ta = (rng() & 1) != 0, acc = (rng() & 1) != 0;
    const std::int64_t pool_size = n + 64;
    const std::vector<float> pool = RandomFloats(rng, static_cast<std::size_t>(pool_size));
    std::vector<std::int64_t> rows(static_cast<std::size_t>(k));
    for (auto& r : rows) r = static_cast<std::int64_t>(rng() % 65);  // overlapping windows of the pool
    std::vector<float> copied(static_cast<std::size_t>(k * n));
    for (std::int64_t p = 0; p < k; ++p) {
      std::copy_n(pool.data() + rows[static_cast<std::size_t>(p)], n, copied.data() + p * n);
    }
    const GemmArgs g{m, n, k, ta, false, ta ? m : k, n, n + 1, acc};
    const std::vector<float> a = RandomFloats(rng, static_cast<std::size_t>(m * k));
    const std::vector<float> c0 = RandomFloats(rng, static_cast<std::size_t>(m * (n + 1)));
    std::vector<float> want = c0;
    testing::SequentialGemm<float>(g, a.data(), copied.data(), want.data());
    for (Simd simd : SupportedSimds()) {
      for (int threads : {1, 2, 3}) {
        ExecConfig config;
        config.threads = threads;
        config.simd = simd;
        std::vector<float> got = c0;
        GemmArgs gr = g;
        gr.ldb = 0;  // unused with a row table
        GemmRepopsRows(config, gr, a.data(), pool.data(), rows.data(), got.data());
        ASSERT_TRUE(SameBits(got, want))
            << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " acc=" << acc
            << " simd=" << SimdName(simd) << " threads=" << threads;
      }
    }
  }
}

TEST(GemmRepopsTest, SpecialValuesPropagateIdentically) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x1f);
  GemmArgs g{19, 37, 23, false, false, 23, 37, 37, false};
  auto a = RandomFloats(rng, 19 * 23);
  auto b = RandomFloats(rng, 23 * 37);
  a[5] = INFINITY;
  a[40] = NAN;
  b[7] = -INFINITY;
  b[100] = 3e38f;
  b[101] = 3e38f;
  std::vector<float> want(19 * 37);
  testing::SequentialGemm<float>(g, a.data(), b.data(), want.data());
  for (Simd simd : SupportedSimds()) {
    std::vector<float> got(19 * 37);
    GemmRepops(ExecConfig{Mode::kRepops, 2, simd, {}}, g, a.data(), b.data(), got.data());
    // Finite and infinite results are bitwise equal. NaN sign/payload is not
    // part of the repops contract (x86 propagates whichever NaN operand the
    // compiler put first, GPUs produce one canonical NaN), so NaNs compare
    // as a class.
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      } else {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << i;
      }
    }
  }
}

// The golden hashes pin the result bits: any change of order, blocking bug,
// fma contraction or compiler difference shows up as a different hash.
// Computed once with this implementation (g++ 12, AVX-512 machine) and
// checked for every SIMD path and thread count.
TEST(GemmRepopsTest, GoldenHashes) {
  struct Golden {
    std::int64_t m, n, k;
    bool ta, tb;
    const char* hash;
  };
  const Golden goldens[] = {
      {64, 64, 64, false, false, "ff4e3a4d7316871caa970e73f7f87a171a48cee45e14ffe4a06b3b754a7b5bed"},
      {33, 70, 300, true, false, "4ac3a107ab6f14e649507cbdc9f00f31a3f4030db42cdb2f4bdf0d311a710996"},
      {128, 96, 513, false, true, "1914831639c5b103a387fd4b3534be12435306e1c952212abf48156ae736c617"},
  };
  for (const Golden& gd : goldens) {
    const auto a = PhiloxFloats(42, 1, static_cast<std::size_t>(gd.m * gd.k));
    const auto b = PhiloxFloats(42, 2, static_cast<std::size_t>(gd.k * gd.n));
    GemmArgs g{gd.m, gd.n, gd.k, gd.ta, gd.tb, gd.ta ? gd.m : gd.k, gd.tb ? gd.k : gd.n, gd.n, false};
    for (Simd simd : SupportedSimds()) {
      for (int threads : {1, 3}) {
        Tensor c({gd.m, gd.n});
        GemmRepops(ExecConfig{Mode::kRepops, threads, simd, {}}, g, a.data(), b.data(), c.data());
        EXPECT_EQ(testing::ValuesHash(c).Hex(), gd.hash)
            << gd.m << "x" << gd.n << "x" << gd.k << " " << SimdName(simd);
      }
    }
  }
}

// The widening fp64 GEMM against the sequential fp64 sum of the widened
// operands (mul, then add; p in order), written out here. Its contract is
// any order (certified mode needs no more), but the kernel sums each output
// in p order and its fma rounds only the sum (a product of two fp32 values
// is exact in fp64), so the bits must match: a lost, repeated or misplaced
// term in any packing, blocking or threading path shows.
void RunWidenedCase(std::mt19937_64& rng, const Case& cs) {
  const auto [g, a, b, c0f] = MakeCase(rng, cs);
  const std::vector<double> c0(c0f.begin(), c0f.end());
  std::vector<double> want = c0;
  testing::SequentialGemm<double>(g, a.data(), b.data(), want.data());
  // GemmF64 on the widened operands runs the same kernel on fp64 panels.
  const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
  for (Simd simd : SupportedSimds()) {
    if (!WidenedF64GemmAvailable(simd)) continue;
    for (int threads : {1, 2, 3}) {
      for (bool from_f32 : {true, false}) {
        std::vector<double> got = c0;
        if (from_f32) {
          GemmWidenedF64(simd, threads, g, a.data(), b.data(), got.data());
        } else {
          ExecConfig config;
          config.threads = threads;
          config.simd = simd;
          GemmF64(config, g, a64.data(), b64.data(), got.data());
        }
        for (std::size_t e = 0; e < got.size(); ++e) {
          ASSERT_EQ(std::bit_cast<std::uint64_t>(got[e]), std::bit_cast<std::uint64_t>(want[e]))
              << "m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " ta=" << cs.ta << " tb=" << cs.tb
              << " acc=" << cs.acc << " threads=" << threads << " element " << e << " " << SimdName(simd)
              << (from_f32 ? " (GemmWidenedF64)" : " (GemmF64)");
        }
      }
    }
  }
}

TEST(GemmWidenedF64Test, EqualsTheSequentialFp64SumBitwise) {
  if (!WidenedF64GemmAvailable(Simd::kAuto)) {
    GTEST_SKIP()
        << "neither AVX-512F nor AVX2 with FMA on this CPU/build: certified mode widens the operands "
           "for OpenBLAS dgemm";
  }
  std::mt19937_64 rng(test::TestSeed() ^ 0x3d64);
  const std::int64_t dims[] = {1, 2, 7, 12, 13, 16, 17, 33, 97};
  for (std::int64_t m : dims) {
    for (std::int64_t n : dims) {
      RunWidenedCase(rng, {m, n, dims[rng() % 9], (rng() & 1) != 0, (rng() & 1) != 0, (rng() & 1) != 0});
    }
  }
  RunWidenedCase(rng, {5, 6, 0, false, false, false});  // k = 0: C = 0
  RunWidenedCase(rng, {5, 6, 0, true, true, true});     // (or unchanged)
  for (int i = 0; i < 8; ++i) {
    // Crosses the fp64 k block (512), the row block (192) and column groups.
    RunWidenedCase(
        rng,
        {1 + static_cast<std::int64_t>(rng() % 300), 1 + static_cast<std::int64_t>(rng() % 300),
         1 + static_cast<std::int64_t>(rng() % 1100), (rng() & 1) != 0, (rng() & 1) != 0, (rng() & 1) != 0});
  }
  RunWidenedCase(rng, {3, 4100, 9, false, true, true});  // past the column block (4096)
}

// GemmF64 on fp64 operands that are not fp32 values (rounded mode's
// intermediates): whatever kernel runs, each output is within
// γ_k·Σ|a·b| of the exact sum, and so within 2γ_k·Σ|a·b| of the sequential
// one (a stride, packing or transposition slip is off by a whole term).
TEST(GemmF64Test, Fp64OperandsStayWithinTheErrorBound) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xf64);
  std::normal_distribution<double> normal;
  for (const Case& cs : {Case{37, 29, 700, false, false, false}, Case{13, 50, 33, true, false, true},
                         Case{64, 17, 130, false, true, false}, Case{20, 40, 1100, true, true, true}}) {
    GemmArgs g{cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.ta ? cs.m : cs.k, cs.tb ? cs.k : cs.n, cs.n, cs.acc};
    std::vector<double> a(static_cast<std::size_t>(cs.m * cs.k)), b(static_cast<std::size_t>(cs.k * cs.n)),
        c0(static_cast<std::size_t>(cs.m * cs.n));
    for (auto* v : {&a, &b, &c0}) {
      for (double& x : *v) x = normal(rng) * std::ldexp(1.0, static_cast<int>(rng() % 9) - 4);
    }
    for (int threads : {1, 2}) {
      std::vector<double> got = c0;
      ExecConfig config;
      config.threads = threads;
      GemmF64(config, g, a.data(), b.data(), got.data());
      for (std::int64_t i = 0; i < cs.m; ++i) {
        for (std::int64_t j = 0; j < cs.n; ++j) {
          const double init = cs.acc ? c0[static_cast<std::size_t>(i * cs.n + j)] : 0.0;
          double s = init, abs_sum = std::fabs(init);
          for (std::int64_t p = 0; p < cs.k; ++p) {
            const double prod = a[static_cast<std::size_t>(cs.ta ? p * cs.m + i : i * cs.k + p)] *
                                b[static_cast<std::size_t>(cs.tb ? j * cs.k + p : p * cs.n + j)];
            s = s + prod;
            abs_sum += std::fabs(prod);
          }
          const double gamma = static_cast<double>(cs.k + 1) * 0x1p-53 * 1.01;
          ASSERT_LE(std::fabs(got[static_cast<std::size_t>(i * cs.n + j)] - s), 2.0 * gamma * abs_sum)
              << GemmF64CpuName(Simd::kAuto) << " " << i << "," << j << " threads " << threads;
        }
      }
    }
  }
}

bool SameBits(const std::vector<double>& x, const std::vector<double>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
}

// Rounded mode hands its fp32 tensors to the fp64 GEMM functions, which widen
// them as they read them: every result must have the bits of the same
// function on fp64 copies (the trainer's values, β, and the references a
// replay evaluates), for every kernel choice, thread count and layout.
TEST(GemmF64RoundedTest, Fp32OperandsGiveTheBitsOfTheirFp64Copies) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x32f64);
  std::vector<Case> cases;
  for (int i = 0; i < 12; ++i) {
    // Crosses the fp64 k block (512) and the row block.
    cases.push_back({1 + static_cast<std::int64_t>(rng() % 200), 1 + static_cast<std::int64_t>(rng() % 200),
                     1 + static_cast<std::int64_t>(rng() % 700), (rng() & 1) != 0, (rng() & 1) != 0,
                     (rng() & 1) != 0});
  }
  cases.push_back({5, 6, 0, false, true, true});
  for (const Case& cs : cases) {
    const auto [g, a, b, c0_f32] = MakeCase(rng, cs);
    const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    const std::vector<double> c0(c0_f32.begin(), c0_f32.end());
    const std::string what = "m=" + std::to_string(cs.m) + " n=" + std::to_string(cs.n) +
                             " k=" + std::to_string(cs.k) + " ta=" + std::to_string(cs.ta) +
                             " tb=" + std::to_string(cs.tb) + " acc=" + std::to_string(cs.acc);
    for (bool reference : {false, true}) {
      for (Simd simd : SupportedSimds()) {
        for (int threads : {1, 2}) {
          ExecConfig config;
          config.threads = threads;
          config.simd = simd;
          config.f64_reference = reference;
          std::vector<double> want = c0, got = c0;
          GemmF64Rounded(config, g, a64.data(), b64.data(), want.data());
          GemmF64Rounded(config, g, a.data(), b.data(), got.data());
          ASSERT_TRUE(SameBits(got, want))
              << what << " reference=" << reference << " simd=" << SimdName(simd) << " threads=" << threads;
        }
      }
    }
    std::vector<double> row_want(static_cast<std::size_t>(cs.m), 0.5),
        col_want(static_cast<std::size_t>(cs.n), 0.5);
    std::vector<double> row_got = row_want, col_got = col_want;
    GemmNormsSq(g, a64.data(), b64.data(), row_want.data(), col_want.data());
    GemmNormsSq(g, a.data(), b.data(), row_got.data(), col_got.data());
    ASSERT_TRUE(SameBits(row_got, row_want) && SameBits(col_got, col_want)) << what << " GemmNormsSq";
    GemmArgs dense = g;
    dense.ldc = g.n;
    dense.accumulate = false;
    std::vector<double> slack_want(static_cast<std::size_t>(cs.m * cs.n)), slack_got(slack_want.size());
    GemmSlackF64(dense, a64.data(), b64.data(), slack_want.data());
    GemmSlackF64(dense, a.data(), b.data(), slack_got.data());
    ASSERT_TRUE(SameBits(slack_got, slack_want)) << what << " GemmSlackF64";
    std::vector<std::size_t> positions;
    for (std::size_t e = 0; e < slack_want.size(); ++e) {
      if (rng() % 3 == 0) positions.push_back(e);
    }
    std::vector<double> ref_want(positions.size()), ref_got(positions.size());
    GemmReference(2, dense, a64.data(), b64.data())(positions, ref_want);
    GemmReference(2, dense, a.data(), b.data())(positions, ref_got);
    ASSERT_TRUE(SameBits(ref_got, ref_want)) << what << " GemmReference";
  }
}

// β's norms are sequential fp64 sums: each norm continues from its value,
// adding x² (rounded) in order of p. Operands with all 53 bits make every
// product and sum inexact, so another order (or a fused multiply-add) gives
// other bits; fp32 operands (exact squares, inexact sums) take the other
// vector path. Shapes cover lines and k not multiples of the 8 × 4 blocks of
// the vector path, both layouts of each operand and padded rows.
template <class In>
void CheckNormsSq(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-2.0, 2.0);
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 40),
                       n = 1 + static_cast<std::int64_t>(rng() % 40);
    const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % 70),
                       pad = static_cast<std::int64_t>(rng() % 3);
    const bool ta = (rng() & 1) != 0, tb = (rng() & 1) != 0;
    // op(A) is m × k, op(B) k × n; stored transposed where asked, rows padded.
    const std::int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
    const GemmArgs g{m, n, k, ta, tb, lda, ldb, n, false};
    std::vector<In> a(static_cast<std::size_t>((ta ? k : m) * lda)),
        b(static_cast<std::size_t>((tb ? n : k) * ldb));
    for (In& x : a) x = static_cast<In>(unit(rng));
    for (In& x : b) x = static_cast<In>(unit(rng));
    std::vector<double> row_got(static_cast<std::size_t>(m)), col_got(static_cast<std::size_t>(n));
    for (double& x : row_got) x = unit(rng) * unit(rng);
    for (double& x : col_got) x = unit(rng) * unit(rng);
    std::vector<double> row_want = row_got, col_want = col_got;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t p = 0; p < k; ++p) {
        const auto x = static_cast<double>(ta ? a[static_cast<std::size_t>(p * lda + i)]
                                              : a[static_cast<std::size_t>(i * lda + p)]);
        row_want[static_cast<std::size_t>(i)] = row_want[static_cast<std::size_t>(i)] + x * x;
      }
    }
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t p = 0; p < k; ++p) {
        const auto x = static_cast<double>(tb ? b[static_cast<std::size_t>(j * ldb + p)]
                                              : b[static_cast<std::size_t>(p * ldb + j)]);
        col_want[static_cast<std::size_t>(j)] = col_want[static_cast<std::size_t>(j)] + x * x;
      }
    }
    GemmNormsSq(g, a.data(), b.data(), row_got.data(), col_got.data());
    ASSERT_TRUE(SameBits(row_got, row_want))
        << "rows: m=" << m << " k=" << k << " ta=" << ta << " pad=" << pad << " fp" << 8 * sizeof(In);
    ASSERT_TRUE(SameBits(col_got, col_want))
        << "columns: n=" << n << " k=" << k << " tb=" << tb << " pad=" << pad << " fp" << 8 * sizeof(In);
  }
}

TEST(GemmNormsSqTest, IsTheSequentialSumOfSquares) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x6e0235);
  CheckNormsSq<double>(rng);
  CheckNormsSq<float>(rng);
}

TEST(GemmNativeTest, SgemmIsCloseToFp64) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xb1a5);
  for (const Case& cs : {Case{64, 80, 200, false, false, false}, Case{33, 17, 65, true, true, false},
                         Case{100, 3, 1000, false, true, false}}) {
    GemmArgs g{cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.ta ? cs.m : cs.k, cs.tb ? cs.k : cs.n, cs.n, false};
    std::vector<float> a(static_cast<std::size_t>(cs.m * cs.k)), b(static_cast<std::size_t>(cs.k * cs.n));
    std::normal_distribution<float> normal;
    for (auto& x : a) x = normal(rng);
    for (auto& x : b) x = normal(rng);
    std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    std::vector<double> c64(static_cast<std::size_t>(cs.m * cs.n));
    std::vector<float> c(static_cast<std::size_t>(cs.m * cs.n));
    for (int threads : {1, 2}) {
      ExecConfig config{Mode::kNative, threads, Simd::kAuto, {}};
      GemmNative(config, g, a.data(), b.data(), c.data());
      GemmF64(config, g, a64.data(), b64.data(), c64.data());
      // The classical bound |ĉ − c| ≤ γ_k Σ_p |a_ip||b_pj|, γ_k ≈ k·2^-24; we
      // allow k·2^-23 (plus the final fp32 rounding). A transposition or
      // stride mistake gives errors of the size of the sum itself.
      for (std::int64_t i = 0; i < cs.m; ++i) {
        for (std::int64_t j = 0; j < cs.n; ++j) {
          double s = 0, abs_sum = 0;
          for (std::int64_t p = 0; p < cs.k; ++p) {
            const double prod = a64[cs.ta ? p * cs.m + i : i * cs.k + p] * b64[cs.tb ? j * cs.k + p : p * cs.n + j];
            s += prod;
            abs_sum += std::fabs(prod);
          }
          const double tol = static_cast<double>(cs.k + 1) * 0x1p-23 * abs_sum;
          ASSERT_NEAR(c[i * cs.n + j], s, tol) << i << "," << j;
          ASSERT_NEAR(c64[i * cs.n + j], s, 1e-12 * abs_sum);
        }
      }
    }
  }
}

}  // namespace
}  // namespace vt::kernels
