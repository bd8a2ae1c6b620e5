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

// The per-row expressions of the kernels below, shared with the element
// rule that re-executes one step of them (verify/reduce_rule.h):
//   the running max m ← MaxStep(m, v), from m = row[0];
//   dlogits[k] = CrossEntropyGradValue(Exp(x_k − m), s, k == label, dloss / rows);
//   the row's loss l = CrossEntropyRowLoss(m, Log(s), x_label).
template <class T>
T MaxStep(T m, T v) {
  return v > m ? v : m;  // a NaN v never replaces m; a NaN m stays
}
template <class T>
T CrossEntropyRowLoss(T m, T log_s, T x_label) {
  return (m + log_s) - x_label;
}
template <class T>
T CrossEntropyGradValue(T e, T s, bool is_label, T g) {
  const T p = e / s;
  return (is_label ? p - T(1) : p) * g;
}

// logits [..., K] (rank ≥ 2), labels [...] (the leading dims of logits):
// class indices as fp32 integer values in [0, K) (else "bad-index").
// loss [1] = mean over rows of (logsumexp(row) − row[label]).
Status CrossEntropyForward(const OpContext& ctx, const Tensor& logits, const Tensor& labels, Tensor& loss);
// dloss [1] (the upstream gradient of the loss) → dlogits [..., K] =
// (softmax(row) − onehot(label))·dloss / rows.
Status CrossEntropyBackward(const OpContext& ctx, const Tensor& dloss, const Tensor& logits, const Tensor& labels,
                            Tensor& dlogits);

}  // namespace vt::kernels
