// Loops of detmath calls, one clone per instruction set. `flatten` inlines
// Exp and Tanh into the loop (GCC's inliner otherwise keeps the call, which
// stops the vectoriser); GCC vectorises them with the library's
// -fvect-cost-model=dynamic.

#include "kernels/ops/repops_math.h"

#include "common/detmath.h"
#include "kernels/simd_clones.h"

namespace vt::kernels::repopsmath {

VT_SIMD_CLONES __attribute__((flatten)) void ExpShifted(const float* x, float m, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = detmath::Exp(x[i] - m);
}

VT_SIMD_CLONES __attribute__((flatten)) void TanhArray(const float* x, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = detmath::Tanh(x[i]);
}

}  // namespace vt::kernels::repopsmath
