// The vt-worker commands.

#include "worker/cli/commands.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "crypto/keyfile.h"
#include "kernels/blas_core.h"
#include "kernels/device.h"
#include "kernels/graph/model.h"
#include "kernels/matmul.h"
#include "worker/adversary.h"
#include "worker/checkpoint_store.h"
#include "worker/commitment.h"
#include "worker/dispute.h"
#include "worker/file_io.h"
#include "worker/job.h"
#include "worker/model_weights.h"
#include "worker/replay.h"
#include "worker/run_dir.h"
#include "worker/safetensors.h"
#include "worker/trainer.h"

namespace vt::worker::cli {

namespace {

using nlohmann::json;

// The execution configuration, as reports show it: in native mode the
// OpenBLAS kernel (chosen per CPU, or forced by OPENBLAS_CORETYPE) decides
// the bits; in repops and rounded mode nothing here may.
json ConfigJson(const Common& c) {
  json out{
      {"threads", c.threads}, {"simd", c.simd}, {"blas_core", kernels::BlasCoreName()}, {"device", c.device}};
  if (const std::string advice = kernels::BlasCoreAdvice(); !advice.empty()) out["blas_core_advice"] = advice;
  if (c.device != "cpu") {
    out["device_name"] = kernels::DeviceDescription(kernels::ParseDevice(c.device).value());
    out["device_fallbacks"] = kernels::DeviceFallbacks();
  }
  return out;
}

int Fail(const Common& c, const Status& s) {
  if (c.json) {
    std::cout << json{{"ok", false},
                      {"error", {{"kind", s.is_invalid() ? "invalid" : "error"}, {"reason", s.reason()}, {"detail", s.detail()}}}}
                     .dump(2)
              << "\n";
  }
  std::cerr << "vt-worker: " << s.ToString() << "\n";
  return kExitFailure;
}

// --simd and --device, parsed; a device that cannot run here is refused
// before any work (DeviceReady says why).
struct Compute {
  kernels::Simd simd = kernels::Simd::kAuto;
  kernels::Device device = kernels::Device::kCpu;
};
Result<Compute> ParseCompute(const Common& c) {
  Compute out;
  auto simd = kernels::ParseSimd(c.simd);
  if (!simd.ok()) return Status::Invalid("cli-bad-simd", "--simd must be auto, scalar, avx2 or avx512");
  out.simd = *simd;
  auto device = kernels::ParseDevice(c.device);
  if (!device.ok()) return Status::Invalid("cli-bad-device", "--device must be cpu or cuda");
  out.device = *device;
  VT_TRY(kernels::DeviceReady(out.device).WithContext("--device " + c.device));
  return out;
}

std::string Passphrase(const std::string& env) {
  const char* v = env.empty() ? nullptr : std::getenv(env.c_str());
  return v != nullptr ? std::string(v) : std::string();
}

// The worker's key: read, or created on first use.
Result<crypto::SecretKey> WorkerKey(const std::filesystem::path& path, const std::string& passphrase, bool* created) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return crypto::ReadKeyFile(path, passphrase);
  VT_ASSIGN_OR_RETURN(crypto::SecretKey key, crypto::SecretKey::Generate());
  VT_TRY(crypto::WriteKeyFile(path, key, passphrase));
  if (created != nullptr) *created = true;
  return key;
}

std::string Human(double bytes) {
  char buf[32];
  if (bytes >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1e9);
  } else if (bytes >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f MB", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1f kB", bytes / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  }
  return buf;
}

json LogStats(const RunManifest& m) {
  std::uint64_t entries = 0, bytes = 0, values = 0, steps = 0;
  for (const IntervalLogEntry& l : m.logs) {
    entries += l.entries;
    bytes += l.file_bytes;
    values += l.values_rounded;
    steps += l.steps;
  }
  json j{{"intervals", m.logs.size()}, {"steps", steps}, {"entries", entries}, {"file_bytes", bytes},
         {"values_rounded", values}};
  j["bytes_per_step"] = steps > 0 ? static_cast<double>(bytes) / static_cast<double>(steps) : 0.0;
  j["bytes_per_million_values"] = values > 0 ? static_cast<double>(bytes) * 1e6 / static_cast<double>(values) : 0.0;
  j["entries_per_million_values"] = values > 0 ? static_cast<double>(entries) * 1e6 / static_cast<double>(values) : 0.0;
  return j;
}

