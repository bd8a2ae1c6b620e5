#pragma once
// The SIMD paths this CPU runs, narrowest first (kScalar always): tests run
// every one of them and hold each to the same bits.

#include <vector>

#include "kernels/mode.h"

namespace vt::kernels::testing {

inline std::vector<Simd> SupportedSimds() {
  std::vector<Simd> out = {Simd::kScalar};
  for (Simd simd : {Simd::kAvx2, Simd::kAvx512}) {
    if (SimdSupported(simd)) out.push_back(simd);
  }
  return out;
}

}  // namespace vt::kernels::testing
