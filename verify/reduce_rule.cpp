#include "verify/reduce_rule.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "common/detmath.h"
#include "common/encoding.h"
#include "kernels/arith_hd.h"
#include "kernels/matmul.h"
#include "kernels/ops/attention.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/embedding.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/op_util.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/registry.h"
#include "kernels/ops/softmax.h"
#include "kernels/rounding.h"
#include "verify/batch_opening.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

using kernels::OpKind;
using kernels::opsdetail::kTreeBlock;

bool Is(std::uint16_t op_kind, OpKind k) { return static_cast<std::uint16_t>(k) == op_kind; }
std::int64_t Last(const kernels::Shape& s) { return s.empty() ? 1 : s.back(); }
// The arithmetic of leaves of type T (reduce_rule.h): repops' fp32, or the
// fixed-sequence fp64 of rounded mode's kernels.
template <class T>
using MathOf =
    std::conditional_t<std::is_same_v<T, float>, kernels::opsdetail::RepopsMath, kernels::opsdetail::F64Math>;
// One GEMM step as the leaves' arithmetic takes it: the repops GEMM's own
// step in fp32 (the only one a rounded rule never plays: its GEMMs are
// vendor dgemm, CheckRuleInMode).
template <class T>
T DotStep(T acc, T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    return kernels::hd::RepopsStep(acc, a, b);
  } else {
    return acc + a * b;
  }
}
std::int64_t Blocks(std::int64_t n) { return (n + kTreeBlock - 1) / kTreeBlock; }
// Additions of one segment: one per term, one per combination of its blocks.
std::uint64_t SegmentSteps(std::int64_t n) { return static_cast<std::uint64_t>(n + Blocks(n) - 1); }
// The same in either order: an exact sum (`exact`) has no combinations.
std::uint64_t SumSteps(bool exact, std::int64_t n) {
  return exact ? static_cast<std::uint64_t>(n) : SegmentSteps(n);
}

// The halving tree over `count` items (kernels' CombinePairwise): its
// count − 1 combinations are numbered in post-order from `base`. The
// subtree over items [lo, lo + count) has its nodes at [base, base + count − 1),
// its root last.
struct HalvingTree {
  std::uint64_t base = 0;
  std::int64_t count = 0;
  // The leaf holding the value of items [lo, lo + k) whose nodes start at `b`.
  template <class ItemLeaf>
  static std::uint64_t ValueLeaf(std::uint64_t b, std::int64_t lo, std::int64_t k, const ItemLeaf& item) {
    return k == 1 ? item(lo) : b + static_cast<std::uint64_t>(k) - 2;
  }
  // Node `local` (0-based post-order) as (left operand leaf, right operand leaf).
  template <class ItemLeaf>
  std::pair<std::uint64_t, std::uint64_t> Node(std::uint64_t local, const ItemLeaf& item) const {
    std::uint64_t b = base;
    std::int64_t lo = 0, k = count;
    std::uint64_t x = local;
    for (;;) {
      const std::int64_t h = (k + 1) / 2;
      const std::uint64_t left_nodes = static_cast<std::uint64_t>(h - 1);
      const std::uint64_t right_nodes = static_cast<std::uint64_t>(k - h - 1);
      if (x == left_nodes + right_nodes) {
        return {ValueLeaf(b, lo, h, item), ValueLeaf(b + left_nodes, lo + h, k - h, item)};
      }
      if (x < left_nodes) {
        k = h;
      } else {
        x -= left_nodes;
        b += left_nodes;
        lo += h;
        k -= h;
      }
    }
  }
};

// Where segment s's leaves start (its first term step), and the leaf of its sum.
std::uint64_t SegmentStart(const ReduceElement& el, std::size_t s) {
  std::uint64_t start = 1 + static_cast<std::uint64_t>(el.scan_count);
  for (std::size_t i = 0; i < s; ++i) start += SumSteps(el.exact, el.segments[i].terms);
  return start;
}
std::uint64_t SegmentSumLeaf(const ReduceElement& el, std::size_t s) {
  return SegmentStart(el, s) + SumSteps(el.exact, el.segments[s].terms) - 1;
}

// Step `local` (0-based) of a TreeSum of n terms whose leaves start at
// `start`: term step `term` (its left operand the block's previous leaf, or
// leaf 0 = +0 at a block's start) or a combination of its block sums.
// An exact sum (`exact`) is its term steps alone, term 0's left operand
// `first_left` (+0, or the sum it continues).
ReduceStep SegmentStepAt(std::uint64_t start, std::int64_t n, std::uint64_t local, bool exact = false,
                         std::uint64_t first_left = 0) {
  ReduceStep st;
  if (local < static_cast<std::uint64_t>(n)) {
    st.term = static_cast<std::int64_t>(local);
    const bool starts = exact ? local == 0 : st.term % kTreeBlock == 0;
    st.left = !starts ? start + local - 1 : exact ? first_left : 0;
    return st;
  }
  const HalvingTree tree{start + static_cast<std::uint64_t>(n), Blocks(n)};
  const auto block_sum = [&](std::int64_t b) {
    return start + static_cast<std::uint64_t>(std::min((b + 1) * kTreeBlock, n)) - 1;
  };
  st.kind = ReduceStepKind::kCombine;
  st.reads_right = true;
  std::tie(st.left, st.right) = tree.Node(local - static_cast<std::uint64_t>(n), block_sum);
  return st;
}

// Step `leaf` (1 ≤ leaf ≤ BlockSteps()) of row block 0.
ReduceStep BlockStepAt(const ReduceElement& el, std::uint64_t leaf) {
  const auto max_leaves = static_cast<std::uint64_t>(el.scan_count);
  ReduceStep st;
  if (leaf <= max_leaves) {  // the scan: leaf `leaf` from leaf − 1 and read leaf − 1
    st.kind = ReduceStepKind::kScan;
    st.term = static_cast<std::int64_t>(leaf - 1);
    st.left = leaf - 1;
    return st;
  }
  if (el.final != ReduceFinal::kNone && leaf == el.BlockSteps()) {
    // The block's value from its max (or, the sums kept separate, segment
    // 0's sum) and its last sum.
    st.kind = ReduceStepKind::kFinal;
    st.reads_right = true;
    st.left = el.separate_sums ? SegmentSumLeaf(el, 0) : max_leaves;
    st.right = leaf - 1;
    return st;
  }
  std::uint64_t start = 1 + max_leaves;
  for (std::size_t s = 0; s < el.segments.size(); ++s) {
    const std::uint64_t steps = SumSteps(el.exact, el.segments[s].terms);
    if (leaf >= start + steps) {
      start += steps;
      continue;
    }
    // An exact segment whose sum is not kept apart continues the one before.
    const std::uint64_t continues = el.exact && s > 0 && !el.separate_sums ? SegmentSumLeaf(el, s - 1) : 0;
    st = SegmentStepAt(start, el.segments[s].terms, leaf - start, el.exact, continues);
    st.segment = static_cast<std::uint32_t>(s);
    if (st.kind == ReduceStepKind::kTerm && el.segments[s].term == ReduceTerm::kExpShifted) {
      st.reads_right = true;  // the row's max
      st.right = max_leaves;
    }
    if (st.kind == ReduceStepKind::kTerm && el.segments[s].term == ReduceTerm::kSquaredDeviationFromSum) {
      st.reads_right = true;  // the sum whose mean the deviations are from
      st.right = SegmentSumLeaf(el, 0);
    }
    return st;
  }
  // A combination of the segments' sums.
  const HalvingTree tree{start, static_cast<std::int64_t>(el.segments.size())};
  st.kind = ReduceStepKind::kCombine;
  st.reads_right = true;
  std::tie(st.left, st.right) = tree.Node(
      leaf - start, [&](std::int64_t s) { return SegmentSumLeaf(el, static_cast<std::size_t>(s)); });
  return st;
}

// ---- a rounded value's slack (ReduceSlack) ----

// Leaves of one row block's slack: ‖a‖², ‖b‖², the row's GEMM slack, the fold.
std::uint64_t SlackBlockSteps(const ReduceElement& el) {
  return 2 * static_cast<std::uint64_t>(el.scan_count) + 2;
}

// Leaves after the rows' slacks: attention's y's (ReduceSlack::kAttentionOutput).
std::uint64_t SlackTailSteps(const ReduceElement& el) {
  if (el.slack != ReduceSlack::kAttentionOutput) return 0;
  return 3 * static_cast<std::uint64_t>(el.rows) + static_cast<std::uint64_t>(el.outer_terms) + 4;
}

// kSoftmaxDot's quotient att_j = e_j / z: the leaves before its GEMM element's.
std::uint64_t QuotientLeaf(const ReduceElement& el, std::uint64_t j) {
  return el.ValueSteps() - static_cast<std::uint64_t>(el.outer_terms + el.rows) + 1 + j;
}

// Step `leaf` of attention's y's slack tail (ReduceSlack::kAttentionOutput),
// whose leaves after the rows' fold `fold` are: f, β_att_j, Σ att², Σ β_att²,
// Σ x², the GEMM slack, the perturbation, β.
ReduceStep SlackTailStepAt(const ReduceElement& el, std::uint64_t leaf, std::uint64_t fold) {
  const auto rows = static_cast<std::uint64_t>(el.rows), terms = static_cast<std::uint64_t>(el.outer_terms);
  const std::uint64_t f = fold + 1, att_sq = f + 2 * rows, slack_sq = att_sq + rows, x_sq = slack_sq + terms;
  ReduceStep st;
  st.reads_right = true;
  if (leaf == f) {
    st.kind = ReduceStepKind::kSlackFactor;
    st.reads_right = false;
    st.left = fold;
    return st;
  }
  if (leaf <= f + rows) {  // β_att_j = att_j·f
    st.kind = ReduceStepKind::kLeafProduct;
    st.left = QuotientLeaf(el, leaf - f - 1);
    st.right = f;
    return st;
  }
  if (leaf <= slack_sq) {  // Σ att_j², then Σ β_att_j², each from +0
    const bool of_slack = leaf > att_sq;
    const std::uint64_t j = leaf - (of_slack ? att_sq : f + rows) - 1;
    st.kind = ReduceStepKind::kSquareAdd;
    st.left = j == 0 ? 0 : leaf - 1;
    st.right = of_slack ? f + 1 + j : QuotientLeaf(el, j);
    return st;
  }
  if (leaf <= x_sq) {  // Σ x_u² from +0
    st.kind = ReduceStepKind::kNormStep;
    st.reads_right = false;
    st.segment = 2;
    st.term = static_cast<std::int64_t>(leaf - slack_sq - 1);
    st.left = st.term == 0 ? 0 : leaf - 1;
    return st;
  }
  if (leaf == x_sq + 1) {  // the GEMM's own slack over outer_terms + extra terms
    st.kind = ReduceStepKind::kRowSlack;
    st.segment = 1;
    st.left = att_sq;
    st.right = x_sq;
    return st;
  }
  if (leaf == x_sq + 2) {
    st.kind = ReduceStepKind::kPerturbedSlack;
    st.left = slack_sq;
    st.right = x_sq;
    return st;
  }
  st.kind = ReduceStepKind::kCombine;
  st.left = x_sq + 1;
  st.right = x_sq + 2;
  return st;
}

// Step `leaf` (past ValueSteps()) of the slack's leaves.
ReduceStep SlackStepAt(const ReduceElement& el, std::uint64_t leaf) {
  const auto n = static_cast<std::uint64_t>(el.scan_count);
  const std::uint64_t fold = el.ValueSteps() + static_cast<std::uint64_t>(el.rows) * SlackBlockSteps(el);
  if (leaf > fold) return SlackTailStepAt(el, leaf, fold);
  const std::uint64_t block = SlackBlockSteps(el), r = (leaf - el.ValueSteps() - 1) / block;
  const std::uint64_t base = el.ValueSteps() + r * block, local = leaf - base;  // 1 ≤ local ≤ block
  ReduceStep st;
  st.row = static_cast<std::int64_t>(r);
  if (local <= 2 * n) {  // Σ x² over the factor's scan_count values, from +0
    st.kind = ReduceStepKind::kNormStep;
    st.segment = local > n ? 1 : 0;
    st.term = static_cast<std::int64_t>((local - 1) % n);
    st.left = st.term == 0 ? 0 : leaf - 1;
    return st;
  }
  st.reads_right = true;
  if (local == 2 * n + 1) {
    st.kind = ReduceStepKind::kRowSlack;
    st.left = base + n;
    st.right = base + 2 * n;
    return st;
  }
  st.kind = ReduceStepKind::kSlackFold;  // into the rows' before it: the previous block's last leaf
  st.left = r == 0 ? 0 : base;
  st.right = leaf - 1;
  return st;
}

// ---- attention_backward's dq and dk (AttentionGrad) ----

// Leaves of row t's run: its t+1 dot blocks dP_tj, r_t's sum (a TreeSum,
// or `exact` its t+1 exact prefix sums) and, for dk, its dS_tu.
std::uint64_t RowLeaves(const AttentionGrad& g, std::int64_t t, bool exact) {
  return static_cast<std::uint64_t>((t + 1) * g.d) + SumSteps(exact, t + 1) + (g.dk ? 1 : 0);
}

