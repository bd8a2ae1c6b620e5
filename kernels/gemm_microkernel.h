#pragma once
// Internal to kernels/: the micro-kernel interface of the repops GEMM. This
// header includes only <cstdint> because the SIMD translation units that
// include it are compiled with wider target flags, and any inline function
// they emitted could be picked by the linker for baseline code.

#include <cstdint>

namespace vt::kernels::detail {

// Computes, for the MR×NR tile at c (row stride ldc):
//   C[r][j] = (load_c ? C[r][j] : +0.0f) + Σ_{p<kc, in order} a_pack[p·MR + r] · b_pack[p·NR + j]
using MicroKernelFn = void (*)(std::int64_t kc, const float* a_pack, const float* b_pack, float* c,
                               std::int64_t ldc, bool load_c);

struct MicroKernel {
  int mr = 0;
  int nr = 0;
  MicroKernelFn fn = nullptr;
  const char* name = "";
};

// Kernels for each instruction set (each compiled in its own translation unit
// with its own target flags; call only the ones the CPU supports).
MicroKernel ScalarMicroKernel();
MicroKernel Avx2MicroKernel();
MicroKernel Avx512MicroKernel();

}  // namespace vt::kernels::detail
