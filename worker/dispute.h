#pragma once
// Dispute answers (docs/referee.md, "The game": levels 2 and 3 and the
// arbitration). A party — the solver, or a challenger that audited it —
// answers from its own checkpoints, recomputing forward with the logs it
// follows (in rounded mode: always the solver's committed logs):
//
//  (a) AnswerStepHashes: the k+1 per-step state hashes h_{s_{j-1}} … h_{s_j}
//      of checkpoint interval j (leaves of the referee's level-2 tree).
//  (b) AnswerNodeRecords: the node records of step t in the canonical
//      topological order of kernels/graph — op kind, attributes, input refs,
//      output tensor hashes, hash of the node's log entries — followed by
//      the assemble record whose single output is h_{t+1} (the referee's
//      level-3 tree; op kind kAssembleOpKind, verify/node_spec.h).
//  (c) AnswerNodeInputs: node i's input tensors with Merkle proofs — state
//      tensors against h_t, earlier nodes' outputs through their records
//      against the node root, the batch as dataset examples against the
//      dataset root, the state header against h_t, and in rounded mode the
//      node's committed log with its proofs up to the commitment's log root.
//      EncodeArbitrationPayload gives the exact bytes of the referee's
//      verify::ArbitrationPayload (verify/wire.h).
//  (d) ReexecuteNode: checks every proof of such an export and re-executes
//      the one node — by calling the referee's own rule, verify::ArbitrateNode
//      (verify/arbitrate.h), so its verdict is the precompile's.
//
// LocateDispute runs the whole narrowing between two parties — first
// divergent checkpoint, step, node — and the arbitration of that node.
//
// If a step cannot be recomputed (in rounded mode a challenger may find a
// solver's log entry it must reject) the answers carry what was computed up
// to the failure and the failing step / node, rather than an error.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/mode.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "verify/arbitrate.h"
#include "verify/node_spec.h"
#include "verify/wire.h"
#include "worker/adversary.h"
#include "worker/dataset.h"
#include "worker/job.h"
#include "worker/run_dir.h"

namespace vt::worker {

// The op kind of the record that closes every step, and the dispute's wire
// types: one definition each, in verify/.
using verify::ExampleOpening;
using verify::InputOpening;
using verify::kAssembleOpKind;
using verify::LogChain;

// A party in a dispute, answering from its own run.
struct Party {
  const Job* job = nullptr;
  const Dataset* dataset = nullptr;  // the committed examples
  const RunDir* states = nullptr;    // its checkpoints and manifest
  const RunDir* logs = nullptr;      // rounded mode: the run whose logs it follows (the solver's)
  kernels::ExecConfig config;
  Adversary* adversary = nullptr;    // TEST-ONLY: a cheating solver answers consistently with its cheat
  // Rounded mode, a challenger: follow the solver's logs but skip entries a
  // strict replay rejects (NodeRounding::ReplaySkippingInvalid), so that its
  // answers cover the whole interval past a bad entry. Must match how it
  // computed its own checkpoints (AuditOptions::skip_invalid_log_entries).
  bool skip_invalid_log_entries = false;
};

// (a)
struct StepHashes {
  std::uint64_t checkpoint_index = 0;  // j: the interval from checkpoint j-1 to j
  std::uint64_t first_step = 0;        // s_{j-1}
  std::vector<Hash256> hashes;         // h_{s_{j-1}}, h_{s_{j-1}+1}, … (all k+1 unless failed)
  std::optional<std::uint64_t> failed_step;
  std::optional<std::uint64_t> failed_node;
  Status failure;

  bool complete() const { return !failed_step.has_value(); }
  Hash256 Root() const { return crypto::MerkleRoot(hashes); }
};
Result<StepHashes> AnswerStepHashes(const Party& party, std::uint64_t checkpoint_index);

// (b)
struct StepRecords {
  std::uint64_t step = 0;
  Hash256 state_hash;                       // h_t
  std::vector<protocol::NodeRecord> records;  // graph nodes (then assemble, when complete)
  std::vector<std::string> names;           // node names, for people
  std::optional<std::uint64_t> failed_node; // the recomputation failed at this node
  Status failure;

