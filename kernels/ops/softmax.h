#pragma once
// Softmax over the last dimension and cross-entropy with logits
// (conventions: kernels/ops/linear.h).

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// x [..., K] → y [..., K], max-subtracted.
Status SoftmaxForward(const OpContext& ctx, const Tensor& x, Tensor& y);
// dx = y·(dy − Σ_k dy·y) per row; inputs dy and the forward output y.
Status SoftmaxBackward(const OpContext& ctx, const Tensor& dy, const Tensor& y, Tensor& dx);

// logits [..., K] (rank ≥ 2), labels [...] (the leading dims of logits):
// class indices as fp32 integer values in [0, K) (else "bad-index").
// loss [1] = mean over rows of (logsumexp(row) − row[label]).
Status CrossEntropyForward(const OpContext& ctx, const Tensor& logits, const Tensor& labels, Tensor& loss);
// dloss [1] (the upstream gradient of the loss) → dlogits [..., K] =
// (softmax(row) − onehot(label))·dloss / rows.
Status CrossEntropyBackward(const OpContext& ctx, const Tensor& dloss, const Tensor& logits, const Tensor& labels,
                            Tensor& dlogits);

}  // namespace vt::kernels