// Σ RowLeaves over the rows [from, to), in closed form: a dk walk has
// 3.4·10^7 leaves at GPT-2 small, and each lookup of a step's row must not
// cost a loop over the rows before it.
std::uint64_t RowsLeaves(const AttentionGrad& g, std::int64_t from, std::int64_t to, bool exact) {
  if (to <= from) return 0;
  // Over n = t + 1 in [from + 1, to]: Σ n, and Σ ⌈n / kTreeBlock⌉ (r_t's blocks).
  const auto triangle = [](std::uint64_t x) { return x * (x + 1) / 2; };
  const auto blocks_upto = [&](std::uint64_t x) {
    constexpr auto kBlock = static_cast<std::uint64_t>(kTreeBlock);
    const std::uint64_t q = x / kBlock, r = x % kBlock;
    return kBlock * triangle(q) + r * (q + 1);
  };
  const auto a = static_cast<std::uint64_t>(from), b = static_cast<std::uint64_t>(to);
  const std::uint64_t rows = b - a, sum_n = triangle(b) - triangle(a);
  std::uint64_t leaves = sum_n * static_cast<std::uint64_t>(g.d) + sum_n + (g.dk ? rows : 0);
  if (!exact) leaves += blocks_upto(b) - blocks_upto(a) - rows;  // each TreeSum's combinations
  return leaves;
}

std::uint64_t AttentionGradSteps(const AttentionGrad& g, bool exact) {
  const auto gemm = static_cast<std::uint64_t>(g.t_count);
  if (!g.dk) return RowLeaves(g, g.fixed, exact) + static_cast<std::uint64_t>(g.fixed + 1) + gemm;
  return gemm + RowsLeaves(g, g.fixed, g.t_count, exact);
}

// The leaf of dP_tj in the run of row t starting at `base`.
std::uint64_t PartialLeaf(const AttentionGrad& g, std::uint64_t base, std::int64_t j) {
  return base + static_cast<std::uint64_t>((j + 1) * g.d) - 1;
}

// Step `local` (0-based) of row t's dot blocks and r_t's TreeSum, its run starting at leaf `base`.
ReduceStep RowStepAt(const AttentionGrad& g, std::int64_t t, std::uint64_t base, std::uint64_t local,
                     bool exact) {
  const auto dots = static_cast<std::uint64_t>((t + 1) * g.d);
  ReduceStep st;
  if (local < dots) {
    st.kind = ReduceStepKind::kDotStep;
    st.segment = static_cast<std::uint32_t>(local / static_cast<std::uint64_t>(g.d));
    st.term = static_cast<std::int64_t>(local % static_cast<std::uint64_t>(g.d));
    st.left = st.term == 0 ? 0 : base + local - 1;
  } else {
    st = SegmentStepAt(base + dots, t + 1, local - dots, exact);
    if (st.kind == ReduceStepKind::kTerm) {
      st.kind = ReduceStepKind::kWeightedTerm;
      st.segment = static_cast<std::uint32_t>(st.term);
      st.reads_right = true;
      st.right = PartialLeaf(g, base, st.term);
    }
  }
  st.row = t;
  return st;
}

// The leaf of the value's dS number k (dq: dS_tk after row t's run; dk:
// dS_ku, the last of row k's run).
std::uint64_t DsLeaf(const AttentionGrad& g, std::int64_t k, bool exact) {
  if (!g.dk) return 1 + RowLeaves(g, g.fixed, exact) + static_cast<std::uint64_t>(k);
  return RowsLeaves(g, g.fixed, k + 1, exact);
}

// Step `leaf` (1 ≤ leaf ≤ AttentionGradSteps) of the layout in reduce_rule.h.
ReduceStep AttentionGradStepAt(const AttentionGrad& g, std::uint64_t leaf, bool exact) {
  ReduceStep st;
  std::uint64_t base = 1;  // the first leaf of the current row's run
  if (!g.dk) {
    const std::int64_t t = g.fixed;
    const std::uint64_t run = RowLeaves(g, t, exact), ds0 = base + run;
    if (leaf < ds0) return RowStepAt(g, t, base, leaf - base, exact);
    st.row = t;
    if (leaf < ds0 + static_cast<std::uint64_t>(t + 1)) {  // dS_tu = (att_tu·(dP_tu − r_t))·scale
      st.kind = ReduceStepKind::kAttnDs;
      st.term = static_cast<std::int64_t>(leaf - ds0);
      st.left = PartialLeaf(g, base, st.term);
      st.reads_right = true;
      st.right = ds0 - 1;
      return st;
    }
    st.kind = ReduceStepKind::kGemmStep;  // + dS_tu·k_u[i]
    st.term = static_cast<std::int64_t>(leaf - ds0) - (t + 1);
    st.left = st.term == 0 ? 0 : leaf - 1;
    st.reads_right = st.term <= t;
    st.right = st.reads_right ? ds0 + static_cast<std::uint64_t>(st.term) : 0;
    return st;
  }
  const std::int64_t u = g.fixed;
  base = 1 + RowsLeaves(g, u, g.t_count, exact);
  if (leaf < base) {
    // The last row whose run starts at or before `leaf`.
    std::int64_t t = u, hi = g.t_count - 1;
    while (t < hi) {
      const std::int64_t mid = t + (hi - t + 1) / 2;
      if (1 + RowsLeaves(g, u, mid, exact) <= leaf) {
        t = mid;
      } else {
        hi = mid - 1;
      }
    }
    base = 1 + RowsLeaves(g, u, t, exact);
    if (leaf + 1 < base + RowLeaves(g, t, exact)) return RowStepAt(g, t, base, leaf - base, exact);
    st.kind = ReduceStepKind::kAttnDs;  // the run's last leaf: dS_tu
    st.row = t;
    st.term = u;
    st.left = PartialLeaf(g, base, u);
    st.reads_right = true;
    st.right = leaf - 1;
    return st;
  }
  st.kind = ReduceStepKind::kGemmStep;  // + dS_tu·q_t[i]
  st.row = static_cast<std::int64_t>(leaf - base);
  st.term = u;
  st.left = st.row == 0 ? 0 : leaf - 1;
  st.reads_right = st.row >= u;
  st.right = st.reads_right ? DsLeaf(g, st.row, exact) : 0;
  return st;
}

// ---- AttentionGrad's slack (ReduceSlack::kAttentionGrad) ----

// Where the slack's leaves lie (reduce_rule.h, AttentionGrad's "Rounded
// mode"), after the value's `value_steps` leaves. Rows are the value's dS
// rows (dq: t; dk: t ≥ u); `n` their dS values.
struct GradSlackLayout {
  const AttentionGrad& g;
  std::uint64_t value_steps = 0;
  std::int64_t first = 0, last = 0;  // the rows
  std::uint64_t d = 0, norms = 0, ds_per_row = 0, n = 0;

  GradSlackLayout(const AttentionGrad& grad, std::uint64_t steps) : g(grad), value_steps(steps) {
    first = g.fixed;
    last = g.dk ? g.t_count - 1 : g.fixed;
    d = static_cast<std::uint64_t>(g.d);
    norms = static_cast<std::uint64_t>(g.dk ? g.t_count : g.fixed + 1);
    ds_per_row = g.dk ? 1 : static_cast<std::uint64_t>(g.fixed + 1);
    n = static_cast<std::uint64_t>(last - first + 1) * ds_per_row;
  }
  std::uint64_t VNorm(std::int64_t j) const { return value_steps + static_cast<std::uint64_t>(j + 1) * d; }
  std::uint64_t RowLength(std::int64_t t) const {
    return d + 2 * static_cast<std::uint64_t>(t + 1) + ds_per_row;
  }
  // The leaf before row t's run: Σ over rows first..t−1 of d + ds_per_row + 2 + 2t'.
  std::uint64_t RowBase(std::int64_t t) const {
    const auto k = static_cast<std::uint64_t>(t - first);
    return VNorm(static_cast<std::int64_t>(norms) - 1) + k * (d + ds_per_row + 2) +
           k * static_cast<std::uint64_t>(first + t - 1);
  }
  std::uint64_t DyNorm(std::int64_t t) const { return RowBase(t) + d; }
  std::uint64_t DpSlack(std::int64_t t, std::int64_t j) const {
    return DyNorm(t) + 2 * static_cast<std::uint64_t>(j) + 1;
  }
  std::uint64_t Weighted(std::int64_t t) const { return DyNorm(t) + 2 * static_cast<std::uint64_t>(t + 1); }
  // β_dS of the value's dS number y (dq: u = y; dk: row t = u + y).
  std::uint64_t DsSlack(std::uint64_t y) const {
    return g.dk ? Weighted(first + static_cast<std::int64_t>(y)) + 1 : Weighted(first) + 1 + y;
  }
  // The last leaf of the rows, then of each sum after them: Σ β_dS² and
  // Σ dS² (n steps each), Σ x² (T steps).
  std::uint64_t RowsEnd() const { return RowBase(last + 1); }
  std::uint64_t SlackSqSum() const { return RowsEnd() + n; }
  std::uint64_t DsSqSum() const { return SlackSqSum() + n; }
  std::uint64_t XSqSum() const { return DsSqSum() + static_cast<std::uint64_t>(g.t_count); }
  std::uint64_t GemmSlack() const { return XSqSum() + 1; }
  std::uint64_t Last() const { return GemmSlack() + 2; }
};

std::uint64_t AttentionGradSlackSteps(const AttentionGrad& g, std::uint64_t value_steps) {
  return GradSlackLayout(g, value_steps).Last() - value_steps;
}

// The terms of dq's or dk's own GEMM slack: its K = T, and dS's rounding.
std::int64_t GradGemmTerms(const AttentionGrad& g) { return g.t_count + kernels::kAttentionGradExtraTerms; }

// Step `leaf` (past the value's leaves) of the slack.
ReduceStep AttentionGradSlackStepAt(const AttentionGrad& g, std::uint64_t value_steps, std::uint64_t leaf) {
  const GradSlackLayout at(g, value_steps);
  ReduceStep st;
  const auto norm_step = [&](std::uint32_t segment, std::int64_t row, std::uint64_t i) {
    st.kind = ReduceStepKind::kNormStep;
    st.segment = segment;
    st.row = row;
    st.term = static_cast<std::int64_t>(i);
    st.left = i == 0 ? 0 : leaf - 1;
    return st;
  };
  if (leaf <= at.VNorm(static_cast<std::int64_t>(at.norms) - 1)) {  // ‖v_j‖²
    const std::uint64_t local = leaf - value_steps - 1;
    return norm_step(1, static_cast<std::int64_t>(local / at.d), local % at.d);
  }
  st.reads_right = true;
  if (leaf <= at.RowsEnd()) {
    std::int64_t t = at.first, hi = at.last;  // the last row starting before `leaf`
    while (t < hi) {
      const std::int64_t mid = t + (hi - t + 1) / 2;
      if (at.RowBase(mid) < leaf) {
        t = mid;
      } else {
        hi = mid - 1;
      }
    }
    const std::uint64_t x = leaf - at.RowBase(t);  // 1 ≤ x ≤ RowLength(t)
    if (x <= at.d) {                               // ‖dy_t‖²
      st.reads_right = false;
      return norm_step(0, t, x - 1);
    }
    st.row = t;
    if (leaf <= at.Weighted(t)) {
      const std::uint64_t y = x - at.d - 1, j = y / 2;
      if (y % 2 == 0) {  // β_dP_tj over ‖dy_t‖ and ‖v_j‖ (D terms)
        st.kind = ReduceStepKind::kRowSlack;
        st.left = at.DyNorm(t);
        st.right = at.VNorm(static_cast<std::int64_t>(j));
      } else {  // Σ att_tj·β_dP_tj through j, from +0
        st.kind = ReduceStepKind::kWeightedTerm;
        st.segment = static_cast<std::uint32_t>(j);
        st.left = j == 0 ? 0 : leaf - 2;
        st.right = leaf - 1;
      }
      return st;
    }
    st.kind = ReduceStepKind::kAttnDsSlack;  // β_dS_tu
    st.term = g.dk ? g.fixed : static_cast<std::int64_t>(leaf - at.Weighted(t) - 1);
    st.left = at.DpSlack(t, st.term);
    st.right = at.Weighted(t);
    return st;
  }
  if (leaf <= at.DsSqSum()) {  // Σ β_dS², then Σ dS², each from +0
    const bool of_ds = leaf > at.SlackSqSum();
    const std::uint64_t y = leaf - (of_ds ? at.SlackSqSum() : at.RowsEnd()) - 1;
    st.kind = ReduceStepKind::kSquareAdd;
    st.left = y == 0 ? 0 : leaf - 1;
    st.right =
        of_ds ? DsLeaf(g, g.dk ? g.fixed + static_cast<std::int64_t>(y) : static_cast<std::int64_t>(y), false)
              : at.DsSlack(y);
    return st;
  }
  if (leaf <= at.XSqSum()) {  // Σ x² over the GEMM's other factor
    st.reads_right = false;
    return norm_step(2, 0, leaf - at.DsSqSum() - 1);
  }
  // The GEMM's own slack over Σ dS² and Σ x², the perturbation over Σ β_dS²
  // and Σ x², their sum.
  if (leaf == at.GemmSlack()) {
    st.kind = ReduceStepKind::kRowSlack;
    st.segment = 1;
    st.left = at.DsSqSum();
    st.right = at.XSqSum();
  } else if (leaf < at.Last()) {
    st.kind = ReduceStepKind::kPerturbedSlack;
    st.left = at.SlackSqSum();
    st.right = at.XSqSum();
  } else {
    st.kind = ReduceStepKind::kCombine;
    st.left = at.GemmSlack();
    st.right = at.GemmSlack() + 1;
  }
  return st;
}

