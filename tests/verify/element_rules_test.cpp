// The pointwise and row element rules (verify/element_rules.h) against the
// kernels they judge, in repops and in certified mode: every sampled value of random nodes of
// each operator in the table is reproduced, bit for bit, from its slices of
// the inputs alone; and a cheat planted in one value of one output of such a
// node is found by the level-4 walk at exactly that value and refuted there
// by the re-execution, which confirms the honest value — with every slice
// opened against its tensor hash in well under 64 KiB at GPT-2's width.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding_log_tree.h"
#include "kernels/tensor.h"
#include "tests/support/random_values.h"
#include "tests/support/test_seed.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "verify/element_game.h"
#include "verify/element_rules.h"
#include "verify/reduce_rule.h"

namespace vt::verify {
namespace {

using kernels::OpKind;
using kernels::Tensor;

float RandomValue(std::mt19937_64& rng) { return test::RandomFp32(rng, -6, 3); }

Tensor RandomTensor(std::mt19937_64& rng, kernels::Shape shape, bool positive = false) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = positive ? std::fabs(RandomValue(rng)) : RandomValue(rng);
  return t;
}

// The executor's RNG address of every node here (dropout draws from it).
const kernels::RngAddress kRng{0x5eed, 7, 41};

// Dropout's keep mask: 0 or 1.
Tensor Keep(std::mt19937_64& rng, kernels::Shape shape) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = rng() % 10 == 0 ? 0.0f : 1.0f;
  return t;
}

// Embedding indices: integer values in [0, rows).
Tensor Indices(std::mt19937_64& rng, kernels::Shape shape, std::int64_t rows) {
  Tensor t(std::move(shape));
  for (float& v : t.values()) v = static_cast<float>(rng() % static_cast<std::uint64_t>(rows));
  return t;
}

struct Node {
  std::string name;
  OpKind kind;
  kernels::OpAttrs attrs;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::uint32_t ruled_slots = 0;  // the first slots with a pointwise/row rule; 0: all
  std::uint32_t first_slot = 0;   // … from this one
  // attention's att [B, H, T, T]: only the values above the diagonal (the
  // mask's +0) are planned; below it, the reduction rule's (reduce_rule_test).
  std::int64_t causal_t = 0;
  kernels::RoundingLog log{};  // rounded mode: what the node logged
  std::uint32_t Slots() const {
    return ruled_slots != 0 ? ruled_slots : static_cast<std::uint32_t>(outputs.size());
  }
  bool Planned(std::int64_t e) const { return causal_t == 0 || e % causal_t > (e / causal_t) % causal_t; }
};

