#pragma once
// The reduction rule of the element-level descent (docs/referee.md, "Level
// 5b"): an output value that is a fixed-tree sum (kernels' TreeSum: blocks
// of 64 terms summed left to right from +0, the block sums combined by the
// halving tree; clip_grad_norm: one TreeSum per gradient tensor, the tensor
// sums combined by the same halving tree) is judged like the dot rule — each
// party commits the tree's partial results, a walk finds the first differing
// one, and the referee checks one addition.
//
// The partial results, one fp32 leaf each (verify::PartialLeafHash), in this
// order: leaf 0 = +0 (the start of every block); then per segment (one per
// TreeSum) its term steps in term order (leaf = block prefix sum after the
// term) followed by its block combinations in post-order; then the
// combinations of the segment sums in post-order. The last leaf is the sum
// (a rounded value with a ReduceSlack: its β's fold, the sum being leaf
// ValueSteps()), so verify::CheckPartialsEnds (leaf 0 = +0, leaf Steps() =
// p) checks a posting as for the dot rule. Every step's operands are earlier leaves (or
// a term read from the node's inputs): where the leftmost-difference walk
// ends at leaf m+1, they are agreed.
//
// Implemented: sum and mean (whole tensor or one axis), linear_backward db,
// conv2d_backward db, layer-norm's mean and rstd, layernorm_backward's dx
// (two separate TreeSums over the row and a final step), dγ and dβ,
// softmax's y and softmax_backward's dx (rows of any width, one value a
// step), batchnorm2d_backward dγ
// and dβ, conv2d_backward's dx (col2im over its taps' dot products),
// batchnorm2d_train's batch mean, rstd and running variance (the
// sum of squared deviations from the node's own mean), clip_grad_norm's
// norm, cross_entropy_backward's dlogits — a
// softmax row's running max, its TreeSum of Exp(x − max) and a final step
// that reads the label from the batch — and cross_entropy's loss: that
// block once per row, its final step the row's loss, then an outer TreeSum
// over the rows' losses —, embedding_backward's dW (a masked sequential
// scan over the positions), attention's probabilities below the diagonal
// (per key a dot scan and the scale, then a softmax over the scores) and
// attention_backward's dqkv (dv a dot scan; dq and dk AttentionGrad's
// layout) and the poolings' y (a scan over the window)
// (ReduceElementAt). Steps may read the batch
// (verify/batch_opening.h: one example a step). The workers' answers:
// worker/element_answers.h (AnswerReducePartials, AnswerReduceStep).

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/mode.h"
#include "kernels/tensor.h"
#include "verify/descent.h"

