// Linear layer and MatMul backward.
//
// Shapes: x [..., K] (R = product of the leading dims rows), w [N, K], b [N].
//
// LinearForward — output y [..., N].
//   repops: y[r, n] = GEMM element (Σ_{k=0..K-1} x[r,k]·w[n,k], sequential
//           from +0, kernels/matmul.h), then y[r, n] = y[r, n] + b[n]
//           (one fp32 add, bias last).
//   rounded: the same in fp64 (rounded mode's GEMM on the fp32 tensors),
//           then y is rounded — in pieces of whole rows (RoundGemmByRows),
//           as are dx and dw below.
//   native: OpenBLAS sgemm, then the bias add.
// LinearBackward — outputs dx [..., K], dw [N, K], db [N], in that order.
//   dx[r, k] = Σ_{n sequential} dy[r,n]·w[n,k]            (GEMM, k-dim = N)
//   dw[n, k] = Σ_{r sequential} dy[r,n]·x[r,k]            (GEMM, k-dim = R,
//              r over all leading positions in row-major order)
//   db[n]    = TreeSum over r of dy[r, n]                  (op_util.h tree)
// MatMulBackward — C = op(A)·op(B) (kernels/matmul.h); outputs dA, dB:
//   d op(A) = dC·op(B)ᵀ, d op(B) = op(A)ᵀ·dC, stored transposed when the
//   operand is. With a shared (rank-2) B, dB accumulates over the batch:
//   batch 0 first, each GEMM element sequential over its rows, continuing
//   from the previous batch's value (GemmArgs::accumulate) — one sequential
//   sum over all batch·m rows.

#include "kernels/ops/linear.h"

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

Status ValidateLinear(const Tensor& x, const Tensor& w, const Tensor* b) {
  VT_TRY(CheckInput(x, "linear x"));
  VT_TRY(CheckInput(w, "linear w"));
  if (x.rank() < 1 || w.rank() != 2) return ShapeMismatch("linear needs x [..., K] and w [N, K]");
  if (x.dim(-1) != w.dim(1)) {
    return ShapeMismatch("linear: x " + ShapeToString(x.shape()) + " and w " + ShapeToString(w.shape()));
  }
  if (b != nullptr) {
    VT_TRY(CheckInput(*b, "linear b"));
    VT_TRY(CheckShapeIs(*b, {w.dim(0)}, "linear b"));
  }
  return Status::Ok();
}

}  // namespace

Status LinearForward(const OpContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) {
  VT_TRY(ValidateLinear(x, w, b));
  const std::int64_t n = w.dim(0), k = w.dim(1);
  const std::int64_t rows = Prod(x.shape(), 0, x.shape().size() - 1);
  Shape y_shape = x.shape();
  y_shape.back() = n;
  VT_TRY(CheckOutputShape(y_shape, "linear y"));
  y.Resize(y_shape);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    // The fp32 tensors in every mode: rounded mode's GEMMs widen them.
    const float* xa = x.data();
    const float* wa = w.data();
    const float* bias = b != nullptr ? b->data() : nullptr;
    const GemmArgs gy = MakeGemm(rows, n, k, false, k, true, k, n);
    float* yo = y.data();
    if constexpr (M::kRounded) {
      return RoundGemmByRows(ctx, gy, xa, wa, bias, y.values());
    } else if constexpr (M::kCertified) {
      // y = CR(Σ x·w + b): the bias is one more exact term of each output.
      GemmArgs with_bias = gy;
      if (bias != nullptr) {
        for (std::int64_t r = 0; r < rows; ++r) std::copy(bias, bias + n, yo + r * n);
        with_bias.accumulate = true;
      }
      M::Gemm(ctx.config(), with_bias, xa, wa, yo);
    } else {
      M::Gemm(ctx.config(), gy, xa, wa, yo);
      if (bias != nullptr) {
        ParallelFor(ctx.threads(), rows, [&](std::int64_t r0, std::int64_t r1) {
          for (std::int64_t r = r0; r < r1; ++r) {
            float* row = yo + r * n;
            for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] + bias[j];
          }
        });
      }
    }
    return Status::Ok();
  });
}

Status LinearBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                      Tensor& dw, Tensor& db) {
  VT_TRY(ValidateLinear(x, w, nullptr));
  VT_TRY(CheckInput(dy, "linear dy"));
  const std::int64_t n = w.dim(0), k = w.dim(1);
  Shape y_shape = x.shape();
  y_shape.back() = n;
  VT_TRY(CheckShapeIs(dy, y_shape, "linear dy"));
  const std::int64_t rows = Prod(x.shape(), 0, x.shape().size() - 1);
  dx.Resize(x.shape());
  dw.Resize(w.shape());
  db.Resize({n});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    const float* dya = dy.data();
    const float* xa = x.data();
    const float* wa = w.data();
    const GemmArgs gdx = MakeGemm(rows, k, n, false, n, false, k, k);
    const GemmArgs gdw = MakeGemm(n, k, rows, true, n, false, k, k);
    if constexpr (M::kRounded) {
      // In output order: dx, dw (each rounded as it is computed), then db.
      VT_TRY(RoundGemmByRows(ctx, gdx, dya, wa, nullptr, dx.values()));
      VT_TRY(RoundGemmByRows(ctx, gdw, dya, xa, nullptr, dw.values()));
    } else {
      M::Gemm(ctx.config(), gdx, dya, wa, dx.data());
      M::Gemm(ctx.config(), gdw, dya, xa, dw.data());
    }
    Outputs<T> outs;
    T* dbo = outs.Bind(db);
    ColumnSumOf<M>(ctx.threads(), rows, n, [&](std::int64_t r, std::int64_t c) { return dya[r * n + c]; }, dbo);
    return outs.Commit(ctx);
  });
}

