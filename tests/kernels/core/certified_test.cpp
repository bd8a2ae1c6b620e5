// Certified GEMM and reductions (kernels/certified.h) against an independent
// arbitrary-precision reference (MPFR): every output must equal the correctly
// rounded exact value bit for bit — on random inputs and on inputs built to
// defeat the fast path (exact ties, catastrophic cancellation, huge K,
// subnormal products, overflow, NaN/inf), where the slow path must engage.
// The test-only shuffled order (random permutation of K, random split-K),
// every thread count and (where present) a CUDA device's cuBLAS dgemm as the
// fast path must give the same bits.

#include <gtest/gtest.h>
#include <mpfr.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "common/philox.h"
#include "kernels/certified.h"
#include "kernels/certified_dot.h"
#include "kernels/device.h"
#include "tests/kernels/certified_reference.h"

namespace vt::kernels {
namespace {

using certref::Big;
using certref::RefDot;
using certref::ToFloat;

float RefReduce(const std::vector<float>& a, const std::vector<float>* b, CertFinish finish) {
  Big s;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (b == nullptr) {
      s.Add(a[i]);
    } else {
      s.AddProduct(a[i], (*b)[i]);
    }
  }
  if (mpfr_zero_p(s.v())) mpfr_set_zero(s.v(), 1);
  if (finish == CertFinish::kDivide) mpfr_div_ui(s.v(), s.v(), static_cast<unsigned long>(a.size()), MPFR_RNDN);
  if (finish == CertFinish::kSqrt) mpfr_sqrt(s.v(), s.v(), MPFR_RNDN);
  // Division and sqrt at 1200 bits: the true value is at least ~2^-600
  // relative away from any fp32 rounding boundary unless exactly on it, so
  // this rounding cannot move it across one.
  return ToFloat(s.v());
}

std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// ---- inputs -------------------------------------------------------------------------

// Full 24-bit significands at magnitudes 2^-8..2 of either sign.
std::vector<float> ZeroMean(std::uint32_t tensor, std::int64_t count, int spread = 9) {
  PhiloxStream s(77, 0, tensor);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) {
    const std::uint32_t w = s.NextU32();
    const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
    x = std::ldexp((w >> 31) != 0 ? -frac : frac, -static_cast<int>((w >> 23) % static_cast<std::uint32_t>(spread)));
  }
  return v;
}

struct Matrices {
  std::int64_t m, n, k;
  std::vector<float> a, b;  // row-major m×k and k×n
};

Matrices Random(std::int64_t m, std::int64_t n, std::int64_t k, std::uint32_t seed) {
  return {m, n, k, ZeroMean(seed, m * k), ZeroMean(seed + 1, k * n)};
}

// cancel24 (kernels_crosscore_test's inputs): a 2^24·u term that cancels
// inside every dot product, so the fp64 partial sums carry the large term
// and the result is tiny relative to it.
Matrices Cancel24(std::int64_t m, std::int64_t n, std::int64_t k) {
  Matrices x = Random(m, n, k, 300);
  for (std::int64_t i = 0; i < m; ++i) {
    x.a[static_cast<std::size_t>(i * k)] = std::ldexp(x.a[static_cast<std::size_t>(i * k)], 24);
    x.a[static_cast<std::size_t>(i * k + k - 1)] = -x.a[static_cast<std::size_t>(i * k)];
  }
  for (std::int64_t j = 0; j < n; ++j) x.b[static_cast<std::size_t>((k - 1) * n + j)] = x.b[static_cast<std::size_t>(j)];
  return x;
}

// Reference C = CR(c0 + A·B) for every element.
std::vector<float> RefGemm(const Matrices& x, const std::vector<float>* c0) {
  std::vector<float> c(static_cast<std::size_t>(x.m * x.n));
  std::vector<float> row(static_cast<std::size_t>(x.k)), col(static_cast<std::size_t>(x.k));
  for (std::int64_t i = 0; i < x.m; ++i) {
    for (std::int64_t j = 0; j < x.n; ++j) {
      for (std::int64_t p = 0; p < x.k; ++p) {
        row[static_cast<std::size_t>(p)] = x.a[static_cast<std::size_t>(i * x.k + p)];
        col[static_cast<std::size_t>(p)] = x.b[static_cast<std::size_t>(p * x.n + j)];
      }
      c[static_cast<std::size_t>(i * x.n + j)] =
          RefDot(row, col, c0 == nullptr ? 0.0f : (*c0)[static_cast<std::size_t>(i * x.n + j)]);
    }
  }
  return c;
}

// The certified GEMM, with the operands stored as asked (transposes are
// built here so the same matrices are checked in every layout).
std::vector<float> Certified(const Matrices& x, bool ta, bool tb, int threads, const std::vector<float>* c0,
                             bool exact_only = false, Device device = Device::kCpu) {
  std::vector<float> a = x.a, b = x.b;
  if (ta) {
    for (std::int64_t i = 0; i < x.m; ++i)
      for (std::int64_t p = 0; p < x.k; ++p) a[static_cast<std::size_t>(p * x.m + i)] = x.a[static_cast<std::size_t>(i * x.k + p)];
  }
  if (tb) {
    for (std::int64_t p = 0; p < x.k; ++p)
      for (std::int64_t j = 0; j < x.n; ++j) b[static_cast<std::size_t>(j * x.k + p)] = x.b[static_cast<std::size_t>(p * x.n + j)];
  }
  GemmArgs g;
  g.m = x.m, g.n = x.n, g.k = x.k;
  g.trans_a = ta, g.trans_b = tb;
  g.lda = ta ? x.m : x.k;
  g.ldb = tb ? x.k : x.n;
  g.ldc = x.n;
  g.accumulate = c0 != nullptr;
  std::vector<float> c = c0 != nullptr ? *c0 : std::vector<float>(static_cast<std::size_t>(x.m * x.n), 7.0f);
  ExecConfig config;
  config.threads = threads;
  config.certified_exact_only = exact_only;
  config.device = device;
  CertifiedGemm(config, g, a.data(), b.data(), c.data());
  return c;
}

