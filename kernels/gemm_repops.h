#pragma once
// Internal to kernels/: the blocked repops GEMM driver and its micro-kernels.
// Not included by other folders.
//
// Operation order: see kernels/matmul.h. The driver packs A and B into
// panels (copies, no arithmetic), splits C into register tiles of MR×NR and
// the k range into KC-sized blocks. For every C element the micro-kernel
// carries one fp32 accumulator through p = 0..kc−1 in order (mul, then add;
// no fma); between k blocks the accumulator is stored to C and reloaded
// (exact), so each element's sum is the sequential left-to-right sum over all
// k whatever the blocking, SIMD width or thread split. SIMD lanes are
// different output columns j; threads take different (row block, column
// group) tiles of C.

#include <cstdint>

#include "kernels/gemm_microkernel.h"
#include "kernels/matmul.h"

namespace vt::kernels::detail {

void GemmRepopsBlocked(const MicroKernel& kernel, int threads, const GemmArgs& g, const float* a,
                       const float* b, float* c);

}  // namespace vt::kernels::detail
