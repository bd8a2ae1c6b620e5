// Training-step cost of verifiability, anchored on PyTorch: one step of an
// MLP, a CNN and a tiny GPT (and GPT-2 small with --gpt2) in native, repops,
// repops+hash (repops plus the hash of every node output, as a solver
// committing node records does), rounded-trainer (fp64 + rounding +
// recording the log, on the fp64 GEMM `vt-worker train` picks here),
// rounded-vendor (the same on GemmF64: our AVX-512 or AVX2 fp64 GEMM, or OpenBLAS dgemm), rounded-auditor
// (fp64 reference + following the trainer's log) and certified (every GEMM output and reduction correctly
// rounded) modes, beside PyTorch's fp32 step of the same model, batch, thread count and optimizer (AdamW,
// gradient clipping) — all measured in the same run and printed as ratios; rounding-log bytes per step;
// checkpoint hashing throughput; and `vt-worker train` end to end against the sum of its own step times.
//
//   train_bench               full run, prints the tables
//   train_bench --quick       smoke run (CTest): tiny models, one iteration each
//   train_bench --gpt2        also GPT-2 small (minutes and several GB of memory)
//   train_bench --threads=N   operator threads, ours and PyTorch's (default 1)
//   train_bench --no-torch    skip the PyTorch anchor
//   train_bench --end-to-end  only the vt-worker train table
//
// The anchor is tools/torch_step_bench.py run by /usr/bin/python3 on the job
// (JobToJson); without torch the table says "PyTorch: not installed (apt-get
// install python3-torch)" and the rest runs as before. Time: the fastest
// single step, ours and PyTorch's alike, in process CPU time with one thread
// and wall time with more (on a shared machine load only ever adds time, and
// means swing by 2-5x between runs). GPT rows also print the step's model
// FLOP/s (GptStepFlops) and its share of the machine's fp32 FMA peak,
// measured in the same run (fma_peak.h) on the same thread count.
//
// Peak memory: each model's step in native, repops, rounded-trainer and
// certified mode runs once more in a fresh process (this binary,
// --step-memory=MODEL/MODE: the job, its dataset, the initial state and one
// step, as `vt-worker train` holds them), whose peak resident set (VmHWM) is
// printed beside the PyTorch anchor's own (its process: the interpreter,
// torch, the model, AdamW's state and its steps). Not wait4's ru_maxrss: a
// process started by exec also counts there the memory of the one that
// spawned it.

#include <benchmark/benchmark.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/philox.h"
#include "common/random.h"
#include "crypto/keyfile.h"
#include "kernels/blas_core.h"
#include "kernels/matmul.h"
#include "worker/bench/fma_peak.h"
#include "worker/job.h"
#include "worker/run_dir.h"
#include "worker/state.h"
#include "worker/trainer.h"

namespace {

using namespace vt;
using namespace vt::worker;

#ifndef VT_TORCH_STEP_BENCH
#error "VT_TORCH_STEP_BENCH must name tools/torch_step_bench.py"
#endif
#ifndef VT_WORKER_BIN
#error "VT_WORKER_BIN must name the vt-worker binary"
#endif

bool g_quick = false;
int g_threads = 1;

struct ModelCase {
  std::string name;
  std::string model;    // job-file model value
  std::string dataset;  // job-file dataset value
  int batch = 8;
};

std::vector<ModelCase> Models(bool gpt2) {
  std::vector<ModelCase> out;
  if (g_quick) {
    out.push_back({"mlp", R"("mlp-tiny")", R"({"kind": "synthetic", "seed": 1, "count": 64, "input_dim": 16, "classes": 4})", 8});
    out.push_back({"cnn", R"("cnn-tiny")", R"({"kind": "synthetic", "seed": 1, "count": 16, "input_dim": 64, "classes": 4})", 4});
    out.push_back({"gpt", R"({"preset": "gpt-tiny", "d_model": 32, "layers": 1, "context": 16})",
                   R"({"kind": "synthetic-text", "seed": 1, "bytes": 512, "window": 16})", 2});
    return out;
  }
  out.push_back({"mlp", R"("mlp-fashion")", R"({"kind": "synthetic", "seed": 1, "count": 512, "input_dim": 784, "classes": 10})", 64});
  out.push_back({"cnn", R"("cnn-fashion")", R"({"kind": "synthetic", "seed": 1, "count": 64, "input_dim": 784, "classes": 10})", 16});
  out.push_back({"gpt", R"("gpt-tiny")", R"({"kind": "synthetic-text", "seed": 1, "bytes": 8192, "window": 32})", 8});
  if (gpt2) {
    out.push_back({"gpt2-small", R"("gpt2-small")", R"({"kind": "synthetic-text", "seed": 1, "bytes": 4100, "window": 1024})", 1});
  }
  return out;
}

// rounded-trainer records on the fp64 GEMM `vt-worker train` picks here
// (--fp64-gemm auto, kernels/blas_core.h); rounded-vendor on GemmF64 (our
// AVX-512 or AVX2 fp64 GEMM, or OpenBLAS dgemm) whatever auto picks; rounded-auditor replays
// rounded-trainer's log. certified: every GEMM output and reduction correctly rounded (no log).
enum class Variant {
  kNative,
  kRepops,
  kRepopsHash,
  kRoundedTrainer,
  kRoundedVendor,
  kRoundedAuditor,
  kCertified
};
constexpr Variant kVariants[] = {Variant::kNative,         Variant::kRepops,        Variant::kRepopsHash,
                                 Variant::kRoundedTrainer, Variant::kRoundedVendor, Variant::kRoundedAuditor,
                                 Variant::kCertified};
bool IsRounded(Variant v) {
  return v == Variant::kRoundedTrainer || v == Variant::kRoundedVendor || v == Variant::kRoundedAuditor;
}
const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kNative:
      return "native";
    case Variant::kRepops:
      return "repops";
    case Variant::kRepopsHash:
      return "repops+hash";
    case Variant::kRoundedTrainer:
      return "rounded-trainer";
    case Variant::kRoundedVendor:
      return "rounded-vendor";
    case Variant::kRoundedAuditor:
      return "rounded-auditor";
    case Variant::kCertified:
      return "certified";
  }
  return "?";
}

