#pragma once
// Internal to kernels/: the micro-kernel interface of the blocked GEMM driver
// (gemm_blocked.h). This header includes only <cstdint> because the SIMD
// translation units that include it are compiled with wider target flags,
// and any inline function they emitted could be picked by the linker for
// baseline code.

#include <cstdint>

namespace vt::kernels::detail {

// Computes, for the MR×NR tile at c (row stride ldc):
//   C[r][j] = (load_c ? C[r][j] : +0) + Σ_{p<kc, in order} a_pack[p·MR + r] · b_pack[p·NR + j]
// in T. The repops kernels (T = float) round each product and each sum (no
// fma); the widening kernels (T = double, the packs hold fp32 values
// widened) use fma, which gives the same bits as a multiply and an add
// because the product of two fp32 values is exact in fp64.
template <typename T>
struct MicroKernelOf {
  using Fn = void (*)(std::int64_t kc, const T* a_pack, const T* b_pack, T* c, std::int64_t ldc, bool load_c);
  int mr = 0;
  int nr = 0;
  Fn fn = nullptr;
  const char* name = "";
};
using MicroKernel = MicroKernelOf<float>;
using WideningKernel = MicroKernelOf<double>;

// Kernels for each instruction set (each compiled in its own translation unit
// with its own target flags; call only the ones the CPU supports; fn is null
// where the build lacks one).
MicroKernel ScalarMicroKernel();
MicroKernel Avx2MicroKernel();
MicroKernel Avx512MicroKernel();
WideningKernel Avx512WideningKernel();

}  // namespace vt::kernels::detail
