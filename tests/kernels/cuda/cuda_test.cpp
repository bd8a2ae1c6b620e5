// CUDA kernels against the CPU: repops GEMM bitwise, b-bit rounding bitwise,
// rounded mode with logs across CPU and GPU fp64 (cuBLAS dgemm vs OpenBLAS
// dgemm), native cuBLAS sgemm within tolerance.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::cuda {
namespace {

#define VT_REQUIRE_CUDA()                                              \
  do {                                                                 \
    if (!CudaAvailable()) GTEST_SKIP() << "no CUDA device: " << CudaDescription(); \
  } while (0)

std::vector<float> RandomFloats(std::mt19937_64& rng, std::size_t n) {
  std::vector<float> v(n);
  std::normal_distribution<float> normal;
  for (auto& x : v) {
    x = normal(rng);
    if (rng() % 50 == 0) x = -0.0f;
    if (rng() % 50 == 1) x *= 1e-39f;  // subnormal
  }
  return v;
}

bool SameBits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(CudaTest, RepopsGemmEqualsCpuBitwise) {
  VT_REQUIRE_CUDA();
  std::mt19937_64 rng(test::TestSeed());
  struct Case {
    std::int64_t m, n, k;
  };
  for (const Case& cs : {Case{1, 1, 1}, Case{17, 33, 65}, Case{64, 64, 64}, Case{129, 70, 300}, Case{7, 300, 1000},
                         Case{5, 6, 0}}) {
    for (int variant = 0; variant < 8; ++variant) {
      GemmArgs g;
      g.m = cs.m;
      g.n = cs.n;
      g.k = cs.k;
      g.trans_a = (variant & 1) != 0;
      g.trans_b = (variant & 2) != 0;
      g.accumulate = (variant & 4) != 0;
      g.lda = (g.trans_a ? cs.m : cs.k) + 1;
      g.ldb = (g.trans_b ? cs.k : cs.n) + 2;
      g.ldc = cs.n + 3;
      const auto a = RandomFloats(rng, static_cast<std::size_t>((g.trans_a ? cs.k : cs.m) * g.lda + 1));
      const auto b = RandomFloats(rng, static_cast<std::size_t>((g.trans_b ? cs.n : cs.k) * g.ldb + 1));
      const auto c0 = RandomFloats(rng, static_cast<std::size_t>(cs.m * g.ldc));
      std::vector<float> cpu = c0, gpu = c0;
      GemmRepops(ExecConfig{Mode::kRepops, 2, Simd::kAuto, {}}, g, a.data(), b.data(), cpu.data());
      ASSERT_TRUE(GemmRepopsCuda(g, a.data(), b.data(), gpu.data()).ok());
      ASSERT_TRUE(SameBits(cpu, gpu)) << cs.m << "x" << cs.n << "x" << cs.k << " variant " << variant;
    }
  }
}

TEST(CudaTest, RoundToBitsEqualsCpuBitwise) {
  VT_REQUIRE_CUDA();
  std::mt19937_64 rng(test::TestSeed() ^ 1);
  std::vector<double> x(200000);
  for (auto& v : x) {
    const int e = static_cast<int>(rng() % 300) - 160;
    v = std::ldexp(static_cast<double>(rng() >> 11) * 0x1p-53 + 0.5, e) * ((rng() & 1) ? -1 : 1);
    if (rng() % 5 == 0) {  // an exact fp32 midpoint, nudged
      const float f = static_cast<float>(v);
      v = (static_cast<double>(f) + static_cast<double>(std::nextafterf(f, INFINITY))) / 2 +
          static_cast<double>(static_cast<int>(rng() % 5) - 2) * std::ldexp(std::fabs(v), -52);
    }
  }
  x[0] = 0.0;
  x[1] = -0.0;
  x[2] = INFINITY;
  x[3] = NAN;
  x[4] = 1e300;
  for (int bits : {23, 27, 32}) {
    const RoundingSpec spec{bits, 4096};
    std::vector<float> out(x.size());
    std::vector<std::uint8_t> flags(x.size());
    ASSERT_TRUE(RoundToBitsCuda(spec, x, out, flags).ok());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const RoundingRegion r = ClassifyRounding(x[i], spec);
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(r.nearest)) << i;
      ASSERT_EQ((flags[i] & 1) != 0, r.near_boundary) << i;
      if (r.has_boundary) {
        ASSERT_EQ((flags[i] & 2) != 0, r.nearest_is_up) << i;
      }
    }
  }
}