// One model in one mode, ready to step.
struct Setup {
  LoadedJob loaded;
  std::unique_ptr<StepEngine> engine;
  TrainingState start;
  std::vector<kernels::RoundingLog> logs;  // rounded: the trainer's logs of the first step
  std::uint64_t values_rounded = 0;
  std::uint64_t log_bytes = 0;
  std::uint64_t log_entries = 0;
  std::uint64_t reference_records = 0;  // nodes recorded again on the reference
  std::uint64_t reference_values = 0;   // values rounded from a reference function
  std::size_t nodes = 0;
};

// `record_first`: a rounded setup records the trainer's first step on a copy
// of the state (the replay benchmarks' logs and the log columns); the
// memory child skips it, holding one state as `vt-worker train` does.
Setup* GetSetup(const ModelCase& m, Variant v, bool record_first = true) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  const bool rounded = IsRounded(v);
  const bool vendor = v == Variant::kRoundedVendor;
  const char* mode = v == Variant::kNative      ? "native"
                     : v == Variant::kCertified ? "certified"
                     : rounded                  ? "rounded"
                                                : "repops";
  const std::string key =
      m.name + "/" + mode + (vendor ? "-vendor" : "") + (record_first ? "" : "-unrecorded");
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  const std::string text = "{\"model\": " + m.model + ", \"dataset\": " + m.dataset +
                           ", \"batch_size\": " + std::to_string(m.batch) +
                           ", \"steps\": 1000, \"checkpoint_interval\": 100, \"mode\": \"" + mode + "\"}";
  auto job = ParseJobJson(text);
  if (!job.ok()) {
    std::fprintf(stderr, "job: %s\n", job.status().ToString().c_str());
    return nullptr;
  }
  auto data = LoadJobDataset(*job);
  if (!data.ok() || !ResolveDataset(*job, *data).ok()) {
    std::fprintf(stderr, "dataset failed\n");
    return nullptr;
  }
  auto s = std::make_unique<Setup>();
  s->loaded = LoadedJob{std::move(job).value(), std::move(data).value()};
  kernels::ExecConfig config = ExecConfigFor(s->loaded.job, g_threads);
  config.f64_reference =
      rounded && kernels::TrainerRecordsOnReference(
                     vendor ? kernels::F64Gemm::kVendor : kernels::F64Gemm::kAuto, kernels::Device::kCpu);
  s->engine = std::make_unique<StepEngine>(s->loaded.job, s->loaded.dataset, config);
  auto init = s->engine->InitialState();
  if (!init.ok()) return nullptr;
  s->start = std::move(init).value();
  if (rounded && record_first) {
    TrainingState copy = s->start;
    auto outcome = s->engine->Step(copy);
    if (!outcome.ok()) return nullptr;
    s->logs = outcome->result.logs;
    s->values_rounded = outcome->result.values_rounded;
    IntervalLogs one;
    one.steps.push_back(s->logs);
    s->log_bytes = EncodeIntervalLogFile(one).size();
    s->log_entries = CountLogEntries(one);
    s->reference_records = outcome->result.reference_records;
    s->reference_values = outcome->result.reference_values;
    s->nodes = s->logs.size();
  }
  Setup* raw = s.get();
  cache.emplace(key, std::move(s));
  return raw;
}

