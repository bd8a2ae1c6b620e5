// common/crmath_impl.h compiled with -mfma (common/CMakeLists.txt): std::fma
// becomes one instruction. Only called on CPUs with FMA (common/crmath.cpp).
// The implementation's own helpers are in an anonymous namespace (private to
// this file); the few shared inline helpers it calls (common/detmath.h) are
// also emitted by crmath.cpp, which the link meets first, so the baseline
// copies are the ones kept.

#include "common/crmath_fma.h"

#if VT_CRMATH_HAS_FMA_COPY
#define VT_CRMATH_ISA fma_isa
#include "common/crmath_impl.h"
#undef VT_CRMATH_ISA
#endif