// Number of elements whose bits differ.
std::size_t Mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (Bits(got[i]) != Bits(want[i])) {
      if (bad < 5) ADD_FAILURE() << "element " << i << ": got " << got[i] << " (0x" << std::hex << Bits(got[i])
                                 << ") want " << want[i] << " (0x" << Bits(want[i]) << std::dec << ")";
      ++bad;
    }
  }
  return bad;
}

// Runs `x` in every layout, thread count and the shuffled order; all must
// equal the MPFR reference. Returns the slow-path outputs of the first run:
// those the fast path left open, and those of them summed exactly.
struct SlowPaths {
  std::uint64_t slow = 0, exact = 0;
};
SlowPaths CheckGemmEverywhere(const Matrices& x, const std::vector<float>* c0 = nullptr) {
  const std::vector<float> want = RefGemm(x, c0);
  const CertCounts before = CertifiedCounts();
  EXPECT_EQ(Mismatches(Certified(x, false, false, 1, c0), want), 0u);
  const CertCounts after = CertifiedCounts();
  constexpr int kGemm = static_cast<int>(CertKind::kGemm);
  const SlowPaths slow{after.slow[kGemm] - before.slow[kGemm], after.exact[kGemm] - before.exact[kGemm]};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int threads : {2, 3}) EXPECT_EQ(Mismatches(Certified(x, ta, tb, threads, c0), want), 0u) << ta << tb << threads;
    }
  }
  // The arbiter's exact-only path: no BLAS, the same bits.
  if (x.k <= 4096) {
    EXPECT_EQ(Mismatches(Certified(x, true, false, 2, c0, true), want), 0u) << "exact only";
  }
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SetF64ShuffleSeedForTesting(seed);
    EXPECT_EQ(Mismatches(Certified(x, seed == 2, seed == 3, 2, c0), want), 0u) << "shuffled seed " << seed;
  }
  SetF64ShuffleSeedForTesting(0);
  // The fp64 fast path on a CUDA device (cuBLAS dgemm, its own order and
  // blocking), where one is present; plain and shuffled split-K.
  if (DeviceReady(Device::kCuda).ok()) {
    const std::uint64_t fallbacks = DeviceFallbacks();
    for (bool ta : {false, true}) {
      EXPECT_EQ(Mismatches(Certified(x, ta, !ta, 2, c0, false, Device::kCuda), want), 0u) << "cuda " << ta;
    }
    SetF64ShuffleSeedForTesting(4);
    EXPECT_EQ(Mismatches(Certified(x, false, false, 2, c0, false, Device::kCuda), want), 0u) << "cuda shuffled";
    SetF64ShuffleSeedForTesting(0);
    EXPECT_EQ(DeviceFallbacks(), fallbacks) << "a GEMM fell back to the CPU";
  }
  return slow;
}

// ---- GEMM ----------------------------------------------------------------------------

TEST(CertifiedGemm, RandomInputsAreCorrectlyRounded) {
  for (auto [m, n, k] : {std::tuple<int, int, int>{1, 1, 1}, {3, 5, 7}, {17, 9, 64}, {40, 33, 300}}) {
    CheckGemmEverywhere(Random(m, n, k, static_cast<std::uint32_t>(m * 1000 + k)));
  }
}

TEST(CertifiedGemm, AccumulateAddsTheInitialValueExactly) {
  const Matrices x = Random(9, 11, 50, 41);
  std::vector<float> c0 = ZeroMean(99, 9 * 11, 30);
  // Also c0 values that cancel the product exactly up to a rounding boundary.
  const std::vector<float> plain = RefGemm(x, nullptr);
  for (std::size_t i = 0; i < c0.size(); i += 3) c0[i] = -plain[i];
  CheckGemmEverywhere(x, &c0);
}

TEST(CertifiedGemm, Cancel24TakesTheSlowPathAndStaysExact) {
  const std::uint64_t slow = CheckGemmEverywhere(Cancel24(24, 20, 64)).slow;
  std::printf("cancel24 24x20x64: %llu of 480 outputs took the slow path\n", static_cast<unsigned long long>(slow));
  EXPECT_GT(slow, 0u);
}

TEST(CertifiedGemm, ExactTiesRoundToEven) {
  // Each output is exactly the midpoint between two fp32 neighbours: no
  // bound decides it, not even the compensated second look's. With few
  // bits in play the fp64 sum is provably exact and rounds directly
  // (SumIsExact); with a cancelling pair 2^60 − 2^60 in the sum it is not,
  // and the exact path must round to even.
  for (bool cancelling_pair : {false, true}) {
    Matrices x{4, 1, 5, {}, {}};
    const float big[4] = {1.0f, 1.0f + 0x1p-23f, -3.0f, 0x1p100f};
    for (int i = 0; i < 4; ++i) {
      const float ulp = std::nextafter(std::fabs(big[i]), INFINITY) - std::fabs(big[i]);
      const float half = std::copysign(ulp / 2, big[i]);
      const float pair = cancelling_pair && i < 3 ? 0x1p60f : 0.0f;
      x.a.insert(x.a.end(), {big[i], half * 0.5f, pair, half * 0.5f, -pair});  // big + half/2 + half/2
    }
    x.b = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    const std::vector<float> want = RefGemm(x, nullptr);
    EXPECT_EQ(Bits(want[0]), Bits(1.0f));             // 1 + 2^-24: to even (1)
    EXPECT_EQ(Bits(want[1]), Bits(1.0f + 0x1p-22f));  // odd mantissa: up
    const SlowPaths slow = CheckGemmEverywhere(x);
    EXPECT_EQ(slow.slow, 4u);
    EXPECT_EQ(slow.exact, cancelling_pair ? 3u : 0u);
  }
}

