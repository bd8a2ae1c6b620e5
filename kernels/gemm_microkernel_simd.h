#pragma once
// Internal to kernels/: the one body of the vector repops micro-kernels,
// included only by the SIMD translation units (gemm_kernel_avx2.cpp,
// gemm_kernel_avx512.cpp), each compiled with its own target flags.
//
// Everything here has internal linkage (an unnamed namespace), so each
// translation unit gets its own copy compiled for its instruction set and
// the linker can never pick one of them for baseline code.
//
// Order (kernels/gemm_blocked.h): lane j of accumulator (r, v) is output
// C[r][L·v + j], L = the vector's lanes; for p = 0..kc−1:
// acc = Isa::MulAdd(acc, a[p][r], b[p][L·v + j]) — for the repops ISAs and
// the fp64 reference one a rounded multiply then a rounded add (never a
// fused multiply-add), for the fp64 fma one an fma. The tile is MR×(L·V); all loops over r and v are
// fully unrolled so the accumulators live in registers.
//
// `Isa` provides: types Scalar and Vec, kLanes, and always-inline Zero, Load
// (aligned), LoadU, StoreU, Broadcast, MulAdd.

#include <cstdint>

#include "kernels/gemm_microkernel.h"

namespace vt::kernels::detail {
namespace {

template <typename Isa, int kMr, int kVecs, bool kLoadC>
inline __attribute__((always_inline)) void SimdTile(std::int64_t kc, const typename Isa::Scalar* ap,
                                                    const typename Isa::Scalar* bp, typename Isa::Scalar* c,
                                                    std::int64_t ldc) {
  using Vec = typename Isa::Vec;
  constexpr int kL = Isa::kLanes;
  constexpr int kNr = kL * kVecs;
  Vec acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) acc[r][v] = kLoadC ? Isa::LoadU(c + r * ldc + kL * v) : Isa::Zero();
  }
#pragma GCC unroll 2
  for (std::int64_t p = 0; p < kc; ++p) {
    Vec bv[kVecs];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) bv[v] = Isa::Load(bp + p * kNr + kL * v);
#pragma GCC unroll 32
    for (int r = 0; r < kMr; ++r) {
      const Vec a = Isa::Broadcast(ap[p * kMr + r]);
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) acc[r][v] = Isa::MulAdd(acc[r][v], a, bv[v]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) Isa::StoreU(c + r * ldc + kL * v, acc[r][v]);
  }
}

// The MicroKernelFn of an instruction set and tile.
template <typename Isa, int kMr, int kVecs>
void SimdKernel(std::int64_t kc, const typename Isa::Scalar* ap, const typename Isa::Scalar* bp,
                typename Isa::Scalar* c, std::int64_t ldc, bool load_c) {
  if (load_c) {
    SimdTile<Isa, kMr, kVecs, true>(kc, ap, bp, c, ldc);
  } else {
    SimdTile<Isa, kMr, kVecs, false>(kc, ap, bp, c, ldc);
  }
}

template <typename Isa, int kMr, int kVecs>
MicroKernelOf<typename Isa::Scalar> MakeSimdMicroKernel(const char* name) {
  return {kMr, Isa::kLanes * kVecs, &SimdKernel<Isa, kMr, kVecs>, name};
}

}  // namespace
}  // namespace vt::kernels::detail
