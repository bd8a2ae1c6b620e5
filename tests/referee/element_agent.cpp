#include "tests/referee/element_agent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <type_traits>

#include "tests/support/partial_leaves.h"
#include "verify/certified_sum.h"
#include "verify/element.h"
#include "verify/element_game.h"
#include "verify/graph_source.h"

namespace vt::test {
namespace {

// Chunk trees are rebuilt on demand; keep the last few (by output hash).
std::map<Hash256, crypto::MerkleTree>& TreeCache() {
  static std::map<Hash256, crypto::MerkleTree> cache;
  if (cache.size() > 64) cache.clear();
  return cache;
}

// The opening of node input `input` by its hash (verify::VerifyInputHash's arguments).
verify::InputHashOpening InputHashOf(const History& h, std::uint64_t step, std::uint64_t node,
                                     std::uint32_t input) {
  const protocol::InputRef& ref = h.records[step][node].inputs[input];
  verify::InputHashOpening o;
  o.input = input;
  if (ref.source == protocol::InputSource::kState) {
    o.tensor_hash = h.states[step][ref.index].Hash();
    o.proof = StateTreeOf(h, step).Prove(ref.index);
  } else {
    o.tensor_hash = h.outputs[step][ref.index][ref.slot].Hash();
    o.producer = h.records[step][ref.index];
    o.proof = h.node_trees[step].Prove(ref.index);
  }
  return o;
}

}  // namespace

worker::ElementSide SideOf(const History& h, std::uint64_t step, std::uint64_t node) {
  worker::ElementSide side;
  const protocol::NodeRecord& rec = h.records[step][node];
  side.op_kind = rec.op_kind;
  side.attrs = rec.attrs;
  side.refs = rec.inputs;
  for (const protocol::InputRef& ref : rec.inputs) {
    const auto input = static_cast<std::uint32_t>(side.inputs.size());
    switch (ref.source) {
      case protocol::InputSource::kState:
        side.inputs.push_back(h.states[step][ref.index]);
        break;
      case protocol::InputSource::kNode:
        side.inputs.push_back(h.outputs[step][ref.index][ref.slot]);
        break;
      case protocol::InputSource::kBatch: {
        // The step's batch, assembled from its examples as whole arbitration does.
        const verify::KernelsGraphSource source;
        const auto indices = source.BatchIndices(h.job, h.headers[step]).value();
        std::vector<Bytes> leaves;
        side.examples.clear();
        for (std::uint64_t i : indices) {
          leaves.push_back(h.examples[i]);
          side.examples.push_back(verify::ExampleOpening{h.examples[i], h.dataset_tree.Prove(i)});
        }
        side.inputs.push_back(source.AssembleBatch(h.job, leaves).value().at(ref.index));
        side.openings.emplace_back();
        side.header = h.headers[step];
        side.header_proof = StateTreeOf(h, step).Prove(h.states[step].size());
        continue;
      }
    }
    side.openings.push_back(InputHashOf(h, step, node, input));
  }
  side.outputs = h.outputs[step][node];
  if (step < h.logs.size() && node < h.logs[step].size()) side.log = h.logs[step][node];
  return side;
}

const crypto::MerkleTree& ChunkTreeFor(const worker::ElementSide& side, std::uint32_t slot) {
  const Hash256 key = side.outputs[slot].Hash();
  auto& cache = TreeCache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    auto tree = worker::OutputChunkTree(side, slot);
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    it = cache.emplace(key, std::move(tree).value()).first;
  }
  return it->second;
}