namespace vt::verify {

class OpenedBatch;

// What one term of the sum is, from the values it reads (in ReduceElement::operands order).
enum class ReduceTerm : std::uint8_t {
  kValue = 0,             // v                          (sum, mean, biases' and norms' dβ)
  kSquare = 1,            // v·v                        (clip_grad_norm)
  kNormProduct = 2,       // dy·((x − mean)·rstd)       (layernorm / batch-norm dγ: dy, x, mean, rstd)
  kExpShifted = 3,        // Exp(x − max), max the row's max scan's last leaf (cross-entropy's s)
  kSquaredDeviation = 4,  // (x − mean)·(x − mean)  (the norms' ssq: x, mean)
  kProduct = 5,           // a·b                        (softmax_backward's dy·y; layer-norm's g = dy·γ)
  kScaledNormProduct = 6,  // (dy·γ)·x̂, x̂ = (x − mean)·rstd  (layernorm_backward's g·x̂: dy, γ, x, mean, rstd)
  // a·b rounded, a value of its own (layernorm_backward's g = dy·γ): as
  // kProduct in fp32; an exact sum adds the rounded product, where
  // kProduct's exact term is a·b itself (softmax_backward's dy·y).
  kRoundedProduct = 7,
  // (x − mean)·(x − mean) with mean = segment 0's sum / mean_divisor, read
  // as the step's right operand (a rounded norm's ssq about the kernel's own
  // unrounded mean: RoundedElementAt): x.
  kSquaredDeviationFromSum = 8,
};

// What the output value is, from the sum.
enum class ReduceEpilogue : std::uint8_t {
  kNone = 0,    // the sum (or the final step's leaf)
  kDivide = 1,  // sum / divisor (mean)
  kSqrt = 2,    // sqrt(sum)     (clip_grad_norm's norm)
  kRstd = 3,    // kernels::BatchNormRstd(sum / divisor, eps)  (batch-norm's rstd)
};

// A last step of the row block computing its value from the row's max and
// sum (the block's last leaf).
enum class ReduceFinal : std::uint8_t {
  kNone = 0,
  // dlogits[r, k] = kernels::CrossEntropyGradValue(Exp(x − max), sum, label = k, dloss / divisor),
  // reading (x[r, k], label[r], dloss): final_reads in that order; `final_class` is k.
  kCrossEntropyGrad = 1,
  // The row's loss l_r = kernels::CrossEntropyRowLoss(max, Log(sum), x[r, label_r]),
  // reading (label[r], x[r, label_r]): the second read is gathered by the first.
  kCrossEntropyLoss = 2,
  // An attention score: the scan's dot times kernels::AttentionScale(scale_dim).
  kAttentionScale = 3,
  // A batch-norm running variance: kernels::BatchNormRunning(running_var[c],
  // sum / divisor, momentum), reading (running_var[c]); the sum is the
  // channel's ssq and the divisor n − 1 (the unbiased variance). In rounded
  // mode the running mean too: the sum Σx, the divisor n, reading
  // running_mean[c] (RoundedElementAt).
  kRunningVar = 4,
  // A softmax value y[r, k] = Exp(x[r, k] − max) / sum, reading (x[r, k]).
  kSoftmaxValue = 5,
  // softmax_backward's dx[r, k] = y[r, k]·(dy[r, k] − sum), sum = Σ dy·y,
  // reading (y[r, k], dy[r, k]).
  kSoftmaxGrad = 6,
  // layernorm_backward's dx[r, k] = kernels::LayerNormGradValue(g, x̂, a, b,
  // rstd) with g = dy·γ, x̂ = (x − mean)·rstd, a = Σ g / C (the left operand:
  // segment 0's sum), b = Σ g·x̂ / C (the right: segment 1's), reading
  // (dy[r, k], γ[k], x[r, k], mean[r], rstd[r]).
  kLayerNormGrad = 7,
  // A clipped gradient g·kernels::ClipGradScale(max_norm, sqrt(sum)), the
  // sum the clip norm's (right), reading (g) — a rounded job's, whose kernel
  // scales by its own unrounded norm (RoundedElementAt).
  kClipScaled = 8,
  // batchnorm2d_backward's dx = kernels::BatchNormGradValue(dy, x, γ, mean,
  // rstd, Σ dy·x̂, Σ dy, n) — the channel's two sums kept separate (left,
  // right), reading (dy, x at the value; γ, mean, rstd at its channel) — a
  // rounded job's, whose kernel reads its own unrounded sums
  // (RoundedElementAt).
  kBatchNormGrad = 9,
  // A norm's y = kernels::NormValue(x, mean, NormRstd(var, eps), γ, β) with
  // mean = Σx / divisor (left: segment 0's sum) and var = ssq / divisor
  // (right: segment 1's), reading (x at the value; γ, β at its batch-norm
  // channel or layer-norm column) — a rounded job's (RoundedElementAt).
  kNormValue = 10,
};

// Where an operand of term j (0-based within its segment) of row r lies:
// input `input` at first + r·row_stride + (j / period)·outer_stride + (j % period)·stride,
// or first + r·row_stride + j·stride when period is 0. Rows that lie at no
// common stride (conv2d_backward's dx: one row per kernel tap that reaches
// the value) name their starts instead: row_firsts[r] replaces
// first + r·row_stride. A gathered operand (`gather_from` ≥ 0, a final read
// only) adds the value of the step's read `gather_from`, a row of a table of
// `gather_rows` (cross-entropy's x[r, label]).
struct TermOperand {
  std::uint32_t input = 0;
  std::int64_t first = 0, stride = 1, period = 0, outer_stride = 0, row_stride = 0;
  std::int32_t gather_from = -1;
  std::int64_t gather_rows = 0;
  std::vector<std::int64_t> row_firsts = {};
  std::int64_t Index(std::int64_t j, std::int64_t row = 0) const {
    const std::int64_t at =
        row_firsts.empty() ? first + row * row_stride : row_firsts[static_cast<std::size_t>(row)];
    return period == 0 ? at + j * stride : at + (j / period) * outer_stride + (j % period) * stride;
  }
  bool operator==(const TermOperand&) const = default;
};

// A sequential scan, the row block's first scan_count steps (step j reads
// scan_reads at Index(j, row)):
enum class ReduceScan : std::uint8_t {
  kNone = 0,
  // A softmax row's running max: leaf 1 = x_0, leaf j+1 = kernels::MaxStep(
  // leaf j, x_j); a kExpShifted term reads its last leaf (cross-entropy).
  kMax = 1,
  // The positions whose index is `key`, summed left to right from +0
  // (embedding_backward): leaf j+1 = idx_j == key ? leaf j + x_j : leaf j,
  // reading (idx_j, x_j). Every idx_j must be a row of `key_rows`
  // (kernels::IsRowIndex), as the kernel checks every index.
  kMaskedSum = 2,
  // A repops GEMM element from +0: leaf j+1 = leaf j + a_j·b_j, reading
  // (a_j, b_j) (attention's scores q_t·k_u).
  kDot = 3,
  // A plain sum from +0, left to right: leaf j+1 = leaf j + x_j, reading
  // (x_j) (avg_pool2d's window).
  kSum = 4,
  // A pooling window's maximum: leaf 1 = x_0, leaf j+1 = x_j when
  // kernels::PoolMaxReplaces(leaf j, x_j), else leaf j (max_pool2d's y).
  kPoolMax = 5,
};

// After the row blocks (ReduceElement::outer):
enum class ReduceOuter : std::uint8_t {
  kNone = 0,
  // A TreeSum whose terms are the blocks' last leaves (cross-entropy's loss).
  kSum = 1,
  // A softmax over the blocks' last leaves x_j (attention's att[t, u] over
  // the scores x_j, j ≤ t): their running max m (MaxStep), the leaves
  // e_j = Exp(x_j − m), the TreeSum z of the e_j, and e_pick / z.
  kSoftmax = 2,
  // The same softmax's quotients att_j = e_j / z for every block j, then
  // the GEMM element Σ_{u < outer_terms} att_u·x_u from +0 (u past the
  // blocks: +0·x_u), x_u read by outer_reads[0] at Index(u) — attention's y
  // in rounded mode, whose kernel multiplies its unrounded att by V.
  kSoftmaxDot = 3,
};

// Rounded mode: β of the value (kernels/rounding.h's slack), where the
// kernel's rows are vendor-dgemm dot products and β bounds how far two
// honest evaluations differ — computed by the kernel in fixed-sequence fp64
// from the rows' dot factors a, b (ReduceElement::scan_reads), so it is a
// computation of leaves too. After the value's leaves, per row block:
// ‖a‖² and ‖b‖² (scan_count steps each, sequential from +0, as
// kernels::GemmNormsSq), the row's GEMM slack
// kernels::GemmSlackValue(GemmSlackFactor(slack_terms), ‖a‖, ‖b‖, 0), and
// that slack folded into the rows' before it (from +0). The last leaf is
// the fold; the epilogue reads it and the value's leaf (ValueSteps()).
enum class ReduceSlack : std::uint8_t {
  kNone = 0,  // β = 0: the kernel's sum is the rule's, in the rule's order
  // conv2d_backward's dx: col2im adds the rows' slacks as it adds their
  // values (from +0, in row order); β is the fold.
  kSumOfRowSlacks = 1,
  // attention's att: the row's largest score slack (kernels::MaxStep from
  // +0); β = value·kernels::AttentionSlackFactor(fold, scale).
  kSoftmaxOfRowSlacks = 2,
  // attention's y (ReduceOuter::kSoftmaxDot): the rows folded as for att,
  // then f = AttentionSlackFactor(fold, scale) (kSlackFactor), β_att_j =
  // att_j·f (kLeafProduct), Σ att_j² and Σ β_att_j² (kSquareAdd), Σ x_u² over
  // the outer reads (kNormStep), and the kernel's PerturbedGemmSlack:
  // GemmSlackValue(GemmSlackFactor(outer_terms + kAttentionOutputExtraTerms),
  // √Σatt², √Σx², 0) (kRowSlack of segment 1) plus
  // PerturbationNorm(Σβ²)·√Σx² (kPerturbedSlack), added (kCombine). β is the
  // last leaf.
  kAttentionOutput = 3,
  // attention_backward's dq and dk (AttentionGrad, "Rounded mode" there):
  // the kernel's β_dP, β_dS and PerturbedGemmSlack over dS. β is the last leaf.
  kAttentionGrad = 4,
};

// attention_backward's dq[t, i] or dk[u, i] of one (b, h) item, whose
// terms dS_tu = (att_tu·(dP_tu − r_t))·scale no tensor commits: the leaves,
// after leaf 0 = +0, recompute what each needs (verify/reduce_rule.cpp
// AttentionGradStepAt):
//   dq (row t): the dot blocks dP_tj = dy_t·v_j (j ≤ t, D steps each from
//     +0), r_t = TreeSum_j att_tj·dP_tj, the leaves dS_tu (u ≤ t), then the
//     GEMM element Σ_u dS_tu·k_u[i] over all u < T (u > t: +0·k_u[i]);
//   dk (column u): for each row t ≥ u its dot blocks, r_t and dS_tu, then
//     the GEMM element Σ_t dS_tu·q_t[i] over all t < T (t < u: +0·q_t[i]).
// Inputs: 0 dy [B, T, C], 1 qkv [B, T, 3C], 2 att [B, H, T, T].
//
// Rounded mode (ReduceSlack::kAttentionGrad): the same leaves in fp64 (dP's
// dots and the GEMM element sequential from +0: the canonical reference
// for the kernel's vendor dgemm), then the kernel's β as leaves:
//   ‖v_j‖² for every j the rows read (dq: j ≤ t; dk: j < T), D kNormSteps each;
//   per row t of the value (dq: t; dk: t ≥ u): ‖dy_t‖² (D kNormSteps), then
//     per j ≤ t β_dP_tj (kRowSlack over D terms) and Σ att_tj·β_dP_tj
//     (kWeightedTerm, sequential from +0), then β_dS_tu (kAttnDsSlack; dq
//     every u ≤ t, dk its u);
//   Σ β_dS² and Σ dS² over the value's dS (kSquareAdd), Σ x² over the
//   GEMM's other factor (k_u[i] or q_t[i], T kNormSteps), its slack over
//   T + kernels::kAttentionGradExtraTerms terms (kRowSlack), the
//   perturbation (kPerturbedSlack), their sum (kCombine): β.
struct AttentionGrad {
  bool dk = false;
  std::int64_t fixed = 0;  // dq: the row t; dk: the column u
  std::int64_t t_count = 0, d = 0, c = 0;
  std::int64_t dy_image = 0, qkv_image = 0, att_item = 0, head = 0, i = 0;  // offsets; head = h·D
  bool operator==(const AttentionGrad&) const = default;
};

// One TreeSum of a row block: `terms` terms, term j = TermValue(term, the
// operands' values at Index(j, row)).
struct ReduceSegment {
  std::int64_t terms = 0;
  ReduceTerm term = ReduceTerm::kValue;
  std::vector<TermOperand> operands;
  bool operator==(const ReduceSegment&) const = default;
};

// The leaves, after leaf 0 = +0: `rows` row blocks, each of
//   the scan (scan_count steps), the segments' term steps and block
//   combinations, the combinations of the segment sums (none when the sums
//   stay separate), the final step;
// then the outer stage over the blocks' last leaves (ReduceOuter: a TreeSum,
// or a softmax's max, exponentials, TreeSum and quotient). Row r's operands
// lie at + r·row_stride (TermOperand::Index).
struct ReduceElement {
  ReduceScan scan = ReduceScan::kNone;
  std::int64_t scan_count = 0;
  std::vector<TermOperand> scan_reads;
  std::int64_t key = 0, key_rows = 0;  // kMaskedSum
  std::vector<ReduceSegment> segments;  // the TreeSums (one: a plain TreeSum)
  // The segments' sums are not combined: the final step reads segment 0's
  // sum as its left operand and segment 1's as its right (kLayerNormGrad).
  bool separate_sums = false;
  ReduceEpilogue epilogue = ReduceEpilogue::kNone;
  std::int64_t divisor = 1;
  ReduceFinal final = ReduceFinal::kNone;
  std::vector<TermOperand> final_reads;  // each read at Index(0, row)
  std::int64_t final_class = 0;
  std::int64_t rows = 1;  // row blocks
  ReduceOuter outer = ReduceOuter::kNone;
  std::int64_t pick = 0;       // kSoftmax: the block whose e / z is the output
  std::vector<TermOperand> outer_reads;  // kSoftmaxDot: x_u
  std::int64_t outer_terms = 0;          // kSoftmaxDot: the GEMM's K
  std::int64_t scale_dim = 0;  // kAttentionScale: the head width D
  float eps = 0.0f, momentum = 0.0f;            // kRstd, kRunningVar: the norm node's attributes
  std::int64_t mean_divisor = 0;                // kSquaredDeviationFromSum: the mean's n
  float max_norm = 0.0f;                        // kClipScaled: clip_grad_norm's attribute
  std::optional<AttentionGrad> attention_grad;  // its own layout; every field above unused
  // The sums are exact (certified mode, verify/certified_sum.h): a segment
  // is its terms' exact prefix sums (term 0 from +0, or, segments not kept
  // separate, from the previous segment's sum; no block combinations), the
  // outer stage's sum adds each row's last leaf (or e_j) to the sum before
  // it, and the scans that add (kMaskedSum, kDot, kSum) add exactly;
  // AttentionGrad's dot blocks, r_t and GEMM element are exact sums too (r_t
  // without combinations). Its leaves are ExactPartial (CertifiedStepLeaf),
  // not fp32.
  bool exact = false;
  // The leaves are fp64 (rounded mode, whose fixed-sequence kernels compute
  // these sums in fp64 before rounding the output): every step in
  // kernels::opsdetail::F64Math over the fp32 values read, the output
  // RoundedReduceValue of the value's leaf (and the slack's). Never with `exact`.
  bool fp64 = false;
  ReduceSlack slack = ReduceSlack::kNone;  // only with fp64
  std::int64_t slack_terms = 0;            // the GEMM's K of GemmSlackFactor
  // Leaves of one row block.
  std::uint64_t BlockSteps() const;
  // Steps up to the value's leaf (without a slack, every step).
  std::uint64_t ValueSteps() const;
  // Steps of the whole computation: the tree has Steps() + 1 leaves.
  std::uint64_t Steps() const;
  bool operator==(const ReduceElement&) const = default;
};

// The reduction rule of output `slot`, value `e` (docs/kernels.md orders):
//   sum, mean (axis or all)              y = TreeSum over the axis [/ n]
//   linear_backward slot 2               db[n] = TreeSum_r dy[r, n]
//   conv2d_backward slot 2               db[co] = TreeSum over (n, p) of dy[n, co, p]
//   layernorm slots 1, 2                 mean[r] = TreeSum_c x / C; rstd[r] = NormRstd(TreeSum_c
//                                        (x − mean)² / C, eps), mean the node's own slot 1 (walked
//                                        first; y is pointwise from both: verify/element_rules.h)
//   layernorm_backward slot 0            dx[r, k]: the row's TreeSums of g = dy·γ and of g·x̂ (two
//                                        separate segments), then the final step (reads dy, γ, x at
//                                        k, the row's mean and rstd)
//   layernorm_backward slots 1, 2        dγ[c] = TreeSum_r dy·x̂,  dβ[c] = TreeSum_r dy
//   softmax slot 0                       y[r, k]: the row's running max, s = TreeSum Exp(x − max),
//                                        then Exp(x[r, k] − max) / s
//   softmax_backward slot 0              dx[r, k]: d = TreeSum_j dy·y over the row, then
//                                        y[r, k]·(dy[r, k] − d)
//   batchnorm2d_backward slots 1, 2      dγ[c], dβ[c] over (n, h, w)
//   batchnorm2d_train slot 3             the batch mean[c] = TreeSum over (n, h, w) of x / (N·H·W)
//   batchnorm2d_train slots 4, 2         rstd[c] and running_var'[c] from ssq = TreeSum of
//                                        (x − mean)², mean the node's own slot 3 (kOwnOutput + 3,
//                                        walked first: verify::SlotWalkOrder)
//   clip_grad_norm last slot             norm = sqrt(halving tree over s_i), s_i = TreeSum(g_i²)
//   cross_entropy_backward slot 0        dlogits[r, k]: row r's running max, s = TreeSum Exp(x − max),
//                                        then the final step (reads x[r, k], label[r] of the batch, dloss)
//   cross_entropy slot 0                 loss = TreeSum_r l_r / R: per row its max, s and l_r (reads
//                                        label[r] of the batch and the logit it names, x[r, label[r]])
//   attention slot 1, u ≤ t              att[b, h, t, u]: per j ≤ t the score q_t·k_j (a D-step dot)
//                                        times the scale, then the softmax over the scores at u
//                                        (u > t: the mask's +0, verify/element_rules.h)
//   attention_backward slot 0            dqkv: dv[u, i] = Σ_t att_tu·dy_t[i] (a T-step dot scan);
//                                        dq, dk: AttentionGrad's layout
//   conv2d_backward slot 0               dx[n, ci, ih, iw]: col2im's sum from +0, in tap order, of
//                                        dcol[ci·KK + r][p] over the taps r = kh·KW + kw whose output
//                                        position p exists; each row a kDot scan over co of
//                                        w[co, ci, kh, kw]·dy[n, co, p] (the repops GEMM element), the
//                                        outer kSum over the taps (KH·KW ≤ 64: sequential from +0)
//   embedding_backward slot 0            dW[v, d] = the masked scan over the positions p: + dy[p, d]
//                                        where idx[p] = v (idx read from the batch, one example a step)
//   avg_pool2d, max_pool2d slot 0        y = the kSum scan over the window's valid positions in
//                                        row-major order, / (KH·KW); max: the kPoolMax scan. One
//                                        value a step however wide the window (a global pool reads
//                                        its whole plane)
// Invalid "elem-no-reduce-rule" otherwise, "elem-bad-index" outside the output.
// `attrs`: the node's canonical attributes (the sum/mean axis).
Result<ReduceElement> ReduceElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                      std::span<const kernels::Shape> input_shapes);

