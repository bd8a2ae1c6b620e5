#pragma once
// A training run on disk: everything a solver needs to commit, resume and
// answer disputes, and everything a challenger reads to audit it.
//
//   <run>/job.bin           protocol::EncodeJobSpec of the job (its JobHash names the run)
//   <run>/job.json          the job file in normal form (worker/job.h JobToJson)
//   <run>/run.json          the manifest (RunManifest): checkpoint hashes so far, interval
//                           log hashes, per-step losses; rewritten atomically after each checkpoint
//   <run>/checkpoints/      content-addressed checkpoint store (worker/checkpoint_store.h)
//   <run>/logs/<j>.vtlog    rounded mode: the rounding logs of interval j (steps s_j .. s_{j+1}-1)
//   <run>/commitment.bin    the signed commitment (worker/commitment.h)
//
// Rounding-log hashes (the tree the referee's LogProofs walk, docs/referee.md):
//   node log hash      kernels::HashRoundingLog(log of one node)
//   step log root      crypto::MerkleRoot over the node log hashes of one step, in graph order
//   interval log hash  crypto::MerkleRoot over the step log roots of one interval
//   log root           crypto::MerkleRoot over the interval log hashes (Commitment::log_root)
// Leaves are these hashes themselves (tagged hashes and Merkle roots, never node hashes).
//
// Interval log file (".vtlog"):
//   0   8  magic "VTLOGS" + u16 LE format version (1)
//   8   8  u64 LE first step
//   16  8  u64 LE number of steps
//   24  8  u64 LE payload size (uncompressed)
//   32 32  interval log hash
//   64  …  one zstd frame (with checksum) of the payload: per step, varint node
//          count, then per node the bytes (varint length) of
//          kernels::RoundingLogPayload(log)
// Reads verify the recomputed interval log hash. Invalid reasons:
//   log-file-truncated   shorter than the header or the frame
//   log-file-corrupt     bad magic/version, zstd or payload errors, a hash that is not the header's
//   log-file-mismatch    a valid file for another interval than the manifest names
// Manifest: "run-manifest-corrupt" (Invalid) for JSON that is not a manifest,
// "run-no-manifest" (Error) when absent, "run-job-mismatch" when a run
// directory holds another job.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/rounding.h"
#include "protocol/types.h"
#include "worker/checkpoint_store.h"

namespace vt::worker {

struct Job;

struct CheckpointEntry {
  std::uint64_t index = 0;  // position in CheckpointSteps(N, k)
  std::uint64_t step = 0;
  Hash256 state_hash;
  bool operator==(const CheckpointEntry&) const = default;
};

struct IntervalLogEntry {
  std::uint64_t index = 0;  // interval j: steps [s_j, s_{j+1})
  std::uint64_t first_step = 0;
  std::uint64_t steps = 0;
  Hash256 hash;                   // interval log hash
  std::uint64_t file_bytes = 0;   // compressed, on disk
  std::uint64_t entries = 0;      // logged rounding decisions
  std::uint64_t values_rounded = 0;
  bool operator==(const IntervalLogEntry&) const = default;
};

struct RunManifest {
  Hash256 job_hash;
  std::uint64_t num_steps = 0;
  std::uint64_t interval = 0;
  std::uint8_t mode = 0;
  std::vector<CheckpointEntry> checkpoints;  // a prefix of CheckpointSteps(N, k), in order
  std::vector<IntervalLogEntry> logs;        // rounded mode: one per interval whose end checkpoint exists
  std::vector<float> losses;                 // losses[s] = loss of step s

  bool Complete() const { return checkpoints.size() == protocol::CheckpointCount(num_steps, interval); }
  std::vector<Hash256> CheckpointHashes() const;
  std::vector<Hash256> IntervalLogHashes() const;
  bool operator==(const RunManifest&) const = default;
};

std::string ManifestToJson(const RunManifest& manifest);
// Invalid "run-manifest-corrupt" for anything that is not a consistent manifest.
Result<RunManifest> ManifestFromJson(std::string_view text);

// ---- rounding logs of one interval -------------------------------------------------

struct IntervalLogs {
  std::uint64_t first_step = 0;
  std::vector<std::vector<kernels::RoundingLog>> steps;  // per step, per graph node
  bool operator==(const IntervalLogs&) const = default;
};

Hash256 StepLogRoot(std::span<const kernels::RoundingLog> node_logs);
Hash256 IntervalLogHash(const IntervalLogs& logs);
// The step log roots of an interval (the leaves of its interval log hash).
std::vector<Hash256> StepLogRoots(const IntervalLogs& logs);
std::uint64_t CountLogEntries(const IntervalLogs& logs);

inline constexpr std::size_t kLogFileHeaderSize = 64;
Bytes EncodeIntervalLogFile(const IntervalLogs& logs, int zstd_level = 3);
// `max_decoded_bytes` bounds what decoding may allocate, judged from the
// header before any work (log-file-corrupt beyond it): peers' bytes stay cheap.
Result<IntervalLogs> DecodeIntervalLogFile(ByteSpan file, std::uint64_t max_decoded_bytes = std::uint64_t{1} << 36);

// Invalid "log-file-mismatch" unless `logs` are the interval `entry` names
// (first step, step count, interval log hash); `where` names the source.
Status CheckIntervalLogs(const IntervalLogs& logs, const IntervalLogEntry& entry, const std::string& where);

// ---- the directory ---------------------------------------------------------------

class RunDir {
 public:
  // Opens (creating when `create`) a run directory. Error "run-dir-missing"
  // when it does not exist and `create` is false.
  static Result<RunDir> Open(const std::filesystem::path& dir, bool create, CheckpointOptions options = {});

  const std::filesystem::path& dir() const { return m_dir; }
  std::filesystem::path JobPath() const { return m_dir / "job.bin"; }
  std::filesystem::path JobJsonPath() const { return m_dir / "job.json"; }
  std::filesystem::path ManifestPath() const { return m_dir / "run.json"; }
  std::filesystem::path CommitmentPath() const { return m_dir / "commitment.bin"; }
  std::filesystem::path LogDir() const { return m_dir / "logs"; }
  std::filesystem::path LogPath(std::uint64_t interval) const;
  CheckpointStore& checkpoints() { return m_store; }
  const CheckpointStore& checkpoints() const { return m_store; }

  // Writes job.bin and job.json; when job.bin exists it must hold the same
  // job (Invalid "run-job-mismatch").
  Status SaveJob(const Job& job) const;
  Result<protocol::JobSpec> LoadJobSpec() const;

  bool HasManifest() const;
  Result<RunManifest> LoadManifest() const;
  Status SaveManifest(const RunManifest& manifest) const;

  // Writes the logs of interval `index` and returns their manifest entry
  // (kDeferred: durable under their name after SyncDirectory(LogDir())).
  Result<IntervalLogEntry> SaveIntervalLogs(std::uint64_t index, const IntervalLogs& logs,
                                            std::uint64_t values_rounded,
                                            DirSync dir_sync = DirSync::kNow) const;
  // Reads the logs the entry names and checks them against it.
  Result<IntervalLogs> LoadIntervalLogs(const IntervalLogEntry& entry) const;
  // The same, also returning the file's bytes (to publish them as they are).
  Result<IntervalLogs> LoadIntervalLogs(const IntervalLogEntry& entry, Bytes* file) const;

 private:
  RunDir(std::filesystem::path dir, CheckpointStore store) : m_dir(std::move(dir)), m_store(std::move(store)) {}

  std::filesystem::path m_dir;
  CheckpointStore m_store;
};

}  // namespace vt::worker
