// Run directories: manifest, job files and interval rounding-log files.

#include "worker/run_dir.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <cstring>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "worker/file_io.h"
#include "worker/job.h"

namespace vt::worker {

namespace {

using nlohmann::json;

constexpr char kLogMagic[6] = {'V', 'T', 'L', 'O', 'G', 'S'};
constexpr std::uint16_t kLogVersion = 1;
// A step's node count and one node's payload are bounded by what a step can
// produce; these caps only stop a crafted file from allocating without bound.
constexpr std::uint64_t kMaxLogPayload = std::uint64_t{1} << 36;
constexpr std::size_t kMaxNodesPerStep = std::size_t{1} << 24;
constexpr int kManifestVersion = 1;

void PutLe(Bytes& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t GetLe(ByteSpan in, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(in[at + i]) << (8 * i);
  return v;
}

Status Corrupt(const std::string& what) { return Status::Invalid("log-file-corrupt", what); }
Status BadManifest(const std::string& what) { return Status::Invalid("run-manifest-corrupt", what); }

Bytes LogPayload(const IntervalLogs& logs) {
  Writer w;
  for (const auto& step : logs.steps) {
    w.PutVarint(step.size());
    for (const kernels::RoundingLog& log : step) w.PutBytes(kernels::RoundingLogPayload(log));
  }
  return std::move(w).Take();
}

Result<Hash256> HashFromJson(const json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_string()) return BadManifest(std::string("missing ") + key);
  auto h = Hash256::FromHex(j.at(key).get<std::string>());
  if (!h.ok()) return BadManifest(std::string("bad hash in ") + key);
  return *h;
}

Result<std::uint64_t> U64FromJson(const json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number_unsigned()) return BadManifest(std::string("missing ") + key);
  return j.at(key).get<std::uint64_t>();
}

}  // namespace

// ---- manifest ---------------------------------------------------------------------

std::vector<Hash256> RunManifest::CheckpointHashes() const {
  std::vector<Hash256> out;
  out.reserve(checkpoints.size());
  for (const CheckpointEntry& c : checkpoints) out.push_back(c.state_hash);
  return out;
}

std::vector<Hash256> RunManifest::IntervalLogHashes() const {
  std::vector<Hash256> out;
  out.reserve(logs.size());
  for (const IntervalLogEntry& l : logs) out.push_back(l.hash);
  return out;
}

std::string ManifestToJson(const RunManifest& m) {
  json j;
  j["version"] = kManifestVersion;
  j["job_hash"] = m.job_hash.Hex();
  j["num_steps"] = m.num_steps;
  j["checkpoint_interval"] = m.interval;
  j["mode"] = m.mode;
  json cps = json::array();
  for (const CheckpointEntry& c : m.checkpoints) {
    cps.push_back(json{{"index", c.index}, {"step", c.step}, {"state_hash", c.state_hash.Hex()}});
  }
  j["checkpoints"] = cps;
  json logs = json::array();
  for (const IntervalLogEntry& l : m.logs) {
    logs.push_back(json{{"index", l.index},
                        {"first_step", l.first_step},
                        {"steps", l.steps},
                        {"hash", l.hash.Hex()},
                        {"file_bytes", l.file_bytes},
                        {"entries", l.entries},
                        {"values_rounded", l.values_rounded}});
  }
  j["logs"] = logs;
  j["losses"] = m.losses;
  return j.dump(1);
}

