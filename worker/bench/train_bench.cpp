// Training-step cost of verifiability: one step of an MLP, a CNN and a tiny
// GPT in native, repops, rounded-trainer (fp64 + rounding + recording the
// log) and rounded-auditor (fp64 + following the trainer's log) modes, as
// ratios to native measured in the same run; rounding-log bytes per step and
// per million rounded values; checkpoint hashing throughput; with --gpt2,
// one GPT-2 small (124M) step in each mode.
//
//   train_bench            full run, prints the table
//   train_bench --quick    smoke run (CTest): tiny models, one iteration each
//   train_bench --gpt2     also GPT-2 small (minutes and several GB of memory)

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/philox.h"
#include "common/random.h"
#include "worker/job.h"
#include "worker/run_dir.h"
#include "worker/state.h"
#include "worker/trainer.h"

namespace {

using namespace vt;
using namespace vt::worker;

bool g_quick = false;

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

enum class Variant { kNative, kRepops, kRoundedTrainer, kRoundedAuditor };
const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kNative:
      return "native";
    case Variant::kRepops:
      return "repops";
    case Variant::kRoundedTrainer:
      return "rounded-trainer";
    case Variant::kRoundedAuditor:
      return "rounded-auditor";
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
};

Setup* GetSetup(const ModelCase& m, Variant v) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  const bool rounded = v == Variant::kRoundedTrainer || v == Variant::kRoundedAuditor;
  const char* mode = v == Variant::kNative ? "native" : v == Variant::kRepops ? "repops" : "rounded";
  const std::string key = m.name + "/" + mode;
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
  s->engine = std::make_unique<StepEngine>(s->loaded.job, s->loaded.dataset, ExecConfigFor(s->loaded.job, 1));
  auto init = s->engine->InitialState();
  if (!init.ok()) return nullptr;
  s->start = std::move(init).value();
  if (rounded) {
    TrainingState copy = s->start;
    auto outcome = s->engine->Step(copy);
    if (!outcome.ok()) return nullptr;
    s->logs = outcome->result.logs;
    s->values_rounded = outcome->result.values_rounded;
    IntervalLogs one;
    one.steps.push_back(s->logs);
    s->log_bytes = EncodeIntervalLogFile(one).size();
    s->log_entries = CountLogEntries(one);
  }
  Setup* raw = s.get();
  cache.emplace(key, std::move(s));
  return raw;
}

void BM_Step(benchmark::State& st, ModelCase m, Variant v) {
  Setup* s = GetSetup(m, v);
  if (s == nullptr) {
    st.SkipWithError("setup failed");
    return;
  }
  StepRequest request;
  if (v == Variant::kRoundedAuditor) request.replay_logs = &s->logs;
  for (auto _ : st) {
    st.PauseTiming();
    TrainingState state = s->start;  // every iteration runs the same step 0
    st.ResumeTiming();
    auto outcome = s->engine->Step(state, request);
    if (!outcome.ok()) {
      st.SkipWithError(outcome.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(outcome->result.loss);
  }
  if (v == Variant::kRoundedTrainer || v == Variant::kRoundedAuditor) {
    st.counters["log_bytes"] = static_cast<double>(s->log_bytes);
    st.counters["log_entries"] = static_cast<double>(s->log_entries);
    st.counters["values_rounded"] = static_cast<double>(s->values_rounded);
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
  double ms = 0;
  std::map<std::string, double> counters;
  double bytes_per_second = 0;
};
std::map<std::string, Row> g_rows;

class Collector : public benchmark::ConsoleReporter {
 public:
  Collector() : benchmark::ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      Row row;
      const double unit = benchmark::GetTimeUnitMultiplier(r.time_unit);
      row.ms = r.GetAdjustedRealTime() / unit * 1e3;
      for (const auto& [k, c] : r.counters) row.counters[k] = c.value;
      auto bps = r.counters.find("bytes_per_second");
      if (bps != r.counters.end()) row.bytes_per_second = bps->second.value;
      g_rows[r.run_name.function_name] = row;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

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

void PrintTable(const std::vector<ModelCase>& models) {
  std::printf("\n== training step, ratios to native (same run, 1 thread) ==\n");
  std::printf("%-11s %-16s %12s %8s %12s %14s %16s\n", "model", "mode", "step", "ratio", "log/step", "log entries",
              "log/M values");
  for (const ModelCase& m : models) {
    bool any = false;  // a --benchmark_filter may have left the model out
    for (const auto& [name, row] : g_rows) any |= name.rfind("step/" + m.name + "/", 0) == 0;
    if (!any) continue;
    const std::string base = "step/" + m.name + "/native";
    const auto native = g_rows.find(base);
    for (Variant v : {Variant::kNative, Variant::kRepops, Variant::kRoundedTrainer, Variant::kRoundedAuditor}) {
      const auto it = g_rows.find("step/" + m.name + "/" + VariantName(v));
      if (it == g_rows.end()) {
        std::printf("%-11s %-16s %12s\n", m.name.c_str(), VariantName(v), "failed");
        continue;
      }
      const Row& r = it->second;
      char ratio[32] = "-";
      if (native != g_rows.end() && native->second.ms > 0) std::snprintf(ratio, sizeof(ratio), "%.2fx", r.ms / native->second.ms);
      char ms[32];
      std::snprintf(ms, sizeof(ms), r.ms >= 1000 ? "%.2f s" : "%.3f ms", r.ms >= 1000 ? r.ms / 1e3 : r.ms);
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
      std::printf("%-11s %-16s %12s %8s %12s %14s %16s\n", m.name.c_str(), VariantName(v), ms, ratio, log.c_str(),
                  entries.c_str(), per_m.c_str());
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  bool gpt2 = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
    } else if (std::strcmp(argv[i], "--gpt2") == 0) {
      gpt2 = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (g_quick) gpt2 = false;
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  const std::vector<ModelCase> models = Models(gpt2);
  for (const ModelCase& m : models) {
    const bool big = m.name == "gpt2-small";
    for (Variant v : {Variant::kNative, Variant::kRepops, Variant::kRoundedTrainer, Variant::kRoundedAuditor}) {
      auto* b = benchmark::RegisterBenchmark(("step/" + m.name + "/" + VariantName(v)).c_str(), BM_Step, m, v)
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
      if (g_quick || big) b->Iterations(1);
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
  PrintTable(models);
  benchmark::Shutdown();
  // --quick is a smoke test: every model and mode must have run.
  if (!g_quick) return 0;
  for (const ModelCase& m : models) {
    for (Variant v : {Variant::kNative, Variant::kRepops, Variant::kRoundedTrainer, Variant::kRoundedAuditor}) {
      if (!g_rows.count("step/" + m.name + "/" + VariantName(v))) return 1;
    }
  }
  return 0;
}
