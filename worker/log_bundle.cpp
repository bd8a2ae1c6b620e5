#include "worker/log_bundle.h"

#include <string>
#include <vector>

#include "common/encoding.h"
#include "worker/commitment.h"
#include "worker/file_io.h"

namespace vt::worker {
namespace {

// "VTLB" as a little-endian u32 (written as an integer: g++ 12 warns about a
// byte-span insert into a fresh Writer).
constexpr std::uint32_t kMagic = 0x424C5456;
// A bundle holds at most this many interval files; each is at most the
// encoding's per-field cap (kMaxEncodedBytes is too small for big models'
// logs, so files get their own cap).
constexpr std::size_t kMaxIntervals = std::size_t{1} << 20;
constexpr std::size_t kMaxLogFileBytes = std::size_t{1} << 32;
constexpr std::size_t kMaxManifestBytes = std::size_t{64} << 20;

Status Corrupt(std::string detail) { return Status::Invalid("log-bundle-corrupt", std::move(detail)); }

}  // namespace

Result<Bytes> ExportLogBundle(const RunDir& run) {
  VT_ASSIGN_OR_RETURN(RunManifest manifest, run.LoadManifest());
  Writer w;
  w.PutU32(kMagic);
  w.PutU16(kLogBundleVersion);
  w.PutString(ManifestToJson(manifest));
  w.PutVarint(manifest.logs.size());
  for (const IntervalLogEntry& entry : manifest.logs) {
    // Checked against the manifest first: never publish a file that does not
    // match it (a damaged disk would otherwise look like a lie).
    Bytes file;
    VT_TRY(run.LoadIntervalLogs(entry, &file).status());
    w.PutBytes(file);
  }
  return std::move(w).Take();
}

namespace {

// The header and the manifest; `r` is left at the interval count.
Result<RunManifest> ReadHeaderAndManifest(Reader& r) {
  auto magic = r.GetU32();
  if (!magic.ok() || *magic != kMagic) return Corrupt("not a log bundle (bad magic)");
  auto version = r.GetU16();
  if (!version.ok()) return Corrupt("truncated header");
  if (*version != kLogBundleVersion) return Corrupt("unsupported version " + std::to_string(*version));
  auto text = r.GetString(kMaxManifestBytes);
  if (!text.ok()) return Corrupt("manifest: " + text.status().ToString());
  auto manifest = ManifestFromJson(*text);
  if (!manifest.ok()) return Corrupt("manifest: " + manifest.status().ToString());
  return manifest;
}

}  // namespace

Result<RunManifest> ReadLogBundleManifest(ByteSpan bundle) {
  Reader r(bundle);
  return ReadHeaderAndManifest(r);
}

Result<DecodedLogBundle> DecodeLogBundle(ByteSpan bundle, std::uint64_t max_decoded_bytes) {
  Reader r(bundle);
  auto manifest = ReadHeaderAndManifest(r);
  if (!manifest.ok()) return manifest.status();
  auto count = r.GetVarint();
  if (!count.ok() || *count > kMaxIntervals) return Corrupt("bad interval count");
  if (*count != manifest->logs.size())
    return Corrupt("holds " + std::to_string(*count) + " log files, its manifest names " +
                   std::to_string(manifest->logs.size()));

  DecodedLogBundle out;
  out.files.reserve(manifest->logs.size());
  for (const IntervalLogEntry& entry : manifest->logs) {
    auto file = r.GetBytesView(kMaxLogFileBytes);
    if (!file.ok()) return Corrupt("log file of interval " + std::to_string(entry.index) + ": " + file.status().ToString());
    auto logs = DecodeIntervalLogFile(*file, max_decoded_bytes);
    if (!logs.ok()) return logs.status().WithContext("log file of interval " + std::to_string(entry.index));
    if (Status st = CheckIntervalLogs(*logs, entry, "log file of interval " + std::to_string(entry.index)); !st.ok())
      return Status::Invalid("log-bundle-mismatch", st.detail());
    out.files.push_back(*file);
  }
  if (Status s = r.Finish(); !s.ok()) return Corrupt("trailing bytes after the last log file");
  out.manifest = std::move(*manifest);
  return out;
}

Status CheckBundleCommitment(const RunManifest& m, const protocol::Commitment& c) {
  auto mismatch = [](std::string detail) { return Status::Invalid("log-bundle-mismatch", std::move(detail)); };
  if (m.job_hash != c.job_hash) return mismatch("the bundle is of another job");
  if (!m.Complete()) return mismatch("the bundle's run is incomplete");
  if (m.logs.size() + 1 != m.checkpoints.size()) return mismatch("the bundle lacks interval logs");
  const std::vector<Hash256> hashes = m.CheckpointHashes();
  if (CheckpointRoot(hashes) != c.checkpoint_root) return mismatch("the checkpoint root is not the commitment's");
  if (hashes.back() != c.final_state_hash) return mismatch("the final state is not the commitment's");
  if (LogRoot(m.IntervalLogHashes()) != c.log_root) return mismatch("the logs do not reproduce the log root");
  return Status::Ok();
}

Result<RunManifest> ImportLogBundle(ByteSpan bundle, const std::filesystem::path& dir) {
  // Decode and check everything before writing anything.
  VT_ASSIGN_OR_RETURN(DecodedLogBundle decoded, DecodeLogBundle(bundle));
  const RunManifest& manifest = decoded.manifest;
  VT_ASSIGN_OR_RETURN(RunDir run, RunDir::Open(dir, /*create=*/true));
  if (run.HasManifest()) {
    VT_ASSIGN_OR_RETURN(RunManifest existing, run.LoadManifest());
    if (existing.job_hash != manifest.job_hash)
      return Status::Invalid("run-job-mismatch", dir.string() + " holds a run of another job");
  }
  for (std::size_t i = 0; i < decoded.files.size(); ++i)
    VT_TRY(WriteFileAtomic(run.LogPath(manifest.logs[i].index), decoded.files[i]));
  VT_TRY(run.SaveManifest(manifest));
  return manifest;
}

}  // namespace vt::worker
