#pragma once
// Batch normalisation (NCHW, per channel) and layer normalisation (last dim)
// (conventions: kernels/ops/linear.h).

#include <cstdint>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

struct BatchNormParams {
  float eps = 1e-5f;       // > 0, finite
  float momentum = 0.1f;   // in [0, 1]: running = (1 − momentum)·running + momentum·batch
};

// The norm kernels' per-value expressions (T fp32 or fp64), written once:
// the kernels below use them, and so do the element rules that judge one
// value of a norm node (verify/element_rules.h, reduce_rule.h).
// y from its statistics (both norms); rstd from the (biased) variance (both
// norms); a running statistic's update; batch-norm's dx from the channel's
// dγ = Σ dy·x̂ and dβ = Σ dy; layer-norm's dx from g = dy·γ, x̂ and the
// row's a = Σ g / C and b = Σ g·x̂ / C.
template <class T>
T NormValue(T x, T mean, T rstd, T gamma, T beta) {
  return ((x - mean) * rstd) * gamma + beta;
}
template <class M>
typename M::T NormRstd(typename M::T var, typename M::T eps) {
  using T = typename M::T;
  return T(1) / M::Sqrt(var + eps);
}
template <class T>
T BatchNormRunning(T running, T batch, T momentum) {
  return (T(1) - momentum) * running + momentum * batch;
}
template <class T>
T BatchNormGradValue(T dy, T x, T gamma, T mean, T rstd, T dgamma, T dbeta, std::int64_t n) {
  const T k = (gamma * rstd) / static_cast<T>(n);
  const T xhat = (x - mean) * rstd;
  return k * ((static_cast<T>(n) * dy - dbeta) - xhat * dgamma);
}
template <class T>
T LayerNormXhat(T x, T mean, T rstd) {
  return (x - mean) * rstd;
}
template <class T>
T LayerNormGradValue(T g, T xhat, T a, T b, T rstd) {
  return ((g - a) - xhat * b) * rstd;
}

// Training: batch statistics over (N, H, W) of each channel; x [N,C,H,W]
// with N·H·W ≥ 2, gamma/beta/running_mean/running_var [C]. Outputs in order:
// y, new running_mean, new running_var (unbiased batch variance), saved_mean
// [C], saved_rstd [C] = 1/sqrt(biased variance + eps).
Status BatchNorm2dTrain(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, Tensor& y, Tensor& new_running_mean,
                        Tensor& new_running_var, Tensor& saved_mean, Tensor& saved_rstd,
                        const BatchNormParams& params);
// Evaluation: normalise with the running statistics. Output y.
Status BatchNorm2dEval(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, Tensor& y, const BatchNormParams& params);
// Backward of the training forward. Outputs in order: dx, dgamma, dbeta.
Status BatchNorm2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& saved_mean, const Tensor& saved_rstd, Tensor& dx, Tensor& dgamma,
                           Tensor& dbeta);

// x [..., C], gamma/beta [C]. Outputs in order: y (shape of x), mean [R],
// rstd [R] with R the number of rows (product of the leading dims).
Status LayerNormForward(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                        Tensor& mean, Tensor& rstd, float eps);
// Outputs in order: dx, dgamma, dbeta.
Status LayerNormBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                         const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

}  // namespace vt::kernels
