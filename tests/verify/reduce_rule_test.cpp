// The reduction rule (verify/reduce_rule.h) against the kernels it judges,
// in repops mode: every value of random nodes of each reduction in its table
// is reproduced bit for bit by ReducePartials' last leaf and the epilogue
// (terms across several 64-term blocks and the halving tree, clip_grad_norm
// over several tensors); every step's operands precede it; and a game of
// level 4 (chunk walk) and level 5b (walk over the partial results) between
// an honest party and a liar — wrong epilogue, partial results that leave the
// honest ones at a random step and follow the rule after, or made-up ones —
// ends at the planted value, is won by the honest party as solver and as
// challenger, refuses a tampered claim, and sends no message of 64 KiB.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/op_util.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"
#include "tests/support/partial_leaves.h"
#include "tests/support/random_values.h"
#include "tests/support/test_seed.h"
#include "verify/certified_sum.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "verify/element_game.h"
#include "verify/element_rules.h"
#include "verify/partials.h"
#include "verify/reduce_rule.h"

namespace vt::verify {
namespace {

using kernels::OpKind;
using kernels::Tensor;

constexpr std::size_t kMaxTx = 64 * 1024;

float RandomValue(std::mt19937_64& rng) { return test::RandomFp32(rng, -8, 4); }

Tensor RandomTensor(std::mt19937_64& rng, kernels::Shape shape, bool positive = false) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = positive ? std::fabs(RandomValue(rng)) : RandomValue(rng);
  return t;
}

std::int64_t Pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

// Class labels: integer values in [0, classes).
Tensor Labels(std::mt19937_64& rng, kernels::Shape shape, std::int64_t classes) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = static_cast<float>(rng() % static_cast<std::uint64_t>(classes));
  return t;
}

struct Node {
  std::string name;
  OpKind kind;
  kernels::OpAttrs attrs;
  std::vector<Tensor> inputs;
  std::vector<std::uint32_t> slots;  // the outputs with the reduction rule
  std::vector<Tensor> outputs;
  // The values the rule covers when not all: attention's att below the
  // diagonal (above it, the mask's +0 is the pointwise rule's).
  std::int64_t causal_t = 0;  // T of att [B, H, T, T]; 0: every value
  bool Covers(std::int64_t e) const { return causal_t == 0 || e % causal_t <= (e / causal_t) % causal_t; }
  kernels::RoundingLog log = {};  // rounded mode: the node's recorded log
};

// Runs each node's operator on its inputs in `mode` (two threads; rounded
// mode recording its log with `rounding`).
void RunNodes(std::vector<Node>& nodes, kernels::Mode mode, kernels::RoundingSpec rounding);

// A random node of each reduction in the table, run in repops mode (two
// threads: the parallel block sums must give the tree's value), or in
// `mode` (rounded: recording its log with `rounding`).
std::vector<Node> RandomNodes(std::mt19937_64& rng, kernels::Mode mode = kernels::Mode::kRepops,
                              kernels::RoundingSpec rounding = {}) {
  const std::int64_t rows = Pick(rng, 1, 300), c = Pick(rng, 1, 40);
  const std::int64_t nb = Pick(rng, 1, 5), ch = Pick(rng, 1, 6), h = Pick(rng, 2, 9), w = Pick(rng, 1, 9);
  const kernels::Shape x4{nb, ch, h, w};
  kernels::Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  kernels::Conv2dParams cp2 = cp;
  cp2.stride_h = cp2.stride_w = 2;
  const kernels::BatchNormParams bp;
  std::vector<Tensor> grads;
  for (std::int64_t i = Pick(rng, 1, 7); i > 0; --i) grads.push_back(RandomTensor(rng, {Pick(rng, 1, 900)}));
  const auto clip_slot = static_cast<std::uint32_t>(grads.size());
  const std::int64_t axis = Pick(rng, 0, 2);
  const std::int64_t classes = Pick(rng, 2, 200), ce_rows = Pick(rng, 1, 30), vocab = Pick(rng, 1, 20);
  const std::int64_t heads = Pick(rng, 1, 3), head_d = Pick(rng, 1, 40), att_t = Pick(rng, 1, 70);
  const std::int64_t back_t = Pick(rng, 1, 12), back_d = Pick(rng, 1, 6);
  // Rows of up to 200 values (several blocks) for the row operators.
  const std::int64_t norm_rows = Pick(rng, 1, 6), width = Pick(rng, 1, 200);
  // Poolings: a random window (padded, strided) and a global one over a
  // 128 × 128 plane, wider than any pointwise/row move may open.
  kernels::Pool2dParams pool;
  pool.kernel_h = Pick(rng, 1, 4);
  pool.kernel_w = Pick(rng, 1, 4);
  pool.stride_h = Pick(rng, 1, 3);
  pool.stride_w = Pick(rng, 1, 3);
  pool.pad_h = pool.kernel_h / 2;
  pool.pad_w = Pick(rng, 0, pool.kernel_w / 2);
  kernels::Pool2dParams global;
  global.kernel_h = global.kernel_w = 128;
  global.stride_h = global.stride_w = 1;
  std::vector<Node> nodes = {
      {"avg_pool2d",
       OpKind::kAvgPool2d,
       kernels::Pool2dAttrs(pool),
       {RandomTensor(rng, {nb, ch, h + pool.kernel_h, w + pool.kernel_w})},
       {0},
       {}},
      {"avg_pool2d global",
       OpKind::kAvgPool2d,
       kernels::Pool2dAttrs(global),
       {RandomTensor(rng, {1, 2, 128, 128})},
       {0},
       {}},
      {"max_pool2d",
       OpKind::kMaxPool2d,
       kernels::Pool2dAttrs(pool),
       {RandomTensor(rng, {nb, ch, h + pool.kernel_h, w + pool.kernel_w})},
       {0},
       {}},
      {"max_pool2d global",
       OpKind::kMaxPool2d,
       kernels::Pool2dAttrs(global),
       {RandomTensor(rng, {1, 2, 128, 128})},
       {0},
       {}},
      {"linear_backward db",
       OpKind::kLinearBackward,
       {},
       {RandomTensor(rng, {rows, c}), RandomTensor(rng, {rows, 3}), RandomTensor(rng, {c, 3})},
       {2},
       {}},
      {"layernorm_backward",
       OpKind::kLayerNormBackward,
       {},
       {RandomTensor(rng, {rows, c}), RandomTensor(rng, {rows, c}), RandomTensor(rng, {c}),
        RandomTensor(rng, {rows}), RandomTensor(rng, {rows}, true)},
       {1, 2},
       {}},
      // dx: the row's two separate TreeSums (g = dy·γ and g·x̂), then the final step.
      {"layernorm_backward dx",
       OpKind::kLayerNormBackward,
       {},
       {RandomTensor(rng, {norm_rows, width}), RandomTensor(rng, {norm_rows, width}),
        RandomTensor(rng, {width}), RandomTensor(rng, {norm_rows}), RandomTensor(rng, {norm_rows}, true)},
       {0},
       {}},
      // The row's mean, and rstd from the squared deviations from the node's own mean.
      {"layernorm",
       OpKind::kLayerNorm,
       kernels::LayerNormAttrs(1e-5f),
       {RandomTensor(rng, {2, norm_rows, width}), RandomTensor(rng, {width}), RandomTensor(rng, {width})},
       {1, 2},
       {}},
      // The row's running max, its TreeSum of Exp(x − max), the quotient.
      {"softmax", OpKind::kSoftmax, {}, {RandomTensor(rng, {norm_rows, width})}, {0}, {}},
      {"softmax_backward",
       OpKind::kSoftmaxBackward,
       {},
       {RandomTensor(rng, {norm_rows, width}), RandomTensor(rng, {norm_rows, width}, true)},
       {0},
       {}},
      // dx (col2im over the taps' dot products) and db.
      {"conv2d_backward",
       OpKind::kConv2dBackward,
       kernels::Conv2dAttrs(cp),
       {RandomTensor(rng, x4), RandomTensor(rng, {nb, 2, h, w}), RandomTensor(rng, {ch, 2, 3, 3})},
       {0, 2},
       {}},
      // Stride 2: a value receives one, two or four taps.
      {"conv2d_backward stride 2",
       OpKind::kConv2dBackward,
       kernels::Conv2dAttrs(cp2),
       {RandomTensor(rng, {nb, ch, (h - 1) / 2 + 1, (w - 1) / 2 + 1}), RandomTensor(rng, {nb, 2, h, w}),
        RandomTensor(rng, {ch, 2, 3, 3})},
       {0},
       {}},
      {"batchnorm2d_backward",
       OpKind::kBatchNorm2dBackward,
       {},
       {RandomTensor(rng, x4), RandomTensor(rng, x4), RandomTensor(rng, {ch}), RandomTensor(rng, {ch}),
        RandomTensor(rng, {ch}, true)},
       {1, 2},
       {}},
      // The batch mean; rstd and the running variance from the squared deviations from it.
      {"batchnorm2d_train",
       OpKind::kBatchNorm2dTrain,
       kernels::BatchNormAttrs(bp),
       {RandomTensor(rng, x4), RandomTensor(rng, {ch}), RandomTensor(rng, {ch}), RandomTensor(rng, {ch}),
        RandomTensor(rng, {ch}, true)},
       {3, 4, 2},
       {}},
      {"clip_grad_norm", OpKind::kClipGradNorm, kernels::ClipGradNormAttrs(1.0f), grads, {clip_slot}, {}},
      {"sum all",
       OpKind::kSum,
       kernels::ReduceAttrs(kernels::kReduceAll),
       {RandomTensor(rng, {rows, c})},
       {0},
       {}},
      {"sum axis", OpKind::kSum, kernels::ReduceAttrs(axis), {RandomTensor(rng, {nb, rows, c})}, {0}, {}},
      {"mean axis", OpKind::kMean, kernels::ReduceAttrs(axis), {RandomTensor(rng, {rows, nb, c})}, {0}, {}},
      // Rows of up to 200 classes: a running max, several blocks of Exp terms, the final step.
      {"cross_entropy_backward",
       OpKind::kCrossEntropyBackward,
       {},
       {RandomTensor(rng, {1}), RandomTensor(rng, {nb, classes}), Labels(rng, {nb}, classes)},
       {0},
       {}},
      // The loss over up to 150 rows (the outer sum past one block): each
      // row's block, its loss gathering x[r, label], the mean.
      {"cross_entropy",
       OpKind::kCrossEntropy,
       {},
       {RandomTensor(rng, {nb, ce_rows, classes}), Labels(rng, {nb, ce_rows}, classes)},
       {0},
       {}},
      // Up to 150 positions over a small table (rows hit several times, or never: +0).
      {"embedding_backward",
       OpKind::kEmbeddingBackward,
       kernels::EmbeddingBackwardAttrs(vocab),
       {RandomTensor(rng, {nb, ce_rows, c}), Labels(rng, {nb, ce_rows}, vocab)},
       {0},
       {}},
      // Scores over up to 70 rows of up to 3 heads of up to 40 values: a dot per row, then the softmax.
      {"attention att",
       OpKind::kAttention,
       kernels::AttentionAttrs(heads),
       {RandomTensor(rng, {nb, att_t, 3 * heads * head_d})},
       {1},
       {},
       att_t},
      // dqkv: dv a T-step dot, dq and dk the dS terms recomputed (rows of up to 12, heads of up to 6).
      {"attention_backward",
       OpKind::kAttentionBackward,
       kernels::AttentionAttrs(heads),
       {RandomTensor(rng, {nb, back_t, heads * back_d}), RandomTensor(rng, {nb, back_t, 3 * heads * back_d}),
        RandomTensor(rng, {nb, heads, back_t, back_t}, true)},
       {0},
       {}},
  };
  RunNodes(nodes, mode, rounding);
  return nodes;
}

