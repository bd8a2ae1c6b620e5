// The canonical fp64 reference of rounded mode (docs/kernels.md, "The
// canonical reference"): the fixed-sequence transcendentals of
// kernels/f64_math.h are accurate (checked against libm) and pinned by a
// golden hash (identical under g++ and clang++); GemmF64Reference (and
// GemmF64ReferenceElements, any elements of it) is bitwise the sequential
// definition for every layout, accumulation and thread count.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/f64_math.h"
#include "kernels/matmul.h"
#include "tests/kernels/sequential_gemm.h"
#include "tests/kernels/supported_simds.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

double UlpDistance(double got, double want) {
  if (got == want) return 0;
  const double ulp = std::fabs(std::nextafter(want, INFINITY) - want);
  return std::fabs(got - want) / ulp;
}

TEST(F64Math, WithinOneAndAHalfUlpOfLibm) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xf64);
  double worst[4] = {0, 0, 0, 0};
  for (int i = 0; i < 200000; ++i) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const double e = -740.0 + u * 1449.0;  // the whole finite, normal range of exp
    worst[0] = std::max(worst[0], UlpDistance(f64::Exp(e), std::exp(e)));
    const double l = std::ldexp(0.5 + 0.5 * u, static_cast<int>(rng() % 2090) - 1070);  // subnormals too
    worst[1] = std::max(worst[1], UlpDistance(f64::Log(l), std::log(l)));
    const double t = -25.0 + 50.0 * std::uniform_real_distribution<double>(0, 1)(rng);
    worst[2] = std::max(worst[2], UlpDistance(f64::Tanh(t), std::tanh(t)));
    const double c = 3.141592653589793 * u;  // lr_schedule's range: cos(π·q), q ∈ [0, 1]
    const double want = std::cos(c);
    // Near cos's zero the result's own ulp is tiny: allow 2^-60 absolute there.
    if (std::fabs(f64::Cos(c) - want) > 0x1p-60) worst[3] = std::max(worst[3], UlpDistance(f64::Cos(c), want));
  }
  std::printf("[f64 math vs libm] max ulp: exp %.2f log %.2f tanh %.2f cos %.2f\n", worst[0], worst[1], worst[2],
              worst[3]);
  EXPECT_LE(worst[0], 1.0);
  EXPECT_LE(worst[1], 1.0);
  EXPECT_LE(worst[2], 2.0);
  EXPECT_LE(worst[3], 2.0);
}

TEST(F64Math, SpecialValues) {
  const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
  const double nan = std::nan("7");
  for (double (*f)(double) : {&f64::Exp, &f64::Log, &f64::Tanh, &f64::Cos})
    EXPECT_EQ(bits(f(nan)), 0x7FF8000000000000ull) << "canonical NaN";
  EXPECT_EQ(f64::Exp(0.0), 1.0);
  EXPECT_EQ(f64::Exp(INFINITY), INFINITY);
  EXPECT_EQ(f64::Exp(710.0), INFINITY);
  EXPECT_EQ(f64::Exp(-INFINITY), 0.0);
  EXPECT_EQ(f64::Exp(-746.0), 0.0);
  EXPECT_GT(f64::Exp(-744.0), 0.0);  // a subnormal
  EXPECT_EQ(f64::Log(1.0), 0.0);
  EXPECT_EQ(f64::Log(0.0), -INFINITY);
  EXPECT_EQ(f64::Log(-0.0), -INFINITY);
  EXPECT_TRUE(std::isnan(f64::Log(-1.0)));
  EXPECT_EQ(f64::Log(INFINITY), INFINITY);
  EXPECT_EQ(bits(f64::Tanh(-0.0)), bits(-0.0));
  EXPECT_EQ(f64::Tanh(INFINITY), 1.0);
  EXPECT_EQ(f64::Tanh(-30.0), -1.0);
  EXPECT_EQ(f64::Cos(0.0), 1.0);
  EXPECT_TRUE(std::isnan(f64::Cos(INFINITY)));
}

// Any change of an operation, constant or order shows here (and in every
// rounded-mode element-wise output). FNV-1a over the result bits of fixed
// inputs; the same under g++ 12 and clang++ 14.
TEST(F64Math, GoldenHash) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&](double x) {
    const std::uint64_t b = std::bit_cast<std::uint64_t>(x);
    for (int k = 0; k < 8; ++k) h = (h ^ ((b >> (8 * k)) & 0xff)) * 0x100000001b3ull;
  };
  for (int i = 0; i < 4096; ++i) {
    const double x = -40.0 + i * (80.0 / 4096.0) + 1e-7 * i;
    mix(f64::Exp(x));
    mix(f64::Log(std::fabs(x) + 1e-300 * i));
    mix(f64::Tanh(x / 4));
    mix(f64::Cos(x));
  }
  EXPECT_EQ(h, 0x2dd5fbab16128d1cull) << std::hex << "0x" << h;
}

