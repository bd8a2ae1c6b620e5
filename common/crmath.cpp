#include "common/crmath.h"

// The implementation is common/crmath_impl.h, compiled twice: here for the
// baseline ISA (vt::crmath::base) and in crmath_fma.cpp with -mfma
// (vt::crmath::fma_isa), where its ~40 fma per evaluation are instructions
// rather than libm calls (9 % of a certified gpt-tiny run was libm's fma).
// The public functions pick one per call; both give the same bits.

#include <atomic>

#define VT_CRMATH_ISA base
#include "common/crmath_impl.h"
#undef VT_CRMATH_ISA

#include "common/crmath_fma.h"

namespace vt::crmath {

PathCounts& ThreadPathCounts() {
  thread_local PathCounts counts;
  return counts;
}

namespace {

bool CpuHasFma() {
#if VT_CRMATH_HAS_FMA_COPY
  __builtin_cpu_init();  // (checks that the OS saves the AVX state too)
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// -1: the CPU decides; 0: baseline; 1: fma (tests).
std::atomic<int> g_forced{-1};
const bool kCpuHasFma = CpuHasFma();

bool UseFma() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  return forced < 0 ? kCpuHasFma : forced == 1;
}

}  // namespace

#if VT_CRMATH_HAS_FMA_COPY
#define VT_CRMATH_DISPATCH(name) \
  float name(float x) { return UseFma() ? fma_isa::name(x) : base::name(x); }
#else
#define VT_CRMATH_DISPATCH(name) \
  float name(float x) { return base::name(x); }
#endif
VT_CRMATH_FUNCTIONS(VT_CRMATH_DISPATCH)
#undef VT_CRMATH_DISPATCH

#if VT_CRMATH_HAS_FMA_COPY
#define VT_CRMATH_ARRAY(name)                             \
  void name(const float* x, float* out, std::int64_t n) { \
    if (UseFma()) {                                       \
      fma_isa::name(x, out, n);                           \
      return;                                             \
    }                                                     \
    base::name(x, out, n);                                \
  }
#else
#define VT_CRMATH_ARRAY(name) \
  void name(const float* x, float* out, std::int64_t n) { base::name(x, out, n); }
#endif
VT_CRMATH_ARRAY_FUNCTIONS(VT_CRMATH_ARRAY)
#undef VT_CRMATH_ARRAY

namespace detail {

double QuarterTurnFraction(float ax) { return base::detail::QuarterTurnFraction(ax); }

std::optional<float> SlowPathOnly(float (*fn)(float), float x) {
  // The public function → the same function of the baseline copy (the slow
  // paths are the same code in both).
  const struct {
    float (*pub)(float);
    float (*own)(float);
  } table[] = {{Exp, base::Exp}, {Log, base::Log}, {Sin, base::Sin},
               {Cos, base::Cos}, {Tanh, base::Tanh}, {Erf, base::Erf}};
  for (const auto& e : table) {
    if (e.pub == fn) return base::detail::SlowPathOnly(e.own, x);
  }
  return std::nullopt;
}

bool SetFmaPathForTesting(int mode) {
  g_forced.store(mode);
  return UseFma();
}

}  // namespace detail

}  // namespace vt::crmath