// Nodes whose GEMM-based rounded values lean on their β: a convolution
// whose dx sums cancel (output channels in pairs of equal weights and dy
// negated up to an ulp), so |dx| ≪ ‖w‖‖dy‖ and β reaches the u/4 cap;
// attention whose scores nearly cancel, so att's β = att·f exceeds τ·u.
std::vector<Node> SlackNodes(std::mt19937_64& rng, kernels::RoundingSpec rounding) {
  const std::int64_t nb = Pick(rng, 1, 3), ci = Pick(rng, 1, 3), co = 2 * Pick(rng, 1, 3),
                     h = Pick(rng, 2, 7), w = Pick(rng, 2, 7);
  kernels::Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  Tensor dy = RandomTensor(rng, {nb, co, h, w}), weights = RandomTensor(rng, {co, ci, 3, 3});
  const std::int64_t plane = h * w, filter = ci * 9;
  for (std::int64_t c = 1; c < co; c += 2) {
    for (std::int64_t q = 0; q < filter; ++q) weights[c * filter + q] = weights[(c - 1) * filter + q];
    for (std::int64_t n = 0; n < nb; ++n) {
      for (std::int64_t p = 0; p < plane; ++p) {
        const float v = -dy[(n * co + c - 1) * plane + p];
        dy[(n * co + c) * plane + p] = std::nextafter(v, rng() % 2 == 0 ? INFINITY : -INFINITY);
      }
    }
  }
  // Scores of norm ‖q‖‖k‖ ≈ 2^17 that nearly cancel: q pairs (±c, ±c),
  // each k pair (x, −x up to an ulp), so the softmax stays spread out.
  const std::int64_t heads = Pick(rng, 1, 2), d = 2 * Pick(rng, 4, 16), t = Pick(rng, 12, 32), c = heads * d;
  Tensor qkv = RandomTensor(rng, {1, t, 3 * c});
  const float big = static_cast<float>(0x1p17 / static_cast<double>(d));
  for (std::int64_t row = 0; row < t; ++row) {
    for (std::int64_t i = 0; i < c; i += 2) {
      float* q = &qkv[row * 3 * c + i];
      q[0] = q[1] = rng() % 2 == 0 ? big : -big;
      float* k = q + c;
      k[1] = std::nextafter(-k[0], rng() % 2 == 0 ? INFINITY : -INFINITY);
    }
  }
  // The backward's dP = dy·vᵀ cancelling (dy pairs (±c, ±c), each v pair
  // (x, −x·(1 ± 2^-12))), so β_dP, and with it dq's and dk's β, is large
  // beside the values — but not so large that two evaluations' real
  // divergence passes u/4 (docs/kernels.md, "the honest limit": pairs
  // equal up to one ulp get there).
  Tensor grad_dy = RandomTensor(rng, {1, t, c}), grad_qkv = RandomTensor(rng, {1, t, 3 * c});
  for (std::int64_t row = 0; row < t; ++row) {
    for (std::int64_t i = 0; i < c; i += 2) {
      float* g = &grad_dy[row * c + i];
      g[0] = g[1] = rng() % 2 == 0 ? big : -big;
      float* v = &grad_qkv[row * 3 * c + 2 * c + i];
      v[1] = -v[0] * (rng() % 2 == 0 ? 1.0f + 0x1p-12f : 1.0f - 0x1p-12f);
    }
  }
  std::vector<Node> nodes = {
      {"conv2d_backward cancelling",
       OpKind::kConv2dBackward,
       kernels::Conv2dAttrs(cp),
       {dy, RandomTensor(rng, {nb, ci, h, w}), weights},
       {0},
       {}},
      {"attention att cancelling", OpKind::kAttention, kernels::AttentionAttrs(heads), {qkv}, {1}, {}, t},
      {"attention_backward cancelling",
       OpKind::kAttentionBackward,
       kernels::AttentionAttrs(heads),
       {grad_dy, grad_qkv, RandomTensor(rng, {1, heads, t, t}, true)},
       {0},
       {}},
  };
  RunNodes(nodes, kernels::Mode::kRounded, rounding);
  return nodes;
}

void RunNodes(std::vector<Node>& nodes, kernels::Mode mode, kernels::RoundingSpec rounding) {
  kernels::ExecConfig config;
  config.mode = mode;
  config.threads = 2;
  config.rounding = rounding;
  for (Node& n : nodes) {
    std::vector<const Tensor*> in;
    for (const Tensor& t : n.inputs) in.push_back(&t);
    kernels::NodeRounding recording = kernels::NodeRounding::Record(rounding);
    const kernels::OpContext ctx(config, mode == kernels::Mode::kRounded ? &recording : nullptr);
    const Status s = kernels::RunOp(ctx, n.kind, n.attrs, in, n.outputs);
    EXPECT_TRUE(s.ok()) << n.name << ": " << s.ToString();
    n.log = recording.log();
  }
}

std::vector<kernels::Shape> Shapes(const Node& n) {
  std::vector<kernels::Shape> s;
  for (const Tensor& t : n.inputs) s.push_back(t.shape());
  return s;
}

Result<ReduceElement> ElementOf(const Node& n, std::uint32_t slot, std::int64_t e) {
  return ReduceElementAt(static_cast<std::uint16_t>(n.kind), EncodeToBytes(n.attrs), slot, e, Shapes(n));
}