// conv2d_backward's dx[e] (inputs dy, x, w): whether a kernel tap reaches
// it. A value none reaches (a stride past the kernel) is col2im's +0, read
// from nothing, which the pointwise rule re-executes
// (verify/element_rules.h); the others are the reduction rule's. Invalid
// "elem-no-reduce-rule" for shapes or attributes the rule does not
// describe, "elem-bad-index" outside dx.
Result<bool> ConvInputGradReached(ByteSpan attrs, std::int64_t e,
                                  std::span<const kernels::Shape> input_shapes);

// Values whose rounded kernel computes them otherwise than the repops
// rule describes, described as the rounded kernel computes them.
// ReduceRuleAt plays these in rounded mode only. First, values whose
// repops rule reads a statistic of the node's own agreed outputs where the
// rounded kernel reads its own unrounded fp64 statistic (repops and
// certified judge them pointwise from the agreed statistic): the
// statistic's sums and a final step over them:
//   clip_grad_norm's g'_i (output `slot` < the gradient count): the norm's
//     sums (ReduceElementAt at the norm's slot, without its square root),
//     then g[slot][e]·ClipGradScale(max_norm, sqrt(sum)) (kClipScaled);
//   batchnorm2d_train's running_mean'[c] (slot 1): the channel mean's sum
//     (slot 3's), then BatchNormRunning(running_mean[c], sum / n, momentum)
//     (kRunningVar with divisor n: the kernel's MeanOf is TreeSum / n);
//   batchnorm2d_backward's dx (slot 0): its channel's sums of dy·x̂ and of
//     dy (slots 1's and 2's, kept separate), then kBatchNormGrad;
//   batchnorm2d_train's y (slot 0), running_var' (2) and rstd (4), and
//     layernorm's y (0) and rstd (2): the channel's or row's Σx, then
//     Σ(x − Σx/n)² (kSquaredDeviationFromSum, each term reading the first
//     sum), kept separate, then kNormValue, kRunningVar (divisor n − 1) or
//     the kRstd epilogue.
// Second, values over vendor-dgemm dot products: the repops description
// (its rows' dot scans are the canonical fp64 reference's order) with the
// kernel's β as leaves (ReduceSlack):
//   conv2d_backward's dx (slot 0): kSumOfRowSlacks over Co·KH·KW terms;
//   attention's att (slot 1, u ≤ t): kSoftmaxOfRowSlacks over D terms;
//   attention's y (slot 0) y[b, t, h·D + i]: row t's scores and softmax as
//     att's, then Σ_u att_tu·v_u[i] over every u < T (ReduceOuter::
//     kSoftmaxDot: the kernel's att·V over its unrounded att), β by
//     kAttentionOutput. The dot rule's description of y (the committed
//     att) is repops' and certified mode's;
//   attention_backward's dqkv (slot 0): dv's dot scan with kSumOfRowSlacks
//     (one row, T terms), dq and dk AttentionGrad's leaves with
//     kAttentionGrad.
// Invalid "elem-no-reduce-rule" for any other op or slot, "elem-bad-index"
// outside the output.
Result<ReduceElement> RoundedElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                       std::int64_t e, std::span<const kernels::Shape> input_shapes);