Result<RunManifest> ManifestFromJson(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return BadManifest("not a JSON object");
  try {
    if (!j.contains("version") || j.at("version") != kManifestVersion) return BadManifest("unknown version");
    RunManifest m;
    VT_ASSIGN_OR_RETURN(m.job_hash, HashFromJson(j, "job_hash"));
    VT_ASSIGN_OR_RETURN(m.num_steps, U64FromJson(j, "num_steps"));
    VT_ASSIGN_OR_RETURN(m.interval, U64FromJson(j, "checkpoint_interval"));
    VT_ASSIGN_OR_RETURN(std::uint64_t mode, U64FromJson(j, "mode"));
    if (mode > static_cast<std::uint64_t>(kernels::Mode::kCertified)) return BadManifest("mode");  // the last mode value
    m.mode = static_cast<std::uint8_t>(mode);
    if (m.interval == 0 || m.num_steps == 0) return BadManifest("zero steps or interval");
    const std::uint64_t count = protocol::CheckpointCount(m.num_steps, m.interval);
    const json& cps = j.at("checkpoints");
    if (!cps.is_array() || cps.size() > count) return BadManifest("checkpoints");
    for (const json& c : cps) {
      CheckpointEntry e;
      VT_ASSIGN_OR_RETURN(e.index, U64FromJson(c, "index"));
      VT_ASSIGN_OR_RETURN(e.step, U64FromJson(c, "step"));
      VT_ASSIGN_OR_RETURN(e.state_hash, HashFromJson(c, "state_hash"));
      if (e.index != m.checkpoints.size() || e.step != protocol::CheckpointStepAt(m.num_steps, m.interval, e.index)) {
        return BadManifest("checkpoint " + std::to_string(m.checkpoints.size()) + " out of order");
      }
      m.checkpoints.push_back(e);
    }
    const json& logs = j.at("logs");
    if (!logs.is_array() || logs.size() > count) return BadManifest("logs");
    for (const json& l : logs) {
      IntervalLogEntry e;
      VT_ASSIGN_OR_RETURN(e.index, U64FromJson(l, "index"));
      VT_ASSIGN_OR_RETURN(e.first_step, U64FromJson(l, "first_step"));
      VT_ASSIGN_OR_RETURN(e.steps, U64FromJson(l, "steps"));
      VT_ASSIGN_OR_RETURN(e.hash, HashFromJson(l, "hash"));
      VT_ASSIGN_OR_RETURN(e.file_bytes, U64FromJson(l, "file_bytes"));
      VT_ASSIGN_OR_RETURN(e.entries, U64FromJson(l, "entries"));
      VT_ASSIGN_OR_RETURN(e.values_rounded, U64FromJson(l, "values_rounded"));
      if (e.index != m.logs.size() || e.index + 1 >= count ||
          e.first_step != protocol::CheckpointStepAt(m.num_steps, m.interval, e.index) ||
          e.first_step + e.steps != protocol::CheckpointStepAt(m.num_steps, m.interval, e.index + 1)) {
        return BadManifest("log interval " + std::to_string(m.logs.size()) + " out of order");
      }
      m.logs.push_back(e);
    }
    const json& losses = j.at("losses");
    if (!losses.is_array() || losses.size() > m.num_steps) return BadManifest("losses");
    for (const json& v : losses) {
      if (!v.is_number()) return BadManifest("losses");
      m.losses.push_back(v.get<float>());
    }
    return m;
  } catch (const json::exception& e) {
    return BadManifest(e.what());
  }
}

// ---- interval logs ------------------------------------------------------------------

Hash256 StepLogRoot(std::span<const kernels::RoundingLog> node_logs) {
  std::vector<Hash256> leaves;
  leaves.reserve(node_logs.size());
  for (const kernels::RoundingLog& log : node_logs) leaves.push_back(kernels::HashRoundingLog(log));
  return crypto::MerkleRoot(leaves);
}

std::vector<Hash256> StepLogRoots(const IntervalLogs& logs) {
  std::vector<Hash256> roots;
  roots.reserve(logs.steps.size());
  for (const auto& step : logs.steps) roots.push_back(StepLogRoot(step));
  return roots;
}

Hash256 IntervalLogHash(const IntervalLogs& logs) { return crypto::MerkleRoot(StepLogRoots(logs)); }

std::uint64_t CountLogEntries(const IntervalLogs& logs) {
  std::uint64_t n = 0;
  for (const auto& step : logs.steps) {
    for (const kernels::RoundingLog& log : step) n += log.entries.size();
  }
  return n;
}

