#pragma once
// The accelerator behind ExecConfig::device: whether it can be used, and the
// GEMMs that run on it. The one place that knows whether this build has CUDA
// (kernels/cuda/, loaded on first use as a shared module: module.h); every
// other file asks here.
//
// GemmRepops, GemmNative and GemmF64 (kernels/matmul.h) call the Offload*
// functions when config.device is not the CPU. An offload that fails (no
// device, out of device memory) is reported once on stderr and the GEMM runs
// on the CPU instead: the same bits in repops and certified mode, another
// honest fp64 evaluation in rounded mode. Front ends check DeviceReady first,
// so a user who asks for a device that is not there gets a clear error.

#include <cstdint>
#include <string>

#include "common/result.h"
#include "kernels/mode.h"

namespace vt::kernels {

struct GemmArgs;

// Ok when GEMMs can run on `device` (the CPU always can); else the reason
// ("cuda-unavailable": built without CUDA, or no device present).
Status DeviceReady(Device device);
// The device's name (e.g. "NVIDIA H100 80GB HBM3"), or why it is unusable.
std::string DeviceDescription(Device device);
// Whether this build has the CUDA module (VERITRAIN_CUDA); whether it loads
// is DeviceReady's business.
bool CudaModuleBuilt();
// GEMMs that fell back to the CPU in this process (a report shows it).
std::uint64_t DeviceFallbacks();

namespace device {
// On the CUDA device (the only accelerator so far). Each returns true when
// the GEMM ran there, false after a fallback was noted (the caller then
// computes it on the CPU).
bool OffloadRepops(const GemmArgs& g, const float* a, const float* b, float* c);
bool OffloadNative(const GemmArgs& g, const float* a, const float* b, float* c);
bool OffloadF64(const GemmArgs& g, const double* a, const double* b, double* c);
// The certified GEMM's whole fast path (cuda::CertifiedGemmFastCuda).
bool OffloadCertifiedFast(const GemmArgs& g, const float* a, const float* b, float* c, double half,
                          std::uint8_t* slow);
}  // namespace device

}  // namespace vt::kernels