TEST(VerifyReduceRule, EveryValueIsTheKernelsTreeSum) {
  std::mt19937_64 rng(test::TestSeed());
  std::size_t checked = 0, multi_block = 0;
  for (int trial = 0; trial < 8; ++trial) {
    for (const Node& n : RandomNodes(rng)) {
      for (std::uint32_t slot : n.slots) {
        const Tensor& out = n.outputs.at(slot);
        for (std::int64_t e = 0; e < out.numel(); ++e) {
          if (!n.Covers(e)) {
            EXPECT_EQ(ElementOf(n, slot, e).status().reason(), "elem-no-reduce-rule") << n.name;
            continue;
          }
          auto el = ElementOf(n, slot, e);
          ASSERT_TRUE(el.ok()) << n.name << " slot " << slot << ": " << el.status().ToString();
          auto p = ReducePartials(*el, n.inputs, n.outputs);
          ASSERT_TRUE(p.ok()) << n.name << ": " << p.status().ToString();
          ASSERT_EQ(p->size(), el->Steps() + 1);
          ASSERT_TRUE(SameBits(p->front(), +0.0f));
          ASSERT_TRUE(SameBits(ReduceOutput(*el, p->back()), out[e]))
              << n.name << " slot " << slot << " value " << e << ": " << ReduceOutput(*el, p->back()) << " vs "
              << out[e];
          // The walk's premise: every step reads only earlier leaves, and
          // (every fifth value) each leaf is its step from them — what the
          // referee checks where a walk ends.
          const bool every_step = e % 5 == 0;
          for (std::uint64_t leaf = 1; leaf <= el->Steps(); ++leaf) {
            auto st = ReduceStepAt(*el, leaf);
            ASSERT_TRUE(st.ok());
            ASSERT_LT(st->left, leaf);
            // What a step's move may open (referee/messages.h).
            ASSERT_LE(StepReads(*el, *st).size(), kMaxStepReads) << n.name << " leaf " << leaf;
            if (st->reads_right) {
              ASSERT_LT(st->right, leaf);
            }
            if (!every_step) continue;
            auto reads = ReadStep(StepReads(*el, *st), TensorValues(n.inputs, n.outputs));
            ASSERT_TRUE(reads.ok()) << reads.status().ToString();
            std::vector<float> v;
            for (const ReadValue& r : *reads) v.push_back(r.value);
            auto next = StepValue(*el, *st, (*p)[st->left], st->reads_right ? (*p)[st->right] : 0.0f, v);
            ASSERT_TRUE(next.ok()) << next.status().ToString();
            ASSERT_TRUE(SameBits(*next, (*p)[leaf])) << n.name << " value " << e << " leaf " << leaf;
          }
          const bool multi = el->outer != ReduceOuter::kNone
                                 ? el->rows > 64
                                 : std::any_of(el->segments.begin(), el->segments.end(),
                                               [](const ReduceSegment& s) { return s.terms > 64; });
          multi_block += multi ? 1 : 0;
          ++checked;
        }
        EXPECT_EQ(ElementOf(n, slot, out.numel()).status().reason(), "elem-bad-index") << n.name;
      }
    }
  }
  EXPECT_GT(checked, 200u);
  EXPECT_GT(multi_block, 20u) << "values whose sum has more than one block";
  EXPECT_EQ(ReduceElementAt(static_cast<std::uint16_t>(OpKind::kRelu), {}, 0, 0, std::vector<kernels::Shape>{{4}})
                .status()
                .reason(),
            "elem-no-reduce-rule");
  EXPECT_EQ(ReduceElementAt(static_cast<std::uint16_t>(OpKind::kSum), EncodeToBytes(kernels::ReduceAttrs(-1)), 0, 0,
                            std::vector<kernels::Shape>{{3, 0}})
                .status()
                .reason(),
            "elem-no-reduce-rule")
      << "no empty tree";
}

// Rounded mode (ReduceElement::fp64): every value a rounded job plays by
// the reduction rule is, bit for bit, the rounded kernel's — the rule's
// fp64 sum (F64Math steps over the fp32 inputs) rounded by the node's bits,
// or by the recorded log's entry at the value with β = 0 and τ where the
// operator is not exact in fp64 (RoundedReduceEpilogueOf), with the
// kernel's β from the slack's leaves where the sums are vendor dgemm's. No
// value of these nodes is refused.
// The values rounded mode alone describes as reductions
// (RoundedElementAt), named apart from their node's own rule.
std::string RoundedOnlyName(OpKind kind, std::uint32_t slot, std::size_t inputs) {
  if (kind == OpKind::kClipGradNorm && slot < inputs) return " g";
  if ((kind == OpKind::kBatchNorm2dTrain || kind == OpKind::kLayerNorm) && slot == 0) return " y";
  if (kind == OpKind::kBatchNorm2dTrain && slot == 1) return " running_mean";
  if (kind == OpKind::kBatchNorm2dTrain && (slot == 2 || slot == 4)) return " statistics";
  if (kind == OpKind::kBatchNorm2dBackward && slot == 0) return " dx";
  if (kind == OpKind::kAttention && slot == 0) return " y";
  return "";
}

TEST(VerifyReduceRule, EveryRoundedValueIsTheKernelsFp64SumRounded) {
  std::mt19937_64 rng(test::TestSeed() + 11);
  std::size_t checked = 0, logged = 0, refused = 0, with_slack = 0;
  std::set<std::string> played;
  std::map<std::string, std::size_t> by_slack;  // values that needed their β, by node
  for (int trial = 0; trial < 6; ++trial) {
    const kernels::RoundingSpec spec{trial % 2 == 0 ? 32 : 26,
                                     trial < 4 ? kernels::kDefaultTauQ16 : 1u << 13};
    std::vector<Node> nodes = RandomNodes(rng, kernels::Mode::kRounded, spec);
    for (Node& n : SlackNodes(rng, spec)) nodes.push_back(std::move(n));
    for (const Node& n : nodes) {
      std::vector<kernels::Shape> out_shapes;
      for (const Tensor& t : n.outputs) out_shapes.push_back(t.shape());
      // A rounded clip's gradients too: its kernel scales them by its own
      // fp64 norm; a norm's y (and a batch norm's running mean), from its
      // own fp64 statistics; a batch norm backward's dx, from its own fp64
      // dγ and dβ sums. The GEMM-based values (conv2d_backward's dx,
      // attention's att: vendor dgemm here) are the canonical reference's
      // sums, rounded with the kernel's β from the slack's leaves.
      std::vector<std::uint32_t> slots = n.slots;
      if (n.kind == OpKind::kClipGradNorm)
        for (std::uint32_t g = 0; g < n.inputs.size(); ++g) slots.push_back(g);
      if (n.kind == OpKind::kBatchNorm2dTrain) slots.insert(slots.end(), {0, 1});
      if (n.kind == OpKind::kBatchNorm2dBackward || n.kind == OpKind::kLayerNorm ||
          n.kind == OpKind::kAttention)
        slots.push_back(0);
      for (std::uint32_t slot : slots) {
        const Tensor& out = n.outputs.at(slot);
        for (std::int64_t e = 0; e < out.numel(); e += 1 + e % 3) {
          if (!n.Covers(e)) continue;
          auto el =
              ReduceRuleAt(static_cast<std::uint8_t>(kernels::Mode::kRounded),
                           static_cast<std::uint16_t>(n.kind), EncodeToBytes(n.attrs), slot, e, Shapes(n));
          if (!el.ok()) {
            ASSERT_EQ(el.status().reason(), "elem-mode-no-rule") << n.name << " slot " << slot;
            ++refused;
            continue;
          }
          ASSERT_TRUE(el->fp64);
          auto p = ReducePartials<double>(*el, n.inputs, n.outputs);
          ASSERT_TRUE(p.ok()) << n.name << ": " << p.status().ToString();
          ASSERT_EQ(p->size(), el->Steps() + 1);
          const std::uint64_t position = LogPositionOf(out_shapes, slot, e);
          std::optional<bool> entry;
          for (const kernels::LogEntry& le : n.log.entries)
            if (le.position == position) entry = le.up;
          logged += entry ? 1 : 0;
          const RoundedEpilogue how = RoundedReduceEpilogueOf(
              static_cast<std::uint16_t>(n.kind), static_cast<std::uint8_t>(spec.bits), spec.tau_q16, entry);
          auto y = RoundedReduceValue(*el, (*p)[el->ValueSteps()], p->back(), how.spec, how.logged);
          ASSERT_TRUE(y.ok()) << n.name << ": " << y.status().ToString();
          ASSERT_TRUE(SameBits(*y, out[e])) << n.name << " slot " << slot << " value " << e << ": " << *y
                                            << " vs " << out[e] << " (bits " << spec.bits << ")";
          if (el->slack != ReduceSlack::kNone) {
            // Whether the value needed its β: without it the entry is refused or names another value.
            ReduceElement without = *el;
            without.slack = ReduceSlack::kNone;
            auto y0 = RoundedReduceValue(without, (*p)[el->ValueSteps()], 0.0, how.spec, how.logged);
            if (!y0.ok() || !SameBits(*y0, *y))
              ++by_slack[n.name + RoundedOnlyName(n.kind, slot, n.inputs.size())];
            ++with_slack;
          }
          // What a step's move may open (referee/messages.h), on a sample of the values.
          if (checked % 64 == 0) {
            for (std::uint64_t leaf = 1; leaf <= el->Steps(); ++leaf)
              ASSERT_LE(StepReads(*el, ReduceStepAt(*el, leaf).value()).size(), kMaxStepReads) << n.name;
          }
          // The fp32 rule's leaves are not these: the rule refuses to mix them.
          EXPECT_EQ(ReducePartials<float>(*el, n.inputs, n.outputs).status().reason(), "elem-wrong-leaf");
          played.insert(n.name + RoundedOnlyName(n.kind, slot, n.inputs.size()));
          ++checked;
        }
      }
    }
  }
  std::printf(
      "rounded reductions: %zu values checked (%zu logged), %zu refused; played: %zu node kinds; "
      "%zu values with a slack, decided by it: %zu conv2d_backward dx, %zu attention att, %zu attention y, "
      "%zu attention_backward dqkv\n",
      checked, logged, refused, played.size(), with_slack, by_slack["conv2d_backward cancelling"],
      by_slack["attention att cancelling"], by_slack["attention att cancelling y"],
      by_slack["attention_backward cancelling"]);
  EXPECT_GT(checked, 200u);
  EXPECT_EQ(refused, 0u) << "every reduction's values are played in rounded mode";
  for (const char* name : {"linear_backward db",
                           "softmax",
                           "softmax_backward",
                           "cross_entropy",
                           "cross_entropy_backward",
                           "layernorm_backward dx",
                           "sum axis",
                           "avg_pool2d",
                           "max_pool2d",
                           "embedding_backward",
                           "clip_grad_norm",
                           "clip_grad_norm g",
                           "batchnorm2d_backward",
                           "batchnorm2d_train running_mean",
                           "batchnorm2d_backward dx",
                           "batchnorm2d_train y",
                           "batchnorm2d_train statistics",
                           "layernorm",
                           "layernorm y",
                           "conv2d_backward",
                           "conv2d_backward stride 2",
                           "attention att",
                           "conv2d_backward cancelling",
                           "attention att cancelling",
                           "attention att y",
                           "attention att cancelling y",
                           "attention_backward",
                           "attention_backward cancelling"})
    EXPECT_TRUE(played.contains(name)) << name;
  // Where the sums cancel, some values need their β: the slack's leaves are the kernel's β.
  EXPECT_GT(by_slack["conv2d_backward cancelling"], 0u);
  EXPECT_GT(by_slack["attention att cancelling"], 0u);
  EXPECT_GT(by_slack["attention att cancelling y"], 0u);
  EXPECT_GT(by_slack["attention_backward cancelling"], 0u);
}