TEST(CertifiedGemm, HugeK) {
  const std::int64_t k = std::int64_t{1} << 20;
  Matrices x = Random(2, 2, k, 555);
  const std::uint64_t slow = CheckGemmEverywhere(x).slow;
  std::printf("K = 2^20: %llu slow outputs\n", static_cast<unsigned long long>(slow));
  // Row 1 of A: its first half, then the same values negated; column 1 of
  // B: all ones. That output is exactly 0 (every term cancels a twin).
  Matrices y = x;
  for (std::int64_t p = 0; p < k; ++p) {
    const float v = x.a[static_cast<std::size_t>(p % (k / 2))];
    y.a[static_cast<std::size_t>(k + p)] = p < k / 2 ? v : -v;
    y.b[static_cast<std::size_t>(p * 2 + 1)] = 1.0f;
  }
  // Row 1 · column 1 is now exactly 0 (every term cancels a twin): +0.
  const std::vector<float> want = RefGemm(y, nullptr);
  EXPECT_EQ(Bits(want[3]), 0u);
  EXPECT_GT(CheckGemmEverywhere(y).slow, 0u);
}

TEST(CertifiedGemm, SubnormalProducts) {
  // Products near 2^-150 (below the smallest fp32 subnormal's half): sums
  // land on the subnormal grid or round to a signed zero.
  Matrices x = Random(6, 7, 40, 808);
  for (auto& v : x.a) v = std::ldexp(v, -70);
  for (auto& v : x.b) v = std::ldexp(v, -76);
  const std::uint64_t slow = CheckGemmEverywhere(x).slow;
  const std::vector<float> want = RefGemm(x, nullptr);
  std::size_t subnormal = 0, zero = 0;
  for (float v : want) {
    subnormal += std::fpclassify(v) == FP_SUBNORMAL ? 1 : 0;
    zero += v == 0.0f ? 1 : 0;
  }
  std::printf("subnormal products: %zu subnormal, %zu zero outputs of 42, %llu slow\n", subnormal, zero,
              static_cast<unsigned long long>(slow));
  EXPECT_GT(subnormal + zero, 20u);
  // Exactly subnormal operands: a·b with a = 2^-149 (the smallest subnormal).
  Matrices t{1, 1, 2, {0x1p-149f, 0x1p-149f}, {0x1p23f, 0x1p-1f}};  // 2^-126 + 2^-150: a tie below 2^-126's grid
  CheckGemmEverywhere(t);
}