// A random node of each operator in the rule table, run in `mode`.
// Rounded mode records with `spec`, steering (worker/adversary.h's steer-log:
// the other neighbour wherever the rule accepts it) every other node.
std::vector<Node> RandomNodes(std::mt19937_64& rng, std::int64_t rows, std::int64_t c,
                              kernels::Mode mode = kernels::Mode::kRepops, kernels::RoundingSpec spec = {}) {
  const auto f = [](float v) { return kernels::OpAttrs::Bits(v); };
  const kernels::Shape x{rows, c};
  Tensor lr({1}, {1e-3f});
  // An image batch for the poolings: [rows, 2, h, w].
  kernels::Pool2dParams pool;
  pool.kernel_h = 1 + static_cast<std::int64_t>(rng() % 3);
  pool.kernel_w = 1 + static_cast<std::int64_t>(rng() % 3);
  pool.stride_h = 1 + static_cast<std::int64_t>(rng() % 2);
  pool.stride_w = 1 + static_cast<std::int64_t>(rng() % 2);
  pool.pad_h = pool.kernel_h / 2;
  pool.pad_w = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(pool.kernel_w / 2 + 1));
  const std::int64_t h = pool.kernel_h + static_cast<std::int64_t>(rng() % 12);
  const std::int64_t w = pool.kernel_w + static_cast<std::int64_t>(rng() % 12);
  const kernels::Shape x4{rows, 2, h, w};
  const kernels::Shape pooled{rows, 2, (h + 2 * pool.pad_h - pool.kernel_h) / pool.stride_h + 1,
                              (w + 2 * pool.pad_w - pool.kernel_w) / pool.stride_w + 1};
  const kernels::Shape bn{rows, 3, h, w + 1};
  const std::int64_t sum_axis = static_cast<std::int64_t>(rng() % 2);
  const std::int64_t att_t = std::min<std::int64_t>(rows + 3, 8);
  std::vector<Node> nodes = {
      {"relu", OpKind::kRelu, {}, {RandomTensor(rng, x)}, {}},
      {"relu_backward", OpKind::kReluBackward, {}, {RandomTensor(rng, x), RandomTensor(rng, x)}, {}},
      {"gelu", OpKind::kGelu, {}, {RandomTensor(rng, x)}, {}},
      {"gelu_backward", OpKind::kGeluBackward, {}, {RandomTensor(rng, x), RandomTensor(rng, x)}, {}},
      {"add", OpKind::kAdd, {}, {RandomTensor(rng, x), RandomTensor(rng, x)}, {}},
      {"sgd",
       OpKind::kSgd,
       {{1}, {f(0.9f), f(0.01f)}},
       {RandomTensor(rng, x), RandomTensor(rng, x), RandomTensor(rng, x), lr},
       {}},
      {"adamw",
       OpKind::kAdamW,
       {{3}, {f(0.9f), f(0.999f), f(1e-8f), f(0.01f)}},
       {RandomTensor(rng, x), RandomTensor(rng, x), RandomTensor(rng, x), RandomTensor(rng, x, true), lr},
       {}},
      // y from x, γ, β and the node's own mean and rstd; those two, softmax
      // and the norms' backwards are the reduction rule's (reduce_rule_test).
      {"layernorm",
       OpKind::kLayerNorm,
       {{}, {f(1e-5f)}},
       {RandomTensor(rng, x), RandomTensor(rng, {c}), RandomTensor(rng, {c})},
       {},
       1},
      {"dropout", OpKind::kDropout, {{}, {f(0.25f)}}, {RandomTensor(rng, x)}, {}},
      {"dropout_backward",
       OpKind::kDropoutBackward,
       {{}, {f(0.1f)}},
       {RandomTensor(rng, x), Keep(rng, x)},
       {}},
      {"reshape", OpKind::kReshape, {{c, rows}, {}}, {RandomTensor(rng, x)}, {}},
      // The clipped gradients (the norm, last, is the reduction rule's).
      {"clip_grad_norm",
       OpKind::kClipGradNorm,
       {{}, {f(rng() % 2 ? 1.0f : 1e6f)}},
       {RandomTensor(rng, x), RandomTensor(rng, {c}), RandomTensor(rng, {3})},
       {},
       3},
      // (The poolings' y is the reduction rule's: verify_reduce_rule_test.)
      {"maxpool2d_backward",
       OpKind::kMaxPool2dBackward,
       kernels::Pool2dAttrs(pool),
       {RandomTensor(rng, pooled), RandomTensor(rng, x4)},
       {}},
      {"avgpool2d_backward",
       OpKind::kAvgPool2dBackward,
       kernels::Pool2dAttrs(pool),
       {RandomTensor(rng, pooled), RandomTensor(rng, x4)},
       {}},
      {"sum_backward",
       OpKind::kSumBackward,
       kernels::ReduceAttrs(sum_axis),
       {RandomTensor(rng, sum_axis == 0 ? kernels::Shape{c} : kernels::Shape{rows}), RandomTensor(rng, x)},
       {}},
      // att (slot 1) above the diagonal; y is the dot rule's (worker_element_dot_ops_test).
      {"attention",
       OpKind::kAttention,
       kernels::AttentionAttrs(2),
       {RandomTensor(rng, {2, att_t, 2 * 3 * 4})},
       {},
       0,
       1,
       att_t},
      // A table of 37 rows read at random rows (the rows may repeat).
      {"embedding", OpKind::kEmbedding, {}, {Indices(rng, {rows, 3}, 37), RandomTensor(rng, {37, c})}, {}},
      // Batch-norm's y and running mean (mean, rstd, running variance: the
      // reduction rule's) and its backward's dx (dγ, dβ: the reduction rule's),
      // over [rows, 3, h, w + 1]: at least two values a channel.
      {"batchnorm2d_train",
       OpKind::kBatchNorm2dTrain,
       {{}, {f(1e-5f), f(0.1f)}},
       {RandomTensor(rng, bn), RandomTensor(rng, {3}), RandomTensor(rng, {3}), RandomTensor(rng, {3}),
        RandomTensor(rng, {3}, true)},
       {},
       2},
      {"batchnorm2d_backward",
       OpKind::kBatchNorm2dBackward,
       {},
       {RandomTensor(rng, bn), RandomTensor(rng, bn), RandomTensor(rng, {3}), RandomTensor(rng, {3}),
        RandomTensor(rng, {3}, true)},
       {},
       1},
      // Cosine schedule (kind 1) at a step past warmup: detmath Cos.
      {"lr_schedule",
       OpKind::kLrSchedule,
       {{1, static_cast<std::int64_t>(rng() % 100), 10, 100}, {f(3e-4f), f(1e-5f)}},
       {},
       {}},
  };
  kernels::ExecConfig config;
  config.mode = mode;
  config.threads = 2;
  config.rounding = spec;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    std::vector<const Tensor*> in;
    for (const Tensor& t : n.inputs) in.push_back(&t);
    std::optional<kernels::NodeRounding> rounding;
    if (mode == kernels::Mode::kRounded)
      rounding =
          i % 2 == 0 ? kernels::NodeRounding::Record(spec) : kernels::NodeRounding::RecordSteered(spec);
    const kernels::OpContext ctx(config, rounding ? &*rounding : nullptr, kRng);
    const Status s = kernels::RunOp(ctx, n.kind, n.attrs, in, n.outputs);
    EXPECT_TRUE(s.ok()) << n.name << ": " << s.ToString();
    if (rounding) n.log = rounding->log();
  }
  return nodes;
}

