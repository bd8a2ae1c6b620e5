// The dot rule in rounded mode (verify/element.h RoundedPartial,
// RoundedLinearValue; verify/descent.h JudgeRoundedDotEpilogue): a GEMM
// output of a rounded linear layer, matmul or convolution (and a
// convolution's dW), recorded by a trainer with its vendor
// fp64 GEMM (OpenBLAS dgemm, any order), is reproduced from the canonical
// reference's fp64 partial results — dot product and both squared norms,
// which give β — and what the trainer's log says at the value, opened alone
// from the log's tree (kernels/rounding_log_tree.h). That is the acceptance
// rule's promise, checked here value by value on honest and steered logs.
// Then the level-5b walk between an honest party and a liar over those
// partial results ends at the liar's first wrong step or at the epilogue,
// and judges for the honest party; a log entry the rule rejects loses the
// solver.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/arith_hd.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "kernels/rounding_log_tree.h"
#include "kernels/tensor.h"
#include "tests/support/random_values.h"
#include "tests/support/test_seed.h"
#include "verify/descent.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

using crypto::MerkleWalk;
using kernels::OpKind;
using kernels::Tensor;
using WalkParty = crypto::MerkleWalk::Party;

float RandomValue(std::mt19937_64& rng) { return test::RandomFp32(rng, -12, 6); }

Tensor RandomTensor(std::mt19937_64& rng, kernels::Shape shape) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = RandomValue(rng);
  return t;
}

// One rounded node as a trainer recorded it: inputs, outputs, log.
struct RoundedNode {
  OpKind kind;
  std::vector<Tensor> inputs, outputs;
  kernels::RoundingLog log;
  kernels::OpAttrs attrs{};
};

// A linear layer and its backward in rounded mode, recorded honestly with
// the vendor fp64 GEMM (not the reference), or steered: every value the
// rule leaves open takes its other neighbour, judged — as the steer-log
// adversary judges it — at the reference (a steer at a vendor value a few
// fp64 ulps from it can fall outside the window, and is rejected).
// With `cancel`, each row of x repeats its first half and each row of w
// negates its own within a relative 2^-14: every y value is ~2^-14 of its
// factors' norms, so β (∝ the norms) is ~2^14 times larger against the
// value's ulp, and entries are logged for β where τ alone would log none.
std::vector<RoundedNode> RecordLinear(std::mt19937_64& rng, const kernels::RoundingSpec& spec, bool steer,
                                      bool cancel = false) {
  const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 12);
  const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % 300);
  const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 40);
  Tensor x = RandomTensor(rng, {rows, k}), w = RandomTensor(rng, {n, k});
  if (cancel) {
    std::uniform_real_distribution<float> delta(-0x1p-14f, 0x1p-14f);
    for (std::int64_t i = 0; i < k / 2; ++i) {
      for (std::int64_t r = 0; r < rows; ++r) x[r * k + k / 2 + i] = x[r * k + i];
      for (std::int64_t j = 0; j < n; ++j) w[j * k + k / 2 + i] = -w[j * k + i] * (1.0f + delta(rng));
    }
  }
  // A batched matmul with random transposes: op(a) [2, rows, k] · op(b) [k, n].
  const bool ta = rng() % 2 == 0, tb = rng() % 2 == 0;
  Tensor a = RandomTensor(rng, ta ? kernels::Shape{2, k, rows} : kernels::Shape{2, rows, k});
  Tensor b = RandomTensor(rng, tb ? kernels::Shape{n, k} : kernels::Shape{k, n});
  // A padded, strided convolution without a bias (the CNNs' convs, ahead of
  // a batch norm), one with a bias per output channel (β counts it as one
  // more term, as linear's), and its backward, whose dW is one sum over
  // (image, position).
  kernels::Conv2dParams cp;
  cp.stride_h = cp.stride_w = 1 + static_cast<std::int64_t>(rng() % 2);
  cp.pad_h = cp.pad_w = static_cast<std::int64_t>(rng() % 2);
  const std::int64_t images = 1 + static_cast<std::int64_t>(rng() % 3),
                     ci = 1 + static_cast<std::int64_t>(rng() % 3);
  const std::int64_t co = 1 + static_cast<std::int64_t>(rng() % 4),
                     side = 3 + static_cast<std::int64_t>(rng() % 6);
  const std::int64_t out_side = (side + 2 * cp.pad_h - 3) / cp.stride_h + 1;
  Tensor cx = RandomTensor(rng, {images, ci, side, side}), cw = RandomTensor(rng, {co, ci, 3, 3});
  std::vector<RoundedNode> nodes = {
      {OpKind::kLinear, {x, w, RandomTensor(rng, {n})}, {}, {}},
      {OpKind::kLinearBackward, {RandomTensor(rng, {rows, n}), x, w}, {}, {}},
      {OpKind::kMatMul, {a, b}, {}, {}, kernels::MatMulAttrs(ta, tb)},
      {OpKind::kConv2d, {cx, cw}, {}, {}, kernels::Conv2dAttrs(cp)},
      {OpKind::kConv2d, {cx, cw, RandomTensor(rng, {co})}, {}, {}, kernels::Conv2dAttrs(cp)},
      {OpKind::kConv2dBackward,
       {RandomTensor(rng, {images, co, out_side, out_side}), cx, cw},
       {},
       {},
       kernels::Conv2dAttrs(cp)}};
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRounded;
  config.rounding = spec;
  config.threads = 2;
  config.f64_reference = steer;
  for (RoundedNode& node : nodes) {
    auto rounding = steer ? kernels::NodeRounding::RecordSteered(spec) : kernels::NodeRounding::Record(spec);
    std::vector<const Tensor*> in;
    for (const Tensor& t : node.inputs) in.push_back(&t);
    EXPECT_TRUE(
        kernels::RunOp(kernels::OpContext(config, &rounding), node.kind, node.attrs, in, node.outputs).ok());
    node.log = rounding.log();
  }
  return nodes;
}