double StepClock() {
  timespec ts{};
  ::clock_gettime(g_threads == 1 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_Step(benchmark::State& st, ModelCase m, Variant v) {
  Setup* s = GetSetup(m, v);
  if (s == nullptr) {
    st.SkipWithError("setup failed");
    return;
  }
  StepRequest request;
  if (v == Variant::kRoundedAuditor) request.replay_logs = &s->logs;
  request.hash_outputs = v == Variant::kRepopsHash;
  double best = 1e30;  // the fastest single step (seconds, ClockName)
  for (auto _ : st) {
    st.PauseTiming();
    TrainingState state = s->start;  // every iteration runs the same step 0
    st.ResumeTiming();
    const double t0 = StepClock();
    auto outcome = s->engine->Step(state, request);
    best = std::min(best, StepClock() - t0);
    if (!outcome.ok()) {
      st.SkipWithError(outcome.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(outcome->result.loss);
  }
  st.counters["best_ms"] = best * 1e3;
  if (IsRounded(v)) {
    st.counters["log_bytes"] = static_cast<double>(s->log_bytes);
    st.counters["log_entries"] = static_cast<double>(s->log_entries);
    st.counters["values_rounded"] = static_cast<double>(s->values_rounded);
    st.counters["reference_records"] = static_cast<double>(s->reference_records);
    st.counters["reference_values"] = static_cast<double>(s->reference_values);
    st.counters["nodes"] = static_cast<double>(s->nodes);
  }
}

// A state like a model's: 16 tensors of N(0, 0.02²) weights.
TrainingState HashState(std::size_t floats) {
  TrainingState s;
  const std::size_t per = floats / 16;
  const PhiloxKey key = PhiloxKeyFromSeed(7);
  for (int t = 0; t < 16; ++t) {
    std::vector<float> v(per);
    for (std::size_t i = 0; i < per; ++i) v[i] = 0.02f * NormalAt(key, 0, static_cast<std::uint32_t>(t), i);
    s.tensors.emplace("t" + std::to_string(100 + t), kernels::Tensor({static_cast<std::int64_t>(per)}, std::move(v)));
  }
  return s;
}

void BM_StateHash(benchmark::State& st) {
  static const TrainingState state = HashState(g_quick ? (1u << 18) : (1u << 24));  // 1 MB or 64 MB
  const double bytes = static_cast<double>(state.tensors.size() * state.tensors.begin()->second.numel() * 4);
  for (auto _ : st) benchmark::DoNotOptimize(StateHash(state));
  st.counters["MB"] = bytes / 1e6;
  st.SetBytesProcessed(static_cast<std::int64_t>(bytes) * st.iterations());
}

void BM_CheckpointEncode(benchmark::State& st) {
  static const TrainingState state = HashState(g_quick ? (1u << 18) : (1u << 24));
  const double bytes = static_cast<double>(state.tensors.size() * state.tensors.begin()->second.numel() * 4);
  const Hash256 h = StateHash(state);
  std::size_t size = 0;
  for (auto _ : st) {
    Bytes file = EncodeCheckpointFile(state, h);
    size = file.size();
    benchmark::DoNotOptimize(file.data());
  }
  st.counters["MB"] = bytes / 1e6;
  st.counters["ratio"] = bytes / static_cast<double>(size);
  st.SetBytesProcessed(static_cast<std::int64_t>(bytes) * st.iterations());
}

// Collects every run for the summary table.
struct Row {
  double ms = 0;      // the table's figure (see ClockName)
  double real_ms = 0;
  std::map<std::string, double> counters;
  double bytes_per_second = 0;
};
std::map<std::string, Row> g_rows;

// A shared machine only ever adds time: the table compares the fastest
// single step of each, ours and PyTorch's alike — in the process's CPU time
// with one thread (immune to being descheduled), in wall time with more.
const char* ClockName() {
  return g_threads == 1 ? "fastest single step, process CPU time" : "fastest single step, wall time";
}

class Collector : public benchmark::ConsoleReporter {
 public:
  Collector() : benchmark::ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      Row row;
      const double unit = benchmark::GetTimeUnitMultiplier(r.time_unit);
      row.real_ms = r.GetAdjustedRealTime() / unit * 1e3;
      for (const auto& [k, c] : r.counters) row.counters[k] = c.value;
      const auto best = r.counters.find("best_ms");
      row.ms = best != r.counters.end() ? best->second.value : row.real_ms;
      auto bps = r.counters.find("bytes_per_second");
      if (bps != r.counters.end()) row.bytes_per_second = bps->second.value;
      g_rows[r.run_name.function_name] = row;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

// Whether any step of `m` ran (a --benchmark_filter may have left it out).
bool StepsRan(const ModelCase& m) {
  for (const auto& [name, row] : g_rows)
    if (name.rfind("step/" + m.name + "/", 0) == 0) return true;
  return false;
}

std::string Human(double bytes) {
  char buf[32];
  if (bytes >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f MB", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1f kB", bytes / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  }
  return buf;
}

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms >= 1000 ? "%.2f s" : "%.2f ms", ms >= 1000 ? ms / 1e3 : ms);
  return buf;
}

// Runs a shell command; its stdout (and whatever it redirects there) and
// wait status. started = false when popen failed.
struct Captured {
  bool started = false;
  int status = -1;
  std::string out;
};
Captured RunCapturing(const std::string& cmd) {
  Captured c;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return c;
  c.started = true;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) c.out += buf;
  c.status = ::pclose(p);
  return c;
}

// ---- the PyTorch anchor -------------------------------------------------------------

struct TorchResult {
  bool installed = true;
  bool ok = false;
  double ms = 0;  // the table's figure (ClockName)
  double peak_bytes = 0;  // the script's peak resident set
  std::string version;
  std::string error;
};

// Runs tools/torch_step_bench.py on the model's job (same model, batch,
// optimizer; g_threads threads). Exit 3 from the script: torch is missing.
TorchResult RunTorch(const ModelCase& m) {
  TorchResult r;
  Setup* s = GetSetup(m, Variant::kNative);
  if (s == nullptr) {
    r.error = "setup failed";
    return r;
  }
  char path[] = "/tmp/vt-train-bench-job-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    r.error = "mkstemp failed";
    return r;
  }
  ::close(fd);
  std::ofstream(path) << JobToJson(s->loaded.job);
  const bool one = g_quick || m.name == "gpt2-small";
  const std::string cmd = "/usr/bin/python3 " + std::string(VT_TORCH_STEP_BENCH) +
                          " --threads " + std::to_string(g_threads) + (one ? " --iters 1" : " --min-seconds 3") +
                          " < " + path + " 2>&1";
  const Captured run = RunCapturing(cmd);
  std::remove(path);
  if (!run.started) {
    r.error = "popen failed";
    return r;
  }
  const int code = WIFEXITED(run.status) ? WEXITSTATUS(run.status) : -1;
  // 127: no /usr/bin/python3 at all; 3: the script found no torch.
  if (code == 3 || code == 127) {
    r.installed = false;
    return r;
  }
  const auto brace = run.out.rfind('{');  // the script's report: its last line, one flat object
  const nlohmann::json j = brace == std::string::npos ? nlohmann::json(nlohmann::json::value_t::discarded)
                                                      : nlohmann::json::parse(run.out.substr(brace), nullptr, false);
  if (code != 0 || !j.is_object() || !j.contains("ms_median")) {
    r.error = "torch_step_bench.py failed: " + run.out;
    return r;
  }
  r.ok = true;
  r.version = j.value("torch", "?");
  r.ms = g_threads == 1 ? j.value("cpu_ms_min", 0.0) : j.value("ms_min", 0.0);
  r.peak_bytes = 1024.0 * j.value("peak_rss_kb", 0.0);
  return r;
}

std::map<std::string, TorchResult> g_torch;
bench::FmaPeak g_peak;

// Model FLOPs of one GPT training step (forward + backward = 3 × forward):
// 6 · tokens · (matmul weights: 12·C² per layer and the tied V·C head) plus
// attention's QKᵀ and PV over the full T×T square (our kernels compute the
// masked half too), 12 · L · B · T² · C. Embedding lookups, norms, GELU,
// softmax and AdamW are left out (< 1 % for GPT-2 small). 0 for other families.
double GptStepFlops(const kernels::graph::ModelSpec& model, int batch) {
  const auto* g = std::get_if<kernels::graph::GptSpec>(&model.arch);
  if (g == nullptr) return 0;
  const double b = batch, t = static_cast<double>(g->context), c = static_cast<double>(g->d_model),
               l = static_cast<double>(g->layers), v = static_cast<double>(g->vocab);
  return 6.0 * b * t * (12.0 * l * c * c + v * c) + 12.0 * l * b * t * t * c;
}

void PrintTable(const std::vector<ModelCase>& models) {
  std::printf("\n== training step, %d thread(s), %s, ratios measured in this run ==\n", g_threads, ClockName());
  std::printf("fp32 FMA peak (%s, %d thread(s), measured now): %.1f GFLOP/s\n", g_peak.isa.c_str(), g_threads,
              g_peak.flops_per_second / 1e9);
  // Native mode's sgemm, the rounded trainer's dgemm and PyTorch's linear
  // layers all run in OpenBLAS, whose kernels follow the CPU it recognises
  // (kernels/blas_core.h).
  const std::string advice = kernels::BlasCoreAdvice();
  std::printf("OpenBLAS core: %s (OPENBLAS_CORETYPE %s)%s%s\n", kernels::BlasCoreName().c_str(),
              std::getenv("OPENBLAS_CORETYPE") != nullptr ? std::getenv("OPENBLAS_CORETYPE") : "unset",
              advice.empty() ? "" : "; this CPU runs faster ones: OPENBLAS_CORETYPE=", advice.c_str());
  const std::string fast_f64(kernels::GemmF64CpuName(kernels::Simd::kAuto));
  std::printf("rounded-trainer's fp64 GEMM (vt-worker train --fp64-gemm auto): %s; rounded-vendor's: %s\n",
              kernels::TrainerRecordsOnReference(kernels::F64Gemm::kAuto, kernels::Device::kCpu)
                  ? "the canonical reference"
                  : fast_f64.c_str(),
              fast_f64.c_str());
  std::printf("%-11s %-16s %12s %9s %9s %12s %14s %16s %16s\n", "model", "mode", "step", "/native", "/PyTorch", "log/step",
              "log entries", "log/M values", "GFLOP/s (%peak)");
  for (const ModelCase& m : models) {
    if (!StepsRan(m)) continue;
    const auto native = g_rows.find("step/" + m.name + "/native");
    const auto torch = g_torch.find(m.name);
    const bool have_torch = torch != g_torch.end() && torch->second.ok && torch->second.ms > 0;
    const Setup* setup = GetSetup(m, Variant::kNative);
    const double step_flops = setup == nullptr ? 0 : GptStepFlops(setup->loaded.job.model, m.batch);
    // Achieved model FLOP/s of a step of `ms` and its share of the peak.
    const auto rate = [&](double ms) -> std::string {
      if (step_flops <= 0 || ms <= 0) return "-";
      const double fps = step_flops / (ms * 1e-3);
      char buf[48];
      std::snprintf(buf, sizeof(buf), "%.1f (%.0f%%)", fps / 1e9,
                    g_peak.flops_per_second > 0 ? 100.0 * fps / g_peak.flops_per_second : 0.0);
      return buf;
    };
    if (torch != g_torch.end()) {
      const TorchResult& t = torch->second;
      if (!t.installed) {
        std::printf("%-11s %-16s %12s\n", m.name.c_str(), "pytorch-fp32", "PyTorch: not installed (apt-get install python3-torch)");
      } else if (!t.ok) {
        std::printf("%-11s %-16s %12s  %s\n", m.name.c_str(), "pytorch-fp32", "failed", t.error.c_str());
      } else {
        std::printf("%-11s %-16s %12s %9s %8.2fx   (torch %s, AdamW) %s\n", m.name.c_str(), "pytorch-fp32",
                    Ms(t.ms).c_str(), "-", 1.0, t.version.c_str(), rate(t.ms).c_str());
      }
    }
    for (Variant v : kVariants) {
      const auto it = g_rows.find("step/" + m.name + "/" + VariantName(v));
      if (it == g_rows.end()) {
        // Left out by --benchmark_filter, or failed (the error is printed above).
        std::printf("%-11s %-16s %12s\n", m.name.c_str(), VariantName(v), "not run");
        continue;
      }
      const Row& r = it->second;
      char vs_native[32] = "-", vs_torch[32] = "-";
      if (native != g_rows.end() && native->second.ms > 0) std::snprintf(vs_native, sizeof(vs_native), "%.2fx", r.ms / native->second.ms);
      if (have_torch) std::snprintf(vs_torch, sizeof(vs_torch), "%.2fx", r.ms / torch->second.ms);
      std::string log = "-", entries = "-", per_m = "-";
      if (r.counters.count("log_bytes")) {
        const double bytes = r.counters.at("log_bytes");
        const double values = r.counters.at("values_rounded");
        log = Human(bytes);
        char e[48];
        std::snprintf(e, sizeof(e), "%.0f (%.2f%%)", r.counters.at("log_entries"),
                      values > 0 ? 100.0 * r.counters.at("log_entries") / values : 0.0);
        entries = e;
        per_m = values > 0 ? Human(bytes * 1e6 / values) : "-";
      }
      std::printf("%-11s %-16s %12s %9s %9s %12s %14s %16s %16s\n", m.name.c_str(), VariantName(v), Ms(r.ms).c_str(),
                  vs_native, vs_torch, log.c_str(), entries.c_str(), per_m.c_str(), rate(r.ms).c_str());
      if ((v == Variant::kRoundedTrainer || v == Variant::kRoundedVendor) &&
          r.counters.count("reference_records")) {
        std::printf(
            "%-11s %-16s the honest limit: %.0f values rounded from a reference function, %.0f of %.0f nodes "
            "recorded again on the canonical reference\n",
            "", "", r.counters.at("reference_values"), r.counters.at("reference_records"),
            r.counters.at("nodes"));
      }
    }
  }
  std::printf("\n== checkpoints ==\n");
  for (const char* name : {"checkpoint/state_hash", "checkpoint/encode_zstd"}) {
    const auto it = g_rows.find(name);
    if (it == g_rows.end()) continue;
    std::printf("%-24s %8.1f MB/s  (state of %.0f MB", name, it->second.bytes_per_second / 1e6,
                it->second.counters.count("MB") ? it->second.counters.at("MB") : 0.0);
    if (it->second.counters.count("ratio")) std::printf(", compression %.2fx", it->second.counters.at("ratio"));
    std::printf(")\n");
  }
}

// ---- peak memory of one step ----------------------------------------------------------

constexpr Variant kMemoryVariants[] = {Variant::kNative, Variant::kRepops, Variant::kRoundedTrainer,
                                       Variant::kCertified};

// This process's peak resident set in bytes (VmHWM), 0 if unknown.
double PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return 1024.0 * std::atof(line.c_str() + 6);  // "VmHWM:  123 kB"
  }
  return 0;
}

