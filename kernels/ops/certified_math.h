#pragma once
// The ONE place certified mode takes its transcendental functions from
// (docs/kernels.md "Certified mode"): the correctly rounded fp32 functions of
// common/crmath.h, so each result is the float nearest to the exact value and
// does not depend on how any machine evaluates it.

#include "common/crmath.h"

namespace vt::kernels::certmath {

inline float Exp(float x) { return crmath::Exp(x); }
inline float Log(float x) { return crmath::Log(x); }
inline float Tanh(float x) { return crmath::Tanh(x); }
inline float Cos(float x) { return crmath::Cos(x); }
// out[i] = Tanh(x[i]) / Exp(x[i]), the same bits, faster over an array.
inline void TanhArray(const float* x, float* out, std::int64_t n) { crmath::TanhArray(x, out, n); }
inline void ExpArray(const float* x, float* out, std::int64_t n) { crmath::ExpArray(x, out, n); }

}  // namespace vt::kernels::certmath