// Certified mode (verify/certified_sum.h): every value of every reduction
// is, over the certified kernels' outputs, bit for bit, the value the exact
// walk computes — CR of exact
// sums, the kernels' fp32 expressions from their rounded values; each term
// step adds its factors' exact product (factors from an oracle of the
// kernels' terms written apart from the rule), each outer sum adds the row's
// leaf exactly, and every leaf is the kind its step makes (a held value or
// an accumulator state).
// A certified sum's term as the kernels form it (kernels/ops/norm.cpp,
// softmax.cpp, reduce.cpp, linear.cpp, optim.cpp): the two fp32 factors
// whose exact product it is; `max` the row's max.
std::pair<float, float> KernelTermFactors(ReduceTerm term, const std::vector<float>& v, float max) {
  switch (term) {
    case ReduceTerm::kNormProduct:  // dy · x̂
      return {v.at(0), (v.at(1) - v.at(2)) * v.at(3)};
    case ReduceTerm::kSquaredDeviation: {  // d · d
      const float d = v.at(0) - v.at(1);
      return {d, d};
    }
    case ReduceTerm::kSquare:  // g · g
      return {v.at(0), v.at(0)};
    case ReduceTerm::kExpShifted:  // ExpShifted's value
      return {kernels::opsdetail::CertifiedMath::Exp(v.at(0) - max), 1.0f};
    case ReduceTerm::kProduct:  // dy · y
      return {v.at(0), v.at(1)};
    case ReduceTerm::kScaledNormProduct:  // g · x̂, g = dy·γ rounded
      return {v.at(0) * v.at(1), (v.at(2) - v.at(3)) * v.at(4)};
    case ReduceTerm::kRoundedProduct:  // g = dy·γ rounded
      return {v.at(0) * v.at(1), 1.0f};
    case ReduceTerm::kValue:
    case ReduceTerm::kSquaredDeviationFromSum:  // rounded jobs' alone
      break;
  }
  return {v.at(0), 1.0f};
}

// The values a step reads, from the node's tensors.
std::vector<float> StepValues(const ReduceElement& el, const ReduceStep& st, const Node& n) {
  const std::vector<ReadValue> reads = ReadStep(StepReads(el, st), TensorValues(n.inputs, n.outputs)).value();
  std::vector<float> v;
  for (const ReadValue& r : reads) v.push_back(r.value);
  return v;
}

TEST(VerifyReduceRule, CertifiedSumsAreTheExactSumsOfTheSameTerms) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xce55);
  std::set<std::string> covered, refused;
  std::size_t checked = 0, steps = 0;
  for (int trial = 0; trial < 3; ++trial) {
    for (const Node& n : RandomNodes(rng, kernels::Mode::kCertified)) {
      for (std::uint32_t slot : n.slots) {
        const Tensor& out = n.outputs.at(slot);
        // The clip norm's slot is its tensor count.
        const std::string what = n.name + (n.kind == OpKind::kClipGradNorm ? std::string(" norm")
                                                                           : " slot " + std::to_string(slot));
        // Up to ~60 values of each output, from a random start.
        const std::int64_t stride = std::max<std::int64_t>(1, out.numel() / 60);
        for (auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(stride)); e < out.numel();
             e += stride) {
          if (!n.Covers(e)) continue;
          auto el =
              CertifiedSumAt(static_cast<std::uint16_t>(n.kind), EncodeToBytes(n.attrs), slot, e, Shapes(n));
          if (!el.ok()) {
            EXPECT_EQ(el.status().reason(), "elem-no-reduce-rule") << what;  // a value no tap reaches
            refused.insert(what);
            continue;
          }
          ASSERT_TRUE(el->exact);
          covered.insert(what);
          auto p = CertifiedSumPartials(*el, n.inputs, n.outputs);
          ASSERT_TRUE(p.ok()) << what << ": " << p.status().ToString();
          ASSERT_EQ(p->size(), el->Steps() + 1);
          ASSERT_EQ(p->front(), ExactPartial{});
          const std::optional<float> y = CertifiedSumValue(*el, p->back());
          ASSERT_TRUE(y.has_value());
          ASSERT_TRUE(SameBits(*y, out[e])) << what << " value " << e << ": " << *y << " vs " << out[e];
          ++checked;
          if (checked % 5 != 0) continue;
          for (std::uint64_t leaf = 1; leaf <= el->Steps(); ++leaf) {
            const ReduceStep st = ReduceStepAt(*el, leaf).value();
            ASSERT_LT(st.left, leaf);
            const ExactPartial& right = (*p)[st.reads_right ? st.right : 0];
            const bool holds_value = HeldValueOf((*p)[leaf]).has_value();
            ASSERT_NE(holds_value, kernels::ExactAccumulator::FromEncoding((*p)[leaf]).has_value())
                << what << " leaf " << leaf << ": a value or a sum, never both";
            if (st.kind == ReduceStepKind::kTerm) {
              // The term, as the certified kernels form it: p_{j+1} = p_j + a·b exactly.
              const float max = HeldValueOf(right).value_or(0.0f);
              const auto [a, b] =
                  KernelTermFactors(el->segments.at(st.segment).term, StepValues(*el, st, n), max);
              ASSERT_TRUE(CertifiedDotStepHolds((*p)[st.left], a, b, (*p)[leaf]))
                  << what << " value " << e << " leaf " << leaf;
            } else if (st.kind == ReduceStepKind::kCombine) {
              // The outer sum: the row's leaf added exactly.
              kernels::ExactAccumulator want = kernels::ExactAccumulator::FromEncoding((*p)[st.left]).value();
              if (const std::optional<float> x = HeldValueOf(right)) {
                want.Add(*x);
              } else {
                want.Add(kernels::ExactAccumulator::FromEncoding(right).value());
              }
              ASSERT_EQ(want.Encode(), (*p)[leaf]) << what << " leaf " << leaf;
            }
            ++steps;
          }
        }
      }
    }
  }
  // Every output is covered (but the values of a strided convolution's dx that no tap reaches:
  // the pointwise rule's, element_rules_test).
  for (const std::string& w : refused) EXPECT_EQ(w, "conv2d_backward stride 2 slot 0");
  EXPECT_EQ(covered.size(), 29u);
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(steps, 10000u);
  std::printf(
      "[certified sums] %zu values of %zu outputs reproduced, %zu steps checked; %zu outputs refused\n",
      checked, covered.size(), steps, refused.size());
}

// A party's leaves kept as runs (verify/partials.h) are the leaves held
// whole: on random nodes of every reduction output, in all three modes (rounded: fp64 leaves, a β's leaves
// included), with runs of 2, 4 or 8 leaves (the same code GPT-2's walks use with 256), the tree is the same
// tree (root, proofs) and every leaf read back — last to first, so each run is recomputed from its first leaf
// through earlier runs' operand leaves it no longer holds — equals the held one bit for bit.
template <class Leaf>
void ExpectRunsAreTheLeaves(const ReduceElement& el, const Node& n, const std::vector<Leaf>& held,
                            unsigned run_log2, std::mt19937_64& rng, std::size_t& runs_checked) {
  auto kept = Partials<Leaf>::Compute(el, TensorValues(n.inputs, n.outputs), LeafKeeping{0, run_log2});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  ASSERT_EQ(kept->size(), held.size());
  const crypto::MerkleTree whole = PartialsTree(std::span<const Leaf>(held));
  ASSERT_EQ(kept->tree().root(), whole.root());
  const auto same = [](const Leaf& a, const Leaf& b) {
    if constexpr (std::is_same_v<Leaf, float>) {
      return SameBits(a, b);
    } else {
      return a == b;
    }
  };
  const std::uint64_t count = held.size();
  for (int k = 0; k < 8; ++k) {
    const std::uint64_t i = rng() % count;
    ASSERT_EQ(kept->tree().Prove(i), whole.Prove(i)) << "leaf " << i;
  }
  if (count <= 3000) {
    for (std::uint64_t i = count; i-- > 0;)
      ASSERT_TRUE(same((*kept)[i], held[i])) << "leaf " << i << " of " << count;
  } else {
    for (int k = 0; k < 64; ++k) {
      const std::uint64_t i = rng() % count;
      ASSERT_TRUE(same((*kept)[i], held[i])) << "leaf " << i << " of " << count;
    }
  }
  // Read back from more runs than are cached, some leaves were recomputed
  // (unless every leaf read was a run's first or a leaf a later run reads).
  if (count > (std::uint64_t{16} << run_log2) && kept->RecomputedSteps() > 0) ++runs_checked;
}