// The child's side of --step-memory=MODEL/MODE: one step, then "peak_bytes N"
// on stdout; exit status 0 when it ran.
int StepForMemory(const std::string& spec, bool gpt2) {
  const auto slash = spec.find('/');
  for (const ModelCase& m : Models(gpt2)) {
    if (slash == std::string::npos || spec.substr(0, slash) != m.name) continue;
    for (Variant v : kVariants) {
      if (spec.substr(slash + 1) != VariantName(v)) continue;
      Setup* s = GetSetup(m, v, /*record_first=*/false);
      if (s == nullptr) return 1;
      TrainingState state = std::move(s->start);  // one state, as vt-worker train holds
      if (!s->engine->Step(state).ok()) return 1;
      std::printf("peak_bytes %.0f\n", PeakResidentBytes());
      return 0;
    }
  }
  std::fprintf(stderr, "--step-memory: unknown model/mode %s\n", spec.c_str());
  return 2;
}

// Runs StepForMemory in a fresh process of this binary; its peak resident
// set in bytes, or 0 when it failed.
double StepPeakBytes(const ModelCase& m, Variant v, bool gpt2) {
  static const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = self + " --step-memory=" + m.name + "/" + VariantName(v) +
                          " --threads=" + std::to_string(g_threads) + (g_quick ? " --quick" : "") +
                          (gpt2 ? " --gpt2" : "") + " 2>&1";
  const Captured run = RunCapturing(cmd);
  const auto at = run.out.rfind("peak_bytes ");
  if (!run.started || run.status != 0 || at == std::string::npos) {
    std::fprintf(stderr, "%s failed: %s\n", cmd.c_str(), run.out.c_str());
    return 0;
  }
  return std::atof(run.out.c_str() + at + 11);
}