TEST(CertifiedGemm, OverflowRoundsLikeIeee) {
  const float max = std::numeric_limits<float>::max();
  const float half_ulp_max = 0x1p103f;  // ulp(FLT_MAX) = 2^104
  // FLT_MAX + 2^103 exactly: the tie between FLT_MAX (odd) and 2^128 → inf;
  // FLT_MAX + 2^103 − tiny → FLT_MAX; a sum past the range that cancels back
  // inside it → finite (the fp64 partial sums never overflow).
  Matrices x{4, 1, 3, {max, half_ulp_max, 0.0f, max, half_ulp_max, -0x1p-30f, max, max, -max, -max, -max, -0x1p103f},
             {1.0f, 1.0f, 1.0f}};
  const std::vector<float> want = RefGemm(x, nullptr);
  EXPECT_EQ(want[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(want[1], max);
  EXPECT_EQ(want[2], max);
  EXPECT_EQ(want[3], -std::numeric_limits<float>::infinity());
  CheckGemmEverywhere(x);
  // Large random products overflowing in most outputs.
  Matrices y = Random(5, 5, 30, 12);
  for (auto& v : y.a) v = std::ldexp(v, 64);
  for (auto& v : y.b) v = std::ldexp(v, 62);
  CheckGemmEverywhere(y);
}

TEST(CertifiedGemm, NanAndInfinityFollowIeee) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  Matrices x{5, 1, 2, {inf, 1.0f, inf, -inf, 0.0f, inf, nan, 1.0f, -inf, 2.0f}, {1.0f, 1.0f}};
  const std::vector<float> want = {inf, std::bit_cast<float>(0x7fc00000u), inf, std::bit_cast<float>(0x7fc00000u),
                                   -inf};
  // row 2: 0·1 + inf·1 = inf; row 3: NaN; row 1: inf − inf = NaN.
  EXPECT_EQ(Mismatches(RefGemm(x, nullptr), want), 0u);
  CheckGemmEverywhere(x);
  Matrices z{1, 1, 2, {0.0f, 1.0f}, {inf, 1.0f}};  // 0·inf = NaN
  EXPECT_TRUE(std::isnan(Certified(z, false, false, 1, nullptr)[0]));
  EXPECT_EQ(Bits(Certified(z, false, false, 1, nullptr)[0]), 0x7fc00000u);
}

TEST(CertifiedGemm, ExactZeroIsPositiveAndTinyKeepsItsSign) {
  Matrices x{3, 1, 2, {-0.0f, -0.0f, 1.0f, -1.0f, 0x1p-100f, -0x1p-100f}, {1.0f, 1.0f}};
  x.b = {1.0f, 1.0f};
  std::vector<float> got = Certified(x, false, false, 1, nullptr);
  EXPECT_EQ(Bits(got[0]), 0u);  // −0·1 + −0·1 = exact zero: +0
  EXPECT_EQ(Bits(got[1]), 0u);
  // −2^-160: nonzero, rounds to −0.
  Matrices t{1, 1, 2, {0x1p-80f, -0x1p-80f}, {0x1p-80f, 0x1p-80f * 1.5f}};
  EXPECT_EQ(Bits(Certified(t, false, false, 1, nullptr)[0]), 0x80000000u);
  CheckGemmEverywhere(t);
}

TEST(CertifiedGemm, PiecesAreOneExactSum) {
  // Two pieces whose sum is a tie that neither piece rounded alone would give.
  const Matrices x = Random(5, 6, 40, 909);
  Matrices whole = x;
  whole.k = 80;
  whole.a.clear();
  const Matrices y = Random(5, 6, 40, 919);
  for (std::int64_t i = 0; i < 5; ++i) {
    whole.a.insert(whole.a.end(), x.a.begin() + i * 40, x.a.begin() + (i + 1) * 40);
    whole.a.insert(whole.a.end(), y.a.begin() + i * 40, y.a.begin() + (i + 1) * 40);
  }
  whole.b = x.b;
  whole.b.insert(whole.b.end(), y.b.begin(), y.b.end());
  const std::vector<float> want = RefGemm(whole, nullptr);
  GemmArgs g;
  g.m = 5, g.n = 6, g.k = 40, g.lda = 40, g.ldb = 6, g.ldc = 6;
  const CertGemmPiece pieces[2] = {{g, x.a.data(), x.b.data()}, {g, y.a.data(), y.b.data()}};
  std::vector<float> c(30, 0.0f);
  CertifiedGemmPieces(ExecConfig{}, 5, 6, pieces, c.data(), 6, false);
  EXPECT_EQ(Mismatches(c, want), 0u);
}

// ---- reductions ----------------------------------------------------------------------

float Run(CertFinish finish, const std::vector<float>& a, const std::vector<float>* b) {
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  auto ga = [&](std::int64_t i) { return a[static_cast<std::size_t>(i)]; };
  if (b == nullptr) {
    return finish == CertFinish::kNone ? CertifiedSum(n, ga) : CertifiedMean(n, ga);
  }
  auto gb = [&](std::int64_t i) { return (*b)[static_cast<std::size_t>(i)]; };
  if (finish == CertFinish::kSqrt) return CertifiedNorm(n, ga);
  return finish == CertFinish::kNone ? CertifiedDot(n, ga, gb) : CertifiedMeanDot(n, ga, gb);
}

// Every reduction kind of `a` (and a·b) equals the reference, in the default
// and in shuffled orders.
void CheckReductions(const std::vector<float>& a, const std::vector<float>& b) {
  struct Case {
    CertFinish finish;
    bool products;
    bool self;
  };
  for (const Case c : {Case{CertFinish::kNone, false, false}, Case{CertFinish::kDivide, false, false},
                       Case{CertFinish::kNone, true, false}, Case{CertFinish::kDivide, true, false},
                       Case{CertFinish::kSqrt, true, true}}) {
    const std::vector<float>* second = c.products ? (c.self ? &a : &b) : nullptr;
    const float want = RefReduce(a, second, c.finish);
    for (std::uint64_t seed : {0u, 5u, 6u}) {
      SetF64ShuffleSeedForTesting(seed);
      const float got = Run(c.finish, a, second);
      EXPECT_EQ(Bits(got), Bits(want)) << "finish " << static_cast<int>(c.finish) << " products " << c.products
                                       << " seed " << seed << ": got " << got << " want " << want;
    }
    SetF64ShuffleSeedForTesting(0);
  }
}

// ---- the compensated second look (kernels/certified_dot.h) --------------------------

// Terms (as products a_p·1) built to make the compensated sum's own error
// large: in every lane a huge term that the last sixteen cancel, so each
// step's rounding error carries the low bits of terms 2^60–2^160 times
// smaller, and those errors' fp64 sum rounds in turn (the N·u²·Σ|t| part of
// the bound, well above u·|value|). Other families: plain random values,
// one magnitude; every fp32 exponent; and sums that cancel to near zero.
std::vector<float> DotTerms(int family, std::int64_t k, PhiloxStream& s) {
  std::vector<float> a(static_cast<std::size_t>(k));
  const auto frac = [&] {
    const std::uint32_t w = s.NextU32();
    return (1.0f + static_cast<float>(w & 0x7fffff) * 0x1p-23f) * ((w >> 31) != 0 ? -1.0f : 1.0f);
  };
  for (std::int64_t p = 0; p < k; ++p) {
    const float f = frac();
    const int r = static_cast<int>(s.NextU32() % 1000u);
    switch (family) {
      case 0:
        a[static_cast<std::size_t>(p)] = std::ldexp(f, r % 9 - 8);
        break;
      case 1:
        a[static_cast<std::size_t>(p)] = std::ldexp(f, r % 250 - 125);
        break;
      case 2:
        a[static_cast<std::size_t>(p)] = std::ldexp(f, r % 160 - 120);
        break;
      default:
        a[static_cast<std::size_t>(p)] = std::ldexp(f, r % 20);
        break;
    }
  }
  const std::int64_t lanes = CompensatedDot::kLanes;
  if (family == 2 && k >= 2 * lanes) {
    for (std::int64_t l = 0; l < lanes; ++l) {
      a[static_cast<std::size_t>(l)] = std::ldexp(frac(), 100);
      a[static_cast<std::size_t>(k - lanes + l)] = -a[static_cast<std::size_t>(l)];
    }
  }
  if (family == 3) {  // the mirror image of the first half, but for a few terms
    for (std::int64_t p = k / 2; p < k; ++p)
      a[static_cast<std::size_t>(p)] = -a[static_cast<std::size_t>(p - k / 2)];
    for (int t = 0; t < 3; ++t) a[s.NextU32() % static_cast<std::uint32_t>(k)] = std::ldexp(frac(), -30);
  }
  return a;
}

// Whether x (exact, at certref's precision) lies halfway between two fp32
// neighbours (25 significant bits suffice, 24 do not): an exact tie.
bool IsFloatMidpoint(mpfr_t x) {
  if (mpfr_zero_p(x)) return false;
  mpfr_t r;
  mpfr_init2(r, 25);
  const bool in25 = mpfr_set(r, x, MPFR_RNDN) == 0;
  mpfr_set_prec(r, 24);
  const bool in24 = mpfr_set(r, x, MPFR_RNDN) == 0;
  mpfr_clear(r);
  return in25 && !in24;
}

TEST(CompensatedDot, TheBoundEnclosesTheExactSumAndDecidesAllButTies) {
  PhiloxStream s(2026, 11, 30);
  const int kTrials = 1200;
  int decided[4] = {}, ties[4] = {}, trials[4] = {};
  double worst_ratio = 0;  // |value − exact| / bound, over all trials
  for (int trial = 0; trial < kTrials; ++trial) {
    const int family = trial % 4;
    const std::int64_t k = CompensatedDot::kLanes * (2 + static_cast<std::int64_t>(s.NextU32() % 200u));
    const std::vector<float> a = DotTerms(family, k, s);
    const std::vector<float> ones(static_cast<std::size_t>(k), 1.0f);
    const float c0 = trial % 3 == 0 ? std::ldexp(1.0f + static_cast<float>(trial) * 0x1p-12f, -3) : 0.0f;
    // In pieces, alternately contiguous and strided (a stored twice apart).
    std::vector<float> spread(static_cast<std::size_t>(2 * k));
    for (std::int64_t p = 0; p < k; ++p)
      spread[static_cast<std::size_t>(2 * p)] = a[static_cast<std::size_t>(p)];
    CompensatedDot dot(c0);
    std::int64_t p0 = 0;
    for (int piece = 0; p0 < k; ++piece) {
      const std::int64_t len = std::min<std::int64_t>(k - p0, 1 + s.NextU32() % 300u);
      if (piece % 2 == 0) {
        dot.Add(a.data() + p0, 1, ones.data(), 1, len);
      } else {
        dot.Add(spread.data() + 2 * p0, 2, ones.data(), 1, len);
      }
      p0 += len;
    }
    const CompensatedDot::Result r = dot.Finish();
    ASSERT_TRUE(std::isfinite(r.value) && std::isfinite(r.bound) && r.bound >= 0.0) << trial;
    // |exact − value|, exactly (1200 bits), against the bound.
    certref::Big exact, error;
    exact.Add(c0);
    for (float v : a) exact.Add(v);
    mpfr_sub_d(error.v(), exact.v(), r.value, MPFR_RNDN);
    mpfr_abs(error.v(), error.v(), MPFR_RNDN);
    ASSERT_LE(mpfr_cmp_d(error.v(), r.bound), 0)
        << "trial " << trial << " family " << family
        << ": |exact - value| = " << mpfr_get_d(error.v(), MPFR_RNDU) << " > bound " << r.bound;
    if (r.bound > 0) worst_ratio = std::max(worst_ratio, mpfr_get_d(error.v(), MPFR_RNDU) / r.bound);
    ++trials[family];
    float out = 0.0f;
    if (CertifyApprox(r.value, r.bound, &out)) {
      ++decided[family];
      ASSERT_EQ(Bits(out), Bits(certref::ToFloat(exact.v()))) << trial;
    } else if (IsFloatMidpoint(exact.v())) {
      ++ties[family];
    }
  }
  std::printf(
      "compensated dot: decided %d/%d random (%d ties), %d/%d every exponent (%d ties), %d/%d anchored, "
      "%d/%d cancelling; worst |error| / bound %.3f\n",
      decided[0], trials[0], ties[0], decided[1], trials[1], ties[1], decided[2], trials[2], decided[3],
      trials[3], worst_ratio);
  // The bound is what a certificate needs: only values within ~2^-52 of an
  // fp32 rounding boundary stay open, and random sums are not, unless they
  // are exact ties. (The anchored sums' condition number, 2^60 and more, is
  // past what one compensation step resolves: the exact path decides those.)
  EXPECT_EQ(decided[0] + ties[0], trials[0]);
  EXPECT_EQ(decided[1] + ties[1], trials[1]);
  EXPECT_GE(decided[3], trials[3] * 9 / 10);
}

TEST(CompensatedDot, NonFiniteTermsDecideNothing) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> a(40, 1.5f), b(40, 0.25f);
    a[17] = bad;
    CompensatedDot dot(0.0f);
    dot.Add(a.data(), 1, b.data(), 1, 40);
    const CompensatedDot::Result r = dot.Finish();
    float out = 0.0f;
    EXPECT_FALSE(CertifyApprox(r.value, r.bound, &out)) << bad;
  }
  CompensatedDot zero(0.0f);  // no terms, c0 = 0: exactly +0
  const CompensatedDot::Result r = zero.Finish();
  float out = 1.0f;
  ASSERT_TRUE(CertifyApprox(r.value, r.bound, &out));
  EXPECT_EQ(Bits(out), 0u);
}

