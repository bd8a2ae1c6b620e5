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
// in T. The repops kernels (T = float) and the fp64 reference kernel round
// each product and each sum (no fma); the fp64 fma kernel rounds once per
// term — the same bits when the packs hold fp32 values (widened), whose
// products are exact in fp64.
template <typename T>
struct MicroKernelOf {
  using Fn = void (*)(std::int64_t kc, const T* a_pack, const T* b_pack, T* c, std::int64_t ldc, bool load_c);
  int mr = 0;
  int nr = 0;
  Fn fn = nullptr;
  const char* name = "";
};
using MicroKernel = MicroKernelOf<float>;
using F64Kernel = MicroKernelOf<double>;

// Kernels for each instruction set (each compiled in its own translation unit
// with its own target flags; call only the ones the CPU supports; fn is null
// where the build lacks one).
MicroKernel ScalarMicroKernel();
MicroKernel Avx2MicroKernel();
MicroKernel Avx512MicroKernel();
F64Kernel Avx2FmaKernel();        // needs FMA besides AVX2
F64Kernel Avx2ReferenceKernel();  // mul, then add: GemmF64Reference's bits
F64Kernel Avx512FmaKernel();
F64Kernel Avx512ReferenceKernel();  // mul, then add: GemmF64Reference's bits

}  // namespace vt::kernels::detail
