#pragma once
// The sequential fp64 GEMM, written out for tests independently of the
// library: C[i][j] = (g.accumulate ? C[i][j] : +0) + a(i,0)·b(0,j) +
// a(i,1)·b(1,j) + …, p in order, each product and each sum rounded to fp64
// (a multiply, then an add; the tests build with -ffp-contract=off). `In`
// is float (operands widened as read) or double. The definition of
// GemmF64Reference, and what GemmWidenedF64 gives for fp32 operands.

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace vt::kernels::testing {

template <class In>
void SequentialGemmF64(const GemmArgs& g, const In* a, const In* b, double* c) {
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      double acc = g.accumulate ? c[i * g.ldc + j] : 0.0;
      for (std::int64_t p = 0; p < g.k; ++p) {
        const double x = g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
        const double y = g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j];
        const double prod = x * y;
        acc = acc + prod;
      }
      c[i * g.ldc + j] = acc;
    }
  }
}

}  // namespace vt::kernels::testing
