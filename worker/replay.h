#pragma once
// Auditing a solver's run (docs/worker.md, "Commands"; docs/referee.md,
// "The game"): a challenger replays the job on its own configuration from
// h_0 — in rounded mode following the solver's committed rounding logs — and
// compares its state hash with the solver's at every checkpoint. The report
// says whether all agree or names the first divergent checkpoint (and, when
// the replay itself failed there, the step and node, e.g. a log entry the
// replay rejects).
//
// Before replaying, the solver's claims are checked for consistency: the
// commitment's signature, its job hash, the checkpoint and log roots against
// the solver's manifest, and every log file against its hash. A claim that
// fails these is reported as kClaimInvalid with the reason.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/mode.h"
#include "protocol/types.h"
#include "worker/dataset.h"
#include "worker/job.h"
#include "worker/run_dir.h"

namespace vt::worker {

struct AuditOptions {
  int threads = 1;
  kernels::Simd simd = kernels::Simd::kAuto;
  kernels::Device device = kernels::Device::kCpu;  // where GEMMs run (kernels/device.h)
  bool progress = false;
  // Where the challenger keeps its own checkpoints and manifest (needed to
  // answer dispute questions later); empty = keep nothing.
  std::filesystem::path own_run_dir;
  // Rounded mode: follow the solver's logs (the protocol). false records
  // fresh logs instead — only to show what happens without them.
  bool follow_logs = true;
  // Rounded mode: skip the solver's log entries a strict replay rejects
  // instead of stopping there (NodeRounding::ReplaySkippingInvalid).
  bool skip_invalid_log_entries = false;
  // Keep replaying past the first divergence (the report still names the
  // first), so that own_run_dir ends up holding a complete run: what a
  // challenger needs to open and play a dispute.
  bool to_the_end = false;
};

enum class AuditVerdict : std::uint8_t {
  kAgree = 0,         // every checkpoint hash matches
  kDiverged = 1,      // first_divergent names the first checkpoint that does not
  kClaimInvalid = 2,  // the solver's commitment, manifest or logs are inconsistent
};
std::string_view AuditVerdictName(AuditVerdict verdict);

struct CheckpointComparison {
  std::uint64_t index = 0;
  std::uint64_t step = 0;
  Hash256 claimed;
  Hash256 computed;
  bool match() const { return claimed == computed; }
};

struct AuditReport {
  AuditVerdict verdict = AuditVerdict::kAgree;
  std::string reason;  // empty when agreeing; "state-hash-mismatch", a log-* reason, a commitment-* reason, …
  std::string detail;
  std::vector<CheckpointComparison> checkpoints;  // compared, in order
  std::optional<std::uint64_t> first_divergent;  // checkpoint index
  std::optional<std::uint64_t> divergent_step;   // that checkpoint's step
  std::optional<std::uint64_t> failed_step;      // a step whose replay failed …
  std::optional<std::uint64_t> failed_node;      // … at this node
  std::uint64_t steps_replayed = 0;
  std::uint64_t skipped_log_entries = 0;  // skip_invalid_log_entries: solver entries skipped
  double seconds = 0;

  bool agree() const { return verdict == AuditVerdict::kAgree; }
};

// `solver_run` is the solver's run directory (manifest, logs);
// `commitment` its signed commitment. A Status is returned only for local
// failures (the challenger's own disk, memory) and for a dataset or job that
// is not the one committed to.
Result<AuditReport> Audit(const Job& job, const Dataset& dataset, const RunDir& solver_run,
                          const protocol::Commitment& commitment, const AuditOptions& options = {});

std::string AuditReportToJson(const AuditReport& report, int indent = 2);

}  // namespace vt::worker
