#pragma once
// Internal to kernels/ops/native_math*.cpp: the one definition of native
// mode's vectorised functions (kernels/ops/native_math.h), written over a
// lane policy V (fp64 lanes: a double, __m256d, __m512d) that each
// translation unit instantiates with its own target flags.
//
// V provides: D (the lane vector), kLanes, Load/Store (fp32 ↔ fp64, the
// store rounding to nearest), Set, Add, Sub, Mul, Div, Fma (a·b + c), Min,
// Max, Abs, Round (to the nearest integer), Scale (p·2^n for integral n in
// [−1022, 1022]), SelectGe (a ≥ b ? x : y) and NanOr (z is NaN ? z : v).

#include <algorithm>
#include <cstdint>

namespace vt::kernels::nativemath::detail {

// exp(z), relative error < 2^-50 for |z| ≤ 708; exp(708) above (+inf once
// rounded to fp32), exactly 0 below −745 (so exp(−inf) = 0); NaN stays NaN.
template <class V>
inline typename V::D Exp(typename V::D z) {
  using D = typename V::D;
  const D zc = V::Min(V::Max(z, V::Set(-708.0)), V::Set(708.0));
  const D n = V::Round(V::Mul(zc, V::Set(1.4426950408889634)));  // z / ln 2
  // r = z − n·ln 2 with ln 2 split (fdlibm's ln2_hi has 32 significant bits,
  // so n·ln2_hi is exact for |n| < 2^21): |r| ≤ ln2/2 + tiny.
  D r = V::Fma(n, V::Set(-6.93147180369123816490e-01), zc);
  r = V::Fma(n, V::Set(-1.90821492927058770002e-10), r);
  // e^r by its Taylor series to degree 13: remainder < (ln2/2)^14/14! < 2^-57.
  constexpr double kInvFact[14] = {1.0,
                                   1.0,
                                   1.0 / 2,
                                   1.0 / 6,
                                   1.0 / 24,
                                   1.0 / 120,
                                   1.0 / 720,
                                   1.0 / 5040,
                                   1.0 / 40320,
                                   1.0 / 362880,
                                   1.0 / 3628800,
                                   1.0 / 39916800,
                                   1.0 / 479001600,
                                   1.0 / 6227020800};
  D p = V::Set(kInvFact[13]);
  for (int k = 12; k >= 0; --k) p = V::Fma(p, r, V::Set(kInvFact[k]));
  return V::NanOr(z, V::SelectGe(z, V::Set(-745.0), V::Scale(p, n), V::Set(0.0)));
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/π)
constexpr double kCubic = 0.044715;

// σ(z) and 1 − σ(z), z = 2·sqrt(2/π)·(x + 0.044715·x³), from e = exp(−|z|).
template <class V>
struct Sigmoid {
  typename V::D s, sc;
};
template <class V>
inline Sigmoid<V> GeluSigmoid(typename V::D x, typename V::D x2) {
  using D = typename V::D;
  const D z = V::Mul(V::Set(2.0 * kSqrt2OverPi), V::Fma(V::Mul(V::Set(kCubic), x2), x, x));
  const D e = Exp<V>(V::Sub(V::Set(0.0), V::Abs(z)));
  const D big = V::Div(V::Set(1.0), V::Add(V::Set(1.0), e));  // σ(|z|)
  const D small = V::Mul(e, big);                              // σ(−|z|)
  return {V::SelectGe(z, V::Set(0.0), big, small), V::SelectGe(z, V::Set(0.0), small, big)};
}

template <class V>
inline typename V::D GeluLanes(typename V::D x) {
  return V::Mul(x, GeluSigmoid<V>(x, V::Mul(x, x)).s);
}

template <class V>
inline typename V::D GeluGradLanes(typename V::D dy, typename V::D x) {
  using D = typename V::D;
  const D x2 = V::Mul(x, x);
  const Sigmoid<V> g = GeluSigmoid<V>(x, x2);
  const D dz = V::Mul(V::Set(2.0 * kSqrt2OverPi), V::Fma(V::Set(3.0 * kCubic), x2, V::Set(1.0)));
  const D d = V::Fma(V::Mul(V::Mul(x, g.s), g.sc), dz, g.s);
  return V::Mul(dy, d);
}

// out[i] = f(lanes of in_0[i], in_1[i], …) over n elements: whole vectors,
// then the tail through a zero-padded copy.
template <class V, int kIn, class F>
inline void Map(const float* const (&in)[kIn], float* out, std::int64_t n, const F& f) {
  using D = typename V::D;
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) {
    D a[kIn];
    for (int k = 0; k < kIn; ++k) a[k] = V::Load(in[k] + i);
    V::Store(out + i, f(a));
  }
  if (i < n) {
    float pad[kIn][V::kLanes] = {};
    float res[V::kLanes];
    D a[kIn];
    for (int k = 0; k < kIn; ++k) {
      std::copy(in[k] + i, in[k] + n, pad[k]);
      a[k] = V::Load(pad[k]);
    }
    V::Store(res, f(a));
    std::copy(res, res + (n - i), out + i);
  }
}

template <class V>
void GeluArray(const float* x, float* y, std::int64_t n) {
  const float* const in[1] = {x};
  Map<V, 1>(in, y, n, [](const typename V::D* a) { return GeluLanes<V>(a[0]); });
}

template <class V>
void GeluBackwardArray(const float* dy, const float* x, float* dx, std::int64_t n) {
  const float* const in[2] = {dy, x};
  Map<V, 2>(in, dx, n, [](const typename V::D* a) { return GeluGradLanes<V>(a[0], a[1]); });
}

template <class V>
void ExpShiftedArray(const float* x, float m, float* y, std::int64_t n) {
  const float* const in[1] = {x};
  const typename V::D md = V::Set(static_cast<double>(m));
  Map<V, 1>(in, y, n, [&](const typename V::D* a) { return Exp<V>(V::Sub(a[0], md)); });
}

// The three entry points of one path.
struct Kernels {
  void (*gelu)(const float*, float*, std::int64_t) = nullptr;
  void (*gelu_backward)(const float*, const float*, float*, std::int64_t) = nullptr;
  void (*exp_shifted)(const float*, float, float*, std::int64_t) = nullptr;
};

template <class V>
Kernels KernelsOf() {
  return {&GeluArray<V>, &GeluBackwardArray<V>, &ExpShiftedArray<V>};
}

Kernels Avx2Kernels();    // empty where not compiled for x86-64
Kernels Avx512Kernels();  // empty where not compiled for x86-64

}  // namespace vt::kernels::nativemath::detail
