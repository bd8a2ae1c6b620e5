#include "contract_vm/arbitration.h"

#include "contract_vm/graph_source.h"

namespace vt::vm {

Status GasCosts::Charge(verify::Cost cost, std::uint64_t amount) {
  switch (cost) {
    case verify::Cost::kHashBytes:
      return m_gas.Charge(HashGas(amount));
    case verify::Cost::kProofSiblings:
      return m_gas.Charge(ProofGas(amount));
    case verify::Cost::kMerkleHashes:
      return m_gas.Charge(MerkleGas(amount));
    case verify::Cost::kDataOrderElements:
      return m_gas.Charge(GasMeter::Mul(kGas.data_order_element, amount));
    case verify::Cost::kFlops:
      return m_gas.Charge(FlopsGas(amount));
    case verify::Cost::kExactFlops:
      return m_gas.Charge(ExactFlopsGas(amount));
    case verify::Cost::kExactOutputs:
      return m_gas.Charge(ExactOutputsGas(amount));
    case verify::Cost::kExactTerms:
      return m_gas.Charge(GasMeter::Mul(kGas.exact_term_gas, amount));
    case verify::Cost::kExactElements:
      return m_gas.Charge(GasMeter::Mul(kGas.exact_element_gas, amount));
    case verify::Cost::kExactTranscendentals:
      return m_gas.Charge(GasMeter::Mul(kGas.exact_transcendental_gas, amount));
  }
  return Status::Error("vm-unknown-cost", "no price for this cost");
}

Result<StepGraph> Arbiter::BuildGraph(const protocol::JobSpec& job, std::uint64_t step, GasMeter& gas) const {
  auto graph = m_graphs.Build(job, step);
  if (!graph.ok()) return graph.status();
  VT_TRY(gas.Charge(GraphGas(graph->nodes.size())));
  VT_TRY(ValidateStepGraph(*graph));
  return graph;
}

Result<StepShape> Arbiter::Shape(const protocol::JobSpec& job, std::uint64_t step, GasMeter& gas) const {
  VT_ASSIGN_OR_RETURN(StepGraph graph, BuildGraph(job, step, gas));
  return StepShape{graph.nodes.size() + 1, graph.num_state_tensors};
}

Result<NodeSpec> Arbiter::ExpectedNode(const protocol::JobSpec& job, std::uint64_t step, std::uint64_t index,
                                       GasMeter& gas) const {
  VT_ASSIGN_OR_RETURN(StepGraph graph, BuildGraph(job, step, gas));
  if (index > graph.nodes.size()) return Status::Invalid("arb-bad-node-index");
  return NodeSpecAt(graph, index);
}

Result<ArbitrationOutcome> Arbiter::Arbitrate(const ArbitrationCase& c, ByteSpan payload_bytes,
                                              GasMeter& gas) const {
  auto payload = DecodeExact<ArbitrationPayload>(payload_bytes);
  if (!payload.ok()) return Status::Invalid("arb-malformed", payload.status().ToString());
  VT_ASSIGN_OR_RETURN(StepGraph graph, BuildGraph(c.job, c.step, gas));
  GasCosts costs(gas);
  return verify::ArbitrateNode(m_graphs, graph, c, *payload, costs);
}

}  // namespace vt::vm
