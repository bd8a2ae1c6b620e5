// Training-step benchmark: one full step (forward, loss, backward, optimizer)
// of each model family in every determinism mode, timed against native mode
// in the same run, with the rounding-log size per step.
//
//   kernels_step_bench                 mlp-fashion, cnn-fashion, gpt-tiny (a minute or so)
//   kernels_step_bench --quick         mlp-tiny, cnn-tiny, gpt-tiny, one iteration each (CTest smoke run)
//   kernels_step_bench --gpt2-small    adds one GPT-2 small step (B=1, T=1024) per mode: minutes on 2 cores
//   kernels_step_bench --threads=N     operator threads (default: all cores)
//   kernels_step_bench --profile       instead: where a step's time goes, per node kind
//                                      and mode (share of the step, from per-node timestamps)
//   kernels_step_bench --modes=repops,native   only these modes (benchmarks and profile)
//   kernels_step_bench --models=mlp-fashion     only these of the models above (a comma list)
//   kernels_step_bench --reps=N        steps per mode in --profile (default 5)
//   kernels_step_bench --memory        instead: the nodes during which the resident set
//                                      peaks, one step per mode (run one mode per process:
//                                      a process keeps the memory an earlier mode freed)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=gpt).
//
// Modes: native (OpenBLAS sgemm, libm), repops (fixed order), repops+state
// (repops plus the chunk-tree hash of the next state: what training commits,
// at a checkpoint every step), repops+hash (repops plus the chunk-tree hash of
// every node output, as a party answering a dispute does for the one disputed
// step), rounded-record (fp64, round, log) and rounded-replay (fp64, follow
// the recorded log). Hashing uses the operator threads.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/philox.h"
#include "common/random.h"
#include "kernels/chunk_tree.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"