std::vector<kernels::Shape> Shapes(const Node& n) {
  std::vector<kernels::Shape> s;
  for (const Tensor& t : n.inputs) s.push_back(t.shape());
  return s;
}

// The tensor a slice is of: an input, or the node's own (agreed) output.
const Tensor& SliceSource(const Node& n, const InputSlice& s, std::size_t i) {
  return s.output_slot >= 0 ? n.outputs.at(static_cast<std::size_t>(s.output_slot)) : n.inputs.at(i);
}

std::vector<float> Slice(const Tensor& t, const InputSlice& s) {
  return {t.values().begin() + s.first, t.values().begin() + s.first + s.count};
}

// A gathered slice resolved by the value its row comes from (read before it).
InputSlice Resolved(const InputSlice& s, const std::vector<std::vector<float>>& read) {
  if (s.row_from < 0) return s;
  auto r = ResolveSlice(s, read.at(static_cast<std::size_t>(s.row_from)).at(0));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : s;
}

// The slices as the final transaction carries them: each slice's chunks
// opened against the input's tensor hash (every value checked through
// VerifyValue), with their bytes counted.
Result<std::vector<std::vector<float>>> OpenSlices(const Node& n, const ElementPlan& plan, std::size_t& bytes) {
  std::vector<std::vector<float>> out;
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSlice s = Resolved(plan.inputs[i], out);
    const Tensor& t = SliceSource(n, s, i);
    const Hash256 h = t.Hash();
    std::vector<float> values;
    std::int64_t opened_chunk = -1;
    ValueOpening o;
    for (std::int64_t v = s.first; v < s.first + s.count; ++v) {
      if (v / kernels::kChunkValues != opened_chunk) {
        o = OpenValue(t, v);
        opened_chunk = v / kernels::kChunkValues;
        bytes += o.chunk.values.size() * 4 + 32 + EncodeToBytes(o.chunk.proof).size();
      }
      VT_ASSIGN_OR_RETURN(float x, VerifyValue(h, t.shape(), v, o));
      values.push_back(x);
    }
    out.push_back(std::move(values));
  }
  return out;
}

