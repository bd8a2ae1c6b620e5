// The training loop: steps, checkpoints, interval logs, resume, progress.

#include "worker/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "kernels/blas_core.h"
#include "worker/checkpoint_queue.h"

namespace vt::worker {

namespace {

namespace graph = kernels::graph;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", s);
  }
  return buf;
}

}  // namespace

std::uint64_t CheckpointStepOf(const protocol::JobSpec& spec, std::uint64_t index) {
  return protocol::CheckpointStepAt(spec.num_steps, spec.checkpoint_interval, index);
}

// ---- StepEngine ----------------------------------------------------------------------

StepEngine::StepEngine(const Job& job, const Dataset& dataset, kernels::ExecConfig config, Adversary* adversary)
    : m_job(job),
      m_dataset(dataset),
      m_data(adversary != nullptr && adversary->TrainingData() != nullptr ? adversary->TrainingData() : &dataset),
      m_config(config),
      m_adversary(adversary),
      m_order(job.spec.seed, std::max<std::uint64_t>(dataset.size(), 1)) {
  auto shapes = graph::BatchShapes(job.model, static_cast<std::int64_t>(job.spec.batch_size));
  if (shapes.ok()) m_batch_shapes = std::move(shapes).value();
  // Before any state of this engine exists (initial or from a checkpoint).
  graph::KeepFreedMemoryForReuse();
}

Result<TrainingState> StepEngine::InitialState() const { return InitialStateOf(m_job, m_config.threads); }

Result<graph::StepGraph> StepEngine::Graph(std::uint64_t step) const {
  if (m_batch_shapes.empty()) {
    return graph::BatchShapes(m_job.model, static_cast<std::int64_t>(m_job.spec.batch_size)).status();
  }
  return graph::BuildStepGraph(m_job.model, m_job.optimizer, step, m_batch_shapes);
}

Result<Batch> StepEngine::BatchAt(const DataCursor& cursor, DataCursor* next) {
  if (m_dataset.size() == 0 || m_dataset.size() != m_job.spec.dataset_size) {
    return Status::Invalid("job-dataset-mismatch", "the dataset has " + std::to_string(m_dataset.size()) +
                                                       " examples, the job names " +
                                                       std::to_string(m_job.spec.dataset_size));
  }
  DataCursor c = cursor;
  VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> indices, m_order.NextBatch(c, m_job.spec.batch_size));
  Batch batch = MakeBatch(*m_data, indices);
  if (m_batch_shapes.size() != 2) return Status::Invalid("graph-bad-batch", "the model has no batch shape");
  for (kernels::Tensor* t : {&batch.inputs, &batch.targets}) {
    const kernels::Shape& want = m_batch_shapes[t == &batch.inputs ? 0 : 1];
    if (t->shape() != want) {
      auto reshaped = t->Reshaped(want);
      if (!reshaped.ok()) {
        return Status::Invalid("job-dataset-mismatch", "a batch of " + kernels::ShapeToString(t->shape()) +
                                                           " does not fit the model's " + kernels::ShapeToString(want));
      }
      *t = std::move(reshaped).value();
    }
  }
  if (next != nullptr) *next = c;
  return batch;
}