// Returns false when a child failed (the --quick smoke test then fails).
bool MemoryTable(const std::vector<ModelCase>& models, bool gpt2) {
  bool all_ok = true;
  std::printf("\n== peak resident memory of one step (a fresh process each), %d thread(s) ==\n", g_threads);
  std::printf("%-11s %14s", "model", "pytorch-fp32");
  for (Variant v : kMemoryVariants) std::printf(" %22s", VariantName(v));
  std::printf("\n");
  for (const ModelCase& m : models) {
    if (!StepsRan(m)) continue;
    const auto torch = g_torch.find(m.name);
    const double anchor = torch != g_torch.end() && torch->second.ok ? torch->second.peak_bytes : 0;
    std::printf("%-11s %14s", m.name.c_str(), anchor > 0 ? Human(anchor).c_str() : "-");
    for (Variant v : kMemoryVariants) {
      const double peak = StepPeakBytes(m, v, gpt2);
      all_ok &= peak > 0;
      char cell[48] = "failed";
      if (peak > 0 && anchor > 0) {
        std::snprintf(cell, sizeof(cell), "%s (%.2fx)", Human(peak).c_str(), peak / anchor);
      } else if (peak > 0) {
        std::snprintf(cell, sizeof(cell), "%s", Human(peak).c_str());
      }
      std::printf(" %22s", cell);
    }
    std::printf("\n");
  }
  std::printf("(x: ÷ PyTorch's peak, which includes the interpreter and torch itself)\n");
  return all_ok;
}

