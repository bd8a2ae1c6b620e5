#include "verify/node_spec.h"

#include <limits>
#include <string>

namespace vt::verify {

Status ValidateStepGraph(const StepGraph& graph) noexcept {
  auto bad = [](const std::string& why) { return Status::Error("graph-invalid", why); };
  auto check_ref = [&](const protocol::InputRef& in, std::size_t node) -> Status {
    switch (in.source) {
      case protocol::InputSource::kState:
        if (in.index >= graph.num_state_tensors || in.slot != 0) return bad("state input out of range");
        return Status::Ok();
      case protocol::InputSource::kBatch:
        if (in.index > 1 || in.slot != 0) return bad("batch input out of range");
        return Status::Ok();
      case protocol::InputSource::kNode:
        if (in.index >= node) return bad("node input does not refer to an earlier node");
        if (in.slot >= graph.nodes[in.index].num_outputs) return bad("node input slot out of range");
        return Status::Ok();
    }
    return bad("unknown input source");
  };
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const NodeSpec& n = graph.nodes[i];
    if (n.op_kind == kAssembleOpKind) return bad("node uses the assemble op kind");
    if (n.num_outputs == 0) return bad("node without outputs");
    for (const auto& in : n.inputs) VT_TRY(check_ref(in, i));
  }
  if (graph.next_state.size() != graph.num_state_tensors) return bad("next_state size differs from the state");
  for (const auto& in : graph.next_state) {
    if (in.source == protocol::InputSource::kBatch) return bad("next state taken from the batch");
    VT_TRY(check_ref(in, graph.nodes.size()));
  }
  return Status::Ok();
}

NodeSpec NodeSpecAt(const StepGraph& graph, std::uint64_t index) {
  if (index < graph.nodes.size()) return graph.nodes[index];
  NodeSpec assemble;
  assemble.op_kind = kAssembleOpKind;
  assemble.inputs = graph.next_state;
  assemble.num_outputs = 1;
  return assemble;
}

Status CheckRecordAgainstSpec(const protocol::NodeRecord& record, const NodeSpec& spec, bool rounded) noexcept {
  if (record.op_kind != spec.op_kind) return Status::Invalid("record-bad-op");
  if (record.attrs != spec.attrs) return Status::Invalid("record-bad-attrs");
  if (record.inputs != spec.inputs) return Status::Invalid("record-bad-inputs");
  if (record.output_hashes.size() != spec.num_outputs) return Status::Invalid("record-bad-output-count");
  // The assemble node never rounds; outside rounded mode no node does.
  const bool logs = rounded && spec.op_kind != kAssembleOpKind;
  if (!logs && !record.log_hash.IsZero()) return Status::Invalid("record-bad-log-hash");
  return Status::Ok();
}

std::uint64_t DeclaredOutputValues(const NodeSpec& spec) noexcept {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t total = 0;
  for (const std::vector<std::int64_t>& dims : spec.output_shapes) {
    std::uint64_t numel = 1;
    for (std::int64_t d : dims) {
      const std::uint64_t u = d < 0 ? 0 : static_cast<std::uint64_t>(d);
      numel = (u != 0 && numel > kMax / u) ? kMax : numel * u;
    }
    total = total > kMax - numel ? kMax : total + numel;
  }
  return total;
}

}  // namespace vt::verify