namespace vt::kernels::graph {
namespace {

enum class BenchMode { kNative, kRepops, kRepopsState, kRepopsHash, kRoundedRecord, kRoundedReplay };
constexpr BenchMode kModes[] = {BenchMode::kNative,         BenchMode::kRepops,        BenchMode::kRepopsState,
                                BenchMode::kRepopsHash,     BenchMode::kRoundedRecord, BenchMode::kRoundedReplay};

const char* BenchModeName(BenchMode m) {
  switch (m) {
    case BenchMode::kNative:
      return "native";
    case BenchMode::kRepops:
      return "repops";
    case BenchMode::kRepopsState:
      return "repops+state";
    case BenchMode::kRepopsHash:
      return "repops+hash";
    case BenchMode::kRoundedRecord:
      return "rounded-record";
    case BenchMode::kRoundedReplay:
      return "rounded-replay";
  }
  return "?";
}

struct Case {
  std::string model;
  std::int64_t batch;
};

// Everything one model's benchmarks share: built once, outside the timing.
struct Workload {
  ModelSpec model;
  OptimizerSpec opt;
  StepGraph graph;
  std::vector<Tensor> state;
  std::vector<Tensor> batch;
  // Recorded once, on first use by a rounded mode (a GPT-2 small record step
  // takes most of a minute): the replay benchmark's logs and the log columns.
  std::vector<RoundingLog> logs;
  std::uint64_t values_rounded = 0;
  std::size_t log_bytes = 0;  // zstd-compressed per node, summed over the step
  std::size_t log_entries = 0;
  bool ready = false;
  bool recorded = false;
};

constexpr std::uint64_t kSeed = 1;
int g_threads = 1;
std::vector<BenchMode> g_modes(std::begin(kModes), std::end(kModes));  // --modes
std::map<std::string, Workload> g_workloads;

std::vector<Tensor> SyntheticBatch(const ModelSpec& model, std::int64_t batch) {
  const std::vector<Shape> shapes = *BatchShapes(model, batch);
  PhiloxStream s(2024, 0, 0);
  Tensor inputs(shapes[0]), targets(shapes[1]);
  std::uint64_t classes = 0;
  if (model.family() == ModelFamily::kGpt) {
    classes = static_cast<std::uint64_t>(std::get<GptSpec>(model.arch).vocab);
    for (std::int64_t i = 0; i < inputs.numel(); ++i)
      inputs[i] = static_cast<float>(NextUniformInt(s, classes));
  } else {
    classes = static_cast<std::uint64_t>(model.family() == ModelFamily::kMlp
                                             ? std::get<MlpSpec>(model.arch).classes
                                             : std::get<CnnSpec>(model.arch).classes);
    for (std::int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = NextNormal(s);
  }
  for (std::int64_t i = 0; i < targets.numel(); ++i)
    targets[i] = static_cast<float>(NextUniformInt(s, classes));
  return {std::move(inputs), std::move(targets)};
}

ExecConfig ConfigFor(BenchMode m) {
  ExecConfig c;
  c.threads = g_threads;
  c.mode = m == BenchMode::kNative                                              ? Mode::kNative
           : (m == BenchMode::kRoundedRecord || m == BenchMode::kRoundedReplay) ? Mode::kRounded
                                                                                : Mode::kRepops;
  return c;
}

// "repops,native" -> those modes in the table's order; nullopt on an unknown name.
std::optional<std::vector<BenchMode>> ParseModes(std::string_view list) {
  std::vector<BenchMode> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    const auto* it = std::find_if(std::begin(kModes), std::end(kModes),
                                  [&](BenchMode m) { return name == BenchModeName(m); });
    if (it == std::end(kModes)) return std::nullopt;
    out.push_back(*it);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  std::vector<BenchMode> ordered;
  for (BenchMode m : kModes)
    if (std::find(out.begin(), out.end(), m) != out.end()) ordered.push_back(m);
  if (ordered.empty()) return std::nullopt;
  return ordered;
}

bool IsRounded(BenchMode m) { return m == BenchMode::kRoundedRecord || m == BenchMode::kRoundedReplay; }

// The workload of `c`, built on first use; with the rounded record step's
// logs when `mode` needs them.
Workload* Prepare(const Case& c, BenchMode mode) {
  Workload& w = g_workloads[c.model];
  if (!w.ready) {
    w.model = *ModelPreset(c.model);
    w.opt.kind = OptimizerKind::kAdamW;
    w.opt.lr = 1e-3f;
    w.opt.clip_norm = 1.0f;
    auto g = BuildStepGraph(w.model, w.opt, 0, *BatchShapes(w.model, c.batch));
    if (!g.ok()) return nullptr;
    w.graph = std::move(g).value();
    auto init = InitState(w.model, w.opt, 1, g_threads);
    if (!init.ok()) return nullptr;
    w.state = std::move(init->tensors);
    w.batch = SyntheticBatch(w.model, c.batch);
    w.ready = true;
  }
  if (IsRounded(mode) && !w.recorded) {
    StepOptions o;
    o.seed = kSeed;  // the replay must use the seed the log was recorded with (dropout masks)
    auto rec = ExecuteStep(ConfigFor(BenchMode::kRoundedRecord), w.graph, w.state, w.batch, o);
    if (!rec.ok()) return nullptr;
    w.logs = std::move(rec->logs);
    w.values_rounded = rec->values_rounded;
    for (const RoundingLog& l : w.logs) {
      w.log_entries += l.entries.size();
      w.log_bytes += EncodeRoundingLog(l).size();
    }
    w.recorded = true;
  }
  return &w;
}

void RunStep(benchmark::State& state, Case c, BenchMode mode) {
  Workload* w = Prepare(c, mode);
  if (w == nullptr) {
    state.SkipWithError("could not prepare the workload");
    return;
  }
  const ExecConfig config = ConfigFor(mode);
  StepOptions o;
  o.seed = kSeed;
  o.hash_outputs = mode == BenchMode::kRepopsHash;
  if (mode == BenchMode::kRoundedReplay) o.replay_logs = &w->logs;
  for (auto _ : state) {
    auto r = ExecuteStep(config, w->graph, w->state, w->batch, o);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->loss);
    if (mode == BenchMode::kRepopsState) {
      // What training commits: the next state's hash (every step here, the
      // worst checkpoint interval k = 1; kernels/chunk_tree.h).
      for (const Tensor& t : r->next_state) benchmark::DoNotOptimize(TensorHash(t, config.threads));
    }
  }
  state.counters["nodes"] = static_cast<double>(w->graph.nodes.size());
}

struct Measured {
  double seconds = 0;
};
std::map<std::pair<std::string, BenchMode>, Measured> g_results;

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const std::string name = run.benchmark_name();  // step/<model>/<mode>
      const auto a = name.find('/'), b = name.find('/', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string model = name.substr(a + 1, b - a - 1);
      std::string mode_name = name.substr(b + 1);
      if (const auto slash = mode_name.find('/'); slash != std::string::npos) mode_name.resize(slash);
      for (BenchMode m : kModes) {
        if (mode_name == BenchModeName(m)) {
          // One thread: the process's CPU time (steady on a shared machine).
          const double t = g_threads == 1 ? run.cpu_accumulated_time : run.real_accumulated_time;
          g_results[{model, m}].seconds = t / static_cast<double>(run.iterations);
        }
      }
    }
  }
};

