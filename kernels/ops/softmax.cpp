// Softmax and cross-entropy. Rows (all leading positions) run in parallel;
// within a row of K values (T = fp32, or fp64 in rounded mode):
//
// SoftmaxForward:  m = max over k (sequential, exact; NaN is skipped by the
//                  comparison and surfaces through Exp); e_k = Exp(x_k − m);
//                  s = TreeSum(e_k); y_k = e_k / s
// SoftmaxBackward: d = TreeSum(dy_k·y_k); dx_k = y_k·(dy_k − d)
// CrossEntropyForward: per row: m as above, s = TreeSum(Exp(x_k − m)),
//                  l_r = (m + Log(s)) − x_label; loss = TreeSum over rows of
//                  l_r, divided by the row count R
// CrossEntropyBackward: g = dloss / R; per row: m, s as above;
//                  p_k = Exp(x_k − m) / s; dx_k = (k == label ? p_k − 1 : p_k)·g
// Exp and Log are the mode's (kernels/ops/op_util.h): detmath in repops,
// fp64 in rounded, correctly rounded in certified, vectorised fp64 or libm in
// native.

#include "kernels/ops/softmax.h"

#include <cmath>

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

template <class T>
T RowMax(const float* row, std::int64_t k) {
  T m = static_cast<T>(row[0]);
  for (std::int64_t i = 1; i < k; ++i) m = MaxStep(m, static_cast<T>(row[i]));
  return m;
}

Status CheckCrossEntropy(const Tensor& logits, const Tensor& labels, std::vector<std::int64_t>* classes) {
  VT_TRY(CheckInput(logits, "cross-entropy logits"));
  VT_TRY(CheckInput(labels, "cross-entropy labels"));
  if (logits.rank() < 2) return ShapeMismatch("cross-entropy logits need rank >= 2");
  const Shape lead(logits.shape().begin(), logits.shape().end() - 1);
  VT_TRY(CheckShapeIs(labels, lead, "cross-entropy labels"));
  const std::int64_t k = logits.dim(-1);
  classes->resize(static_cast<std::size_t>(labels.numel()));
  for (std::int64_t r = 0; r < labels.numel(); ++r) {
    const float v = labels[r];
    if (!(v >= 0.0f && static_cast<double>(v) < static_cast<double>(k)) || std::floor(v) != v) {
      return BadIndex("label " + std::to_string(v) + " at row " + std::to_string(r) + " is not a class in [0, " +
                      std::to_string(k) + ")");
    }
    (*classes)[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(v);
  }
  return Status::Ok();
}

}  // namespace

Status SoftmaxForward(const OpContext& ctx, const Tensor& x, Tensor& y) {
  VT_TRY(CheckInput(x, "softmax x"));
  if (x.rank() < 1) return ShapeMismatch("softmax needs x [..., K]");
  const std::int64_t k = x.dim(-1), rows = x.numel() / k;
  y.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    ParallelFor(ctx.threads(), rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* in = x.data() + r * k;
        T* out = yo + r * k;
        const T m = RowMax<T>(in, k);
        M::ExpShifted(in, m, out, k);
        const T s = SumOf<M>(k, [&](std::int64_t i) { return out[i]; });
        for (std::int64_t i = 0; i < k; ++i) out[i] = out[i] / s;
      }
    });
    return outs.Commit(ctx);
  });
}

Status SoftmaxBackward(const OpContext& ctx, const Tensor& dy, const Tensor& y, Tensor& dx) {
  VT_TRY(CheckInput(y, "softmax y"));
  VT_TRY(CheckInput(dy, "softmax dy"));
  VT_TRY(CheckSameShape(dy, y, "softmax dy vs y"));
  if (y.rank() < 1) return ShapeMismatch("softmax needs y [..., K]");
  const std::int64_t k = y.dim(-1), rows = y.numel() / k;
  dx.Resize(y.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    ParallelFor(ctx.threads(), rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* yr = y.data() + r * k;
        const float* g = dy.data() + r * k;
        const T d = DotOf<M>(k, [&](std::int64_t i) { return static_cast<T>(g[i]); },
                             [&](std::int64_t i) { return static_cast<T>(yr[i]); });
        T* out = dxo + r * k;
        for (std::int64_t i = 0; i < k; ++i) out[i] = static_cast<T>(yr[i]) * (static_cast<T>(g[i]) - d);
      }
    });
    return outs.Commit(ctx);
  });
}