// ---- vt-worker train, end to end ----------------------------------------------------
//
// The whole CLI run as a user starts it — process start, job and dataset
// load, every step, the checkpoints with their hashes, rounding logs, the
// commitment and its signature — against the sum of its own step times
// (TrainSummary::step_seconds, in its --json output), per model and mode.
// The worker key exists beforehand (created here with cheap scrypt
// parameters), as a worker's would.

struct EndToEnd {
  bool ok = false;
  double wall_s = 0, step_s = 0, checkpoint_s = 0;
  std::uint64_t steps = 0, checkpoints = 0;
  std::string error;
};

double WallClock() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

EndToEnd RunWorkerTrain(const ModelCase& m, const char* mode, int steps, int interval) {
  EndToEnd r;
  char dir[] = "/tmp/vt-train-bench-e2e-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    r.error = "mkdtemp failed";
    return r;
  }
  const std::string d = dir;
  const std::string job = d + "/job.json", key = d + "/worker.key";
  std::ofstream(job) << "{\"model\": " << m.model << ", \"dataset\": " << m.dataset
                     << ", \"batch_size\": " << m.batch << ", \"steps\": " << steps
                     << ", \"checkpoint_interval\": " << interval << ", \"mode\": \"" << mode << "\"}";
  auto secret = crypto::SecretKey::Generate();
  if (!secret.ok() || !crypto::WriteKeyFile(key, *secret, "", crypto::ScryptParams{10, 8, 1}).ok()) {
    r.error = "cannot write the worker key";
    return r;
  }
  const std::string cmd = std::string(VT_WORKER_BIN) + " train --job " + job + " --out " + d + "/run --key " + key +
                          " --json --no-progress --threads " + std::to_string(g_threads) + " 2>&1";
  const double t0 = WallClock();
  const Captured run = RunCapturing(cmd);
  r.wall_s = WallClock() - t0;
  std::filesystem::remove_all(d);
  // The report is one JSON document (nested objects: parse from its start).
  const auto brace = run.out.find('{');
  const nlohmann::json j = brace == std::string::npos ? nlohmann::json(nlohmann::json::value_t::discarded)
                                                      : nlohmann::json::parse(run.out.substr(brace), nullptr, false);
  if (!run.started || run.status != 0 || !j.is_object() || !j.value("complete", false)) {
    r.error = "vt-worker train failed: " + run.out;
    return r;
  }
  r.ok = true;
  r.step_s = j.value("step_seconds", 0.0);
  r.checkpoint_s = j.value("checkpoint_seconds", 0.0);
  r.steps = j.value("steps_run", std::uint64_t{0});
  r.checkpoints = j.value("checkpoints", std::uint64_t{0});
  return r;
}

