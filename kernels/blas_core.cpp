#include "kernels/blas_core.h"

#include <cblas.h>

#include <array>
#include <cstdlib>

#include "kernels/matmul.h"

namespace vt::kernels {

namespace {

// OpenBLAS cores whose kernels use AVX2 (or AVX-512) already.
constexpr std::array<std::string_view, 6> kWideCores = {"Haswell",        "SkylakeX", "CooperLake",
                                                        "SapphireRapids", "Zen",      "Excavator"};

}  // namespace

std::string BlasCoreAdviceFor(std::string_view core, bool has_avx512f, bool has_avx2_fma, bool env_set) {
  if (env_set) return "";
  for (std::string_view wide : kWideCores) {
    if (core == wide) return "";
  }
  if (has_avx512f) return "SkylakeX";
  if (has_avx2_fma) return "Haswell";
  return "";
}

std::string BlasCoreName() {
  const char* core = openblas_get_corename();
  return core != nullptr ? core : "unknown";
}

std::string BlasCoreAdvice() {
  return BlasCoreAdviceFor(BlasCoreName(), SimdSupported(Simd::kAvx512),
                           SimdSupported(Simd::kAvx2) && CpuHasFma(),
                           std::getenv("OPENBLAS_CORETYPE") != nullptr);
}

bool TrainerRecordsOnReferenceFor(F64Gemm choice, Device device, std::string_view advice, bool own_f64_gemm) {
  switch (choice) {
    case F64Gemm::kVendor:
      return false;
    case F64Gemm::kReference:
      return true;
    case F64Gemm::kAuto:
      break;
  }
  return device == Device::kCpu && advice == "SkylakeX" && !own_f64_gemm;
}

bool TrainerRecordsOnReference(F64Gemm choice, Device device) {
  return TrainerRecordsOnReferenceFor(choice, device, BlasCoreAdvice(), WidenedF64GemmAvailable(Simd::kAuto));
}

}  // namespace vt::kernels
