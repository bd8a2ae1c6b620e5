#include "contract_vm/arbitration_cost.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "common/encoding.h"
#include "contract_vm/arbitration.h"
#include "crypto/merkle.h"
#include "kernels/mode.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor_codec.h"
#include "protocol/data_order.h"
#include "protocol/state.h"

namespace vt::vm {
namespace {

using Dims = std::vector<std::int64_t>;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t Add(std::uint64_t a, std::uint64_t b) { return GasMeter::Add(a, b); }
std::uint64_t Mul(std::uint64_t a, std::uint64_t b) { return GasMeter::Mul(a, b); }

// Siblings of the longest inclusion proof in a tree of `leaves` leaves.
std::uint64_t ProofSiblings(std::uint64_t leaves) {
  if (!crypto::MerkleShape::IsValidLeafCount(leaves)) return 64;
  return crypto::MerkleShape(leaves).height();
}
// crypto Encode(MerkleProof): u64 index, u64 count, the siblings.
std::uint64_t ProofBytes(std::uint64_t siblings) { return Add(16, Mul(32, siblings)); }
// Writer::PutBytes: a varint length, then the bytes.
std::uint64_t BytesField(std::uint64_t n) { return Add(VarintSize(n), n); }

std::uint64_t Numel(const Dims& d) {
  std::uint64_t n = 1;
  for (std::int64_t x : d) n = Mul(n, x < 0 ? 0 : static_cast<std::uint64_t>(x));
  return n;
}
// kernels EncodeTensor: the header, then numel × 4 value bytes.
std::uint64_t TensorBytes(const Dims& d) {
  Writer w;
  kernels::EncodeTensorHeader(w, d);
  return Add(w.size(), Mul(Numel(d), sizeof(float)));
}

Status Bad(const std::string& what) { return Status::Error("graph-invalid", what); }

struct Trees {
  std::uint64_t state_siblings;  // h_t: the state tensors and the header
  std::uint64_t node_siblings;   // the node-record tree of a step
  std::uint64_t data_siblings;   // the dataset commitment
};

// The batch's pieces (verify/batch_opening.h, the rules whole arbitration
// shares): the header of h_t with its proof, the data order — charged per
// permutation word before it is built, most with the cursor on an epoch's
// last example — and one example: its leaf and its proof in the dataset.
struct BatchCost {
  std::uint64_t header_bytes = 0, header_gas = 0, order_gas = 0, example_bytes = 0, example_gas = 0;
};
BatchCost BatchCostOf(const protocol::JobSpec& job, const StepGraph& graph, const Trees& trees) {
  BatchCost c;
  const protocol::StateHeader header{kMax, kMax, kMax, kMax, graph.state_names};
  c.header_bytes = Add(protocol::EncodeStateHeader(header).size(), ProofBytes(trees.state_siblings));
  c.header_gas = ProofGas(trees.state_siblings);
  const std::uint64_t last = job.dataset_size > 0 ? job.dataset_size - 1 : 0;
  c.order_gas =
      Mul(kGas.data_order_element, protocol::BatchIndicesWork(job.dataset_size, last, job.batch_size));
  auto per_example = [&](const Dims& d) {
    return TensorBytes(Dims(d.begin() + (d.empty() ? 0 : 1), d.end()));
  };
  const std::uint64_t leaf = Add(per_example(graph.batch_shapes[0]), per_example(graph.batch_shapes[1]));
  c.example_bytes = Add(BytesField(leaf), ProofBytes(trees.data_siblings));
  c.example_gas = Add(HashGas(leaf), ProofGas(trees.data_siblings));
  return c;
}

Trees TreesOf(const protocol::JobSpec& job, const StepGraph& graph) {
  return Trees{ProofSiblings(std::uint64_t{graph.num_state_tensors} + 1),
               ProofSiblings(graph.nodes.size() + 1), ProofSiblings(job.dataset_size)};
}

}  // namespace

Result<NodeArbitrationCost> NodeArbitrationCostOf(const protocol::JobSpec& job, const StepGraph& graph,
                                                  std::uint64_t index) noexcept {
  const std::uint64_t nodes = graph.nodes.size();
  if (index > nodes) return Status::Invalid("arb-bad-node-index");
  if (graph.state_shapes.size() != graph.num_state_tensors || graph.state_names.size() != graph.num_state_tensors ||
      graph.batch_shapes.size() != 2)
    return Bad("the step graph lacks its declared sizes");
  const Trees trees = TreesOf(job, graph);
  const BatchCost batch = BatchCostOf(job, graph, trees);
  const NodeSpec spec = NodeSpecAt(graph, index);
  const bool assemble = index == nodes;

  // The declared dims of an input.
  auto dims_of = [&](const protocol::InputRef& ref) -> Result<const Dims*> {
    switch (ref.source) {
      case protocol::InputSource::kState:
        if (ref.index >= graph.state_shapes.size()) break;
        return &graph.state_shapes[ref.index];
      case protocol::InputSource::kBatch:
        if (ref.index >= graph.batch_shapes.size()) break;
        return &graph.batch_shapes[ref.index];
      case protocol::InputSource::kNode:
        if (ref.index >= nodes || ref.slot >= graph.nodes[ref.index].output_shapes.size()) break;
        return &graph.nodes[ref.index].output_shapes[ref.slot];
    }
    return Bad("an input without a declared shape");
  };
  // The record of node i as its author commits it (all hashes present).
  auto record_bytes = [&](const NodeSpec& s) -> std::uint64_t {
    protocol::NodeRecord rec;
    rec.op_kind = s.op_kind;
    rec.attrs = s.attrs;
    rec.inputs = s.inputs;
    rec.output_hashes.resize(s.num_outputs);
    return protocol::EncodeNodeRecord(rec).size();
  };

  NodeArbitrationCost cost;
  cost.record_bytes = record_bytes(spec);

  // The header of h_t, opened against h_t (Arbitrate: VerifyStateHeader).
  cost.payload_bytes = batch.header_bytes;
  cost.gas = Add(GraphGas(nodes), batch.header_gas);

  // The inputs, each opened in h_t or through its producer's record.
  bool reads_batch = false;
  cost.payload_bytes = Add(cost.payload_bytes, VarintSize(spec.inputs.size()));
  std::vector<kernels::Shape> shapes;
  for (const protocol::InputRef& ref : spec.inputs) {
    VT_ASSIGN_OR_RETURN(const Dims* dims, dims_of(ref));
    shapes.push_back(*dims);
    std::uint64_t bytes = Add(BytesField(0), 32 + 1 + 1);  // tensor length, tensor_hash, both optional flags
    if (ref.source == protocol::InputSource::kBatch) {
      reads_batch = true;
      cost.payload_bytes = Add(cost.payload_bytes, bytes);
      continue;
    }
    const bool state = ref.source == protocol::InputSource::kState;
    const std::uint64_t siblings = state ? trees.state_siblings : trees.node_siblings;
    bytes = Add(bytes, ProofBytes(siblings));
    cost.gas = Add(cost.gas, ProofGas(siblings));
    if (!state) bytes = Add(bytes, record_bytes(graph.nodes[ref.index]));
    if (!assemble) {
      const std::uint64_t t = TensorBytes(*dims);
      bytes = Add(bytes, Add(t, VarintSize(t)));
      cost.gas = Add(cost.gas, HashGas(t));
    }
    cost.payload_bytes = Add(cost.payload_bytes, bytes);
  }

  // The batch's examples, each opened in the dataset commitment.
  cost.payload_bytes = Add(cost.payload_bytes, VarintSize(reads_batch ? job.batch_size : 0));
  if (reads_batch) {
    cost.payload_bytes = Add(cost.payload_bytes, Mul(job.batch_size, batch.example_bytes));
    cost.gas = Add(Add(cost.gas, Mul(job.batch_size, batch.example_gas)), batch.order_gas);
  }

  if (assemble) {
    cost.payload_bytes = Add(cost.payload_bytes, BytesField(0));  // no log
    cost.gas = Add(cost.gas, MerkleGas(Mul(2, spec.inputs.size() + 1)));
    return cost;
  }

  // Re-execution: the operator's flops, then hashing every output.
  auto kind = kernels::OpKindFromValue(spec.op_kind);
  if (!kind.ok()) return Bad("node op kind: " + kind.status().ToString());
  auto attrs = DecodeExact<kernels::OpAttrs>(spec.attrs);
  if (!attrs.ok()) return Bad("node attributes: " + attrs.status().ToString());
  if (spec.output_shapes.size() != spec.num_outputs) return Bad("outputs without declared shapes");
  {
    // What the precompile charges for running it, by the one rule it charges
    // with (verify::ChargeReexecution through GasCosts; mode-dependent).
    GasMeter reexecution(kMax);
    GasCosts costs(reexecution);
    VT_TRY(verify::ChargeReexecution(costs, job.mode, spec.op_kind, kernels::OpFlops(*kind, *attrs, shapes),
                                     verify::DeclaredOutputValues(spec), shapes, attrs->ints));
    cost.gas = Add(cost.gas, reexecution.used());
  }
  std::uint64_t outputs = 0;
  for (const Dims& d : spec.output_shapes) {
    outputs = Add(outputs, Numel(d));
    cost.gas = Add(cost.gas, HashGas(Mul(Numel(d), sizeof(float))));
  }
  // Rounded mode: the node's log, at most one byte per output value (varint
  // deltas of 1; sparser logs spend more bytes per entry on fewer entries)
  // plus the compressor's framing. Its decoding is charged by the payload it
  // declares — under 2 bytes an output value (an entry of delta δ takes at
  // most 1 + 2δ/7 bytes, the deltas sum to at most the outputs) — and its
  // tree at two hashes an entry, at most one entry an output value
  // (verify::ArbitrateNode).
  const bool rounded = job.mode == static_cast<std::uint8_t>(kernels::Mode::kRounded);
  const std::uint64_t log = rounded ? Add(Add(outputs, outputs / 64), 64) : 0;
  cost.payload_bytes = Add(cost.payload_bytes, BytesField(log));
  if (rounded) cost.gas = Add(cost.gas, Add(HashGas(Add(Mul(outputs, 2), 16)), MerkleGas(Mul(outputs, 2))));
  return cost;
}

Result<ArbitrationCost> WorstArbitrationCost(const Arbiter& arbiter, const protocol::JobSpec& job,
                                             GasMeter& gas) noexcept {
  VT_ASSIGN_OR_RETURN(StepGraph graph, arbiter.BuildGraph(job, 0, gas));
  VT_TRY(gas.Charge(GraphGas(graph.nodes.size())));
  ArbitrationCost worst;
  worst.node_count = graph.nodes.size() + 1;
  for (std::uint64_t i = 0; i <= graph.nodes.size(); ++i) {
    VT_ASSIGN_OR_RETURN(NodeArbitrationCost c, NodeArbitrationCostOf(job, graph, i));
    if (c.gas > worst.max_gas) {
      worst.max_gas = c.gas;
      worst.max_gas_node = i;
    }
    if (c.payload_bytes > worst.max_payload_bytes) {
      worst.max_payload_bytes = c.payload_bytes;
      worst.max_payload_node = i;
    }
    worst.max_record_bytes = std::max(worst.max_record_bytes, c.record_bytes);
    if (!verify::ElementCoversNode(job.mode, graph, i)) {
      worst.max_whole_gas = std::max(worst.max_whole_gas, c.gas);
      if (c.payload_bytes > worst.max_whole_payload_bytes) {
        worst.max_whole_payload_bytes = c.payload_bytes;
        worst.max_whole_payload_node = i;
      }
    }
  }
  VT_ASSIGN_OR_RETURN(worst.descent, verify::BoundDescent(job.mode, graph));
  if (worst.descent.batch_examples > 0 || worst.descent.header_opening) {
    // The batch opening of the element level's deciding move (its positions:
    // one word each), or the header of h_t alone (the assemble node's walk).
    const BatchCost batch = BatchCostOf(job, graph, TreesOf(job, graph));
    const std::uint64_t n = worst.descent.batch_examples;
    worst.batch_opening_bytes =
        Add(Add(batch.header_bytes, VarintSize(n)), Mul(n, Add(batch.example_bytes, 8 + VarintSize(n))));
    worst.batch_opening_gas =
        Add(Add(batch.header_gas, n > 0 ? batch.order_gas : 0), Mul(n, batch.example_gas));
    if (worst.descent.header_opening) {
      // verify::TrueHeaderLeaf hashes the advanced header.
      const protocol::StateHeader next{kMax, kMax, kMax, kMax, graph.state_names};
      worst.batch_opening_gas =
          Add(worst.batch_opening_gas, HashGas(protocol::EncodeStateHeader(next).size()));
    }
  }
  return worst;
}

}  // namespace vt::vm
