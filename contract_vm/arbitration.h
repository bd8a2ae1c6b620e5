#pragma once
// The arbitration precompile (docs/referee.md, "The game", Arbitration): the
// referee hands it the facts the dispute game has established and the
// disputed node's inputs (the opaque `payload`, a verify::ArbitrationPayload,
// encoded); it decodes them, builds the step graph and applies the one node
// rule of verify/arbitrate.h — the same function a worker calls to answer a
// dispute — charging gas for every piece of work before it is done.
//
// Metered: Merkle and tensor hashing per byte and per node, and the operator
// by its flop count (kernels OpFlops / GasSchedule::flops_per_gas).
//
// This header carries no kernels types.

#include <cstdint>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/gas.h"
#include "contract_vm/node_spec.h"
#include "protocol/types.h"
#include "verify/arbitrate.h"
#include "verify/wire.h"

namespace vt::vm {

// The precompile's names for the dispute's wire types and verdicts, which are
// defined once, in verify/.
using verify::ArbitrationCase;
using verify::ArbitrationKind;
using verify::ArbitrationOutcome;
using verify::ArbitrationPayload;
using verify::ExampleOpening;
using verify::InputOpening;
using verify::StepGraphSource;

// verify's costs charged as gas: the one price list (contract_vm/gas.h) for
// the node rule and the log chain.
class GasCosts final : public verify::Meter {
 public:
  explicit GasCosts(GasMeter& gas) : m_gas(gas) {}
  Status Charge(verify::Cost cost, std::uint64_t amount) override;

 private:
  GasMeter& m_gas;
};

// A step's shape, for the referee's node-level tree.
struct StepShape {
  std::uint64_t node_count = 0;         // graph nodes + 1 (the assemble node)
  std::uint64_t num_state_tensors = 0;
};

class Arbiter {
 public:
  // `graphs` must outlive the arbiter.
  explicit Arbiter(const StepGraphSource& graphs) : m_graphs(graphs) {}

  Result<StepShape> Shape(const protocol::JobSpec& job, std::uint64_t step, GasMeter& gas) const;
  // The spec of leaf `index` of the node tree (index == nodes: assemble).
  // Invalid "arb-bad-node-index" when index >= node_count.
  Result<NodeSpec> ExpectedNode(const protocol::JobSpec& job, std::uint64_t step, std::uint64_t index,
                                GasMeter& gas) const;

  // Invalid (the request is wrong, nobody is at fault): "arb-malformed", the
  // reasons of verify::ArbitrateNode, "tx-out-of-gas".
  Result<ArbitrationOutcome> Arbitrate(const ArbitrationCase& c, ByteSpan payload, GasMeter& gas) const;

  // The step graph every method above works on (charged GraphGas, then
  // checked by ValidateStepGraph); contract_vm/arbitration_cost.h bounds
  // arbitration costs from it.
  Result<StepGraph> BuildGraph(const protocol::JobSpec& job, std::uint64_t step, GasMeter& gas) const;

  // The graph source, for the element level's batch openings (verify/batch_opening.h).
  const StepGraphSource& graphs() const { return m_graphs; }

 private:
  const StepGraphSource& m_graphs;
};

}  // namespace vt::vm
