#pragma once
// Content-addressed checkpoints: one file per full training state, named by
// its state hash, "<64 hex>.ckpt" in the store's directory.
//
// File format (docs/formats.md, "Checkpoint files"):
//   0   8  magic "VTCKPT" + u16 LE format version (1)
//   8  32  state hash h_t
//   40  8  u64 LE step
//   48  8  u64 LE payload size (uncompressed)
//   56  1  flags: bit 0 = tensor values byte-shuffled; other bits zero
//   57  …  one zstd frame (content size and XXH64 checksum included) of the
//          payload = EncodeState(state) (worker/state.h), in which, when bit 0
//          is set, each tensor's n·4 value bytes are stored as 4 planes
//          (byte 0 of every value, then byte 1, …): exponents and signs
//          compress much better that way.
//
// Writes are crash-safe (temporary file, fsync, rename, fsync of the
// directory); a crash leaves at most a temporary file, which Open removes and
// List ignores. Reads verify: the recomputed state hash must equal the name.
// Status::Error for the file system ("checkpoint-not-found", "disk-full",
// "file-write-failed", "file-read-failed"); Status::Invalid for bad content:
//   checkpoint-truncated   shorter than its header or its zstd frame
//   checkpoint-corrupt     bad magic/version/flags, zstd or payload errors,
//                          or a state whose hash is not the expected one

#include <cstdint>
#include <filesystem>
#include <set>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "worker/file_io.h"
#include "worker/state.h"

namespace vt::worker {

struct CheckpointOptions {
  // An encoder's choice (any level decodes the same). Level 1: on byte-shuffled
  // fp32 states it compresses as well as level 3 (1.19x vs 1.17x) at 1.6x the
  // speed (checkpoint_bench), and the background writer has to keep up with a
  // checkpoint every few milliseconds of small-model steps.
  int zstd_level = 1;
  bool byte_shuffle = true;
};

inline constexpr std::size_t kCheckpointHeaderSize = 57;

// The file bytes for `state`, whose hash is `state_hash`.
Bytes EncodeCheckpointFile(const TrainingState& state, const Hash256& state_hash, const CheckpointOptions& options = {});
// Parses and verifies a checkpoint file against `expected_hash`. A payload
// (uncompressed state) above `max_payload_bytes` is refused from the header,
// before decompressing (checkpoint-corrupt): bytes from peers stay cheap.
Result<TrainingState> DecodeCheckpointFile(ByteSpan file, const Hash256& expected_hash,
                                           std::uint64_t max_payload_bytes = std::uint64_t{1} << 40);

struct CheckpointInfo {
  Hash256 state_hash;
  std::uint64_t step = 0;
  std::uint64_t file_bytes = 0;
};

class CheckpointStore {
 public:
  // Creates the directory if needed and removes temporary files left by a crash.
  static Result<CheckpointStore> Open(const std::filesystem::path& dir, CheckpointOptions options = {});

  const std::filesystem::path& dir() const { return m_dir; }
  std::filesystem::path PathFor(const Hash256& state_hash) const;

  // Writes the state (replacing a file of the same hash, which repairs a
  // damaged copy) and returns its hash. Invalid "state-bad-names" for a state
  // that has no hash. On failure no existing checkpoint is changed. With
  // DirSync::kDeferred the file's name is durable only after SyncDirectory
  // (worker/file_io.h): several checkpoints, one directory fsync.
  Result<Hash256> Put(const TrainingState& state, DirSync dir_sync = DirSync::kNow);
  // Reads and verifies. Error "checkpoint-not-found" when absent.
  Result<TrainingState> Get(const Hash256& state_hash) const;
  bool Contains(const Hash256& state_hash) const;

  // Checkpoints whose header reads correctly, by step then hash. Files with
  // other names (temporary files included) are ignored.
  Result<std::vector<CheckpointInfo>> List() const;
  Status Remove(const Hash256& state_hash);
  // Removes every checkpoint not in `keep`, and stray temporary files;
  // returns how many files it removed.
  Result<std::size_t> Gc(const std::set<Hash256>& keep);

 private:
  CheckpointStore(std::filesystem::path dir, CheckpointOptions options)
      : m_dir(std::move(dir)), m_options(options) {}

  std::filesystem::path m_dir;
  CheckpointOptions m_options;
};

}  // namespace vt::worker