Result<StepOutcome> StepEngine::Step(TrainingState& state, const StepRequest& request, std::size_t* failed_node) {
  if (failed_node != nullptr) *failed_node = 0;
  StepOutcome out;
  VT_ASSIGN_OR_RETURN(out.graph, Graph(state.step));
  if (failed_node != nullptr) *failed_node = out.graph.nodes.size();
  DataCursor next_cursor;
  VT_ASSIGN_OR_RETURN(Batch batch, BatchAt(state.cursor, &next_cursor));
  if (state.tensors.size() != out.graph.state_names.size()) {
    return Status::Invalid("state-shape-mismatch", "the state has " + std::to_string(state.tensors.size()) +
                                                       " tensors, the job " +
                                                       std::to_string(out.graph.state_names.size()));
  }
  {
    std::size_t k = 0;
    for (const auto& entry : state.tensors) {
      if (entry.first != out.graph.state_names[k++]) {
        return Status::Invalid("state-shape-mismatch", "state tensor '" + entry.first + "' is not the job's");
      }
    }
  }
  // Borrow the tensors for the step; they go back on failure.
  std::vector<kernels::Tensor> tensors;
  tensors.reserve(state.tensors.size());
  for (auto& entry : state.tensors) tensors.push_back(std::move(entry.second));
  auto restore = [&] {
    std::size_t k = 0;
    for (auto& entry : state.tensors) entry.second = std::move(tensors[k++]);
  };
  std::vector<kernels::Tensor> batch_tensors;
  batch_tensors.push_back(std::move(batch.inputs));
  batch_tensors.push_back(std::move(batch.targets));

  const bool rounded = m_config.mode == kernels::Mode::kRounded;
  const bool acts = m_adversary != nullptr && m_adversary->ActsIn(state.step);
  const StepView view{out.graph, tensors,         batch_tensors,
                      m_config,  m_job.spec.seed, rounded ? &m_job.tau_table : nullptr};
  std::vector<kernels::RoundingLog> replay_copy;
  const std::vector<kernels::RoundingLog>* replay = rounded ? request.replay_logs : nullptr;
  if (replay != nullptr && replay->size() != out.graph.nodes.size()) {
    restore();
    return Status::Invalid("log-count-mismatch", std::to_string(replay->size()) + " logs for " +
                                                     std::to_string(out.graph.nodes.size()) + " nodes");
  }
  if (acts) {
    Status s;
    if (replay != nullptr) {
      replay_copy = *replay;
      s = m_adversary->BeforeStep(view, &replay_copy);
      replay = &replay_copy;
    } else {
      s = m_adversary->BeforeStep(view, nullptr);
    }
    if (!s.ok()) {
      restore();
      return s;
    }
  }

  std::size_t done = 0;
  graph::StepOptions options;
  options.seed = m_job.spec.seed;
  options.replay_logs = replay;
  options.skip_invalid_log_entries = request.skip_invalid_log_entries;
  options.tau_table = rounded ? &m_job.tau_table : nullptr;  // the job's per-node τ
  options.keep_outputs = request.keep_outputs;
  options.hash_outputs = request.hash_outputs;
  options.observer = [&](std::size_t node, std::span<kernels::Tensor> outputs) -> Status {
    if (acts) VT_TRY(m_adversary->OnNode(view, node, outputs));
    if (request.observer) VT_TRY(request.observer(node, outputs));
    done = node + 1;
    return Status::Ok();
  };
  auto result = graph::ExecuteStep(m_config, out.graph, tensors, batch_tensors, options);
  if (!result.ok()) {
    if (failed_node != nullptr) *failed_node = done;
    restore();
    return result.status().WithContext("step " + std::to_string(state.step));
  }
  // The executor returns logs only when recording; callers always get the
  // step's logs (those it followed, after any adversary's edit).
  if (rounded && replay != nullptr) result->logs = *replay;
  if (acts && rounded) m_adversary->AfterStep(view, result->logs);
  out.result = std::move(result).value();
  {
    std::size_t k = 0;
    for (auto& entry : state.tensors) entry.second = std::move(out.result.next_state[k++]);
  }
  out.result.next_state.clear();
  if (request.keep_outputs) out.start_state = std::move(tensors);
  out.batch.inputs = std::move(batch_tensors[0]);
  out.batch.targets = std::move(batch_tensors[1]);
  out.nodes_run = out.graph.nodes.size();
  state.step += 1;
  state.cursor = next_cursor;
  if (acts) m_adversary->OnNextState(state);
  return out;
}

// ---- loading checkpoints --------------------------------------------------------------

Result<TrainingState> LoadCheckpoint(const RunDir& run, const RunManifest& manifest, std::uint64_t index) {
  if (index >= manifest.checkpoints.size()) {
    return Status::Invalid("checkpoint-not-in-run", "the run has " + std::to_string(manifest.checkpoints.size()) +
                                                        " checkpoints, not " + std::to_string(index + 1));
  }
  const CheckpointEntry& e = manifest.checkpoints[index];
  auto state = run.checkpoints().Get(e.state_hash);
  if (!state.ok()) return state.status().WithContext("checkpoint " + std::to_string(index) + " (step " + std::to_string(e.step) + ")");
  if (state->step != e.step) {
    return Status::Invalid("checkpoint-corrupt", "checkpoint " + std::to_string(index) + " holds step " +
                                                     std::to_string(state->step) + ", not " + std::to_string(e.step));
  }
  return state;
}

// ---- Train ---------------------------------------------------------------------------

namespace {

// States up to this size wait for the background writer as copies (a
// queue of several small ones, or one up to this size); GPT-2 small's 1.5 GB
// are written in the loop instead, where a copy would cost more than the wait.
constexpr std::size_t kCheckpointQueueBytes = std::size_t{256} << 20;

}  // namespace

