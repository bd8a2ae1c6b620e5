// ExecConfig::device (kernels/device.h): the device names parse; a CUDA
// build loads its module on any machine; asking for
// a CUDA device never changes a repops result and gives an honest fp64
// result; where no device is usable, DeviceReady says why and every GEMM
// falls back to the CPU (counted), where one is, none does.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/philox.h"
#include "kernels/device.h"
#include "kernels/matmul.h"

namespace vt::kernels {
namespace {

std::vector<float> Values(std::uint32_t stream, std::int64_t count) {
  PhiloxStream s(5, 0, stream);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = static_cast<float>(static_cast<std::int32_t>(s.NextU32())) * 0x1p-31f;
  return v;
}

TEST(Device, NamesParseBothWays) {
  for (Device d : {Device::kCpu, Device::kCuda}) EXPECT_EQ(ParseDevice(DeviceName(d)).value(), d);
  const auto bad = ParseDevice("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().reason(), "unknown-device");
  EXPECT_TRUE(DeviceReady(Device::kCpu).ok());
  EXPECT_EQ(DeviceDescription(Device::kCpu), "cpu");
}

// A build with CUDA must load its module on any machine (the GPU may be
// missing, the module's symbols may not): the reason, if any, is the device.
TEST(Device, CudaModuleLoads) {
  if (!CudaModuleBuilt()) {
    EXPECT_NE(DeviceDescription(Device::kCuda).find("no CUDA support"), std::string::npos);
    GTEST_SKIP() << "built without CUDA";
  }
  const std::string description = DeviceDescription(Device::kCuda);
  EXPECT_EQ(description.find("cannot load"), std::string::npos) << description;
  EXPECT_EQ(description.find("entry point"), std::string::npos) << description;
}

TEST(Device, CudaGemmsEqualTheCpuOrFallBack) {
  const Status ready = DeviceReady(Device::kCuda);
  if (!ready.ok()) {
    EXPECT_EQ(ready.reason(), "cuda-unavailable");
    EXPECT_FALSE(ready.detail().empty());
  }
  const std::int64_t m = 37, n = 29, k = 301;
  const std::vector<float> a = Values(1, m * k), b = Values(2, k * n);
  GemmArgs g;
  g.m = m, g.n = n, g.k = k, g.lda = k, g.ldb = n, g.ldc = n;
  ExecConfig cpu;
  cpu.threads = 2;
  ExecConfig cuda = cpu;
  cuda.device = Device::kCuda;
  const std::uint64_t fallbacks = DeviceFallbacks();

  std::vector<float> want(static_cast<std::size_t>(m * n)), got(want.size());
  GemmRepops(cpu, g, a.data(), b.data(), want.data());
  GemmRepops(cuda, g, a.data(), b.data(), got.data());
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "repops bits differ";

  // fp64: any honest evaluation lies within γ_K Σ|a b| of the exact value.
  const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
  std::vector<double> c_cpu(want.size()), c_dev(want.size());
  GemmF64(cpu, g, a64.data(), b64.data(), c_cpu.data());
  GemmF64(cuda, g, a64.data(), b64.data(), c_dev.data());
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double abs_sum = 0;
      for (std::int64_t p = 0; p < k; ++p) abs_sum += std::fabs(a64[static_cast<std::size_t>(i * k + p)] * b64[static_cast<std::size_t>(p * n + j)]);
      const std::size_t at = static_cast<std::size_t>(i * n + j);
      ASSERT_LE(std::fabs(c_cpu[at] - c_dev[at]), 2 * k * 0x1p-53 * abs_sum * 1.01) << i << "," << j;
    }
  }
  // Both GEMMs ran on the device, or both fell back (each counted).
  EXPECT_EQ(DeviceFallbacks() - fallbacks, ready.ok() ? 0u : 2u);
}

}  // namespace
}  // namespace vt::kernels
