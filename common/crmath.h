#pragma once
// Correctly rounded float32 math for certified mode: Exp, Log, Sin, Cos, Tanh,
// Erf, Rsqrt (the set of common/detmath.h, which covers every transcendental
// the kernels call).
//
// Each function returns the float nearest to the exact real result of its
// float argument (round to nearest, ties to even; a tie never occurs for
// these functions away from the exact cases listed below), so every correct
// implementation on every platform returns the same bits. Method
// (docs/kernels.md, "Correctly rounded functions (certified mode)"): a double
// evaluation with a proven relative error bound; when the double value is
// farther than the bound from every float rounding boundary its rounding is
// the answer, otherwise a double-double evaluation with a bound near 2^-88
// decides (Rsqrt: an exact integer-exact comparison). Only IEEE + - * / sqrt
// fma and integer operations are used; no libm, no tables read from outside.
//
// Special values (the conventions of common/detmath.h):
//   NaN in -> canonical quiet NaN 0x7fc00000 (payloads are never passed on).
//   Exp:   +inf -> +inf, -inf -> +0; results above FLT_MAX round to +inf as
//          in IEEE (x >= 88.72284 gives +inf), results below half the least
//          subnormal give +0 (x <= -103.97208), subnormal results are the
//          correctly rounded subnormals.
//   Log:   x < 0 (and -inf) -> NaN; +-0 -> -inf; +inf -> +inf; Log(1) = +0.
//   Sin, Cos: +-inf -> NaN; Sin keeps the sign of zero.
//   Tanh:  +-inf -> +-1; keeps the sign of zero.
//   Erf:   +-inf -> +-1; keeps the sign of zero.
//   Rsqrt: x < 0 (and -inf) -> NaN; +-0 -> +-inf (IEEE 754 rSqrt; MPFR's
//          rec_sqrt gives +inf for -0); +inf -> +0.
// The results never depend on the floating-point environment's flush-to-zero
// or rounding-mode settings beyond the defaults (round to nearest, no FTZ).

#include <cstdint>
#include <optional>

namespace vt::crmath {

float Exp(float x);
float Log(float x);
float Sin(float x);
float Cos(float x);
float Tanh(float x);
float Erf(float x);
float Rsqrt(float x);

// out[i] = Tanh(x[i]) (Exp(x[i])) for i < n, bit for bit, faster on long
// arrays (the fast evaluations of a block run side by side, and a value is
// accepted by a branch-free test). x and out may be the same.
void TanhArray(const float* x, float* out, std::int64_t n);
void ExpArray(const float* x, float* out, std::int64_t n);

// How often this thread's calls left the fast path: `slow` counts calls the
// double evaluation could not decide; `undecided` counts calls the slow path
// could not decide either (then the result is the float nearest to the
// double-double value; the exhaustive runs in docs/kernels.md found none).
struct PathCounts {
  std::uint64_t slow = 0;
  std::uint64_t undecided = 0;
};
PathCounts& ThreadPathCounts();

namespace detail {
// |f| for the Sin/Cos argument reduction of a finite |x| >= pi/4 (x = (4n + q
// + f) pi/2, |f| <= 1/2), rounded to double. The error bound of Sin and Cos
// needs |f| far above 2^-166 (the reduction's window error); vt-crmath-check
// --scan-reduction finds its minimum over all floats.
double QuarterTurnFraction(float ax);

// The slow path alone, for tests: the rounding of `fn`'s double-double
// evaluation at x when it decides, nullopt when it does not. `fn` is one of
// Exp, Log, Sin, Cos, Tanh, Erf (Rsqrt's slow path is an exact comparison);
// x must be an input the function evaluates (finite, not saturated, Log: > 0).
std::optional<float> SlowPathOnly(float (*fn)(float), float x);
// TESTS AND BENCHMARKS ONLY: -1 lets the CPU choose the copy the functions
// run (the default),
// 0 forces the baseline copy, 1 the FMA copy (ignored where there is none).
// Returns whether the FMA copy now runs.
bool SetFmaPathForTesting(int mode);
}  // namespace detail

}  // namespace vt::crmath
