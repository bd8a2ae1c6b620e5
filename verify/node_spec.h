#pragma once
// The operator graph of one training step as the referee sees it: which
// operator each node runs, with which attributes, on which inputs. The graph
// is a pure function of the job spec and the step number (docs/referee.md,
// "The game", level 3), so the referee can tell a correct node record
// from a malformed one without trusting either party.
//
// This is the protocol view of kernels::graph::StepGraph — the one graph the
// worker trains with — made by exactly one function, KernelsGraphSource::Build
// (verify/graph_source.h); nothing else builds it.
//
// Protocol types only (no kernels types): referee/ includes this header.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "protocol/types.h"

namespace vt::verify {

// The op kind of the pseudo-node that closes every step: it "computes"
// h_{t+1} = StateHashFromLeaves(hashes of next_state, NextHeader(header_t))
// and its record's single output hash is h_{t+1}. kernels never uses this
// value for an operator (OpKind values are below 0x8000).
inline constexpr std::uint16_t kAssembleOpKind = 0xFFFF;

struct NodeSpec {
  std::uint16_t op_kind = 0;
  Bytes attrs;  // canonical kernels OpAttrs (empty for the assemble node)
  std::vector<protocol::InputRef> inputs;
  std::uint32_t num_outputs = 0;
  // Rounded mode: the node's τ, TauTable::Lookup(NodeTauKey) of the job's
  // tau table (verify/graph_source.h); 0 otherwise. The operator's own
  // error bound β (kernels/rounding.h) is recomputed by the kernels.
  std::uint32_t tau_q16 = 0;
  // The declared dims of each output, for bounding the cost of arbitrating
  // the node before anyone does (contract_vm/arbitration_cost.h); part of no
  // record. Empty for the assemble node.
  std::vector<std::vector<std::int64_t>> output_shapes;
  bool operator==(const NodeSpec&) const = default;
};

struct StepGraph {
  std::uint32_t num_state_tensors = 0;  // tensors of h_t, in name order
  std::vector<NodeSpec> nodes;          // canonical topological order
  // For each tensor of h_{t+1} (same names, same order): where it comes
  // from — an output of a node, or a state tensor carried over unchanged.
  std::vector<protocol::InputRef> next_state;
  // Declared sizes, for the same cost bound: the state tensors' names and
  // dims (name order) and the batch dims ([inputs, targets], leading B).
  std::vector<std::string> state_names;
  std::vector<std::vector<std::int64_t>> state_shapes;
  std::vector<std::vector<std::int64_t>> batch_shapes;
  bool operator==(const StepGraph&) const = default;
};

// Structural checks every graph source must pass (a graph that fails them is
// a bug in the graph builder, reported as Status::Error "graph-invalid"):
// inputs refer only to earlier nodes and existing outputs, state indices are
// below num_state_tensors, batch indices are 0 or 1, next_state has one entry
// per state tensor and no batch entry.
Status ValidateStepGraph(const StepGraph& graph) noexcept;

// The spec of leaf `index` of a step's node tree: nodes[index], or the
// assemble node when index == nodes.size(). Precondition: index <= nodes.size().
NodeSpec NodeSpecAt(const StepGraph& graph, std::uint64_t index);

// The number of output values `spec` declares (Σ over its output shapes of
// the product of dims; saturates at 2^64 − 1, negative dims count as 0).
std::uint64_t DeclaredOutputValues(const NodeSpec& spec) noexcept;

// Does a revealed node record match the spec? Invalid with "record-bad-op",
// "record-bad-attrs", "record-bad-inputs", "record-bad-output-count" or
// "record-bad-log-hash" (outside rounded mode the log hash must be zero).
Status CheckRecordAgainstSpec(const protocol::NodeRecord& record, const NodeSpec& spec, bool rounded) noexcept;

}  // namespace vt::verify
