// Loops of detmath calls, one clone per instruction set. Under GCC,
// `flatten` inlines Exp and Tanh into the loop (its inliner otherwise keeps
// the call, which stops the vectoriser), and the library's
// -fvect-cost-model=dynamic lets it vectorise them. Clang refuses `flatten`
// beside target_clones and needs neither: it inlines and vectorises every
// clone as it is.

#include "kernels/ops/repops_math.h"

#include "common/detmath.h"
#include "kernels/simd_clones.h"

#if defined(__clang__)
#define VT_FLATTEN
#else
#define VT_FLATTEN __attribute__((flatten))
#endif

namespace vt::kernels::repopsmath {

VT_SIMD_CLONES VT_FLATTEN void ExpShifted(const float* x, float m, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = detmath::Exp(x[i] - m);
}

VT_SIMD_CLONES VT_FLATTEN void TanhArray(const float* x, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = detmath::Tanh(x[i]);
}

}  // namespace vt::kernels::repopsmath
