#pragma once
// Matrix multiplication in the three modes, plus the raw GEMM entry points
// that other operators (linear, conv2d via im2col, attention) build on.
//
// repops order (the definition of the result): every output element
// C[i][j] = fma-free sequential sum over p = 0..k-1 of A[i][p]*B[p][j],
// accumulated in fp32 left to right starting from +0.0f (or from the existing
// C value when accumulating). Parallelism and SIMD lanes only ever split
// different (i, j); the k loop is never split or reordered.

#include <cstdint>

#include "common/result.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// Row-major views: element (r, c) of a non-transposed matrix X is X[r*ld + c];
// trans_x means the stored matrix is Xᵀ (so element (r, c) is X[c*ld + r]).
struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;  // C += A·B instead of C = A·B
};

// Fixed-order fp32 GEMM (bitwise identical for every threads/simd choice).
void GemmRepops(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c);
// The definition itself: a plain triple loop over hd::RepopsDot (tests and
// tools compare every fast path with it bitwise).
void GemmRepopsReference(const GemmArgs& g, const float* a, const float* b, float* c);
// The SIMD path GemmRepops takes for a requested Simd on this CPU/build.
Simd RepopsSimdUsed(Simd requested);
// OpenBLAS sgemm: the native baseline.
void GemmNative(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c);
// OpenBLAS dgemm on fp64 operands: the working precision of rounded mode.
void GemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c);

struct MatMulOptions {
  bool trans_a = false;
  bool trans_b = false;
};

// out[..., m, n] = op(a)[..., m, k] · op(b)[..., k, n]. `a` may be batched
// (rank ≥ 2, leading dims are batch); `b` is rank 2 (shared) or has the same
// batch dims as `a`. Shape mismatches are Status::Invalid "shape-mismatch".
// `out` is resized (and must not alias `a` or `b`). Rounded mode rounds the
// whole output once, in row-major order, through ctx.RoundOutput.
Status MatMul(const OpContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
              MatMulOptions options = {});

}  // namespace vt::kernels
