#include "tests/referee/element_agent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "kernels/arith_hd.h"
#include "verify/element.h"
#include "verify/element_game.h"

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
  for (const protocol::InputRef& ref : rec.inputs) {
    switch (ref.source) {
      case protocol::InputSource::kState:
        side.inputs.push_back(h.states[step][ref.index]);
        break;
      case protocol::InputSource::kNode:
        side.inputs.push_back(h.outputs[step][ref.index][ref.slot]);
        break;
      case protocol::InputSource::kBatch:
        side.inputs.emplace_back();
        break;
    }
  }
  side.outputs = h.outputs[step][node];
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

referee::ChunkRootArgs MakeChunkRoot(const worker::ElementSide& side, std::uint64_t game_id,
                                     std::uint32_t slot) {
  const crypto::MerkleTree& tree = ChunkTreeFor(side, slot);
  return referee::ChunkRootArgs{game_id, tree.root(), tree.top()};
}

referee::RevealChunkArgs MakeRevealChunk(const worker::ElementSide& side, std::uint64_t game_id,
                                         std::uint32_t slot, std::uint64_t chunk) {
  auto opening = worker::AnswerChunk(side, slot, static_cast<std::int64_t>(chunk));
  EXPECT_TRUE(opening.ok()) << opening.status().ToString();
  return referee::RevealChunkArgs{game_id, opening.ok() ? *opening : verify::ChunkOpening{}};
}

worker::PartialsAnswer PartialsFor(const worker::ElementSide& side, std::uint32_t slot, std::int64_t e,
                                   const std::optional<SumsPlan>& lie) {
  auto honest = worker::AnswerPartials(side, slot, e);
  EXPECT_TRUE(honest.ok()) << honest.status().ToString();
  if (!lie || lie->kind == SumsLie::kHonest) return std::move(honest).value();
  const verify::DotElement& el = honest->element;
  std::vector<float> p = honest->partials;
  const std::size_t from = static_cast<std::size_t>(std::clamp<std::uint64_t>(lie->from, 1, el.k));
  std::mt19937 rng(static_cast<std::uint32_t>(from));
  if (lie->kind == SumsLie::kDiverge) {
    p[from] = std::nextafter(p[from], INFINITY);
    for (std::size_t m = from + 1; m < p.size(); ++m) {
      // The factors as the worker opens them (own outputs, padding taps: +0).
      const auto mi = static_cast<std::int64_t>(m - 1);
      const worker::FactorOpenings f = worker::AnswerFactors(side, el, m - 1);
      const auto at = [](const verify::ValueOpening& o, std::int64_t i) {
        return i < 0 ? 0.0f : o.chunk.values[static_cast<std::size_t>(i % verify::kChunkValues)];
      };
      p[m] = kernels::hd::RepopsStep(p[m - 1], at(f.a, el.AIndex(mi)), at(f.b, el.BIndex(mi)));
    }
  } else {
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    for (std::size_t m = from; m < p.size(); ++m) p[m] = d(rng);
  }
  return worker::PartialsAnswerOf(el, std::move(p), honest->bias);
}

referee::PartialsRootArgs MakePartialsRoot(const worker::PartialsAnswer& mine, std::uint64_t game_id) {
  return referee::PartialsRootArgs{game_id,    mine.tree.root(), mine.tree.top(), mine.partials.back(),
                                   mine.first, mine.last};
}

referee::RevealStepArgs MakeRevealStep(const History& h, const worker::ElementSide& side,
                                       const worker::PartialsAnswer& mine, const referee::Game& g,
                                       const referee::ElementGame& e, std::uint8_t node_root_of) {
  const std::uint64_t m = e.step_leaf - 1;
  const worker::StepReveal reveal = worker::AnswerStepReveal(mine, m);
  const worker::FactorOpenings factors = worker::AnswerFactors(side, mine.element, m);
  referee::RevealStepArgs a;
  a.game_id = g.id;
  a.node_root_of = node_root_of;
  a.p_m = reveal.p_m;
  a.next = reveal.next;
  a.p_m_proof = reveal.p_m_proof;
  a.next_proof = reveal.next_proof;
  a.a = factors.a;
  a.b = factors.b;
  // The factors' inputs, a's then b's, once each; never the node's own output.
  for (std::uint32_t f : {mine.element.a_input, mine.element.b_input}) {
    if (verify::OwnOutputSlot(f)) continue;
    if (!a.inputs.empty() && a.inputs.back().input == f) continue;
    a.inputs.push_back(InputHashOf(h, g.step, g.node_index, f));
  }
  return a;
}