// dS_tu from att_tu, dP_tu and r_t: the kernel's expression.
template <class T>
T AttentionDs(const AttentionGrad& g, T att, T dp, T r) {
  return kernels::AttentionDsValue(att, dp, r, kernels::AttentionScale<MathOf<T>>(g.d));
}

// Scan step j from leaf j (`prev`) and its reads (ReduceScan).
template <class T>
Result<T> ScanValue(const ReduceElement& el, std::int64_t j, T prev, std::span<const T> v) {
  if (v.size() != el.scan_reads.size()) return Status::Invalid("elem-bad-step", "the scan step's reads");
  switch (el.scan) {
    case ReduceScan::kMax:
      if (v.size() != 1) break;
      return j == 0 ? v[0] : kernels::MaxStep(prev, v[0]);
    case ReduceScan::kMaskedSum:
      if (v.size() != 2) break;
      if (!kernels::IsRowIndex(static_cast<float>(v[0]), el.key_rows))
        return Status::Invalid(
            "bad-index", "index " + std::to_string(v[0]) + " is not a row of " + std::to_string(el.key_rows));
      return v[0] == static_cast<T>(el.key) ? prev + v[1] : prev;
    case ReduceScan::kDot:
      if (v.size() != 2) break;
      return DotStep(prev, v[0], v[1]);  // the repops GEMM's own step
    case ReduceScan::kSum:
      if (v.size() != 1) break;
      return prev + v[0];  // avg_pool2d's window sum (kernels/ops/conv.cpp)
    case ReduceScan::kPoolMax:
      if (v.size() != 1) break;
      // Both are fp32 values (a rounded job's fp64 leaves hold them exactly).
      return j == 0 || kernels::PoolMaxReplaces(static_cast<float>(prev), static_cast<float>(v[0])) ? v[0]
                                                                                                    : prev;
    case ReduceScan::kNone:
      break;
  }
  return Status::Invalid("elem-bad-step", "no such scan");
}

// An attention node's geometry from its attributes (heads) and qkv [B, T, 3C].
struct Heads {
  std::int64_t nb = 0, t_count = 0, c3 = 0, heads = 0, c = 0, d = 0;
};
Result<Heads> HeadsOf(ByteSpan attrs, const kernels::Shape& qkv) {
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok() || decoded->ints.size() != 1 || qkv.size() != 3)
    return Status::Invalid("elem-no-reduce-rule", "attention attributes");
  Heads g{qkv[0], qkv[1], qkv[2], decoded->ints[0], qkv[2] / 3, 0};
  if (g.heads < 1 || g.c3 % 3 != 0 || g.c % g.heads != 0)
    return Status::Invalid("elem-no-reduce-rule", "heads");
  g.d = g.c / g.heads;
  return g;
}

// conv2d_backward's dx[n, ci, ih, iw] (dy [N, Co, OH, OW], x [N, Ci, H, W],
// w [Co, Ci, KH, KW]; attributes stride_h, stride_w, pad_h, pad_w): the
// kernel's col2im adds, from +0 and in increasing tap order r = kh·KW + kw,
// dcol[ci·KK + r][oh·OW + ow] for each tap whose output position
// oh·sh − ph + kh = ih, ow·sw − pw + kw = iw exists; each dcol value is the
// repops GEMM element Σ_co w[co, ci, kh, kw]·dy[n, co, oh, ow] from +0. One
// row block per such tap (a kDot scan over co), then the outer TreeSum of
// the rows: with at most kTreeBlock taps, one block summed left to right
// from +0 — col2im's order. A value no tap reaches (a stride past the
// kernel) has no rows: +0 read from nothing (ConvInputGradReached).
Result<ReduceElement> ConvInputGradAt(ByteSpan attrs, std::int64_t e, const kernels::Shape& dy,
                                      const kernels::Shape& x, const kernels::Shape& w) {
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok() || decoded->ints.size() != 4)
    return Status::Invalid("elem-no-reduce-rule", "conv2d attributes");
  const std::int64_t sh = decoded->ints[0], sw = decoded->ints[1], ph = decoded->ints[2],
                     pw = decoded->ints[3];
  const std::int64_t nb = x[0], ci_count = x[1], h = x[2], wd = x[3], co = w[0], kh_count = w[2],
                     kw_count = w[3];
  if (sh < 1 || sw < 1 || ph < 0 || pw < 0 || w[1] != ci_count || kh_count * kw_count > kTreeBlock)
    return Status::Invalid("elem-no-reduce-rule", "conv2d geometry");
  const std::int64_t oh_count = (h + 2 * ph - kh_count) / sh + 1,
                     ow_count = (wd + 2 * pw - kw_count) / sw + 1;
  if (dy != kernels::Shape{nb, co, oh_count, ow_count})
    return Status::Invalid("elem-no-reduce-rule", "conv2d dy");
  if (e < 0 || e >= kernels::NumElements(x)) return Status::Invalid("elem-bad-index");
  const std::int64_t n = e / (ci_count * h * wd), ci = (e / (h * wd)) % ci_count, ih = (e / wd) % h,
                     iw = e % wd;
  const std::int64_t kk = kh_count * kw_count, ohw = oh_count * ow_count;
  TermOperand wt{.input = 2, .stride = ci_count * kk}, dyt{.input = 0, .stride = ohw};
  for (std::int64_t r = 0; r < kk; ++r) {
    const std::int64_t th = ih + ph - r / kw_count, tw = iw + pw - r % kw_count;
    if (th < 0 || tw < 0 || th % sh != 0 || tw % sw != 0 || th / sh >= oh_count || tw / sw >= ow_count)
      continue;
    wt.row_firsts.push_back(ci * kk + r);
    dyt.row_firsts.push_back(n * co * ohw + (th / sh) * ow_count + tw / sw);
  }
  ReduceElement el;
  el.scan = ReduceScan::kDot;
  el.scan_count = co;
  el.rows = static_cast<std::int64_t>(wt.row_firsts.size());
  el.scan_reads = {std::move(wt), std::move(dyt)};
  el.outer = ReduceOuter::kSum;
  return el;
}

bool IsConvInputGrad(std::uint16_t op_kind, std::uint32_t slot, std::span<const kernels::Shape> in) {
  return Is(op_kind, OpKind::kConv2dBackward) && slot == 0 && in.size() == 3 && in[0].size() == 4 &&
         in[1].size() == 4 && in[2].size() == 4;
}

ReduceElement Plain(std::int64_t n, std::vector<TermOperand> operands, ReduceTerm term = ReduceTerm::kValue) {
  ReduceElement el;
  el.segments = {ReduceSegment{n, term, std::move(operands)}};
  return el;
}

// A norm's statistics over the n values `x` reads (both norms,
// kernels/ops/norm.h): its mean, TreeSum(x) / n; and the TreeSum of the
// squared deviations from the node's own agreed mean (output `mean_slot`,
// walked first, at `at`) — rstd's and running_var's sum.
ReduceElement NormMean(std::int64_t n, const TermOperand& x) {
  ReduceElement el = Plain(n, {x});
  el.epilogue = ReduceEpilogue::kDivide;
  el.divisor = n;
  return el;
}
ReduceElement NormSquaredDeviations(std::int64_t n, const TermOperand& x, std::uint32_t mean_slot,
                                    std::int64_t at) {
  return Plain(n, {x, TermOperand{kOwnOutput + mean_slot, at, 0}}, ReduceTerm::kSquaredDeviation);
}

}  // namespace

std::uint64_t ReduceElement::BlockSteps() const {
  std::uint64_t steps = segments.empty() || separate_sums || exact ? 0 : segments.size() - 1;
  for (const ReduceSegment& s : segments) steps += SumSteps(exact, s.terms);
  return steps + static_cast<std::uint64_t>(scan_count) + (final != ReduceFinal::kNone ? 1 : 0);
}

std::uint64_t ReduceElement::Steps() const {
  if (slack == ReduceSlack::kNone) return ValueSteps();
  if (attention_grad) return ValueSteps() + AttentionGradSlackSteps(*attention_grad, ValueSteps());
  return ValueSteps() + static_cast<std::uint64_t>(rows) * SlackBlockSteps(*this) + SlackTailSteps(*this);
}

std::uint64_t ReduceElement::ValueSteps() const {
  if (attention_grad) return AttentionGradSteps(*attention_grad, exact);
  const std::uint64_t in_rows = static_cast<std::uint64_t>(rows) * BlockSteps();
  switch (outer) {
    case ReduceOuter::kNone:
      return in_rows;
    case ReduceOuter::kSum:
      return in_rows + SumSteps(exact, rows);
    case ReduceOuter::kSoftmax:  // the max, the exponentials, their sum, the quotient
      return in_rows + 2 * static_cast<std::uint64_t>(rows) + SumSteps(exact, rows) + 1;
    case ReduceOuter::kSoftmaxDot:  // the same, every quotient, the GEMM element
      return in_rows + 3 * static_cast<std::uint64_t>(rows) + SumSteps(exact, rows) +
             static_cast<std::uint64_t>(outer_terms);
  }
  return in_rows;
}

