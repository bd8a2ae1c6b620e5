// Audit: replay a solver's run and compare every checkpoint hash.

#include "worker/replay.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "worker/commitment.h"
#include "worker/trainer.h"

namespace vt::worker {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string_view AuditVerdictName(AuditVerdict verdict) {
  switch (verdict) {
    case AuditVerdict::kAgree:
      return "agree";
    case AuditVerdict::kDiverged:
      return "diverged";
    case AuditVerdict::kClaimInvalid:
      return "claim-invalid";
  }
  return "unknown";
}

namespace {

// Records the first divergence only (later ones follow from it). True if
// this was the first.
bool NoteDivergence(AuditReport& report, const Status& why, std::uint64_t checkpoint, std::uint64_t step) {
  if (report.verdict != AuditVerdict::kAgree) return false;
  report.verdict = AuditVerdict::kDiverged;
  report.reason = why.reason();
  report.detail = why.detail();
  report.first_divergent = checkpoint;
  report.divergent_step = step;
  return true;
}

}  // namespace

Result<AuditReport> Audit(const Job& job, const Dataset& dataset, const RunDir& solver_run,
                          const protocol::Commitment& commitment, const AuditOptions& options) {
  const double start = Now();
  VT_TRY(protocol::ValidateJobSpec(job.spec));
  if (dataset.size() != job.spec.dataset_size) {
    return Status::Invalid("job-dataset-mismatch", "the dataset is not the job's");
  }
  AuditReport report;
  auto claim_invalid = [&](const Status& s) {
    report.verdict = AuditVerdict::kClaimInvalid;
    report.reason = s.reason();
    report.detail = s.detail();
    report.seconds = Now() - start;
    return report;
  };

  // ---- the solver's claims, checked for consistency --------------------------------
  auto manifest = solver_run.LoadManifest();
  if (!manifest.ok()) {
    if (manifest.status().is_invalid()) return claim_invalid(manifest.status());
    return manifest.status();
  }
  if (Status s = CheckCommitment(commitment, job.spec, *manifest); !s.ok()) return claim_invalid(s);
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  const bool follow = rounded && options.follow_logs;

  // ---- our own run --------------------------------------------------------------------
  std::optional<RunDir> own;
  RunManifest own_manifest;
  own_manifest.job_hash = job.Hash();
  own_manifest.num_steps = job.spec.num_steps;
  own_manifest.interval = job.spec.checkpoint_interval;
  own_manifest.mode = job.spec.mode;
  if (!options.own_run_dir.empty()) {
    VT_ASSIGN_OR_RETURN(RunDir dir, RunDir::Open(options.own_run_dir, /*create=*/true));
    VT_TRY(dir.SaveJob(job));
    own.emplace(std::move(dir));
  }

  StepEngine engine(job, dataset, ExecConfigFor(job, options.threads, options.simd, options.device));
  VT_ASSIGN_OR_RETURN(TrainingState state, engine.InitialState());
  auto record = [&](std::uint64_t index) -> Result<bool> {
    Hash256 h;
    if (own) {
      VT_ASSIGN_OR_RETURN(h, own->checkpoints().Put(state));
      own_manifest.checkpoints.push_back(CheckpointEntry{index, state.step, h});
      VT_TRY(own->SaveManifest(own_manifest));
    } else {
      h = StateHash(state);
    }
    const CheckpointComparison cmp{index, state.step, manifest->checkpoints[index].state_hash, h};
    report.checkpoints.push_back(cmp);
    if (!cmp.match() && report.verdict != AuditVerdict::kAgree) return options.to_the_end;  // not the first
    if (!cmp.match()) {
      report.verdict = AuditVerdict::kDiverged;
      report.reason = "state-hash-mismatch";
      report.detail = "checkpoint " + std::to_string(index) + " (step " + std::to_string(state.step) +
                      "): solver " + cmp.claimed.Hex() + ", replay " + h.Hex();
      report.first_divergent = index;
      report.divergent_step = state.step;
      return options.to_the_end;
    }
    return true;
  };
  VT_ASSIGN_OR_RETURN(bool ok0, record(0));
  if (!ok0) {
    report.seconds = Now() - start;
    return report;
  }

  ProgressMeter progress("audit", 0, job.spec.num_steps, options.progress);
  const std::uint64_t count = manifest->checkpoints.size();
  for (std::uint64_t j = 0; j + 1 < count; ++j) {
    const std::uint64_t end = CheckpointStepOf(job.spec, j + 1);
    std::optional<IntervalLogs> logs;
    if (follow) {
      auto loaded = solver_run.LoadIntervalLogs(manifest->logs[j]);
      if (!loaded.ok()) {
        if (loaded.status().is_error() && loaded.status().reason() != "file-not-found") return loaded.status();
        NoteDivergence(report, loaded.status(), j + 1, end);
        if (!options.to_the_end) break;
      } else {
        logs = std::move(loaded).value();
      }
    }
    bool failed = false;
    while (state.step < end) {
      StepRequest request;
      if (logs) request.replay_logs = &logs->steps[state.step - logs->first_step];
      request.skip_invalid_log_entries = options.skip_invalid_log_entries;
      std::size_t failed_node = 0;
      const std::uint64_t step = state.step;
      auto outcome = engine.Step(state, request, &failed_node);
      if (!outcome.ok()) {
        if (outcome.status().is_error()) return outcome.status();
        // The solver's claims cannot be replayed: a divergence at this interval.
        if (NoteDivergence(report, outcome.status(), j + 1, end)) {
          report.failed_step = step;
          report.failed_node = failed_node;
        }
        if (!options.to_the_end) {
          failed = true;
          break;
        }
        // Go on without the logs that cannot be followed (round to nearest).
        request.replay_logs = nullptr;
        outcome = engine.Step(state, request);
        if (!outcome.ok()) return outcome.status();
      }
      report.skipped_log_entries += outcome->result.skipped_log_entries;
      ++report.steps_replayed;
      progress.Update(state.step, outcome->result.loss);
    }
    if (failed) break;
    VT_ASSIGN_OR_RETURN(bool match, record(j + 1));
    if (!match) break;
  }
  progress.Finish();
  report.seconds = Now() - start;
  return report;
}

std::string AuditReportToJson(const AuditReport& r, int indent) {
  nlohmann::json j;
  j["verdict"] = std::string(AuditVerdictName(r.verdict));
  j["agree"] = r.agree();
  j["reason"] = r.reason;
  j["detail"] = r.detail;
  nlohmann::json cps = nlohmann::json::array();
  for (const CheckpointComparison& c : r.checkpoints) {
    cps.push_back({{"index", c.index}, {"step", c.step}, {"claimed", c.claimed.Hex()},
                   {"computed", c.computed.Hex()}, {"match", c.match()}});
  }
  j["checkpoints"] = cps;
  auto opt = [](const std::optional<std::uint64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["first_divergent_checkpoint"] = opt(r.first_divergent);
  j["divergent_step"] = opt(r.divergent_step);
  j["failed_step"] = opt(r.failed_step);
  j["failed_node"] = opt(r.failed_node);
  j["steps_replayed"] = r.steps_replayed;
  j["skipped_log_entries"] = r.skipped_log_entries;
  j["seconds"] = r.seconds;
  return j.dump(indent);
}

}  // namespace vt::worker
