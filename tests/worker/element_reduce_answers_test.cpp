// A party's answers for the reduction rule (worker/element_answers.h:
// AnswerReducePartials … PredictReduceStep) played against each other on
// random repops reduction nodes — linear_backward's db, layernorm_backward's
// dγ and dβ, clip_grad_norm's norm over several gradients, batch-norm's rstd
// and running variance (reading the node's own mean), conv2d_backward's dx
// (a kernel tap's dot product per row): the honest party
// answers from the op's outputs, the cheater from outputs with one value
// planted wrong and the partial results that lie needs. Level 4 walks the
// two chunk trees, level 5b the two partials trees; the claim assembled from
// the worker's answers is judged by PredictReduceStep — the referee's own
// verify::JudgeReduceStepClaim. Properties: the disputed value is the
// planted one, the honest party wins as solver (root A) and as challenger
// (root B), no message reaches 64 KiB. Certified mode plays the same
// games over the exact prefix sums of the reductions that are one sum
// (AnswerCertifiedSum … the same overloads, verify/certified_sum.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "tests/support/partial_leaves.h"
#include "tests/support/test_seed.h"
#include "tests/worker/element_test_util.h"
#include "verify/certified_sum.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "verify/reduce_rule.h"
#include "worker/element_answers.h"

namespace vt::worker {
namespace {

using crypto::MerkleWalk;
using WalkParty = crypto::MerkleWalk::Party;

using element_test::kMaxTx;
using element_test::RandomTensor;
using element_test::RandomValue;
using element_test::SizeOf;
constexpr element_test::ExponentRange kValues{-8, 4};  // operands' exponents

struct Node {
  ElementSide side;
  Bytes attrs;
  std::uint32_t slot = 0;
};

// which: 0 linear_backward db, 1 layernorm_backward dγ, 2 its dβ, 3 clip_grad_norm's norm,
// 4 batchnorm2d_train's rstd, 5 its running variance (both read its own mean),
// 6 conv2d_backward's dx, 7 layernorm's rstd (reading its own mean), 8
// cross_entropy_backward's dlogits (a row's max, its sum of exponentials, a
// final step reading the label), 9 layernorm_backward's dx (two sums kept
// apart, a final step), 10 attention_backward's dqkv (dq and dk recompute
// their dS terms). The outputs are the op's in `mode`.
Node RandomNode(std::mt19937_64& rng, int which, kernels::Mode mode = kernels::Mode::kRepops) {
  const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 400), c = 1 + static_cast<std::int64_t>(rng() % 30);
  Node node;
  kernels::OpKind kind = kernels::OpKind::kLinearBackward;
  kernels::OpAttrs attrs;
  switch (which) {
    case 0:
      node.side.inputs = {RandomTensor(rng, kValues, {rows, c}), RandomTensor(rng, kValues, {rows, 2}),
                          RandomTensor(rng, kValues, {c, 2})};
      node.slot = 2;
      break;
    case 1:
    case 2:
      kind = kernels::OpKind::kLayerNormBackward;
      node.side.inputs = {RandomTensor(rng, kValues, {rows, c}), RandomTensor(rng, kValues, {rows, c}),
                          RandomTensor(rng, kValues, {c}), RandomTensor(rng, kValues, {rows}),
                          RandomTensor(rng, kValues, {rows}, true)};
      node.slot = which == 1 ? 1 : 2;
      break;
    case 4:
    case 5: {  // batch-norm's rstd and running variance: squared deviations from its own mean
      kind = kernels::OpKind::kBatchNorm2dTrain;
      attrs = kernels::BatchNormAttrs(kernels::BatchNormParams{});
      const kernels::Shape x{1 + rows % 4, c % 5 + 1, 2 + rows % 7, 1 + c % 6};
      const kernels::Shape ch{x[1]};
      node.side.inputs = {RandomTensor(rng, kValues, x), RandomTensor(rng, kValues, ch),
                          RandomTensor(rng, kValues, ch), RandomTensor(rng, kValues, ch),
                          RandomTensor(rng, kValues, ch, true)};
      node.slot = which == 4 ? 4 : 2;
      break;
    }
    case 6: {  // conv2d_backward's dx: col2im over its taps' dot products
      kind = kernels::OpKind::kConv2dBackward;
      kernels::Conv2dParams p;
      p.stride_h = p.stride_w = 1 + static_cast<std::int64_t>(rng() % 2);
      p.pad_h = p.pad_w = 1;
      attrs = kernels::Conv2dAttrs(p);
      const std::int64_t n = 1 + rows % 3, ci = 1 + c % 3, co = 1 + rows % 40, h = 3 + c % 6,
                         w = 3 + rows % 6;
      node.side.inputs = {
          RandomTensor(rng, kValues, {n, co, (h - 1) / p.stride_h + 1, (w - 1) / p.stride_w + 1}),
          RandomTensor(rng, kValues, {n, ci, h, w}), RandomTensor(rng, kValues, {co, ci, 3, 3})};
      node.slot = 0;
      break;
    }
    case 7:
      kind = kernels::OpKind::kLayerNorm;
      attrs = kernels::LayerNormAttrs(1e-5f);
      node.side.inputs = {RandomTensor(rng, kValues, {rows, c}), RandomTensor(rng, kValues, {c}),
                          RandomTensor(rng, kValues, {c})};
      node.slot = 2;
      break;
    case 8: {
      kind = kernels::OpKind::kCrossEntropyBackward;
      const std::int64_t classes = 1 + c * 3, batch = 1 + rows % 9;
      kernels::Tensor labels({batch});
      for (float& v : labels.values()) v = static_cast<float>(rng() % static_cast<std::uint64_t>(classes));
      node.side.inputs = {RandomTensor(rng, kValues, {1}), RandomTensor(rng, kValues, {batch, classes}),
                          std::move(labels)};
      node.slot = 0;
      break;
    }
    case 9:
      kind = kernels::OpKind::kLayerNormBackward;
      node.side.inputs = {RandomTensor(rng, kValues, {1 + rows % 5, c * 4}),
                          RandomTensor(rng, kValues, {1 + rows % 5, c * 4}),
                          RandomTensor(rng, kValues, {c * 4}), RandomTensor(rng, kValues, {1 + rows % 5}),
                          RandomTensor(rng, kValues, {1 + rows % 5}, true)};
      node.slot = 0;
      break;
    case 10: {
      kind = kernels::OpKind::kAttentionBackward;
      const std::int64_t heads = 1 + rows % 2, d = 1 + c % 4, t = 1 + rows % 6, b = 1 + c % 2;
      attrs = kernels::AttentionAttrs(heads);
      node.side.inputs = {RandomTensor(rng, kValues, {b, t, heads * d}),
                          RandomTensor(rng, kValues, {b, t, 3 * heads * d}),
                          RandomTensor(rng, kValues, {b, heads, t, t}, true)};
      node.slot = 0;
      break;
    }
    default:
      kind = kernels::OpKind::kClipGradNorm;
      attrs = kernels::ClipGradNormAttrs(1.0f);
      for (std::uint64_t i = 1 + rng() % 6; i > 0; --i)
        node.side.inputs.push_back(RandomTensor(rng, kValues, {1 + static_cast<std::int64_t>(rng() % 3000)}));
      node.slot = static_cast<std::uint32_t>(node.side.inputs.size());
      break;
  }
  node.side.op_kind = static_cast<std::uint16_t>(kind);
  node.attrs = EncodeToBytes(attrs);
  kernels::ExecConfig config;
  config.mode = mode;
  config.threads = 2;
  const kernels::OpContext ctx(config);
  std::vector<const kernels::Tensor*> in;
  for (const kernels::Tensor& t : node.side.inputs) in.push_back(&t);
  EXPECT_TRUE(kernels::RunOp(ctx, kind, attrs, in, node.side.outputs).ok());
  return node;
}

std::size_t SizeOf(const verify::ReduceStepClaim& c) {
  std::size_t s = 8 + 4 * 4 + SizeOf(c.left_proof) + SizeOf(c.right_proof) + SizeOf(c.next_proof[0]) +
                  SizeOf(c.next_proof[1]);
  for (const verify::ValueOpening& r : c.reads) s += SizeOf(r.chunk);
  return s;
}

std::size_t SizeOf(const verify::CertifiedSumStepClaim& c) {
  std::size_t s = 8 + 3 * sizeof(verify::ExactPartial) + SizeOf(c.left_proof) + SizeOf(c.next_proof[0]) +
                  SizeOf(c.next_proof[1]) +
                  (c.right ? sizeof(verify::ExactPartial) + SizeOf(c.right->second) : 0);
  for (const verify::ValueOpening& r : c.reads) s += SizeOf(r.chunk);
  return s;
}

// The rule a mode plays, by its leaves: repops the fixed tree's fp32
// results, certified a sum's exact prefix sums.
template <class Leaf>
struct Rule;
template <>
struct Rule<float> {
  static Result<ReducePartialsAnswer> Answer(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                             std::int64_t e, verify::LeafKeeping keeping = {}) {
    return AnswerReducePartials(side, attrs, slot, e, keeping);
  }
  static float Value(const verify::ReduceElement& el, float p) { return verify::ReduceOutput(el, p); }
};
template <>
struct Rule<verify::ExactPartial> {
  static Result<CertifiedSumAnswer> Answer(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                           std::int64_t e, verify::LeafKeeping keeping = {}) {
    return AnswerCertifiedSum(side, attrs, slot, e, keeping);
  }
  static float Value(const verify::ReduceElement& el, const verify::ExactPartial& p) {
    return verify::CertifiedSumValue(el, p).value_or(NAN);
  }
};

// The cheater: value e planted wrong, with partial results that are the
// honest ones (a wrong epilogue), or leave them at a random leaf (made up from there).
template <class Leaf>
struct Cheat {
  ElementSide side;
  std::int64_t e = 0;
  ReducePartialsAnswerFor<Leaf> partials;
};

template <class Leaf>
Cheat<Leaf> PlantCheat(std::mt19937_64& rng, const Node& honest) {
  Cheat<Leaf> c{honest.side, 0, {}};
  kernels::Tensor& out = c.side.outputs[honest.slot];
  c.e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel()));
  auto hp = Rule<Leaf>::Answer(honest.side, honest.attrs, honest.slot, c.e);
  EXPECT_TRUE(hp.ok()) << hp.status().ToString();
  std::vector<Leaf> lp = hp->partials.All();
  if (rng() % 3 != 0) {
    for (std::size_t m = 1 + rng() % (lp.size() - 1); m < lp.size(); ++m)
      lp[m] = test::PartialLeaves<Leaf>::MadeUp(RandomValue(rng, kValues));
  }
  out[c.e] = Rule<Leaf>::Value(hp->element, lp.back());
  if (verify::SameBits(out[c.e], honest.side.outputs[honest.slot][c.e])) out[c.e] = std::nextafter(out[c.e], INFINITY);
  c.partials = ReducePartialsAnswerOf(hp->element, std::move(lp));
  return c;
}

