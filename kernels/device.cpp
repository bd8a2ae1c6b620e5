#include "kernels/device.h"

#include <atomic>
#include <iostream>

#include "kernels/matmul.h"

#ifdef VT_HAVE_CUDA
#include "kernels/cuda/device.h"
#endif

namespace vt::kernels {

namespace {

std::atomic<std::uint64_t> g_fallbacks{0};

// Counts the fallback; the first one in the process says why on stderr.
bool Ran(const Status& s) {
  if (s.ok()) return true;
  if (g_fallbacks.fetch_add(1) == 0) {
    std::cerr << "vt: a GEMM fell back to the CPU (" << s.ToString()
              << "); the results are the same in repops and certified mode\n";
  }
  return false;
}

#ifndef VT_HAVE_CUDA
Status NotBuilt() { return Status::Error("cuda-unavailable", "this build has no CUDA support (VERITRAIN_CUDA=OFF)"); }
#endif

}  // namespace

Status DeviceReady(Device device) {
  if (device == Device::kCpu) return Status::Ok();
#ifdef VT_HAVE_CUDA
  if (cuda::CudaAvailable()) return Status::Ok();
  return Status::Error("cuda-unavailable", cuda::CudaDescription());
#else
  return NotBuilt();
#endif
}

std::string DeviceDescription(Device device) {
  if (device == Device::kCpu) return "cpu";
#ifdef VT_HAVE_CUDA
  return cuda::CudaDescription();
#else
  return NotBuilt().detail();
#endif
}

std::uint64_t DeviceFallbacks() { return g_fallbacks.load(); }

namespace device {

#ifdef VT_HAVE_CUDA
bool OffloadRepops(const GemmArgs& g, const float* a, const float* b, float* c) {
  return Ran(cuda::GemmRepopsCuda(g, a, b, c));
}
bool OffloadNative(const GemmArgs& g, const float* a, const float* b, float* c) {
  return Ran(cuda::GemmNativeCuda(g, a, b, c));
}
bool OffloadF64(const GemmArgs& g, const double* a, const double* b, double* c) {
  return Ran(cuda::GemmF64Cuda(g, a, b, c));
}
bool OffloadCertifiedFast(const GemmArgs& g, const float* a, const float* b, float* c, double half,
                          std::uint8_t* slow) {
  return Ran(cuda::CertifiedGemmFastCuda(g, a, b, c, half, slow));
}
#else
bool OffloadRepops(const GemmArgs&, const float*, const float*, float*) { return Ran(NotBuilt()); }
bool OffloadNative(const GemmArgs&, const float*, const float*, float*) { return Ran(NotBuilt()); }
bool OffloadF64(const GemmArgs&, const double*, const double*, double*) { return Ran(NotBuilt()); }
bool OffloadCertifiedFast(const GemmArgs&, const float*, const float*, float*, double, std::uint8_t*) {
  return Ran(NotBuilt());
}
#endif

}  // namespace device

}  // namespace vt::kernels