void CheckEveryValueIsReproduced(kernels::Mode mode) {
  std::mt19937_64 rng(test::TestSeed());
  std::size_t checked = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 6);
    const std::int64_t c = 1 + static_cast<std::int64_t>(rng() % 300);
    for (const Node& n : RandomNodes(rng, rows, c, mode)) {
      const Bytes attrs = EncodeToBytes(n.attrs);
      for (std::uint32_t slot = n.first_slot; slot < n.Slots(); ++slot) {
        for (std::int64_t e = 0; e < n.outputs[slot].numel(); e += 1 + static_cast<std::int64_t>(rng() % 7)) {
          auto plan = PlanElement(static_cast<std::uint16_t>(n.kind), attrs, slot, e, Shapes(n));
          if (!n.Planned(e)) {
            EXPECT_EQ(plan.status().reason(), "elem-no-rule") << n.name;
            continue;
          }
          ASSERT_TRUE(plan.ok()) << n.name << " slot " << slot << ": " << plan.status().ToString();
          // An own-output slice is of a slot the walk agreed on first.
          const auto order =
              SlotWalkOrder(static_cast<std::uint16_t>(n.kind), static_cast<std::uint32_t>(n.outputs.size()));
          const auto rank = [&](std::uint32_t x) { return std::find(order.begin(), order.end(), x) - order.begin(); };
          for (const InputSlice& is : plan->inputs) {
            if (is.output_slot >= 0) {
              ASSERT_LT(rank(static_cast<std::uint32_t>(is.output_slot)), rank(slot)) << n.name;
            }
          }
          std::vector<std::vector<float>> slices;
          for (std::size_t i = 0; i < plan->inputs.size(); ++i) {
            const InputSlice is = Resolved(plan->inputs[i], slices);
            slices.push_back(Slice(SliceSource(n, is, i), is));
          }
          auto v =
              ReexecuteElement(mode, static_cast<std::uint16_t>(n.kind), attrs, slot, *plan, slices, kRng);
          ASSERT_TRUE(v.ok()) << n.name << ": " << v.status().ToString();
          ASSERT_TRUE(SameBits(*v, n.outputs[slot][e]))
              << n.name << " slot " << slot << " value " << e << " of " << rows << "x" << c;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000u);
}

TEST(VerifyElementRules, EveryValueIsReproducedFromItsSlices) {
  CheckEveryValueIsReproduced(kernels::Mode::kRepops);
}

// Certified mode: the same element-wise expressions; the poolings'
// backwards as exact sums over their windows (repops order differs on
// overlapping windows: seeds 2-6 each found a value that way).
TEST(VerifyElementRules, CertifiedValuesAreReproducedFromTheirSlices) {
  CheckEveryValueIsReproduced(kernels::Mode::kCertified);
}

// Rounded mode: every sampled value of the operators RunOp evaluates value by
// value, and of the poolings' backwards (fp64 sums over their windows), is
// reproduced from its slices and what the node's log says at its
// position, opened alone from the log's tree (honest and steered logs, τ at
// its cap of 1/4 ulp). These operators are exact in fp64 (kernels
// OpFp64IsExact: w = 0), so their values are the reference rounded to
// nearest: no log has an entry there, and an entry invented at any of them
// is rejected whichever way it points. (A rounded norm's values are the
// reduction rule's: verify_reduce_rule_test.)
TEST(VerifyElementRules, RoundedValuesAreReproducedFromTheirSlicesAndTheLog) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x70d);
  std::map<std::string, std::size_t> reproduced, no_rule;
  std::size_t rejected = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const kernels::RoundingSpec spec{trial % 2 == 0 ? 32 : 27, kernels::kMaxTauQ16};
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 4);
    const std::int64_t c = 1 + static_cast<std::int64_t>(rng() % 200);
    for (const Node& n : RandomNodes(rng, rows, c, kernels::Mode::kRounded, spec)) {
      const Bytes attrs = EncodeToBytes(n.attrs);
      const kernels::RoundingLogTree log(n.log);
      std::uint64_t base = 0;  // the slot's first position
      for (std::uint32_t slot = 0; slot < n.outputs.size(); base += n.outputs[slot].numel(), ++slot) {
        if (slot < n.first_slot || slot >= n.Slots()) continue;
        for (std::int64_t e = 0; e < n.outputs[slot].numel(); e += 1 + static_cast<std::int64_t>(rng() % 3)) {
          auto plan = PlanElement(static_cast<std::uint16_t>(n.kind), attrs, slot, e, Shapes(n));
          if (!n.Planned(e)) continue;
          ASSERT_TRUE(plan.ok()) << n.name << ": " << plan.status().ToString();
          std::vector<std::vector<float>> slices;
          for (std::size_t i = 0; i < plan->inputs.size(); ++i) {
            const InputSlice is = Resolved(plan->inputs[i], slices);
            slices.push_back(Slice(SliceSource(n, is, i), is));
          }
          const std::uint64_t position = base + static_cast<std::uint64_t>(e);
          const auto said = kernels::OpenLogAt(log.hash(), position, log.Open(position));
          ASSERT_TRUE(said.ok()) << said.status().ToString();
          const auto run = [&](std::optional<bool> up) {
            return ReexecuteElement(ElementMode(spec, up), static_cast<std::uint16_t>(n.kind), attrs, slot,
                                    *plan, slices, kRng);
          };
          auto v = run(*said);
          if (!v.ok() && v.status().reason() == "elem-no-rule") {
            ++no_rule[n.name];
            continue;
          }
          const float honest = n.outputs[slot][e];
          ASSERT_TRUE(v.ok()) << n.name << ": " << v.status().ToString();
          ASSERT_TRUE(SameBits(*v, honest)) << n.name << " slot " << slot << " value " << e;
          ++reproduced[n.name];
          ASSERT_FALSE(said->has_value()) << n.name << " logged value " << e;
          for (bool up : {false, true}) {
            auto invented = run(up);
            ASSERT_FALSE(invented.ok()) << n.name << " value " << e << " up " << up;
            ASSERT_EQ(invented.status().reason(), "log-entry-outside-region") << n.name;
            ++rejected;
          }
        }
      }
    }
  }
  for (const char* name : {"relu", "relu_backward", "gelu", "gelu_backward", "add", "sgd", "adamw",
                           "dropout_backward", "sum_backward", "lr_schedule", "embedding", "reshape",
                           "dropout", "maxpool2d_backward", "avgpool2d_backward"})
    EXPECT_GT(reproduced[name], 0u) << name;
  for (const auto& [name, count] : no_rule) EXPECT_EQ(reproduced.count(name), 0u) << name << " is both";
  EXPECT_GT(rejected, 1000u);
}