// Value e of output `slot`: where its factors lie, their partial results,
// its bias and its position among the node's outputs.
struct Value {
  DotElement el;
  std::vector<float> a, b;
  std::vector<RoundedPartial> partials;
  std::optional<float> bias;
  std::uint64_t position = 0;
};

Value ValueAt(const RoundedNode& node, std::uint32_t slot, std::int64_t e) {
  std::vector<kernels::Shape> shapes;
  for (const Tensor& t : node.inputs) shapes.push_back(t.shape());
  auto el = DotElementAt(static_cast<std::uint16_t>(node.kind), EncodeToBytes(node.attrs), slot, e, shapes);
  EXPECT_TRUE(el.ok()) << el.status().ToString();
  Value v{*el, {}, {}, {}, {}, static_cast<std::uint64_t>(e)};
  for (std::int64_t m = 0; m < v.el.k; ++m) {
    v.a.push_back(node.inputs[v.el.a_input][v.el.AIndex(m)]);
    const std::int64_t bi = v.el.BIndex(m);  // −1: a padding tap, +0
    v.b.push_back(bi < 0 ? +0.0f : node.inputs[v.el.b_input][bi]);
  }
  v.partials = RoundedDotPartials(v.a, v.b);
  if (v.el.bias_input) v.bias = node.inputs[*v.el.bias_input][v.el.bias_index];
  for (std::uint32_t s = 0; s < slot; ++s) v.position += static_cast<std::uint64_t>(node.outputs[s].numel());
  return v;
}

// The dot-rule slots of each node: linear's y, matmul's c, conv2d's y;
// linear_backward's dx and dW; conv2d_backward's dW.
std::vector<std::uint32_t> DotSlots(const RoundedNode& node) {
  if (node.kind == OpKind::kLinearBackward) return {0, 1};
  if (node.kind == OpKind::kConv2dBackward) return {1};
  return {0};
}