Result<ReduceElement> ReduceElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                      std::span<const kernels::Shape> in) {
  // Every sum has at least one term (the kernels refuse empty tensors): a
  // shape with a zero dimension has no rule rather than an empty tree.
  for (const kernels::Shape& s : in) {
    if (kernels::NumElements(s) < 1) return Status::Invalid("elem-no-reduce-rule", "an empty input");
  }
  const auto bad_index = [&](std::int64_t numel) { return e < 0 || e >= numel; };
  const auto numel = [&](std::size_t i) { return kernels::NumElements(in[i]); };
  if ((Is(op_kind, OpKind::kSum) || Is(op_kind, OpKind::kMean)) && slot == 0 && in.size() == 1) {
    // y[o, i] = TreeSum over j of x[o, j, i] (x viewed as [outer, n, inner]
    // at the axis; the whole tensor for kReduceAll) [/ n].
    auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
    if (!decoded.ok() || decoded->ints.size() != 1) return Status::Invalid("elem-no-reduce-rule", "sum attributes");
    const std::int64_t axis = decoded->ints[0];
    const kernels::Shape& x = in[0];
    std::int64_t outer = 1, n = numel(0), inner = 1;
    if (axis != kernels::kReduceAll) {
      if (axis < 0 || axis >= static_cast<std::int64_t>(x.size())) return Status::Invalid("elem-no-reduce-rule");
      const auto ax = static_cast<std::size_t>(axis);
      outer = kernels::NumElements(kernels::Shape(x.begin(), x.begin() + axis));
      n = x[ax];
      inner = kernels::NumElements(kernels::Shape(x.begin() + axis + 1, x.end()));
    }
    if (bad_index(outer * inner)) return Status::Invalid("elem-bad-index");
    ReduceElement el = Plain(n, {TermOperand{0, (e / inner) * n * inner + e % inner, inner}});
    if (Is(op_kind, OpKind::kMean)) {
      el.epilogue = ReduceEpilogue::kDivide;
      el.divisor = n;
    }
    return el;
  }
  if (Is(op_kind, OpKind::kLinearBackward) && slot == 2 && in.size() == 3) {
    // db[n] = TreeSum over the rows r of dy[r, n].
    const std::int64_t n = Last(in[0]), rows = numel(0) / std::max<std::int64_t>(1, n);
    if (bad_index(n)) return Status::Invalid("elem-bad-index");
    return Plain(rows, {TermOperand{0, e, n}});
  }
  if (Is(op_kind, OpKind::kConv2dBackward) && slot == 2 && in.size() == 3 && in[0].size() == 4) {
    // db[co] = TreeSum over j = n·OH·OW + p of dy[n, co, p].
    const std::int64_t nb = in[0][0], co = in[0][1], ohw = in[0][2] * in[0][3];
    if (bad_index(co)) return Status::Invalid("elem-bad-index");
    return Plain(nb * ohw, {TermOperand{0, e * ohw, 1, ohw, co * ohw}});
  }
  if (IsConvInputGrad(op_kind, slot, in)) {
    VT_ASSIGN_OR_RETURN(ReduceElement el, ConvInputGradAt(attrs, e, in[0], in[1], in[2]));
    if (el.rows == 0) return Status::Invalid("elem-no-reduce-rule", "no tap reaches this value");
    return el;
  }
  if (Is(op_kind, OpKind::kLayerNormBackward) && (slot == 1 || slot == 2) && in.size() == 5) {
    // (dy, x, gamma, mean, rstd): dγ[c] = TreeSum_r dy[r, c]·x̂[r, c], dβ[c] = TreeSum_r dy[r, c].
    const std::int64_t c = Last(in[1]), rows = numel(1) / std::max<std::int64_t>(1, c);
    if (bad_index(c)) return Status::Invalid("elem-bad-index");
    if (slot == 2) return Plain(rows, {TermOperand{0, e, c}});
    return Plain(rows, {TermOperand{0, e, c}, TermOperand{1, e, c}, TermOperand{3, 0, 1}, TermOperand{4, 0, 1}},
                 ReduceTerm::kNormProduct);
  }
  if (Is(op_kind, OpKind::kLayerNorm) && (slot == 1 || slot == 2) && in.size() == 3) {
    // (x [..., C], gamma, beta): mean[r] = TreeSum_c x / C; rstd[r] =
    // NormRstd(TreeSum_c (x − mean)² / C, eps), mean the node's own agreed slot 1.
    const std::int64_t c = Last(in[0]), rows = numel(0) / std::max<std::int64_t>(1, c);
    if (bad_index(rows)) return Status::Invalid("elem-bad-index");
    const TermOperand x{0, e * c, 1};
    if (slot == 1) return NormMean(c, x);
    auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
    if (!decoded.ok() || !decoded->ints.empty() || decoded->floats.size() != 1)
      return Status::Invalid("elem-no-reduce-rule", "layernorm attributes");
    ReduceElement el = NormSquaredDeviations(c, x, 1, e);
    el.eps = decoded->Float(0);
    // The kernel refuses this eps: the node has no value to judge.
    if (!(std::isfinite(el.eps) && el.eps > 0.0f))
      return Status::Invalid("elem-no-reduce-rule", "layernorm eps");
    el.epilogue = ReduceEpilogue::kRstd;
    el.divisor = c;
    return el;
  }
  if (Is(op_kind, OpKind::kLayerNormBackward) && slot == 0 && in.size() == 5) {
    // (dy, x, gamma, mean, rstd): dx[r, k] from the row's a = TreeSum_c g / C
    // and b = TreeSum_c g·x̂ / C, g = dy·γ, kept as two separate sums.
    const std::int64_t c = Last(in[1]), rows = numel(1) / std::max<std::int64_t>(1, c);
    if (numel(0) != numel(1) || numel(2) != c || numel(3) != rows || numel(4) != rows)
      return Status::Invalid("elem-no-reduce-rule", "layernorm_backward shapes");
    if (bad_index(numel(1))) return Status::Invalid("elem-bad-index");
    const std::int64_t r = e / c;
    const TermOperand dy{0, r * c, 1}, gamma{2, 0, 1}, x{1, r * c, 1}, mean{3, r, 0}, rstd{4, r, 0};
    ReduceElement el;
    el.segments = {ReduceSegment{c, ReduceTerm::kRoundedProduct, {dy, gamma}},
                   ReduceSegment{c, ReduceTerm::kScaledNormProduct, {dy, gamma, x, mean, rstd}}};
    el.separate_sums = true;
    el.final = ReduceFinal::kLayerNormGrad;
    el.final_reads = {TermOperand{0, e, 0}, TermOperand{2, e % c, 0}, TermOperand{1, e, 0}, mean, rstd};
    el.divisor = c;
    return el;
  }
  if ((Is(op_kind, OpKind::kSoftmax) && in.size() == 1) ||
      (Is(op_kind, OpKind::kSoftmaxBackward) && in.size() == 2)) {
    // softmax (x): y[r, k] from the row's running max and s = TreeSum Exp(x − max);
    // softmax_backward (dy, y): dx[r, k] from d = TreeSum dy·y over the row.
    const std::int64_t k = Last(in[0]), rows = numel(0) / std::max<std::int64_t>(1, k);
    if (in.size() == 2 && in[1] != in[0])
      return Status::Invalid("elem-no-reduce-rule", "softmax_backward shapes");
    if (slot != 0 || bad_index(rows * k)) return Status::Invalid("elem-bad-index");
    const std::int64_t r = e / k;
    if (in.size() == 2) {
      ReduceElement el = Plain(k, {TermOperand{0, r * k, 1}, TermOperand{1, r * k, 1}}, ReduceTerm::kProduct);
      el.final = ReduceFinal::kSoftmaxGrad;
      el.final_reads = {TermOperand{1, e, 0}, TermOperand{0, e, 0}};
      return el;
    }
    const TermOperand row{0, r * k, 1};
    ReduceElement el = Plain(k, {row}, ReduceTerm::kExpShifted);
    el.scan = ReduceScan::kMax;
    el.scan_count = k;
    el.scan_reads = {row};
    el.final = ReduceFinal::kSoftmaxValue;
    el.final_reads = {TermOperand{0, e, 0}};
    return el;
  }
  if (Is(op_kind, OpKind::kBatchNorm2dBackward) && (slot == 1 || slot == 2) && in.size() == 5 && in[1].size() == 4) {
    // (dy, x, gamma, saved_mean, saved_rstd), per channel c over j = n·HW + p.
    const std::int64_t nb = in[1][0], ch = in[1][1], hw = in[1][2] * in[1][3];
    if (bad_index(ch)) return Status::Invalid("elem-bad-index");
    const TermOperand at{0, e * hw, 1, hw, ch * hw};
    if (slot == 2) return Plain(nb * hw, {at});
    TermOperand x = at;
    x.input = 1;
    return Plain(nb * hw, {at, x, TermOperand{3, e, 0}, TermOperand{4, e, 0}}, ReduceTerm::kNormProduct);
  }
  if (Is(op_kind, OpKind::kBatchNorm2dTrain) && (slot == 2 || slot == 3 || slot == 4) && in.size() == 5 &&
      in[0].size() == 4) {
    // (x, gamma, beta, running_mean, running_var), per channel c over
    // j = n·HW + p. saved_mean[c] = TreeSum of x / (N·HW); rstd[c] and
    // running_var'[c] from ssq = TreeSum of (x − mean)², mean the node's
    // own agreed slot 3.
    const std::int64_t nb = in[0][0], ch = in[0][1], hw = in[0][2] * in[0][3], n = nb * hw;
    if (bad_index(ch)) return Status::Invalid("elem-bad-index");
    const TermOperand x{0, e * hw, 1, hw, ch * hw};
    if (slot == 3) return NormMean(n, x);
    auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
    if (!decoded.ok() || !decoded->ints.empty() || decoded->floats.size() != 2 || n < 2)
      return Status::Invalid("elem-no-reduce-rule", "batchnorm attributes");
    ReduceElement el = NormSquaredDeviations(n, x, 3, e);
    el.eps = decoded->Float(0);
    el.momentum = decoded->Float(1);
    // The kernel refuses these attributes: the node has no value to judge.
    if (!(std::isfinite(el.eps) && el.eps > 0.0f && el.momentum >= 0.0f && el.momentum <= 1.0f))
      return Status::Invalid("elem-no-reduce-rule", "batchnorm attributes");
    if (slot == 4) {
      el.epilogue = ReduceEpilogue::kRstd;
      el.divisor = n;
    } else {
      el.final = ReduceFinal::kRunningVar;
      el.final_reads = {TermOperand{4, e, 0}};
      el.divisor = n - 1;
    }
    return el;
  }
  if (Is(op_kind, OpKind::kCrossEntropyBackward) && slot == 0 && in.size() == 3 && in[1].size() >= 2) {
    // (dloss, logits [..., K], labels [...]): dlogits[r, k] from row r's
    // running max, its TreeSum of Exp(x − max) and the final expression.
    const std::int64_t k = Last(in[1]), rows = numel(1) / std::max<std::int64_t>(1, k);
    if (bad_index(numel(1)) || numel(2) != rows || numel(0) != 1) return Status::Invalid("elem-bad-index");
    const std::int64_t r = e / k;
    ReduceElement el = Plain(k, {TermOperand{1, r * k, 1}}, ReduceTerm::kExpShifted);
    el.scan = ReduceScan::kMax;
    el.scan_count = k;
    el.scan_reads = {TermOperand{1, r * k, 1}};
    el.final = ReduceFinal::kCrossEntropyGrad;
    el.final_reads = {TermOperand{1, e, 0}, TermOperand{2, r, 0}, TermOperand{0, 0, 0}};
    el.final_class = e % k;
    el.divisor = rows;
    return el;
  }
  if (Is(op_kind, OpKind::kCrossEntropy) && slot == 0 && in.size() == 2 && in[0].size() >= 2) {
    // (logits [..., K], labels [...]): loss = TreeSum over the rows r of
    // l_r, divided by R; row r's block is the backward's running max and
    // TreeSum of Exp(x − max), then l_r from label[r] and the logit it names.
    const std::int64_t k = Last(in[0]), rows = numel(0) / std::max<std::int64_t>(1, k);
    if (e != 0 || numel(1) != rows) return Status::Invalid("elem-bad-index");
    const TermOperand row_value{.input = 0, .row_stride = k};
    ReduceElement el = Plain(k, {row_value}, ReduceTerm::kExpShifted);
    el.scan = ReduceScan::kMax;
    el.scan_count = k;
    el.scan_reads = {row_value};
    el.final = ReduceFinal::kCrossEntropyLoss;
    el.final_reads = {TermOperand{.input = 1, .row_stride = 1},
                      TermOperand{.input = 0, .row_stride = k, .gather_from = 0, .gather_rows = k}};
    el.rows = rows;
    el.outer = ReduceOuter::kSum;
    el.epilogue = ReduceEpilogue::kDivide;
    el.divisor = rows;
    return el;
  }
  const bool avg_pool = Is(op_kind, OpKind::kAvgPool2d);
  if ((avg_pool || Is(op_kind, OpKind::kMaxPool2d)) && slot == 0 && in.size() == 1 && in[0].size() == 4) {
    // y[n, c, oh, ow] = (+0 + the window's valid values in row-major order) / (KH·KW),
    // or their maximum: a scan over the valid rectangle rows ih0..ih1,
    // columns iw0..iw1 of the plane.
    auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
    if (!decoded.ok()) return Status::Invalid("elem-no-reduce-rule", "pool attributes");
    auto params = kernels::Pool2dParamsOf(*decoded);
    if (!params.ok()) return Status::Invalid("elem-no-reduce-rule", params.status().ToString());
    const kernels::Pool2dParams& p = *params;
    const kernels::Shape& x = in[0];
    const std::int64_t h = x[2], w = x[3];
    const std::int64_t oh = kernels::OutExtent(h, p.kernel_h, p.stride_h, p.pad_h);
    const std::int64_t ow = kernels::OutExtent(w, p.kernel_w, p.stride_w, p.pad_w);
    if (h < 1 || w < 1 || oh < 1 || ow < 1 || e < 0 || e >= x[0] * x[1] * oh * ow)
      return Status::Invalid("elem-bad-index");
    const std::int64_t plane = e / (oh * ow), o_h = (e / ow) % oh, o_w = e % ow;
    const std::int64_t ih0 = std::max<std::int64_t>(0, o_h * p.stride_h - p.pad_h);
    const std::int64_t ih1 = std::min(h - 1, o_h * p.stride_h - p.pad_h + p.kernel_h - 1);
    const std::int64_t iw0 = std::max<std::int64_t>(0, o_w * p.stride_w - p.pad_w);
    const std::int64_t iw1 = std::min(w - 1, o_w * p.stride_w - p.pad_w + p.kernel_w - 1);
    if (ih1 < ih0 || iw1 < iw0) return Status::Invalid("elem-no-reduce-rule", "a window of padding only");
    ReduceElement el;
    el.scan = avg_pool ? ReduceScan::kSum : ReduceScan::kPoolMax;
    el.scan_count = (ih1 - ih0 + 1) * (iw1 - iw0 + 1);
    el.scan_reads = {TermOperand{.input = 0,
                                 .first = plane * h * w + ih0 * w + iw0,
                                 .stride = 1,
                                 .period = iw1 - iw0 + 1,
                                 .outer_stride = w}};
    if (avg_pool) {
      el.epilogue = ReduceEpilogue::kDivide;
      el.divisor = p.kernel_h * p.kernel_w;
    }
    return el;
  }
  if (Is(op_kind, OpKind::kEmbeddingBackward) && slot == 0 && in.size() == 2 && !in[0].empty()) {
    // (dy [..., D], idx [...]), num_embeddings V: dW[v, d] = +0 + dy[p, d]
    // over the positions p with idx[p] = v, left to right — a scan over
    // every position, each step reading idx[p] and dy[p, d].
    auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
    if (!decoded.ok() || decoded->ints.size() != 1 || decoded->ints[0] < 1)
      return Status::Invalid("elem-no-reduce-rule", "embedding_backward attributes");
    const std::int64_t d = Last(in[0]), positions = numel(1), vocab = decoded->ints[0];
    if (numel(0) != positions * d || e < 0 || e / d >= vocab) return Status::Invalid("elem-bad-index");
    ReduceElement el;
    el.scan = ReduceScan::kMaskedSum;
    el.scan_count = positions;
    el.scan_reads = {TermOperand{.input = 1, .first = 0, .stride = 1},
                     TermOperand{.input = 0, .first = e % d, .stride = d}};
    el.key = e / d;
    el.key_rows = vocab;
    return el;
  }
  if (Is(op_kind, OpKind::kAttention) && slot == 1 && in.size() == 1 && in[0].size() == 3) {
    // att[b, h, t, u], u ≤ t: row block j ≤ t is the score s_j = (q_t·k_j)·scale
    // (a D-step dot from +0, the kernel's GEMM element, then the scale),
    // and the outer softmax over s_0..s_t gives the value at u.
    VT_ASSIGN_OR_RETURN(const Heads g, HeadsOf(attrs, in[0]));
    const std::int64_t t_count = g.t_count, c3 = g.c3, heads = g.heads, c = g.c, d = g.d;
    if (e < 0 || e >= g.nb * heads * t_count * t_count) return Status::Invalid("elem-bad-index");
    const std::int64_t b = e / (heads * t_count * t_count), h = (e / (t_count * t_count)) % heads;
    const std::int64_t t = (e / t_count) % t_count, u = e % t_count;
    if (u > t) return Status::Invalid("elem-no-reduce-rule", "above the diagonal: the mask's +0");
    const std::int64_t image = b * t_count * c3;
    ReduceElement el;
    el.scan = ReduceScan::kDot;
    el.scan_count = d;
    el.scan_reads = {TermOperand{.input = 0, .first = image + t * c3 + h * d},
                     TermOperand{.input = 0, .first = image + c + h * d, .row_stride = c3}};
    el.final = ReduceFinal::kAttentionScale;
    el.scale_dim = d;
    el.rows = t + 1;
    el.outer = ReduceOuter::kSoftmax;
    el.pick = u;
    return el;
  }
  if (Is(op_kind, OpKind::kAttentionBackward) && slot == 0 && in.size() == 3 && in[1].size() == 3) {
    // (dy [B, T, C], qkv [B, T, 3C], att [B, H, T, T]) → dqkv[b, t, col]:
    // dv[u, i] = Σ_t att_tu·dy_t[i], the repops GEMM element (a T-step dot
    // scan); dq and dk recompute the dS terms they read (AttentionGrad).
    VT_ASSIGN_OR_RETURN(const Heads hs, HeadsOf(attrs, in[1]));
    const std::int64_t nb = hs.nb, t_count = hs.t_count, c3 = hs.c3, heads = hs.heads, c = hs.c, d = hs.d;
    if (in[0] != kernels::Shape{nb, t_count, c} || in[2] != kernels::Shape{nb, heads, t_count, t_count})
      return Status::Invalid("elem-no-reduce-rule", "attention_backward shapes");
    if (e < 0 || e >= nb * t_count * c3) return Status::Invalid("elem-bad-index");
    const std::int64_t b = e / (t_count * c3), t = (e / c3) % t_count, col = e % c3;
    const std::int64_t part = col / c, h = (col % c) / d, i = col % d;
    const AttentionGrad g{.dk = part == 1,
                          .fixed = t,
                          .t_count = t_count,
                          .d = d,
                          .c = c,
                          .dy_image = b * t_count * c,
                          .qkv_image = b * t_count * c3,
                          .att_item = (b * heads + h) * t_count * t_count,
                          .head = h * d,
                          .i = i};
    ReduceElement el;
    if (part == 2) {  // dv[t, i] over the rows t' of att's column t
      el.scan = ReduceScan::kDot;
      el.scan_count = t_count;
      el.scan_reads = {TermOperand{.input = 2, .first = g.att_item + t, .stride = t_count},
                       TermOperand{.input = 0, .first = g.dy_image + g.head + i, .stride = c}};
      return el;
    }
    el.attention_grad = g;
    return el;
  }
  if (Is(op_kind, OpKind::kClipGradNorm) && !in.empty() && slot == in.size()) {
    // norm = sqrt(halving tree over s_i), s_i = TreeSum over tensor i of g².
    if (e != 0) return Status::Invalid("elem-bad-index");
    ReduceElement el;
    for (std::size_t i = 0; i < in.size(); ++i)
      el.segments.push_back(
          ReduceSegment{numel(i), ReduceTerm::kSquare, {TermOperand{static_cast<std::uint32_t>(i), 0, 1}}});
    el.epilogue = ReduceEpilogue::kSqrt;
    return el;
  }
  return Status::Invalid("elem-no-reduce-rule");
}