void CheckPlantedCheatsAreCaught(kernels::Mode mode) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xe1e);
  std::size_t games = 0, max_bytes = 0;
  for (int trial = 0; trial < 4; ++trial) {
    // GPT-2's width: rows of 768.
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 4);
    const std::int64_t c = trial == 0 ? 768 : 1 + static_cast<std::int64_t>(rng() % 900);
    for (const Node& n : RandomNodes(rng, rows, c, mode)) {
      const Bytes attrs = EncodeToBytes(n.attrs);
      const std::uint32_t slot = n.first_slot + static_cast<std::uint32_t>(rng() % (n.Slots() - n.first_slot));
      const Tensor& honest = n.outputs[slot];
      Tensor liar = honest;
      std::int64_t e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(honest.numel()));
      while (!n.Planned(e)) e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(honest.numel()));
      liar[e] = std::nextafter(liar[e], rng() % 2 ? INFINITY : -INFINITY);
      // Level 4: the walk over both chunk trees, then both reveal the chunk.
      const auto ta = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(honest.values(), 1));
      const auto tb = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(liar.values(), 1));
      auto walk = crypto::MerkleWalk::Start(ta.leaf_count(), ta.root(), tb.root());
      ASSERT_TRUE(walk.ok()) << n.name;
      while (walk->phase() != crypto::MerkleWalk::Phase::kDone) {
        ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kA, ta).ok());
        ASSERT_TRUE(crypto::RespondHonestly(*walk, crypto::MerkleWalk::Party::kB, tb).ok());
      }
      const std::int64_t chunk = static_cast<std::int64_t>(walk->disputed_leaf());
      auto at = DisputedValue(honest.shape(), chunk, honest.Hash(), kernels::OpenChunk(honest, chunk, 1), liar.Hash(),
                              kernels::OpenChunk(liar, chunk, 1));
      ASSERT_TRUE(at.ok()) << n.name << ": " << at.status().ToString();
      ASSERT_EQ(*at, e) << n.name << " slot " << slot << ": the walk ends at the planted value";
      // Level 5: the value re-executed from its opened slices.
      auto plan = PlanElement(static_cast<std::uint16_t>(n.kind), attrs, slot, e, Shapes(n));
      ASSERT_TRUE(plan.ok());
      std::size_t bytes = 0;
      auto slices = OpenSlices(n, *plan, bytes);
      ASSERT_TRUE(slices.ok()) << slices.status().ToString();
      auto v = ReexecuteElement(mode, static_cast<std::uint16_t>(n.kind), attrs, slot, *plan, *slices, kRng);
      ASSERT_TRUE(v.ok());
      EXPECT_TRUE(SameBits(*v, honest[e])) << n.name << ": the honest value is confirmed";
      EXPECT_FALSE(SameBits(*v, liar[e])) << n.name << ": the planted value is refuted";
      max_bytes = std::max(max_bytes, bytes);
      ++games;
    }
  }
  EXPECT_EQ(games, 4 * RandomNodes(rng, 1, 1).size());
  EXPECT_LE(max_bytes, 64u * 1024) << "the final transaction's openings";
}

TEST(VerifyElementRules, APlantedCheatIsCaughtAtItsValue) {
  CheckPlantedCheatsAreCaught(kernels::Mode::kRepops);
}
TEST(VerifyElementRules, APlantedCertifiedCheatIsCaughtAtItsValue) {
  CheckPlantedCheatsAreCaught(kernels::Mode::kCertified);
}

TEST(VerifyElementRules, SlotWalkOrderPutsTheSlotsOtherRulesReadFirst) {
  const auto clip = static_cast<std::uint16_t>(OpKind::kClipGradNorm);
  EXPECT_EQ(SlotWalkOrder(clip, 4), (std::vector<std::uint32_t>{3, 0, 1, 2}));
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kLayerNorm), 3),
            (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kSoftmax), 1), (std::vector<std::uint32_t>{0}));
  EXPECT_TRUE(SlotWalkOrder(clip, 0).empty());
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kDropout), 2), (std::vector<std::uint32_t>{1, 0}));
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kBatchNorm2dTrain), 5),
            (std::vector<std::uint32_t>{3, 4, 0, 1, 2}));
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kBatchNorm2dBackward), 3),
            (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_EQ(SlotWalkOrder(static_cast<std::uint16_t>(OpKind::kAttention), 2), (std::vector<std::uint32_t>{1, 0}));
}

// The referee charges a re-execution kElementFlopsPerValue flops a value
// read; a plan whose operator costs more on its slices is refused, so the
// charge always covers the work. A max pool's gradient at the middle of a
// 16 × 16 plane takes the maximum of each of the 15 × 15 windows (stride 1,
// padding 7) covering it — 50 625 flops on 496 values read; with 3 × 3
// windows, 81 flops.
TEST(VerifyElementRules, APlanCostlierThanItsChargeIsRefused) {
  const auto pool = static_cast<std::uint16_t>(OpKind::kMaxPool2dBackward);
  const std::vector<kernels::Shape> planes{{1, 1, 16, 16}, {1, 1, 16, 16}};
  kernels::Pool2dParams wide;
  wide.kernel_h = wide.kernel_w = 15;
  wide.stride_h = wide.stride_w = 1;
  wide.pad_h = wide.pad_w = 7;
  EXPECT_EQ(
      PlanElement(pool, EncodeToBytes(kernels::Pool2dAttrs(wide)), 0, 8 * 16 + 8, planes).status().reason(),
      "elem-too-costly");
  kernels::Pool2dParams narrow = wide;
  narrow.kernel_h = narrow.kernel_w = 3;
  narrow.pad_h = narrow.pad_w = 1;
  EXPECT_TRUE(PlanElement(pool, EncodeToBytes(kernels::Pool2dAttrs(narrow)), 0, 8 * 16 + 8, planes).ok());
}

