#pragma once
// The copy of the correctly rounded functions compiled with -mfma
// (common/crmath_fma.cpp, x86-64 only); common/crmath.cpp dispatches to it on
// CPUs with FMA. Internal to common/.

#if defined(__x86_64__)
#define VT_CRMATH_HAS_FMA_COPY 1
#else
#define VT_CRMATH_HAS_FMA_COPY 0
#endif

#if VT_CRMATH_HAS_FMA_COPY
namespace vt::crmath::fma_isa {
float Exp(float x);
float Log(float x);
float Sin(float x);
float Cos(float x);
float Tanh(float x);
float Erf(float x);
float Rsqrt(float x);
}  // namespace vt::crmath::fma_isa
#endif