Result<bool> ConvInputGradReached(ByteSpan attrs, std::int64_t e, std::span<const kernels::Shape> in) {
  const auto conv = static_cast<std::uint16_t>(OpKind::kConv2dBackward);
  if (!IsConvInputGrad(conv, 0, in)) return Status::Invalid("elem-no-reduce-rule", "conv2d_backward shapes");
  VT_ASSIGN_OR_RETURN(const ReduceElement el, ConvInputGradAt(attrs, e, in[0], in[1], in[2]));
  return el.rows > 0;
}

namespace {

// A rounded norm's rstd at row or channel `at` about the kernel's own
// unrounded mean: the repops rstd's description (the node's attributes
// checked, the kRstd epilogue over n) with its sums replaced by the mean's
// Σx (slot `mean_slot`'s) and Σ(x − Σx/n)², kept apart.
Result<ReduceElement> AboutUnroundedMean(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t mean_slot,
                                         std::int64_t at, std::span<const kernels::Shape> in) {
  VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, mean_slot + 1, at, in));
  VT_ASSIGN_OR_RETURN(const ReduceElement mean, ReduceElementAt(op_kind, attrs, mean_slot, at, in));
  const ReduceSegment& sum = mean.segments.at(0);
  el.segments = {sum, ReduceSegment{sum.terms, ReduceTerm::kSquaredDeviationFromSum, {sum.operands.at(0)}}};
  el.separate_sums = true;
  el.mean_divisor = mean.divisor;
  return el;
}

}  // namespace

Result<ReduceElement> RoundedElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                       std::int64_t e, std::span<const kernels::Shape> in) {
  if (Is(op_kind, OpKind::kAttention) && slot == 0 && in.size() == 1 && in[0].size() == 3) {
    // y[b, t, h·D + i]: row t's scores and softmax (att[b, h, t, 0]'s
    // description), then the kernel's att·V element over every u < T.
    VT_ASSIGN_OR_RETURN(const Heads g, HeadsOf(attrs, in[0]));
    if (e < 0 || e >= g.nb * g.t_count * g.c) return Status::Invalid("elem-bad-index");
    const std::int64_t b = e / (g.t_count * g.c), t = (e / g.c) % g.t_count, col = e % g.c;
    const std::int64_t h = col / g.d, i = col % g.d;
    VT_ASSIGN_OR_RETURN(
        ReduceElement el,
        ReduceElementAt(op_kind, attrs, 1, ((b * g.heads + h) * g.t_count + t) * g.t_count, in));
    el.outer = ReduceOuter::kSoftmaxDot;
    el.pick = 0;
    el.outer_reads = {
        TermOperand{.input = 0, .first = b * g.t_count * g.c3 + 2 * g.c + h * g.d + i, .stride = g.c3}};
    el.outer_terms = g.t_count;
    el.slack = ReduceSlack::kAttentionOutput;
    el.slack_terms = g.d;
    return el;
  }
  if (Is(op_kind, OpKind::kAttentionBackward) && slot == 0) {
    // The repops description (its dots and GEMM elements sequential from
    // +0: the canonical reference for the kernel's dgemm) with the kernel's
    // β: dv's GemmSlack over T terms; dq's and dk's from β_dP and β_dS.
    VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, slot, e, in));
    el.slack = el.attention_grad ? ReduceSlack::kAttentionGrad : ReduceSlack::kSumOfRowSlacks;
    el.slack_terms = el.attention_grad ? el.attention_grad->d : el.scan_count;
    return el;
  }
  const bool conv_dx =
      Is(op_kind, OpKind::kConv2dBackward) && slot == 0 && in.size() == 3 && in[2].size() == 4;
  if (conv_dx || (Is(op_kind, OpKind::kAttention) && slot == 1)) {
    // The repops description (the canonical fp64 reference computes each
    // dcol value or score in its dot scan's order), with the kernel's β:
    // conv2d_backward's WriteGemmSlack over Co·KH·KW terms, col2im'd;
    // attention's GemmSlack over D terms, then SoftmaxSlack.
    VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, slot, e, in));
    el.slack = conv_dx ? ReduceSlack::kSumOfRowSlacks : ReduceSlack::kSoftmaxOfRowSlacks;
    el.slack_terms = conv_dx ? in[2][0] * in[2][2] * in[2][3] : el.scan_count;
    return el;
  }
  if (Is(op_kind, OpKind::kBatchNorm2dTrain) && slot == 1 && in.size() == 5 && in[0].size() == 4) {
    // The mean's sum (slot 3's), then the running mean's update, reading
    // running_mean[c]; the attributes as the rstd's description checks them.
    VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, 4, e, in));
    VT_ASSIGN_OR_RETURN(const ReduceElement mean, ReduceElementAt(op_kind, attrs, 3, e, in));
    el.segments = mean.segments;
    el.divisor = mean.divisor;
    el.epilogue = ReduceEpilogue::kNone;
    el.final = ReduceFinal::kRunningVar;
    el.final_reads = {TermOperand{3, e, 0}};
    return el;
  }
  const bool layer = Is(op_kind, OpKind::kLayerNorm) && in.size() == 3 && !in[0].empty();
  const bool batch = Is(op_kind, OpKind::kBatchNorm2dTrain) && in.size() == 5 && in[0].size() == 4;
  if ((layer && (slot == 0 || slot == 2)) || (batch && (slot == 0 || slot == 2 || slot == 4))) {
    // Layer norm (x [..., C], gamma, beta): row r; batch norm (x, gamma,
    // beta, running_mean, running_var): channel c. y[e] reads its row's or
    // channel's statistics; the other slots are of row or channel e.
    const kernels::Shape& x = in[0];
    const std::int64_t width = layer ? Last(x) : x[1], hw = layer ? 1 : x[2] * x[3];
    if (width < 1 || hw < 1) return Status::Invalid("elem-no-reduce-rule", "norm shapes");
    const std::int64_t statistics = layer ? kernels::NumElements(x) / width : width;
    if (e < 0 || e >= (slot == 0 ? kernels::NumElements(x) : statistics))
      return Status::Invalid("elem-bad-index");
    const std::int64_t at = slot != 0 ? e : layer ? e / width : (e / hw) % width;
    VT_ASSIGN_OR_RETURN(ReduceElement el, AboutUnroundedMean(op_kind, attrs, layer ? 1 : 3, at, in));
    if (slot == 2 && batch) {
      el.epilogue = ReduceEpilogue::kNone;
      el.final = ReduceFinal::kRunningVar;
      el.final_reads = {TermOperand{4, at, 0}};
      el.divisor = el.mean_divisor - 1;
    } else if (slot == 0) {
      // γ and β at the value's column (layer norm) or channel (batch norm).
      const std::int64_t affine = layer ? e % width : at;
      el.epilogue = ReduceEpilogue::kNone;
      el.final = ReduceFinal::kNormValue;
      el.final_reads = {TermOperand{0, e, 0}, TermOperand{1, affine, 0}, TermOperand{2, affine, 0}};
    }
    return el;
  }
  if (Is(op_kind, OpKind::kBatchNorm2dBackward) && slot == 0 && in.size() == 5 && in[1].size() == 4) {
    // (dy, x, gamma, saved_mean, saved_rstd): dx[e] from its channel's Σ dy·x̂ and Σ dy (dγ's and dβ's sums).
    const kernels::Shape& x = in[1];
    const std::int64_t ch = x[1], hw = x[2] * x[3];
    if (in[0] != x || ch < 1 || hw < 1) return Status::Invalid("elem-no-reduce-rule", "batchnorm shapes");
    if (e < 0 || e >= kernels::NumElements(x)) return Status::Invalid("elem-bad-index");
    const std::int64_t c = (e / hw) % ch;
    VT_ASSIGN_OR_RETURN(const ReduceElement dgamma, ReduceElementAt(op_kind, attrs, 1, c, in));
    VT_ASSIGN_OR_RETURN(const ReduceElement dbeta, ReduceElementAt(op_kind, attrs, 2, c, in));
    ReduceElement el;
    el.segments = {dgamma.segments.at(0), dbeta.segments.at(0)};
    el.separate_sums = true;
    el.final = ReduceFinal::kBatchNormGrad;
    el.final_reads = {TermOperand{0, e, 0}, TermOperand{1, e, 0}, TermOperand{2, c, 0}, TermOperand{3, c, 0},
                      TermOperand{4, c, 0}};
    el.divisor = x[0] * hw;
    return el;
  }
  if (!Is(op_kind, OpKind::kClipGradNorm) || slot >= in.size()) return Status::Invalid("elem-no-reduce-rule");
  if (e < 0 || e >= kernels::NumElements(in[slot])) return Status::Invalid("elem-bad-index");
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok() || !decoded->ints.empty() || decoded->floats.size() != 1)
    return Status::Invalid("elem-no-reduce-rule", "clip_grad_norm attributes");
  VT_ASSIGN_OR_RETURN(ReduceElement el,
                      ReduceElementAt(op_kind, attrs, static_cast<std::uint32_t>(in.size()), 0, in));
  el.max_norm = decoded->Float(0);
  // The kernel refuses this max_norm: the node has no value to judge.
  if (!(std::isfinite(el.max_norm) && el.max_norm > 0.0f))
    return Status::Invalid("elem-no-reduce-rule", "clip max_norm");
  el.epilogue = ReduceEpilogue::kNone;
  el.final = ReduceFinal::kClipScaled;
  el.final_reads = {TermOperand{slot, e, 0}};
  return el;
}