// avg_pool2d's backward reads only the dy rows of the windows covering
// the value, never x: a global pool over a 128 × 128 plane (16 384 values,
// wider than a move may open) reads one value of dy per dx value, and the
// kernel's values come back from it bit for bit.
TEST(VerifyElementRules, AGlobalAveragePoolsGradientReadsOneValue) {
  std::mt19937_64 rng(test::TestSeed());
  kernels::Pool2dParams global;
  global.kernel_h = global.kernel_w = 128;
  global.stride_h = global.stride_w = 1;
  const Bytes attrs = EncodeToBytes(kernels::Pool2dAttrs(global));
  const Tensor dy = RandomTensor(rng, {2, 3, 1, 1}), x = RandomTensor(rng, {2, 3, 128, 128});
  std::vector<Tensor> out;
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRepops;
  const std::vector<const Tensor*> in{&dy, &x};
  ASSERT_TRUE(kernels::RunOp(kernels::OpContext(config), OpKind::kAvgPool2dBackward,
                             DecodeExact<kernels::OpAttrs>(attrs).value(), in, out)
                  .ok());
  const auto kind = static_cast<std::uint16_t>(OpKind::kAvgPool2dBackward);
  const std::vector<kernels::Shape> shapes{dy.shape(), x.shape()};
  for (std::int64_t e = 0; e < out.at(0).numel(); e += 1 + static_cast<std::int64_t>(rng() % 97)) {
    auto plan = PlanElement(kind, attrs, 0, e, shapes);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->inputs.size(), 2u);
    EXPECT_EQ(plan->inputs[0].count, 1);
    EXPECT_EQ(plan->inputs[0].first, e / (128 * 128)) << "the plane's one dy value";
    EXPECT_EQ(plan->inputs[1].count, 0) << "x is never read";
    auto v = ReexecuteElement(kernels::Mode::kRepops, kind, attrs, 0, *plan,
                              std::vector<std::vector<float>>{{dy[plan->inputs[0].first]}, {}});
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    ASSERT_TRUE(SameBits(*v, out[0][e])) << e;
  }
}

// A convolution strided past its kernel (1 × 1 taps at stride 2, 2 × 2 at
// stride 3, padded): the dx values no tap reaches are col2im's +0, read
// from nothing — the pointwise rule's in every mode, nothing opened, and in
// rounded mode any log entry there refused (the +0 lies u/2 from its
// boundary); every other value is the reduction rule's.
TEST(VerifyElementRules, AConvolutionsDxNoTapReachesIsPlusZeroReadFromNothing) {
  std::mt19937_64 rng(test::TestSeed());
  const auto kind = static_cast<std::uint16_t>(OpKind::kConv2dBackward);
  const kernels::RoundingSpec spec{26, kernels::kDefaultTauQ16};
  const std::vector<protocol::InputRef> refs(3, protocol::InputRef{protocol::InputSource::kNode, 0, 0});
  std::size_t unreached = 0, reached = 0;
  for (const auto& [taps, stride, pad] : {std::tuple{1, 2, 0}, std::tuple{2, 3, 1}}) {
    kernels::Conv2dParams cp;
    cp.stride_h = cp.stride_w = stride;
    cp.pad_h = cp.pad_w = pad;
    const Bytes attrs = EncodeToBytes(kernels::Conv2dAttrs(cp));
    const Tensor x = RandomTensor(rng, {2, 3, 7, 8}), w = RandomTensor(rng, {4, 3, taps, taps});
    const std::int64_t oh = (7 + 2 * pad - taps) / stride + 1, ow = (8 + 2 * pad - taps) / stride + 1;
    const Tensor dy = RandomTensor(rng, {2, 4, oh, ow});
    const std::vector<kernels::Shape> shapes{dy.shape(), x.shape(), w.shape()};
    for (const kernels::Mode mode :
         {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified}) {
      SCOPED_TRACE(std::string(kernels::ModeName(mode)) + " stride " + std::to_string(stride));
      kernels::ExecConfig config;
      config.mode = mode;
      config.rounding = spec;
      kernels::NodeRounding recording = kernels::NodeRounding::Record(spec);
      std::vector<Tensor> out;
      const std::vector<const Tensor*> in{&dy, &x, &w};
      ASSERT_TRUE(
          kernels::RunOp(kernels::OpContext(config, mode == kernels::Mode::kRounded ? &recording : nullptr),
                         OpKind::kConv2dBackward, DecodeExact<kernels::OpAttrs>(attrs).value(), in, out)
              .ok());
      const Tensor& dx = out.at(0);
      for (std::int64_t e = 0; e < dx.numel(); ++e) {
        const bool hit = ConvInputGradReached(attrs, e, shapes).value();
        auto plan = PlanElement(kind, attrs, 0, e, shapes);
        const auto choice =
            ChooseElementRule(static_cast<std::uint8_t>(mode), kind, attrs, 0, e, refs, shapes);
        ASSERT_TRUE(choice.ok()) << e << ": " << choice.status().ToString();
        if (hit) {
          EXPECT_EQ(plan.status().reason(), "elem-no-rule") << e;
          EXPECT_EQ(choice->kind, ElementKind::kReduce) << e;
          ++reached;
          continue;
        }
        ++unreached;
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        EXPECT_EQ(choice->kind, ElementKind::kPlan);
        EXPECT_TRUE(choice->opened_inputs.empty()) << "nothing to open";
        ASSERT_EQ(plan->inputs.size(), 3u);
        for (const InputSlice& slice : plan->inputs) EXPECT_EQ(slice.count, 0);
        const std::vector<std::vector<float>> none(3);
        const ElementMode how =
            mode == kernels::Mode::kRounded ? ElementMode(spec, std::nullopt) : ElementMode(mode);
        auto v = ReexecuteElement(how, kind, attrs, 0, *plan, none);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        ASSERT_TRUE(SameBits(*v, dx[e])) << e << ": " << *v << " vs " << dx[e];
        if (mode != kernels::Mode::kRounded) continue;
        for (const bool up : {true, false})
          EXPECT_EQ(ReexecuteElement(ElementMode(spec, up), kind, attrs, 0, *plan, none).status().reason(),
                    "log-entry-outside-region");
      }
      EXPECT_EQ(PlanElement(kind, attrs, 0, dx.numel(), shapes).status().reason(), "elem-bad-index");
    }
  }
  EXPECT_GT(unreached, 100u);
  EXPECT_GT(reached, 100u);
}