struct Outcome {
  bool honest_won = false;
  std::int64_t disputed = -1;
  std::size_t max_message = 0;
};

template <class Leaf>
Outcome Play(const Node& honest, const Cheat<Leaf>& cheat, bool honest_is_a, verify::LeafKeeping keeping) {
  Outcome o;
  const ElementSide& a_side = honest_is_a ? honest.side : cheat.side;
  const ElementSide& b_side = honest_is_a ? cheat.side : honest.side;
  const std::uint32_t slot = honest.slot;
  const kernels::Shape& shape = honest.side.outputs[slot].shape();
  auto ta = OutputChunkTree(a_side, slot), tb = OutputChunkTree(b_side, slot);
  EXPECT_TRUE(ta.ok() && tb.ok());
  auto walk = MerkleWalk::Start(ta->leaf_count(), ta->root(), tb->root());
  EXPECT_TRUE(walk.ok());
  while (walk->phase() != MerkleWalk::Phase::kDone) {
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kA, *ta).ok());
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kB, *tb).ok());
  }
  const auto chunk = static_cast<std::int64_t>(walk->disputed_leaf());
  auto ca = AnswerChunk(a_side, slot, chunk), cb = AnswerChunk(b_side, slot, chunk);
  EXPECT_TRUE(ca.ok() && cb.ok());
  o.max_message = std::max({o.max_message, SizeOf(*ca), SizeOf(*cb)});
  auto e = verify::DisputedValue(shape, chunk, a_side.outputs[slot].Hash(), *ca, b_side.outputs[slot].Hash(), *cb);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return o;
  o.disputed = *e;

  auto honest_partials = Rule<Leaf>::Answer(honest.side, honest.attrs, slot, *e, keeping);
  EXPECT_TRUE(honest_partials.ok());
  const ReducePartialsAnswerFor<Leaf>& pa = honest_is_a ? *honest_partials : cheat.partials;
  const ReducePartialsAnswerFor<Leaf>& pb = honest_is_a ? cheat.partials : *honest_partials;
  const std::uint64_t k = pa.element.Steps();
  for (const ReducePartialsAnswerFor<Leaf>* p : {&pa, &pb})
    EXPECT_TRUE(
        verify::CheckPartialsEnds(p->partials.tree().root(), k, p->partials.back(), p->first, p->last).ok());
  verify::StepVerdict v;
  if (pa.partials.tree().root() == pb.partials.tree().root()) {
    v = PredictReduceEpilogue(pa, a_side.outputs[slot][*e], b_side.outputs[slot][*e]);
  } else {
    auto w5 = MerkleWalk::Start(pa.partials.tree().leaf_count(), pa.partials.tree().root(),
                                pb.partials.tree().root());
    EXPECT_TRUE(w5.ok());
    while (w5->phase() != MerkleWalk::Phase::kDone) {
      EXPECT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kA, pa.partials.tree()).ok());
      EXPECT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kB, pb.partials.tree()).ok());
    }
    const std::uint64_t m = w5->disputed_leaf() - 1;
    auto operands = AnswerReduceOperands(a_side, pa, m);
    EXPECT_TRUE(operands.ok()) << operands.status().ToString();
    if (!operands.ok()) return o;
    const auto claim =
        AssembleReduceStepClaim(m, *operands, AnswerReduceReveal(pa, m), AnswerReduceReveal(pb, m));
    o.max_message = std::max(o.max_message, SizeOf(claim));
    const std::array<Hash256, 2> roots{pa.partials.tree().root(), pb.partials.tree().root()};
    auto verdict = PredictReduceStep(honest.side, pa.element, roots, claim);
    EXPECT_TRUE(verdict.ok()) << verdict.status().ToString();
    if (!verdict.ok()) return o;
    v = *verdict;
    auto bad = claim;
    bad.next[0] = test::PartialLeaves<Leaf>::Nudge(bad.next[0], -1.0f);
    EXPECT_EQ(PredictReduceStep(honest.side, pa.element, roots, bad).status().reason(), "elem-bad-step");
  }
  EXPECT_FALSE(v.a_right && v.b_right);
  o.honest_won = honest_is_a ? (v.a_right && !v.b_right) : (v.b_right && !v.a_right);
  return o;
}