TEST(CertifiedReduce, RandomInputs) {
  for (std::int64_t n : {1, 2, 3, 63, 64, 65, 1000, 100000}) {
    CheckReductions(ZeroMean(static_cast<std::uint32_t>(n), n, 20), ZeroMean(static_cast<std::uint32_t>(n) + 7, n));
  }
}

TEST(CertifiedReduce, AdversarialInputsTakeTheSlowPath) {
  const std::uint64_t before = CertifiedCounts().slow[static_cast<int>(CertKind::kSum)] +
                               CertifiedCounts().slow[static_cast<int>(CertKind::kMean)];
  // Ties: 1 + 2^-24 (to even), 3·(1 + 2^-24)/3 …; cancellation: 2^24 + x − 2^24.
  CheckReductions({1.0f, 0x1p-25f, 0x1p-25f}, {1.0f, 1.0f, 1.0f});
  CheckReductions({0x1p24f, 0.3f, -0x1p24f, 1e-7f}, {1.0f, 3.0f, 1.0f, 1.0f});
  CheckReductions({0x1p-149f, 0x1p-149f, 0x1p-149f}, {0x1p-149f, 1.0f, 0x1p20f});  // subnormals
  CheckReductions({3e38f, 3e38f, -3e38f}, {3e38f, 1.0f, 1.0f});                     // past FLT_MAX and back
  CheckReductions({-0.0f, -0.0f}, {-0.0f, 1.0f});                                   // exact zero: +0
  // Mean ties: (1 + (1 + 2^-22)) / 2 = 1 + 2^-23 exactly, representable.
  CheckReductions({1.0f, 1.0f + 0x1p-22f}, {1.0f, 1.0f});
  // Pythagorean: sqrt(3² + 4²) = 5 exactly; sqrt of a non-square.
  CheckReductions({3.0f, 4.0f}, {1.0f, 1.0f});
  CheckReductions({3.0f, 4.0f, 0x1p-60f}, {1.0f, 1.0f, 1.0f});
  const std::uint64_t after = CertifiedCounts().slow[static_cast<int>(CertKind::kSum)] +
                              CertifiedCounts().slow[static_cast<int>(CertKind::kMean)];
  EXPECT_GT(after, before);
  // Specials.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Bits(CertifiedSum(2, [&](std::int64_t i) { return i == 0 ? inf : -inf; })), 0x7fc00000u);
  EXPECT_EQ(CertifiedSum(2, [&](std::int64_t i) { return i == 0 ? inf : 1.0f; }), inf);
  EXPECT_EQ(Bits(CertifiedNorm(1, [&](std::int64_t) { return -inf; })), Bits(inf));
}

