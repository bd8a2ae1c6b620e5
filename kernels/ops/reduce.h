#pragma once
// Sum and mean reductions (conventions: kernels/ops/linear.h).
//
// `axis` < 0 reduces every element to shape [1]; otherwise it must be a
// dimension of x (0 ≤ axis < rank) and is removed from the shape (a rank-1
// input gives shape [1]).

#include <cstdint>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

inline constexpr std::int64_t kReduceAll = -1;

Status SumForward(const OpContext& ctx, const Tensor& x, std::int64_t axis, Tensor& y);
Status MeanForward(const OpContext& ctx, const Tensor& x, std::int64_t axis, Tensor& y);
// dy has the forward's output shape; x supplies the input shape.
Status SumBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, std::int64_t axis, Tensor& dx);
Status MeanBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, std::int64_t axis, Tensor& dx);

// The output shape of a reduction (validates axis).
Result<Shape> ReducedShape(const Shape& in, std::int64_t axis);

}  // namespace vt::kernels