// Plays `trials` cheats on the nodes `kinds` draws, in the mode of `Leaf`;
// returns the games played and the largest message.
template <class Leaf>
std::pair<std::size_t, std::size_t> PlayCheats(std::mt19937_64& rng, std::span<const int> kinds, int trials) {
  std::size_t games = 0, max_message = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const Node honest = RandomNode(rng, kinds[static_cast<std::size_t>(trial) % kinds.size()],
                                   test::PartialLeaves<Leaf>::kMode);
    const Cheat<Leaf> cheat = PlantCheat<Leaf>(rng, honest);
    // Every other trial, the honest party keeps its leaves as runs of 2–8
    // (verify/partials.h) and recomputes what each move asks for.
    const verify::LeafKeeping keeping =
        trial % 2 == 0 ? verify::LeafKeeping{}
                       : verify::LeafKeeping{0, 1 + static_cast<unsigned>(trial / 2 % 3)};
    for (bool honest_is_a : {true, false}) {
      const Outcome o = Play(honest, cheat, honest_is_a, keeping);
      EXPECT_EQ(o.disputed, cheat.e) << "the walk ends at the planted value";
      EXPECT_TRUE(o.honest_won) << "trial " << trial << (honest_is_a ? " (honest solver)" : " (honest challenger)");
      max_message = std::max(max_message, o.max_message);
      ++games;
    }
  }
  return {games, max_message};
}