Result<std::unique_ptr<Adversary>> MaybeAdversary(const std::string& text, const Job& job, const Dataset& dataset) {
  if (text.empty()) return std::unique_ptr<Adversary>();
  VT_ASSIGN_OR_RETURN(AdversarySpec spec, ParseAdversarySpec(text));
  return MakeAdversary(spec, job, dataset);
}

}  // namespace

// ---- train ----------------------------------------------------------------------------

int RunTrain(const TrainConfig& config) {
  const Common& c = config.common;
  auto compute = ParseCompute(c);
  if (!compute.ok()) return Fail(c, compute.status());
  auto loaded = LoadJobWithDataset(config.job);
  if (!loaded.ok()) return Fail(c, loaded.status());
  const Job& job = loaded->job;
  auto f64_gemm = kernels::ParseF64Gemm(config.fp64_gemm);
  if (!f64_gemm.ok()) return Fail(c, f64_gemm.status());
  auto adversary = MaybeAdversary(config.adversary, job, loaded->dataset);
  if (!adversary.ok()) return Fail(c, adversary.status());
  if (*adversary) {
    std::cerr << "vt-worker: WARNING: TEST-ONLY adversary active: " << DescribeAdversary((*adversary)->spec())
              << " — this run cheats on purpose\n";
  }
  if (!c.json) {
    std::cerr << "job " << job.Hash().Hex() << ": " << kernels::graph::DescribeModel(job.model) << ", "
              << kernels::ModeName(job.mode()) << ", " << job.spec.num_steps << " steps, checkpoint every "
              << job.spec.checkpoint_interval << ", batch " << job.spec.batch_size << ", " << job.spec.dataset_size
              << " examples (root " << job.spec.dataset_root.Hex().substr(0, 16) << "…)\n";
    if (const std::string advice = kernels::BlasCoreAdvice();
        !advice.empty() && job.mode() != kernels::Mode::kRepops) {
      std::cerr << "note: OpenBLAS runs its generic " << kernels::BlasCoreName()
                << " kernels on this CPU; OPENBLAS_CORETYPE=" << advice
                << " makes its GEMMs several times faster (every core type gives a valid run)\n";
    }
    if (job.mode() == kernels::Mode::kRounded) {
      std::cerr << "rounded trainer: fp64 GEMM "
                << (kernels::TrainerRecordsOnReference(*f64_gemm, compute->device)
                        ? "the canonical reference (veritrain's own)"
                        : std::string(compute->device == kernels::Device::kCpu
                                          ? kernels::GemmF64CpuName(compute->simd)
                                          : std::string_view("cuBLAS dgemm")))
                << " (--fp64-gemm " << kernels::F64GemmName(*f64_gemm) << ")\n";
    }
  }
  TrainOptions options;
  options.f64_gemm = *f64_gemm;
  options.threads = c.threads;
  options.simd = compute->simd;
  options.device = compute->device;
  options.progress = c.progress;
  options.resume = config.resume || config.resume_step.has_value();
  options.resume_step = config.resume_step;
  options.stop_at_step = config.stop_at_step;
  options.adversary = adversary->get();
  auto summary = Train(job, loaded->dataset, config.out, options);
  if (!summary.ok()) return Fail(c, summary.status());

  json out{{"ok", true}, {"job_hash", job.Hash().Hex()}, {"run_dir", config.out.string()},
           {"complete", summary->complete}, {"steps_run", summary->steps_run}, {"seconds", summary->seconds},
           {"checkpoints", summary->manifest.checkpoints.size()}, {"config", ConfigJson(c)},
           {"step_seconds", summary->step_seconds}, {"checkpoint_seconds", summary->checkpoint_seconds}};
  out["steps_per_second"] = summary->seconds > 0 ? static_cast<double>(summary->steps_run) / summary->seconds : 0.0;
  if (!summary->manifest.losses.empty()) out["final_loss"] = summary->manifest.losses.back();
  if (job.mode() == kernels::Mode::kRounded) {
    out["logs"] = LogStats(summary->manifest);
    out["config"]["fp64_gemm"] = summary->f64_reference ? "reference" : "vendor";
  }
  if (*adversary) out["adversary"] = DescribeAdversary((*adversary)->spec());
  if (summary->complete) {
    auto commitment = BuildCommitment(config.bounty_id, job.spec, summary->manifest);
    if (!commitment.ok()) return Fail(c, commitment.status());
    RunDir dir = std::move(RunDir::Open(config.out, false)).value();
    const std::filesystem::path key_path = config.key.empty() ? config.out / "worker.key" : config.key;
    bool created = false;
    auto key = WorkerKey(key_path, Passphrase(config.passphrase_env), &created);
    if (!key.ok()) return Fail(c, key.status().WithContext("worker key " + key_path.string()));
    if (Status s = SignCommitment(*commitment, *key); !s.ok()) return Fail(c, s);
    if (Status s = SaveCommitment(dir.CommitmentPath(), *commitment); !s.ok()) return Fail(c, s);
    out["commitment"] = json::parse(CommitmentToJson(*commitment));
    out["commitment_file"] = dir.CommitmentPath().string();
    out["key_file"] = key_path.string();
    out["key_created"] = created;
  }
  if (c.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << (summary->complete ? "trained " : "stopped after ") << summary->steps_run << " steps in "
              << summary->seconds << " s\n";
    if (!summary->manifest.losses.empty()) std::cout << "final loss       " << summary->manifest.losses.back() << "\n";
    std::cout << "job hash         " << job.Hash().Hex() << "\n";
    if (summary->complete) {
      const json& cm = out["commitment"];
      std::cout << "checkpoint root  " << cm["checkpoint_root"].get<std::string>() << "\n"
                << "final state      " << cm["final_state_hash"].get<std::string>() << "\n"
                << "log root         " << cm["log_root"].get<std::string>() << "\n"
                << "signing hash     " << cm["signing_hash"].get<std::string>() << "\n"
                << "solver key       " << cm["solver"].get<std::string>() << "\n"
                << "commitment       " << out["commitment_file"].get<std::string>() << "\n";
    }
    if (job.mode() == kernels::Mode::kRounded) {
      const json& l = out["logs"];
      std::cout << "rounding logs    " << l["entries"].get<std::uint64_t>() << " entries, "
                << Human(l["file_bytes"].get<double>()) << " (" << Human(l["bytes_per_step"].get<double>())
                << "/step, " << Human(l["bytes_per_million_values"].get<double>()) << " per million values)\n";
    }
  }
  return kExitOk;
}

