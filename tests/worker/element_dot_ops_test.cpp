// The dot rule beyond linear (verify::DotElementAt with attributes): conv2d's
// y (im2col order, padding taps are +0 factors that are never opened),
// conv2d_backward's dW (sequential over image and position) and matmul's c
// (transposed and batched operands). Every value of random repops nodes is
// reproduced bit for bit from its factors' partial sums and the epilogue;
// then games played with only the worker's answers (worker/element_answers.h)
// — a value planted wrong with honest sums and a wrong epilogue, sums that
// leave the honest ones at a random step and follow the rule, or made-up
// sums — end at the planted value and are won by the honest party as solver
// and as challenger, every message under 64 KiB. In certified mode every
// value is the exact dot product of the same factors, rounded once.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/arith_hd.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/registry.h"
#include "tests/support/test_seed.h"
#include "tests/worker/element_test_util.h"
#include "verify/descent.h"
#include "verify/element.h"
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

std::int64_t Pick(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

struct Node {
  std::string name;
  ElementSide side;
  std::uint32_t slot = 0;
};

// which: 0 conv2d (with or without bias), 1 conv2d_backward dW, 2 matmul, 3 attention's y.
Node RandomNode(std::mt19937_64& rng, int which, kernels::Mode mode = kernels::Mode::kRepops) {
  Node node;
  kernels::OpKind kind = kernels::OpKind::kConv2d;
  kernels::OpAttrs attrs;
  if (which <= 1) {
    const std::int64_t nb = Pick(rng, 1, 3), ci = Pick(rng, 1, 4), co = Pick(rng, 1, 5);
    const std::int64_t kh = Pick(rng, 1, 3), kw = Pick(rng, 1, 3);
    kernels::Conv2dParams p;
    p.stride_h = Pick(rng, 1, 2);
    p.stride_w = Pick(rng, 1, 2);
    p.pad_h = Pick(rng, 0, 2);
    p.pad_w = Pick(rng, 0, 2);
    const std::int64_t h = Pick(rng, std::max<std::int64_t>(1, kh - 2 * p.pad_h), 9);
    const std::int64_t w = Pick(rng, std::max<std::int64_t>(1, kw - 2 * p.pad_w), 9);
    const std::int64_t oh = (h + 2 * p.pad_h - kh) / p.stride_h + 1, ow = (w + 2 * p.pad_w - kw) / p.stride_w + 1;
    attrs = kernels::Conv2dAttrs(p);
    const kernels::Tensor x = RandomTensor(rng, kValues, {nb, ci, h, w}),
                          wt = RandomTensor(rng, kValues, {co, ci, kh, kw});
    if (which == 0) {
      node.name = "conv2d";
      node.side.inputs = {x, wt};
      if (rng() % 2 != 0) node.side.inputs.push_back(RandomTensor(rng, kValues, {co}));
    } else {
      node.name = "conv2d_backward dw";
      kind = kernels::OpKind::kConv2dBackward;
      node.side.inputs = {RandomTensor(rng, kValues, {nb, co, oh, ow}), x, wt};
      node.slot = 1;
    }
  } else if (which == 3) {
    node.name = "attention y";
    kind = kernels::OpKind::kAttention;
    const std::int64_t heads = Pick(rng, 1, 4), d = Pick(rng, 1, 16), t = Pick(rng, 1, 40);
    attrs = kernels::AttentionAttrs(heads);
    node.side.inputs = {RandomTensor(rng, kValues, {Pick(rng, 1, 2), t, 3 * heads * d})};
  } else {
    node.name = "matmul";
    kind = kernels::OpKind::kMatMul;
    const bool ta = rng() % 2 != 0, tb = rng() % 2 != 0, shared_b = rng() % 2 != 0;
    const std::int64_t batch = Pick(rng, 1, 3), m = Pick(rng, 1, 20), k = Pick(rng, 1, 150), n = Pick(rng, 1, 20);
    attrs = kernels::MatMulAttrs(ta, tb);
    kernels::Shape a = ta ? kernels::Shape{batch, k, m} : kernels::Shape{batch, m, k};
    kernels::Shape b = tb ? kernels::Shape{n, k} : kernels::Shape{k, n};
    if (!shared_b) b.insert(b.begin(), batch);
    node.side.inputs = {RandomTensor(rng, kValues, a), RandomTensor(rng, kValues, b)};
  }
  node.side.op_kind = static_cast<std::uint16_t>(kind);
  node.side.attrs = EncodeToBytes(attrs);
  kernels::ExecConfig config;
  config.mode = mode;
  config.threads = 2;
  const kernels::OpContext ctx(config);
  std::vector<const kernels::Tensor*> in;
  for (const kernels::Tensor& t : node.side.inputs) in.push_back(&t);
  const Status s = kernels::RunOp(ctx, kind, attrs, in, node.side.outputs);
  EXPECT_TRUE(s.ok()) << node.name << ": " << s.ToString();
  return node;
}

TEST(WorkerElementDotOps, EveryValueIsTheKernelsDot) {
  std::mt19937_64 rng(test::TestSeed());
  std::size_t checked = 0, padding_taps = 0;
  for (int trial = 0; trial < 32; ++trial) {
    const Node node = RandomNode(rng, trial % 4);
    const kernels::Tensor& out = node.side.outputs.at(node.slot);
    for (std::int64_t e = 0; e < out.numel(); ++e) {
      auto p = AnswerPartials<float>(node.side, node.slot, e);
      ASSERT_TRUE(p.ok()) << node.name << ": " << p.status().ToString();
      ASSERT_TRUE(verify::SameBits(verify::RepopsLinearValue(p->partials.back(), p->bias), out[e]))
          << node.name << " value " << e;
      for (std::int64_t m = 0; m < p->element.k; ++m) padding_taps += p->element.BIndex(m) < 0 ? 1 : 0;
      ++checked;
    }
    auto shapes = std::vector<kernels::Shape>();
    for (const kernels::Tensor& t : node.side.inputs) shapes.push_back(t.shape());
    EXPECT_EQ(verify::DotElementAt(node.side.op_kind, node.side.attrs, node.slot, out.numel(), shapes)
                  .status()
                  .reason(),
              "elem-bad-index");
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(padding_taps, 100u) << "conv2d values whose taps fall in the padding";
}

// The same elements (factor positions, padding taps, bias) in certified
// mode: CR(Σ exactly + bias) over the certified kernels' outputs, bit for
// bit, through the exact partial sums the descent commits.
TEST(WorkerElementDotOps, EveryCertifiedValueIsTheExactDotOfTheSameFactors) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xce7);
  std::size_t checked = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const Node node = RandomNode(rng, trial % 4, kernels::Mode::kCertified);
    const kernels::Tensor& out = node.side.outputs.at(node.slot);
    for (std::int64_t e = 0; e < out.numel(); e += 1 + static_cast<std::int64_t>(rng() % 3)) {
      auto p = AnswerPartials<float>(node.side, node.slot, e);
      ASSERT_TRUE(p.ok()) << node.name << ": " << p.status().ToString();
      std::vector<float> a, b;
      for (std::int64_t m = 0; m < p->element.k; ++m) {
        const auto [am, bm] = FactorValues(node.side, p->element, static_cast<std::uint64_t>(m));
        a.push_back(am);
        b.push_back(bm);
      }
      const std::vector<verify::ExactPartial> exact = verify::CertifiedDotPartials(a, b);
      ASSERT_TRUE(verify::SameBits(verify::CertifiedLinearValue(exact.back(), p->bias).value(), out[e]))
          << node.name << " value " << e;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300u);
}