TEST(VerifyRoundedDot, EveryValueIsItsPartialsRoundedAsTheLogSays) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x0d07);
  std::size_t values = 0, logged = 0, logged_by_beta = 0, capped = 0;
  for (int trial = 0; trial < 24; ++trial) {
    // τ = 0 (β alone logs), its default, or its cap of 1/4 ulp (half the
    // values logged); b = 32 or 27 bits; inputs that cancel every other trial.
    const std::uint32_t taus[] = {0, kernels::kDefaultTauQ16, kernels::kDefaultTauQ16, kernels::kMaxTauQ16};
    const kernels::RoundingSpec spec{(trial / 8) % 2 == 0 ? 32 : 27, taus[trial % 4]};
    for (const RoundedNode& node : RecordLinear(rng, spec, (trial / 4) % 2 == 1, trial % 2 == 0)) {
      const kernels::RoundingLogTree log(node.log);
      for (const std::uint32_t slot : DotSlots(node)) {
        const Tensor& out = node.outputs[slot];
        for (std::int64_t e = 0; e < out.numel(); e += 1 + static_cast<std::int64_t>(rng() % 3)) {
          const Value v = ValueAt(node, slot, e);
          const double ref = RoundedLinearReference(v.partials.back(), v.bias);
          const double beta = RoundedLinearSlack(v.partials.back(), v.bias, v.el.k);
          if (kernels::hd::SlackCapped(kernels::hd::Locate(ref, spec.bits), beta)) {
            // β reached u/4: two honest evaluations may differ by more than a
            // direction repairs, so the log promises nothing here (docs/kernels.md).
            ++capped;
            continue;
          }
          const auto said = kernels::OpenLogAt(log.hash(), v.position, log.Open(v.position));
          ASSERT_TRUE(said.ok()) << said.status().ToString();
          const auto y = RoundedLinearValue(v.partials.back(), v.bias, v.el.k, spec, *said);
          ASSERT_TRUE(y.ok()) << y.status().ToString() << " at " << e << " trial " << trial;
          ASSERT_TRUE(SameBits(*y, out[e])) << "slot " << slot << " value " << e << " trial " << trial;
          ++values;
          if (!*said) continue;
          ++logged;
          // Without β the entry would not be accepted (τ alone): β at work.
          const auto tau_only = kernels::ApplyLogEntry(ref, spec.bits, spec.tau_q16, 0.0, **said);
          logged_by_beta += !tau_only.ok() || !SameBits(*tau_only, out[e]);
          // The other direction is refused, or names the other neighbour.
          const auto flipped = RoundedLinearValue(v.partials.back(), v.bias, v.el.k, spec, !**said);
          ASSERT_TRUE(!flipped.ok() || !SameBits(*flipped, out[e])) << e;
        }
      }
    }
  }
  std::printf("[rounded dot] %zu values, %zu logged (%zu accepted only through beta), %zu with beta capped\n",
              values, logged, logged_by_beta, capped);
  EXPECT_LT(capped * 100, values) << "the cancelling inputs keep beta under its cap almost everywhere";
  EXPECT_GT(values, 5000u);
  EXPECT_GT(logged, 1000u);
  EXPECT_GT(logged_by_beta, 5u);
}

// Plays level 5b between the honest party (A) and a liar (B) over value e's
// partial results, with the solver's log opened at e; returns the verdict.
Result<StepVerdict> Play(const RoundedNode& node, const Value& v, const kernels::RoundingSpec& spec,
                         const kernels::RoundingLogTree& log, const std::vector<RoundedPartial>& lp,
                         float y_a, float y_b) {
  const auto pa = PartialsTree(v.partials), pb = PartialsTree(lp);
  const std::uint64_t k = static_cast<std::uint64_t>(v.el.k);
  EXPECT_TRUE(CheckPartialsEnds(pa.root(), k, v.partials.back(), pa.Prove(0), pa.Prove(k)).ok());
  if (!CheckPartialsEnds(pb.root(), k, lp.back(), pb.Prove(0), pb.Prove(k)).ok())
    return Status::Invalid("liar-cannot-post");
  if (pa.root() == pb.root()) {
    VT_ASSIGN_OR_RETURN(const std::optional<bool> said,
                        kernels::OpenLogAt(log.hash(), v.position, log.Open(v.position)));
    return JudgeRoundedDotEpilogue(lp.back(), v.bias, v.el.k, spec, said, y_a, y_b);
  }
  auto walk = MerkleWalk::Start(pa.leaf_count(), pa.root(), pb.root());
  VT_TRY(walk.status());
  while (walk->phase() != MerkleWalk::Phase::kDone) {
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kA, pa).ok())
        << "the honest party always has a move";
    EXPECT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kB, pb).ok());
  }
  const std::uint64_t m1 = walk->disputed_leaf();
  std::uint64_t first = 0;
  while (v.partials[first] == lp[first]) ++first;
  EXPECT_EQ(m1, first) << "the leftmost differing partial result";
  const std::uint64_t m = m1 - 1;
  const Tensor& ta = node.inputs[v.el.a_input];
  const Tensor& tb = node.inputs[v.el.b_input];
  const auto mi = static_cast<std::int64_t>(m);
  const RoundedDotStepClaim claim{m,
                                  v.partials[m],
                                  pa.Prove(m),
                                  {v.partials[m1], lp[m1]},
                                  {pa.Prove(m1), pb.Prove(m1)},
                                  OpenValue(ta, v.el.AIndex(mi)),
                                  v.el.BIndex(mi) < 0 ? ValueOpening{} : OpenValue(tb, v.el.BIndex(mi))};
  const DotFactors factors{ta.Hash(), tb.Hash(), ta.shape(), tb.shape(), std::nullopt, std::nullopt};
  return JudgeDotStepClaim(v.el, factors, {pa.root(), pb.root()}, claim);
}

