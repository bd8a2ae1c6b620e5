#pragma once
// The deterministic training loop (docs/models.md, "Execution"; docs/worker.md).
//
// Step t reads the batch at the state's data cursor (worker/data_order.h),
// runs the step graph of kernels/graph for step t and replaces the state by
// its next state (step + 1, cursor advanced by B, rng_counter unchanged: the
// graph's randomness is addressed by (seed, step, node)). Nothing else enters
// a step, so resuming from any checkpoint continues identically.
//
// A run writes a checkpoint of the full state at every step in
// CheckpointSteps(N, k) into its RunDir (worker/run_dir.h) and, in rounded
// mode, the rounding logs of each interval; the manifest is rewritten after
// each checkpoint, so an interrupted run resumes from its last checkpoint.
//
// Progress, when enabled, is one line on stderr: step, loss, steps/s, ETA
// (rewritten in place on a terminal, one line every few seconds otherwise).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/step_graph.h"
#include "kernels/mode.h"
#include "worker/adversary.h"
#include "worker/data_order.h"
#include "worker/dataset.h"
#include "worker/job.h"
#include "worker/run_dir.h"
#include "worker/state.h"

namespace vt::worker {

// The step of the state at checkpoint `index` of the job.
std::uint64_t CheckpointStepOf(const protocol::JobSpec& spec, std::uint64_t index);

// Which StepEngine::Step extras to collect.
struct StepRequest {
  // Rounded mode: follow these logs (one per node); null records fresh ones.
  const std::vector<kernels::RoundingLog>* replay_logs = nullptr;
  // Follow replay_logs but skip the entries a strict replay rejects (an
  // honest challenger's trajectory past a solver's bad log entry; the
  // referee rejects those entries at arbitration).
  bool skip_invalid_log_entries = false;
  bool keep_outputs = false;  // every node's outputs (node-input export)
  bool hash_outputs = false;  // every node's output hashes (node records)
  // Called after every node with its outputs (after the adversary's hook);
  // tests use it to see how far a failing step got.
  kernels::graph::NodeObserver observer;
};

struct StepOutcome {
  kernels::graph::StepGraph graph;
  Batch batch;
  std::vector<kernels::Tensor> start_state;  // keep_outputs only: the step's input state
  // next_state has been moved into the state; in rounded mode `logs` holds the
  // step's logs, recorded or followed (after any adversary's edit).
  kernels::graph::StepResult result;
  std::size_t nodes_run = 0;                 // nodes that completed (all of them on success)
};

// Runs single steps of one job on this machine's configuration.
class StepEngine {
 public:
  // `adversary` (test-only) may be null; it must outlive the engine.
  StepEngine(const Job& job, const Dataset& dataset, kernels::ExecConfig config, Adversary* adversary = nullptr);

  const Job& job() const { return m_job; }
  const kernels::ExecConfig& config() const { return m_config; }
  const Dataset& data() const { return *m_data; }

  // h_0: the job's initial state.
  Result<TrainingState> InitialState() const;
  Result<kernels::graph::StepGraph> Graph(std::uint64_t step) const;
  // The batch read at `cursor` and the cursor after it.
  Result<Batch> BatchAt(const DataCursor& cursor, DataCursor* next);

  // Runs step state.step and replaces `state` by the next state. On failure
  // `state` is unchanged and the status names the failing node; `failed_node`
  // (when given) receives its index (or the node count when no node failed).
  Result<StepOutcome> Step(TrainingState& state, const StepRequest& request = {}, std::size_t* failed_node = nullptr);

 private:
  const Job& m_job;
  const Dataset& m_dataset;
  const Dataset* m_data;  // the examples actually trained on (the adversary's, when poisoning)
  kernels::ExecConfig m_config;
  Adversary* m_adversary;
  std::vector<kernels::Shape> m_batch_shapes;
  DataOrder m_order;
};

struct TrainOptions {
  int threads = 1;
  kernels::Simd simd = kernels::Simd::kAuto;
  kernels::Device device = kernels::Device::kCpu;  // where GEMMs run (kernels/device.h)
  // Rounded jobs: the fp64 GEMM the trainer records on (kernels/mode.h;
  // kAuto: kernels/blas_core.h TrainerRecordsOnReference).
  kernels::F64Gemm f64_gemm = kernels::F64Gemm::kAuto;
  bool progress = false;
  // Called after every step with the new state's step and that step's loss
  // (the solver daemon publishes its progress from here; node/solver_note.h).
  std::function<void(std::uint64_t step, float loss)> on_step;
  // Continue the run in the directory from a checkpoint: the one at
  // `resume_step` when given (it must be a checkpoint step the manifest
  // holds), else the last one. Later checkpoints and logs are dropped from
  // the manifest and recomputed. Without `resume`, a directory that already
  // holds checkpoints of the job is an error ("run-exists").
  bool resume = false;
  std::optional<std::uint64_t> resume_step;
  // Tests: stop (as if interrupted) once the state reaches this step.
  std::optional<std::uint64_t> stop_at_step;
  Adversary* adversary = nullptr;  // TEST-ONLY
  CheckpointOptions checkpoint_options;
};

struct TrainSummary {
  RunManifest manifest;
  bool complete = false;
  std::uint64_t steps_run = 0;   // in this invocation
  double seconds = 0;            // wall time of those steps (checkpoints included)
  double step_seconds = 0;       // of which in StepEngine::Step (the batch and ExecuteStep)
  double checkpoint_seconds = 0; // the loop's own time on checkpoints and logs: the state copy handed to the
                                 // background writer and any wait for it (all of the writing for large states)
  std::uint64_t log_entries = 0;
  std::uint64_t log_bytes = 0;
  std::uint64_t values_rounded = 0;
  bool f64_reference = false;  // rounded: recorded on the canonical reference GEMM (TrainOptions::f64_gemm)
};

Result<TrainSummary> Train(const Job& job, const Dataset& dataset, const std::filesystem::path& run_dir,
                           const TrainOptions& options = {});

// The state at checkpoint `index` of a run, read back from its store and
// checked against the manifest. Invalid "checkpoint-not-in-run" when the
// manifest does not have it yet, or the store's checkpoint-* reasons.
Result<TrainingState> LoadCheckpoint(const RunDir& run, const RunManifest& manifest, std::uint64_t index);

// Terminal progress line (stderr).
class ProgressMeter {
 public:
  ProgressMeter(std::string label, std::uint64_t first_step, std::uint64_t total_steps, bool enabled);
  void Update(std::uint64_t step, float loss);
  void Finish();

 private:
  std::string m_label;
  std::uint64_t m_first;
  std::uint64_t m_total;
  bool m_enabled;
  bool m_tty;
  double m_start;
  double m_last_print = -1e9;
  bool m_dirty = false;
};

}  // namespace vt::worker