TEST(WorkerElementReduceAnswers, TheHonestPartyWinsAtThePlantedValueAsSolverAndAsChallenger) {
  std::mt19937_64 rng(test::TestSeed());
  constexpr int kKinds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto [games, max_message] = PlayCheats<float>(rng, kKinds, 55);
  EXPECT_EQ(games, 110u);
  EXPECT_LT(max_message, kMaxTx);
  std::printf("largest message: %zu B\n", max_message);
}

// Certified mode: every kind over exact sums — db, dγ, dβ, the clip norm,
// the norms' rstd (a sum of squared deviations from the node's own mean),
// batch-norm's running variance (a final step after the sum), col2im's taps
// (an outer sum of exact dots), cross-entropy's dlogits and
// layernorm_backward's dx (held values beside the sums), attention_backward's
// dqkv (exact dots, held dS values, an exact GEMM element).
TEST(WorkerElementReduceAnswers, CertifiedSumsAreWonByTheHonestPartyToo) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xce);
  constexpr int kKinds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto [games, max_message] = PlayCheats<verify::ExactPartial>(rng, kKinds, 44);
  EXPECT_EQ(games, 88u);
  EXPECT_LT(max_message, kMaxTx);
  std::printf("certified: largest message: %zu B\n", max_message);
}

TEST(WorkerElementReduceAnswers, OutputsWithoutAReductionRuleAreRefused) {
  std::mt19937_64 rng(test::TestSeed());
  const Node node = RandomNode(rng, 0);
  EXPECT_EQ(AnswerReducePartials(node.side, node.attrs, 0, 0).status().reason(), "elem-no-reduce-rule");
  EXPECT_EQ(AnswerReducePartials(node.side, node.attrs, 2, node.side.outputs[2].numel()).status().reason(),
            "elem-bad-index");
}

}  // namespace
}  // namespace vt::worker
