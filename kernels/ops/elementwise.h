#pragma once
// Element-wise operators: ReLU, GELU (tanh form), dropout, residual add
// (conventions: kernels/ops/linear.h).

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

Status ReluForward(const OpContext& ctx, const Tensor& x, Tensor& y);
// dx = dy where x > 0, else 0.
Status ReluBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx);

// y = 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))).
Status GeluForward(const OpContext& ctx, const Tensor& x, Tensor& y);
Status GeluBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx);

// Inverted dropout with drop probability p ∈ [0, 1). The keep mask of
// element e is a pure function of (ctx.rng().seed, step, node, e) through
// Philox-4x32-10 (common/philox.h), identical in every mode and on every
// device. Outputs in order: y = x·keep·1/(1−p), keep ∈ {0, 1} (the mask the
// backward uses). ctx.rng().step and .node must be < 2^32.
Status DropoutForward(const OpContext& ctx, const Tensor& x, float p, Tensor& y, Tensor& keep);
// dx = dy·1/(1−p) where keep ≠ 0, else 0.
Status DropoutBackward(const OpContext& ctx, const Tensor& dy, const Tensor& keep, float p, Tensor& dx);
// The keep decision itself (exposed for tests and for CUDA parity).
bool DropoutKeep(std::uint64_t seed, std::uint32_t step, std::uint32_t node, std::uint64_t element, float p);

// y = a + b (same shapes). Backward: da = db = dy (outputs in that order).
Status AddForward(const OpContext& ctx, const Tensor& a, const Tensor& b, Tensor& y);
Status AddBackward(const OpContext& ctx, const Tensor& dy, Tensor& da, Tensor& db);

}  // namespace vt::kernels