Bytes EncodeIntervalLogFile(const IntervalLogs& logs, int zstd_level) {
  const Bytes payload = LogPayload(logs);
  Bytes out;
  out.reserve(kLogFileHeaderSize);
  for (char ch : kLogMagic) out.push_back(static_cast<std::uint8_t>(ch));
  PutLe(out, kLogVersion, 2);
  PutLe(out, logs.first_step, 8);
  PutLe(out, logs.steps.size(), 8);
  PutLe(out, payload.size(), 8);
  const Hash256 hash = IntervalLogHash(logs);
  for (std::uint8_t b : hash.bytes) out.push_back(b);
  const std::size_t header = out.size();
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), &ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, zstd_level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  out.resize(header + ZSTD_compressBound(payload.size()));
  const std::size_t n = ZSTD_compress2(cctx.get(), out.data() + header, out.size() - header, payload.data(),
                                       payload.size());
  out.resize(header + (ZSTD_isError(n) ? 0 : n));
  return out;
}

Result<IntervalLogs> DecodeIntervalLogFile(ByteSpan file, std::uint64_t max_decoded_bytes) {
  if (file.size() < kLogFileHeaderSize) return Status::Invalid("log-file-truncated", "shorter than its header");
  if (std::memcmp(file.data(), kLogMagic, sizeof(kLogMagic)) != 0) return Corrupt("not a rounding-log file");
  if (GetLe(file, 6, 2) != kLogVersion) return Corrupt("unsupported version " + std::to_string(GetLe(file, 6, 2)));
  IntervalLogs logs;
  logs.first_step = GetLe(file, 8, 8);
  const std::uint64_t steps = GetLe(file, 16, 8);
  const std::uint64_t payload_size = GetLe(file, 24, 8);
  Hash256 claimed;
  std::memcpy(claimed.bytes.data(), file.data() + 32, 32);
  if (payload_size > kMaxLogPayload) return Corrupt("payload size above the cap");
  // Judged from the header, before allocating: the payload and one vector per step.
  if (payload_size > max_decoded_bytes || steps > max_decoded_bytes / sizeof(std::vector<kernels::RoundingLog>))
    return Corrupt("decodes to more than the " + std::to_string(max_decoded_bytes) + " bytes allowed");
  const ByteSpan frame = file.subspan(kLogFileHeaderSize);
  const std::size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size)) {
    if (ZSTD_getErrorCode(frame_size) == ZSTD_error_srcSize_wrong) {
      return Status::Invalid("log-file-truncated", "the zstd frame ends early");
    }
    return Corrupt(std::string("zstd: ") + ZSTD_getErrorName(frame_size));
  }
  if (frame_size != frame.size()) return Corrupt("bytes after the zstd frame");
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content != payload_size) return Corrupt("frame content size differs from the header");
  Bytes payload(payload_size);
  const std::size_t got = ZSTD_decompress(payload.data(), payload.size(), frame.data(), frame.size());
  if (ZSTD_isError(got) || got != payload_size) return Corrupt("zstd decompression failed");
  Reader r(payload);
  if (steps > payload_size) return Corrupt("more steps than payload bytes");
  logs.steps.resize(steps);
  for (auto& step : logs.steps) {
    auto count = r.GetVarint();
    if (!count.ok() || *count > kMaxNodesPerStep || *count > r.remaining()) return Corrupt("bad node count");
    step.reserve(*count);
    for (std::uint64_t i = 0; i < *count; ++i) {
      auto bytes = r.GetBytesView(kMaxLogPayload);
      if (!bytes.ok()) return Corrupt("bad node log: " + bytes.status().ToString());
      auto log = kernels::ParseRoundingLogPayload(*bytes);
      if (!log.ok()) return Corrupt("bad node log: " + log.status().ToString());
      step.push_back(std::move(log).value());
    }
  }
  if (!r.Finish().ok()) return Corrupt("bytes after the last step");
  if (IntervalLogHash(logs) != claimed) return Corrupt("the logs do not hash to the header's hash");
  return logs;
}

// ---- directory ----------------------------------------------------------------------

Result<RunDir> RunDir::Open(const std::filesystem::path& dir, bool create, CheckpointOptions options) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (!create) return Status::Error("run-dir-missing", "no run directory " + dir.string());
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Error("file-write-failed", "creating " + dir.string() + ": " + ec.message());
  }
  if (create) {
    std::filesystem::create_directories(dir / "logs", ec);
    if (ec) return Status::Error("file-write-failed", "creating " + (dir / "logs").string() + ": " + ec.message());
  }
  VT_ASSIGN_OR_RETURN(CheckpointStore store, CheckpointStore::Open(dir / "checkpoints", options));
  return RunDir(dir, std::move(store));
}

