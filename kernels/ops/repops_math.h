#pragma once
// Repops mode's transcendentals over arrays: the same bits as one call of
// common/detmath.h per element (RepopsMath::Exp, RepopsMath::Tanh), several
// times faster, because detmath's Exp and Tanh are branch-free and these
// loops are compiled per instruction set (kernels/simd_clones.h). `x` may
// equal `out` (element i is read before it is written).

#include <cstdint>

namespace vt::kernels::repopsmath {

// out[i] = detmath::Exp(x[i] − m), the difference in fp32.
void ExpShifted(const float* x, float m, float* out, std::int64_t n);
// out[i] = detmath::Tanh(x[i]).
void TanhArray(const float* x, float* out, std::int64_t n);

}  // namespace vt::kernels::repopsmath