// One step of the computation: leaf `leaf` (≥ 1) from earlier leaves and
// the values it reads (StepReads), in row block `row`:
//   kTerm     leaf `left` + term `term` of segment `segment` (a kExpShifted
//             term also reads leaf `right`, the row's max)
//   kCombine  leaf `left` + leaf `right` (also a term of the outer sum over
//             the rows: leaf `right` the row's last leaf)
//   kScan     step `term` of the scan (ReduceScan) from leaf `left`
//   kFinal    the block's value from leaf `left` (the max) and leaf `right` (the sum)
//   kLeafMax  the outer softmax's max: leaf `right` (term 0), else MaxStep(leaf `left`, leaf `right`)
//   kLeafExp  Exp(leaf `right` − leaf `left`) (a score less the max)
//   kLeafDiv  leaf `left` / leaf `right` (e_pick / z)
// and for AttentionGrad (`row` the row t, `term` the column u or the dot's i):
//   kDotStep       leaf `left` + dy_t[term]·v_j[term] (j = `segment`; left +0 at term 0)
//   kWeightedTerm  leaf `left` + att_tj·leaf `right` (r_t's TreeSum term j = `segment`, right dP_tj)
//   kAttnDs        (att_tu·(leaf `left` − leaf `right`))·scale (left dP_tu, right r_t)
//   kGemmStep      leaf `left` + leaf `right`·x (x = k_u[i] or q_t[i]; without `right`, +0·x)
// and for a ReduceSlack (`segment` 0: the dot's factor a, 1: b, 2: the
// outer read x; `term` its j or u):
//   kNormStep        leaf `left` + x·x (x the factor at j; left leaf 0 at j = 0)
//   kRowSlack        GemmSlackValue(GemmSlackFactor(slack_terms), √leaf `left`, √leaf `right`, 0)
//                    (`segment` 1: over outer_terms + kAttentionOutputExtraTerms terms)
//   kSlackFold       leaf `left` + leaf `right` (kSumOfRowSlacks) or MaxStep(left, right)
//   kSlackFactor     AttentionSlackFactor(leaf `left`, AttentionScale(scale_dim))
//   kLeafProduct     leaf `left` · leaf `right`
//   kSquareAdd       leaf `left` + leaf `right` · leaf `right`
//   kPerturbedSlack  PerturbationNorm(leaf `left`) · √leaf `right`
//   kAttnDsSlack     AttentionDsSlack(att_tu, leaf `left`, leaf `right`, scale) (left β_dP_tu,
//                    right Σ att·β_dP of row t = `row`, u = `term`)
// (kernels/ops/attention.h). AttentionGrad's kNormStep reads dy_t[term]
// (`segment` 0, t = `row`), v_j[term] (1, j = `row`) or the GEMM's factor
// at term (2); its kRowSlack's `segment` 1 is over T +
// kAttentionGradExtraTerms. kGemmStep without AttentionGrad is
// kSoftmaxDot's step: x read by outer_reads[0].
enum class ReduceStepKind : std::uint8_t {
  kTerm = 0,
  kCombine = 1,
  kScan = 2,
  kFinal = 3,
  kLeafMax = 4,
  kLeafExp = 5,
  kLeafDiv = 6,
  kDotStep = 7,
  kWeightedTerm = 8,
  kAttnDs = 9,
  kGemmStep = 10,
  kNormStep = 11,
  kRowSlack = 12,
  kSlackFold = 13,
  kSlackFactor = 14,
  kLeafProduct = 15,
  kSquareAdd = 16,
  kPerturbedSlack = 17,
  kAttnDsSlack = 18,
};
struct ReduceStep {
  ReduceStepKind kind = ReduceStepKind::kTerm;
  bool reads_right = false;  // the step reads leaf `right` too
  std::uint64_t left = 0, right = 0;
  std::uint32_t segment = 0;
  std::int64_t term = 0;
  std::int64_t row = 0;
  bool operator==(const ReduceStep&) const = default;
};
// Invalid "elem-bad-step" for leaf 0 or past Steps().
Result<ReduceStep> ReduceStepAt(const ReduceElement& element, std::uint64_t leaf);