// The trainer computes fp64 on one device, the replayer on the other; with
// the trainer's log both end with the same bits.
TEST(CudaTest, RoundedWithLogsReplaysAcrossCpuAndGpu) {
  VT_REQUIRE_CUDA();
  std::mt19937_64 rng(test::TestSeed() ^ 2);
  const std::int64_t m = 96, n = 80, k = 700;
  const auto af = RandomFloats(rng, m * k), bf = RandomFloats(rng, k * n);
  const std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  const GemmArgs g{m, n, k, false, false, k, n, n, false};
  std::vector<double> cpu(m * n), gpu(m * n);
  GemmF64(ExecConfig{}, g, a.data(), b.data(), cpu.data());
  ASSERT_TRUE(GemmF64Cuda(g, a.data(), b.data(), gpu.data()).ok());
  const RoundingSpec spec{32, 4096};
  for (bool gpu_trains : {true, false}) {
    const auto& trainer = gpu_trains ? gpu : cpu;
    const auto& replayer = gpu_trains ? cpu : gpu;
    NodeRounding rec = NodeRounding::Record(spec);
    std::vector<float> want(m * n), got(m * n);
    ASSERT_TRUE(rec.Round(trainer, want).ok());
    NodeRounding rep = NodeRounding::Replay(spec, rec.log());
    ASSERT_TRUE(rep.Round(replayer, got).ok());
    ASSERT_TRUE(rep.Finish().ok());
    EXPECT_TRUE(SameBits(want, got)) << (gpu_trains ? "GPU trains, CPU replays" : "CPU trains, GPU replays");
  }
}

TEST(CudaTest, NativeSgemmIsCloseToFp64) {
  VT_REQUIRE_CUDA();
  std::mt19937_64 rng(test::TestSeed() ^ 3);
  const std::int64_t m = 64, n = 48, k = 300;
  const auto a = RandomFloats(rng, m * k), b = RandomFloats(rng, k * n);
  const GemmArgs g{m, n, k, false, false, k, n, n, false};
  std::vector<float> c(m * n);
  ASSERT_TRUE(GemmNativeCuda(g, a.data(), b.data(), c.data()).ok());
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0, abs_sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double prod = static_cast<double>(a[i * k + p]) * b[p * n + j];
        s += prod;
        abs_sum += std::fabs(prod);
      }
      // TF32 tensor cores (if cuBLAS chose them) have a 2^-11 relative unit.
      ASSERT_NEAR(c[i * n + j], s, 0x1p-10 * abs_sum + 1e-6) << i << "," << j;
    }
  }
}

// K = 0 with leading dimensions 0 (a split-K chunk can be empty): C = 0, or
// C unchanged when accumulating — as OpenBLAS does, with no cuBLAS error.
TEST(CudaTest, EmptyInnerDimension) {
  VT_REQUIRE_CUDA();
  for (bool accumulate : {false, true}) {
    const GemmArgs g{3, 4, 0, false, false, 0, 0, 5, accumulate};
    std::vector<double> c64(15, 2.5);
    std::vector<float> c32(15, 2.5f);
    ASSERT_TRUE(GemmF64Cuda(g, nullptr, nullptr, c64.data()).ok());
    ASSERT_TRUE(GemmNativeCuda(g, nullptr, nullptr, c32.data()).ok());
    for (std::int64_t i = 0; i < 3; ++i) {
      for (std::int64_t j = 0; j < 5; ++j) {
        const double want = j < 4 && !accumulate ? 0.0 : 2.5;  // column 4 is padding
        EXPECT_EQ(c64[static_cast<std::size_t>(i * 5 + j)], want) << i << "," << j;
        EXPECT_EQ(c32[static_cast<std::size_t>(i * 5 + j)], static_cast<float>(want)) << i << "," << j;
      }
    }
  }
}

TEST(CudaTest, ReportsUnavailabilityAsAnError) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present (" << CudaDescription() << ")";
  float x = 1;
  const Status s = GemmRepopsCuda({1, 1, 1, false, false, 1, 1, 1, false}, &x, &x, &x);
  EXPECT_TRUE(s.is_error());
  EXPECT_EQ(s.reason(), "cuda-unavailable");
}

}  // namespace
}  // namespace vt::kernels::cuda