TEST(WorkerElementDotOps, TheHonestPartyWinsAtThePlantedValue) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xd07);
  std::size_t games = 0, step_games = 0, max_message = 0;
  for (int trial = 0; trial < 48; ++trial) {
    const Node honest = RandomNode(rng, trial % 4);
    ElementSide liar = honest.side;
    kernels::Tensor& lout = liar.outputs[honest.slot];
    const auto e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(lout.numel()));
    const PartialsAnswer hp = AnswerPartials<float>(honest.side, honest.slot, e).value();
    const verify::DotElement& el = hp.element;
    std::vector<float> lp = hp.partials.All();
    const std::size_t from = 1 + rng() % static_cast<std::size_t>(el.k);
    // A factor of the liar's side: an input, or the node's own agreed output (attention's att).
    const auto factor = [&](std::uint32_t input, std::int64_t i) {
      const kernels::Tensor& t =
          input >= verify::kOwnOutput ? liar.outputs.at(input - verify::kOwnOutput) : liar.inputs.at(input);
      return i < 0 ? +0.0f : t[i];
    };
    switch (rng() % 3) {
      case 0:
        lout[e] = std::nextafter(lout[e], INFINITY);
        break;
      case 1:
        lp[from] = std::nextafter(lp[from], rng() % 2 ? INFINITY : -INFINITY);
        for (std::size_t m = from + 1; m < lp.size(); ++m) {
          const auto mi = static_cast<std::int64_t>(m - 1);
          lp[m] = kernels::hd::RepopsStep(lp[m - 1], factor(el.a_input, el.AIndex(mi)), factor(el.b_input, el.BIndex(mi)));
        }
        lout[e] = verify::RepopsLinearValue(lp.back(), hp.bias);
        break;
      default:
        for (std::size_t m = from; m < lp.size(); ++m) lp[m] = RandomValue(rng, kValues);
        lout[e] = verify::RepopsLinearValue(lp.back(), hp.bias);
        break;
    }
    if (verify::SameBits(lout[e], honest.side.outputs[honest.slot][e])) lout[e] = std::nextafter(lout[e], -INFINITY);
    const PartialsAnswer lpa = PartialsAnswerOf(el, std::move(lp), hp.bias);
    for (bool honest_is_a : {true, false}) {
      const ElementSide& a_side = honest_is_a ? honest.side : liar;
      const ElementSide& b_side = honest_is_a ? liar : honest.side;
      const PartialsAnswer& pa = honest_is_a ? hp : lpa;
      const PartialsAnswer& pb = honest_is_a ? lpa : hp;
      const std::uint32_t slot = honest.slot;
      auto ta = OutputChunkTree(a_side, slot).value(), tb = OutputChunkTree(b_side, slot).value();
      auto walk = MerkleWalk::Start(ta.leaf_count(), ta.root(), tb.root());
      ASSERT_TRUE(walk.ok());
      while (walk->phase() != MerkleWalk::Phase::kDone) {
        ASSERT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kA, ta).ok());
        ASSERT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kB, tb).ok());
      }
      const auto chunk = static_cast<std::int64_t>(walk->disputed_leaf());
      const auto ca = AnswerChunk(a_side, slot, chunk).value(), cb = AnswerChunk(b_side, slot, chunk).value();
      max_message = std::max({max_message, SizeOf(ca), SizeOf(cb)});
      auto at = verify::DisputedValue(a_side.outputs[slot].shape(), chunk, a_side.outputs[slot].Hash(), ca,
                                      b_side.outputs[slot].Hash(), cb);
      ASSERT_TRUE(at.ok());
      ASSERT_EQ(*at, e) << honest.name << ": the walk ends at the planted value";
      const float ya = a_side.outputs[slot][e], yb = b_side.outputs[slot][e];
      verify::StepVerdict v;
      if (pa.partials.tree().root() == pb.partials.tree().root()) {
        v = PredictEpilogue(pa, ya, yb).value();
      } else {
        auto w5 = MerkleWalk::Start(pa.partials.tree().leaf_count(), pa.partials.tree().root(),
                                    pb.partials.tree().root());
        ASSERT_TRUE(w5.ok());
        while (w5->phase() != MerkleWalk::Phase::kDone) {
          ASSERT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kA, pa.partials.tree()).ok());
          ASSERT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kB, pb.partials.tree()).ok());
        }
        const std::uint64_t m = w5->disputed_leaf() - 1;
        const verify::DotStepClaim claim = AssembleDotStepClaim(
            m, AnswerStepReveal(pa, m), AnswerStepReveal(pb, m), AnswerFactors(honest.side, el, m).value());
        max_message = std::max(max_message, SizeOf(claim));
        const std::array<Hash256, 2> roots{pa.partials.tree().root(), pb.partials.tree().root()};
        auto verdict = PredictDotStep(honest.side, el, roots, claim);
        ASSERT_TRUE(verdict.ok()) << honest.name << ": " << verdict.status().ToString();
        v = *verdict;
        ++step_games;
        if (el.BIndex(static_cast<std::int64_t>(m)) < 0) {
          // A padding tap: opening a value for it is refused.
          verify::DotStepClaim bad = claim;
          bad.b = verify::OpenValue(honest.side.inputs.at(el.b_input), 0);
          EXPECT_EQ(PredictDotStep(honest.side, el, roots, bad).status().reason(), "elem-bad-step");
        }
      }
      EXPECT_FALSE(v.a_right && v.b_right);
      EXPECT_TRUE(honest_is_a ? (v.a_right && !v.b_right) : (v.b_right && !v.a_right))
          << honest.name << " trial " << trial << (honest_is_a ? " (honest solver)" : " (honest challenger)");
      ++games;
    }
  }
  EXPECT_EQ(games, 96u);
  EXPECT_GT(step_games, games / 3);
  EXPECT_LT(max_message, kMaxTx);
  std::printf("largest message: %zu B\n", max_message);
}

}  // namespace
}  // namespace vt::worker
