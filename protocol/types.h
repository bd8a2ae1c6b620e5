#pragma once
// The protocol types shared by the off-chain worker and the on-chain referee:
// what a bounty names, what a solver commits to, and what the dispute game
// exchanges. Plain data plus canonical encodings (docs/formats.md,
// "Protocol objects"); no behaviour. worker/ and referee/ both include this
// folder and never each other.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::protocol {

using XOnlyPubKey = std::array<std::uint8_t, 32>;
using Signature = std::array<std::uint8_t, 64>;

// The training job a bounty names; its hash (JobHash) identifies it.
// Model and optimizer are opaque canonical bytes here: kernels/graph defines
// and interprets them, so the referee's arbitration can rebuild any step's
// operator graph from the job alone.
struct JobSpec {
  std::uint32_t version = 1;
  Bytes model;                        // canonical kernels::graph::ModelSpec
  Bytes optimizer;                    // canonical kernels::graph::OptimizerSpec
  Hash256 dataset_root;               // Merkle root over the examples
  std::uint64_t dataset_size = 0;     // number of examples
  std::uint64_t seed = 0;             // Philox key for init, data order, dropout
  std::uint32_t batch_size = 0;
  std::uint64_t num_steps = 0;        // N
  std::uint64_t checkpoint_interval = 0;  // k (N need not be a multiple of k)
  std::uint8_t mode = 1;              // kernels::Mode: 0 native, 1 repops, 2 rounded
  std::uint8_t rounding_bits = 32;    // rounded mode: b
  Bytes tau_table;                    // rounded mode: canonical kernels TauTable

  bool operator==(const JobSpec&) const = default;
};

// Checkpoint indices a commitment covers: 0, k, 2k, …, and N (once).
std::vector<std::uint64_t> CheckpointSteps(std::uint64_t num_steps, std::uint64_t interval);

// A solver's signed claim about its training run.
struct Commitment {
  std::uint64_t bounty_id = 0;
  Hash256 job_hash;
  Hash256 checkpoint_root;   // Merkle root over h_s for s in CheckpointSteps(N, k)
  Hash256 final_state_hash;  // h_N (also the last checkpoint leaf)
  Hash256 log_root;          // Merkle root over per-interval rounding-log hashes; zero if not rounded
  XOnlyPubKey solver{};      // the signer
  Signature signature{};     // BIP-340 over CommitmentSigningHash

  bool operator==(const Commitment&) const = default;
};

// Where a node's input comes from, inside one training step.
enum class InputSource : std::uint8_t {
  kState = 0,  // tensor `index` of the step's starting state, in name order
  kBatch = 1,  // tensor `index` of the step's batch (0 = inputs, 1 = targets)
  kNode = 2,   // output `slot` of earlier node `index`
};

struct InputRef {
  InputSource source = InputSource::kState;
  std::uint32_t index = 0;
  std::uint32_t slot = 0;
  bool operator==(const InputRef&) const = default;
};

// One operator invocation of a step, as committed in the operator-level root.
struct NodeRecord {
  std::uint16_t op_kind = 0;         // kernels OpKind (stable numeric values)
  Bytes attrs;                       // canonical kernels OpAttrs
  std::vector<InputRef> inputs;
  std::vector<Hash256> output_hashes;  // one Tensor::Hash per output
  Hash256 log_hash;                  // HashRoundingLog of the node's entries; zero if not rounded

  bool operator==(const NodeRecord&) const = default;
};

// Canonical encodings (strict decoders reject trailing bytes, caps, etc.).
Bytes EncodeJobSpec(const JobSpec& job);
Result<JobSpec> DecodeJobSpec(ByteSpan bytes);
Hash256 JobHash(const JobSpec& job);

Bytes EncodeCommitment(const Commitment& c);
Result<Commitment> DecodeCommitment(ByteSpan bytes);
// The message a solver signs: tagged hash of the commitment without signature.
Hash256 CommitmentSigningHash(const Commitment& c);

Bytes EncodeNodeRecord(const NodeRecord& r);
Result<NodeRecord> DecodeNodeRecord(ByteSpan bytes);
// Merkle leaf hash of a node record in the operator-level tree.
Hash256 NodeRecordHash(const NodeRecord& r);

}  // namespace vt::protocol
