// Causal multi-head self-attention (packed qkv, see attention.h).
//
// Per (batch b, head h) — items run in parallel, each writing disjoint
// outputs; D = C/H, scale = 1 / Sqrt(D) in T (IEEE sqrt and division):
// Forward:
//   S = Q·Kᵀ                    repops GEMM element: Σ_{i<D} q_t[i]·k_u[i], sequential from +0
//   s_tu = S_tu·scale            for u ≤ t (causal); m_t = max_{u≤t} s_tu (sequential)
//   e_tu = Exp(s_tu − m_t);  z_t = TreeSum_{u≤t}(e_tu);  att_tu = e_tu / z_t;  att_tu = +0 for u > t
//   y_t = Σ_{u=0..T−1} att_tu·v_u  (GEMM over all u, the masked terms being +0·v)
//   outputs: y [B,T,C], att [B,H,T,T]
// Backward (dY = dy of the head, att from the forward):
//   dV = attᵀ·dY                 GEMM, sequential over t
//   dP = dY·Vᵀ                   GEMM, sequential over i < D
//   r_t = TreeSum_{u≤t}(att_tu·dP_tu);  dS_tu = (att_tu·(dP_tu − r_t))·scale for u ≤ t, +0 above
//   dQ = dS·K,  dK = dSᵀ·Q       GEMMs, sequential over u resp. t
//   output: dqkv [B,T,3C]
// Rounded mode: the same in fp64 with OpenBLAS dgemm, libm exp; outputs rounded.

#include "kernels/ops/attention.h"

#include <cmath>
#include <limits>

#include "kernels/ops/op_util.h"
#include "kernels/ops/softmax.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

struct AttnGeometry {
  std::int64_t b = 0, t = 0, c = 0, h = 0, d = 0;
};

Status AttnGeometryFor(const Tensor& qkv, std::int64_t heads, AttnGeometry* g) {
  VT_TRY(CheckInput(qkv, "attention qkv"));
  if (qkv.rank() != 3 || qkv.dim(2) % 3 != 0) return ShapeMismatch("attention needs qkv [B, T, 3C]");
  g->b = qkv.dim(0);
  g->t = qkv.dim(1);
  g->c = qkv.dim(2) / 3;
  if (heads < 1 || heads > g->c || g->c % heads != 0) {
    return BadAttribute("attention heads must divide C = " + std::to_string(g->c));
  }
  g->h = heads;
  g->d = g->c / heads;
  std::int64_t att = 0;
  if (!ProductWithin({g->b, g->h, g->t, g->t}, &att)) return TooLarge("attention probabilities");
  return Status::Ok();
}

// Rounded mode, one softmax row t: on entry βs[0..t] bounds the difference of
// S = Q·Kᵀ between honest parties (GEMM slack); on exit it bounds that of
// att (AttentionSlackFactor of the row's largest). Masked entries (u > t)
// are exact zeros: β = 0.
void SoftmaxSlack(const double* att_row, double* slack_row, std::int64_t t, std::int64_t t_count,
                  double scale) {
  double mx = 0.0;
  for (std::int64_t u = 0; u <= t; ++u) mx = MaxStep(mx, slack_row[u]);
  const double f = AttentionSlackFactor(mx, scale);
  for (std::int64_t u = 0; u <= t; ++u) slack_row[u] = att_row[u] * f;
  for (std::int64_t u = t + 1; u < t_count; ++u) slack_row[u] = 0.0;
}

