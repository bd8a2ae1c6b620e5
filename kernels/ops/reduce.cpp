// Sum and mean.
//
// Over all elements: s = TreeSum(x) (fixed tree over the row-major element
// order, op_util.h; block sums in parallel); mean = s / numel.
// Over an axis, x viewed as [outer, n, inner]: y[o, i] = TreeSum over
// j = 0..n−1 of x[o, j, i]; mean divides each by n (in T).
// Backward: dx[o, j, i] = dy[o, i] (sum) or dy[o, i] / n (mean).

#include "kernels/ops/reduce.h"

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

Result<Shape> ReducedShape(const Shape& in, std::int64_t axis) {
  if (axis == kReduceAll) return Shape{1};
  if (axis < 0 || axis >= static_cast<std::int64_t>(in.size())) return BadAttribute("reduction axis out of range");
  Shape out = in;
  out.erase(out.begin() + axis);
  if (out.empty()) out.push_back(1);
  return out;
}

namespace {

// A reduction over `axis` views x as [outer, n, inner] (kReduceAll: [1, numel, 1]).
struct ReduceSplit {
  std::int64_t outer, n, inner;
};
ReduceSplit SplitAt(const Tensor& x, std::int64_t axis) {
  if (axis == kReduceAll) return {1, x.numel(), 1};
  const std::size_t ax = static_cast<std::size_t>(axis);
  return {Prod(x.shape(), 0, ax), x.shape()[ax], Prod(x.shape(), ax + 1, x.shape().size())};
}

Status Reduce(const OpContext& ctx, const Tensor& x, std::int64_t axis, bool mean, Tensor& y) {
  VT_TRY(CheckInput(x, mean ? "mean x" : "sum x"));
  VT_ASSIGN_OR_RETURN(Shape y_shape, ReducedShape(x.shape(), axis));
  y.Resize(y_shape);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* xd = x.data();
    if constexpr (M::kCertified) {
      // y = CR(Σ x) or CR(Σ x / n) over each reduced slice.
      const ReduceSplit split = SplitAt(x, axis);
      const std::int64_t outer = split.outer, n = split.n, inner = split.inner;
      ParallelFor(ctx.threads(), outer * inner, [&](std::int64_t e0, std::int64_t e1) {
        for (std::int64_t e = e0; e < e1; ++e) {
          const float* base = xd + (e / inner) * n * inner + e % inner;
          auto get = [&](std::int64_t j) { return base[j * inner]; };
          yo[e] = mean ? CertifiedMean(n, get) : CertifiedSum(n, get);
        }
      });
      return outs.Commit(ctx);
    }
    if (axis == kReduceAll) {
      const T s = ParallelTreeSum<T>(ctx.threads(), x.numel(), [&](std::int64_t i) { return xd[i]; });
      yo[0] = mean ? s / static_cast<T>(x.numel()) : s;
      return outs.Commit(ctx);
    }
    const ReduceSplit split = SplitAt(x, axis);
    const std::int64_t outer = split.outer, n = split.n, inner = split.inner;
    if (inner == 1) {
      ParallelFor(ctx.threads(), outer, [&](std::int64_t o0, std::int64_t o1) {
        for (std::int64_t o = o0; o < o1; ++o) yo[o] = TreeSum<T>(n, [&](std::int64_t j) { return xd[o * n + j]; });
      });
    } else {
      for (std::int64_t o = 0; o < outer; ++o) {
        const float* base = xd + o * n * inner;
        ColumnTreeSum<T>(ctx.threads(), n, inner,
                         [&](std::int64_t j, std::int64_t i) { return base[j * inner + i]; }, yo + o * inner);
      }
    }
    if (mean) {
      const T nt = static_cast<T>(n);
      for (std::int64_t i = 0; i < outer * inner; ++i) yo[i] = yo[i] / nt;
    }
    return outs.Commit(ctx);
  });
}

Status ReduceBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, std::int64_t axis, bool mean,
                      Tensor& dx) {
  VT_TRY(CheckInput(x, "reduce x"));
  VT_TRY(CheckInput(dy, "reduce dy"));
  VT_ASSIGN_OR_RETURN(Shape y_shape, ReducedShape(x.shape(), axis));
  VT_TRY(CheckShapeIs(dy, y_shape, "reduce dy"));
  dx.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    const float* g = dy.data();
    const ReduceSplit split = SplitAt(x, axis);
    const std::int64_t outer = split.outer, n = split.n, inner = split.inner;
    const T nt = static_cast<T>(n);
    ParallelFor(ctx.threads(), outer * n, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t o = r / n;
        for (std::int64_t i = 0; i < inner; ++i) {
          const T v = static_cast<T>(g[o * inner + i]);
          dxo[r * inner + i] = mean ? v / nt : v;
        }
      }
    });
    return outs.Commit(ctx);
  });
}

}  // namespace

Status SumForward(const OpContext& ctx, const Tensor& x, std::int64_t axis, Tensor& y) {
  return Reduce(ctx, x, axis, false, y);
}
Status MeanForward(const OpContext& ctx, const Tensor& x, std::int64_t axis, Tensor& y) {
  return Reduce(ctx, x, axis, true, y);
}
Status SumBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, std::int64_t axis, Tensor& dx) {
  return ReduceBackward(ctx, dy, x, axis, false, dx);
}
Status MeanBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, std::int64_t axis, Tensor& dx) {
  return ReduceBackward(ctx, dy, x, axis, true, dx);
}

}  // namespace vt::kernels
