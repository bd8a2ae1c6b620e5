// A party's element-level answers (worker/element_answers.h) played against
// each other on random repops linear layers: the honest party answers from
// the op's outputs, the cheater from outputs with one value planted wrong
// and the partial sums that cheat needs. Level 4 walks the two chunk trees
// (crypto::MerkleWalk) and names the disputed value from the two revealed
// chunks; level 5b walks the two partials trees and the claim assembled
// from both reveals is judged by PredictDotStep — the referee's own
// verify::JudgeDotStepClaim. Properties: the disputed value is the planted
// one, the honest party wins whether it is the solver (root A) or the
// challenger (root B), a tampered claim is refused, no message over 64 KiB.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/arith_hd.h"
#include "kernels/certified.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor_codec.h"
#include "tests/support/partial_leaves.h"
#include "tests/support/test_seed.h"
#include "tests/worker/element_test_util.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "worker/dispute.h"
#include "worker/element_answers.h"

namespace vt::worker {
namespace {

using crypto::MerkleWalk;
using WalkParty = crypto::MerkleWalk::Party;

using element_test::kMaxTx;
using element_test::RandomTensor;
using element_test::RandomValue;
using element_test::SizeOf;
constexpr element_test::ExponentRange kValues{-12, 6};  // operands' exponents

// An honest side of a random linear (which = 0) or linear_backward (1, 2)
// node, and the output slot in dispute.
struct Node {
  ElementSide side;
  std::uint32_t slot = 0;
};

Node RandomNode(std::mt19937_64& rng, int which, kernels::Mode mode = kernels::Mode::kRepops) {
  const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 40);
  const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % 300);
  const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 40);
  kernels::ExecConfig config;
  config.mode = mode;
  const kernels::OpContext ctx(config);
  Node node;
  const kernels::OpKind kind = which == 0 ? kernels::OpKind::kLinear : kernels::OpKind::kLinearBackward;
  node.side.op_kind = static_cast<std::uint16_t>(kind);
  node.slot = which == 2 ? 1 : 0;
  if (which == 0)
    node.side.inputs = {RandomTensor(rng, kValues, {rows, k}), RandomTensor(rng, kValues, {n, k}),
                        RandomTensor(rng, kValues, {n})};
  else
    node.side.inputs = {RandomTensor(rng, kValues, {rows, n}), RandomTensor(rng, kValues, {rows, k}),
                        RandomTensor(rng, kValues, {n, k})};
  std::vector<const kernels::Tensor*> in;
  for (const kernels::Tensor& t : node.side.inputs) in.push_back(&t);
  EXPECT_TRUE(kernels::RunOp(ctx, kind, {}, in, node.side.outputs).ok());
  return node;
}

// The cheater: value e of the disputed output planted wrong, with the
// partial sums its lie needs (kind 0: honest sums, an ulp off in the
// epilogue; 1: sums leave the honest ones at a random step and follow the
// rule after; 2: sums made up from a random step on).
template <class Leaf>
struct Cheat {
  ElementSide side;
  std::int64_t e = 0;
  PartialsAnswerFor<Leaf> partials;
};

// Per leaf type: the job's mode and the leaf rules (tests/support/partial_leaves.h),
// and the honest answer in that mode.
template <class Leaf>
struct Leaves : test::PartialLeaves<Leaf> {
  static Result<PartialsAnswerFor<Leaf>> Answer(const ElementSide& s, std::uint32_t slot, std::int64_t e) {
    VT_ASSIGN_OR_RETURN(DotPartialsAnswer a,
                        AnswerDotPartials(static_cast<std::uint8_t>(Leaves::kMode), s, slot, e));
    return std::get<PartialsAnswerFor<Leaf>>(std::move(a));
  }
};

