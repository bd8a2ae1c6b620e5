// GEMM benchmark: repops GEMM against OpenBLAS sgemm measured in the same
// run (GFLOP/s and ratio); our fp64 GEMMs on fp32 operands — the widening
// fma one of certified mode's fast path and the rounded trainer
// (GemmWidenedF64) and the canonical reference every replay runs
// (GemmF64Reference) — against OpenBLAS dgemm on operands widened
// beforehand (the widening not timed); and rounded-mode
// MatMul (fp64 dgemm + rounding + logging) against native MatMul, with the
// fraction of values logged and the compressed log size.
//
//   matmul_bench            full table (a few minutes on 2 cores)
//   matmul_bench --quick    tiny shapes, one pass (the CTest smoke run)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=repops).

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"

namespace vt::kernels {
namespace {

struct ShapeCase {
  std::int64_t m, k, n;
  std::string Name() const {
    return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  }
};

std::vector<float> Inputs(std::uint32_t tensor, std::int64_t count) {
  PhiloxStream s(7, 0, tensor);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) x = static_cast<float>(s.NextU32() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

enum class Kind {
  kRepops,
  kSgemm,
  kRoundedMatMul,
  kNativeMatMul,
  kRepopsAvx2,
  kRepopsScalar,
  kWidened,
  kReference,
  kDgemm
};
constexpr Kind kKinds[] = {Kind::kRepops,       Kind::kSgemm,      Kind::kRoundedMatMul,
                           Kind::kNativeMatMul, Kind::kRepopsAvx2, Kind::kRepopsScalar,
                           Kind::kWidened,      Kind::kReference,  Kind::kDgemm};
const char* KindName(Kind k) {
  switch (k) {
    case Kind::kWidened:
      return "widened-f64";
    case Kind::kReference:
      return "reference-f64";
    case Kind::kDgemm:
      return "dgemm";
    case Kind::kRepops: return "repops";
    case Kind::kSgemm: return "sgemm";
    case Kind::kRoundedMatMul: return "rounded";
    case Kind::kNativeMatMul: return "native";
    case Kind::kRepopsAvx2: return "repops-avx2";
    case Kind::kRepopsScalar: return "repops-scalar";
  }
  return "?";
}

struct Key {
  std::string shape;
  int threads;
  Kind kind;
  auto operator<=>(const Key&) const = default;
};
struct Measured {
  double seconds = 0;      // wall time per iteration
  double cpu_seconds = 0;  // process CPU time per iteration (all threads)
  double logged_fraction = -1;
  double log_bytes_per_mvalue = -1;
};
std::map<Key, Measured> g_results;

void RunGemm(benchmark::State& state, ShapeCase sc, int threads, Kind kind) {
  const auto a = Inputs(1, sc.m * sc.k);
  const auto b = Inputs(2, sc.k * sc.n);
  std::vector<float> c(static_cast<std::size_t>(sc.m * sc.n));
  const GemmArgs g{sc.m, sc.n, sc.k, false, false, sc.k, sc.n, sc.n, false};
  ExecConfig config;
  config.threads = threads;
  if (kind == Kind::kRepopsAvx2) config.simd = Simd::kAvx2;
  if (kind == Kind::kRepopsScalar) config.simd = Simd::kScalar;
  for (auto _ : state) {
    if (kind != Kind::kSgemm) {
      GemmRepops(config, g, a.data(), b.data(), c.data());
    } else {
      GemmNative(config, g, a.data(), b.data(), c.data());
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(sc.m) * static_cast<double>(sc.n) * static_cast<double>(sc.k);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The fp64 products: ours from the fp32 operands, OpenBLAS's from fp64
// copies made before the clock starts.
void RunF64Gemm(benchmark::State& state, ShapeCase sc, int threads, Kind kind) {
  const auto a = Inputs(1, sc.m * sc.k);
  const auto b = Inputs(2, sc.k * sc.n);
  const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
  std::vector<double> c(static_cast<std::size_t>(sc.m * sc.n));
  const GemmArgs g{sc.m, sc.n, sc.k, false, false, sc.k, sc.n, sc.n, false};
  // GemmF64 asked for no SIMD path of ours runs OpenBLAS dgemm.
  ExecConfig blas;
  blas.threads = threads;
  blas.simd = Simd::kScalar;
  for (auto _ : state) {
    switch (kind) {
      case Kind::kWidened:
        GemmWidenedF64(Simd::kAuto, threads, g, a.data(), b.data(), c.data());
        break;
      case Kind::kReference:
        GemmF64Reference(threads, g, a.data(), b.data(), c.data());
        break;
      default:
        GemmF64(blas, g, a64.data(), b64.data(), c.data());
        break;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
}

void RunMatMul(benchmark::State& state, ShapeCase sc, int threads, Kind kind, std::uint32_t tau_q16) {
  const Tensor a({sc.m, sc.k}, Inputs(1, sc.m * sc.k));
  const Tensor b({sc.k, sc.n}, Inputs(2, sc.k * sc.n));
  Tensor out;
  ExecConfig config;
  config.threads = threads;
  config.mode = kind == Kind::kRoundedMatMul ? Mode::kRounded : Mode::kNative;
  config.rounding.tau_q16 = tau_q16;
  std::size_t entries = 0, log_bytes = 0;
  for (auto _ : state) {
    NodeRounding rounding = NodeRounding::Record(config.rounding);
    const OpContext ctx(config, &rounding);
    if (!MatMul(ctx, a, b, out).ok()) state.SkipWithError("matmul failed");
    benchmark::DoNotOptimize(out.data());
    entries = rounding.log().entries.size();
    if (kind == Kind::kRoundedMatMul) {
      state.PauseTiming();
      log_bytes = EncodeRoundingLog(rounding.log()).size();
      state.ResumeTiming();
    }
  }
  if (kind == Kind::kRoundedMatMul) {
    const double values = static_cast<double>(sc.m * sc.n);
    state.counters["logged"] = static_cast<double>(entries) / values;
    state.counters["logB/Mval"] = static_cast<double>(log_bytes) / values * 1e6;
  }
}

// Collects per-iteration times for the summary table.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      // name: kind/shape/threads[/tauN]
      const std::string name = run.benchmark_name();
      char kind_s[32] = {}, shape_s[64] = {};
      int threads = 0;
      if (std::sscanf(name.c_str(), "%31[^/]/%63[^/]/t%d", kind_s, shape_s, &threads) != 3) continue;
      Kind kind = Kind::kRepops;
      for (Kind k : kKinds) {
        if (std::strcmp(kind_s, KindName(k)) == 0) kind = k;
      }
      Measured& m = g_results[{shape_s, threads, kind}];
      m.seconds = run.real_accumulated_time / static_cast<double>(run.iterations);
      m.cpu_seconds = run.cpu_accumulated_time / static_cast<double>(run.iterations);
      if (run.counters.count("logged")) m.logged_fraction = run.counters.at("logged");
      if (run.counters.count("logB/Mval")) m.log_bytes_per_mvalue = run.counters.at("logB/Mval");
    }
  }
};

void PrintTables(const std::vector<ShapeCase>& shapes, const std::vector<int>& thread_counts) {
  // GFLOP/s from wall time, and (1 thread) from CPU time: on a shared
  // machine the CPU-time figure is the speed of the code itself, the wall
  // figure includes time the process was not scheduled.
  std::printf("\nRepops GEMM vs OpenBLAS sgemm, row-major C[m x n] = A[m x k] B[k x n], GFLOP/s = 2mnk / time\n");
  std::printf("%-16s %7s | %10s %10s %8s | %10s %10s %8s\n", "m x k x n", "threads", "repops", "sgemm",
              "ratio", "repops", "sgemm", "ratio");
  std::printf("%-16s %7s | %30s | %30s\n", "", "", "(wall time)", "(CPU time, 1 thread only)");
  for (const ShapeCase& sc : shapes) {
    for (int t : thread_counts) {
      const auto r = g_results.find({sc.Name(), t, Kind::kRepops});
      const auto s = g_results.find({sc.Name(), t, Kind::kSgemm});
      if (r == g_results.end() || s == g_results.end()) continue;
      const double flops = 2.0 * static_cast<double>(sc.m * sc.n) * static_cast<double>(sc.k) * 1e-9;
      const double gr = flops / r->second.seconds, gs = flops / s->second.seconds;
      std::printf("%-16s %7d | %10.1f %10.1f %7.0f%% |", sc.Name().c_str(), t, gr, gs, 100.0 * gr / gs);
      if (t == 1) {
        const double cr = flops / r->second.cpu_seconds, cs = flops / s->second.cpu_seconds;
        std::printf(" %10.1f %10.1f %7.0f%%\n", cr, cs, 100.0 * cr / cs);
      } else {
        std::printf(" %30s\n", "-");
      }
    }
  }
  for (Kind k : {Kind::kRepopsAvx2, Kind::kRepopsScalar}) {
    for (const ShapeCase& sc : shapes) {
      const auto r = g_results.find({sc.Name(), 1, k});
      const auto s = g_results.find({sc.Name(), 1, Kind::kSgemm});
      if (r == g_results.end() || s == g_results.end()) continue;
      const double flops = 2.0 * static_cast<double>(sc.m * sc.n) * static_cast<double>(sc.k) * 1e-9;
      std::printf("%-16s %7s | %-30s | %10.1f %10.1f %7.0f%%\n", sc.Name().c_str(), "1", KindName(k),
                  flops / r->second.cpu_seconds, flops / s->second.cpu_seconds,
                  100.0 * s->second.cpu_seconds / r->second.cpu_seconds);
    }
  }
  std::printf(
      "\nOur fp64 GEMMs on fp32 operands (widened as packed) vs OpenBLAS dgemm (operands widened "
      "beforehand);\n"
      "GFLOP/s from process CPU time on 1 thread, wall time on more; ratio = our speed / dgemm's\n");
  std::printf("%-16s %7s | %10s %10s %10s | %8s %9s\n", "m x k x n", "threads", "widened", "reference",
              "dgemm", "widened", "reference");
  for (const ShapeCase& sc : shapes) {
    for (int t : thread_counts) {
      const auto w = g_results.find({sc.Name(), t, Kind::kWidened});
      const auto r = g_results.find({sc.Name(), t, Kind::kReference});
      const auto d = g_results.find({sc.Name(), t, Kind::kDgemm});
      if (r == g_results.end() || d == g_results.end()) continue;
      const double gflop = 2.0 * static_cast<double>(sc.m * sc.n) * static_cast<double>(sc.k) * 1e-9;
      const auto rate = [&](const Measured& m) { return gflop / (t == 1 ? m.cpu_seconds : m.seconds); };
      const double dg = rate(d->second), rg = rate(r->second);
      if (w == g_results.end()) {
        std::printf("%-16s %7d | %10s %10.1f %10.1f | %8s %8.0f%%\n", sc.Name().c_str(), t, "-", rg, dg, "-",
                    100.0 * rg / dg);
      } else {
        const double wg = rate(w->second);
        std::printf("%-16s %7d | %10.1f %10.1f %10.1f | %7.0f%% %8.0f%%\n", sc.Name().c_str(), t, wg, rg, dg,
                    100.0 * wg / dg, 100.0 * rg / dg);
      }
    }
  }
  std::printf("\nRounded MatMul (fp32 -> fp64, dgemm, round to fp32, log) vs native MatMul (sgemm), tau = 1/16 ulp, b = 32\n");
  std::printf("%-16s %7s %12s %12s %9s %10s %14s\n", "m x k x n", "threads", "rounded ms", "native ms", "overhead",
              "logged", "log B/Mvalue");
  for (const ShapeCase& sc : shapes) {
    for (int t : thread_counts) {
      const auto r = g_results.find({sc.Name(), t, Kind::kRoundedMatMul});
      const auto n = g_results.find({sc.Name(), t, Kind::kNativeMatMul});
      if (r == g_results.end() || n == g_results.end()) continue;
      // 1 thread: CPU time (see above); 2 threads: wall time.
      const double rs = t == 1 ? r->second.cpu_seconds : r->second.seconds;
      const double ns = t == 1 ? n->second.cpu_seconds : n->second.seconds;
      std::printf("%-16s %7d %12.2f %12.2f %8.2fx %9.3f%% %14.0f\n", sc.Name().c_str(), t, rs * 1e3, ns * 1e3, rs / ns,
                  100.0 * r->second.logged_fraction, r->second.log_bytes_per_mvalue);
    }
  }
  // Log size against τ (one rounded MatMul each; not timed).
  const ShapeCase sc = shapes.size() > 2 ? shapes[2] : shapes[0];
  std::printf("\nLog size against tau, %s, b = 32 (the region covers 2*tau of each ulp)\n", sc.Name().c_str());
  std::printf("%10s %12s %10s %14s\n", "tau_q16", "tau (ulp)", "logged", "log B/Mvalue");
  const Tensor a({sc.m, sc.k}, Inputs(1, sc.m * sc.k));
  const Tensor b({sc.k, sc.n}, Inputs(2, sc.k * sc.n));
  for (std::uint32_t tau : {16384u, 4096u, 256u, 16u, 1u}) {
    ExecConfig config;
    config.mode = Mode::kRounded;
    config.rounding.tau_q16 = tau;
    NodeRounding rounding = NodeRounding::Record(config.rounding);
    Tensor out;
    if (!MatMul(OpContext(config, &rounding), a, b, out).ok()) continue;
    const double values = static_cast<double>(out.numel());
    std::printf("%10u %12.6f %9.4f%% %14.0f\n", tau, tau / 65536.0,
                100.0 * static_cast<double>(rounding.log().entries.size()) / values,
                static_cast<double>(EncodeRoundingLog(rounding.log()).size()) / values * 1e6);
  }
}

}  // namespace
}  // namespace vt::kernels

int main(int argc, char** argv) {
  using namespace vt::kernels;
  bool quick = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  std::string min_time = "--benchmark_min_time=0.0001";
  if (quick) args.push_back(min_time.data());
  int n_args = static_cast<int>(args.size());
  benchmark::Initialize(&n_args, args.data());

  std::vector<ShapeCase> shapes;
  if (quick) {
    shapes = {{64, 64, 64}, {33, 70, 17}};
  } else {
    shapes = {{256, 256, 256},  {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
              {512, 768, 2304}, {512, 3072, 768}};
  }
  const std::vector<int> thread_counts = {1, 2};
  for (const ShapeCase& sc : shapes) {
    for (int t : thread_counts) {
      for (Kind kind : {Kind::kSgemm, Kind::kRepops}) {
        benchmark::RegisterBenchmark((std::string(KindName(kind)) + "/" + sc.Name() + "/t" + std::to_string(t)).c_str(),
                                     [=](benchmark::State& s) { RunGemm(s, sc, t, kind); })
            ->UseRealTime()
            ->MeasureProcessCPUTime()
            ->Unit(benchmark::kMillisecond);
      }
      for (Kind kind : {Kind::kDgemm, Kind::kReference, Kind::kWidened}) {
        if (kind == Kind::kWidened && !WidenedF64GemmAvailable(Simd::kAuto)) continue;
        benchmark::RegisterBenchmark(
            (std::string(KindName(kind)) + "/" + sc.Name() + "/t" + std::to_string(t)).c_str(),
            [=](benchmark::State& s) { RunF64Gemm(s, sc, t, kind); })
            ->UseRealTime()
            ->MeasureProcessCPUTime()
            ->Unit(benchmark::kMillisecond);
      }
      for (Kind kind : {Kind::kNativeMatMul, Kind::kRoundedMatMul}) {
        benchmark::RegisterBenchmark((std::string(KindName(kind)) + "/" + sc.Name() + "/t" + std::to_string(t)).c_str(),
                                     [=](benchmark::State& s) { RunMatMul(s, sc, t, kind, 4096); })
            ->UseRealTime()
            ->MeasureProcessCPUTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  // The other SIMD paths, single-threaded, at the square shapes.
  for (const ShapeCase& sc : shapes) {
    if (sc.m != sc.k || sc.k != sc.n || sc.m > 1024) continue;
    for (Kind kind : {Kind::kRepopsAvx2, Kind::kRepopsScalar}) {
      if (kind == Kind::kRepopsAvx2 && !SimdSupported(Simd::kAvx2)) continue;
      benchmark::RegisterBenchmark((std::string(KindName(kind)) + "/" + sc.Name() + "/t1").c_str(),
                                   [=](benchmark::State& s) { RunGemm(s, sc, 1, kind); })
          ->UseRealTime()
          ->MeasureProcessCPUTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  double load[3] = {0, 0, 0};
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(f);
  }
  std::printf("CPU: %s, repops SIMD path: %s, OpenBLAS core: %s, load average %.1f\n", "x86-64",
              std::string(SimdName(RepopsSimdUsed(Simd::kAuto))).c_str(), openblas_get_corename(), load[0]);
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  PrintTables(shapes, thread_counts);
  benchmark::Shutdown();
  return 0;
}