void PrintTable(const std::vector<Case>& cases) {
  std::printf(
      "\nOne training step (forward, loss, backward, clip, AdamW), %d thread(s), %s; time relative to native\n",
      g_threads, g_threads == 1 ? "process CPU time" : "wall time");
  std::printf("%-12s %5s %6s %10s %8s %13s %12s %15s %15s %12s %12s %8s\n", "model", "batch", "nodes",
              "native ms", "repops", "repops+state", "repops+hash", "rounded-record", "rounded-replay",
              "log KiB/step", "log B/Mval", "logged");
  for (const Case& c : cases) {
    const auto native = g_results.find({c.model, BenchMode::kNative});
    const auto wl = g_workloads.find(c.model);
    if (native == g_results.end() || wl == g_workloads.end() || native->second.seconds <= 0) continue;
    const double base = native->second.seconds;
    const auto ratio = [&](BenchMode m) {
      const auto it = g_results.find({c.model, m});
      return it == g_results.end() ? -1.0 : it->second.seconds / base;
    };
    const Workload& w = wl->second;
    std::printf("%-12s %5lld %6zu %10.2f %7.2fx %12.2fx %11.2fx %14.2fx %14.2fx", c.model.c_str(),
                static_cast<long long>(c.batch), w.graph.nodes.size(), base * 1e3, ratio(BenchMode::kRepops),
                ratio(BenchMode::kRepopsState), ratio(BenchMode::kRepopsHash),
                ratio(BenchMode::kRoundedRecord), ratio(BenchMode::kRoundedReplay));
    const double values = static_cast<double>(w.values_rounded);
    if (w.recorded && values > 0) {
      std::printf(" %12.1f %12.0f %7.1f%%\n", static_cast<double>(w.log_bytes) / 1024.0,
                  static_cast<double>(w.log_bytes) / values * 1e6,
                  100.0 * static_cast<double>(w.log_entries) / values);
    } else {
      std::printf(" %12s %12s %8s\n", "-", "-", "-");  // no rounded mode ran
    }
  }
  std::printf(
      "log: zstd-compressed rounding logs of all nodes of one step (default tau = 2^-12 ulp plus beta, b = 32);\n"
      "B/Mval: log bytes per million rounded output values; logged: fraction of values with a log entry.\n");
}