template <class Leaf>
Cheat<Leaf> PlantCheat(std::mt19937_64& rng, const Node& honest) {
  using L = Leaves<Leaf>;
  Cheat<Leaf> c{honest.side, 0, {}};
  kernels::Tensor& out = c.side.outputs[honest.slot];
  c.e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel()));
  auto hp = L::Answer(honest.side, honest.slot, c.e);
  EXPECT_TRUE(hp.ok()) << hp.status().ToString();
  const verify::DotElement& el = hp->element;
  std::vector<Leaf> lp = hp->partials.All();
  const std::size_t from = 1 + rng() % static_cast<std::size_t>(el.k);
  switch (rng() % 3) {
    case 0:
      out[c.e] = std::nextafter(out[c.e], INFINITY);
      break;
    case 1:
      lp[from] = L::Nudge(lp[from], RandomValue(rng, kValues));
      for (std::size_t m = from + 1; m < lp.size(); ++m) {
        const auto mi = static_cast<std::int64_t>(m - 1);
        lp[m] = L::Step(lp[m - 1], c.side.inputs[el.a_input][el.AIndex(mi)],
                        c.side.inputs[el.b_input][el.BIndex(mi)]);
      }
      out[c.e] = L::Value(lp.back(), hp->bias);
      break;
    default:
      for (std::size_t m = from; m < lp.size(); ++m) lp[m] = L::MadeUp(RandomValue(rng, kValues));
      out[c.e] = L::Value(lp.back(), hp->bias);
      break;
  }
  if (verify::SameBits(out[c.e], honest.side.outputs[honest.slot][c.e]))  // the lie happened to be the truth
    out[c.e] = std::nextafter(out[c.e], -INFINITY);
  c.partials = PartialsAnswerOf(el, std::move(lp), hp->bias);
  return c;
}

struct Outcome {
  bool honest_won = false;
  std::int64_t disputed = -1;
  std::size_t max_message = 0;
};

// Plays levels 4 and 5b with the honest party as A (the solver's side) or as
// B (the challenger's), every move from the worker's answer functions.
template <class Leaf>
Outcome Play(const Node& honest, const Cheat<Leaf>& cheat, bool honest_is_a) {
  using L = Leaves<Leaf>;
  Outcome o;
  const ElementSide& a_side = honest_is_a ? honest.side : cheat.side;
  const ElementSide& b_side = honest_is_a ? cheat.side : honest.side;
  const std::uint32_t slot = honest.slot;
  const kernels::Shape& shape = honest.side.outputs[slot].shape();
  const Hash256 ha = a_side.outputs[slot].Hash(), hb = b_side.outputs[slot].Hash();
  auto ta = OutputChunkTree(a_side, slot), tb = OutputChunkTree(b_side, slot);
  EXPECT_TRUE(ta.ok() && tb.ok());
  EXPECT_EQ(kernels::TensorHashFromRoot(shape, ta->root()), ha) << "a chunk root posts against its output hash";
  auto walk = MerkleWalk::Start(ta->leaf_count(), ta->root(), tb->root());
  EXPECT_TRUE(walk.ok()) << walk.status().ToString();
  while (walk->phase() != MerkleWalk::Phase::kDone) {
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kA, *ta).ok());
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kB, *tb).ok());
  }
  const auto chunk = static_cast<std::int64_t>(walk->disputed_leaf());
  auto ca = AnswerChunk(a_side, slot, chunk), cb = AnswerChunk(b_side, slot, chunk);
  EXPECT_TRUE(ca.ok() && cb.ok());
  o.max_message = std::max({o.max_message, SizeOf(*ca), SizeOf(*cb)});
  auto e = verify::DisputedValue(shape, chunk, ha, *ca, hb, *cb);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return o;
  o.disputed = *e;

  auto honest_partials = L::Answer(honest.side, slot, *e);
  EXPECT_TRUE(honest_partials.ok());
  const PartialsAnswerFor<Leaf>& pa = honest_is_a ? *honest_partials : cheat.partials;
  const PartialsAnswerFor<Leaf>& pb = honest_is_a ? cheat.partials : *honest_partials;
  const auto k = static_cast<std::uint64_t>(pa.element.k);
  const float ya = a_side.outputs[slot][*e], yb = b_side.outputs[slot][*e];
  // Posting: the ends must hold against the party's own value (p_K with the
  // epilogue is its y[e]); a party whose ends fail has no valid post.
  const auto posts = [&](const PartialsAnswerFor<Leaf>& p, float y) {
    return verify::CheckPartialsEnds(p.partials.tree().root(), k, p.partials.back(), p.first, p.last).ok() &&
           verify::PartialLeafKind<Leaf>::Encode(p.partials[0]) ==
               verify::PartialLeafKind<Leaf>::Encode(verify::PartialLeafKind<Leaf>::Start()) &&
           verify::SameBits(L::Value(p.partials.back(), p.bias), y);
  };
  EXPECT_TRUE(posts(*honest_partials, honest.side.outputs[slot][*e])) << "the honest party can always post";
  const bool a_posts = posts(pa, ya), b_posts = posts(pb, yb);
  if (!a_posts || !b_posts) {
    o.honest_won = honest_is_a ? (a_posts && !b_posts) : (b_posts && !a_posts);
    return o;
  }
  verify::StepVerdict v;
  if (pa.partials.tree().root() == pb.partials.tree().root()) {
    v = PredictEpilogue(pa, ya, yb).value();
  } else {
    auto w5 = MerkleWalk::Start(pa.partials.tree().leaf_count(), pa.partials.tree().root(),
                                pb.partials.tree().root());
    EXPECT_TRUE(w5.ok());
    while (w5->phase() != MerkleWalk::Phase::kDone) {
      EXPECT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kA, pa.partials.tree()).ok());
      EXPECT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kB, pb.partials.tree()).ok());
    }
    const std::uint64_t m = w5->disputed_leaf() - 1;
    const verify::DotStepClaimOf<Leaf> claim =
        AssembleDotStepClaim(m, AnswerStepReveal(pa, m), AnswerStepReveal(pb, m),
                             AnswerFactors(honest.side, pa.element, m).value());
    o.max_message = std::max(o.max_message, SizeOf(claim));
    const std::array<Hash256, 2> roots{pa.partials.tree().root(), pb.partials.tree().root()};
    auto verdict = PredictDotStep(honest.side, pa.element, roots, claim);
    EXPECT_TRUE(verdict.ok()) << verdict.status().ToString();
    if (!verdict.ok()) return o;
    v = *verdict;

    // A tampered claim is refused, never judged.
    verify::DotStepClaimOf<Leaf> bad = claim;
    bad.next[1] = bad.next[0];  // A's leaf m+1, not B's (they differ)
    EXPECT_EQ(PredictDotStep(honest.side, pa.element, roots, bad).status().reason(), "elem-bad-step");
    bad = claim;
    bad.a.chunk.values[static_cast<std::size_t>(pa.element.AIndex(static_cast<std::int64_t>(m)) %
                                                kernels::kChunkValues)] += 1.0f;
    EXPECT_FALSE(PredictDotStep(honest.side, pa.element, roots, bad).ok()) << "a forged factor";
    bad = claim;
    bad.m = k;
    EXPECT_EQ(PredictDotStep(honest.side, pa.element, roots, bad).status().reason(), "elem-bad-step");
  }
  EXPECT_FALSE(v.a_right && v.b_right);
  o.honest_won = honest_is_a ? (v.a_right && !v.b_right) : (v.b_right && !v.a_right);
  return o;
}