// Every leaf of `el`'s one pass (ComputeReducePartials, straight through)
// is its step by the rule (ReduceStepAt, StepReads, StepValue) from the
// earlier leaves it names. Returns the leaves.
template <class T>
std::vector<T> ExpectEveryLeafIsItsStep(const ReduceElement& el, const Node& n, const std::string& what) {
  const std::vector<T> p = ReducePartials<T>(el, n.inputs, n.outputs).value();
  EXPECT_EQ(p.size(), el.Steps() + 1) << what;
  for (std::uint64_t leaf = 1; leaf < p.size(); ++leaf) {
    const ReduceStep st = ReduceStepAt(el, leaf).value();
    EXPECT_LT(st.left, leaf);
    if (st.reads_right) {
      EXPECT_LT(st.right, leaf);
    }
    const std::vector<ReadValue> reads =
        ReadStep(StepReads(el, st), TensorValues(n.inputs, n.outputs)).value();
    std::vector<T> v;
    for (const ReadValue& r : reads) v.push_back(r.value);
    const T next = StepValue<T>(el, st, p[st.left], st.reads_right ? p[st.right] : T(0), v).value();
    if (!SameBits(next, p[leaf])) {
      ADD_FAILURE() << what << " leaf " << leaf << " of " << el.Steps() << ": " << next << " vs " << p[leaf];
      break;
    }
  }
  return p;
}

// attention_backward past one block of the fixed tree (T up to 150: r_t's
// TreeSum combines up to three blocks, and dk's rows are found by their
// leaf counts in closed form): dq and dk values of random rows, in repops
// and in rounded mode (its β's leaves after the value's), are the kernel's
// and every leaf is its step.
TEST(VerifyReduceRule, AttentionGradLeavesAreTheirStepsPastOneBlock) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xa77);
  std::size_t values = 0;
  for (const kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded}) {
    const std::int64_t t = Pick(rng, 65, 150), d = Pick(rng, 1, 3);
    std::vector<Node> nodes = {{"attention_backward",
                                OpKind::kAttentionBackward,
                                kernels::AttentionAttrs(1),
                                {RandomTensor(rng, {1, t, d}), RandomTensor(rng, {1, t, 3 * d}),
                                 RandomTensor(rng, {1, 1, t, t}, true)},
                                {0},
                                {}}};
    RunNodes(nodes, mode, kernels::RoundingSpec{32, kernels::kDefaultTauQ16});
    const Node& n = nodes[0];
    for (int k = 0; k < 4; ++k) {
      const std::int64_t row = k < 2 ? Pick(rng, 0, 2) : Pick(rng, 64, t - 1), part = k % 2;
      const std::int64_t e = row * 3 * d + part * d + Pick(rng, 0, d - 1);
      const std::string what = std::string(kernels::ModeName(mode)) + (part == 0 ? " dq" : " dk") + " row " +
                               std::to_string(row) + " of " + std::to_string(t);
      const ReduceElement el =
          ReduceRuleAt(static_cast<std::uint8_t>(mode), static_cast<std::uint16_t>(n.kind),
                       EncodeToBytes(n.attrs), 0, e, Shapes(n))
              .value();
      ASSERT_TRUE(el.attention_grad.has_value());
      if (mode == kernels::Mode::kRounded) {
        EXPECT_EQ(el.slack, ReduceSlack::kAttentionGrad);
        ExpectEveryLeafIsItsStep<double>(el, n, what);
      } else {
        const std::vector<float> p = ExpectEveryLeafIsItsStep<float>(el, n, what);
        EXPECT_TRUE(SameBits(ReduceOutput(el, p.back()), n.outputs[0][e])) << what;
      }
      ++values;
    }
  }
  EXPECT_EQ(values, 8u);
}

TEST(VerifyReduceRule, PartialsKeptAsRunsAreTheLeavesHeldWhole) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x5e1f);
  std::size_t values = 0, runs_checked = 0;
  for (const kernels::Mode mode :
       {kernels::Mode::kRepops, kernels::Mode::kCertified, kernels::Mode::kRounded}) {
    const bool certified = mode == kernels::Mode::kCertified, rounded = mode == kernels::Mode::kRounded;
    for (int trial = 0; trial < 2; ++trial) {
      for (const Node& n : RandomNodes(rng, mode, kernels::RoundingSpec{32, kernels::kDefaultTauQ16})) {
        // Rounded mode: attention's y too (its β's leaves after the value's).
        std::vector<std::uint32_t> slots = n.slots;
        if (rounded && n.kind == OpKind::kAttention) slots.push_back(0);
        for (std::uint32_t slot : slots) {
          const std::int64_t numel = n.outputs.at(slot).numel();
          for (int k = 0; k < 4; ++k) {
            const auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(numel));
            if (!n.Covers(e)) continue;
            auto el = ReduceRuleAt(static_cast<std::uint8_t>(mode), static_cast<std::uint16_t>(n.kind),
                                   EncodeToBytes(n.attrs), slot, e, Shapes(n));
            if (!el.ok()) continue;  // a value no tap reaches
            SCOPED_TRACE(n.name + " slot " + std::to_string(slot) + " value " + std::to_string(e));
            const unsigned run_log2 = 1 + static_cast<unsigned>(rng() % 3);
            if (certified) {
              auto held = CertifiedSumPartials(*el, n.inputs, n.outputs);
              ASSERT_TRUE(held.ok()) << held.status().ToString();
              ExpectRunsAreTheLeaves(*el, n, *held, run_log2, rng, runs_checked);
            } else if (rounded) {
              auto held = ReducePartials<double>(*el, n.inputs, n.outputs);
              ASSERT_TRUE(held.ok()) << held.status().ToString();
              ExpectRunsAreTheLeaves(*el, n, *held, run_log2, rng, runs_checked);
            } else {
              auto held = ReducePartials(*el, n.inputs, n.outputs);
              ASSERT_TRUE(held.ok()) << held.status().ToString();
              ExpectRunsAreTheLeaves(*el, n, *held, run_log2, rng, runs_checked);
            }
            if (::testing::Test::HasFatalFailure()) return;
            ++values;
          }
        }
      }
    }
  }
  EXPECT_GT(values, 150u);
  EXPECT_GT(runs_checked, 60u);
  std::printf("[partials as runs] %zu values, %zu read back through recomputed runs\n", values, runs_checked);
}

// The point of runs: a long walk's party holds a few bytes a run, computes
// its leaves in one pass (a step's operands from an earlier run are kept as
// they are pushed), and one game's moves — the walk's reveals down to the disputed leaf d, leaves d−1
// and d, the final claim's operand leaves, all with proofs — recompute a few
// runs, not the value. A clip norm over 2^18 gradients (GPT-2 small's has
// 1.2·10^8), both modes, default keeping (runs of 256), three games each.
template <class Leaf>
void ExpectAGameRecomputesAFewRuns(const ReduceElement& el, std::span<const Tensor> inputs,
                                   const std::vector<Leaf>& held, std::mt19937_64& rng) {
  const std::uint64_t n = held.size();
  const std::uint64_t run = std::uint64_t{1} << kPartialsKeptFrom;
  for (int game = 0; game < 3; ++game) {
    auto p = Partials<Leaf>::Compute(el, TensorValues(inputs));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ASSERT_GT(n, kPartialsKeptWhole) << "kept as runs";
    EXPECT_LT(p->HeldBytes(), n * sizeof(Leaf) / 8);
    const std::uint64_t recomputed_by_the_pass = p->RecomputedSteps();
    EXPECT_EQ(recomputed_by_the_pass, 0u)
        << "the one pass finds every earlier operand among the leaves it keeps";
    const crypto::MerkleTree& tree = p->tree();
    const std::uint64_t d = 1 + rng() % (n - 1);
    for (unsigned level = tree.shape().height(); level >= 1; --level) {
      const crypto::MerkleNodeId node{level, d >> level};
      if (tree.shape().Kind(node) == crypto::MerkleNodeKind::kPair) (void)tree.Children(node);
    }
    const ReduceStep st = ReduceStepAt(el, d).value();
    for (const std::uint64_t i : {d - 1, d, st.left, st.reads_right ? st.right : 0}) {
      ASSERT_EQ(PartialLeafHash((*p)[i]), PartialLeafHash(held[i])) << "leaf " << i;
      ASSERT_TRUE(crypto::VerifyMerkleProof(tree.root(), PartialLeafHash(held[i]), tree.Prove(i)).ok());
    }
    EXPECT_LE(p->RecomputedSteps() - recomputed_by_the_pass, 8 * run) << "leaf " << d << " of " << n;
  }
}