// ---- audit ----------------------------------------------------------------------------

int RunAudit(const AuditConfig& config) {
  const Common& c = config.common;
  auto compute = ParseCompute(c);
  if (!compute.ok()) return Fail(c, compute.status());
  auto loaded = LoadJobWithDataset(config.job);
  if (!loaded.ok()) return Fail(c, loaded.status());
  const Job& job = loaded->job;
  auto solver_run = RunDir::Open(config.solver, false);
  if (!solver_run.ok()) return Fail(c, solver_run.status());
  const std::filesystem::path cpath = config.commitment.empty() ? solver_run->CommitmentPath() : config.commitment;
  auto commitment = LoadCommitment(cpath);
  if (!commitment.ok()) return Fail(c, commitment.status());
  std::filesystem::path own = config.out;
  if (config.locate && own.empty()) own = config.solver.parent_path() / (config.solver.filename().string() + ".audit");
  AuditOptions options;
  options.threads = c.threads;
  options.simd = compute->simd;
  options.device = compute->device;
  options.progress = c.progress;
  options.own_run_dir = own;
  options.follow_logs = !config.no_logs;
  auto report = Audit(job, loaded->dataset, *solver_run, *commitment, options);
  if (!report.ok()) return Fail(c, report.status());
  json out = json::parse(AuditReportToJson(*report));
  out["ok"] = true;
  out["job_hash"] = job.Hash().Hex();
  out["config"] = ConfigJson(c);

  std::optional<DisputeLocation> location;
  if (config.locate && report->verdict == AuditVerdict::kDiverged) {
    auto adversary = MaybeAdversary(config.solver_adversary, job, loaded->dataset);
    if (!adversary.ok()) return Fail(c, adversary.status());
    auto own_run = RunDir::Open(own, false);
    if (!own_run.ok()) return Fail(c, own_run.status());
    const kernels::ExecConfig exec = ExecConfigFor(job, c.threads, compute->simd, compute->device);
    const RunDir* logs = job.mode() == kernels::Mode::kRounded && !config.no_logs ? &*solver_run : nullptr;
    Party solver{&job, &loaded->dataset, &*solver_run, &*solver_run, exec, adversary->get()};
    Party challenger{&job, &loaded->dataset, &*own_run, logs, exec, nullptr};
    auto loc = LocateDispute(solver, challenger);
    if (!loc.ok()) return Fail(c, loc.status());
    location = *loc;
    out["location"] = json::parse(DisputeLocationToJson(*loc));
  }

  if (c.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    for (const CheckpointComparison& cmp : report->checkpoints) {
      std::cout << "checkpoint " << cmp.index << " (step " << cmp.step << ")  " << (cmp.match() ? "agree" : "DIFFER")
                << "  " << cmp.computed.Hex().substr(0, 16) << "\n";
    }
    std::cout << "verdict: " << AuditVerdictName(report->verdict);
    if (!report->agree()) {
      std::cout << " — " << report->reason;
      if (report->first_divergent) {
        std::cout << " at checkpoint " << *report->first_divergent << " (step " << *report->divergent_step << ")";
      }
      if (report->failed_step) std::cout << ", replay failed at step " << *report->failed_step << " node " << *report->failed_node;
      if (!report->detail.empty()) std::cout << "\n  " << report->detail;
    }
    std::cout << "\n";
    if (location) {
      std::cout << "located: checkpoint " << location->checkpoint_index;
      if (location->step) std::cout << ", step " << *location->step;
      if (location->node) std::cout << ", node " << *location->node << " (" << location->node_name << ")";
      if (location->verdict) {
        std::cout << "\n  re-execution: " << NodeVerdictKindName(location->verdict->kind)
                  << (location->verdict->detail.empty() ? "" : " (" + location->verdict->detail + ")");
      }
      std::cout << "\n  solver " << (location->solver_right ? "right" : "WRONG") << ", challenger "
                << (location->challenger_right ? "right" : "wrong") << "\n";
    }
  }
  return report->agree() ? kExitOk : kExitFailure;
}

