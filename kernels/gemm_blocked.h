#pragma once
// Internal to kernels/: the blocked GEMM driver and its micro-kernels. Not
// included by other folders. One driver serves three products:
//
// * the repops GEMM (T = float; the order is kernels/matmul.h's definition):
//   for every C element the micro-kernel carries one fp32 accumulator
//   through p = 0..kc−1 in order (mul, then add; no fma); between k blocks
//   the accumulator is stored to C and reloaded (exact), so each element's
//   sum is the sequential left-to-right sum over all k whatever the
//   blocking, SIMD width or thread split;
// * the widening fp64 GEMM (T = double, GemmWidenedF64): the operands are
//   widened to fp64 as they are packed and C is fp64. Each product is exact,
//   so only the sums round; their order is the same per-element sequence,
//   but nothing relies on it (certified mode's fast path accepts any order);
// * the fp64 GEMMs of fp64 operands (In = T = double) on AVX-512F or AVX2:
//   GemmF64's, with the same fma kernel (which then rounds once per term
//   where a multiply and an add would round twice: one more honest fp64
//   evaluation), and GemmF64Reference's, with a kernel that multiplies then
//   adds — the canonical reference's own sequence per output.
//
// The driver packs A and B into panels (copies, widened for T = double, no
// arithmetic), splits C into register tiles of MR×NR and the k range into
// blocks of a fixed byte size. SIMD lanes are different output columns j;
// threads take different (row block, column group) tiles of C.

#include <cstdint>

#include "kernels/gemm_microkernel.h"
#include "kernels/matmul.h"

namespace vt::kernels::detail {

// b_rows (op(B) not transposed only): row p of op(B) starts at b + b_rows[p]
// instead of b + p·ldb (GemmRepopsRows).
template <typename In, typename T>
void GemmBlocked(const MicroKernelOf<T>& kernel, int threads, const GemmArgs& g, const In* a, const In* b,
                 T* c, const std::int64_t* b_rows = nullptr);

extern template void GemmBlocked(const MicroKernel&, int, const GemmArgs&, const float*, const float*, float*,
                                 const std::int64_t*);
extern template void GemmBlocked(const F64Kernel&, int, const GemmArgs&, const float*, const float*, double*,
                                 const std::int64_t*);
extern template void GemmBlocked(const F64Kernel&, int, const GemmArgs&, const double*, const double*,
                                 double*, const std::int64_t*);

}  // namespace vt::kernels::detail
