#pragma once
// The arbitration precompile (docs/referee.md, "The game", Arbitration): given
// the facts the dispute game has established — the job, the step t, the
// agreed state hash h_t, a node-record root whose leaves before the disputed
// node are agreed, and the disputed node's index — it checks the supplied
// inputs of that one node against those agreed hashes (Merkle proofs),
// re-executes the node with the canonical kernel (kernels RunOp in the job's
// mode; in rounded mode the canonical fp64 reference — no vendor BLAS, no
// libm, one thread — following the solver's committed log and rejecting the
// entries the acceptance rule refuses) and returns the correct output hashes.
// The referee compares them with both parties' records.
//
// Metered: Merkle and tensor hashing per byte and per node, and the operator
// by its flop count (kernels OpFlops / GasSchedule::flops_per_gas).
//
// This header carries no kernels types: the node's inputs travel as the
// opaque `payload` (ArbitrationPayload below, encoded), decoded here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/gas.h"
#include "contract_vm/node_spec.h"
#include "crypto/merkle.h"
#include "protocol/state.h"
#include "protocol/types.h"

namespace vt::vm {

class StepGraphSource;

// What the referee has established before it asks.
struct ArbitrationCase {
  protocol::JobSpec job;
  std::uint64_t step = 0;       // t: the node belongs to the step h_t → h_{t+1}
  Hash256 state_hash;           // h_t, agreed by both parties
  Hash256 node_root;            // a node-record root whose leaves [0, node_index) are agreed
  std::uint64_t node_count = 0; // leaves of that tree: graph nodes + 1 (assemble)
  std::uint64_t node_index = 0; // the disputed node
};

// One input of the disputed node, in the order of its spec's inputs.
struct InputOpening {
  Bytes tensor;                // canonical tensor bytes; empty for the assemble node and batch inputs
  Hash256 tensor_hash;         // assemble node only: the tensor hash being opened
  std::optional<crypto::MerkleProof> proof;       // kState: in h_t; kNode: the producer's record in the node tree
  std::optional<protocol::NodeRecord> producer;   // kNode only
  bool operator==(const InputOpening&) const = default;
};

// One example of the batch, as committed by the dataset root.
struct ExampleOpening {
  Bytes leaf;                 // the dataset-commitment leaf bytes
  crypto::MerkleProof proof;  // against job.dataset_root
  bool operator==(const ExampleOpening&) const = default;
};

struct ArbitrationPayload {
  protocol::StateHeader header;          // the header of h_t …
  crypto::MerkleProof header_proof;      // … opened against h_t
  std::vector<InputOpening> inputs;
  std::vector<ExampleOpening> examples;  // the step's batch, when the node reads it; else empty
  Bytes log;                             // rounded mode: kernels EncodeRoundingLog of the node's committed log
  bool operator==(const ArbitrationPayload&) const = default;
};

void Encode(Writer& w, const InputOpening& in);
Result<InputOpening> Decode(Reader& r, DecodeAs<InputOpening>);
void Encode(Writer& w, const ExampleOpening& ex);
Result<ExampleOpening> Decode(Reader& r, DecodeAs<ExampleOpening>);
void Encode(Writer& w, const ArbitrationPayload& p);
Result<ArbitrationPayload> Decode(Reader& r, DecodeAs<ArbitrationPayload>);

enum class ArbitrationKind : std::uint8_t {
  kExecuted = 0,     // output_hashes holds the correct outputs
  kLogRejected = 1,  // rounded mode: the acceptance rule refuses an entry of the supplied log, or one lies past the outputs
  kOpFailed = 2,     // the operator rejects the agreed inputs: no record can be correct
};

struct ArbitrationOutcome {
  ArbitrationKind kind = ArbitrationKind::kExecuted;
  std::string detail;                  // the kernel's reason for kLogRejected / kOpFailed
  std::vector<Hash256> output_hashes;  // kExecuted
  Hash256 log_hash;                    // rounded mode: kernels HashRoundingLog of the supplied log; zero otherwise
  std::uint64_t flops = 0;             // the operator's flop estimate (what was metered)
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

  // Invalid (the request is wrong, nobody is at fault): "arb-malformed",
  // "arb-bad-header", "arb-header-step-mismatch", "arb-bad-input-count",
  // "arb-bad-input-proof", "arb-bad-input-tensor", "arb-bad-producer",
  // "arb-bad-examples", "arb-bad-log", "arb-bad-node-index", "tx-out-of-gas".
  Result<ArbitrationOutcome> Arbitrate(const ArbitrationCase& c, ByteSpan payload, GasMeter& gas) const;

  // The step graph every method above works on (charged GraphGas, then
  // checked by ValidateStepGraph); contract_vm/arbitration_cost.h bounds
  // arbitration costs from it.
  Result<StepGraph> BuildGraph(const protocol::JobSpec& job, std::uint64_t step, GasMeter& gas) const;

 private:

  const StepGraphSource& m_graphs;
};

}  // namespace vt::vm
