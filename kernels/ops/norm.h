#pragma once
// Batch normalisation (NCHW, per channel) and layer normalisation (last dim)
// (conventions: kernels/ops/linear.h).

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

struct BatchNormParams {
  float eps = 1e-5f;       // > 0, finite
  float momentum = 0.1f;   // in [0, 1]: running = (1 − momentum)·running + momentum·batch
};

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