// Returns false when a run failed (the --quick smoke test then fails).
//
// Each model and mode runs at two lengths, the second with four times the
// steps: what the longer run adds over the shorter, against the step time
// it adds, is the steady-state cost of the loop (checkpoints, logs,
// hashing, per step); what is left of the short run's wall time is paid
// once per process (start, job and dataset, key, the last checkpoint, the
// commitment). Each length runs kEndToEndRuns times, the two in turn, and
// the table takes each length's fastest run: on a shared 2-core VM one pair
// of runs gave mlp repops a steady state anywhere from 0.87x to 1.42x.
constexpr int kEndToEndRuns = 3;

bool EndToEndTable(const std::vector<ModelCase>& models) {
  std::printf("\n== vt-worker train end to end, %d thread(s): the whole process vs the sum of its step times "
              "(each length's fastest of %d runs) ==\n",
              g_threads, g_quick ? 1 : kEndToEndRuns);
  std::printf("%-11s %-10s %6s %6s %10s %10s %12s %8s %12s %10s\n", "model", "mode", "steps", "ckpts", "wall",
              "Σ steps", "checkpoints", "ratio", "steady state", "once");
  bool all_ok = true;
  for (const ModelCase& m : models) {
    if (m.name == "gpt2-small") continue;  // minutes per step: not here
    const int steps = g_quick ? 4 : m.name == "cnn" ? 40 : m.name == "mlp" ? 400 : 100;
    const int interval = g_quick ? 2 : 10;
    for (const char* mode : {"repops", "rounded", "certified"}) {
      EndToEnd e, longer;  // the fastest of each length
      std::string failed;
      for (int run = 0; run < (g_quick ? 1 : kEndToEndRuns) && failed.empty(); ++run) {
        for (const auto& [best, length] : {std::pair{&e, steps}, std::pair{&longer, 4 * steps}}) {
          const EndToEnd r = RunWorkerTrain(m, mode, length, interval);
          if (!r.ok) {
            failed = r.error;
            break;
          }
          if (!best->ok || r.wall_s < best->wall_s) *best = r;
        }
      }
      if (!failed.empty()) {
        std::printf("%-11s %-10s failed: %s\n", m.name.c_str(), mode, failed.c_str());
        all_ok = false;
        continue;
      }
      // wall ≈ once + steady · Σ steps, from the two lengths.
      const double added_steps = longer.step_s - e.step_s;
      const double steady = added_steps > 0 ? (longer.wall_s - e.wall_s) / added_steps : 0.0;
      const double once_ms = (e.wall_s - steady * e.step_s) * 1e3;
      for (const EndToEnd* r : {&e, &longer}) {
        std::printf("%-11s %-10s %6llu %6llu %10s %10s %12s %7.3fx", m.name.c_str(), mode,
                    static_cast<unsigned long long>(r->steps),
                    static_cast<unsigned long long>(r->checkpoints), Ms(r->wall_s * 1e3).c_str(),
                    Ms(r->step_s * 1e3).c_str(), Ms(r->checkpoint_s * 1e3).c_str(),
                    r->step_s > 0 ? r->wall_s / r->step_s : 0.0);
        if (r == &longer) std::printf(" %11.3fx %10s", steady, Ms(once_ms).c_str());
        std::printf("\n");
      }
    }
  }
  return all_ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  bool gpt2 = false, torch = true, end_to_end_only = false;
  std::string step_memory;  // a MemoryTable child
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
    } else if (std::strcmp(argv[i], "--gpt2") == 0) {
      gpt2 = true;
    } else if (std::strcmp(argv[i], "--no-torch") == 0) {
      torch = false;
    } else if (std::strcmp(argv[i], "--end-to-end") == 0) {
      end_to_end_only = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else if (std::strncmp(argv[i], "--step-memory=", 14) == 0) {
      step_memory = argv[i] + 14;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (g_quick) gpt2 = false;
  if (!step_memory.empty()) return StepForMemory(step_memory, gpt2);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  const std::vector<ModelCase> models = Models(gpt2);
  if (end_to_end_only) return EndToEndTable(models) ? 0 : 1;
  for (const ModelCase& m : models) {
    const bool big = m.name == "gpt2-small";
    for (Variant v : kVariants) {
      auto* b = benchmark::RegisterBenchmark(("step/" + m.name + "/" + VariantName(v)).c_str(), BM_Step, m, v)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
      // GPT-2 small: a second step, as PyTorch's anchor warms up with one
      // (the first step of a process faults its working set in; the table
      // takes the fastest).
      if (g_quick) b->Iterations(1);
      if (big) b->Iterations(2);
    }
  }
  auto* h = benchmark::RegisterBenchmark("checkpoint/state_hash", BM_StateHash)->Unit(benchmark::kMillisecond)->UseRealTime();
  auto* e = benchmark::RegisterBenchmark("checkpoint/encode_zstd", BM_CheckpointEncode)->Unit(benchmark::kMillisecond)->UseRealTime();
  if (g_quick) {
    h->Iterations(1);
    e->Iterations(1);
  }
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (torch) {
    for (const ModelCase& m : models) {
      if (StepsRan(m)) g_torch[m.name] = RunTorch(m);
    }
  }
  g_peak = bench::MeasureFmaPeak(g_threads, g_quick ? 1 : 5);
  PrintTable(models);
  const bool memory_ok = MemoryTable(models, gpt2);
  const bool end_to_end_ok = EndToEndTable(models);
  benchmark::Shutdown();
  // --quick is a smoke test: every model and mode must have run, and the
  // anchor must have run or said that torch is missing.
  if (!g_quick) return 0;
  if (!end_to_end_ok || !memory_ok) return 1;
  for (const ModelCase& m : models) {
    for (Variant v : kVariants) {
      if (!g_rows.count("step/" + m.name + "/" + VariantName(v))) return 1;
    }
    if (torch) {
      const TorchResult& t = g_torch[m.name];
      if (t.installed && !t.ok) return 1;
    }
  }
  return 0;
}