  bool complete() const { return !failed_node.has_value(); }
  std::vector<Hash256> LeafHashes() const;
  Hash256 Root() const;  // meaningful when complete
};
Result<StepRecords> AnswerNodeRecords(const Party& party, std::uint64_t step);

// (c)
// The payload (the base: verify::ArbitrationPayload — header, its proof, the
// input openings, the examples, the log) and the case it answers.
struct NodeInputs : verify::ArbitrationPayload {
  // The case (what the referee has established).
  std::uint64_t step = 0;
  std::uint64_t node = 0;
  Hash256 state_hash;          // h_t
  Hash256 node_root;           // the exporting party's node-record root (producers are proven against it)
  std::uint64_t node_count = 0;  // graph nodes + 1
  protocol::NodeRecord record;   // the exporting party's record of the node
  std::string node_name;
  std::optional<LogChain> log_chain;  // rounded mode: the payload's log up to the commitment's log root
  bool operator==(const NodeInputs&) const = default;
};
Result<NodeInputs> AnswerNodeInputs(const Party& party, std::uint64_t step, std::uint64_t node);
// The export and the node's own output tensors as this party computed them
// (none for the assemble node): what its element-level answers are made
// from (worker/element_answers.h, ElementSideOf).
struct NodeCase {
  NodeInputs inputs;
  std::vector<kernels::Tensor> outputs;
  std::vector<kernels::Tensor> batch;  // the step's batch (inputs, targets) when the node reads it
};
Result<NodeCase> AnswerNodeCase(const Party& party, std::uint64_t step, std::uint64_t node);
// The assemble node's walk (verify/state_walk.h): the Merkle tree over the
// leaves of this party's h_{t+1} — its state after step t, StateLeafHashes —
// whose root its assemble record of step t outputs (a cheater's too: the
// tree it committed to).
Result<crypto::MerkleTree> AnswerStateTree(const Party& party, std::uint64_t step);

// The referee's ArbitrateArgs::payload bytes.
Bytes EncodeArbitrationPayload(const NodeInputs& inputs);
// A self-contained file: "VTNODE" + u16 version, then the case, the log
// chain and the payload (common/encoding.h). Invalid "node-inputs-corrupt".
Bytes EncodeNodeInputsFile(const NodeInputs& inputs);
Result<NodeInputs> DecodeNodeInputsFile(ByteSpan bytes);

// (d)
using NodeVerdictKind = verify::ArbitrationKind;
std::string_view NodeVerdictKindName(NodeVerdictKind kind);
struct NodeVerdict : verify::ArbitrationOutcome {
  // Whether a record is the correct one for this node (verify::OutcomeConfirms).
  bool Confirms(const protocol::NodeRecord& record, bool rounded) const;
};
// verify::ArbitrateNode on the export, metered by nothing: Invalid with the
// precompile's "arb-bad-*" reasons when a proof or input does not check out.
Result<NodeVerdict> ReexecuteNode(const Job& job, const NodeInputs& inputs);
// Rounded mode: the log's chain up to `log_root` (a commitment's), checked by
// verify::VerifyLogChain as the referee does. Invalid "arb-bad-log-proof".
Status VerifyLogChain(const Job& job, const NodeInputs& inputs, const Hash256& log_root);

// The full narrowing between a solver and a challenger that audited it.
struct DisputeLocation {
  std::uint64_t checkpoint_index = 0;  // first divergent checkpoint j
  std::optional<std::uint64_t> step;   // t: agreed h_t, disputed h_{t+1}
  std::optional<std::uint64_t> node;   // first disputed node of step t
  std::string node_name;
  std::optional<protocol::NodeRecord> solver_record;
  std::optional<protocol::NodeRecord> challenger_record;
  std::optional<NodeVerdict> verdict;
  bool solver_right = false;
  bool challenger_right = false;
};
// Invalid "dispute-no-divergence" when both runs agree on every checkpoint.
Result<DisputeLocation> LocateDispute(const Party& solver, const Party& challenger);

std::string DisputeLocationToJson(const DisputeLocation& location, int indent = 2);
std::string NodeRecordToJson(const protocol::NodeRecord& record);

}  // namespace vt::worker