std::filesystem::path RunDir::LogPath(std::uint64_t interval) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%06llu.vtlog", static_cast<unsigned long long>(interval));
  return LogDir() / name;
}

Status RunDir::SaveJob(const Job& job) const {
  const Bytes encoded = protocol::EncodeJobSpec(job.spec);
  if (std::filesystem::exists(JobPath())) {
    VT_ASSIGN_OR_RETURN(protocol::JobSpec existing, LoadJobSpec());
    if (existing != job.spec) {
      return Status::Invalid("run-job-mismatch", m_dir.string() + " holds job " + protocol::JobHash(existing).Hex() +
                                                     ", not " + job.Hash().Hex());
    }
  }
  VT_TRY(WriteFileAtomic(JobPath(), encoded));
  const std::string text = JobToJson(job) + "\n";
  return WriteFileAtomic(JobJsonPath(), AsBytes(text));
}

Result<protocol::JobSpec> RunDir::LoadJobSpec() const {
  VT_ASSIGN_OR_RETURN(Bytes bytes, ReadFile(JobPath()));
  auto spec = protocol::DecodeJobSpec(bytes);
  if (!spec.ok()) return spec.status().WithContext(JobPath().string());
  return spec;
}

bool RunDir::HasManifest() const {
  std::error_code ec;
  return std::filesystem::exists(ManifestPath(), ec);
}

Result<RunManifest> RunDir::LoadManifest() const {
  auto bytes = ReadFile(ManifestPath());
  if (!bytes.ok()) {
    if (bytes.status().reason() == "file-not-found") {
      return Status::Error("run-no-manifest", "no run manifest in " + m_dir.string());
    }
    return bytes.status();
  }
  auto m = ManifestFromJson(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  if (!m.ok()) return m.status().WithContext(ManifestPath().string());
  return m;
}

Status RunDir::SaveManifest(const RunManifest& manifest) const {
  const std::string text = ManifestToJson(manifest) + "\n";
  return WriteFileAtomic(ManifestPath(), AsBytes(text));
}

Result<IntervalLogEntry> RunDir::SaveIntervalLogs(std::uint64_t index, const IntervalLogs& logs,
                                                  std::uint64_t values_rounded, DirSync dir_sync) const {
  const Bytes file = EncodeIntervalLogFile(logs);
  VT_TRY(WriteFileAtomic(LogPath(index), file, dir_sync));
  IntervalLogEntry e;
  e.index = index;
  e.first_step = logs.first_step;
  e.steps = logs.steps.size();
  e.hash = IntervalLogHash(logs);
  e.file_bytes = file.size();
  e.entries = CountLogEntries(logs);
  e.values_rounded = values_rounded;
  return e;
}

Status CheckIntervalLogs(const IntervalLogs& logs, const IntervalLogEntry& entry, const std::string& where) {
  if (logs.first_step != entry.first_step || logs.steps.size() != entry.steps || IntervalLogHash(logs) != entry.hash) {
    return Status::Invalid("log-file-mismatch", where + " is not the log the manifest names");
  }
  return Status::Ok();
}

Result<IntervalLogs> RunDir::LoadIntervalLogs(const IntervalLogEntry& entry) const {
  return LoadIntervalLogs(entry, nullptr);
}

Result<IntervalLogs> RunDir::LoadIntervalLogs(const IntervalLogEntry& entry, Bytes* file_out) const {
  const std::string where = LogPath(entry.index).string();
  VT_ASSIGN_OR_RETURN(Bytes file, ReadFile(LogPath(entry.index)));
  auto logs = DecodeIntervalLogFile(file);
  if (!logs.ok()) return logs.status().WithContext(where);
  VT_TRY(CheckIntervalLogs(*logs, entry, where));
  if (file_out != nullptr) *file_out = std::move(file);
  return logs;
}

}  // namespace vt::worker