// Max pooling's ties, NaNs and signed zeros: the first maximum of a window
// wins, a NaN replaces the maximum, +0 and −0 tie. The rules — y's scan
// (verify/reduce_rule.h) and the backward's plan — give the kernel's values
// bit for bit, over overlapping 3 × 3 windows (stride 1, padding 1) and
// 2 × 2 ones (stride 2).
TEST(VerifyElementRules, MaxPoolTiesNaNsAndZerosFollowTheKernel) {
  const float nan = std::nanf("");
  const Tensor x({1, 1, 4, 4}, {1.0f, 1.0f, -0.0f, 0.0f,   //
                                2.0f, nan, 0.0f, -0.0f,    //
                                2.0f, 2.0f, -1.0f, -1.0f,  //
                                nan, 3.0f, 3.0f, -1.0f});
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRepops;
  const kernels::OpContext ctx(config);
  for (auto [k, stride, pad] : {std::tuple{3, 1, 1}, std::tuple{2, 2, 0}}) {
    kernels::Pool2dParams p;
    p.kernel_h = p.kernel_w = k;
    p.stride_h = p.stride_w = stride;
    p.pad_h = p.pad_w = pad;
    const kernels::OpAttrs attrs = kernels::Pool2dAttrs(p);
    const Bytes bytes = EncodeToBytes(attrs);
    std::vector<Tensor> y;
    const std::vector<const Tensor*> x_only{&x};
    ASSERT_TRUE(kernels::RunOp(ctx, OpKind::kMaxPool2d, attrs, x_only, y).ok());
    for (std::int64_t e = 0; e < y[0].numel(); ++e) {
      auto el = ReduceElementAt(static_cast<std::uint16_t>(OpKind::kMaxPool2d), bytes, 0, e, {{x.shape()}});
      ASSERT_TRUE(el.ok()) << el.status().ToString();
      auto leaves = ReducePartials(*el, {{x}});
      ASSERT_TRUE(leaves.ok()) << leaves.status().ToString();
      EXPECT_TRUE(SameBits(ReduceOutput(*el, leaves->back()), y[0][e]))
          << "y value " << e << " of " << k << "x" << k;
    }
    const Tensor dy({1, 1, y[0].dim(2), y[0].dim(3)},
                    std::vector<float>(static_cast<std::size_t>(y[0].numel()), 0.5f));
    std::vector<Tensor> dx;
    const std::vector<const Tensor*> dy_x{&dy, &x};
    ASSERT_TRUE(kernels::RunOp(ctx, OpKind::kMaxPool2dBackward, attrs, dy_x, dx).ok());
    const std::vector<kernels::Shape> shapes{dy.shape(), x.shape()};
    for (std::int64_t e = 0; e < dx[0].numel(); ++e) {
      auto plan = PlanElement(static_cast<std::uint16_t>(OpKind::kMaxPool2dBackward), bytes, 0, e, shapes);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      std::vector<std::vector<float>> slices;
      for (std::size_t i = 0; i < 2; ++i) slices.push_back(Slice(i == 0 ? dy : x, plan->inputs[i]));
      auto v =
          ReexecuteElement(kernels::Mode::kRepops, static_cast<std::uint16_t>(OpKind::kMaxPool2dBackward),
                           bytes, 0, *plan, slices);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_TRUE(SameBits(*v, dx[0][e]))
          << "dx value " << e << " of " << k << "x" << k << ": " << *v << " vs " << dx[0][e];
    }
  }
}

