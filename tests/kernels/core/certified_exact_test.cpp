// The arbiter's exact GEMM (ExecConfig::certified_exact_only; kernels/
// certified.cpp "the exact GEMM: exponent buckets") against the MPFR
// reference, on the inputs that stress its representation: values over the
// whole fp32 exponent range (every bucket, subnormals, overflow), more
// products per output than one fold admits, NaN/inf lines mixed with finite
// ones across pieces, and every layout and thread count. Whatever the path,
// the bits are CR(c0 + Σ a·b) — the same as the fp64 fast path gives.

#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "common/philox.h"
#include "kernels/certified.h"
#include "tests/kernels/certified_reference.h"

namespace vt::kernels {
namespace {

using certref::RefDot;

std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// A finite fp32 with a random sign, significand and biased exponent below
// `top` (0: subnormal; 232: |x| < 2^105, products reach every bucket);
// 1 in 16 zero.
float SpreadValue(PhiloxStream& s, std::uint32_t top) {
  const std::uint32_t w = s.NextU32();
  if ((w & 15u) == 0) return 0.0f;
  const std::uint32_t biased = s.NextU32() % top;
  const std::uint32_t bits = (w & 0x80000000u) | (biased << 23) | (s.NextU32() & 0x7fffffu);
  return std::bit_cast<float>(bits);
}

struct Gemm {
  std::int64_t m, n, k;
  std::vector<float> a, b;  // row-major m×k and k×n
};

// Operands below 2^63 keep most sums finite; a quarter of the seeds use the
// whole range (overflow to ±inf).
Gemm SpreadGemm(std::int64_t m, std::int64_t n, std::int64_t k, std::uint32_t seed) {
  const std::uint32_t top = seed % 4 == 1 ? 232u : 190u;
  PhiloxStream s(31, 0, seed);
  Gemm x{m, n, k, std::vector<float>(static_cast<std::size_t>(m * k)), std::vector<float>(static_cast<std::size_t>(k * n))};
  for (float& v : x.a) v = SpreadValue(s, top);
  for (float& v : x.b) v = SpreadValue(s, top);
  return x;
}

float RefAt(const Gemm& x, std::int64_t i, std::int64_t j, float c0) {
  std::vector<float> row(static_cast<std::size_t>(x.k)), col(static_cast<std::size_t>(x.k));
  for (std::int64_t p = 0; p < x.k; ++p) {
    row[static_cast<std::size_t>(p)] = x.a[static_cast<std::size_t>(i * x.k + p)];
    col[static_cast<std::size_t>(p)] = x.b[static_cast<std::size_t>(p * x.n + j)];
  }
  return RefDot(row, col, c0);
}

// C = CR(c0 + A·B) with A, B stored transposed as asked.
std::vector<float> RunGemm(const Gemm& x, bool ta, bool tb, int threads, bool exact_only, const std::vector<float>* c0) {
  std::vector<float> a = x.a, b = x.b;
  if (ta)
    for (std::int64_t i = 0; i < x.m; ++i)
      for (std::int64_t p = 0; p < x.k; ++p) a[static_cast<std::size_t>(p * x.m + i)] = x.a[static_cast<std::size_t>(i * x.k + p)];
  if (tb)
    for (std::int64_t p = 0; p < x.k; ++p)
      for (std::int64_t j = 0; j < x.n; ++j) b[static_cast<std::size_t>(j * x.k + p)] = x.b[static_cast<std::size_t>(p * x.n + j)];
  GemmArgs g;
  g.m = x.m, g.n = x.n, g.k = x.k, g.trans_a = ta, g.trans_b = tb;
  g.lda = ta ? x.m : x.k;
  g.ldb = tb ? x.k : x.n;
  g.ldc = x.n;
  g.accumulate = c0 != nullptr;
  std::vector<float> c = c0 != nullptr ? *c0 : std::vector<float>(static_cast<std::size_t>(x.m * x.n), 3.0f);
  ExecConfig config;
  config.mode = Mode::kCertified;
  config.threads = threads;
  config.certified_exact_only = exact_only;
  CertifiedGemm(config, g, a.data(), b.data(), c.data());
  return c;
}

std::size_t Mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t bad = 0;
  for (std::size_t e = 0; e < got.size(); ++e) {
    if (Bits(got[e]) == Bits(want[e])) continue;
    if (bad++ < 5) ADD_FAILURE() << "element " << e << ": got 0x" << std::hex << Bits(got[e]) << " want 0x" << Bits(want[e]);
  }
  return bad;
}

// Property: random shapes, layouts, thread counts and c0 over the whole
// exponent range — the exact path equals MPFR and the fast path, bit for bit.
TEST(CertifiedExactGemm, WholeExponentRangeEqualsMpfrAndTheFastPath) {
  PhiloxStream pick(5, 0, 0);
  std::size_t outputs = 0, infinite = 0, subnormal = 0, finite = 0;
  for (std::uint32_t seed = 1; seed <= 24; ++seed) {
    const std::int64_t m = 1 + pick.NextU32() % 7, n = 1 + pick.NextU32() % 7, k = 1 + pick.NextU32() % 300;
    const bool ta = (pick.NextU32() & 1u) != 0, tb = (pick.NextU32() & 1u) != 0;
    const int threads = 1 + static_cast<int>(pick.NextU32() % 3);
    const Gemm x = SpreadGemm(m, n, k, seed);
    std::vector<float> c0;
    const bool accumulate = (seed % 3) == 0;
    if (accumulate) {
      PhiloxStream s(32, 0, seed);
      for (std::int64_t e = 0; e < m * n; ++e) c0.push_back(SpreadValue(s, 190u));
    }
    std::vector<float> want(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        want[static_cast<std::size_t>(i * n + j)] = RefAt(x, i, j, accumulate ? c0[static_cast<std::size_t>(i * n + j)] : 0.0f);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " " << m << "x" << k << "x" << n << " ta " << ta << " tb " << tb);
    const std::vector<float>* c0p = accumulate ? &c0 : nullptr;
    EXPECT_EQ(Mismatches(RunGemm(x, ta, tb, threads, true, c0p), want), 0u) << "exact only";
    EXPECT_EQ(Mismatches(RunGemm(x, ta, tb, threads, false, c0p), want), 0u) << "fast path";
    for (float v : want) {
      ++outputs;
      infinite += std::isinf(v) ? 1 : 0;
      finite += std::isfinite(v) && v != 0.0f ? 1 : 0;
      subnormal += std::fpclassify(v) == FP_SUBNORMAL ? 1 : 0;
    }
  }
  // The inputs must reach the range's ends, or the test proves little.
  EXPECT_GT(infinite, 0u) << "of " << outputs;
  EXPECT_GT(finite, outputs / 2);
  EXPECT_GT(outputs, 200u);
  std::printf("%zu outputs, %zu finite nonzero, %zu infinite, %zu subnormal\n", outputs, finite, infinite, subnormal);
}

// Many more same-sign maximal products at one exponent than one fold admits
// (2^12 terms of < 2^51): a bucket would pass 2^63 without the folds. The
// exponents sum to s ≡ 3 (mod 4), the largest shift inside a bucket, so each
// term is ≈ 2^51 and even a fold every 2^13 terms would overflow. Plus a
// tiny term that decides the rounding.
TEST(CertifiedExactGemm, FoldsBeforeABucketCanOverflow) {
  const std::int64_t k = 3 * (std::int64_t{1} << 15) + 7;
  const float big = std::bit_cast<float>(0x4affffffu);   // (2^24 − 1): the largest significand, e = 148
  const float big8 = std::bit_cast<float>(0x4c7fffffu);  // the same significand, e = 151: s = 299
  Gemm x{2, 1, k, std::vector<float>(static_cast<std::size_t>(2 * k), big),
         std::vector<float>(static_cast<std::size_t>(k), big8)};
  x.a[static_cast<std::size_t>(k + 5)] = -big;                // row 1: one product flips sign
  x.b[static_cast<std::size_t>(k - 1)] = 0x1p-120f;           // and one tiny term
  const std::vector<float> want = {RefAt(x, 0, 0, 0.0f), RefAt(x, 1, 0, 0.0f)};
  EXPECT_EQ(Mismatches(RunGemm(x, false, false, 1, true, nullptr), want), 0u);
  EXPECT_EQ(Mismatches(RunGemm(x, true, true, 2, true, nullptr), want), 0u);
  EXPECT_EQ(Mismatches(RunGemm(x, false, false, 1, false, nullptr), want), 0u);
}

// Two pieces (one exact sum over both): a NaN/inf line in one piece, finite
// lines in the other. The special lines follow the IEEE rules over the whole
// sum, the finite outputs are exact.
TEST(CertifiedExactGemm, PiecesMixSpecialAndFiniteLines) {
  const float inf = std::numeric_limits<float>::infinity();
  const Gemm p0 = SpreadGemm(3, 2, 40, 91), p1 = SpreadGemm(3, 2, 25, 92);
  std::vector<float> a1 = p1.a;
  a1[0] = inf;            // row 0 of piece 1: +inf · b
  a1[25 + 3] = -inf;      // row 1: −inf · b
  std::vector<float> b1 = p1.b;
  b1[0] = 1.0f, b1[1] = -1.0f;  // row 0: +inf·1 and +inf·(−1)
  for (std::int64_t j = 0; j < 2; ++j) b1[static_cast<std::size_t>(3 * 2 + j)] = j == 0 ? 0.0f : 2.0f;  // col 0 meets −inf with 0
  CertGemmPiece pieces[2];
  pieces[0].g = GemmArgs{};
  for (int q = 0; q < 2; ++q) {
    const Gemm& x = q == 0 ? p0 : p1;
    pieces[q].g.m = 3, pieces[q].g.n = 2, pieces[q].g.k = x.k, pieces[q].g.lda = x.k, pieces[q].g.ldb = 2, pieces[q].g.ldc = 2;
  }
  pieces[0].a = p0.a.data(), pieces[0].b = p0.b.data();
  pieces[1].a = a1.data(), pieces[1].b = b1.data();
  // The reference: one dot over the concatenated K.
  Gemm cat{3, 2, p0.k + p1.k, {}, {}};
  for (std::int64_t i = 0; i < 3; ++i) {
    cat.a.insert(cat.a.end(), p0.a.begin() + i * p0.k, p0.a.begin() + (i + 1) * p0.k);
    cat.a.insert(cat.a.end(), a1.begin() + i * p1.k, a1.begin() + (i + 1) * p1.k);
  }
  cat.b = p0.b;
  cat.b.insert(cat.b.end(), b1.begin(), b1.end());
  std::vector<float> want(6);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) want[static_cast<std::size_t>(i * 2 + j)] = RefAt(cat, i, j, 0.0f);
  EXPECT_EQ(want[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(want[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(want[2])) << "row 1, column 0: −inf·0";
  EXPECT_TRUE(std::isfinite(want[4]) && std::isfinite(want[5]));
  for (bool exact_only : {true, false}) {
    for (int threads : {1, 3}) {
      ExecConfig config;
      config.mode = Mode::kCertified;
      config.threads = threads;
      config.certified_exact_only = exact_only;
      std::vector<float> c(6, 0.0f);
      CertifiedGemmPieces(config, 3, 2, pieces, c.data(), 2, false);
      EXPECT_EQ(Mismatches(c, want), 0u) << "exact only " << exact_only << ", threads " << threads;
    }
  }
}

}  // namespace
}  // namespace vt::kernels
