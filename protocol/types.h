#pragma once
// The protocol types shared by the off-chain worker and the on-chain referee:
// what a bounty names, what a solver commits to, and what the dispute game
// exchanges. Plain data plus canonical encodings (docs/formats.md,
// "Protocol objects"); no behaviour. worker/ and referee/ both include this
// folder and never each other.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
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

// Semantic checks every job must pass (DecodeJobSpec applies them too);
// sizes are bounded by common/limits.h (kMaxDatasetSize, kMaxBatchSize,
// kMaxSteps), the model's dimensions by kernels/graph/model.h.
// Invalid with one of: "job-bad-version", "job-bad-mode", "job-bad-rounding",
// "job-bad-batch-size", "job-bad-dataset-size", "job-bad-steps",
// "job-bad-interval", "job-too-many-checkpoints".
Status ValidateJobSpec(const JobSpec& job);

// Caps of the job encoding and of the checkpoint tree.
inline constexpr std::size_t kMaxSpecBytes = std::size_t{1} << 20;          // model, optimizer, tau table
inline constexpr std::uint64_t kMaxCheckpoints = std::uint64_t{1} << 24;     // leaves of the checkpoint tree

// Checkpoint indices a commitment covers: 0, k, 2k, …, and N (once).
// Empty when interval == 0 (no valid job has k = 0). N = 0 gives {0}.
std::vector<std::uint64_t> CheckpointSteps(std::uint64_t num_steps, std::uint64_t interval);
// O(1) versions for the referee: the number of checkpoints (the leaf count of
// the checkpoint tree; 0 when interval == 0) and the step of checkpoint `i`.
std::uint64_t CheckpointCount(std::uint64_t num_steps, std::uint64_t interval);
// Precondition: interval > 0 and i < CheckpointCount(num_steps, interval).
std::uint64_t CheckpointStepAt(std::uint64_t num_steps, std::uint64_t interval, std::uint64_t i);

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

// Caps of the node-record encoding.
inline constexpr std::size_t kMaxNodeAttrBytes = std::size_t{1} << 16;
inline constexpr std::size_t kMaxNodeInputs = 1024;
inline constexpr std::size_t kMaxNodeOutputs = 1024;

// Canonical encodings (docs/formats.md, "Protocol objects"). Decoders are
// strict: enc-* reasons from common/encoding.h for malformed bytes, trailing
// bytes included, plus the semantic reasons named at each decoder.
Bytes EncodeJobSpec(const JobSpec& job);
// Also rejects what ValidateJobSpec rejects.
Result<JobSpec> DecodeJobSpec(ByteSpan bytes);
// TaggedHash("veritrain/job/v1", EncodeJobSpec(job)).
Hash256 JobHash(const JobSpec& job);

Bytes EncodeCommitment(const Commitment& c);
Result<Commitment> DecodeCommitment(ByteSpan bytes);
// The message a solver signs: tagged hash of the commitment without signature.
Hash256 CommitmentSigningHash(const Commitment& c);

Bytes EncodeNodeRecord(const NodeRecord& r);
// Also rejects "node-bad-input-ref": a nonzero slot on a kState/kBatch input.
Result<NodeRecord> DecodeNodeRecord(ByteSpan bytes);
// Merkle leaf hash of a node record in the operator-level tree:
// TaggedHash("veritrain/node-record/v1", EncodeNodeRecord(r)), used directly
// as the leaf hash (crypto/merkle.h allows own tagged leaf hashes).
Hash256 NodeRecordHash(const NodeRecord& r);

// The same encodings in the common/encoding.h convention, for embedding
// these objects in larger ones (transactions, messages).
void Encode(Writer& w, const JobSpec& job);
Result<JobSpec> Decode(Reader& r, DecodeAs<JobSpec>);
void Encode(Writer& w, const Commitment& c);
Result<Commitment> Decode(Reader& r, DecodeAs<Commitment>);
void Encode(Writer& w, const InputRef& in);
Result<InputRef> Decode(Reader& r, DecodeAs<InputRef>);
void Encode(Writer& w, const NodeRecord& rec);
Result<NodeRecord> Decode(Reader& r, DecodeAs<NodeRecord>);

}  // namespace vt::protocol