// One value a step reads: input `input` at flat `index`; a gathered read
// (`gather_from` ≥ 0) at index + v, v the value of the step's earlier read
// `gather_from`, which must be a row of a table of `gather_rows`.
struct StepRead {
  std::uint32_t input = 0;
  std::int64_t index = 0;
  std::int32_t gather_from = -1;
  std::int64_t gather_rows = 0;
};
// The values any step reads (none for a combination), in order: at most
// kMaxStepReads (layernorm_backward's g·x̂ terms and final step, batch
// norm's backward dx: dy, x, γ, mean, rstd), from as many inputs — what a
// step's move may open (referee/messages.h, the bond's pricing).
inline constexpr std::size_t kMaxStepReads = 5;
std::vector<StepRead> StepReads(const ReduceElement& element, const ReduceStep& step);
// The values the step to leaf m+1 reads. Invalid "elem-bad-step" past the last step.
Result<std::vector<StepRead>> StepReadsAt(const ReduceElement& element, std::uint64_t m);

// A read resolved: where it read and what.
struct ReadValue {
  std::uint32_t input = 0;
  std::int64_t index = 0;
  float value = 0.0f;
};
// Where a party or the referee gets a value: (input, flat index) → value.
using ValueAt = std::function<Result<float>(std::uint32_t input, std::int64_t index)>;
// The step's reads in order, each index resolved (a gathered one from the
// value it names) and its value from `value_at`. Invalid "bad-index" when a
// gathering value is not a row of its table (kernels::IsRowIndex: the
// operator fails on these inputs, as the kernel does); `value_at`'s errors.
Result<std::vector<ReadValue>> ReadStep(std::span<const StepRead> reads, const ValueAt& value_at);
// `value_at` over whole tensors (a party's inputs, and the node's own
// outputs for the reads at kOwnOutput + s); Invalid "elem-bad-index"
// outside them.
ValueAt TensorValues(std::span<const kernels::Tensor> tensors, std::span<const kernels::Tensor> outputs = {});
// The arithmetic of a rule's leaves, T = float (repops: RepopsMath, fp32)
// or double (a rounded job: F64Math, the fixed-sequence fp64 of rounded
// mode's kernels over the fp32 values read, kernels/ops/op_util.h). Each
// function below has one implementation for both.
//
// The term from the values it reads (the kernels' expression); `max` is
// the row's max for a kExpShifted term.
template <class T>
T TermValue(ReduceTerm term, std::span<const std::type_identity_t<T>> values, T max = T(0));
// Leaf m+1 of `step` from its operand leaves and the values it reads.
// Invalid "bad-index" when the final step's label is not a class (the
// operator fails on its inputs, as the kernel does).
template <class T>
Result<T> StepValue(const ReduceElement& element, const ReduceStep& step, T left, T right,
                    std::span<const std::type_identity_t<T>> values);
