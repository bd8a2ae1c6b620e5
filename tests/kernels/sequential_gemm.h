#pragma once
// The sequential GEMM, written out for tests independently of the library:
// C[i][j] = (g.accumulate ? C[i][j] : +0) + a(i,0)·b(0,j) + a(i,1)·b(1,j) + …,
// p in order, each product and each sum rounded to `Acc` (a multiply, then
// an add; the tests build with -ffp-contract=off); operands of type `In` are
// converted to Acc as read. Acc = float: the repops GEMM's definition.
// Acc = double (In float or double): GemmF64Reference's, and what
// GemmWidenedF64 gives for fp32 operands.

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace vt::kernels::testing {

template <class Acc, class In>
void SequentialGemm(const GemmArgs& g, const In* a, const In* b, Acc* c) {
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      Acc acc = g.accumulate ? c[i * g.ldc + j] : Acc(0);
      for (std::int64_t p = 0; p < g.k; ++p) {
        const Acc x = g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
        const Acc y = g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j];
        const Acc prod = x * y;
        acc = acc + prod;
      }
      c[i * g.ldc + j] = acc;
    }
  }
}

}  // namespace vt::kernels::testing
