#pragma once
// Optimizers, gradient clipping and learning-rate schedules (conventions:
// kernels/ops/linear.h). Optimizers are functional: they read the parameter,
// its gradient and its state, and write the new parameter and new state.
// The learning rate is an input tensor of one element (the output of the
// LrSchedule operator), so a schedule change never changes an attribute.

#include <cstdint>
#include <span>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

struct SgdParams {
  float momentum = 0.0f;      // in [0, 1]
  float weight_decay = 0.0f;  // finite, ≥ 0 (L2, added to the gradient)
  bool nesterov = false;      // needs momentum > 0
};

// param, grad, momentum_buf (same shape; start the buffer at 0), lr (one
// element). Outputs in order: new param, new momentum_buf.
Status SgdStep(const OpContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
               const Tensor& lr, const SgdParams& params, Tensor& new_param, Tensor& new_momentum_buf);

struct AdamWParams {
  float beta1 = 0.9f;         // in [0, 1)
  float beta2 = 0.999f;       // in [0, 1)
  float eps = 1e-8f;          // finite, > 0
  float weight_decay = 0.01f; // finite, ≥ 0 (decoupled)
  std::int64_t step = 1;      // 1-based step number t for the bias corrections
};

// param, grad, m, v (same shape; start m, v at 0), lr (one element).
// Outputs in order: new param, new m, new v.
Status AdamWStep(const OpContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                 const Tensor& lr, const AdamWParams& params, Tensor& new_param, Tensor& new_m, Tensor& new_v);

// Global L2 norm over all gradients; each is scaled by min(1, max_norm /
// (norm + 1e-6)). `outputs` must hold grads.size() + 1 tensors: the clipped
// gradients in order, then the norm [1].
Status ClipGradNorm(const OpContext& ctx, std::span<const Tensor* const> grads, float max_norm,
                    std::span<Tensor> outputs);

// The factor every gradient is multiplied by, from the norm (in T: fp32 in
// native/repops/certified, fp64 in rounded). The one expression the kernel
// and the element rule of the clipped gradients (verify/element_rules.h) use.
template <class T>
T ClipGradScale(T max_norm, T norm) {
  const T coef = max_norm / (norm + static_cast<T>(1e-6));
  return coef < T(1) ? coef : T(1);
}

enum class LrScheduleKind : std::uint8_t {
  kConstant = 0,
  kCosine = 1,  // cosine decay from base_lr to min_lr over [warmup, total)
  kLinear = 2,  // linear decay from base_lr to min_lr over [warmup, total)
};

struct LrScheduleParams {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  std::int64_t warmup_steps = 0;  // ≥ 0: linear warm-up base_lr·(step+1)/warmup
  std::int64_t total_steps = 0;   // ≥ 0: end of the decay (decaying kinds)
  float base_lr = 1e-3f;          // finite, ≥ 0
  float min_lr = 0.0f;            // finite, ≥ 0
};

// lr [1] for 0-based `step` ≥ 0.
Status LrSchedule(const OpContext& ctx, const LrScheduleParams& params, std::int64_t step, Tensor& lr);

}  // namespace vt::kernels