// One term (a reduction's shortcut: its IEEE conversion): zeros of both
// signs, subnormal and tiny products that round to a subnormal or to a
// signed zero, a product past the overflow boundary, NaN and ±inf.
TEST(CertifiedReduce, ExactMeanTiesRoundToEvenWithoutTheExactPath) {
  // Means exactly halfway between two fp32 neighbours: the exact sum is
  // known (SumIsExact) and so is its quotient (q·n = sum), whose IEEE
  // conversion rounds the tie to even. No interval decides a tie, so before
  // the exact-quotient rule every one of these took the exact path.
  struct Case {
    std::vector<float> x;
    float want;
  };
  const Case cases[] = {
      {{1.0f, 1.0f, 1.0f, 1.0f + 0x1p-22f}, 1.0f},                        // 1 + 2^-24: down to even
      {{1.0f, 1.0f, 1.0f + 0x1p-22f, 1.0f + 0x1p-21f}, 1.0f + 0x1p-22f},  // 1 + 3·2^-24: up to even
      {{1.0f + 0x1p-23f, 1.0f + 0x1p-23f, 1.0f - 0x1p-24f}, 1.0f},        // n = 3: 1 + 2^-24
      {{-6.0f, -6.0f, -6.0f, -6.0f, -6.0f - 0x1p-20f}, -6.0f},            // n = 5, inexact quotient
      {{0x1p-149f, 0.0f}, 0.0f},                                          // 2^-150: down to +0
      {{-0x1p-149f, -0x1p-149f, -0x1p-149f, 0.0f}, -0x1p-149f},           // −3·2^-151: nearest
  };
  for (const Case& c : cases) {
    const std::int64_t n = static_cast<std::int64_t>(c.x.size());
    const float want = RefReduce(c.x, nullptr, CertFinish::kDivide);
    ASSERT_EQ(Bits(want), Bits(c.want)) << "the case itself: " << c.x[0];
    const CertCounts before = CertifiedCounts();
    const float got = CertifiedMean(n, [&](std::int64_t i) { return c.x[static_cast<std::size_t>(i)]; });
    const CertCounts after = CertifiedCounts();
    EXPECT_EQ(Bits(got), Bits(want)) << c.x[0] << " n=" << n;
    constexpr int kMean = static_cast<int>(CertKind::kMean);
    EXPECT_EQ(after.slow[kMean] - before.slow[kMean], 0u) << c.x[0] << " n=" << n;
  }
}

TEST(CertifiedReduce, OneTermIsItsCorrectRounding) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::pair<float, float> cases[] = {{0.0f, 1.0f},
                                           {-0.0f, 1.0f},
                                           {-0.0f, -3.0f},
                                           {0x1p-149f, 1.0f},
                                           {-0x1p-149f, 0.5f},
                                           {0x1p-149f, 0.75f},
                                           {-0x1p-100f, 0x1p-60f},
                                           {0x1.8p-75f, 0x1.4p-75f},
                                           {3e38f, 2.0f},
                                           {-3e38f, 3e38f},
                                           {1.1f, 0.7f},
                                           {inf, 2.0f},
                                           {inf, 0.0f},
                                           {std::numeric_limits<float>::quiet_NaN(), 1.0f}};
  for (const auto& [a, b] : cases) {
    CheckReductions({a}, {b});
    CheckReductions({b}, {a});
  }
}

TEST(CertifiedReduce, NormOfTiesAndHugeValues) {
  // A sum of squares whose sqrt is exactly a midpoint: (2^24 + 1)·2^k is
  // a 25-bit odd number times a power of two; (2^24+1)² = 2^48 + 2^25 + 1 =
  // a² + b² with a = 2^24, b² = 2^25 + 1 — b is not representable, so use
  // the reference to decide every case instead: random huge, tiny, mixed.
  for (int shift : {-140, -70, 0, 60, 120}) {
    std::vector<float> a = ZeroMean(4242u + static_cast<std::uint32_t>(shift + 200), 33);
    for (auto& v : a) v = std::ldexp(v, shift);
    CheckReductions(a, a);
  }
}