// β of C = op(A)·op(B) when op(A) is itself uncertain by `a_slack` (laid out
// like op(A) untransposed would be read through g: same indexing as a, with
// lda): the GEMM's own bound (K + extra terms, `extra` covering the
// rounding of how A was computed) plus ‖δA row i‖·‖B col j‖ (Cauchy–Schwarz).
void PerturbedGemmSlack(const GemmArgs& g, const double* a, const double* b, const double* a_slack,
                        double* slack, std::int64_t extra) {
  std::vector<double> row_sq(static_cast<std::size_t>(g.m), 0.0), col_sq(static_cast<std::size_t>(g.n), 0.0);
  std::vector<double> drow_sq(static_cast<std::size_t>(g.m), 0.0), unused(static_cast<std::size_t>(g.n), 0.0);
  GemmNormsSq(g, a, b, row_sq.data(), col_sq.data());
  GemmArgs gd = g;
  gd.n = 0;
  GemmNormsSq(gd, a_slack, b, drow_sq.data(), unused.data());
  WriteGemmSlack(g.m, g.n, g.k + extra, row_sq.data(), col_sq.data(), slack, g.ldc);
  for (std::int64_t i = 0; i < g.m; ++i) {
    const double dn = PerturbationNorm(drow_sq[static_cast<std::size_t>(i)]);
    for (std::int64_t j = 0; j < g.n; ++j) {
      slack[i * g.ldc + j] = slack[i * g.ldc + j] + dn * std::sqrt(col_sq[static_cast<std::size_t>(j)]);
    }
  }
}

}  // namespace

Status AttentionForward(const OpContext& ctx, const Tensor& qkv, std::int64_t heads, Tensor& y, Tensor& att) {
  AttnGeometry g;
  VT_TRY(AttnGeometryFor(qkv, heads, &g));
  y.Resize({g.b, g.t, g.c});
  att.Resize({g.b, g.h, g.t, g.t});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    T* ao = outs.Bind(att);
    std::vector<T> qs;
    const T* qa = Operand<T>(qkv, qs);
    const T scale = AttentionScale<M>(g.d);
    const std::int64_t t_count = g.t, c3 = 3 * g.c;
    ForEachItem<M>(ctx, g.b * g.h, [&](const ExecConfig& cfg, int, std::int64_t item) {
      const std::int64_t b = item / g.h, h = item % g.h;
      const T* q = qa + b * t_count * c3 + h * g.d;
      const T* k = q + g.c;
      const T* v = q + 2 * g.c;
      T* a = ao + item * t_count * t_count;
      const GemmArgs gs = MakeGemm(t_count, t_count, g.d, false, c3, true, c3, t_count);
      M::Gemm(cfg, gs, q, k, a);
      double* as = nullptr;  // rounded: β of S here, then of att
      if constexpr (M::kRounded) {
        as = outs.Slack(ao) + item * t_count * t_count;
        GemmSlack<M>(gs, q, k, as);
      }
      for (std::int64_t t = 0; t < t_count; ++t) {
        T* row = a + t * t_count;
        for (std::int64_t u = 0; u <= t; ++u) row[u] = row[u] * scale;
        T m = row[0];
        for (std::int64_t u = 1; u <= t; ++u) {
          if (row[u] > m) m = row[u];
        }
        ExpShifted<M>(row, m, row, t + 1);
        const T z = SumOf<M>(t + 1, [&](std::int64_t u) { return row[u]; });
        for (std::int64_t u = 0; u <= t; ++u) row[u] = row[u] / z;
        for (std::int64_t u = t + 1; u < t_count; ++u) row[u] = T(0);
        if constexpr (M::kRounded) SoftmaxSlack(row, as + t * t_count, t, t_count, scale);
      }
      T* yh = yo + b * t_count * g.c + h * g.d;
      const GemmArgs gy = MakeGemm(t_count, g.d, t_count, false, t_count, false, c3, g.c);
      M::Gemm(cfg, gy, a, v, yh);
      if constexpr (M::kRounded) {
        // y = att·V with att itself uncertain by β_att: + ‖β_att row‖·‖V col‖.
        PerturbedGemmSlack(gy, a, v, as, outs.Slack(yo) + (yh - yo), kAttentionOutputExtraTerms);
      }
    });
    return outs.Commit(ctx);
  });
}

