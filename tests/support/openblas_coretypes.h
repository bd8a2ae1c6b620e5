#pragma once
// The OpenBLAS core types (OPENBLAS_CORETYPE) this CPU can run: the
// "different hardware" axis of the cross-core and arbitration-determinism
// tests, which rerun themselves as child processes under each one.

#include <string>
#include <vector>

namespace vt::test {

// "" is OpenBLAS's own choice for this CPU.
inline std::vector<std::string> OpenBlasCoreTypes() {
  std::vector<std::string> out = {"", "Prescott", "Nehalem"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx")) out.push_back("Sandybridge");
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back("Haswell");
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    out.push_back("SkylakeX");
  }
  return out;
}

}  // namespace vt::test