TEST(VerifyRoundedDot, AnHonestPartyWinsEveryGameAndARejectedEntryLosesTheSolver) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x0d08);
  std::size_t games = 0, epilogue = 0, steps = 0, rejected = 0;
  for (int trial = 0; trial < 160; ++trial) {
    const kernels::RoundingSpec spec{trial % 2 == 0 ? 32 : 27, kernels::kDefaultTauQ16};
    const std::vector<RoundedNode> nodes = RecordLinear(rng, spec, false);
    const RoundedNode& node = nodes[static_cast<std::size_t>(trial) % nodes.size()];
    const std::vector<std::uint32_t> slots = DotSlots(node);
    const std::uint32_t slot = slots[rng() % slots.size()];
    const Tensor& out = node.outputs[slot];
    const std::int64_t e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel()));
    const Value v = ValueAt(node, slot, e);
    const kernels::RoundingLogTree log(node.log);
    std::vector<RoundedPartial> lp = v.partials;
    float lie = out[e];
    const auto ref_of = [&](const RoundedPartial& p) { return RoundedLinearReference(p, v.bias); };
    switch (trial % 4) {
      case 0:  // honest partial results, the value one grid step off
        lie = std::bit_cast<float>(std::bit_cast<std::uint32_t>(out[e]) + (1u << (32 - spec.bits)));
        break;
      case 1:    // one component nudged at a random step, then the rule followed
      case 2: {  // a random step's leaf made up from the next factor's
        const std::size_t from = 1 + rng() % static_cast<std::size_t>(v.el.k);
        if (trial % 4 == 1) {
          double& c = rng() % 3 == 0 ? lp[from].a_sq : rng() % 2 == 0 ? lp[from].b_sq : lp[from].dot;
          c = std::nextafter(c, INFINITY);
        } else {
          lp[from] = RoundedPartial{RandomValue(rng), RandomValue(rng), RandomValue(rng)};
        }
        for (std::size_t m = from + 1; m < lp.size(); ++m)
          lp[m] = RoundedDotStep(lp[m - 1], v.a[m - 1], v.b[m - 1]);
        lie = kernels::RoundToBits(ref_of(lp.back()), spec.bits);
        break;
      }
      default: {  // the solver logs a direction the rule refuses, and follows it
        const auto said = kernels::OpenLogAt(log.hash(), v.position, log.Open(v.position)).value();
        const bool up = !(out[e] > ref_of(v.partials.back()));  // the other neighbour than the value's
        if (said) continue;
        const auto judged =
            JudgeRoundedDotEpilogue(v.partials.back(), v.bias, v.el.k, spec, up, out[e], out[e]);
        if (judged.ok()) continue;  // within w: the residual freedom, either neighbour stands
        ASSERT_EQ(judged.status().reason(), "log-entry-outside-region");
        ++rejected;
        continue;
      }
    }
    if (SameBits(lie, out[e])) continue;  // the lie did not reach the value
    auto verdict = Play(node, v, spec, log, lp, out[e], lie);
    if (!verdict.ok() && verdict.status().reason() == "liar-cannot-post") continue;
    ASSERT_TRUE(verdict.ok()) << verdict.status().ToString();
    EXPECT_TRUE(verdict->a_right && !verdict->b_right)
        << "trial " << trial << " value " << e << " of slot " << slot << ": " << out[e] << " vs " << lie;
    (PartialsTree(v.partials).root() == PartialsTree(lp).root() ? epilogue : steps) += 1;
    ++games;
  }
  std::printf("[rounded games] %zu (epilogue %zu, step %zu), %zu refused entries\n", games, epilogue, steps,
              rejected);
  EXPECT_GT(epilogue, 20u);
  EXPECT_GT(steps, 20u);
  EXPECT_GT(rejected, 20u);
}

}  // namespace
}  // namespace vt::verify