TEST(ExactAccumulator, SumsFloatsExactly) {
  ExactAccumulator acc;
  acc.Add(0x1p100f);
  acc.Add(1.0f);
  acc.Add(-0x1p100f);
  EXPECT_EQ(acc.Round(), 1.0f);
  ExactAccumulator three;
  for (int i = 0; i < 3; ++i) three.Add(1.0f);
  EXPECT_EQ(three.RoundDivided(3), 1.0f);
  EXPECT_EQ(three.RoundSqrt(), std::sqrt(3.0f));  // IEEE sqrt is correctly rounded
  ExactAccumulator many;
  for (int i = 0; i < 10; ++i) many.AddProduct(0.1f, 0.1f);
  EXPECT_EQ(Bits(many.Round()), Bits(RefDot(std::vector<float>(10, 0.1f), std::vector<float>(10, 0.1f))));
}

// Any fp32 bit pattern: every sign, exponent (subnormals, inf and NaN included).
float AnyFloat(PhiloxStream& s) { return std::bit_cast<float>(s.NextU32()); }

// The canonical encoding (the element-level dispute's certified partial
// sums) depends only on the exact state: the same terms in another order,
// across bucket folds, encode alike; FromEncoding inverts it and keeps the
// value; two accumulators over a split of the terms, added, encode the whole.
TEST(ExactAccumulator, EncodingIsCanonicalAndDecodes) {
  PhiloxStream s(79, 0, 0);
  for (int trial = 0; trial < 40; ++trial) {
    const bool specials = trial % 4 == 3;
    const std::size_t n = trial % 5 == 0 ? std::size_t{10000} : 1 + s.NextU32() % 300;
    const std::vector<float> as =
        ZeroMean(1000 + static_cast<std::uint32_t>(trial), static_cast<std::int64_t>(n), 40);
    const std::vector<float> bs =
        ZeroMean(5000 + static_cast<std::uint32_t>(trial), static_cast<std::int64_t>(n), 40);
    std::vector<std::pair<float, std::optional<float>>> terms;  // a·b, or a alone
    for (std::size_t i = 0; i < n; ++i) {
      const float a = specials && i % 97 == 5 ? AnyFloat(s) : as[i];
      terms.emplace_back(a, (s.NextU32() & 1) != 0 ? std::optional<float>(bs[i]) : std::nullopt);
    }
    const auto sum = [&](bool reverse) {
      ExactAccumulator acc;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& [a, b] = terms[reverse ? n - 1 - i : i];
        if (b) {
          acc.AddProduct(a, *b);
        } else {
          acc.Add(a);
        }
      }
      return acc;
    };
    const ExactAccumulator forward = sum(false), backward = sum(true);
    const ExactAccumulator::Encoded e = forward.Encode();
    ASSERT_EQ(e, backward.Encode()) << "trial " << trial << ": the order changed the encoding";
    // Two accumulators over a split of the terms, added, hold the whole sum.
    ExactAccumulator head, tail;
    const std::size_t split = s.NextU32() % (n + 1);
    for (std::size_t i = 0; i < n; ++i) {
      ExactAccumulator& part = i < split ? head : tail;
      const auto& [a, b] = terms[i];
      if (b) {
        part.AddProduct(a, *b);
      } else {
        part.Add(a);
      }
    }
    head.Add(tail);
    EXPECT_EQ(head.Encode(), e) << "trial " << trial << ": split at " << split;
    const auto back = ExactAccumulator::FromEncoding(e);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->Encode(), e);
    EXPECT_EQ(Bits(back->Round()), Bits(forward.Round()));
    EXPECT_EQ(Bits(back->RoundDivided(3)), Bits(forward.RoundDivided(3)));
    // The decoded state goes on exactly like the original.
    ExactAccumulator more = *back, same = forward;
    more.AddProduct(0x1p-140f, 0x1p-149f);
    same.AddProduct(0x1p-140f, 0x1p-149f);
    EXPECT_EQ(more.Encode(), same.Encode());
  }
}