// A value covered by four 2 × 2 windows whose shares are 1 and three times
// 2^-24: summed in order each small share ties back to 1, exactly they are
// 1 + 3·2^-24, whose rounding is 1 + 2^-22. The certified kernels and the
// certified rule give the latter, the repops rule the former.
TEST(VerifyElementRules, CertifiedPoolGradientsAreExactSums) {
  const float tiny = 0x1p-24f;
  kernels::Pool2dParams p;
  p.kernel_h = p.kernel_w = 2;
  p.stride_h = p.stride_w = 1;
  const Bytes bytes = EncodeToBytes(kernels::Pool2dAttrs(p));
  const Tensor x({1, 1, 3, 3}, {0, 0, 0, 0, 10, 0, 0, 0, 0});  // every window's maximum at the centre
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kCertified;
  const kernels::OpContext ctx(config);
  for (const auto& [kind, scale] :
       {std::pair{OpKind::kAvgPool2dBackward, 4.0f}, {OpKind::kMaxPool2dBackward, 1.0f}}) {
    const Tensor dy({1, 1, 2, 2}, {scale, scale * tiny, scale * tiny, scale * tiny});
    std::vector<Tensor> dx;
    const std::vector<const Tensor*> in{&dy, &x};
    ASSERT_TRUE(kernels::RunOp(ctx, kind, kernels::Pool2dAttrs(p), in, dx).ok());
    EXPECT_EQ(dx[0][4], 1.0f + 0x1p-22f) << "the kernel's CR of the exact sum";
    auto plan = PlanElement(static_cast<std::uint16_t>(kind), bytes, 0, 4, {{dy.shape(), x.shape()}});
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    std::vector<std::vector<float>> slices;
    for (std::size_t i = 0; i < 2; ++i) slices.push_back(Slice(i == 0 ? dy : x, plan->inputs[i]));
    const auto op = static_cast<std::uint16_t>(kind);
    EXPECT_EQ(ReexecuteElement(kernels::Mode::kCertified, op, bytes, 0, *plan, slices).value(), dx[0][4]);
    EXPECT_EQ(ReexecuteElement(kernels::Mode::kRepops, op, bytes, 0, *plan, slices).value(), 1.0f);
  }
}

TEST(VerifyElementRules, DropoutsKeepNeedsTheNodesRngAddress) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<Node> nodes = RandomNodes(rng, 3, 50);
  const auto it = std::find_if(nodes.begin(), nodes.end(), [](const Node& x) { return x.name == "dropout"; });
  ASSERT_NE(it, nodes.end());
  const Node& n = *it;
  const Bytes attrs = EncodeToBytes(n.attrs);
  const auto kind = static_cast<std::uint16_t>(n.kind);
  auto plan = PlanElement(kind, attrs, 1, 17, Shapes(n));
  ASSERT_TRUE(plan.ok());
  const std::vector<std::vector<float>> none(1);
  EXPECT_TRUE(SameBits(ReexecuteElement(kernels::Mode::kRepops, kind, attrs, 1, *plan, none, kRng).value(),
                       n.outputs[1][17]));
  EXPECT_EQ(ReexecuteElement(kernels::Mode::kRepops, kind, attrs, 1, *plan, none).status().reason(),
            "elem-bad-slice")
      << "no address";
  std::size_t differ = 0;  // another node's address draws another mask
  for (std::int64_t e = 0; e < n.outputs[1].numel(); ++e) {
    auto other = PlanElement(kind, attrs, 1, e, Shapes(n)).value();
    differ += SameBits(ReexecuteElement(kernels::Mode::kRepops, kind, attrs, 1, other, none,
                                        {kRng.seed, kRng.step, kRng.node + 1})
                           .value(),
                       n.outputs[1][e])
                  ? 0
                  : 1;
  }
  EXPECT_GT(differ, 0u);
  EXPECT_EQ(ReexecuteElement(kernels::Mode::kRepops, kind, attrs, 1, *plan, none, {1, 1ull << 32, 0})
                .status()
                .reason(),
            "bad-rng-address");
}

TEST(VerifyElementRules, AnEmbeddingIndexOutsideTheTableFailsTheOperator) {
  // The rule reads the one index at the value's position, by the kernel's own
  // check: a fraction, a negative value, NaN or a row past the table fail it
  // as they fail the kernel, and a valid index gathers exactly its row.
  const std::vector<kernels::Shape> shapes{{2, 3}, {5, 4}};
  const std::uint16_t op = static_cast<std::uint16_t>(OpKind::kEmbedding);
  auto plan = PlanElement(op, 0, 4 * 4 + 2, shapes);  // position 4 (row 1, column 1), value 2 of its row
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->inputs.size(), 2u);
  EXPECT_EQ(plan->inputs[0].first, 4);
  EXPECT_EQ(plan->inputs[1].row_from, 0);
  for (float bad : {-1.0f, 5.0f, 1.5f, NAN, INFINITY}) {
    auto r = ResolveSlice(plan->inputs[1], bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().reason(), "bad-index") << bad;
    Tensor idx({2, 3}, {0, 1, 2, 3, bad, 4});
    Tensor w({5, 4});
    std::vector<Tensor> out;
    kernels::ExecConfig config;
    config.mode = kernels::Mode::kRepops;
    const std::vector<const Tensor*> in{&idx, &w};
    EXPECT_EQ(kernels::RunOp(kernels::OpContext(config), OpKind::kEmbedding, {}, in, out).reason(),
              "bad-index")
        << bad;
  }
  auto r = ResolveSlice(plan->inputs[1], 3.0f);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 3 * 4 + 2);
  EXPECT_EQ(r->row_from, -1);
  EXPECT_EQ(PlanElement(op, 0, 6 * 4, shapes).status().reason(), "elem-bad-index");
}

}  // namespace
}  // namespace vt::verify