Result<ReduceStep> ReduceStepAt(const ReduceElement& el, std::uint64_t leaf) {
  if (leaf == 0 || leaf > el.Steps()) return Status::Invalid("elem-bad-step", "leaf " + std::to_string(leaf));
  if (el.attention_grad) {
    if (leaf > el.ValueSteps()) return AttentionGradSlackStepAt(*el.attention_grad, el.ValueSteps(), leaf);
    return AttentionGradStepAt(*el.attention_grad, leaf, el.exact);
  }
  if (leaf > el.ValueSteps()) return SlackStepAt(el, leaf);
  const std::uint64_t block = el.BlockSteps(), in_rows = static_cast<std::uint64_t>(el.rows) * block;
  if (leaf <= in_rows) {
    // Row r's block: its steps as for one row, their leaves shifted past
    // the earlier rows' (leaf 0, +0, is every block's start).
    const std::uint64_t r = (leaf - 1) / block, base = r * block;
    ReduceStep st = BlockStepAt(el, leaf - base);
    if (st.left != 0) st.left += base;
    if (st.reads_right && st.right != 0) st.right += base;
    st.row = static_cast<std::int64_t>(r);
    return st;
  }
  // The outer stage over the rows' last leaves x_j = leaf (j+1)·block.
  const auto rows = static_cast<std::uint64_t>(el.rows);
  const auto row_leaf = [&](std::uint64_t j) { return (j + 1) * block; };
  ReduceStep st;
  st.reads_right = true;
  std::uint64_t local = leaf - in_rows - 1, sum_start = in_rows + 1;
  const bool softmax = el.outer == ReduceOuter::kSoftmax || el.outer == ReduceOuter::kSoftmaxDot;
  if (softmax) {
    const std::uint64_t max_leaf = in_rows + rows, exp_start = max_leaf + 1;
    sum_start = exp_start + rows;
    if (local < rows) {  // the running max over the x_j
      st.kind = ReduceStepKind::kLeafMax;
      st.term = static_cast<std::int64_t>(local);
      st.left = leaf - 1;
      st.right = row_leaf(local);
      return st;
    }
    if (local < 2 * rows) {  // e_j = Exp(x_j − m)
      st.kind = ReduceStepKind::kLeafExp;
      st.left = max_leaf;
      st.right = row_leaf(local - rows);
      return st;
    }
    if (el.outer == ReduceOuter::kSoftmax && leaf == el.ValueSteps()) {  // e_pick / z
      st.kind = ReduceStepKind::kLeafDiv;
      st.left = exp_start + static_cast<std::uint64_t>(el.pick);
      st.right = leaf - 1;
      return st;
    }
    local -= 2 * rows;
    const std::uint64_t z_steps = SumSteps(el.exact, el.rows);
    if (el.outer == ReduceOuter::kSoftmaxDot && local >= z_steps) {
      const std::uint64_t z = sum_start + z_steps - 1, k = local - z_steps;
      if (k < rows) {  // att_j = e_j / z
        st.kind = ReduceStepKind::kLeafDiv;
        st.left = exp_start + k;
        st.right = z;
        return st;
      }
      // The GEMM element's step u: + att_u·x_u, +0·x_u past the blocks.
      const std::uint64_t u = k - rows;
      st.kind = ReduceStepKind::kGemmStep;
      st.term = static_cast<std::int64_t>(u);
      st.left = u == 0 ? 0 : leaf - 1;
      st.reads_right = u < rows;
      st.right = st.reads_right ? z + 1 + u : 0;
      return st;
    }
  }
  // A sum whose term j adds the leaf of x_j (kSum) or of e_j (kSoftmax).
  st = SegmentStepAt(sum_start, el.rows, local, el.exact);
  if (st.kind == ReduceStepKind::kTerm) {
    st.kind = ReduceStepKind::kCombine;
    st.reads_right = true;
    const auto j = static_cast<std::uint64_t>(st.term);
    st.right = softmax ? in_rows + rows + 1 + j : row_leaf(j);
    st.term = 0;
  }
  return st;
}

namespace {

// The values an AttentionGrad step reads (reduce_rule.h: dy_t and v_j at
// the dot's i; att_tj; att_tu; k_u[i] or q_t[i]; a norm's factor).
std::vector<StepRead> AttentionGradReads(const AttentionGrad& g, const ReduceStep& st) {
  const std::int64_t c3 = 3 * g.c, att_row = g.att_item + st.row * g.t_count;
  const auto q_at = [&](std::int64_t t, std::int64_t part, std::int64_t i) {
    return StepRead{1, g.qkv_image + t * c3 + part * g.c + g.head + i};
  };
  switch (st.kind) {
    case ReduceStepKind::kNormStep:
      if (st.segment == 0) return {StepRead{0, g.dy_image + st.row * g.c + g.head + st.term}};
      if (st.segment == 1) return {q_at(st.row, 2, st.term)};
      return {q_at(st.term, g.dk ? 0 : 1, g.i)};
    case ReduceStepKind::kDotStep:
      return {
          StepRead{0, g.dy_image + st.row * g.c + g.head + st.term},
          StepRead{1, g.qkv_image + static_cast<std::int64_t>(st.segment) * c3 + 2 * g.c + g.head + st.term}};
    case ReduceStepKind::kWeightedTerm:
      return {StepRead{2, att_row + static_cast<std::int64_t>(st.segment)}};
    case ReduceStepKind::kAttnDs:
    case ReduceStepKind::kAttnDsSlack:
      return {StepRead{2, att_row + st.term}};
    case ReduceStepKind::kGemmStep:
      return {g.dk ? StepRead{1, g.qkv_image + st.row * c3 + g.head + g.i}
                   : StepRead{1, g.qkv_image + st.term * c3 + g.c + g.head + g.i}};
    default:
      return {};
  }
}

}  // namespace

std::vector<StepRead> StepReads(const ReduceElement& el, const ReduceStep& st) {
  std::vector<StepRead> reads;
  const auto at = [&](const TermOperand& o, std::uint32_t input, std::int64_t j) {
    reads.push_back(StepRead{input, o.Index(j, st.row), o.gather_from, o.gather_rows});
  };
  switch (st.kind) {
    case ReduceStepKind::kTerm:
      if (st.segment < el.segments.size())
        for (const TermOperand& o : el.segments[st.segment].operands) at(o, o.input, st.term);
      break;
    case ReduceStepKind::kCombine:
    case ReduceStepKind::kLeafMax:
    case ReduceStepKind::kLeafExp:
    case ReduceStepKind::kLeafDiv:
      break;
    case ReduceStepKind::kScan:
      for (const TermOperand& o : el.scan_reads) at(o, o.input, st.term);
      break;
    case ReduceStepKind::kFinal:
      for (const TermOperand& o : el.final_reads) at(o, o.input, 0);
      break;
    case ReduceStepKind::kNormStep:  // the dot's factor a or b at j, or the outer read at u
      if (el.attention_grad) return AttentionGradReads(*el.attention_grad, st);
      if (st.segment < el.scan_reads.size()) {
        const TermOperand& o = el.scan_reads[st.segment];
        at(o, o.input, st.term);
      } else if (st.segment == 2 && !el.outer_reads.empty()) {
        at(el.outer_reads[0], el.outer_reads[0].input, st.term);
      }
      break;
    case ReduceStepKind::kRowSlack:
    case ReduceStepKind::kSlackFold:
    case ReduceStepKind::kSlackFactor:
    case ReduceStepKind::kLeafProduct:
    case ReduceStepKind::kSquareAdd:
    case ReduceStepKind::kPerturbedSlack:
      break;
    case ReduceStepKind::kGemmStep:  // kSoftmaxDot's: x_u
      if (!el.attention_grad && !el.outer_reads.empty()) {
        at(el.outer_reads[0], el.outer_reads[0].input, st.term);
        break;
      }
      [[fallthrough]];
    case ReduceStepKind::kDotStep:
    case ReduceStepKind::kWeightedTerm:
    case ReduceStepKind::kAttnDs:
    case ReduceStepKind::kAttnDsSlack:
      if (el.attention_grad) return AttentionGradReads(*el.attention_grad, st);
      break;
  }
  return reads;
}

Result<std::vector<StepRead>> StepReadsAt(const ReduceElement& el, std::uint64_t m) {
  VT_ASSIGN_OR_RETURN(const ReduceStep st, ReduceStepAt(el, m + 1));
  return StepReads(el, st);
}

Result<std::vector<ReadValue>> ReadStep(std::span<const StepRead> reads, const ValueAt& value_at) {
  std::vector<ReadValue> out;
  out.reserve(reads.size());
  for (const StepRead& r : reads) {
    std::int64_t index = r.index;
    if (r.gather_from >= 0) {
      if (static_cast<std::size_t>(r.gather_from) >= out.size())
        return Status::Invalid("elem-bad-step", "a gathered read before the value it needs");
      const float row = out[static_cast<std::size_t>(r.gather_from)].value;
      if (!kernels::IsRowIndex(row, r.gather_rows))
        return Status::Invalid("bad-index", "index " + std::to_string(row) + " is not a row of " +
                                                std::to_string(r.gather_rows));
      index += static_cast<std::int64_t>(row);
    }
    VT_ASSIGN_OR_RETURN(float v, value_at(r.input, index));
    out.push_back(ReadValue{r.input, index, v});
  }
  return out;
}

ValueAt TensorValues(std::span<const kernels::Tensor> tensors, std::span<const kernels::Tensor> outputs) {
  return [tensors, outputs](std::uint32_t input, std::int64_t index) -> Result<float> {
    const bool own = input >= kOwnOutput;
    const std::span<const kernels::Tensor> from = own ? outputs : tensors;
    const std::uint32_t i = own ? input - kOwnOutput : input;
    if (i >= from.size() || index < 0 || index >= from[i].numel())
      return Status::Invalid("elem-bad-index",
                             "input " + std::to_string(input) + " value " + std::to_string(index));
    return from[i][index];
  };
}

const InputTensor* TensorOfRead(std::span<const InputTensor> inputs, std::span<const InputTensor> own,
                                std::uint32_t input) {
  if (input >= kOwnOutput) return input - kOwnOutput < own.size() ? &own[input - kOwnOutput] : nullptr;
  return input < inputs.size() ? &inputs[input] : nullptr;
}

// What a term step's right operand leaf gives its term: the row's max
// (kExpShifted), or segment 0's sum whose mean — MeanOf's sum / n — the
// deviations are from (kSquaredDeviationFromSum).
template <class T>
T TermShift(const ReduceElement& el, ReduceTerm term, T right) {
  return term == ReduceTerm::kSquaredDeviationFromSum ? right / static_cast<T>(el.mean_divisor) : right;
}

// `shift`: TermShift's.
template <class T>
T TermValue(ReduceTerm term, std::span<const std::type_identity_t<T>> v, T shift) {
  switch (term) {
    case ReduceTerm::kValue:
      return v[0];
    case ReduceTerm::kSquare:
      return v[0] * v[0];
    case ReduceTerm::kNormProduct:
      return v[0] * ((v[1] - v[2]) * v[3]);
    case ReduceTerm::kExpShifted:
      return MathOf<T>::Exp(v[0] - shift);  // the kernels' ExpShifted, one value
    case ReduceTerm::kSquaredDeviation: {
      const T d = v[0] - v[1];  // the norm kernels' dev(j), squared
      return d * d;
    }
    case ReduceTerm::kSquaredDeviationFromSum: {
      const T d = v[0] - shift;
      return d * d;
    }
    case ReduceTerm::kProduct:
    case ReduceTerm::kRoundedProduct:
      return v[0] * v[1];
    case ReduceTerm::kScaledNormProduct:  // layernorm_backward's g·x̂
      return (v[0] * v[1]) * kernels::LayerNormXhat(v[2], v[3], v[4]);
  }
  return T(0);
}