namespace {

template <class Leaf>
worker::PartialsAnswerFor<Leaf> Bend(const worker::ElementSide& side, worker::PartialsAnswerFor<Leaf> honest,
                                     const SumsPlan& lie) {
  const verify::DotElement& el = honest.element;
  std::vector<Leaf> p = honest.partials.All();
  const std::size_t from = static_cast<std::size_t>(std::clamp<std::uint64_t>(lie.from, 1, el.k));
  std::mt19937 rng(static_cast<std::uint32_t>(from));
  using Lies = PartialLeaves<Leaf>;
  if (lie.kind == SumsLie::kDiverge) {
    // Far below any fp32 rounding of an exact sum: its value may round alike.
    p[from] = Lies::Nudge(p[from], 0x1p-140f);
    for (std::size_t m = from + 1; m < p.size(); ++m) {
      // The factors the step multiplies (own outputs, the batch, padding taps: +0).
      const auto [a, b] = worker::FactorValues(side, el, m - 1);
      p[m] = Lies::Step(p[m - 1], a, b);
    }
  } else {
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    for (std::size_t m = from; m < p.size(); ++m) p[m] = Lies::MadeUp(d(rng));
  }
  return worker::PartialsAnswerOf(el, std::move(p), honest.bias);
}

}  // namespace

worker::DotPartialsAnswer PartialsFor(kernels::Mode mode, const worker::ElementSide& side, std::uint32_t slot,
                                      std::int64_t e, const std::optional<SumsPlan>& lie) {
  auto honest = worker::AnswerDotPartials(static_cast<std::uint8_t>(mode), side, slot, e);
  EXPECT_TRUE(honest.ok()) << honest.status().ToString();
  if (!honest.ok()) return {};
  if (!lie || lie->kind == SumsLie::kHonest) return std::move(honest).value();
  return std::visit(
      [&](auto& answer) -> worker::DotPartialsAnswer { return Bend(side, std::move(answer), *lie); },
      *honest);
}

namespace {

// A reduction's sums bent: made up from leaf `from` on — or, for a certified
// or rounded sum told to diverge, one exact 2^-140 (one fp64 ulp) off
// there, then following the rule (FollowRule), so only that one step is
// wrong.
template <class Leaf>
worker::ReducePartialsAnswerFor<Leaf> BendSums(const worker::ElementSide& side,
                                               worker::ReducePartialsAnswerFor<Leaf> honest,
                                               const SumsPlan& lie) {
  std::vector<Leaf> p = honest.partials.All();
  const std::size_t from = static_cast<std::size_t>(std::clamp<std::uint64_t>(lie.from, 1, p.size() - 1));
  using Lies = PartialLeaves<Leaf>;
  if constexpr (std::is_same_v<Leaf, verify::ExactPartial> || std::is_same_v<Leaf, double>) {
    if (lie.kind == SumsLie::kDiverge) {
      p[from] = Lies::Nudge(p[from], 0x1p-140f);
      const verify::ValueAt values = verify::TensorValues(side.inputs, side.outputs);
      for (std::size_t m = from + 1; m < p.size(); ++m) p[m] = FollowRule(honest.element, p, m, values);
      return worker::ReducePartialsAnswerOf(honest.element, std::move(p));
    }
  }
  std::mt19937 rng(static_cast<std::uint32_t>(from));
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  for (std::size_t m = from; m < p.size(); ++m) p[m] = Lies::MadeUp(d(rng));
  return worker::ReducePartialsAnswerOf(honest.element, std::move(p));
}

}  // namespace

worker::ReduceRuleAnswer ReducePartialsFor(kernels::Mode mode, const worker::ElementSide& side,
                                           std::uint32_t slot, std::int64_t e,
                                           const std::optional<SumsPlan>& lie) {
  auto honest = worker::AnswerReduceRule(static_cast<std::uint8_t>(mode), side, side.attrs, slot, e);
  EXPECT_TRUE(honest.ok()) << honest.status().ToString();
  if (!honest.ok()) return {};
  if (!lie || lie->kind == SumsLie::kHonest) return std::move(honest).value();
  return std::visit(
      [&](auto& answer) -> worker::ReduceRuleAnswer { return BendSums(side, std::move(answer), *lie); },
      *honest);
}

}  // namespace vt::test
