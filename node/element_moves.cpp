#include "node/element_moves.h"

#include <string>
#include <utility>

#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "kernels/rounding_log_tree.h"
#include "verify/batch_opening.h"
#include "verify/element_game.h"

namespace vt::node {
namespace {

Result<verify::InputHashOpening> OpeningOf(const worker::ElementSide& side, std::uint32_t input) {
  if (input >= side.openings.size() || !side.openings[input])
    return Status::Invalid("elem-no-input-opening",
                           "input " + std::to_string(input) + " has no tensor hash opening");
  return *side.openings[input];
}

// Appends input `input`'s opening unless it is already there.
Status AddOpening(const worker::ElementSide& side, std::uint32_t input,
                  std::vector<verify::InputHashOpening>& out) {
  for (const verify::InputHashOpening& o : out)
    if (o.input == input) return Status::Ok();
  VT_ASSIGN_OR_RETURN(verify::InputHashOpening o, OpeningOf(side, input));
  out.push_back(std::move(o));
  return Status::Ok();
}

// m, where the walk over the partial results ended (leaf m+1 disputed, leaf m agreed).
Result<std::uint64_t> StepOf(const referee::ElementGame& e) {
  if (e.step_leaf == 0) return Status::Invalid("elem-bad-step", "the walk has not ended");
  return e.step_leaf - 1;
}

// A posting of any answer's partial results (its root, top, last leaf and end proofs).
template <class Answer>
referee::PartialsRootArgs RootMoveOf(const Answer& p, std::uint64_t game_id) {
  return referee::PartialsRootArgs{
      game_id, p.partials.tree().root(), p.partials.tree().top(), p.partials.back(), p.first, p.last};
}

}  // namespace

Result<Descent> PlanDescent(std::uint8_t job_mode, const verify::StepGraph& graph, std::uint64_t node_index,
                            const protocol::NodeRecord& a, const protocol::NodeRecord& b) {
  const bool rounded = job_mode == static_cast<std::uint8_t>(kernels::Mode::kRounded);
  if (rounded && node_index < graph.nodes.size() && a.output_hashes == b.output_hashes &&
      a.log_hash != b.log_hash)
    return Descent{false, true, 0, 0};
  VT_ASSIGN_OR_RETURN(verify::DescentStart start, verify::StartDescent(job_mode, graph, node_index, a, b));
  return Descent{start.assemble, false, start.slot, start.chunks};
}

referee::ChunkRootArgs ChunkRootMove(const crypto::MerkleTree& chunk_tree, std::uint64_t game_id,
                                     std::optional<referee::NodeLogProof> log) {
  return referee::ChunkRootArgs{game_id, chunk_tree.root(), chunk_tree.top(), std::move(log)};
}

Result<std::optional<referee::NodeLogProof>> NodeLogProofOf(const verify::ArbitrationPayload& payload,
                                                            const std::optional<verify::LogChain>& chain) {
  if (!chain) return std::optional<referee::NodeLogProof>{};
  auto log = kernels::DecodeRoundingLog(payload.log);
  if (!log.ok()) return Status::Invalid("elem-bad-log", log.status().ToString());
  return std::optional<referee::NodeLogProof>(referee::NodeLogProof{kernels::HashRoundingLog(*log), *chain});
}

Result<referee::RevealChunkArgs> RevealChunkMove(const worker::ElementSide& side, std::uint64_t game_id,
                                                 std::uint32_t slot, std::uint64_t chunk) {
  VT_ASSIGN_OR_RETURN(verify::ChunkOpening opening,
                      worker::AnswerChunk(side, slot, static_cast<std::int64_t>(chunk)));
  return referee::RevealChunkArgs{game_id, std::move(opening)};
}

referee::PartialsRootArgs PartialsRootMove(const worker::DotPartialsAnswer& mine, std::uint64_t game_id) {
  return std::visit([&](const auto& p) { return RootMoveOf(p, game_id); }, mine);
}

referee::PartialsRootArgs PartialsRootMove(const worker::ReduceRuleAnswer& mine, std::uint64_t game_id) {
  return std::visit([&](const auto& p) { return RootMoveOf(p, game_id); }, mine);
}

Result<referee::RevealStepArgs> RevealStepMove(const worker::ElementSide& side,
                                               const worker::DotPartialsAnswer& answer,
                                               const referee::ElementGame& e, std::uint64_t game_id,
                                               std::uint8_t node_root_of) {
  VT_ASSIGN_OR_RETURN(const std::uint64_t m, StepOf(e));
  referee::RevealStepArgs a;
  const verify::DotElement& element = std::visit(
      [&](const auto& mine) -> const verify::DotElement& {
        const auto reveal = worker::AnswerStepReveal(mine, m);
        a.p_m = reveal.p_m;
        a.next = reveal.next;
        a.p_m_proof = reveal.p_m_proof;
        a.next_proof = reveal.next_proof;
        return mine.element;
      },
      answer);
  VT_ASSIGN_OR_RETURN(const worker::FactorOpenings factors, worker::AnswerFactors(side, element, m));
  a.game_id = game_id;
  a.node_root_of = node_root_of;
  a.a = factors.a;
  a.b = factors.b;
  a.batch = factors.batch;
  // The factors' inputs, a's then b's, once each; never the node's own
  // output or the batch (its example travels in `batch`).
  for (std::uint32_t f : {element.a_input, element.b_input}) {
    if (!verify::OwnOutputSlot(f) && !verify::IsBatchInput(side.refs, f))
      VT_TRY(AddOpening(side, f, a.inputs));
  }
  return a;
}

Result<referee::RevealReduceStepArgs> RevealReduceStepMove(const worker::ElementSide& side,
                                                           const worker::ReduceRuleAnswer& answer,
                                                           const referee::ElementGame& e,
                                                           std::uint64_t game_id, std::uint8_t node_root_of) {
  VT_ASSIGN_OR_RETURN(const std::uint64_t m, StepOf(e));
  referee::RevealReduceStepArgs a;
  a.game_id = game_id;
  a.node_root_of = node_root_of;
  std::vector<verify::StepRead> read_at;
  VT_TRY(std::visit(
      [&](const auto& mine) -> Status {
        const auto reveal = worker::AnswerReduceReveal(mine, m);
        VT_ASSIGN_OR_RETURN(auto ops, worker::AnswerReduceOperands(side, mine, m));
        a.next = reveal.next;
        a.next_proof = reveal.next_proof;
        a.left = ops.left;
        a.left_proof = ops.left_proof;
        if (ops.right) a.right = std::make_pair(verify::PartialLeaf(ops.right->first), ops.right->second);
        a.reads = std::move(ops.reads);
        a.batch = std::move(ops.batch);
        read_at = std::move(ops.read_at);
        return Status::Ok();
      },
      answer));
  for (const verify::StepRead& r : read_at) {
    if (verify::IsBatchInput(side.refs, r.input)) continue;
    if (verify::OwnOutputSlot(r.input)) continue;  // the node's own agreed output: no input opened
    VT_TRY(AddOpening(side, r.input, a.inputs));
  }
  return a;
}

Result<referee::OpenElementArgs> OpenElementMove(const worker::ElementSide& side,
                                                 const referee::ElementGame& e, std::uint64_t game_id,
                                                 std::uint8_t node_root_of,
                                                 const worker::ReduceRuleAnswer* mine) {
  referee::OpenElementArgs a;
  a.game_id = game_id;
  a.node_root_of = node_root_of;
  // A rounded epilogue's entry at the value (the side holds the node's log).
  const auto open_log = [&] {
    a.log = kernels::RoundingLogTree(*side.log).Open(verify::LogPositionOf(e.output_shapes, e.slot, e.value));
  };
  if (e.kind == verify::ElementKind::kReduce) {
    // A rounded sum's epilogue opens the log, and the value's leaf where
    // the value has a slack (verify::OpenValueLeaf).
    if (!side.log) return Status::Invalid("elem-no-log", "a sum's epilogue opens the node's rounding log");
    const auto* sums = mine != nullptr ? std::get_if<worker::RoundedSumAnswer>(mine) : nullptr;
    if (sums == nullptr)
      return Status::Invalid("elem-no-partials", "a sum's epilogue needs the party's fp64 sums");
    open_log();
    if (sums->element.slack != verify::ReduceSlack::kNone) {
      const std::uint64_t at = sums->element.ValueSteps();
      a.value_leaf = verify::LeafOpening{sums->partials[at], sums->partials.tree().Prove(at)};
    }
    return a;
  }
  if (e.kind == verify::ElementKind::kDot) {
    VT_ASSIGN_OR_RETURN(verify::DotElement el,
                        verify::DotElementAt(side.op_kind, side.attrs, e.slot, e.value, e.input_shapes));
    if (!el.bias_input && !side.log)
      return Status::Invalid("elem-no-bias", "the dot value has no epilogue to open");
    if (side.log) open_log();
    if (el.bias_input) {
      const std::uint32_t bias = *el.bias_input;
      VT_TRY(AddOpening(side, bias, a.inputs));
      a.slices.push_back(verify::OpenSlice(side.inputs.at(bias), verify::InputSlice{el.bias_index, 1, {1}}));
    }
    return a;
  }
  VT_ASSIGN_OR_RETURN(verify::ElementPlan plan,
                      verify::PlanElement(side.op_kind, side.attrs, e.slot, e.value, e.input_shapes));
  // One chunk list per read slice not of the batch (own outputs from the
  // party's agreed outputs), one hash opening per read input, and the
  // examples the batch slices read.
  const std::vector<std::uint64_t> positions = verify::PlanBatchPositions(plan, side.refs, e.input_shapes);
  if (!positions.empty()) {
    if (side.examples.empty())
      return Status::Invalid("elem-no-input-opening", "the side has no batch openings");
    a.batch = verify::OpenBatch(side.header, side.header_proof, side.examples, positions);
  }
  for (std::uint32_t i = 0; i < plan.inputs.size(); ++i) {
    verify::InputSlice slice = plan.inputs[i];
    if (slice.count == 0) continue;
    if (slice.output_slot >= 0) {
      a.slices.push_back(
          verify::OpenSlice(side.outputs.at(static_cast<std::size_t>(slice.output_slot)), slice));
      continue;
    }
    if (verify::IsBatchInput(side.refs, static_cast<std::uint32_t>(i))) continue;
    if (slice.row_from >= 0) {
      // The row a read value names (embedding's index, read from this side's batch).
      const verify::InputSlice& from = plan.inputs.at(static_cast<std::size_t>(slice.row_from));
      const kernels::Tensor& rows_from = side.inputs.at(static_cast<std::size_t>(slice.row_from));
      VT_ASSIGN_OR_RETURN(slice, verify::ResolveSlice(slice, rows_from[from.first]));
    }
    VT_TRY(AddOpening(side, i, a.inputs));
    a.slices.push_back(verify::OpenSlice(side.inputs.at(i), slice));
  }
  return a;
}

Result<referee::OpenElementArgs> OpenStateLeafMove(const verify::ArbitrationPayload& assemble,
                                                   std::uint64_t leaf, std::uint64_t game_id,
                                                   std::uint8_t node_root_of) {
  VT_ASSIGN_OR_RETURN(worker::StateLeafAnswer answer, worker::AnswerStateLeaf(assemble, leaf));
  referee::OpenElementArgs a;
  a.game_id = game_id;
  a.node_root_of = node_root_of;
  a.inputs = std::move(answer.inputs);
  a.batch = std::move(answer.header);
  return a;
}

}  // namespace vt::node
