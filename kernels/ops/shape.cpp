// Reshape and transpose: copies, no arithmetic. Rounded mode still passes
// the values through RoundOutput (the identity at b = 32; at b < 32 it
// rounds values that were not on the b-bit grid, as for every output).

#include "kernels/ops/shape.h"

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

Status ReshapeOp(const OpContext& ctx, const Tensor& x, const Shape& shape, Tensor& y) {
  VT_TRY(CheckInput(x, "reshape x"));
  if (shape.empty() || shape.size() > static_cast<std::size_t>(kMaxRank)) {
    return BadAttribute("reshape target rank must be 1..8");
  }
  VT_TRY(CheckOutputShape(shape, "reshape target"));
  if (NumElements(shape) != x.numel()) {
    return ShapeMismatch("cannot reshape " + ShapeToString(x.shape()) + " to " + ShapeToString(shape));
  }
  y.Resize(shape);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* xd = x.data();
    ParallelFor(ctx.threads(), x.numel(), [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) yo[i] = static_cast<T>(xd[i]);
    });
    return outs.Commit(ctx);
  });
}

Status TransposeOp(const OpContext& ctx, const Tensor& x, std::int64_t d0, std::int64_t d1, Tensor& y) {
  VT_TRY(CheckInput(x, "transpose x"));
  const std::int64_t rank = x.rank();
  if (d0 < 0 || d1 < 0 || d0 >= rank || d1 >= rank) return BadAttribute("transpose dims out of range");
  const std::size_t a = static_cast<std::size_t>(std::min(d0, d1)), b = static_cast<std::size_t>(std::max(d0, d1));
  const Shape& s = x.shape();
  // x viewed as [outer, da, mid, db, inner] → y [outer, db, mid, da, inner].
  const std::int64_t outer = Prod(s, 0, a), da = s[a], mid = Prod(s, a + 1, b), db = s[b],
                     inner = Prod(s, b + 1, s.size());
  Shape y_shape = s;
  std::swap(y_shape[a], y_shape[b]);
  y.Resize(y_shape);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* xd = x.data();
    ParallelFor(ctx.threads(), outer * db, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t o = r / db, j = r % db;
        for (std::int64_t m = 0; m < mid; ++m) {
          for (std::int64_t i = 0; i < da; ++i) {
            T* out = yo + (((r * mid + m) * da + i) * inner);
            const float* in = xd + ((((o * da + i) * mid + m) * db + j) * inner);
            for (std::int64_t z = 0; z < inner; ++z) out[z] = static_cast<T>(in[z]);
          }
        }
      }
    });
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