TEST(ExactAccumulator, EncodingIsTwosComplementFixedPoint) {
  const auto digit_bytes = [](const ExactAccumulator::Encoded& e) {
    return std::vector<std::uint8_t>(e.begin() + 1, e.end());
  };
  ExactAccumulator zero;
  EXPECT_EQ(zero.Encode(), ExactAccumulator::Encoded{});
  ExactAccumulator one;
  one.Add(1.0f);  // 2^0 = bit 298 of the fixed point: digit 9, bit 10
  ExactAccumulator::Encoded want{};
  want[1 + 4 * 9 + 1] = 0x04;
  EXPECT_EQ(one.Encode(), want);
  ExactAccumulator tiny;
  tiny.AddProduct(0x1p-149f, 0x1p-149f);  // the lsb
  want = {};
  want[1] = 0x01;
  EXPECT_EQ(tiny.Encode(), want);
  // −x is the two's complement of x.
  PhiloxStream s(80, 0, 0);
  for (int trial = 0; trial < 200; ++trial) {
    const float a = std::ldexp(ZeroMean(2000 + static_cast<std::uint32_t>(trial), 1)[0],
                               static_cast<int>(s.NextU32() % 250) - 125);
    const float b = std::ldexp(ZeroMean(3000 + static_cast<std::uint32_t>(trial), 1)[0],
                               static_cast<int>(s.NextU32() % 250) - 125);
    ExactAccumulator pos, neg;
    pos.AddProduct(a, b);
    neg.AddProduct(-a, b);
    std::vector<std::uint8_t> p = digit_bytes(pos.Encode()), q = digit_bytes(neg.Encode());
    unsigned carry = 1;
    for (auto& byte : p) {
      const unsigned v = (~byte & 0xffu) + carry;
      byte = static_cast<std::uint8_t>(v);
      carry = v >> 8;
    }
    ASSERT_EQ(p, q) << a << " * " << b;
  }
  // The flags: a NaN term, +inf, −inf.
  ExactAccumulator specials;
  specials.Add(std::numeric_limits<float>::infinity());
  EXPECT_EQ(specials.Encode()[0], 2);
  specials.AddProduct(-1.0f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(specials.Encode()[0], 6);
  EXPECT_TRUE(std::isnan(specials.Round()));
  specials.AddProduct(0.0f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(specials.Encode()[0], 7);
}

// Every byte string with a flags byte < 8 is a state, and it is its own
// encoding; a flags byte ≥ 8 is refused.
TEST(ExactAccumulator, EveryValidByteStringDecodesToItself) {
  PhiloxStream s(81, 0, 0);
  for (int trial = 0; trial < 2000; ++trial) {
    ExactAccumulator::Encoded e{};
    for (auto& byte : e) byte = static_cast<std::uint8_t>(s.NextU32());
    const bool valid = e[0] < 8;
    if (trial % 2 == 0 && !valid) e[0] &= 7;  // half of them made valid
    const auto d = ExactAccumulator::FromEncoding(e);
    ASSERT_EQ(d.has_value(), e[0] < 8);
    if (d) {
      EXPECT_EQ(d->Encode(), e);
    }
  }
}

// The certificate's libm-free helpers return exactly what libm returns.
TEST(CertifiedHelpers, NextUpNextDownAndPow2EqualLibm) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  std::vector<double> inputs = {0.0, -0.0, kInf, -kInf, std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::min(), -std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), 1.0, -1.0};
  PhiloxStream s(78, 0, 0);
  for (int i = 0; i < 200000; ++i) inputs.push_back(std::bit_cast<double>(s.NextU64()));
  for (double x : inputs) {
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(NextUp(x)) && std::isnan(NextDown(x)));
      continue;
    }
    ASSERT_EQ(bits(NextUp(x)), bits(std::nextafter(x, kInf))) << x;
    ASSERT_EQ(bits(NextDown(x)), bits(std::nextafter(x, -kInf))) << x;
  }
  for (int e = -1200; e <= 1200; ++e) ASSERT_EQ(bits(Pow2(e)), bits(std::ldexp(1.0, e))) << e;
}

// CertifyApproxFast decides a subset of what CertifyApprox decides, with the
// same value, on random and adversarial (approx, bound) pairs: values on,
// beside and halfway between fp32 neighbours (ties), subnormals, the
// overflow threshold, zeros of both signs, NaN and infinities, with bounds
// from zero to huge. It also decides almost every easy case (else the GEMM
// would walk every row again), and leaves `otherwise` and counts what it
// does not decide.
TEST(CertifiedHelpers, FastCertificateDecidesASubsetWithTheSameValue) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  PhiloxStream s(79, 0, 0);
  const auto random_float = [&] { return static_cast<double>(std::bit_cast<float>(s.NextU32())); };
  std::vector<double> approx = {0.0,
                                -0.0,
                                kInf,
                                -kInf,
                                kNaN,
                                0x1p-149,
                                -0x1p-149,
                                0x1p-150,
                                0x1.8p-149,
                                0x1.fffffep127,
                                0x1.ffffffp127,
                                std::nextafter(0x1.ffffffp127, 0.0),
                                std::nextafter(0x1.ffffffp127, kInf),
                                0x1p128,
                                -0x1.ffffffp127};
  for (int i = 0; i < 20000; ++i) {
    const double f = random_float();
    if (!std::isfinite(f)) continue;
    const double up = static_cast<double>(std::nextafter(static_cast<float>(f), INFINITY));
    const double mid = f + (up - f) / 2;  // a tie (exact in fp64)
    for (double x : {f, mid, std::nextafter(mid, kInf), std::nextafter(mid, -kInf), std::nextafter(f, kInf)})
      approx.push_back(x);
    approx.push_back(std::bit_cast<double>(s.NextU64()));
  }
  std::uint64_t pairs = 0, fast_decided = 0, easy = 0, easy_decided = 0;
  for (double a : approx) {
    const double mag = std::fabs(a);
    const double bounds[] = {
        0.0,           0x1p-1074,     mag * 0x1p-60,
        mag * 0x1p-45, mag * 0x1p-30, mag * 0x1p-24,
        mag * 0x1p-20, mag,           std::bit_cast<double>(s.NextU64() & 0x7fffffffffffffffull),
        kInf,          kNaN};
    for (double bound : bounds) {
      ++pairs;
      std::int64_t undecided = 0;
      const float fast = CertifyApproxFast(a, bound, 42.0f, undecided);
      float slow = 0.0f;
      const bool decided = CertifyApprox(a, bound, &slow);
      if (undecided == 0) {
        ++fast_decided;
        ASSERT_TRUE(decided) << std::hexfloat << a << " ± " << bound << ": decided only by the fast test";
        ASSERT_EQ(Bits(fast), Bits(slow)) << std::hexfloat << a << " ± " << bound;
      } else {
        ASSERT_EQ(undecided, 1);
        ASSERT_EQ(Bits(fast), Bits(42.0f));
      }
      // Easy: an fp32 value known to 2^-45 of itself, not near overflow.
      if (bound == mag * 0x1p-45 && a == static_cast<double>(static_cast<float>(a)) && mag > 0x1p-100 &&
          mag < 0x1p100) {
        ++easy;
        easy_decided += undecided == 0 ? 1 : 0;
      }
    }
  }
  std::printf("%llu pairs, %llu decided by the fast test; easy cases %llu of %llu\n",
              static_cast<unsigned long long>(pairs), static_cast<unsigned long long>(fast_decided),
              static_cast<unsigned long long>(easy_decided), static_cast<unsigned long long>(easy));
  EXPECT_GT(easy, 1000u);
  EXPECT_EQ(easy_decided, easy);
}

}  // namespace
}  // namespace vt::kernels
