#pragma once
// Internal to kernels/: the baseline tile kernel of GemmF64Reference
// (matmul.h), the canonical fp64 GEMM of rounded mode.

#include <cstdint>

namespace vt::kernels::detail {

// C rows [0, rows) × columns [0, cols) of the mr×nr tile at c (row stride
// ldc): C[r][j] = (accumulate ? C[r][j] : +0) + Σ_{p<k, in order}
// ap[p·mr + r] · bp[p·nr + j], each product and each sum rounded to fp64, no
// fma.
using RefTileFn = void (*)(std::int64_t k, const double* ap, const double* bp, double* c, std::int64_t ldc,
                           std::int64_t rows, std::int64_t cols, bool accumulate);

struct RefKernel {
  int mr = 0;
  int nr = 0;
  RefTileFn fn = nullptr;
};

// 2-lane vectors (SSE2 on x86-64): GemmF64Reference on CPUs without AVX2
// (on AVX2 and AVX-512 it runs the blocked driver, kernels/gemm_blocked.h).
RefKernel RefKernelBaseline();

}  // namespace vt::kernels::detail