// Signed values of varied magnitudes: fp32 values (what rounded mode feeds
// most of its GEMMs), or with all 53 bits (its fp64 intermediates, such as
// attention's; only there would an fma in place of a multiply and an add
// change a bit).
enum class Bits { kFp32, kFp64 };
std::vector<double> Random(std::mt19937_64& rng, std::size_t n, Bits bits = Bits::kFp32) {
  std::vector<double> v(n);
  for (double& x : v) {
    x = std::ldexp(std::normal_distribution<double>()(rng), static_cast<int>(rng() % 9) - 4);
    if (bits == Bits::kFp32) x = static_cast<float>(x);
  }
  return v;
}

// A random product: m in [1, max_m], n in [1, max_n], k in [k_min, k_min +
// k_span), random layouts and accumulation, leading dimensions padded by 0-2.
GemmArgs RandomGemm(std::mt19937_64& rng, std::uint64_t max_m, std::uint64_t max_n, std::int64_t k_min,
                    std::uint64_t k_span) {
  GemmArgs g;
  g.m = 1 + static_cast<std::int64_t>(rng() % max_m);
  g.n = 1 + static_cast<std::int64_t>(rng() % max_n);
  g.k = k_min + static_cast<std::int64_t>(rng() % k_span);
  g.trans_a = (rng() & 1) != 0;
  g.trans_b = (rng() & 1) != 0;
  g.accumulate = (rng() & 1) != 0;
  g.lda = (g.trans_a ? g.m : g.k) + static_cast<std::int64_t>(rng() % 3);
  g.ldb = (g.trans_b ? g.k : g.n) + static_cast<std::int64_t>(rng() % 3);
  g.ldc = g.n + static_cast<std::int64_t>(rng() % 3);
  return g;
}

// GemmF64Reference from c0 on every SIMD path this CPU runs and 1–3
// threads: `want`, bit for bit, or the first element that differs.
::testing::AssertionResult EveryPathGives(const GemmArgs& g, const std::vector<double>& a,
                                          const std::vector<double>& b, const std::vector<double>& c0,
                                          const std::vector<double>& want) {
  for (Simd simd : testing::SupportedSimds()) {
    for (int threads : {1, 2, 3}) {
      std::vector<double> got = c0;
      GemmF64ReferenceOnSimdForTesting(simd, threads, g, a.data(), b.data(), got.data());
      for (std::size_t e = 0; e < got.size(); ++e) {
        if (std::bit_cast<std::uint64_t>(got[e]) != std::bit_cast<std::uint64_t>(want[e])) {
          return ::testing::AssertionFailure() << SimdName(simd) << " threads " << threads << " element " << e
                                               << ": " << got[e] << " instead of " << want[e];
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(GemmF64Reference, IsTheSequentialDefinitionBitwise) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x6e11);
  for (int trial = 0; trial < 40; ++trial) {
    const GemmArgs g = RandomGemm(rng, 13, 11, 0, 70);
    const Bits bits = trial % 2 == 0 ? Bits::kFp32 : Bits::kFp64;
    const std::vector<double> a =
        Random(rng, static_cast<std::size_t>((g.trans_a ? g.k : g.m) * g.lda + 1), bits);
    const std::vector<double> b =
        Random(rng, static_cast<std::size_t>((g.trans_b ? g.n : g.k) * g.ldb + 1), bits);
    const std::vector<double> c0 = Random(rng, static_cast<std::size_t>(g.m * g.ldc), bits);
    // The definition: element (i, j) of op(x)·op(y), from `init`.
    const auto sequential = [&](const std::vector<double>& x, const std::vector<double>& y, double init,
                                std::int64_t i, std::int64_t j) {
      double acc = init;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const double xv = g.trans_a ? x[static_cast<std::size_t>(p * g.lda + i)]
                                    : x[static_cast<std::size_t>(i * g.lda + p)];
        const double yv = g.trans_b ? y[static_cast<std::size_t>(j * g.ldb + p)]
                                    : y[static_cast<std::size_t>(p * g.ldb + j)];
        acc = acc + xv * yv;
      }
      return acc;
    };
    std::vector<double> want = c0;
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t j = 0; j < g.n; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * g.ldc + j);
        want[e] = sequential(a, b, g.accumulate ? c0[e] : 0.0, i, j);
      }
    }
    ASSERT_TRUE(EveryPathGives(g, a, b, c0, want)) << "trial " << trial;
    // Elements asked for in any order, repeated, over several groups, some
    // from a second batch item stored after the first (what a trainer rounds
    // at the honest limit).
    std::vector<double> a1 = Random(rng, a.size(), bits), b1 = Random(rng, b.size(), bits);
    std::vector<double> a2 = a, b2 = b;
    a2.insert(a2.end(), a1.begin(), a1.end());
    b2.insert(b2.end(), b1.begin(), b1.end());
    const auto a_item = static_cast<std::int64_t>(a.size()), b_item = static_cast<std::int64_t>(b.size());
    std::vector<GemmElement> elements;
    std::vector<double> init, expect;
    for (int r = 0; r < 1200; ++r) {
      const auto i = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(g.m));
      const auto j = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(g.n));
      const bool second = (rng() & 1) != 0;
      elements.push_back(GemmElement{i, j, second ? a_item : 0, second ? b_item : 0});
      init.push_back(Random(rng, 1, bits)[0]);
      const double from = g.accumulate ? init.back() : 0.0;
      expect.push_back(second ? sequential(a1, b1, from, i, j) : sequential(a, b, from, i, j));
    }
    for (int threads : {1, 2, 3}) {
      std::vector<double> got = init;
      GemmF64ReferenceElements(threads, g, a2.data(), b2.data(), elements, got.data());
      for (std::size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(std::bit_cast<std::uint64_t>(got[k]), std::bit_cast<std::uint64_t>(expect[k]))
            << "trial " << trial << " threads " << threads << " element (" << elements[k].i << ", "
            << elements[k].j << ")" << (elements[k].a_offset != 0 ? " of item 1" : "");
      }
    }
  }
}