namespace {

// A slack leaf (ReduceSlack): the kernels' own expressions — GemmNormsSq's
// sequential squares, WriteGemmSlack's value, SoftmaxSlack's MaxStep fold
// or col2im's addition.
Result<double> SlackStepValue(const ReduceElement& el, const ReduceStep& st, double left, double right,
                              std::span<const double> v) {
  switch (st.kind) {
    case ReduceStepKind::kNormStep:
      if (v.size() != 1) return Status::Invalid("elem-bad-step", "the norm step's read");
      return left + v[0] * v[0];
    case ReduceStepKind::kRowSlack: {
      // Segment 1: the GEMM over an uncertain factor (attention's y, or dq and dk).
      const std::int64_t terms = st.segment != 1     ? el.slack_terms
                                 : el.attention_grad ? GradGemmTerms(*el.attention_grad)
                                                     : el.outer_terms + kernels::kAttentionOutputExtraTerms;
      return kernels::GemmSlackValue(kernels::GemmSlackFactor(terms), std::sqrt(left), std::sqrt(right), 0.0);
    }
    case ReduceStepKind::kAttnDsSlack:
      if (v.size() != 1 || !el.attention_grad) return Status::Invalid("elem-bad-step", "the dS slack's read");
      return kernels::AttentionDsSlack(
          v[0], left, right, kernels::AttentionScale<kernels::opsdetail::F64Math>(el.attention_grad->d));
    case ReduceStepKind::kSlackFold:
      return el.slack == ReduceSlack::kSumOfRowSlacks ? left + right : kernels::MaxStep(left, right);
    case ReduceStepKind::kSlackFactor:
      return kernels::AttentionSlackFactor(
          left, kernels::AttentionScale<kernels::opsdetail::F64Math>(el.scale_dim));
    case ReduceStepKind::kLeafProduct:
      return left * right;
    case ReduceStepKind::kSquareAdd:
      return left + right * right;
    case ReduceStepKind::kPerturbedSlack:
      return kernels::PerturbationNorm(left) * std::sqrt(right);
    default:
      break;
  }
  return Status::Invalid("elem-bad-step", "no such slack step");
}

}  // namespace

template <class T>
Result<T> StepValue(const ReduceElement& el, const ReduceStep& st, T left, T right,
                    std::span<const std::type_identity_t<T>> v) {
  using M = MathOf<T>;
  switch (st.kind) {
    case ReduceStepKind::kTerm:
      if (st.segment >= el.segments.size() || v.size() != el.segments[st.segment].operands.size())
        return Status::Invalid("elem-bad-step", "the term's reads");
      return left + TermValue<T>(el.segments[st.segment].term, v,
                                 TermShift(el, el.segments[st.segment].term, right));
    case ReduceStepKind::kCombine:
      return left + right;
    case ReduceStepKind::kScan:
      return ScanValue(el, st.term, left, v);
    case ReduceStepKind::kLeafMax:
      return st.term == 0 ? right : kernels::MaxStep(left, right);
    case ReduceStepKind::kLeafExp:
      return M::Exp(right - left);
    case ReduceStepKind::kLeafDiv:
      return left / right;
    case ReduceStepKind::kDotStep:  // dP's GEMM element: dy·v
      if (v.size() != 2) return Status::Invalid("elem-bad-step", "the dot step's reads");
      return DotStep(left, v[0], v[1]);
    case ReduceStepKind::kWeightedTerm:  // r_t's TreeSum term att·dP
      if (v.size() != 1) return Status::Invalid("elem-bad-step", "the term's read");
      return left + v[0] * right;
    case ReduceStepKind::kAttnDs:
      if (v.size() != 1 || !el.attention_grad) return Status::Invalid("elem-bad-step", "the dS step's read");
      return AttentionDs(*el.attention_grad, v[0], left, right);
    case ReduceStepKind::kGemmStep:  // dq's dS·k or dk's dS·q, +0 above the diagonal
      if (v.size() != 1) return Status::Invalid("elem-bad-step", "the GEMM step's read");
      return DotStep(left, st.reads_right ? right : T(+0.0), v[0]);
    case ReduceStepKind::kNormStep:
    case ReduceStepKind::kRowSlack:
    case ReduceStepKind::kSlackFold:
    case ReduceStepKind::kSlackFactor:
    case ReduceStepKind::kLeafProduct:
    case ReduceStepKind::kSquareAdd:
    case ReduceStepKind::kPerturbedSlack:
    case ReduceStepKind::kAttnDsSlack:
      if constexpr (std::is_same_v<T, double>) {
        return SlackStepValue(el, st, left, right, v);
      } else {
        return Status::Invalid("elem-wrong-leaf", "a slack's leaves are fp64");
      }
    case ReduceStepKind::kFinal: {
      if (el.final == ReduceFinal::kAttentionScale && v.empty())  // the scan's dot, scaled
        return left * kernels::AttentionScale<M>(el.scale_dim);
      if (el.final == ReduceFinal::kSoftmaxValue && v.size() == 1)  // (x); left: max, right: sum
        return M::Exp(v[0] - left) / right;
      if (el.final == ReduceFinal::kSoftmaxGrad && v.size() == 2)  // (y, dy); right: Σ dy·y
        return v[0] * (v[1] - right);
      if (el.final == ReduceFinal::kLayerNormGrad && v.size() == 5) {  // (dy, γ, x, mean, rstd)
        const auto c = static_cast<T>(el.divisor);
        return kernels::LayerNormGradValue(v[0] * v[1], kernels::LayerNormXhat(v[2], v[3], v[4]), left / c,
                                           right / c, v[4]);
      }
      if (el.final == ReduceFinal::kNormValue && v.size() == 3) {  // (x, γ, β); left Σx, right ssq
        const auto n = static_cast<T>(el.divisor);
        return kernels::NormValue(v[0], left / n, kernels::NormRstd<M>(right / n, static_cast<T>(el.eps)),
                                  v[1], v[2]);
      }
      if (el.final == ReduceFinal::kBatchNormGrad && v.size() == 5)  // (dy, x, γ, mean, rstd); Σ dy·x̂, Σ dy
        return kernels::BatchNormGradValue(v[0], v[1], v[2], v[3], v[4], left, right, el.divisor);
      if (el.final == ReduceFinal::kClipScaled && v.size() == 1)  // (g); right: Σ g² over every tensor
        return v[0] * kernels::ClipGradScale(static_cast<T>(el.max_norm), M::Sqrt(right));
      if (el.final == ReduceFinal::kRunningVar && v.size() == 1)  // (running_var[c]); right: ssq
        return kernels::BatchNormRunning(v[0], right / static_cast<T>(el.divisor),
                                         static_cast<T>(el.momentum));
      // (label, x[label]): ReadStep checked the label.
      if (el.final == ReduceFinal::kCrossEntropyLoss && v.size() == 2)
        return kernels::CrossEntropyRowLoss(left, M::Log(right), v[1]);
      // (x, label, dloss); the label must be a class, as the kernel checks every label.
      if (el.final != ReduceFinal::kCrossEntropyGrad || v.size() != 3)
        return Status::Invalid("elem-bad-step", "the final step's reads");
      if (!kernels::IsRowIndex(static_cast<float>(v[1]), el.scan_count))
        return Status::Invalid("bad-index", "label " + std::to_string(v[1]) + " is not a class");
      const T g = v[2] / static_cast<T>(el.divisor);
      return kernels::CrossEntropyGradValue(M::Exp(v[0] - left), right,
                                            v[1] == static_cast<T>(el.final_class), g);
    }
  }
  return Status::Invalid("elem-bad-step");
}

template <class T>
T ReduceOutput(const ReduceElement& el, T sum) {
  using M = MathOf<T>;
  switch (el.epilogue) {
    case ReduceEpilogue::kNone:
      return sum;
    case ReduceEpilogue::kDivide:
      return sum / static_cast<T>(el.divisor);
    case ReduceEpilogue::kSqrt:
      return M::Sqrt(sum);
    case ReduceEpilogue::kRstd:
      return kernels::NormRstd<M>(sum / static_cast<T>(el.divisor), static_cast<T>(el.eps));
  }
  return sum;
}

namespace {

// AttentionGrad's leaves computed straight through (GPT-2's dk: ~3.4 × 10^7),
// in AttentionGradStepAt's order with its steps' expressions.
template <class T>
Status AttentionGradPartials(const AttentionGrad& g, const ValueAt& value_at, LeafSink<T>& p) {
  p.Push(T(+0.0));
  const auto read = [&](const StepRead& r) { return value_at(r.input, r.index); };
  // Row t's dot blocks and r_t's TreeSum; returns the run's first leaf.
  const auto run = [&](std::int64_t t) -> Result<std::uint64_t> {
    const std::uint64_t base = p.Size();
    ReduceStep st;
    st.row = t;
    st.kind = ReduceStepKind::kDotStep;
    for (std::int64_t j = 0; j <= t; ++j) {
      st.segment = static_cast<std::uint32_t>(j);
      for (std::int64_t i = 0; i < g.d; ++i) {
        st.term = i;
        const std::vector<StepRead> reads = AttentionGradReads(g, st);
        VT_ASSIGN_OR_RETURN(float dy, read(reads[0]));
        VT_ASSIGN_OR_RETURN(float v, read(reads[1]));
        p.Push(DotStep<T>(i == 0 ? T(+0.0) : p.Back(), dy, v));
      }
    }
    st.kind = ReduceStepKind::kWeightedTerm;
    for (std::int64_t j = 0; j <= t; ++j) {
      st.segment = static_cast<std::uint32_t>(j);
      VT_ASSIGN_OR_RETURN(float att, read(AttentionGradReads(g, st)[0]));
      p.Push((j % kTreeBlock == 0 ? T(+0.0) : p.Back()) + T(att) * p.At(PartialLeaf(g, base, j)));
    }
    const std::uint64_t dots = static_cast<std::uint64_t>((t + 1) * g.d);
    for (std::int64_t b = 0; b + 1 < Blocks(t + 1); ++b) {
      const ReduceStep combine = SegmentStepAt(base + dots, t + 1, p.Size() - base - dots);
      p.Push(p.At(combine.left) + p.At(combine.right));
    }
    return base;
  };
  // dS_tu as a leaf, from row t's run starting at `base` and its r_t.
  std::vector<std::uint64_t> ds_leaf(static_cast<std::size_t>(g.t_count), 0);
  const auto push_ds = [&](std::int64_t t, std::int64_t u, std::uint64_t base, T r) -> Status {
    ReduceStep st;
    st.kind = ReduceStepKind::kAttnDs;
    st.row = t;
    st.term = u;
    VT_ASSIGN_OR_RETURN(float att, read(AttentionGradReads(g, st)[0]));
    p.Push(AttentionDs<T>(g, att, p.At(PartialLeaf(g, base, u)), r));
    ds_leaf[static_cast<std::size_t>(g.dk ? t : u)] = p.Size() - 1;
    return Status::Ok();
  };
  if (!g.dk) {  // row t's run, then its dS_tu for every u ≤ t
    VT_ASSIGN_OR_RETURN(const std::uint64_t base, run(g.fixed));
    const T r = p.Back();
    for (std::int64_t u = 0; u <= g.fixed; ++u) VT_TRY(push_ds(g.fixed, u, base, r));
  } else {  // every row t ≥ u: its run, then its dS_tu
    for (std::int64_t t = g.fixed; t < g.t_count; ++t) {
      VT_ASSIGN_OR_RETURN(const std::uint64_t base, run(t));
      VT_TRY(push_ds(t, g.fixed, base, p.Back()));
    }
  }
  // The GEMM element over the K dimension (dq: u; dk: t), +0 where masked.
  for (std::int64_t k = 0; k < g.t_count; ++k) {
    ReduceStep st;
    st.kind = ReduceStepKind::kGemmStep;
    st.row = g.dk ? k : g.fixed;
    st.term = g.dk ? g.fixed : k;
    const bool masked = g.dk ? k < g.fixed : k > g.fixed;
    VT_ASSIGN_OR_RETURN(float x, read(AttentionGradReads(g, st)[0]));
    const T d_s = masked ? T(+0.0) : p.At(ds_leaf[static_cast<std::size_t>(k)]);
    p.Push(DotStep<T>(k == 0 ? T(+0.0) : p.Back(), d_s, x));
  }
  return Status::Ok();
}

// The slack's leaves after the value's (GradSlackLayout's order), straight
// through with its steps' expressions.
Status AttentionGradSlackPartials(const AttentionGrad& g, std::uint64_t value_steps, const ValueAt& value_at,
                                  LeafSink<double>& p) {
  const GradSlackLayout at(g, value_steps);
  ReduceStep st;
  const auto read = [&]() -> Result<double> {
    const std::vector<StepRead> reads = AttentionGradReads(g, st);
    VT_ASSIGN_OR_RETURN(const float v, value_at(reads.at(0).input, reads.at(0).index));
    return static_cast<double>(v);
  };
  // Σ x² from +0 over `count` values of the norm step's `segment` and `row`.
  const auto norm = [&](std::uint32_t segment, std::int64_t row, std::int64_t count) -> Status {
    st.kind = ReduceStepKind::kNormStep;
    st.segment = segment;
    st.row = row;
    for (std::int64_t i = 0; i < count; ++i) {
      st.term = i;
      VT_ASSIGN_OR_RETURN(const double x, read());
      p.Push((i == 0 ? 0.0 : p.Back()) + x * x);
    }
    return Status::Ok();
  };
  const auto square_add = [&](std::uint64_t y, double x) { p.Push((y == 0 ? 0.0 : p.Back()) + x * x); };
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(at.norms); ++j) VT_TRY(norm(1, j, g.d));
  const double dp_factor = kernels::GemmSlackFactor(g.d);
  const double scale = kernels::AttentionScale<kernels::opsdetail::F64Math>(g.d);
  for (std::int64_t t = at.first; t <= at.last; ++t) {
    VT_TRY(norm(0, t, g.d));
    const double dy_norm = std::sqrt(p.Back());
    st.row = t;
    for (std::int64_t j = 0; j <= t; ++j) {  // β_dP_tj, then Σ att·β_dP through j
      p.Push(kernels::GemmSlackValue(dp_factor, dy_norm, std::sqrt(p.At(at.VNorm(j))), 0.0));
      st.kind = ReduceStepKind::kWeightedTerm;
      st.segment = static_cast<std::uint32_t>(j);
      VT_ASSIGN_OR_RETURN(const double att, read());
      p.Push((j == 0 ? 0.0 : p.At(p.Size() - 2)) + att * p.Back());
    }
    const double weighted = p.Back();
    st.kind = ReduceStepKind::kAttnDsSlack;
    for (std::int64_t u = g.dk ? g.fixed : 0; u <= (g.dk ? g.fixed : t); ++u) {
      st.term = u;
      VT_ASSIGN_OR_RETURN(const double att, read());
      p.Push(kernels::AttentionDsSlack(att, p.At(at.DpSlack(t, u)), weighted, scale));
    }
  }
  for (std::uint64_t y = 0; y < at.n; ++y) square_add(y, p.At(at.DsSlack(y)));
  for (std::uint64_t y = 0; y < at.n; ++y) {
    const auto k = static_cast<std::int64_t>(y);
    square_add(y, p.At(DsLeaf(g, g.dk ? g.fixed + k : k, false)));
  }
  VT_TRY(norm(2, 0, g.t_count));
  const double x_norm = std::sqrt(p.Back());
  p.Push(kernels::GemmSlackValue(kernels::GemmSlackFactor(GradGemmTerms(g)), std::sqrt(p.At(at.DsSqSum())),
                                 x_norm, 0.0));
  p.Push(kernels::PerturbationNorm(p.At(at.SlackSqSum())) * x_norm);
  p.Push(p.At(at.GemmSlack()) + p.Back());
  return Status::Ok();
}

}  // namespace

