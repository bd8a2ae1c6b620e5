// BlasCoreAdviceFor: which OPENBLAS_CORETYPE to suggest when OpenBLAS fell
// back to kernels narrower than the CPU runs.

#include <gtest/gtest.h>

#include "kernels/blas_core.h"

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

}  // namespace
}  // namespace vt::kernels