template <class Leaf>
void PlayGames() {
  std::mt19937_64 rng(test::TestSeed());
  std::size_t games = 0, max_message = 0;
  for (int trial = 0; trial < 90; ++trial) {
    const Node honest = RandomNode(rng, trial % 3, Leaves<Leaf>::kMode);
    const Cheat<Leaf> cheat = PlantCheat<Leaf>(rng, honest);
    for (bool honest_is_a : {true, false}) {  // a cheating solver; a lying challenger
      const Outcome o = Play(honest, cheat, honest_is_a);
      EXPECT_EQ(o.disputed, cheat.e) << "the walk ends at the planted value";
      EXPECT_TRUE(o.honest_won) << "trial " << trial << (honest_is_a ? " (honest solver)" : " (honest challenger)");
      max_message = std::max(max_message, o.max_message);
      ++games;
    }
  }
  EXPECT_EQ(games, 180u);
  EXPECT_LT(max_message, kMaxTx);
  ::testing::Test::RecordProperty("max_message_bytes", static_cast<int>(max_message));
  std::printf("[games] %zu, largest message %zu B\n", games, max_message);
}

TEST(WorkerElementAnswers, TheHonestPartyWinsAtThePlantedValueAsSolverAndAsChallenger) { PlayGames<float>(); }

// Certified mode: the same games with the answers over exact partial sums.
TEST(WorkerElementAnswers, CertifiedAnswersWinTheSameGames) { PlayGames<verify::ExactPartial>(); }

TEST(WorkerElementAnswers, NodesWithoutADotRuleAreRefused) {
  std::mt19937_64 rng(test::TestSeed());
  Node node = RandomNode(rng, 0);
  EXPECT_EQ(AnswerPartials<float>(node.side, 1, 0).status().reason(), "elem-no-dot-rule");
  node.side.op_kind = static_cast<std::uint16_t>(kernels::OpKind::kRelu);
  EXPECT_EQ(AnswerPartials<float>(node.side, 0, 0).status().reason(), "elem-no-dot-rule");
  EXPECT_EQ(AnswerChunk(node.side, 5, 0).status().reason(), "elem-bad-slot");
  EXPECT_EQ(AnswerChunk(node.side, 0, 1 << 20).status().reason(), "elem-bad-chunk");
}

}  // namespace
}  // namespace vt::worker
