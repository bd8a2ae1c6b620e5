#pragma once
// The copy of the correctly rounded functions compiled with -mfma
// (common/crmath_fma.cpp, x86-64 only); common/crmath.cpp dispatches to it on
// CPUs with FMA. Internal to common/.

#include <cstdint>

#if defined(__x86_64__)
#define VT_CRMATH_HAS_FMA_COPY 1
#else
#define VT_CRMATH_HAS_FMA_COPY 0
#endif

// The public functions of common/crmath.h, as one list for the FMA copy's
// declarations and the dispatch (common/crmath.cpp).
#define VT_CRMATH_FUNCTIONS(X) X(Exp) X(Log) X(Sin) X(Cos) X(Tanh) X(Erf) X(Rsqrt)
// Likewise the array functions, out[i] = f(x[i]).
#define VT_CRMATH_ARRAY_FUNCTIONS(X) X(TanhArray) X(ExpArray)

#if VT_CRMATH_HAS_FMA_COPY
namespace vt::crmath::fma_isa {
#define VT_CRMATH_DECLARE(name) float name(float x);
VT_CRMATH_FUNCTIONS(VT_CRMATH_DECLARE)
#undef VT_CRMATH_DECLARE
#define VT_CRMATH_DECLARE_ARRAY(name) void name(const float* x, float* out, std::int64_t n);
VT_CRMATH_ARRAY_FUNCTIONS(VT_CRMATH_DECLARE_ARRAY)
#undef VT_CRMATH_DECLARE_ARRAY
}  // namespace vt::crmath::fma_isa
#endif
