// BlasCoreAdviceFor: which OPENBLAS_CORETYPE to suggest when OpenBLAS fell
// back to kernels narrower than the CPU runs; TrainerRecordsOnReferenceFor:
// which fp64 GEMM a rounded trainer records on.

#include <gtest/gtest.h>

#include "kernels/blas_core.h"
#include "kernels/matmul.h"

namespace vt::kernels {
namespace {

TEST(BlasCoreAdvice, SuggestsTheWidestKernelsTheCpuRunsOverAGenericCore) {
  struct Case {
    const char* core;
    bool avx512f, avx2_fma, env_set;
    const char* want;
  };
  const Case cases[] = {
      {"Prescott", true, true, false, "SkylakeX"},  // a VM's masked CPUID on an AVX-512 host
      {"Prescott", false, true, false, "Haswell"},
      {"Prescott", false, false, false, ""},  // nothing wider to run
      {"Nehalem", true, true, false, "SkylakeX"},
      {"Sandybridge", false, true, false, "Haswell"},  // AVX without FMA kernels
      {"Prescott", true, true, true, ""},              // the user chose
      {"Haswell", true, true, false, ""},              // already AVX2
      {"SkylakeX", true, true, false, ""},
      {"Zen", true, true, false, ""},
      {"SapphireRapids", true, true, false, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(BlasCoreAdviceFor(c.core, c.avx512f, c.avx2_fma, c.env_set), c.want)
        << c.core << " avx512f=" << c.avx512f << " avx2_fma=" << c.avx2_fma << " env=" << c.env_set;
  }
}

TEST(BlasCoreAdvice, NamesTheCoreThisProcessRuns) {
  // OpenBLAS always names its core; the advice is one of the two cores or nothing.
  EXPECT_FALSE(BlasCoreName().empty());
  EXPECT_NE(BlasCoreName(), "unknown");
  const std::string advice = BlasCoreAdvice();
  EXPECT_TRUE(advice.empty() || advice == "SkylakeX" || advice == "Haswell") << advice;
}

TEST(TrainerF64Gemm, AutoTakesTheReferenceOverAGenericCoreOnAnAvx512CpuWithoutOurKernel) {
  struct Case {
    F64Gemm choice;
    Device device;
    const char* advice;
    bool own_f64_gemm;
    bool want;
  };
  const Case cases[] = {
      // SSE3 dgemm on a CPU with AVX-512F, and a build without our kernel.
      {F64Gemm::kAuto, Device::kCpu, "SkylakeX", false, true},
      // Our AVX-512 fp64 GEMM outruns the reference there.
      {F64Gemm::kAuto, Device::kCpu, "SkylakeX", true, false},
      // No AVX-512: the reference would run 2-lane vectors.
      {F64Gemm::kAuto, Device::kCpu, "Haswell", false, false},
      // Wide kernels already, or the user chose a core.
      {F64Gemm::kAuto, Device::kCpu, "", false, false},
      {F64Gemm::kAuto, Device::kCpu, "", true, false},
      // cuBLAS dgemm; the reference runs on the CPU only.
      {F64Gemm::kAuto, Device::kCuda, "SkylakeX", false, false},
      // An explicit choice wins.
      {F64Gemm::kVendor, Device::kCpu, "SkylakeX", false, false},
      {F64Gemm::kReference, Device::kCpu, "", true, true},
      {F64Gemm::kReference, Device::kCuda, "Haswell", false, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(TrainerRecordsOnReferenceFor(c.choice, c.device, c.advice, c.own_f64_gemm), c.want)
        << F64GemmName(c.choice) << " " << DeviceName(c.device) << " advice=" << c.advice
        << " own=" << c.own_f64_gemm;
  }
  EXPECT_EQ(TrainerRecordsOnReference(F64Gemm::kAuto, Device::kCpu),
            BlasCoreAdvice() == "SkylakeX" && !WidenedF64GemmAvailable(Simd::kAuto));
}

TEST(TrainerF64Gemm, NamesParseBackAndOthersAreRefused) {
  for (F64Gemm g : {F64Gemm::kAuto, F64Gemm::kVendor, F64Gemm::kReference}) {
    const auto parsed = ParseF64Gemm(F64GemmName(g));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, g);
  }
  const auto bad = ParseF64Gemm("openblas");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().reason(), "unknown-fp64-gemm");
}

}  // namespace
}  // namespace vt::kernels
