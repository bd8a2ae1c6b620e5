#pragma once
// Native mode's vectorised transcendentals (docs/kernels.md "Step
// performance"): GELU, its derivative and exp(x − m), evaluated in fp64 on
// AVX-512 / AVX2+FMA vectors (a scalar loop of the same code otherwise) and
// rounded once to fp32. Native mode commits to nothing, so these are not the
// operators' fixed expressions (repops, rounded and certified keep theirs);
// they are the same functions, evaluated more accurately than the fp32
// expression with libm's tanhf, and several times faster:
//
//   Gelu:          y  = x·σ(z),                 z = 2·sqrt(2/π)·(x + 0.044715·x³)
//   GeluBackward:  dx = dy·(σ(z) + x·σ(z)·(1 − σ(z))·z'),  z' = 2·sqrt(2/π)·(1 + 0.134145·x²)
//   ExpShifted:    y  = exp(x − m)  (the difference exact in fp64)
//
// (x·σ(z) = 0.5·x·(1 + tanh(z/2)) exactly; σ and 1 − σ both come from
// e = exp(−|z|), so neither tail cancels.) exp is Cody–Waite reduction plus
// a degree-13 Taylor polynomial (relative error < 2^-50 before the final
// rounding). Bound, tested against an independent long-double evaluation on
// every path this CPU has (tests/kernels/ops/native_math_test.cpp): every
// result within 1 fp32 ulp of the exact function's value (ulp of the
// reference, subnormal spacing below 2^-126); NaN in, NaN out.

#include <cstdint>

#include "kernels/mode.h"

namespace vt::kernels::nativemath {

// `simd` picks the path: kAuto → the widest this CPU runs (AVX2 also needs
// FMA); a path wider than the CPU falls back like ResolveSimd. `in` may
// equal `out` (element i is read before it is written).
void Gelu(const float* x, float* y, std::int64_t n, Simd simd = Simd::kAuto);
void GeluBackward(const float* dy, const float* x, float* dx, std::int64_t n, Simd simd = Simd::kAuto);
void ExpShifted(const float* x, float m, float* y, std::int64_t n, Simd simd = Simd::kAuto);

// The path a request runs (kScalar, kAvx2 or kAvx512).
Simd PathFor(Simd requested);

}  // namespace vt::kernels::nativemath