// The output value from the sum (the epilogue): repops its fp32 value; a
// rounded job's the fp64 value RoundedReduceValue rounds.
template <class T>
T ReduceOutput(const ReduceElement& element, T sum);

// Where a party's partial results go as they are computed, leaf 0 first:
// a vector (HeldLeaves) or verify/rule_leaves.h's checkpoints, which keep
// GPT-2's 1.2·10^8 leaves in a few MB. `At` reads an earlier leaf (a
// combination's operands, the row's max), `Size` counts those pushed.
template <class Leaf>
class LeafSink {
 public:
  virtual ~LeafSink() = default;
  virtual void Push(const Leaf& leaf) = 0;
  virtual Leaf At(std::uint64_t i) const = 0;
  virtual std::uint64_t Size() const = 0;
  Leaf Back() const { return At(Size() - 1); }
};
template <class Leaf>
struct HeldLeaves final : LeafSink<Leaf> {
  std::vector<Leaf> leaves;
  void Push(const Leaf& leaf) override { leaves.push_back(leaf); }
  Leaf At(std::uint64_t i) const override { return leaves[static_cast<std::size_t>(i)]; }
  std::uint64_t Size() const override { return leaves.size(); }
};

// All Steps() + 1 partial results from the values `value_at` reads (a party
// computes these for one value, on demand), pushed in order. Invalid
// "elem-bad-index" when an operand lies outside its tensor,
// "elem-wrong-leaf" for an exact element or leaves not the element's
// (T = double iff ReduceElement::fp64).
template <class T>
Status ComputeReducePartials(const ReduceElement& element, const ValueAt& value_at, LeafSink<T>& out);
// The same from the node's input tensors and its own outputs, held whole.
template <class T = float>
Result<std::vector<T>> ReducePartials(const ReduceElement& element, std::span<const kernels::Tensor> inputs,
                                      std::span<const kernels::Tensor> outputs = {});