TEST(VerifyReduceRule, AGameOverALongWalkRecomputesAFewRuns) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x10a9);
  const std::vector<Tensor> grads{RandomTensor(rng, {std::int64_t{1} << 18})};
  const std::vector<kernels::Shape> shapes{grads[0].shape()};
  const Bytes attrs = EncodeToBytes(kernels::ClipGradNormAttrs(1.0f));
  const auto at = [&](kernels::Mode mode) {
    return ReduceRuleAt(static_cast<std::uint8_t>(mode), static_cast<std::uint16_t>(OpKind::kClipGradNorm),
                        attrs, 1, 0, shapes)
        .value();
  };
  const ReduceElement repops = at(kernels::Mode::kRepops), certified = at(kernels::Mode::kCertified);
  ExpectAGameRecomputesAFewRuns(repops, grads, ReducePartials(repops, grads).value(), rng);
  ExpectAGameRecomputesAFewRuns(certified, grads, CertifiedSumPartials(certified, grads).value(), rng);
}

// A certified walk's value leaf holds its fp32 value bit for bit — −0, the
// infinities, NaN payloads, subnormals — in one encoding that no
// accumulator state has, so a sum and a value are never confused.
TEST(VerifyReduceRule, HeldValuesKeepEveryBitAndAreNoSum) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x4e1d);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               INFINITY,
                               -INFINITY,
                               std::bit_cast<float>(0x7fc00001u),
                               std::bit_cast<float>(0xffbfffffu),
                               0x1p-149f,
                               -0x1p-149f,
                               3.5f};
  for (int i = 0; i < 1000; ++i) values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
  for (float v : values) {
    const ExactPartial leaf = HeldValue(v);
    const std::optional<float> back = HeldValueOf(leaf);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(std::bit_cast<std::uint32_t>(*back), std::bit_cast<std::uint32_t>(v));
    EXPECT_FALSE(kernels::ExactAccumulator::FromEncoding(leaf).has_value()) << "a value is no sum";
    ExactPartial other = leaf;
    other[1 + 4 + rng() % (other.size() - 5)] ^= 1;  // a byte past the value's
    EXPECT_FALSE(HeldValueOf(other).has_value()) << "one encoding per value";
  }
  kernels::ExactAccumulator sum;
  sum.Add(-0.0f);
  EXPECT_FALSE(HeldValueOf(sum.Encode()).has_value()) << "a sum is no value";
  EXPECT_NE(HeldValue(-0.0f), HeldValue(0.0f));
}

// An index that is not a row of its table — a loss label that is not a
// class (the logit it would gather does not exist), an embedding_backward
// index past the vocabulary — fails the step as the kernel fails
// ("bad-index"), for a party computing it and for the referee judging it.
TEST(VerifyReduceRule, AnIndexThatIsNotARowFailsLikeTheKernel) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x1a6e1);
  const std::int64_t rows = 3, classes = 70;
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRepops;
  const kernels::OpContext ctx(config);
  for (float label : {70.0f, -1.0f, 2.5f, NAN}) {
    SCOPED_TRACE(label);
    std::vector<Tensor> in = {RandomTensor(rng, {rows, classes}), Labels(rng, {rows}, classes)};
    in[1][1] = label;
    std::vector<Tensor> out;
    const std::vector<const Tensor*> args = {&in[0], &in[1]};
    EXPECT_EQ(kernels::RunOp(ctx, OpKind::kCrossEntropy, {}, args, out).reason(), "bad-index");
    const std::vector<kernels::Shape> shapes = {in[0].shape(), in[1].shape()};
    const ReduceElement el =
        ReduceElementAt(static_cast<std::uint16_t>(OpKind::kCrossEntropy), {}, 0, 0, shapes).value();
    EXPECT_EQ(ReducePartials(el, in).status().reason(), "bad-index");
    // Row 1's final step, judged from an opening of everything before it.
    const ReduceStep st = ReduceStepAt(el, 2 * el.BlockSteps()).value();
    ASSERT_EQ(st.kind, ReduceStepKind::kFinal);
    ASSERT_EQ(st.row, 1);
    EXPECT_EQ(ReadStep(StepReads(el, st), TensorValues(in)).status().reason(), "bad-index");

    // embedding_backward: the bad index at position 1 of 3, over a table of 70 rows.
    std::vector<Tensor> emb = {RandomTensor(rng, {rows, 4}), in[1]};
    const kernels::OpAttrs attrs = kernels::EmbeddingBackwardAttrs(classes);
    const std::vector<const Tensor*> emb_args = {&emb[0], &emb[1]};
    EXPECT_EQ(kernels::RunOp(ctx, OpKind::kEmbeddingBackward, attrs, emb_args, out).reason(), "bad-index");
    const std::vector<kernels::Shape> emb_shapes = {emb[0].shape(), emb[1].shape()};
    const ReduceElement scan = ReduceElementAt(static_cast<std::uint16_t>(OpKind::kEmbeddingBackward),
                                               EncodeToBytes(attrs), 0, 5, emb_shapes)
                                   .value();
    EXPECT_EQ(ReducePartials(scan, emb).status().reason(), "bad-index");
    const ReduceStep at1 = ReduceStepAt(scan, 2).value();
    ASSERT_EQ(at1.kind, ReduceStepKind::kScan);
    std::vector<float> v;
    const std::vector<ReadValue> reads = ReadStep(StepReads(scan, at1), TensorValues(emb)).value();
    for (const ReadValue& r : reads) v.push_back(r.value);
    EXPECT_EQ(StepValue(scan, at1, 0.0f, 0.0f, v).status().reason(), "bad-index");
  }
}

// ---- the game -------------------------------------------------------------------------

std::size_t SizeOf(const crypto::MerkleProof& p) { return EncodeToBytes(p).size(); }
std::size_t SizeOf(const kernels::ChunkOpening& o) { return o.values.size() * 4 + 32 + SizeOf(o.proof); }
std::size_t SizeOf(const ReduceStepClaim& c) {
  std::size_t s = 8 + 4 * 4 + SizeOf(c.left_proof) + SizeOf(c.right_proof) + SizeOf(c.next_proof[0]) +
                  SizeOf(c.next_proof[1]);
  for (const ValueOpening& r : c.reads) s += SizeOf(r.chunk);
  return s;
}

// Each step of `p` from `from` on recomputed by the rule from p's own earlier leaves.
void FollowTheRule(const ReduceElement& el, const Node& n, std::vector<float>& p, std::uint64_t from) {
  for (std::uint64_t leaf = from; leaf < p.size(); ++leaf) {
    const ReduceStep st = ReduceStepAt(el, leaf).value();
    std::vector<float> v;
    const std::vector<ReadValue> reads =
        ReadStep(StepReads(el, st), TensorValues(n.inputs, n.outputs)).value();
    for (const ReadValue& r : reads) v.push_back(r.value);
    p[leaf] = StepValue(el, st, p[st.left], p[st.right], v).value();
  }
}

struct Side {
  Tensor out;
  std::vector<float> partials;
  crypto::MerkleTree tree;
};

