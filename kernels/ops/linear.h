#pragma once
// Linear layers and the backward of the core MatMul.
//
// All operators of kernels/ops share these conventions:
//  * fp32 tensors in and out; outputs are (re)shaped by the operator and must
//    not alias inputs;
//  * every shape and attribute is validated: Status::Invalid with a stable
//    reason ("shape-mismatch", "bad-attribute", "bad-index", "empty-tensor",
//    "too-large") and never a crash, whatever the input;
//  * ctx.mode() selects native / repops / rounded (docs/kernels.md,
//    "Modes"); in rounded mode every output is rounded through
//    ctx.RoundOutput in the documented output order;
//  * the operation order of repops (and the fp64 order of rounded mode) is
//    documented at the top of each .cpp and in docs/kernels.md.

#include "common/result.h"
#include "kernels/matmul.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// y[..., n] = x[..., k] · w[n, k]ᵀ + b[n]. `b` may be null (no bias).
Status LinearForward(const OpContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y);

// Outputs in order: dx (shape of x), dw [n, k], db [n] (always produced;
// ignore it for a layer without bias).
Status LinearBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                      Tensor& dw, Tensor& db);

// Backward of MatMul(a, b, options): outputs in order da (shape of a), db
// (shape of b; summed over the batch when b is shared).
Status MatMulBackward(const OpContext& ctx, const Tensor& dy, const Tensor& a, const Tensor& b, Tensor& da,
                      Tensor& db, MatMulOptions options = {});

// Validation of MatMul's operands (shared with the registry, which checks
// before calling the core MatMul).
Status ValidateMatMul(const Tensor& a, const Tensor& b, MatMulOptions options, Shape* out_shape);

}  // namespace vt::kernels
