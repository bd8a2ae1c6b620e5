#pragma once
// Internal to kernels/ops: the per-element arithmetic of the element-wise
// operators and optimizers, written once over a policy M (op_util.h) and a
// value type T, so every mode — and a future CUDA kernel with a device
// policy — evaluates the same expression in the same order.

#include "common/hd.h"

namespace vt::kernels::opsdetail {

// GELU, tanh form. Constants: sqrt(2/π) and 0.044715 in T.
template <class T>
struct GeluConstants {
  static constexpr T kSqrt2OverPi = static_cast<T>(0.7978845608028654);
  static constexpr T kCubic = static_cast<T>(0.044715);
  static constexpr T kCubic3 = static_cast<T>(0.134145);  // 3·0.044715
};

// The argument of GELU's tanh: sqrt(2/π)·(x + 0.044715·((x·x)·x)).
template <class T>
VT_HD inline T GeluInner(T x) {
  using C = GeluConstants<T>;
  return C::kSqrt2OverPi * (x + C::kCubic * ((x * x) * x));
}

// y = (0.5·x)·(1 + t), t = Tanh(GeluInner(x)).
template <class T>
VT_HD inline T GeluFromTanh(T x, T t) {
  return (T(0.5) * x) * (T(1) + t);
}

template <class M, class T>
VT_HD inline T GeluValue(T x) {
  return GeluFromTanh(x, M::Tanh(GeluInner(x)));
}

// dy/dx = 0.5·(1 + t) + ((0.5·x)·(1 − t·t))·(sqrt(2/π)·(1 + 0.134145·(x·x))),
// t = Tanh(GeluInner(x)).
template <class T>
VT_HD inline T GeluDerivativeFromTanh(T x, T t) {
  using C = GeluConstants<T>;
  const T dinner = C::kSqrt2OverPi * (T(1) + C::kCubic3 * (x * x));
  return T(0.5) * (T(1) + t) + ((T(0.5) * x) * (T(1) - t * t)) * dinner;
}

template <class M, class T>
VT_HD inline T GeluDerivative(T x) {
  return GeluDerivativeFromTanh(x, M::Tanh(GeluInner(x)));
}

// SGD, per element (all in T):
//   g  = grad + wd·p
//   b' = mu·b + g
//   u  = nesterov ? g + mu·b' : b'
//   p' = p − lr·u
template <class T>
struct SgdResult {
  T param, buf;
};
template <class T>
VT_HD inline SgdResult<T> SgdElement(T p, T grad, T b, T lr, T mu, T wd, bool nesterov) {
  const T g = grad + wd * p;
  const T nb = mu * b + g;
  const T u = nesterov ? g + mu * nb : nb;
  return {p - lr * u, nb};
}

// AdamW, per element (all in T), with the per-step constants
//   c1 = 1 − β1, c2 = 1 − β2, bc1 = 1 − β1^t, bc2 = 1 − β2^t (PowInt),
//   decay = 1 − lr·wd:
//   m' = β1·m + c1·g
//   v' = β2·v + (c2·g)·g
//   p' = p·decay − lr·((m' / bc1) / (Sqrt(v' / bc2) + eps))
template <class T>
struct AdamWConstants {
  T beta1, beta2, c1, c2, bc1, bc2, decay, lr, eps;
};
template <class T>
struct AdamWResult {
  T param, m, v;
};
// m' and v' alone (rounded mode rounds each output in pieces of its own).
template <class T>
struct AdamWMomentsResult {
  T m, v;
};
template <class T>
VT_HD inline AdamWMomentsResult<T> AdamWMoments(T g, T m, T v, const AdamWConstants<T>& k) {
  return {k.beta1 * m + k.c1 * g, k.beta2 * v + (k.c2 * g) * g};
}
template <class M, class T>
VT_HD inline AdamWResult<T> AdamWElement(T p, T g, T m, T v, const AdamWConstants<T>& k) {
  const auto [nm, nv] = AdamWMoments(g, m, v, k);
  const T mhat = nm / k.bc1;
  const T vhat = nv / k.bc2;
  return {p * k.decay - k.lr * (mhat / (M::Sqrt(vhat) + k.eps)), nm, nv};
}

}  // namespace vt::kernels::opsdetail