worker::ReducePartialsAnswer ReducePartialsFor(const worker::ElementSide& side, std::uint32_t slot,
                                               std::int64_t e, const std::optional<SumsPlan>& lie) {
  auto honest = worker::AnswerReducePartials(side, side.attrs, slot, e);
  EXPECT_TRUE(honest.ok()) << honest.status().ToString();
  if (!lie || lie->kind == SumsLie::kHonest) return std::move(honest).value();
  std::vector<float> p = honest->partials;
  const std::size_t from = static_cast<std::size_t>(std::clamp<std::uint64_t>(lie->from, 1, p.size() - 1));
  std::mt19937 rng(static_cast<std::uint32_t>(from));
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  for (std::size_t m = from; m < p.size(); ++m) p[m] = d(rng);
  return worker::ReducePartialsAnswerOf(honest->element, std::move(p));
}

referee::PartialsRootArgs MakeReducePartialsRoot(const worker::ReducePartialsAnswer& mine,
                                                 std::uint64_t game_id) {
  return referee::PartialsRootArgs{game_id,    mine.tree.root(), mine.tree.top(), mine.partials.back(),
                                   mine.first, mine.last};
}

referee::RevealReduceStepArgs MakeRevealReduceStep(const History& h, const worker::ElementSide& side,
                                                   const worker::ReducePartialsAnswer& mine,
                                                   const referee::Game& g, const referee::ElementGame& e,
                                                   std::uint8_t node_root_of) {
  const std::uint64_t m = e.step_leaf - 1;
  const worker::StepReveal reveal = worker::AnswerReduceReveal(mine, m);
  auto ops = worker::AnswerReduceOperands(side, mine, m);
  EXPECT_TRUE(ops.ok()) << ops.status().ToString();
  referee::RevealReduceStepArgs a;
  a.game_id = g.id;
  a.node_root_of = node_root_of;
  a.next = reveal.next;
  a.next_proof = reveal.next_proof;
  if (!ops.ok()) return a;
  a.left = ops->left;
  a.left_proof = ops->left_proof;
  auto step = verify::ReduceStepAt(mine.element, m + 1);
  EXPECT_TRUE(step.ok());
  if (step.ok() && step->combine) {
    a.right = std::make_pair(ops->right, ops->right_proof);
    return a;
  }
  a.reads = ops->reads;
  if (!step.ok()) return a;
  for (const auto& [input, index] : verify::TermReads(mine.element, step->segment, step->term)) {
    bool seen = false;
    for (const verify::InputHashOpening& o : a.inputs) seen = seen || o.input == input;
    if (!seen) a.inputs.push_back(InputHashOf(h, g.step, g.node_index, input));
  }
  return a;
}

referee::OpenElementArgs MakeOpenElement(const History& h, const worker::ElementSide& side,
                                         const referee::Game& g, const referee::ElementGame& e,
                                         std::uint8_t node_root_of) {
  referee::OpenElementArgs a;
  a.game_id = g.id;
  a.node_root_of = node_root_of;
  if (e.kind == verify::ElementKind::kDot) {
    auto el = verify::DotElementAt(side.op_kind, side.attrs, e.slot, e.value, e.input_shapes);
    EXPECT_TRUE(el.ok() && el->bias_input);
    const std::uint32_t bias = *el->bias_input;
    a.inputs.push_back(InputHashOf(h, g.step, g.node_index, bias));
    a.slices.push_back(verify::OpenSlice(side.inputs[bias], verify::InputSlice{el->bias_index, 1, {1}}));
    return a;
  }
  auto plan = verify::PlanElement(side.op_kind, side.attrs, e.slot, e.value, e.input_shapes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  // One chunk list per read slice (own outputs from the party's agreed
  // outputs), one hash opening per read input.
  for (std::uint32_t i = 0; i < plan->inputs.size(); ++i) {
    const verify::InputSlice& slice = plan->inputs[i];
    if (slice.count == 0) continue;
    if (slice.output_slot >= 0) {
      a.slices.push_back(verify::OpenSlice(side.outputs[static_cast<std::size_t>(slice.output_slot)], slice));
      continue;
    }
    a.inputs.push_back(InputHashOf(h, g.step, g.node_index, i));
    a.slices.push_back(verify::OpenSlice(side.inputs[i], slice));
  }
  return a;
}

}  // namespace vt::test