// ---- inspect --------------------------------------------------------------------------

namespace {

json TensorSummary(const std::string& name, const kernels::Tensor& t) {
  double sum = 0, sq = 0;
  for (float v : t.values()) {
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  return json{{"name", name}, {"shape", t.shape()}, {"numel", t.numel()}, {"hash", t.Hash().Hex()},
              {"mean", t.numel() > 0 ? sum / static_cast<double>(t.numel()) : 0.0}, {"l2", std::sqrt(sq)}};
}

Result<json> InspectRun(const std::filesystem::path& dir, bool tensors) {
  VT_ASSIGN_OR_RETURN(RunDir run, RunDir::Open(dir, false));
  VT_ASSIGN_OR_RETURN(RunManifest m, run.LoadManifest());
  json j{{"type", "run"}, {"job_hash", m.job_hash.Hex()}, {"num_steps", m.num_steps},
         {"checkpoint_interval", m.interval}, {"mode", std::string(kernels::ModeName(static_cast<kernels::Mode>(m.mode)))},
         {"checkpoints", m.checkpoints.size()},
         {"checkpoints_expected", protocol::CheckpointCount(m.num_steps, m.interval)}, {"complete", m.Complete()}};
  if (!m.checkpoints.empty()) {
    j["last_checkpoint"] = {{"index", m.checkpoints.back().index}, {"step", m.checkpoints.back().step},
                            {"state_hash", m.checkpoints.back().state_hash.Hex()}};
  }
  if (!m.losses.empty()) {
    j["first_loss"] = m.losses.front();
    j["last_loss"] = m.losses.back();
  }
  if (m.mode == 2) j["logs"] = LogStats(m);
  if (m.Complete()) j["checkpoint_root"] = CheckpointRoot(m.CheckpointHashes()).Hex();
  std::error_code ec;
  if (std::filesystem::exists(run.CommitmentPath(), ec)) {
    auto c = LoadCommitment(run.CommitmentPath());
    if (c.ok()) {
      j["commitment"] = json::parse(CommitmentToJson(*c));
      auto spec = run.LoadJobSpec();
      j["commitment_check"] = spec.ok() ? CheckCommitment(*c, *spec, m).ToString() : spec.status().ToString();
    } else {
      j["commitment_error"] = c.status().ToString();
    }
  }
  if (tensors && !m.checkpoints.empty()) {
    VT_ASSIGN_OR_RETURN(TrainingState s, LoadCheckpoint(run, m, m.checkpoints.size() - 1));
    json list = json::array();
    for (const auto& [name, t] : s.tensors) list.push_back(TensorSummary(name, t));
    j["tensors"] = list;
  }
  return j;
}

Result<json> InspectCheckpoint(const std::filesystem::path& path, const Bytes& file, bool tensors) {
  if (file.size() < kCheckpointHeaderSize) {
    return Status::Invalid("checkpoint-truncated", path.string() + " is shorter than a checkpoint header");
  }
  Hash256 hash;
  std::memcpy(hash.bytes.data(), file.data() + 8, 32);
  // A content-addressed file's name is its hash: prefer it over the header's.
  const std::string stem = path.stem().string();
  if (auto named = Hash256::FromHex(stem); named.ok()) hash = *named;
  auto state = DecodeCheckpointFile(file, hash);
  if (!state.ok()) return state.status().WithContext(path.string());
  json j{{"type", "checkpoint"}, {"state_hash", hash.Hex()}, {"verified", true}, {"step", state->step},
         {"rng_counter", state->rng_counter}, {"data_epoch", state->cursor.epoch}, {"data_offset", state->cursor.offset},
         {"file_bytes", file.size()}, {"tensor_count", state->tensors.size()}};
  std::uint64_t params = 0;
  for (const auto& [name, t] : state->tensors) params += static_cast<std::uint64_t>(t.numel());
  j["elements"] = params;
  j["compression_ratio"] = static_cast<double>(params * 4) / static_cast<double>(file.size());
  json list = json::array();
  for (const auto& [name, t] : state->tensors) {
    list.push_back(tensors ? TensorSummary(name, t) : json{{"name", name}, {"shape", t.shape()}});
  }
  j["tensors"] = list;
  return j;
}

Result<json> InspectLog(const std::filesystem::path& path, const Bytes& file) {
  auto logs = DecodeIntervalLogFile(file);
  if (!logs.ok()) return logs.status().WithContext(path.string());
  std::uint64_t nodes = 0, max_node = 0, up = 0;
  const std::uint64_t entries = CountLogEntries(*logs);
  for (const auto& step : logs->steps) {
    nodes += step.size();
    for (const kernels::RoundingLog& l : step) {
      max_node = std::max<std::uint64_t>(max_node, l.entries.size());
      for (const kernels::LogEntry& e : l.entries) up += e.up ? 1 : 0;
    }
  }
  json j{{"type", "rounding-log"}, {"first_step", logs->first_step}, {"steps", logs->steps.size()},
         {"node_logs", nodes}, {"entries", entries}, {"entries_up", up}, {"max_entries_in_a_node", max_node},
         {"file_bytes", file.size()}, {"interval_log_hash", IntervalLogHash(*logs).Hex()}};
  j["bytes_per_step"] = logs->steps.empty() ? 0.0 : static_cast<double>(file.size()) / static_cast<double>(logs->steps.size());
  j["bytes_per_entry"] = entries == 0 ? 0.0 : static_cast<double>(file.size()) / static_cast<double>(entries);
  return j;
}

Result<json> InspectNodeInputs(const std::filesystem::path& path, const Bytes& file) {
  auto n = DecodeNodeInputsFile(file);
  if (!n.ok()) return n.status().WithContext(path.string());
  json j{{"type", "node-inputs"}, {"step", n->step}, {"node", n->node}, {"node_name", n->node_name},
         {"state_hash", n->state_hash.Hex()}, {"node_root", n->node_root.Hex()}, {"node_count", n->node_count},
         {"inputs", n->inputs.size()}, {"examples", n->examples.size()}, {"log_bytes", n->log.size()},
         {"payload_bytes", EncodeArbitrationPayload(*n).size()}};
  j["record"] = json::parse(NodeRecordToJson(n->record));
  return j;
}

}  // namespace

int RunInspect(const InspectConfig& config) {
  const Common& c = config.common;
  std::error_code ec;
  Result<json> result = Status::Error("inspect", "");
  if (std::filesystem::is_directory(config.path, ec)) {
    result = InspectRun(config.path, config.tensors);
  } else {
    auto file = ReadFile(config.path);
    if (!file.ok()) return Fail(c, file.status());
    auto starts = [&](const char* magic) {
      const std::size_t n = std::strlen(magic);
      return file->size() >= n && std::memcmp(file->data(), magic, n) == 0;
    };
    if (starts("VTCKPT")) {
      result = InspectCheckpoint(config.path, *file, config.tensors);
    } else if (starts("VTLOGS")) {
      result = InspectLog(config.path, *file);
    } else if (starts("VTNODE")) {
      result = InspectNodeInputs(config.path, *file);
    } else if (config.path.extension() == ".json") {
      auto loaded = LoadJobWithDataset(config.path);
      if (!loaded.ok()) return Fail(c, loaded.status());
      json j{{"type", "job"}, {"job_hash", loaded->job.Hash().Hex()},
             {"model", kernels::graph::DescribeModel(loaded->job.model)},
             {"canonical_bytes", protocol::EncodeJobSpec(loaded->job.spec).size()}};
      j["job"] = json::parse(JobToJson(loaded->job));
      result = j;
    } else {
      auto commitment = protocol::DecodeCommitment(*file);
      if (!commitment.ok()) {
        return Fail(c, Status::Invalid("inspect-unknown-file",
                                       config.path.string() + " is not a checkpoint, rounding log, node-inputs file, "
                                                              "commitment, job file or run directory (" +
                                           commitment.status().ToString() + ")"));
      }
      json j = json::parse(CommitmentToJson(*commitment));
      j["type"] = "commitment";
      j["signature_valid"] = VerifyCommitmentSignature(*commitment).ok();
      result = j;
    }
  }
  if (!result.ok()) return Fail(c, result.status());
  json& j = *result;
  if (c.json) {
    j["ok"] = true;
    std::cout << j.dump(2) << "\n";
  } else {
    // Human form: the type first, then one "key: value" per line, nested
    // lists summarised.
    if (j.contains("type")) std::cout << "type: " << j["type"].get<std::string>() << "\n";
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "type") continue;
      if (it.key() == "tensors" && it->is_array()) {
        std::cout << "tensors:\n";
        for (const json& t : *it) {
          std::cout << "  " << t["name"].get<std::string>() << " " << t["shape"].dump();
          if (t.contains("l2")) std::cout << "  l2=" << t["l2"].get<double>() << " hash=" << t["hash"].get<std::string>().substr(0, 16);
          std::cout << "\n";
        }
      } else if (it->is_object()) {
        std::cout << it.key() << ":\n";
        for (auto jt = it->begin(); jt != it->end(); ++jt) std::cout << "  " << jt.key() << ": " << jt->dump() << "\n";
      } else {
        std::cout << it.key() << ": " << (it->is_string() ? it->get<std::string>() : it->dump()) << "\n";
      }
    }
  }
  return kExitOk;
}

