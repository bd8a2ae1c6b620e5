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

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

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

// The GEMMs of one (batch, head) item, as views into qkv [B, T, 3C], dy and
// y [B, T, C] and the item's T×T buffers: S = Q·Kᵀ, y = att·V; dV = attᵀ·dY,
// dP = dY·Vᵀ, dQ = dS·K, dK = dSᵀ·Q. One definition for the operators and
// their reference functions.
struct AttnGemms {
  GemmArgs s, y, dv, dp, dq, dk;
};
AttnGemms AttnGemmsFor(const AttnGeometry& g) {
  const std::int64_t t = g.t, c3 = 3 * g.c;
  return AttnGemms{
      MakeGemm(t, t, g.d, false, c3, true, c3, t),  MakeGemm(t, g.d, t, false, t, false, c3, g.c),
      MakeGemm(t, g.d, t, true, t, false, g.c, c3), MakeGemm(t, t, g.d, false, g.c, true, c3, t),
      MakeGemm(t, g.d, t, false, t, false, c3, c3), MakeGemm(t, g.d, t, true, t, false, c3, c3)};
}
// `args` over the first `rows` rows of op(A) only (a reference function's
// subset of rows, op(A) starting at the first of them).
GemmArgs WithRows(GemmArgs args, std::int64_t rows) {
  args.m = rows;
  return args;
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

// The forward's softmax row t: row[0..t] holds S_t on entry and att_t on
// exit, row[t+1..T) is set to +0 (the causal mask).
template <class M>
void CausalSoftmaxRow(typename M::T* row, std::int64_t t, std::int64_t t_count, typename M::T scale) {
  using T = typename M::T;
  for (std::int64_t u = 0; u <= t; ++u) row[u] = row[u] * scale;
  T m = row[0];
  for (std::int64_t u = 1; u <= t; ++u) {
    if (row[u] > m) m = row[u];
  }
  M::ExpShifted(row, m, row, t + 1);
  const T z = SumOf<M>(t + 1, [&](std::int64_t u) { return row[u]; });
  for (std::int64_t u = 0; u <= t; ++u) row[u] = row[u] / z;
  for (std::int64_t u = t + 1; u < t_count; ++u) row[u] = T(0);
}

// The backward's dS row t from att row t and dP row t (+0 above the diagonal).
template <class M>
void DsRow(const typename M::T* arow, const typename M::T* prow, typename M::T* srow, std::int64_t t,
           std::int64_t t_count, typename M::T scale) {
  using T = typename M::T;
  const T r = DotOf<M>(
      t + 1, [&](std::int64_t u) { return arow[u]; }, [&](std::int64_t u) { return prow[u]; });
  for (std::int64_t u = 0; u <= t; ++u) srow[u] = AttentionDsValue(arow[u], prow[u], r, scale);
  for (std::int64_t u = t + 1; u < t_count; ++u) srow[u] = T(0);
}

// Sorted, distinct keys, and each key's slot among them.
struct KeySlots {
  std::vector<std::int64_t> keys;
  explicit KeySlots(std::vector<std::int64_t> k) : keys(std::move(k)) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }
  std::int64_t slot(std::int64_t key) const {
    return std::lower_bound(keys.begin(), keys.end(), key) - keys.begin();
  }
};