// Level 5b's final move for the reduction rule, as one claim: the walk
// ended at leaf m+1 (leaf m agreed). It carries the step's operand leaves
// opened against root A (they precede m+1: agreed), each party's leaf m+1
// against its own root, and for a term step the term's values opened
// against the node's agreed inputs (TermReads order).
template <class T>
struct ReduceStepClaimOf {
  std::uint64_t m = 0;
  T left = 0, right = 0;  // right: the steps with reads_right only
  crypto::MerkleProof left_proof, right_proof;
  std::array<T, 2> next{};
  std::array<crypto::MerkleProof, 2> next_proof;
  std::vector<ValueOpening>
      reads;  // the step's reads of hashed inputs (StepReads order, the batch's skipped)
  bool operator==(const ReduceStepClaimOf&) const = default;
};
using ReduceStepClaim = ReduceStepClaimOf<float>;
using RoundedReduceStepClaim = ReduceStepClaimOf<double>;

// An agreed input of the node, by its tensor hash; or a tensor of the
// batch (`batch`: 0 inputs, 1 targets), whose values come from a batch
// opening (verify/batch_opening.h). A read at kOwnOutput + s is of the
// node's own output slot s: `own[s]` (its records' common hash).
struct InputTensor {
  Hash256 hash;
  kernels::Shape shape;
  std::optional<std::uint32_t> batch;
};
// The tensor a read names: inputs[input], or own[input − kOwnOutput];
// nullptr when there is none.
const InputTensor* TensorOfRead(std::span<const InputTensor> inputs, std::span<const InputTensor> own,
                                std::uint32_t input);

