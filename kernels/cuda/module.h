#pragma once
// The CUDA kernels as one table of entry points. They are built into a
// shared library (libvt_kernels_cuda.so, only with VERITRAIN_CUDA) that
// kernels/device.cpp loads with dlopen the first time a GEMM is asked to run
// on a CUDA device: no binary links CUDA's libraries, whose loading (cuBLAS's
// relocations) costs every process ≈ 0.1 s of page faults at start-up, GPU
// or not. Both sides are built in the same tree by the same compiler, so the
// table may carry C++ types.

#include <string>

#include "kernels/cuda/device.h"

namespace vt::kernels::cuda {

inline constexpr int kModuleAbi = 1;
inline constexpr const char* kModuleEntry = "vt_cuda_module";

struct ModuleApi {
  int abi = kModuleAbi;
  bool (*available)() = nullptr;
  std::string (*description)() = nullptr;
  Status (*gemm_repops)(const GemmArgs&, const float*, const float*, float*) = nullptr;
  Status (*gemm_native)(const GemmArgs&, const float*, const float*, float*) = nullptr;
  Status (*gemm_f64)(const GemmArgs&, const double*, const double*, double*) = nullptr;
  Status (*certified_gemm_fast)(const GemmArgs&, const float*, const float*, float*, double, std::uint8_t*) = nullptr;
};

}  // namespace vt::kernels::cuda

// The module's one exported entry point (named kModuleEntry).
extern "C" const vt::kernels::cuda::ModuleApi* vt_cuda_module();