// Rounded mode: the reference run's dqkv at `positions` (AttentionBackward's
// ReferenceFn), item by item. dV is a GEMM element of the inputs; dQ's
// element needs its dS row, dK's a dS column — every row of the item — each
// row from the canonical GEMM's dP row and DsRow, as the reference run does.
template <class M>
void AttentionBackwardReference(int threads, const AttnGeometry& g, const double* qa, const double* dya,
                                const double* aa, double scale, std::span<const std::size_t> positions,
                                std::span<double> values) {
  const std::int64_t t_count = g.t, c3 = 3 * g.c, tt = t_count * t_count;
  const AttnGemms gemms = AttnGemmsFor(g);
  struct Ask {
    std::int64_t item, part, t, i;  // part 0, 1, 2: dQ, dK, dV
    std::size_t k;                  // index into positions
  };
  std::vector<Ask> asks;
  asks.reserve(positions.size());
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const auto e = static_cast<std::int64_t>(positions[k]);
    const std::int64_t bt = e / c3, ch = e % c3;
    asks.push_back(Ask{bt / t_count * g.h + ch % g.c / g.d, ch / g.c, bt % t_count, ch % g.d, k});
  }
  std::stable_sort(asks.begin(), asks.end(), [](const Ask& x, const Ask& y) { return x.item < y.item; });
  std::vector<double> ds_rows, dp_rows, out;
  for (std::size_t first = 0; first < asks.size();) {
    std::size_t last = first;
    while (last < asks.size() && asks[last].item == asks[first].item) ++last;
    const std::int64_t item = asks[first].item, b = item / g.h, h = item % g.h;
    const double* q = qa + b * t_count * c3 + h * g.d;
    const double* k = q + g.c;
    const double* v = q + 2 * g.c;
    const double* a = aa + item * tt;
    const double* dyh = dya + b * t_count * g.c + h * g.d;
    // The dS rows this item's asks need: all of them for a dK element.
    bool all_rows = false;
    std::vector<std::int64_t> keys;
    for (std::size_t x = first; x < last; ++x) {
      all_rows = all_rows || asks[x].part == 1;
      if (asks[x].part == 0) keys.push_back(asks[x].t);
    }
    if (all_rows) {
      keys.resize(static_cast<std::size_t>(t_count));
      for (std::int64_t t = 0; t < t_count; ++t) keys[static_cast<std::size_t>(t)] = t;
    }
    const KeySlots rows(std::move(keys));
    const auto n_rows = static_cast<std::int64_t>(rows.keys.size());
    dp_rows.assign(static_cast<std::size_t>(n_rows * t_count), 0.0);
    ds_rows.assign(dp_rows.size(), 0.0);
    if (all_rows) {
      GemmF64Reference(threads, gemms.dp, dyh, v, dp_rows.data());
    } else {
      for (std::int64_t r = 0; r < n_rows; ++r) {
        GemmF64Reference(threads, WithRows(gemms.dp, 1), dyh + rows.keys[static_cast<std::size_t>(r)] * g.c,
                         v, dp_rows.data() + r * t_count);
      }
    }
    for (std::int64_t r = 0; r < n_rows; ++r) {
      const std::int64_t t = rows.keys[static_cast<std::size_t>(r)];
      DsRow<M>(a + t * t_count, dp_rows.data() + r * t_count, ds_rows.data() + r * t_count, t, t_count,
               scale);
    }
    // Each part's elements (the GEMMs of AttentionBackward, their op(A) rows
    // being the rows computed here for dQ).
    const GemmArgs parts[3] = {WithRows(gemms.dq, n_rows), gemms.dk, gemms.dv};
    const double* part_a[3] = {ds_rows.data(), ds_rows.data(), a};
    const double* part_b[3] = {k, q, dyh};
    for (std::int64_t part = 0; part < 3; ++part) {
      std::vector<GemmElement> elements;
      std::vector<std::size_t> at;
      for (std::size_t x = first; x < last; ++x) {
        if (asks[x].part != part) continue;
        elements.push_back(GemmElement{part == 0 ? rows.slot(asks[x].t) : asks[x].t, asks[x].i, 0, 0});
        at.push_back(asks[x].k);
      }
      if (elements.empty()) continue;
      out.assign(elements.size(), 0.0);
      GemmF64ReferenceElements(threads, parts[part], part_a[part], part_b[part], elements, out.data());
      for (std::size_t x = 0; x < at.size(); ++x) values[at[x]] = out[x];
    }
    first = last;
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
    const AttnGemms gemms = AttnGemmsFor(g);
    const std::int64_t t_count = g.t, c3 = 3 * g.c;
    ForEachItem<M>(ctx, g.b * g.h, [&](const ExecConfig& cfg, int, std::int64_t item) {
      const std::int64_t b = item / g.h, h = item % g.h;
      const T* q = qa + b * t_count * c3 + h * g.d;
      const T* k = q + g.c;
      const T* v = q + 2 * g.c;
      T* a = ao + item * t_count * t_count;
      const GemmArgs& gs = gemms.s;
      M::Gemm(cfg, gs, q, k, a);
      double* as = nullptr;  // rounded: β of S here, then of att
      if constexpr (M::kRounded) {
        as = outs.Slack(ao) + item * t_count * t_count;
        GemmSlack<M>(gs, q, k, as);
      }
      for (std::int64_t t = 0; t < t_count; ++t) {
        T* row = a + t * t_count;
        CausalSoftmaxRow<M>(row, t, t_count, scale);
        if constexpr (M::kRounded) SoftmaxSlack(row, as + t * t_count, t, t_count, scale);
      }
      T* yh = yo + b * t_count * g.c + h * g.d;
      const GemmArgs& gy = gemms.y;
      M::Gemm(cfg, gy, a, v, yh);
      if constexpr (M::kRounded) {
        // y = att·V with att itself uncertain by β_att: + ‖β_att row‖·‖V col‖.
        PerturbedGemmSlack(gy, a, v, as, outs.Slack(yo) + (yh - yo), kAttentionOutputExtraTerms);
      }
    });
    if constexpr (M::kRounded) {
      // The reference run's att rows (item·T + t) in `rows`' order: S's row
      // by the canonical GEMM (one row of Q·Kᵀ), then the softmax row.
      const auto reference_rows = [&](const KeySlots& rows) {
        std::vector<double> att_rows(rows.keys.size() * static_cast<std::size_t>(t_count));
        for (std::size_t r = 0; r < rows.keys.size(); ++r) {
          const std::int64_t item = rows.keys[r] / t_count, t = rows.keys[r] % t_count;
          const T* q = qa + item / g.h * t_count * c3 + item % g.h * g.d;
          T* row = att_rows.data() + r * static_cast<std::size_t>(t_count);
          GemmF64Reference(ctx.threads(), WithRows(gemms.s, 1), q + t * c3, q + g.c, row);
          CausalSoftmaxRow<M>(row, t, t_count, scale);
        }
        return att_rows;
      };
      // (The functions run in Commit, after this block: reference_rows is
      // captured by value.)
      outs.SetReference(
          ao, [&, reference_rows](std::span<const std::size_t> positions, std::span<double> values) {
            std::vector<std::int64_t> keys;
            for (const std::size_t e : positions) keys.push_back(static_cast<std::int64_t>(e) / t_count);
            const KeySlots rows(std::move(keys));
            const std::vector<double> att_rows = reference_rows(rows);
            for (std::size_t k = 0; k < positions.size(); ++k) {
              const auto e = static_cast<std::int64_t>(positions[k]);
              values[k] = att_rows[static_cast<std::size_t>(rows.slot(e / t_count) * t_count + e % t_count)];
            }
          });
      // y[b, t, h·D + i] = Σ_u att_tu·v_u[i] over all u: a GEMM element
      // whose op(A) row is the reference att row.
      outs.SetReference(yo, [&, reference_rows](std::span<const std::size_t> positions,
                                                std::span<double> values) {
        const auto item_row = [&](std::int64_t e) {
          const std::int64_t bt = e / g.c, h = e % g.c / g.d;
          return (bt / t_count * g.h + h) * t_count + bt % t_count;
        };
        std::vector<std::int64_t> keys;
        for (const std::size_t e : positions) keys.push_back(item_row(static_cast<std::int64_t>(e)));
        const KeySlots rows(std::move(keys));
        const std::vector<double> att_rows = reference_rows(rows);
        std::vector<GemmElement> elements;
        for (const std::size_t pos : positions) {
          const auto e = static_cast<std::int64_t>(pos);
          const std::int64_t b = e / (t_count * g.c), h = e % g.c / g.d;
          elements.push_back(GemmElement{rows.slot(item_row(e)), e % g.d, 0, b * t_count * c3 + h * g.d});
        }
        const GemmArgs gy = WithRows(gemms.y, static_cast<std::int64_t>(rows.keys.size()));
        GemmF64ReferenceElements(ctx.threads(), gy, att_rows.data(), qa + 2 * g.c, elements, values.data());
      });
    }
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
    const AttnGemms gemms = AttnGemmsFor(g);
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
      const GemmArgs& gdv = gemms.dv;
      M::Gemm(cfg, gdv, a, dyh, dv);
      const GemmArgs& gdp = gemms.dp;
      M::Gemm(cfg, gdp, dyh, v, dp);
      double* sp = nullptr;  // rounded: β of dP, then of dS
      if constexpr (M::kRounded) {
        GemmSlack<M>(gdv, a, dyh, outs.Slack(dqo) + (dv - dqo));
        sp = slack_scratch.data();
        GemmSlack<M>(gdp, dyh, v, sp);
      }
      for (std::int64_t t = 0; t < t_count; ++t) {
        const T* arow = a + t * t_count;
        DsRow<M>(arow, dp + t * t_count, ds + t * t_count, t, t_count, scale);
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
      const GemmArgs& gdq = gemms.dq;
      const GemmArgs& gdk = gemms.dk;
      M::Gemm(cfg, gdq, ds, k, dq);
      M::Gemm(cfg, gdk, ds, q, dk);
      if constexpr (M::kRounded) {
        PerturbedGemmSlack(gdq, ds, k, sp, outs.Slack(dqo) + (dq - dqo), kAttentionGradExtraTerms);
        PerturbedGemmSlack(gdk, ds, q, sp, outs.Slack(dqo) + (dk - dqo), kAttentionGradExtraTerms);
      }
    }, 2 * tt);
    if constexpr (M::kRounded)
      outs.SetReference(dqo, [&](std::span<const std::size_t> positions, std::span<double> values) {
        AttentionBackwardReference<M>(ctx.threads(), g, qa, dya, aa, scale, positions, values);
      });
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
