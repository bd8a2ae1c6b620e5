#pragma once
// What arbitrating a node of a job can cost, bounded before anyone
// arbitrates: the gas the precompile charges and the size of the payload it
// reads, for every node of the step graph the arbiter builds
// (Arbiter::BuildGraph), from the graph's declared shapes and the gas rules
// of contract_vm/gas.h — the same functions the precompile charges with.
// The referee prices bonds from the worst node and refuses a job whose
// worst arbitration the chain cannot carry (docs/referee.md, "Bond
// minimums").
//
// The bounds are upper bounds for the honest payload: every Merkle proof is
// taken at the tree's full height, a rounded-mode log at one byte per output
// value (a dense log; honest logs are far sparser), tensor encodings exact.

#include <cstdint>

#include "common/result.h"
#include "contract_vm/gas.h"
#include "contract_vm/node_spec.h"
#include "protocol/types.h"
#include "verify/element_game.h"

namespace vt::vm {

class Arbiter;

struct NodeArbitrationCost {
  std::uint64_t gas = 0;            // what Arbiter::Arbitrate charges for this node, at most
  std::uint64_t payload_bytes = 0;  // the encoded ArbitrationPayload, at most
  std::uint64_t record_bytes = 0;   // the node's encoded NodeRecord (EncodeNodeRecord)
};

// Node `index` of `graph` (index == graph.nodes.size(): the assemble node).
// Error "graph-invalid" when the graph lacks its declared sizes or refers
// to an unknown operator; Invalid "arb-bad-node-index" past the assemble node.
Result<NodeArbitrationCost> NodeArbitrationCostOf(const protocol::JobSpec& job, const StepGraph& graph,
                                                  std::uint64_t index) noexcept;

struct ArbitrationCost {
  std::uint64_t node_count = 0;         // leaves of a step's node tree (graph nodes + assemble)
  std::uint64_t max_gas = 0;            // the worst node's precompile gas …
  std::uint64_t max_gas_node = 0;       // … and which node it is
  std::uint64_t max_payload_bytes = 0;  // the worst node's payload size …
  std::uint64_t max_payload_node = 0;   // … and which node it is
  std::uint64_t max_record_bytes = 0;   // the largest node record of the step
  // The same over the nodes a repops game may have to arbitrate whole: not
  // verify::ElementCoversNode (the assemble node, nodes without a rule).
  std::uint64_t max_whole_gas = 0;
  std::uint64_t max_whole_payload_bytes = 0;
  std::uint64_t max_whole_payload_node = 0;
  verify::DescentBound descent;         // the element level's longest game (verify::BoundDescent)
  // The batch opening of its deciding move (verify/batch_opening.h: the
  // header of h_t, the data order and descent.batch_examples examples), at most.
  std::uint64_t batch_opening_bytes = 0;
  std::uint64_t batch_opening_gas = 0;
};

// The worst node of the job's step graph. Node shapes, kinds and flop counts
// do not depend on the step (kernels/graph: the step only enters attributes
// such as the learning-rate schedule's), so step 0 stands for every step.
// Charges building the graph (as Arbiter::BuildGraph does) and GraphGas for
// the evaluation, before evaluating.
Result<ArbitrationCost> WorstArbitrationCost(const Arbiter& arbiter, const protocol::JobSpec& job,
                                             GasMeter& gas) noexcept;

}  // namespace vt::vm