// The `count` largest of `seconds` as (seconds, index), largest first.
std::vector<std::pair<double, std::size_t>> SlowestNodes(const std::vector<double>& seconds,
                                                         std::size_t count) {
  std::vector<std::pair<double, std::size_t>> all;
  for (std::size_t i = 0; i < seconds.size(); ++i) all.emplace_back(seconds[i], i);
  count = std::min(count, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(count), all.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  all.resize(count);
  return all;
}

// --profile: per node kind, the share of the step's time spent in its nodes
// (operator, rounding and, in repops+hash, the previous node's hashes), from
// a timestamp taken when each node finishes; best of `reps` steps per node.
void Profile(const std::vector<Case>& cases, int reps) {
  using Clock = std::chrono::steady_clock;
  for (const Case& c : cases) {
    Workload* w = Prepare(c, BenchMode::kNative);
    if (w == nullptr) continue;
    std::printf("\n%s (batch %lld), %d thread(s): share of the step per node kind (min over %d steps)\n",
                c.model.c_str(), static_cast<long long>(c.batch), g_threads, reps);
    std::map<std::string, std::map<BenchMode, double>> share;  // kind -> mode -> seconds
    std::map<BenchMode, double> total;
    std::map<BenchMode, std::vector<std::pair<double, std::size_t>>> slowest;  // (seconds, node)
    for (BenchMode mode : g_modes) {
      if (Prepare(c, mode) == nullptr) continue;
      std::vector<double> best(w->graph.nodes.size(), 1e30);
      for (int r = 0; r < reps; ++r) {
        std::vector<double> t(w->graph.nodes.size(), 0.0);
        Clock::time_point last = Clock::now();
        StepOptions o;
        o.seed = kSeed;
        o.hash_outputs = mode == BenchMode::kRepopsHash;
        if (mode == BenchMode::kRoundedReplay) o.replay_logs = &w->logs;
        o.observer = [&](std::size_t node, std::span<Tensor>) -> Status {
          const Clock::time_point now = Clock::now();
          t[node] = std::chrono::duration<double>(now - last).count();
          last = now;
          return Status::Ok();
        };
        auto res = ExecuteStep(ConfigFor(mode), w->graph, w->state, w->batch, o);
        if (!res.ok()) {
          std::printf("  %s failed: %s\n", BenchModeName(mode), res.status().ToString().c_str());
          break;
        }
        for (std::size_t i = 0; i < t.size(); ++i) best[i] = std::min(best[i], t[i]);
      }
      for (std::size_t i = 0; i < best.size(); ++i) {
        share[std::string(OpKindName(w->graph.nodes[i].kind))][mode] += best[i];
        total[mode] += best[i];
      }
      slowest[mode] = SlowestNodes(best, 5);
    }
    std::printf("%-24s", "node kind");
    for (BenchMode m : g_modes) std::printf(" %15s", BenchModeName(m));
    std::printf("\n");
    for (const auto& [kind, per_mode] : share) {
      std::printf("%-24s", kind.c_str());
      for (BenchMode m : g_modes) {
        const auto it = per_mode.find(m);
        std::printf(" %14.1f%%", it == per_mode.end() || total[m] <= 0 ? 0.0 : 100.0 * it->second / total[m]);
      }
      std::printf("\n");
    }
    std::printf("%-24s", "step (sum of nodes) ms");
    for (BenchMode m : g_modes) std::printf(" %15.2f", total[m] * 1e3);
    std::printf("\n");
    for (BenchMode m : g_modes) {
      std::printf("slowest nodes, %s:", BenchModeName(m));
      for (const auto& [seconds, node] : slowest[m])
        std::printf("  %s %.1f%%", w->graph.nodes[node].name.c_str(), 100.0 * seconds / total[m]);
      std::printf("\n");
    }
  }
}

// This process's resident set now and its peak since the last reset, in
// bytes (Linux's VmRSS and VmHWM); {0, 0} elsewhere.
struct Resident {
  double now = 0, peak = 0;
};
Resident ReadResident() {
  Resident r;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return r;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) r.now = 1024.0 * std::atof(line + 6);  // "VmRSS:  123 kB"
    if (std::strncmp(line, "VmHWM:", 6) == 0) r.peak = 1024.0 * std::atof(line + 6);
  }
  std::fclose(f);
  return r;
}
// Starts a new peak at the current resident set (Linux >= 4.0).
void ResetPeakResident() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