template <class T>
Status ComputeReducePartials(const ReduceElement& el, const ValueAt& value_at, LeafSink<T>& p) {
  if (el.exact) return Status::Invalid("elem-wrong-leaf", "an exact sum's leaves are CertifiedSumPartials'");
  if (el.fp64 != std::is_same_v<T, double>)
    return Status::Invalid("elem-wrong-leaf",
                           el.fp64 ? "a rounded sum's leaves are fp64" : "the leaves are fp32");
  if (el.attention_grad) {
    VT_TRY(AttentionGradPartials(*el.attention_grad, value_at, p));
    if (el.slack == ReduceSlack::kNone) return Status::Ok();
    if constexpr (std::is_same_v<T, double>) {
      return AttentionGradSlackPartials(*el.attention_grad, el.ValueSteps(), value_at, p);
    } else {
      return Status::Invalid("elem-wrong-leaf", "a slack's leaves are fp64");
    }
  }
  const std::uint64_t steps = el.Steps(), block = el.BlockSteps();
  p.Push(T(+0.0));
  // Any step by the rule: combinations, final steps, the outer sum.
  const auto step = [&]() -> Status {
    VT_ASSIGN_OR_RETURN(ReduceStep st, ReduceStepAt(el, p.Size()));
    VT_ASSIGN_OR_RETURN(std::vector<ReadValue> reads, ReadStep(StepReads(el, st), value_at));
    std::vector<T> v;
    for (const ReadValue& r : reads) v.push_back(r.value);
    VT_ASSIGN_OR_RETURN(T next, StepValue<T>(el, st, p.At(st.left), p.At(st.right), v));
    p.Push(next);
    return Status::Ok();
  };
  // The scan, then the term steps straight through each segment (a party
  // answers this for GPT-2's 124 M-term clip norm and its 1024 rows of
  // 50 257 logits).
  std::size_t most_reads = el.scan_reads.size();
  for (const ReduceSegment& seg : el.segments) most_reads = std::max(most_reads, seg.operands.size());
  std::vector<T> values(most_reads);
  for (std::int64_t r = 0; r < el.rows; ++r) {
    for (std::int64_t j = 0; j < el.scan_count; ++j) {
      for (std::size_t i = 0; i < el.scan_reads.size(); ++i) {
        const TermOperand& o = el.scan_reads[i];
        VT_ASSIGN_OR_RETURN(values[i], value_at(o.input, o.Index(j, r)));
      }
      // Every block's scan starts from leaf 0 (+0), as ReduceStepAt has it.
      const T prev = j == 0 ? T(+0.0) : p.Back();
      VT_ASSIGN_OR_RETURN(T next,
                          ScanValue<T>(el, j, prev, std::span<const T>(values).first(el.scan_reads.size())));
      p.Push(next);
    }
    const T max = p.Back();
    for (const ReduceSegment& seg : el.segments) {
      const std::int64_t n = seg.terms;
      // The right operand leaf of its term steps (BlockStepAt), row r's.
      const T right =
          seg.term == ReduceTerm::kSquaredDeviationFromSum ? p.At(SegmentSumLeaf(el, 0) + r * block) : max;
      const T shift = TermShift(el, seg.term, right);
      for (std::int64_t j = 0; j < n; ++j) {
        for (std::size_t i = 0; i < seg.operands.size(); ++i) {
          const TermOperand& o = seg.operands[i];
          VT_ASSIGN_OR_RETURN(values[i], value_at(o.input, o.Index(j, r)));
        }
        const T term = TermValue<T>(seg.term, std::span<const T>(values).first(seg.operands.size()), shift);
        p.Push((j % kTreeBlock == 0 ? T(+0.0) : p.Back()) + term);
      }
      for (std::int64_t c = 0; c + 1 < Blocks(n); ++c) VT_TRY(step());
    }
    while (p.Size() <= static_cast<std::uint64_t>(r + 1) * block) VT_TRY(step());
  }
  while (p.Size() <= steps) VT_TRY(step());
  return Status::Ok();
}

template <class T>
Result<std::vector<T>> ReducePartials(const ReduceElement& el, std::span<const kernels::Tensor> inputs,
                                      std::span<const kernels::Tensor> outputs) {
  HeldLeaves<T> p;
  VT_TRY(ComputeReducePartials(el, TensorValues(inputs, outputs), p));
  return std::move(p.leaves);
}

Result<std::vector<float>> OpenStepReads(std::span<const StepRead> reads, std::span<const InputTensor> inputs,
                                         std::span<const InputTensor> own,
                                         std::span<const ValueOpening> openings, const OpenedBatch* batch) {
  constexpr std::string_view kReason = "elem-bad-step";
  // One value opening per read of a hashed input, in order; a value of the
  // batch comes from the examples the move opened instead.
  std::size_t hashed = 0;
  for (const StepRead& r : reads) {
    const InputTensor* in = TensorOfRead(inputs, own, r.input);
    if (in == nullptr) return Status::Invalid(kReason, "no input " + std::to_string(r.input));
    hashed += in->batch ? 0 : 1;
  }
  if (openings.size() != hashed) return Status::Invalid(kReason, "the step's reads");
  std::size_t opened = 0;
  VT_ASSIGN_OR_RETURN(const std::vector<ReadValue> read,
                      ReadStep(reads, [&](std::uint32_t input, std::int64_t index) -> Result<float> {
                        const InputTensor& in = *TensorOfRead(inputs, own, input);
                        if (!in.batch) return VerifyValue(in.hash, in.shape, index, openings[opened++]);
                        if (batch == nullptr)
                          return Status::Invalid(kReason, "a batch value comes from the batch opening");
                        return batch->Value(*in.batch, in.shape, index);
                      }));
  std::vector<float> values;
  for (const ReadValue& r : read) values.push_back(r.value);
  return values;
}

template <class T>
Result<StepVerdict> JudgeReduceStepClaim(const ReduceElement& el, std::span<const InputTensor> inputs,
                                         const std::array<Hash256, 2>& roots,
                                         const ReduceStepClaimOf<T>& claim, const OpenedBatch* batch,
                                         std::span<const InputTensor> own) {
  constexpr std::string_view kReason = "elem-bad-step";
  if (el.exact || el.fp64 != std::is_same_v<T, double>)
    return Status::Invalid("elem-wrong-leaf", "the leaves are not the sum's kind");
  const std::uint64_t steps = el.Steps();
  if (claim.m >= steps)
    return Status::Invalid(kReason, "step " + std::to_string(claim.m) + " of " + std::to_string(steps));
  const auto check = [&](const Hash256& root, T value, const crypto::MerkleProof& proof,
                         std::uint64_t index) {
    return CheckPartialLeaf(kReason, root, value, proof, index, steps + 1);
  };
  VT_ASSIGN_OR_RETURN(ReduceStep st, ReduceStepAt(el, claim.m + 1));
  // Operand leaves precede m + 1: agreed, opened against root A. Leaf 0 is +0 by the posting's end check.
  VT_TRY(check(roots[0], claim.left, claim.left_proof, st.left));
  for (std::size_t side = 0; side < 2; ++side)
    VT_TRY(check(roots[side], claim.next[side], claim.next_proof[side], claim.m + 1));
  // The second operand leaf (a combination's, the row's max for a shifted
  // term, the sum for the final step) precedes m + 1 too.
  if (st.reads_right) VT_TRY(check(roots[0], claim.right, claim.right_proof, st.right));
  VT_ASSIGN_OR_RETURN(const std::vector<float> read,
                      OpenStepReads(StepReads(el, st), inputs, own, claim.reads, batch));
  const std::vector<T> values(read.begin(), read.end());
  VT_ASSIGN_OR_RETURN(const T next,
                      StepValue<T>(el, st, claim.left, st.reads_right ? claim.right : T(0), values));
  return StepVerdict{SameBits(next, claim.next[0]), SameBits(next, claim.next[1])};
}

StepVerdict JudgeReduceEpilogue(const ReduceElement& el, float sum, float y_a, float y_b) {
  return ValueVerdict(ReduceOutput(el, sum), y_a, y_b);
}

Result<float> RoundedReduceValue(const ReduceElement& el, double value_leaf, double slack_leaf,
                                 const kernels::RoundingSpec& spec, std::optional<bool> logged) {
  if (!el.fp64) return Status::Invalid("elem-wrong-leaf", "a rounded value needs the fp64 sum");
  const double ref = ReduceOutput(el, value_leaf);
  double slack = 0.0;  // the kernel's β at the value
  switch (el.slack) {
    case ReduceSlack::kNone:
      break;
    case ReduceSlack::kSumOfRowSlacks:
    case ReduceSlack::kAttentionOutput:
    case ReduceSlack::kAttentionGrad:
      slack = slack_leaf;
      break;
    case ReduceSlack::kSoftmaxOfRowSlacks:
      slack = ref * kernels::AttentionSlackFactor(
                        slack_leaf, kernels::AttentionScale<kernels::opsdetail::F64Math>(el.scale_dim));
      break;
  }
  return RoundAsLogged(ref, spec, slack, logged);
}

Result<StepVerdict> JudgeRoundedReduceEpilogue(const ReduceElement& el, double value_leaf, double slack_leaf,
                                               const kernels::RoundingSpec& spec, std::optional<bool> logged,
                                               float y_a, float y_b) {
  VT_ASSIGN_OR_RETURN(const float y, RoundedReduceValue(el, value_leaf, slack_leaf, spec, logged));
  return ValueVerdict(y, y_a, y_b);
}

// The two leaf types (reduce_rule.h).
#define VT_REDUCE_RULE_LEAF(T)                                                                              \
  template T TermValue<T>(ReduceTerm, std::span<const T>, T);                                               \
  template Result<T> StepValue<T>(const ReduceElement&, const ReduceStep&, T, T, std::span<const T>);       \
  template T ReduceOutput<T>(const ReduceElement&, T);                                                      \
  template Status ComputeReducePartials<T>(const ReduceElement&, const ValueAt&, LeafSink<T>&);             \
  template Result<std::vector<T>> ReducePartials<T>(const ReduceElement&, std::span<const kernels::Tensor>, \
                                                    std::span<const kernels::Tensor>);                      \
  template Result<StepVerdict> JudgeReduceStepClaim<T>(                                                     \
      const ReduceElement&, std::span<const InputTensor>, const std::array<Hash256, 2>&,                    \
      const ReduceStepClaimOf<T>&, const OpenedBatch*, std::span<const InputTensor>);
VT_REDUCE_RULE_LEAF(float)
VT_REDUCE_RULE_LEAF(double)
#undef VT_REDUCE_RULE_LEAF

}  // namespace vt::verify
