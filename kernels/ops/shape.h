#pragma once
// Reshape and transpose (conventions: kernels/ops/linear.h). Both are pure
// data movement; each is its own backward (reshape back to the input shape,
// transpose the same two dims again).

#include <cstdint>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// Same values in row-major order, new shape (rank 1..8, dims ≥ 1, same count).
Status ReshapeOp(const OpContext& ctx, const Tensor& x, const Shape& shape, Tensor& y);
// Swap dims d0 and d1 (0 ≤ d0, d1 < rank), copying the values.
Status TransposeOp(const OpContext& ctx, const Tensor& x, std::int64_t d0, std::int64_t d1, Tensor& y);

}  // namespace vt::kernels
