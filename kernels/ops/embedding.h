#pragma once
// Embedding lookup (conventions: kernels/ops/linear.h).
//
// Indices travel as fp32 tensors (every operator input is a float tensor):
// each must be an integer value in [0, V) exactly, else Status::Invalid
// "bad-index" (NaN, ±inf, fractions and negative values included).

#include <cstdint>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// Whether `v` names a row of a table of `rows` rows: an integer value in
// [0, rows) exactly (the check every index passes; the element rule of
// embedding reads one index with it, verify/element_rules.h).
bool IsRowIndex(float v, std::int64_t rows);

// indices [...], weight [V, D] → y [..., D].
Status EmbeddingForward(const OpContext& ctx, const Tensor& indices, const Tensor& weight, Tensor& y);
// dy [..., D], indices [...] → dweight [V, D] with V = num_embeddings (an
// attribute, so the referee need not ship the table just for its shape).
Status EmbeddingBackward(const OpContext& ctx, const Tensor& dy, const Tensor& indices,
                         std::int64_t num_embeddings, Tensor& dweight);

}  // namespace vt::kernels