// ---- export ---------------------------------------------------------------------------

int RunExport(const ExportConfig& config) {
  const Common& c = config.common;
  auto run = RunDir::Open(config.run, false);
  if (!run.ok()) return Fail(c, run.status());
  auto manifest = run->LoadManifest();
  if (!manifest.ok()) return Fail(c, manifest.status());
  if (manifest->checkpoints.empty()) return Fail(c, Status::Invalid("checkpoint-not-in-run", "the run has no checkpoints"));
  std::uint64_t index = manifest->checkpoints.size() - 1;
  if (config.checkpoint) index = *config.checkpoint;
  if (config.step) {
    bool found = false;
    for (const CheckpointEntry& e : manifest->checkpoints) {
      if (e.step == *config.step) {
        index = e.index;
        found = true;
      }
    }
    if (!found) return Fail(c, Status::Invalid("checkpoint-not-in-run", "no checkpoint at step " + std::to_string(*config.step)));
  }
  auto state = LoadCheckpoint(*run, *manifest, index);
  if (!state.ok()) return Fail(c, state.status());
  auto spec = run->LoadJobSpec();
  if (!spec.ok()) return Fail(c, spec.status());
  auto job = JobFromSpec(*spec);
  if (!job.ok()) return Fail(c, job.status());
  // The model under its PyTorch names (worker/model_weights.h); the
  // optimizer state, on request, under its own.
  auto tensors = ModelWeightsForTorch(job->model, *state);
  if (!tensors.ok()) return Fail(c, tensors.status());
  if (config.include_optimizer)
    for (const auto& [name, t] : state->tensors)
      if (name.rfind("opt.", 0) == 0) tensors->emplace(name, t);
  const Hash256 hash = manifest->checkpoints[index].state_hash;
  const auto metadata = WeightsMetadata(manifest->job_hash, hash, state->step);
  if (Status s = SaveSafetensors(config.out, *tensors, metadata); !s.ok()) return Fail(c, s);
  std::uint64_t elements = 0;
  for (const auto& [name, t] : *tensors) elements += static_cast<std::uint64_t>(t.numel());
  if (c.json) {
    std::cout << json{{"ok", true}, {"out", config.out.string()}, {"step", state->step}, {"state_hash", hash.Hex()},
                      {"tensors", tensors->size()}, {"elements", elements}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << "exported " << tensors->size() << " tensors (" << elements << " values) of step " << state->step
              << " (state " << hash.Hex().substr(0, 16) << "…) to " << config.out.string() << "\n";
  }
  return kExitOk;
}

// ---- dispute --------------------------------------------------------------------------

int RunDispute(const DisputeConfig& config) {
  const Common& c = config.common;
  auto compute = ParseCompute(c);
  if (!compute.ok()) return Fail(c, compute.status());
  auto loaded = LoadJobWithDataset(config.job);
  if (!loaded.ok()) return Fail(c, loaded.status());
  const Job& job = loaded->job;
  if (config.what == "exec") {
    auto file = ReadFile(config.inputs);
    if (!file.ok()) return Fail(c, file.status());
    auto inputs = DecodeNodeInputsFile(*file);
    if (!inputs.ok()) return Fail(c, inputs.status());
    auto verdict = ReexecuteNode(job, *inputs);
    if (!verdict.ok()) return Fail(c, verdict.status());
    const bool rounded = job.mode() == kernels::Mode::kRounded;
    const bool confirms = verdict->Confirms(inputs->record, rounded);
    json out{{"ok", true}, {"step", inputs->step}, {"node", inputs->node}, {"node_name", inputs->node_name},
             {"verdict", std::string(NodeVerdictKindName(verdict->kind))}, {"detail", verdict->detail},
             {"record_confirmed", confirms}};
    json hashes = json::array();
    for (const Hash256& h : verdict->output_hashes) hashes.push_back(h.Hex());
    out["output_hashes"] = hashes;
    if (c.json) {
      std::cout << out.dump(2) << "\n";
    } else {
      std::cout << "node " << inputs->node << " (" << inputs->node_name << ") of step " << inputs->step << ": "
                << NodeVerdictKindName(verdict->kind) << (verdict->detail.empty() ? "" : " — " + verdict->detail) << "\n";
      for (const Hash256& h : verdict->output_hashes) std::cout << "  output " << h.Hex() << "\n";
      std::cout << "the exported record is " << (confirms ? "correct" : "WRONG") << "\n";
    }
    return kExitOk;
  }
  auto run = RunDir::Open(config.run, false);
  if (!run.ok()) return Fail(c, run.status());
  std::optional<RunDir> logs_dir;
  if (!config.logs.empty()) {
    auto l = RunDir::Open(config.logs, false);
    if (!l.ok()) return Fail(c, l.status());
    logs_dir.emplace(std::move(l).value());
  }
  auto adversary = MaybeAdversary(config.adversary, job, loaded->dataset);
  if (!adversary.ok()) return Fail(c, adversary.status());
  const RunDir* logs = job.mode() == kernels::Mode::kRounded ? (logs_dir ? &*logs_dir : &*run) : nullptr;
  Party party{&job, &loaded->dataset, &*run, logs, ExecConfigFor(job, c.threads, compute->simd, compute->device),
              adversary->get()};
  json out{{"ok", true}};
  if (config.what == "steps") {
    auto a = AnswerStepHashes(party, config.checkpoint);
    if (!a.ok()) return Fail(c, a.status());
    json hashes = json::array();
    for (const Hash256& h : a->hashes) hashes.push_back(h.Hex());
    out.update({{"checkpoint", a->checkpoint_index}, {"first_step", a->first_step}, {"hashes", hashes},
                {"root", a->Root().Hex()}, {"complete", a->complete()}});
    if (!a->complete()) {
      out["failed_step"] = *a->failed_step;
      out["failed_node"] = *a->failed_node;
      out["failure"] = a->failure.ToString();
    }
    if (!c.json) {
      for (std::size_t k = 0; k < a->hashes.size(); ++k) {
        std::cout << "h_" << a->first_step + k << "  " << a->hashes[k].Hex() << "\n";
      }
      if (!a->complete()) std::cout << "cannot recompute step " << *a->failed_step << ": " << a->failure.ToString() << "\n";
    }
  } else if (config.what == "records") {
    auto r = AnswerNodeRecords(party, config.step);
    if (!r.ok()) return Fail(c, r.status());
    json recs = json::array();
    for (std::size_t k = 0; k < r->records.size(); ++k) {
      json rec = json::parse(NodeRecordToJson(r->records[k]));
      rec["index"] = k;
      rec["name"] = r->names[k];
      recs.push_back(rec);
    }
    out.update({{"step", r->step}, {"state_hash", r->state_hash.Hex()}, {"records", recs}, {"complete", r->complete()}});
    if (r->complete()) out["root"] = r->Root().Hex();
    if (!c.json) {
      for (std::size_t k = 0; k < r->records.size(); ++k) {
        const protocol::NodeRecord& rec = r->records[k];
        std::cout << k << "  " << r->names[k] << "  "
                  << (rec.output_hashes.empty() ? std::string("-") : rec.output_hashes[0].Hex().substr(0, 16)) << "\n";
      }
      if (r->complete()) std::cout << "root " << r->Root().Hex() << "\n";
    }
  } else if (config.what == "inputs") {
    auto n = AnswerNodeInputs(party, config.step, config.node);
    if (!n.ok()) return Fail(c, n.status());
    if (config.inputs.empty()) return Fail(c, Status::Invalid("cli-missing-option", "--out is required"));
    if (Status s = WriteFileAtomic(config.inputs, EncodeNodeInputsFile(*n)); !s.ok()) return Fail(c, s);
    out.update({{"step", n->step}, {"node", n->node}, {"node_name", n->node_name}, {"inputs", n->inputs.size()},
                {"examples", n->examples.size()}, {"file", config.inputs.string()}});
    if (!c.json) {
      std::cout << "wrote the " << n->inputs.size() << " inputs of node " << n->node << " (" << n->node_name
                << ") of step " << n->step << " with proofs to " << config.inputs.string() << "\n";
    }
  } else {
    return Fail(c, Status::Invalid("cli-bad-command", "dispute " + config.what));
  }
  if (c.json) std::cout << out.dump(2) << "\n";
  return kExitOk;
}

}  // namespace vt::worker::cli