Status AttentionBackward(const OpContext& ctx, const Tensor& dy, const Tensor& qkv, const Tensor& att,
                         std::int64_t heads, Tensor& dqkv) {
  AttnGeometry g;
  VT_TRY(AttnGeometryFor(qkv, heads, &g));
  VT_TRY(CheckInput(dy, "attention dy"));
  VT_TRY(CheckInput(att, "attention att"));
  VT_TRY(CheckShapeIs(dy, {g.b, g.t, g.c}, "attention dy"));
  VT_TRY(CheckShapeIs(att, {g.b, g.h, g.t, g.t}, "attention att"));
  dqkv.Resize(qkv.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dqo = outs.Bind(dqkv);
    std::vector<T> qs, dys, as;
    const T* qa = Operand<T>(qkv, qs);
    const T* dya = Operand<T>(dy, dys);
    const T* aa = Operand<T>(att, as);
    const T scale = AttentionScale<M>(g.d);
    const std::int64_t t_count = g.t, c3 = 3 * g.c, tt = t_count * t_count;
    const std::int64_t items = g.b * g.h;
    std::vector<T> scratch(static_cast<std::size_t>(ItemSlots<M>(ctx, items, 2 * tt) * tt * 2));
    std::vector<double> slack_scratch(M::kRounded ? static_cast<std::size_t>(tt)
                                                  : 0);  // one slot in rounded mode
    ForEachItem<M>(ctx, items, [&](const ExecConfig& cfg, int slot, std::int64_t item) {
      const std::int64_t b = item / g.h, h = item % g.h;
      const T* q = qa + b * t_count * c3 + h * g.d;
      const T* k = q + g.c;
      const T* v = q + 2 * g.c;
      const T* a = aa + item * tt;
      const T* dyh = dya + b * t_count * g.c + h * g.d;
      T* dq = dqo + b * t_count * c3 + h * g.d;
      T* dk = dq + g.c;
      T* dv = dq + 2 * g.c;
      T* dp = scratch.data() + slot * tt * 2;
      T* ds = dp + tt;
      const GemmArgs gdv = MakeGemm(t_count, g.d, t_count, true, t_count, false, g.c, c3);
      M::Gemm(cfg, gdv, a, dyh, dv);
      const GemmArgs gdp = MakeGemm(t_count, t_count, g.d, false, g.c, true, c3, t_count);
      M::Gemm(cfg, gdp, dyh, v, dp);
      double* sp = nullptr;  // rounded: β of dP, then of dS
      if constexpr (M::kRounded) {
        GemmSlack<M>(gdv, a, dyh, outs.Slack(dqo) + (dv - dqo));
        sp = slack_scratch.data();
        GemmSlack<M>(gdp, dyh, v, sp);
      }
      for (std::int64_t t = 0; t < t_count; ++t) {
        const T* arow = a + t * t_count;
        const T* prow = dp + t * t_count;
        T* srow = ds + t * t_count;
        const T r = DotOf<M>(t + 1, [&](std::int64_t u) { return arow[u]; }, [&](std::int64_t u) { return prow[u]; });
        for (std::int64_t u = 0; u <= t; ++u) srow[u] = AttentionDsValue(arow[u], prow[u], r, scale);
        for (std::int64_t u = t + 1; u < t_count; ++u) srow[u] = T(0);
        if constexpr (M::kRounded) {
          // β_dP → β_dS (AttentionDsSlack), over Σ att·β_dP sequential from +0.
          double* srow_b = sp + t * t_count;
          double weighted = 0.0;
          for (std::int64_t u = 0; u <= t; ++u) weighted = weighted + arow[u] * srow_b[u];
          for (std::int64_t u = 0; u <= t; ++u)
            srow_b[u] = AttentionDsSlack(arow[u], srow_b[u], weighted, scale);
          for (std::int64_t u = t + 1; u < t_count; ++u) srow_b[u] = 0.0;
        }
      }
      const GemmArgs gdq = MakeGemm(t_count, g.d, t_count, false, t_count, false, c3, c3);
      const GemmArgs gdk = MakeGemm(t_count, g.d, t_count, true, t_count, false, c3, c3);
      M::Gemm(cfg, gdq, ds, k, dq);
      M::Gemm(cfg, gdk, ds, q, dk);
      if constexpr (M::kRounded) {
        PerturbedGemmSlack(gdq, ds, k, sp, outs.Slack(dqo) + (dq - dqo), kAttentionGradExtraTerms);
        PerturbedGemmSlack(gdk, ds, q, sp, outs.Slack(dqo) + (dk - dqo), kAttentionGradExtraTerms);
      }
    }, 2 * tt);
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
