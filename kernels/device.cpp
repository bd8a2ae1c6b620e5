#include "kernels/device.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <utility>

#include "kernels/matmul.h"

#ifdef VT_CUDA_MODULE
#include <dlfcn.h>

#include "kernels/cuda/module.h"
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

#ifdef VT_CUDA_MODULE
// The CUDA module (kernels/cuda/module.h), loaded on first use from
// $VT_CUDA_MODULE or the path the build gave; an error says why not.
Result<const cuda::ModuleApi*> Module() {
  static const std::pair<const cuda::ModuleApi*, std::string> loaded =
      []() -> std::pair<const cuda::ModuleApi*, std::string> {
    const char* env = std::getenv("VT_CUDA_MODULE");
    const std::string path = env != nullptr && *env != '\0' ? env : VT_CUDA_MODULE;
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return {nullptr, "cannot load the CUDA module: " + std::string(::dlerror())};
    using Entry = const cuda::ModuleApi* (*)();
    const auto entry = reinterpret_cast<Entry>(::dlsym(handle, cuda::kModuleEntry));
    if (entry == nullptr) return {nullptr, path + " has no entry point " + cuda::kModuleEntry};
    const cuda::ModuleApi* api = entry();
    if (api == nullptr || api->abi != cuda::kModuleAbi) return {nullptr, path + " was built for another ABI"};
    return {api, ""};
  }();
  if (loaded.first == nullptr) return Status::Error("cuda-unavailable", loaded.second);
  return loaded.first;
}

// Calls `call(api)` on the loaded module; the module's absence is the error.
template <class Call>
Status WithModule(const Call& call) {
  VT_ASSIGN_OR_RETURN(const cuda::ModuleApi* api, Module());
  return call(*api);
}
#else
Status NotBuilt() { return Status::Error("cuda-unavailable", "this build has no CUDA support (VERITRAIN_CUDA=OFF)"); }

template <class Call>
Status WithModule(const Call&) {
  return NotBuilt();
}
#endif

}  // namespace

Status DeviceReady(Device device) {
  if (device == Device::kCpu) return Status::Ok();
  return WithModule([](const auto& api) {
    return api.available() ? Status::Ok() : Status::Error("cuda-unavailable", api.description());
  });
}

std::string DeviceDescription(Device device) {
  if (device == Device::kCpu) return "cpu";
  std::string out;
  const Status s = WithModule([&](const auto& api) {
    out = api.description();
    return Status::Ok();
  });
  return s.ok() ? out : s.detail();
}

bool CudaModuleBuilt() {
#ifdef VT_CUDA_MODULE
  return true;
#else
  return false;
#endif
}

std::uint64_t DeviceFallbacks() { return g_fallbacks.load(); }

namespace device {

bool OffloadRepops(const GemmArgs& g, const float* a, const float* b, float* c) {
  return Ran(WithModule([&](const auto& api) { return api.gemm_repops(g, a, b, c); }));
}
bool OffloadNative(const GemmArgs& g, const float* a, const float* b, float* c) {
  return Ran(WithModule([&](const auto& api) { return api.gemm_native(g, a, b, c); }));
}
bool OffloadF64(const GemmArgs& g, const double* a, const double* b, double* c) {
  return Ran(WithModule([&](const auto& api) { return api.gemm_f64(g, a, b, c); }));
}
bool OffloadCertifiedFast(const GemmArgs& g, const float* a, const float* b, float* c, double half,
                          std::uint8_t* slow) {
  return Ran(WithModule([&](const auto& api) { return api.certified_gemm_fast(g, a, b, c, half, slow); }));
}

}  // namespace device

}  // namespace vt::kernels
