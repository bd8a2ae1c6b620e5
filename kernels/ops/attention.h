#pragma once
// Causal multi-head self-attention on packed q, k, v (conventions:
// kernels/ops/linear.h).
//
// Design choice: the operator takes the fused projection's output
// qkv [B, T, 3C] (llm.c's layout: q = qkv[..., 0:C], k = qkv[..., C:2C],
// v = qkv[..., 2C:3C]; head h owns columns h·D .. h·D+D−1 of each, D = C/H).
// A transformer block composes it as
//   Linear(x, W_qkv [3C, C], b_qkv) → Attention → Linear(·, W_o [C, C], b_o),
// so projections are ordinary linear nodes and this node holds no weights.

#include <cmath>
#include <cstdint>
#include <limits>

#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// The score scale 1/√D of a head of width D in the math policy's T (IEEE
// sqrt and division), shared with the element rule that re-executes one
// score (verify/reduce_rule.h).
template <class M>
typename M::T AttentionScale(std::int64_t d) {
  using T = typename M::T;
  return T(1) / M::Sqrt(static_cast<T>(d));
}

// The backward's dS_tu from att_tu, dP_tu, the row's r_t and the scale
// (u ≤ t), shared with the element rule that re-executes one.
template <class T>
T AttentionDsValue(T att, T dp, T r, T scale) {
  return (att * (dp - r)) * scale;
}

// Rounded mode: the factor f with β_att = att·f for every value of a softmax
// row whose scores' GEMM slacks have maximum `max_score_slack` (folded by
// MaxStep from +0), `scale` the row's score scale. With Δ = scale·max β_S,
// att' = att·exp(θ) with |θ| ≤ 2Δ, so |att' − att| ≤ att·(e^{2Δ} − 1) ≤
// att·2Δ(1 + 2Δ) for 2Δ ≤ 1 (no libm, so every party computes the same
// bits); above that +inf (capped at u/4 by the rounding). Shared with the
// element rule that judges one att value (verify/reduce_rule.h).
inline double AttentionSlackFactor(double max_score_slack, double scale) {
  const double x = 2.0 * (max_score_slack * scale) * (1.0 + 0x1p-16);
  return x <= 1.0 ? x * (1.0 + x) * (1.0 + 0x1p-16) : std::numeric_limits<double>::infinity();
}

// Rounded mode, y = att·V over the unrounded att (itself uncertain by β_att):
// the GEMM's slack counts this many terms beyond its K (the rounding of how
// att was computed), and adds PerturbationNorm(‖β_att row‖²)·‖V col‖.
inline constexpr std::int64_t kAttentionOutputExtraTerms = 8;
// ‖δ‖·(1 + 2^-16) from ‖δ‖² (the factor covers the norm's own rounding).
inline double PerturbationNorm(double perturbation_sq) {
  return std::sqrt(perturbation_sq) * (1.0 + 0x1p-16);
}

// Rounded mode, the backward's dS = (att·(dP − r))·scale with dP = dY·Vᵀ
// (vendor dgemm, slack β_dP) and r_t = Σ_u att_tu·dP_tu: r_t moves by at
// most δr = (Σ_u att_tu·β_dP_tu)·(1 + 2^-16) (the sum sequential from +0,
// `weighted_slack`), and dS_tu by (att·(β_dP + δr))·scale·(1 + 2^-16) (its
// own rounding covered). Shared with the element rule that judges dq and
// dk (verify/reduce_rule.h).
inline double AttentionDsSlack(double att, double dp_slack, double weighted_slack, double scale) {
  return (att * (dp_slack + weighted_slack * (1.0 + 0x1p-16))) * scale * (1.0 + 0x1p-16);
}
// dQ = dS·K and dK = dSᵀ·Q over that uncertain dS: the GEMMs' slacks count
// this many terms beyond their K (dS's own rounding), and add
// PerturbationNorm(‖β_dS row‖²)·‖K col‖ (resp. column and Q).
inline constexpr std::int64_t kAttentionGradExtraTerms = 4;

// Outputs in order: y [B, T, C] (heads concatenated), att [B, H, T, T] (the
// softmax probabilities, zero above the diagonal; saved for the backward).
Status AttentionForward(const OpContext& ctx, const Tensor& qkv, std::int64_t heads, Tensor& y, Tensor& att);
// dy [B, T, C], qkv, att (the forward's output) → dqkv [B, T, 3C].
Status AttentionBackward(const OpContext& ctx, const Tensor& dy, const Tensor& qkv, const Tensor& att,
                         std::int64_t heads, Tensor& dqkv);

}  // namespace vt::kernels