Status ValidateMatMul(const Tensor& a, const Tensor& b, MatMulOptions options, Shape* out_shape) {
  VT_TRY(CheckInput(a, "matmul a"));
  VT_TRY(CheckInput(b, "matmul b"));
  if (a.rank() < 2 || b.rank() < 2) return ShapeMismatch("matmul operands need rank >= 2");
  const std::int64_t m = options.trans_a ? a.dim(-1) : a.dim(-2);
  const std::int64_t k = options.trans_a ? a.dim(-2) : a.dim(-1);
  const std::int64_t kb = options.trans_b ? b.dim(-1) : b.dim(-2);
  const std::int64_t n = options.trans_b ? b.dim(-2) : b.dim(-1);
  if (k != kb) {
    return ShapeMismatch("matmul inner dimensions: " + ShapeToString(a.shape()) + " x " + ShapeToString(b.shape()));
  }
  if (b.rank() != 2 &&
      (b.rank() != a.rank() || !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin()))) {
    return ShapeMismatch("matmul batch dimensions: " + ShapeToString(a.shape()) + " x " + ShapeToString(b.shape()));
  }
  Shape out(a.shape().begin(), a.shape().end() - 2);
  out.push_back(m);
  out.push_back(n);
  VT_TRY(CheckOutputShape(out, "matmul out"));
  if (out_shape != nullptr) *out_shape = std::move(out);
  return Status::Ok();
}