Result<TrainSummary> Train(const Job& job, const Dataset& dataset, const std::filesystem::path& run_dir,
                           const TrainOptions& options) {
  VT_TRY(protocol::ValidateJobSpec(job.spec));
  VT_ASSIGN_OR_RETURN(RunDir run, RunDir::Open(run_dir, /*create=*/true, options.checkpoint_options));
  VT_TRY(run.SaveJob(job));
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  kernels::ExecConfig config = ExecConfigFor(job, options.threads, options.simd, options.device);
  config.f64_reference = rounded && kernels::TrainerRecordsOnReference(options.f64_gemm, options.device);
  StepEngine engine(job, dataset, config, options.adversary);
  const Hash256 job_hash = job.Hash();
  const std::uint64_t n = job.spec.num_steps;

  RunManifest manifest;
  TrainingState state;
  bool have_state = false;
  if (run.HasManifest()) {
    VT_ASSIGN_OR_RETURN(manifest, run.LoadManifest());
    if (manifest.job_hash != job_hash) {
      return Status::Invalid("run-job-mismatch", run_dir.string() + " is a run of job " + manifest.job_hash.Hex());
    }
    if (!manifest.checkpoints.empty()) {
      if (!options.resume) {
        return Status::Invalid("run-exists", run_dir.string() + " already holds " +
                                                 std::to_string(manifest.checkpoints.size()) +
                                                 " checkpoints of this job (resume it, or use a new directory)");
      }
      std::uint64_t index = manifest.checkpoints.size() - 1;
      if (options.resume_step) {
        bool found = false;
        for (const CheckpointEntry& c : manifest.checkpoints) {
          if (c.step == *options.resume_step) {
            index = c.index;
            found = true;
          }
        }
        if (!found) {
          return Status::Invalid("resume-no-checkpoint",
                                 "the run has no checkpoint at step " + std::to_string(*options.resume_step));
        }
      }
      VT_ASSIGN_OR_RETURN(state, LoadCheckpoint(run, manifest, index));
      have_state = true;
      manifest.checkpoints.resize(index + 1);
      if (manifest.logs.size() > index) manifest.logs.resize(index);
      if (manifest.losses.size() > state.step) manifest.losses.resize(state.step);
    }
  }
  if (!have_state) {
    manifest = RunManifest{};
    manifest.job_hash = job_hash;
    manifest.num_steps = n;
    manifest.interval = job.spec.checkpoint_interval;
    manifest.mode = job.spec.mode;
    VT_ASSIGN_OR_RETURN(state, engine.InitialState());
  }
  CheckpointQueue checkpoints(run, manifest, kCheckpointQueueBytes);
  // A new run's checkpoint 0 is written while the first steps run.
  if (!have_state) VT_TRY(checkpoints.Push(state, PendingCheckpoint{}));
  std::uint64_t next_index = have_state ? manifest.checkpoints.size() : 1;

  TrainSummary summary;
  summary.f64_reference = config.f64_reference;
  PendingCheckpoint pending;  // what the manifest gains at the next checkpoint
  const auto start_interval = [&] {
    pending = PendingCheckpoint{};
    if (rounded) pending.logs = IntervalLogs{.first_step = state.step, .steps = {}};
  };
  start_interval();
  ProgressMeter progress("train", state.step, n, options.progress);
  const double start = Now();
  while (state.step < n) {
    if (options.stop_at_step && state.step >= *options.stop_at_step) break;
    const double t0 = Now();
    VT_ASSIGN_OR_RETURN(StepOutcome step, engine.Step(state));
    summary.step_seconds += Now() - t0;
    ++summary.steps_run;
    pending.losses.push_back(step.result.loss);
    if (rounded) {
      pending.values_rounded += step.result.values_rounded;
      pending.logs->steps.push_back(std::move(step.result.logs));
    }
    progress.Update(state.step, step.result.loss);
    if (options.on_step) options.on_step(state.step, step.result.loss);

    if (state.step == CheckpointStepOf(job.spec, next_index)) {
      pending.index = next_index++;
      const double c0 = Now();
      const Status pushed = checkpoints.Push(state, std::move(pending));
      summary.checkpoint_seconds += Now() - c0;
      VT_TRY(pushed);
      start_interval();
    }
  }
  const double d0 = Now();
  const Status drained = checkpoints.Drain();
  summary.checkpoint_seconds += Now() - d0;
  VT_TRY(drained);
  summary.log_entries = checkpoints.log_totals().entries;
  summary.log_bytes = checkpoints.log_totals().file_bytes;
  summary.values_rounded = checkpoints.log_totals().values_rounded;
  manifest.losses.insert(manifest.losses.end(), pending.losses.begin(), pending.losses.end());
  progress.Finish();
  summary.seconds = Now() - start;
  summary.complete = manifest.Complete();
  summary.manifest = std::move(manifest);
  return summary;
}

// ---- progress ------------------------------------------------------------------------

ProgressMeter::ProgressMeter(std::string label, std::uint64_t first_step, std::uint64_t total_steps, bool enabled)
    : m_label(std::move(label)),
      m_first(first_step),
      m_total(total_steps),
      m_enabled(enabled),
      m_tty(enabled && ::isatty(STDERR_FILENO) == 1),
      m_start(Now()) {}

void ProgressMeter::Update(std::uint64_t step, float loss) {
  if (!m_enabled) return;
  const double now = Now();
  const bool last = step >= m_total;
  if (!last && now - m_last_print < (m_tty ? 0.25 : 5.0)) return;
  m_last_print = now;
  const double elapsed = now - m_start;
  const double rate = elapsed > 0 ? static_cast<double>(step - m_first) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(m_total - step) / rate : -1.0;
  std::fprintf(stderr, "%s%s step %llu/%llu  loss %.4f  %.2f steps/s  ETA %s%s", m_tty ? "\r" : "",
               m_label.c_str(), static_cast<unsigned long long>(step), static_cast<unsigned long long>(m_total),
               static_cast<double>(loss), rate, Duration(eta).c_str(), m_tty ? "   " : "\n");
  std::fflush(stderr);
  m_dirty = m_tty;
}

void ProgressMeter::Finish() {
  if (m_enabled && m_dirty) std::fputc('\n', stderr);
  m_dirty = false;
}

}  // namespace vt::worker
