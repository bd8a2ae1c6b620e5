#pragma once
// Runs a step graph (step_graph.h) on concrete tensors: the whole step for
// the trainer and the auditor, or one node alone for the referee's
// arbitration. Both go through the same per-node routine, so ExecuteNode(i)
// on node i's inputs reproduces, bit for bit, what ExecuteStep computed for
// node i (in repops mode, and in rounded mode given the node's log).
//
// Nodes run one after another in graph order; parallelism is inside each
// operator (ExecConfig::threads), which never changes a result in repops or
// rounded mode. Dropout masks are addressed by RngAddress{seed, step, node}.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/calibration.h"
#include "kernels/graph/step_graph.h"
#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"

namespace vt::kernels::graph {

// Called after node `node` ran, with its outputs. The worker hashes them for
// its node records; a test's (or a cheating solver's) hook may change them,
// and every later node then consumes the changed values. A non-ok status
// aborts the step with that status.
using NodeObserver = std::function<Status(std::size_t node, std::span<Tensor> outputs)>;

struct StepOptions {
  std::uint64_t seed = 0;  // the job seed (dropout RNG key)
  // Rounded mode: follow these logs, one per node (a replaying auditor);
  // null records fresh logs (the trainer). Ignored in other modes.
  const std::vector<RoundingLog>* replay_logs = nullptr;
  // Replaying: skip log entries a strict replay rejects instead of failing
  // (NodeRounding::ReplaySkippingInvalid); StepResult counts them.
  bool skip_invalid_log_entries = false;
  // TEST ONLY (the steer-log adversary, the residual-freedom measurement):
  // record with NodeRounding::RecordSteered — the non-nearest neighbour of
  // every value within w of its boundary. Ignored when replaying.
  bool steer_rounding = false;
  // Rounded mode: node i rounds with τ = tau_table->Lookup(NodeTauKey(graph, i))
  // (the job's calibrated τ per operator and shape); null: config.rounding's τ
  // for every node.
  const TauTable* tau_table = nullptr;
  NodeObserver observer;
  // Memory: by default every intermediate tensor is freed after its last
  // consumer. keep_outputs keeps all of them in StepResult::outputs;
  // hash_outputs stores their Tensor::Hash (after the observer) instead.
  bool keep_outputs = false;
  bool hash_outputs = false;
};

struct StepResult {
  std::vector<Tensor> next_state;  // name order, = graph.state_names
  float loss = 0.0f;
  // Rounded mode, recording: the log of every node. Empty when replaying
  // (the caller holds those logs; a GPT-2 small step logs ~10^8 entries).
  std::vector<RoundingLog> logs;
  std::uint64_t values_rounded = 0;                 // rounded mode: output values rounded in the step
  std::uint64_t skipped_log_entries = 0;            // skip_invalid_log_entries: entries skipped
  // Rounded mode, recording: nodes RunOp recorded again on the canonical
  // reference because a value reached the honest limit (kernels/ops/registry.h).
  std::uint64_t reference_records = 0;
  // … and values rounded from an operator's reference function instead.
  std::uint64_t reference_values = 0;
  std::vector<std::vector<Tensor>> outputs;         // keep_outputs: per node, its outputs
  std::vector<std::vector<Hash256>> output_hashes;  // hash_outputs: per node, per output
};

// The allocation policy of a process that trains (glibc only; elsewhere a
// no-op). A step allocates every node's outputs (and rounded mode its fp64
// buffers) afresh and frees them after their last use. With glibc's
// defaults, blocks above the dynamic mmap threshold come from mmap and go
// back to the kernel on free, and the top of the heap is trimmed: every step
// then page-faults its working set in again, which on a VM cost more than
// the arithmetic of the small presets (8x on mlp-fashion) and 30-50 % of a
// GPT-2 small step, whose embedding, logits and attention probabilities are
// 50-200 MB blocks (docs/kernels.md, "Step profile" and "Eighth pass"). So
// the heap serves every size (M_MMAP_MAX = 0: blocks of any size come from it
// and stay in it when freed) and is trimmed only above 1 GiB free at its
// top; threads other than the main one keep glibc's per-thread arenas, which
// take blocks above 64 MiB from mmap. No value depends on it. Once per
// process, thread-safe; ExecuteStep and InitState call it, and so should
// whatever builds a training state otherwise (a checkpoint's), before it
// does: measured on GPT-2 small, a state allocated before the policy kept
// the next steps 2x slower (8.8-9.9 s against 4.0 s).
void KeepFreedMemoryForReuse();

// `state`: the step's starting state in name order (InitState or a previous
// next_state); `batch`: inputs and targets of BatchShapes' form. Invalid
// "graph-malformed" (CheckGraph), "state-shape-mismatch",
// "batch-shape-mismatch", "log-count-mismatch" (replay_logs not one per
// node), rounding-spec reasons, or the first failing operator's status with
// "node i (name)" in its detail.
Result<StepResult> ExecuteStep(const ExecConfig& config, const StepGraph& graph,
                               std::span<const Tensor> state, std::span<const Tensor> batch,
                               const StepOptions& options = {});

struct NodeResult {
  std::vector<Tensor> outputs;
  RoundingLog log;  // rounded mode, recording: the node's log (empty when replaying)
  std::uint64_t values_rounded = 0;
};

// Re-executes node i alone from its input tensors (in the node's input
// order) — the arbitration primitive. In rounded mode `replay_log` (the
// solver's committed entries for that node) is followed and validated
// ("log-entry-outside-region", "log-entry-out-of-range"); null records.
// `tau_table` as in StepOptions. Invalid "node-out-of-range",
// "node-bad-inputs" (count or null), or "node-input-shape" (an input not of
// the declared shape) before running.
Result<NodeResult> ExecuteNode(const ExecConfig& config, const StepGraph& graph, std::size_t i,
                               std::span<const Tensor* const> inputs, std::uint64_t seed,
                               const RoundingLog* replay_log = nullptr, const TauTable* tau_table = nullptr);

// Node i's input tensors resolved against a step's state, batch and the
// per-node outputs of an ExecuteStep run with keep_outputs (what a party
// supplies to the referee). Precondition: i < nodes.size(), matching sizes.
std::vector<const Tensor*> NodeInputTensors(const StepGraph& graph, std::size_t i,
                                            std::span<const Tensor> state, std::span<const Tensor> batch,
                                            const std::vector<std::vector<Tensor>>& outputs);

}  // namespace vt::kernels::graph
