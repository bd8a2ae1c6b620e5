// Native mode's vectorised functions: the scalar path and the dispatch
// (kernels/ops/native_math.h). The code of every path is
// kernels/ops/native_math_impl.h.

#include "kernels/ops/native_math.h"

#include <cmath>

#include "kernels/ops/native_math_impl.h"

namespace vt::kernels::nativemath {
namespace detail {
namespace {

// One double per "vector": the same code without SIMD (and without a fused
// multiply-add, which costs a libm call where the CPU lacks it; the bound
// holds either way).
struct Scalar {
  using D = double;
  static constexpr int kLanes = 1;
  static D Load(const float* p) { return static_cast<double>(*p); }
  static void Store(float* p, D v) { *p = static_cast<float>(v); }
  static D Set(double x) { return x; }
  static D Add(D a, D b) { return a + b; }
  static D Sub(D a, D b) { return a - b; }
  static D Mul(D a, D b) { return a * b; }
  static D Div(D a, D b) { return a / b; }
  static D Fma(D a, D b, D c) { return a * b + c; }
  // As minpd/maxpd: a NaN first operand gives the second (Exp clamps NaN to
  // a number, then NanOr restores it; never a NaN into ldexp's int).
  static D Min(D a, D b) { return a < b ? a : b; }
  static D Max(D a, D b) { return a > b ? a : b; }
  static D Abs(D a) { return std::fabs(a); }
  static D Round(D a) { return std::nearbyint(a); }
  static D Scale(D p, D n) { return std::ldexp(p, static_cast<int>(n)); }
  static D SelectGe(D a, D b, D x, D y) { return a >= b ? x : y; }
  static D NanOr(D z, D v) { return std::isnan(z) ? z : v; }
};

// The path a request runs: ResolveSimd's, narrowed to what is compiled in
// (and AVX2 only with FMA).
Simd Usable(Simd requested) {
  static const bool avx512 = Avx512Kernels().gelu != nullptr;
  static const bool avx2 = Avx2Kernels().gelu != nullptr && CpuHasFma();
  Simd path = ResolveSimd(requested);
  if (path == Simd::kAvx512 && !avx512) path = Simd::kAvx2;
  if (path == Simd::kAvx2 && !avx2) path = Simd::kScalar;
  return path;
}

const Kernels& For(Simd requested) {
  static const Kernels scalar = KernelsOf<Scalar>();
  static const Kernels avx2 = Avx2Kernels();
  static const Kernels avx512 = Avx512Kernels();
  switch (Usable(requested)) {
    case Simd::kAvx512:
      return avx512;
    case Simd::kAvx2:
      return avx2;
    default:
      return scalar;
  }
}

}  // namespace
}  // namespace detail

Simd PathFor(Simd requested) { return detail::Usable(requested); }

void Gelu(const float* x, float* y, std::int64_t n, Simd simd) { detail::For(simd).gelu(x, y, n); }

void GeluBackward(const float* dy, const float* x, float* dx, std::int64_t n, Simd simd) {
  detail::For(simd).gelu_backward(dy, x, dx, n);
}

void ExpShifted(const float* x, float m, float* y, std::int64_t n, Simd simd) {
  detail::For(simd).exp_shifted(x, m, y, n);
}

}  // namespace vt::kernels::nativemath