// --memory: one step per mode; the nodes that added most to the resident
// set, with the peak while each ran (VmHWM, reset as each node finishes).
// The heap keeps freed memory (KeepFreedMemoryForReuse), so a node's growth
// is what no earlier node's freed blocks could serve.
void MemoryProfile(const std::vector<Case>& cases) {
  constexpr double kMB = 1e6;
  for (const Case& c : cases) {
    for (BenchMode mode : g_modes) {
      // Only the replay needs the recorded logs (a record step first).
      Workload* w = Prepare(c, mode == BenchMode::kRoundedReplay ? mode : BenchMode::kNative);
      if (w == nullptr) continue;
      const Resident before = ReadResident();
      std::vector<Resident> at(w->graph.nodes.size());
      ResetPeakResident();
      StepOptions o;
      o.seed = kSeed;
      o.hash_outputs = mode == BenchMode::kRepopsHash;
      if (mode == BenchMode::kRoundedReplay) o.replay_logs = &w->logs;
      o.observer = [&](std::size_t node, std::span<Tensor>) -> Status {
        at[node] = ReadResident();
        ResetPeakResident();
        return Status::Ok();
      };
      auto res = ExecuteStep(ConfigFor(mode), w->graph, w->state, w->batch, o);
      if (!res.ok()) {
        std::printf("%s %s failed: %s\n", c.model.c_str(), BenchModeName(mode),
                    res.status().ToString().c_str());
        continue;
      }
      std::vector<double> added(at.size());
      double step_peak = before.now;
      for (std::size_t i = 0; i < at.size(); ++i) {
        added[i] = at[i].now - (i == 0 ? before.now : at[i - 1].now);
        step_peak = std::max(step_peak, at[i].peak);
      }
      std::vector<std::size_t> order(at.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(),
                [&](std::size_t a, std::size_t b) { return added[a] > added[b]; });
      std::printf("\n%s (batch %lld), %s: resident %.0f MB before the step (state, batch), peak %.0f MB\n",
                  c.model.c_str(), static_cast<long long>(c.batch), BenchModeName(mode), before.now / kMB,
                  step_peak / kMB);
      std::printf("%-6s %-40s %-22s %12s %12s\n", "node", "name", "kind", "peak MB", "added MB");
      for (std::size_t k = 0; k < std::min<std::size_t>(12, order.size()); ++k) {
        const std::size_t i = order[k];
        std::printf("%-6zu %-40s %-22s %12.0f %12.0f\n", i, w->graph.nodes[i].name.c_str(),
                    std::string(OpKindName(w->graph.nodes[i].kind)).c_str(), at[i].peak / kMB,
                    added[i] / kMB);
      }
    }
  }
}

}  // namespace
}  // namespace vt::kernels::graph

int main(int argc, char** argv) {
  using namespace vt::kernels::graph;
  bool quick = false, gpt2 = false, profile = false, memory = false;
  int reps = 0;
  std::string_view models;
  g_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--gpt2-small") == 0) {
      gpt2 = true;
    } else if (std::strcmp(argv[i], "--profile") == 0) {
      profile = true;
    } else if (std::strcmp(argv[i], "--memory") == 0) {
      memory = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else if (std::strncmp(argv[i], "--reps=", 7) == 0) {
      reps = std::max(1, std::atoi(argv[i] + 7));
    } else if (std::strncmp(argv[i], "--modes=", 8) == 0) {
      auto modes = ParseModes(argv[i] + 8);
      if (!modes) {
        std::fprintf(stderr, "--modes: a comma-separated list of");
        for (BenchMode m : kModes) std::fprintf(stderr, " %s", BenchModeName(m));
        std::fprintf(stderr, "\n");
        return 2;
      }
      g_modes = std::move(*modes);
    } else if (std::strncmp(argv[i], "--models=", 9) == 0) {
      models = argv[i] + 9;
    } else {
      args.push_back(argv[i]);
    }
  }
  std::vector<Case> cases;
  if (quick) {
    cases = {{"mlp-tiny", 8}, {"cnn-tiny", 4}, {"gpt-tiny", 2}};
  } else {
    cases = {{"mlp-fashion", 64}, {"cnn-fashion", 16}, {"gpt-tiny", 8}};
  }
  if (gpt2) cases.push_back({"gpt2-small", 1});
  if (!models.empty()) {
    std::vector<Case> chosen;
    for (const Case& c : cases) {
      if (("," + std::string(models) + ",").find("," + c.model + ",") != std::string::npos)
        chosen.push_back(c);
    }
    if (chosen.empty()) {
      std::fprintf(stderr, "--models: a comma-separated list of");
      for (const Case& c : cases) std::fprintf(stderr, " %s", c.model.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
    cases = std::move(chosen);
  }
  if (memory) {
    MemoryProfile(cases);
    return 0;
  }
  if (profile) {
    Profile(cases, reps > 0 ? reps : quick ? 1 : 5);
    return 0;
  }
  for (const Case& c : cases) {
    for (BenchMode m : g_modes) {
      auto* b =
          benchmark::RegisterBenchmark(("step/" + c.model + "/" + BenchModeName(m)).c_str(), RunStep, c, m);
      b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
      if (quick || c.model == "gpt2-small") b->Iterations(1);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  PrintTable(cases);
  return 0;
}
