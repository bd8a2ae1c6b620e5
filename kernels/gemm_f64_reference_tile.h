#pragma once
// Internal to kernels/: the body of GemmF64Reference's baseline tile kernel
// (gemm_f64_reference.h), included by matmul.cpp. Internal linkage (an
// unnamed namespace).
// GCC/clang vector extensions: lane l of acc[r][v] is C[r][kLanes·v + l];
// for p = 0..k−1 in order, acc = acc + (a · b) — a rounded multiply, then a
// rounded add (the build has -ffp-contract=off: never fused).

#include <cstdint>
#include <cstring>

#include "kernels/gemm_f64_reference.h"

namespace vt::kernels::detail {
namespace {

// fp64 vectors of L lanes (a dependent vector_size needs a specialization).
template <int L>
struct F64Vec;
template <>
struct F64Vec<2> {
  typedef double type __attribute__((vector_size(16)));
};

template <int kLanes, int kMr, int kVecs>
void RefTileT(std::int64_t k, const double* ap, const double* bp, double* c, std::int64_t ldc, std::int64_t rows,
              std::int64_t cols, bool accumulate) {
  using V = typename F64Vec<kLanes>::type;
  constexpr int kNr = kLanes * kVecs;
  alignas(64) double tile[kMr][kNr] = {};
  if (accumulate) {
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < cols; ++j) tile[r][j] = c[r * ldc + j];
  }
  V acc[kMr][kVecs];
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kVecs; ++v) std::memcpy(&acc[r][v], &tile[r][kLanes * v], sizeof(V));
  for (std::int64_t p = 0; p < k; ++p) {
    V b[kVecs];
    for (int v = 0; v < kVecs; ++v) std::memcpy(&b[v], bp + p * kNr + kLanes * v, sizeof(V));
    for (int r = 0; r < kMr; ++r) {
      const double a = ap[p * kMr + r];
      V av;
      for (int l = 0; l < kLanes; ++l) av[l] = a;
      for (int v = 0; v < kVecs; ++v) acc[r][v] = acc[r][v] + av * b[v];
    }
  }
  for (int r = 0; r < kMr; ++r)
    for (int v = 0; v < kVecs; ++v) std::memcpy(&tile[r][kLanes * v], &acc[r][v], sizeof(V));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) c[r * ldc + j] = tile[r][j];
}

template <int kLanes, int kMr, int kVecs>
RefKernel MakeRefKernel() {
  return {kMr, kLanes * kVecs, &RefTileT<kLanes, kMr, kVecs>};
}

}  // namespace
}  // namespace vt::kernels::detail
