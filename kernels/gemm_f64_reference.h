#pragma once
// Internal to kernels/: the tile kernels of GemmF64Reference (matmul.h), the
// canonical fp64 GEMM of rounded mode. Like gemm_microkernel.h, this header
// includes only <cstdint>: the AVX-512 translation unit that includes it is
// compiled with wider target flags.

#include <cstdint>

namespace vt::kernels::detail {

// C rows [0, rows) × columns [0, cols) of the mr×nr tile at c (row stride
// ldc): C[r][j] = (accumulate ? C[r][j] : +0) + Σ_{p<k, in order}
// ap[p·mr + r] · bp[p·nr + j], each product and each sum rounded to fp64, no
// fma. The vector width only decides how many j run side by side: every
// kernel gives the same bits.
using RefTileFn = void (*)(std::int64_t k, const double* ap, const double* bp, double* c, std::int64_t ldc,
                           std::int64_t rows, std::int64_t cols, bool accumulate);

struct RefKernel {
  int mr = 0;
  int nr = 0;
  RefTileFn fn = nullptr;
};

RefKernel RefKernelBaseline();  // 2-lane vectors (SSE2 on x86-64)
RefKernel RefKernelAvx512();    // 8-lane vectors; fn null when not compiled in

}  // namespace vt::kernels::detail