Status CrossEntropyForward(const OpContext& ctx, const Tensor& logits, const Tensor& labels, Tensor& loss) {
  std::vector<std::int64_t> classes;
  VT_TRY(CheckCrossEntropy(logits, labels, &classes));
  const std::int64_t k = logits.dim(-1), rows = labels.numel();
  loss.Resize({1});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* lo = outs.Bind(loss);
    std::vector<T> row_loss(static_cast<std::size_t>(rows));
    // The exponentials of a row computed together first (ExpShifted: on
    // vectors, the same bits as one M::Exp each), then summed; rounded mode
    // (fp64) sums M::Exp directly.
    constexpr bool kVectorExp = !M::kRounded;
    // One row of exponentials per chunk.
    ChunkScratch<T> exps =
        kVectorExp ? ChunkScratch<T>(ParallelChunks(ctx.threads(), rows), k) : ChunkScratch<T>();
    ParallelForChunks(ctx.threads(), rows, [&](std::int64_t chunk, std::int64_t r0, std::int64_t r1) {
      T* const e = exps[chunk];
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* in = logits.data() + r * k;
        const T m = RowMax<T>(in, k);
        T s;
        if constexpr (kVectorExp) {
          M::ExpShifted(in, m, e, k);
          s = SumOf<M>(k, [&](std::int64_t i) { return e[i]; });
        } else {
          s = SumOf<M>(k, [&](std::int64_t i) { return M::Exp(static_cast<T>(in[i]) - m); });
        }
        row_loss[static_cast<std::size_t>(r)] =
            CrossEntropyRowLoss(m, M::Log(s), static_cast<T>(in[classes[static_cast<std::size_t>(r)]]));
      }
    });
    lo[0] = MeanOf<M>(rows, [&](std::int64_t r) { return row_loss[static_cast<std::size_t>(r)]; });
    return outs.Commit(ctx);
  });
}

Status CrossEntropyBackward(const OpContext& ctx, const Tensor& dloss, const Tensor& logits, const Tensor& labels,
                            Tensor& dlogits) {
  std::vector<std::int64_t> classes;
  VT_TRY(CheckCrossEntropy(logits, labels, &classes));
  VT_TRY(CheckInput(dloss, "cross-entropy dloss"));
  if (dloss.numel() != 1) return ShapeMismatch("cross-entropy dloss must hold one value");
  const std::int64_t k = logits.dim(-1), rows = labels.numel();
  dlogits.Resize(logits.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    const T g = static_cast<T>(dloss[0]) / static_cast<T>(rows);
    // Rows [r0, r1) into out (row r at out + (r − r0)·k).
    const auto grad_rows = [&](std::int64_t r0, std::int64_t r1, T* out) {
      ParallelFor(ctx.threads(), r1 - r0, [&](std::int64_t a, std::int64_t b) {
        for (std::int64_t r = r0 + a; r < r0 + b; ++r) {
          const float* in = logits.data() + r * k;
          T* row = out + (r - r0) * k;
          const T m = RowMax<T>(in, k);
          M::ExpShifted(in, m, row, k);
          const T s = SumOf<M>(k, [&](std::int64_t i) { return row[i]; });
          const std::int64_t label = classes[static_cast<std::size_t>(r)];
          for (std::int64_t i = 0; i < k; ++i) row[i] = CrossEntropyGradValue(row[i], s, i == label, g);
        }
      });
    };
    if constexpr (M::kRounded) {
      // A vocabulary's gradient never exists in fp64 at once.
      return RoundRowsInPieces(ctx, dlogits, k, grad_rows);
    } else {
      grad_rows(0, rows, dlogits.data());
      return Status::Ok();
    }
  });
}

}  // namespace vt::kernels