Status MatMulBackward(const OpContext& ctx, const Tensor& dy, const Tensor& a, const Tensor& b, Tensor& da,
                      Tensor& db, MatMulOptions options) {
  Shape out_shape;
  VT_TRY(ValidateMatMul(a, b, options, &out_shape));
  VT_TRY(CheckInput(dy, "matmul dy"));
  VT_TRY(CheckShapeIs(dy, out_shape, "matmul dy"));
  const bool ta = options.trans_a, tb = options.trans_b;
  const std::int64_t ra = a.dim(-2), ca = a.dim(-1), rb = b.dim(-2), cb = b.dim(-1);
  const std::int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
  const std::int64_t batch = Prod(a.shape(), 0, a.shape().size() - 2);
  const bool shared_b = b.rank() == 2;
  da.Resize(a.shape());
  db.Resize(b.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dao = outs.Bind(da);
    T* dbo = outs.Bind(db);
    const float* dya = dy.data();
    const float* aa = a.data();
    const float* ba = b.data();
    // dA for one batch item (or for all rows at once when `rows` = batch·m).
    double* const da_slack = outs.Slack(dao);
    double* const db_slack = outs.Slack(dbo);
    // The GEMMs: dA = lhs·rhs of (dy, B) for `rows` rows of dy (ga), dB of
    // (A, dy) over `rows` rows (gb); which factor is the lhs depends on the
    // transposes.
    const auto ga_args = [&](std::int64_t rows) {
      return !ta ? MakeGemm(rows, k, n, false, n, !tb, cb, ca) : MakeGemm(k, m, n, tb, cb, true, n, ca);
    };
    const auto gb_args = [&](std::int64_t rows, bool acc) {
      return !tb ? MakeGemm(k, n, rows, !ta, ca, false, n, cb, acc)
                 : MakeGemm(n, k, rows, true, n, ta, ca, cb, acc);
    };
    auto grad_a = [&](const ExecConfig& cfg, std::int64_t rows, const float* dyp, const float* bp, T* dap) {
      double* sp = da_slack == nullptr ? nullptr : da_slack + (dap - dao);
      const GemmArgs ga = ga_args(rows);
      const float* lhs = !ta ? dyp : bp;
      const float* rhs = !ta ? bp : dyp;
      M::Gemm(cfg, ga, lhs, rhs, dap);
      GemmSlack<M>(ga, lhs, rhs, sp);
    };
    // With a shared B, dB is one sum over all batch·m rows (accumulated
    // GEMMs): its β uses the squared norms of every piece and K = batch·m.
    std::vector<double> dbrow_sq, dbcol_sq;
    std::int64_t db_terms = 0;
    auto grad_b = [&](const ExecConfig& cfg, std::int64_t rows, const float* dyp, const float* ap, T* dbp,
                      bool acc) {
      const GemmArgs gb = gb_args(rows, acc);
      const float* lhs = !tb ? ap : dyp;
      const float* rhs = !tb ? dyp : ap;
      M::Gemm(cfg, gb, lhs, rhs, dbp);
      if constexpr (M::kRounded) {
        if (!shared_b) {
          GemmSlack<M>(gb, lhs, rhs, db_slack + (dbp - dbo));
          return;
        }
        if (!acc) {
          dbrow_sq.assign(static_cast<std::size_t>(gb.m), 0.0);
          dbcol_sq.assign(static_cast<std::size_t>(gb.n), 0.0);
          db_terms = 0;
        }
        GemmNormsSq(gb, lhs, rhs, dbrow_sq.data(), dbcol_sq.data());
        db_terms += gb.k;
        WriteGemmSlack(gb.m, gb.n, db_terms, dbrow_sq.data(), dbcol_sq.data(), db_slack, gb.ldc);
      }
    };
    const std::int64_t a_stride = ra * ca, b_stride = rb * cb, dy_stride = m * n;
    if (shared_b && !ta) {
      // Row-major [batch·m, k] stack: one GEMM each (same per-element order
      // as batch-by-batch accumulation).
      grad_a(ctx.config(), batch * m, dya, ba, dao);
      grad_b(ctx.config(), batch * m, dya, aa, dbo, false);
    } else if (shared_b) {
      ForEachItem<M>(ctx, batch, [&](const ExecConfig& cfg, int, std::int64_t i) {
        grad_a(cfg, m, dya + i * dy_stride, ba, dao + i * a_stride);
      });
      if constexpr (M::kCertified) {
        // dB = CR(one exact sum over all batch·m rows): the batches are
        // pieces of one certified GEMM, not rounded one after another.
        std::vector<CertGemmPiece> pieces;
        for (std::int64_t i = 0; i < batch; ++i) {
          const float* dyp = dya + i * dy_stride;
          const float* ap = aa + i * a_stride;
          const GemmArgs gb = !tb ? MakeGemm(k, n, m, !ta, ca, false, n, cb) : MakeGemm(n, k, m, true, n, ta, ca, cb);
          pieces.push_back(CertGemmPiece{gb, !tb ? ap : dyp, !tb ? dyp : ap});
        }
        CertifiedGemmPieces(ctx.config(), pieces[0].g.m, pieces[0].g.n, pieces, dbo, cb, false);
      } else {
        for (std::int64_t i = 0; i < batch; ++i) {
          grad_b(ctx.config(), m, dya + i * dy_stride, aa + i * a_stride, dbo, i > 0);
        }
      }
    } else {
      ForEachItem<M>(ctx, batch, [&](const ExecConfig& cfg, int, std::int64_t i) {
        grad_a(cfg, m, dya + i * dy_stride, ba + i * b_stride, dao + i * a_stride);
        grad_b(cfg, m, dya + i * dy_stride, aa + i * a_stride, dbo + i * b_stride, false);
      });
    }
    if constexpr (M::kRounded) {
      // The same GEMMs' elements. dA: one GEMM over the stacked rows, or one
      // per batch item. dB: one per item, or with a shared B one sum over
      // the items, each continuing from the previous item's value.
      const int threads = ctx.threads();
      if (shared_b && !ta) {
        outs.SetReference(dao, GemmReference(threads, ga_args(batch * m), dya, ba));
      } else {
        const std::int64_t b_step = shared_b ? 0 : b_stride;
        outs.SetReference(dao, !ta ? GemmReference(threads, ga_args(m), dya, ba, dy_stride, b_step)
                                   : GemmReference(threads, ga_args(m), ba, dya, b_step, dy_stride));
      }
      const float* lhs = !tb ? aa : dya;
      const float* rhs = !tb ? dya : aa;
      const std::int64_t lhs_step = !tb ? a_stride : dy_stride, rhs_step = !tb ? dy_stride : a_stride;
      if (!shared_b) {
        outs.SetReference(dbo, GemmReference(threads, gb_args(m, false), lhs, rhs, lhs_step, rhs_step));
      } else if (!ta) {
        outs.SetReference(dbo, GemmReference(threads, gb_args(batch * m, false), lhs, rhs));
      } else {
        // (Captured by value: this block's locals end before Commit.)
        outs.SetReference(dbo, [&gb_args, threads, batch, m, lhs, rhs, lhs_step, rhs_step](
                                   std::span<const std::size_t> positions, std::span<double> values) {
          std::vector<GemmElement> elements = DenseGemmElements(positions, gb_args(m, false));
          for (std::int64_t i = 0; i < batch; ++i) {
            for (GemmElement& e : elements) {
              e.a_offset = i * lhs_step;
              e.b_offset = i * rhs_step;
            }
            GemmF64ReferenceElements(threads, gb_args(m, i > 0), lhs, rhs, elements, values.data());
          }
        });
      }
    }
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