// Many elements of one product (a share of its outputs large enough for the
// whole product to be computed at once, see GemmF64ReferenceElements), a few
// (one by one), and every share between, in any order and repeated: each is
// still the sequential definition, bit for bit, on 1–3 threads.
TEST(GemmF64Reference, ElementsAtEveryShareOfTheProduct) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xe1e);
  for (int trial = 0; trial < 8; ++trial) {
    GemmArgs g = RandomGemm(rng, 90, 70, 1, 300);
    g.accumulate = false;
    const Bits bits = trial % 2 == 0 ? Bits::kFp32 : Bits::kFp64;
    const std::vector<double> a =
        Random(rng, static_cast<std::size_t>((g.trans_a ? g.k : g.m) * g.lda), bits);
    const std::vector<double> b =
        Random(rng, static_cast<std::size_t>((g.trans_b ? g.n : g.k) * g.ldb), bits);
    std::vector<double> want(static_cast<std::size_t>(g.m * g.ldc));
    testing::SequentialGemm<double>(g, a.data(), b.data(), want.data());
    for (const double share : {1.0, 0.5, 1.0 / 16, 1.0 / 64, 0.0}) {
      std::vector<GemmElement> elements;
      for (std::int64_t i = 0; i < g.m; ++i) {
        for (std::int64_t j = 0; j < g.n; ++j) {
          if (std::uniform_real_distribution<double>(0, 1)(rng) < share) elements.push_back(GemmElement{i, j});
        }
      }
      // Out of order, one repeated, and at least one element.
      elements.push_back(GemmElement{static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(g.m)),
                                     static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(g.n))});
      std::shuffle(elements.begin(), elements.end(), rng);
      elements.push_back(elements.front());
      for (int threads : {1, 2, 3}) {
        std::vector<double> got(elements.size(), -1.0);
        GemmF64ReferenceElements(threads, g, a.data(), b.data(), elements, got.data());
        for (std::size_t e = 0; e < got.size(); ++e) {
          const double expect = want[static_cast<std::size_t>(elements[e].i * g.ldc + elements[e].j)];
          ASSERT_EQ(std::bit_cast<std::uint64_t>(got[e]), std::bit_cast<std::uint64_t>(expect))
              << "trial " << trial << " share " << share << " threads " << threads << " element ("
              << elements[e].i << ", " << elements[e].j << ") of " << g.m << "x" << g.k << "x" << g.n
              << " ta=" << g.trans_a << " tb=" << g.trans_b;
        }
      }
    }
  }
}

// Shapes across the blocked kernel's blocks (on an AVX-512 or AVX2 CPU
// GemmF64Reference runs the blocked driver of kernels/gemm_blocked.h with a
// mul-then-add kernel: the k block of 512 fp64 values, the row block of 192,
// column groups), every layout, accumulating or not, 1–3 threads, every
// path this CPU runs: still the sequential definition, bit for bit (a lost,
// repeated or reordered term, or an fma, would show).
TEST(GemmF64Reference, IsTheSequentialDefinitionAcrossBlocks) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x7113);
  for (int trial = 0; trial < 8; ++trial) {
    const GemmArgs g = RandomGemm(rng, 260, 200, 1, 1100);
    const Bits bits = trial % 2 == 0 ? Bits::kFp32 : Bits::kFp64;
    const std::vector<double> a =
        Random(rng, static_cast<std::size_t>((g.trans_a ? g.k : g.m) * g.lda), bits);
    const std::vector<double> b =
        Random(rng, static_cast<std::size_t>((g.trans_b ? g.n : g.k) * g.ldb), bits);
    const std::vector<double> c0 = Random(rng, static_cast<std::size_t>(g.m * g.ldc), bits);
    std::vector<double> want = c0;
    testing::SequentialGemm<double>(g, a.data(), b.data(), want.data());
    ASSERT_TRUE(EveryPathGives(g, a, b, c0, want))
        << "trial " << trial << " " << g.m << "x" << g.k << "x" << g.n << " ta=" << g.trans_a
        << " tb=" << g.trans_b << " acc=" << g.accumulate << (bits == Bits::kFp64 ? " fp64" : " fp32");
  }
}

}  // namespace
}  // namespace vt::kernels