// The values a step's `reads` name, from a move: one opening a read of a
// hashed input (VerifyValue against its tensor hash, in order), a value of
// the batch from `batch`. Invalid "elem-bad-step" (a read of no input, a
// wrong number of openings, a batch value without a batch opening) or
// VerifyValue's reasons.
Result<std::vector<float>> OpenStepReads(std::span<const StepRead> reads, std::span<const InputTensor> inputs,
                                         std::span<const InputTensor> own,
                                         std::span<const ValueOpening> openings, const OpenedBatch* batch);

// The referee's verdict on a ReduceStepClaim, and every worker's prediction
// of it: the step (ReduceStepAt), its operand leaves against roots[0], both
// next leaves against their roots, the step's reads (StepReads: VerifyValue
// against `inputs`, one claim.reads opening per hashed read; for a batch
// input the value `batch` opened, without an opening), then the one step
// (StepValue). Charge: up to four proofs of
// ⌈log₂(Steps()+1)⌉ siblings and up to kMaxStepReads value openings. Invalid
// "elem-bad-step" (a proof that does not check out, m out of range, a wrong
// number of reads) or VerifyValue's reasons.
template <class T>
Result<StepVerdict> JudgeReduceStepClaim(const ReduceElement& element, std::span<const InputTensor> inputs,
                                         const std::array<Hash256, 2>& roots,
                                         const ReduceStepClaimOf<T>& claim,
                                         const OpenedBatch* batch = nullptr,
                                         std::span<const InputTensor> own = {});

// When both parties' partial results agree to the sum, the disputed step is
// the epilogue: y = ReduceOutput(sum).
StepVerdict JudgeReduceEpilogue(const ReduceElement& element, float sum, float y_a, float y_b);

// A rounded job's output from its fp64 leaves: ref = ReduceOutput(the
// value's leaf, ValueSteps()) rounded by the node's `spec` to nearest, or,
// where the node's log has an entry (`logged`: its direction), by
// kernels::ApplyLogEntry with the spec's τ — which the caller sets to 0 for
// an operator exact in fp64 (kernels::OpFp64IsExact: there the trainer
// logs nothing, and any entry is refused) — and β = 0 (the sum's order is
// fixed) or, for an element with a ReduceSlack, β from its last leaf
// `slack_leaf` (the rows' slacks folded). Invalid
// "log-entry-outside-region" when the rule refuses the entry (the solver's
// log is wrong), "elem-wrong-leaf" for an element that is not fp64.
Result<float> RoundedReduceValue(const ReduceElement& element, double value_leaf, double slack_leaf,
                                 const kernels::RoundingSpec& spec, std::optional<bool> logged);
Result<StepVerdict> JudgeRoundedReduceEpilogue(const ReduceElement& element, double value_leaf,
                                               double slack_leaf, const kernels::RoundingSpec& spec,
                                               std::optional<bool> logged, float y_a, float y_b);

}  // namespace vt::verify