TEST(VerifyReduceRule, APlantedCheatIsCaughtAtItsValueAndTheHonestPartyWins) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x5e1);
  std::size_t games = 0, max_message = 0, step_games = 0;
  for (int trial = 0; trial < 5; ++trial) {
    for (const Node& n : RandomNodes(rng)) {
      const std::uint32_t slot = n.slots[rng() % n.slots.size()];
      const Tensor& honest_out = n.outputs[slot];
      auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(honest_out.numel()));
      while (!n.Covers(e)) e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(honest_out.numel()));
      const ReduceElement el = ElementOf(n, slot, e).value();
      const std::vector<float> hp = ReducePartials(el, n.inputs, n.outputs).value();
      // The liar's partial results and value.
      std::vector<float> lp = hp;
      Tensor liar_out = honest_out;
      const std::uint64_t from = 1 + rng() % el.Steps();
      switch (rng() % 3) {
        case 0:  // honest sums, a wrong epilogue
          break;
        case 1:
          lp[from] = std::nextafter(lp[from], rng() % 2 ? INFINITY : -INFINITY);
          FollowTheRule(el, n, lp, from + 1);
          break;
        default:
          for (std::uint64_t m = from; m < lp.size(); ++m) lp[m] = RandomValue(rng);
          break;
      }
      liar_out[e] = ReduceOutput(el, lp.back());
      if (SameBits(liar_out[e], honest_out[e])) liar_out[e] = std::nextafter(liar_out[e], INFINITY);
      const Side honest{honest_out, hp, PartialsTree(hp)};
      const Side liar{liar_out, lp, PartialsTree(lp)};
      std::vector<InputTensor> inputs, own;  // own: the node's agreed outputs (batch-norm's mean)
      for (const Tensor& t : n.inputs) inputs.push_back({t.Hash(), t.shape(), std::nullopt});
      for (const Tensor& t : n.outputs) own.push_back({t.Hash(), t.shape(), std::nullopt});

      for (bool honest_is_a : {true, false}) {
        const Side& a = honest_is_a ? honest : liar;
        const Side& b = honest_is_a ? liar : honest;
        // Level 4.
        const auto ta = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(a.out.values(), 1));
        const auto tb = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(b.out.values(), 1));
        auto walk = crypto::MerkleWalk::Start(ta.leaf_count(), ta.root(), tb.root());
        ASSERT_TRUE(walk.ok());
        while (walk->phase() != crypto::MerkleWalk::Phase::kDone) {
          ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kA, ta).ok());
          ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kB, tb).ok());
        }
        const auto chunk = static_cast<std::int64_t>(walk->disputed_leaf());
        const auto ca = kernels::OpenChunk(a.out, chunk, 1), cb = kernels::OpenChunk(b.out, chunk, 1);
        max_message = std::max({max_message, SizeOf(ca), SizeOf(cb)});
        auto at = DisputedValue(a.out.shape(), chunk, a.out.Hash(), ca, b.out.Hash(), cb);
        ASSERT_TRUE(at.ok()) << at.status().ToString();
        ASSERT_EQ(*at, e) << n.name << ": the walk ends at the planted value";
        // Posting the partials roots: both ends check out for both (leaf 0 = +0, the last leaf the posted sum).
        const std::uint64_t k = el.Steps();
        for (const Side* s : {&a, &b})
          ASSERT_TRUE(
              CheckPartialsEnds(s->tree.root(), k, s->partials.back(), s->tree.Prove(0), s->tree.Prove(k)).ok());
        StepVerdict v;
        if (a.tree.root() == b.tree.root()) {
          v = JudgeReduceEpilogue(el, a.partials.back(), a.out[e], b.out[e]);
        } else {
          auto w5 = crypto::MerkleWalk::Start(a.tree.leaf_count(), a.tree.root(), b.tree.root());
          ASSERT_TRUE(w5.ok());
          while (w5->phase() != crypto::MerkleWalk::Phase::kDone) {
            ASSERT_TRUE(crypto::RespondHonestly(*w5, crypto::MerkleWalk::Party::kA, a.tree).ok());
            ASSERT_TRUE(crypto::RespondHonestly(*w5, crypto::MerkleWalk::Party::kB, b.tree).ok());
          }
          const std::uint64_t m = w5->disputed_leaf() - 1;
          const ReduceStep st = ReduceStepAt(el, m + 1).value();
          ReduceStepClaim claim;
          claim.m = m;
          claim.left = a.partials[st.left];
          claim.left_proof = a.tree.Prove(st.left);
          if (st.reads_right) {
            claim.right = a.partials[st.right];
            claim.right_proof = a.tree.Prove(st.right);
          }
          const std::vector<ReadValue> reads =
              ReadStep(StepReads(el, st), TensorValues(n.inputs, n.outputs)).value();
          for (const ReadValue& r : reads)
            claim.reads.push_back(OpenValue(
                r.input >= kOwnOutput ? n.outputs[r.input - kOwnOutput] : n.inputs[r.input], r.index));
          claim.next = {a.partials[m + 1], b.partials[m + 1]};
          claim.next_proof = {a.tree.Prove(m + 1), b.tree.Prove(m + 1)};
          max_message = std::max(max_message, SizeOf(claim));
          const std::array<Hash256, 2> roots{a.tree.root(), b.tree.root()};
          auto verdict = JudgeReduceStepClaim(el, inputs, roots, claim, nullptr, own);
          ASSERT_TRUE(verdict.ok()) << n.name << ": " << verdict.status().ToString();
          v = *verdict;
          ++step_games;
          // Tampered claims are refused, never judged.
          ReduceStepClaim bad = claim;
          bad.next[1] = std::nextafter(bad.next[1], INFINITY);
          EXPECT_EQ(JudgeReduceStepClaim(el, inputs, roots, bad, nullptr, own).status().reason(),
                    "elem-bad-step");
          bad = claim;
          bad.left = std::nextafter(bad.left, INFINITY);
          EXPECT_EQ(JudgeReduceStepClaim(el, inputs, roots, bad, nullptr, own).status().reason(),
                    "elem-bad-step");
          bad = claim;
          bad.m = k;
          EXPECT_EQ(JudgeReduceStepClaim(el, inputs, roots, bad, nullptr, own).status().reason(),
                    "elem-bad-step");
          if (!claim.reads.empty()) {
            bad = claim;
            const std::int64_t index = reads[0].index;
            bad.reads[0].chunk.values[static_cast<std::size_t>(index % kernels::kChunkValues)] += 1.0f;
            EXPECT_FALSE(JudgeReduceStepClaim(el, inputs, roots, bad, nullptr, own).ok())
                << "a forged term value";
            bad.reads.pop_back();
            EXPECT_EQ(JudgeReduceStepClaim(el, inputs, roots, bad, nullptr, own).status().reason(),
                      "elem-bad-step");
          }
        }
        EXPECT_FALSE(v.a_right && v.b_right);
        EXPECT_TRUE(honest_is_a ? (v.a_right && !v.b_right) : (v.b_right && !v.a_right))
            << n.name << " trial " << trial << (honest_is_a ? " (honest solver)" : " (honest challenger)");
        ++games;
      }
    }
  }
  EXPECT_EQ(games, 2u * 5u * RandomNodes(rng).size());
  EXPECT_GT(step_games, games / 3);
  EXPECT_LT(max_message, kMaxTx);
  RecordProperty("max_message_bytes", static_cast<int>(max_message));
}

// The certified sums' game at level 5b (verify/certified_sum.h): a liar
// whose value is wrong posts honest exact sums (the epilogue decides),
// sums nudged by a random exact amount at a random step and following the
// rule after, or sums made up from there; the walk over the exact prefix
// sums ends at the leftmost differing one, the claim's verdict is the
// honest party's as A and as B, tampered claims are refused, and every
// claim stays far below 64 KiB.
// Rounded mode's games over fp64 sums: for a random value of every
// reduction the mode plays (a clip's gradients included), a liar whose sums
// leave the rule one fp64 ulp off at a random step (then follow it), or
// whose sums are honest but whose value is not — the walk's step
// (JudgeReduceStepClaim<double>) or the epilogue
// (JudgeRoundedReduceEpilogue) rules for the honest party, as A or as B.
TEST(VerifyReduceRule, RoundedSumGamesAreWonByTheHonestParty) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x40d);
  const kernels::RoundingSpec spec{32, kernels::kDefaultTauQ16};
  const auto rounded = static_cast<std::uint8_t>(kernels::Mode::kRounded);
  std::size_t games = 0, steps = 0;
  for (int trial = 0; trial < 3; ++trial) {
    for (const Node& n : RandomNodes(rng, kernels::Mode::kRounded, spec)) {
      std::vector<std::uint32_t> slots = n.slots;
      if (n.kind == OpKind::kClipGradNorm) slots = {static_cast<std::uint32_t>(rng() % n.inputs.size())};
      // Rounded mode's alone: a norm's y, a batch norm's running mean, its backward's dx, attention's y.
      if (n.kind == OpKind::kBatchNorm2dTrain) slots.insert(slots.end(), {0, 1});
      if (n.kind == OpKind::kBatchNorm2dBackward || n.kind == OpKind::kLayerNorm ||
          n.kind == OpKind::kAttention)
        slots.push_back(0);
      const std::uint32_t slot = slots[rng() % slots.size()];
      const Tensor& out = n.outputs[slot];
      const auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel()));
      auto el = ReduceRuleAt(rounded, static_cast<std::uint16_t>(n.kind), EncodeToBytes(n.attrs), slot, e,
                             Shapes(n));
      if (!el.ok()) continue;  // refused in rounded mode (EveryRoundedValueIsTheKernelsFp64SumRounded)
      const std::vector<double> hp = ReducePartials<double>(*el, n.inputs, n.outputs).value();
      std::vector<double> lp = hp;
      const bool bend = rng() % 2 == 0;
      if (bend) {
        const std::uint64_t from = 1 + rng() % el->Steps();
        lp[from] = std::nextafter(lp[from], INFINITY);
        const ValueAt values = TensorValues(n.inputs, n.outputs);
        for (std::uint64_t m = from + 1; m < lp.size(); ++m) lp[m] = test::FollowRule(*el, lp, m, values);
      }
      const float honest_y = out[e], liar_y = std::nextafter(honest_y, INFINITY);
      const crypto::MerkleTree ht = PartialsTree(hp), lt = PartialsTree(lp);
      std::vector<InputTensor> inputs, own;
      for (const Tensor& t : n.inputs) inputs.push_back({t.Hash(), t.shape(), std::nullopt});
      for (const Tensor& t : n.outputs) own.push_back({t.Hash(), t.shape(), std::nullopt});
      for (const bool honest_is_a : {true, false}) {
        const std::vector<double>& pa = honest_is_a ? hp : lp;
        const crypto::MerkleTree& ta = honest_is_a ? ht : lt;
        const crypto::MerkleTree& tb = honest_is_a ? lt : ht;
        const std::vector<double>& pb = honest_is_a ? lp : hp;
        StepVerdict v;
        if (ta.root() == tb.root()) {
          v = JudgeRoundedReduceEpilogue(*el, pa[el->ValueSteps()], pa.back(), spec, std::nullopt,
                                         honest_is_a ? honest_y : liar_y, honest_is_a ? liar_y : honest_y)
                  .value();
        } else {
          std::uint64_t m = 0;  // the leftmost difference, as the walk finds it
          while (SameBits(pa[m + 1], pb[m + 1])) ++m;
          const ReduceStep st = ReduceStepAt(*el, m + 1).value();
          RoundedReduceStepClaim claim;
          claim.m = m;
          claim.left = pa[st.left];
          claim.left_proof = ta.Prove(st.left);
          if (st.reads_right) {
            claim.right = pa[st.right];
            claim.right_proof = ta.Prove(st.right);
          }
          const std::vector<ReadValue> reads =
              ReadStep(StepReads(*el, st), TensorValues(n.inputs, n.outputs)).value();
          for (const ReadValue& r : reads)
            claim.reads.push_back(OpenValue(
                r.input >= kOwnOutput ? n.outputs[r.input - kOwnOutput] : n.inputs[r.input], r.index));
          claim.next = {pa[m + 1], pb[m + 1]};
          claim.next_proof = {ta.Prove(m + 1), tb.Prove(m + 1)};
          auto verdict = JudgeReduceStepClaim(*el, inputs, {ta.root(), tb.root()}, claim, nullptr, own);
          ASSERT_TRUE(verdict.ok()) << n.name << ": " << verdict.status().ToString();
          v = *verdict;
          ++steps;
          // fp32 leaves are not this sum's.
          ReduceStepClaim fp32;
          fp32.m = m;
          EXPECT_EQ(
              JudgeReduceStepClaim(*el, inputs, {ta.root(), tb.root()}, fp32, nullptr, own).status().reason(),
              "elem-wrong-leaf");
        }
        EXPECT_TRUE(honest_is_a ? (v.a_right && !v.b_right) : (v.b_right && !v.a_right))
            << n.name << " slot " << slot << " value " << e << (bend ? " (bent sums)" : " (honest sums)");
        ++games;
      }
    }
  }
  std::printf("rounded sum games: %zu, %zu decided at a step\n", games, steps);
  EXPECT_GT(games, 60u);
  EXPECT_GT(steps, 10u);
}

TEST(VerifyReduceRule, CertifiedSumGamesAreWonByTheHonestParty) {
  using Exact = test::PartialLeaves<ExactPartial>;
  std::mt19937_64 rng(test::TestSeed() ^ 0x5c5);
  std::size_t games = 0, step_games = 0, max_claim = 0;
  for (int trial = 0; trial < 3; ++trial) {
    for (const Node& n : RandomNodes(rng, kernels::Mode::kCertified)) {
      for (std::uint32_t slot : n.slots) {
        const Tensor& out = n.outputs.at(slot);
        const auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel()));
        auto el =
            CertifiedSumAt(static_cast<std::uint16_t>(n.kind), EncodeToBytes(n.attrs), slot, e, Shapes(n));
        if (!el.ok()) continue;
        const std::vector<ExactPartial> hp = CertifiedSumPartials(*el, n.inputs, n.outputs).value();
        const std::uint64_t k = hp.size() - 1;
        std::vector<ExactPartial> lp = hp;
        const std::uint64_t from = 1 + rng() % k;
        const int kind = static_cast<int>(rng() % 3);
        if (kind == 1) {
          lp[from] = Exact::Nudge(lp[from], RandomValue(rng));
          for (std::uint64_t m = from + 1; m <= k; ++m)
            lp[m] = test::FollowRule(*el, lp, m, TensorValues(n.inputs, n.outputs));
        } else if (kind == 2) {
          for (std::uint64_t m = from; m <= k; ++m) lp[m] = Exact::MadeUp(RandomValue(rng));
        }
        float y_honest = out[e], y_liar = CertifiedSumValue(*el, lp.back()).value_or(y_honest);
        if (SameBits(y_liar, y_honest)) y_liar = std::nextafter(y_liar, INFINITY);
        const crypto::MerkleTree ht = PartialsTree(hp), lt = PartialsTree(lp);
        std::vector<InputTensor> inputs, own;
        for (const Tensor& t : n.inputs) inputs.push_back({t.Hash(), t.shape(), std::nullopt});
        for (const Tensor& t : n.outputs) own.push_back({t.Hash(), t.shape(), std::nullopt});
        SCOPED_TRACE(n.name + " slot " + std::to_string(slot) + " value " + std::to_string(e) + " lie " +
                     std::to_string(kind));
        for (bool honest_is_a : {true, false}) {
          const crypto::MerkleTree& ta = honest_is_a ? ht : lt;
          const crypto::MerkleTree& tb = honest_is_a ? lt : ht;
          const std::vector<ExactPartial>& pa = honest_is_a ? hp : lp;
          const std::vector<ExactPartial>& pb = honest_is_a ? lp : hp;
          for (const auto* side : {&ta, &tb})
            ASSERT_TRUE(CheckPartialsEnds(side->root(), k, (side == &ta ? pa : pb).back(), side->Prove(0),
                                          side->Prove(k))
                            .ok());
          StepVerdict v;
          if (ta.root() == tb.root()) {
            v = JudgeCertifiedSumEpilogue(*el, pa.back(), honest_is_a ? y_honest : y_liar,
                                          honest_is_a ? y_liar : y_honest);
          } else {
            auto walk = crypto::MerkleWalk::Start(ta.leaf_count(), ta.root(), tb.root());
            ASSERT_TRUE(walk.ok());
            while (walk->phase() != crypto::MerkleWalk::Phase::kDone) {
              ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kA, ta).ok());
              ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kB, tb).ok());
            }
            const std::uint64_t m = walk->disputed_leaf() - 1;
            std::uint64_t leftmost = 0;
            while (pa[leftmost] == pb[leftmost]) ++leftmost;
            ASSERT_EQ(m + 1, leftmost) << "the walk ends at the leftmost differing sum";
            const ReduceStep st = ReduceStepAt(*el, m + 1).value();
            CertifiedSumStepClaim claim;
            claim.m = m;
            claim.left = pa[st.left];
            claim.left_proof = ta.Prove(st.left);
            if (st.reads_right) claim.right.emplace(pa[st.right], ta.Prove(st.right));
            claim.next = {pa[m + 1], pb[m + 1]};
            claim.next_proof = {ta.Prove(m + 1), tb.Prove(m + 1)};
            const std::vector<ReadValue> reads =
                ReadStep(StepReads(*el, st), TensorValues(n.inputs, n.outputs)).value();
            for (const ReadValue& r : reads)
              claim.reads.push_back(OpenValue(
                  r.input >= kOwnOutput ? n.outputs[r.input - kOwnOutput] : n.inputs[r.input], r.index));
            std::size_t size = 8 + 4 * sizeof(ExactPartial) + SizeOf(claim.left_proof) +
                               SizeOf(claim.next_proof[0]) + SizeOf(claim.next_proof[1]) +
                               (claim.right ? SizeOf(claim.right->second) : 0);
            for (const ValueOpening& o : claim.reads) size += SizeOf(o.chunk);
            max_claim = std::max(max_claim, size);
            const std::array<Hash256, 2> roots{ta.root(), tb.root()};
            auto verdict = JudgeCertifiedSumStepClaim(*el, inputs, roots, claim, nullptr, own);
            ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
            v = *verdict;
            ++step_games;
            CertifiedSumStepClaim bad = claim;
            bad.next[1] = Exact::Nudge(bad.next[1], 1.0f);
            EXPECT_EQ(JudgeCertifiedSumStepClaim(*el, inputs, roots, bad, nullptr, own).status().reason(),
                      "elem-bad-step");
            bad = claim;
            bad.m = k;
            EXPECT_EQ(JudgeCertifiedSumStepClaim(*el, inputs, roots, bad, nullptr, own).status().reason(),
                      "elem-bad-step");
            if (!claim.reads.empty()) {
              bad = claim;
              bad.reads.pop_back();
              EXPECT_EQ(JudgeCertifiedSumStepClaim(*el, inputs, roots, bad, nullptr, own).status().reason(),
                        "elem-bad-step");
            }
            // A second operand leaf where the step reads none, or none where it reads one.
            bad = claim;
            if (bad.right) {
              bad.right.reset();
            } else {
              bad.right.emplace(pa[0], ta.Prove(0));
            }
            EXPECT_EQ(JudgeCertifiedSumStepClaim(*el, inputs, roots, bad, nullptr, own).status().reason(),
                      "elem-bad-step");
          }
          EXPECT_EQ(v.a_right, honest_is_a);
          EXPECT_EQ(v.b_right, !honest_is_a);
          ++games;
        }
      }
    }
  }
  EXPECT_GT(games, 40u);
  EXPECT_GT(step_games, 20u);
  EXPECT_LT(max_claim, kMaxTx);
  std::printf("[certified sum games] %zu (%zu at a step), largest claim %zu B\n", games, step_games,
              max_claim);
}

}  // namespace
}  // namespace vt::verify
