// Certified mode benchmark (docs/kernels.md "Certified mode"), one table per
// question, every ratio measured in the same run:
//   1. one training step (forward, loss, backward, clip, AdamW): certified ÷
//      native on mlp-fashion (batch 64), cnn-fashion (16), gpt-tiny (8);
//   2. per operator: where the extra time of a certified step goes (each
//      node timed in both modes) and the fraction of its outputs that took
//      the slow path; the same fraction per kind;
//   3. certified GEMM throughput ÷ OpenBLAS sgemm and ÷ the fp64 GEMM alone
//      (the fast path's floor) at mlp-fashion's three shapes, 512×768×2304
//      and 1024³;
//   4. the arbiter's exact-only GEMM (certified_exact_only, one thread, as
//      the arbitration precompile runs it) against repops on one thread —
//      the rate the arbitration gas is priced from (contract_vm/gas.h) —
//      on ordinary and adversarial inputs (every exponent, tiny K).
//
//   kernels_certified_bench [--threads=N] [--reps=R]   (default 2 threads, best of 3)
//   kernels_certified_bench --device=cuda              tables 1–3 only, the GEMMs on a CUDA device
//     (native: cuBLAS sgemm; certified: cuBLAS dgemm as the fast path), host↔device copies included;
//     --device=cpu gives the same tables on the CPU (the baseline, run beside it); both add
//     2048³ to table 3 and leave out its exact-only column
//   kernels_certified_bench --quick                    tiny presets and 64³ once (CTest)
//   kernels_certified_bench --steps [--model=NAME]     tables 1–2 only (e.g. under perf record), one
//                                                      model or all
//   kernels_certified_bench --gemm [--shape=MxKxN]     table 3 only, without its exact-only column;
//                                                      one shape (e.g. under perf record) or all
//   kernels_certified_bench --exact                    table 4 only
//   kernels_certified_bench --price                    table 5 only: the certified arbitration price
//                                                      table
//     (contract_vm/gas.h) — each class's worst case against the repops rate, same run
//
// Wall-clock time, best of R runs after one warm-up.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "common/crmath.h"
#include "common/philox.h"
#include "common/random.h"
#include "kernels/certified.h"
#include "kernels/device.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/matmul.h"
#include "kernels/ops/registry.h"

namespace vt::kernels {
namespace {

int g_threads = 2;
int g_reps = 3;
Device g_device = Device::kCpu;  // where tables 1–3 run their GEMMs

template <class F>
double BestSeconds(const F& f) {
  f();  // warm-up
  double best = 1e30;
  for (int r = 0; r < g_reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

struct StepCase {
  const char* model;
  std::int64_t batch;
};

std::vector<Tensor> Batch(const graph::ModelSpec& model, std::int64_t batch) {
  const std::vector<Shape> shapes = *graph::BatchShapes(model, batch);
  PhiloxStream s(2024, 0, 0);
  Tensor inputs(shapes[0]), targets(shapes[1]);
  std::uint64_t classes = 0;
  if (model.family() == graph::ModelFamily::kGpt) {
    classes = static_cast<std::uint64_t>(std::get<graph::GptSpec>(model.arch).vocab);
    for (std::int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = static_cast<float>(NextUniformInt(s, classes));
  } else {
    classes = static_cast<std::uint64_t>(model.family() == graph::ModelFamily::kMlp
                                             ? std::get<graph::MlpSpec>(model.arch).classes
                                             : std::get<graph::CnnSpec>(model.arch).classes);
    for (std::int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = NextNormal(s);
  }
  for (std::int64_t i = 0; i < targets.numel(); ++i) targets[i] = static_cast<float>(NextUniformInt(s, classes));
  return {std::move(inputs), std::move(targets)};
}

void StepTable(const std::vector<StepCase>& cases) {
  std::printf("\nOne training step, %d thread(s), GEMMs on %s, best of %d: certified / native\n", g_threads,
              DeviceDescription(g_device).c_str(), g_reps);
  std::printf("%-12s %5s %10s %13s %8s %10s %9s\n", "model", "batch", "native ms", "certified ms", "ratio",
              "outputs", "slow %");
  CertCounts total_before = CertifiedCounts();
  for (const StepCase& c : cases) {
    const graph::ModelSpec model = *graph::ModelPreset(c.model);
    graph::OptimizerSpec opt;
    opt.kind = graph::OptimizerKind::kAdamW;
    opt.lr = 1e-3f;
    opt.clip_norm = 1.0f;
    const graph::StepGraph g = *graph::BuildStepGraph(model, opt, 0, *graph::BatchShapes(model, c.batch));
    const std::vector<Tensor> state = std::move(graph::InitState(model, opt, 1, g_threads)->tensors);
    const std::vector<Tensor> batch = Batch(model, c.batch);
    auto time_mode = [&](Mode mode) {
      ExecConfig config;
      config.mode = mode;
      config.threads = g_threads;
      config.device = g_device;
      graph::StepOptions o;
      o.seed = 1;
      return BestSeconds([&] {
        auto r = graph::ExecuteStep(config, g, state, batch, o);
        if (!r.ok()) std::printf("step failed: %s\n", r.status().ToString().c_str());
      });
    };
    const double native = time_mode(Mode::kNative);
    const CertCounts before = CertifiedCounts();
    const double cert = time_mode(Mode::kCertified);
    const CertCounts after = CertifiedCounts();
    std::uint64_t outputs = 0, slow = 0;
    for (int k = 0; k < kCertKinds; ++k) {
      outputs += after.outputs[k] - before.outputs[k];
      slow += after.slow[k] - before.slow[k];
    }
    std::printf("%-12s %5lld %10.3f %13.3f %8.2f %10llu %9.4f\n", c.model, static_cast<long long>(c.batch),
                native * 1e3, cert * 1e3, cert / native, static_cast<unsigned long long>(outputs / (g_reps + 1)),
                outputs == 0 ? 0.0 : 100.0 * static_cast<double>(slow) / static_cast<double>(outputs));
  }
  const CertCounts total_after = CertifiedCounts();
  // Per operator: g_reps more steps of each model in each mode, timing every
  // node (the observer runs after each node: the time since the previous
  // call is the node's) and counting certified outputs around it.
  struct OpRow {
    double native_s = 0.0, certified_s = 0.0;
    std::uint64_t outputs = 0, slow = 0;
  };
  std::map<std::string, OpRow> per_op;
  double native_total = 0.0, certified_total = 0.0;
  for (const StepCase& c : cases) {
    const graph::ModelSpec model = *graph::ModelPreset(c.model);
    graph::OptimizerSpec opt;
    opt.kind = graph::OptimizerKind::kAdamW;
    opt.lr = 1e-3f;
    opt.clip_norm = 1.0f;
    const graph::StepGraph g = *graph::BuildStepGraph(model, opt, 0, *graph::BatchShapes(model, c.batch));
    const std::vector<Tensor> state = std::move(graph::InitState(model, opt, 1, g_threads)->tensors);
    const std::vector<Tensor> batch = Batch(model, c.batch);
    for (Mode mode : {Mode::kNative, Mode::kCertified}) {
      ExecConfig config;
      config.mode = mode;
      config.threads = g_threads;
      config.device = g_device;
      // Each node's best time over the runs (the first run warms up).
      std::vector<double> best(g.nodes.size(), 1e30);
      for (int r = 0; r <= g_reps; ++r) {
        graph::StepOptions o;
        o.seed = 1;
        CertCounts last = CertifiedCounts();
        auto t_last = std::chrono::steady_clock::now();
        o.observer = [&](std::size_t node, std::span<Tensor>) -> Status {
          const auto now_t = std::chrono::steady_clock::now();
          best[node] = std::min(best[node], std::chrono::duration<double>(now_t - t_last).count());
          if (mode == Mode::kCertified && r == 0) {
            const CertCounts now = CertifiedCounts();
            OpRow& row = per_op[std::string(OpKindName(g.nodes[node].kind))];
            for (int k = 0; k < kCertKinds; ++k) {
              row.outputs += now.outputs[k] - last.outputs[k];
              row.slow += now.slow[k] - last.slow[k];
            }
            last = now;
          }
          t_last = std::chrono::steady_clock::now();
          return Status::Ok();
        };
        (void)graph::ExecuteStep(config, g, state, batch, o);
      }
      for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        OpRow& row = per_op[std::string(OpKindName(g.nodes[i].kind))];
        (mode == Mode::kNative ? row.native_s : row.certified_s) += best[i];
        (mode == Mode::kNative ? native_total : certified_total) += best[i];
      }
    }
  }
  std::printf(
      "\nPer operator, all models above: each node's best time over %d steps, summed; slow-path outputs of "
      "one step\n"
      "%-24s %10s %13s %7s %8s %10s %8s %9s\n",
      g_reps, "operator", "native ms", "certified ms", "ratio", "extra %", "outputs", "slow", "slow %");
  // An operator's share of the extra time; none when certified was not
  // slower in all (a noisy native run can make it so).
  const double extra_total = certified_total - native_total;
  for (const auto& [name, v] : per_op) {
    char share[16] = "-";
    if (extra_total > 0.0)
      std::snprintf(share, sizeof share, "%.1f", 100.0 * (v.certified_s - v.native_s) / extra_total);
    std::printf("%-24s %10.3f %13.3f %7.2f %8s %10llu %8llu %9.4f\n", name.c_str(), v.native_s * 1e3,
                v.certified_s * 1e3, v.native_s > 0.0 ? v.certified_s / v.native_s : 0.0, share,
                static_cast<unsigned long long>(v.outputs), static_cast<unsigned long long>(v.slow),
                v.outputs == 0 ? 0.0 : 100.0 * static_cast<double>(v.slow) / static_cast<double>(v.outputs));
  }
  std::printf("%-24s %10.3f %13.3f %7.2f %8.1f\n", "(all nodes)", native_total * 1e3, certified_total * 1e3,
              certified_total / native_total, 100.0);
  std::printf(
      "\nSlow-path outputs per kind over all certified steps above (exact: of them, summed by the exact "
      "accumulator)\n%-6s %12s %10s %9s %10s %9s\n",
      "kind", "outputs", "slow", "slow %", "exact", "exact %");
  for (int k = 0; k < kCertKinds; ++k) {
    const std::uint64_t o = total_after.outputs[k] - total_before.outputs[k];
    const std::uint64_t s = total_after.slow[k] - total_before.slow[k];
    const std::uint64_t e = total_after.exact[k] - total_before.exact[k];
    const auto percent = [&](std::uint64_t x) {
      return o == 0 ? 0.0 : 100.0 * static_cast<double>(x) / static_cast<double>(o);
    };
    std::printf("%-6s %12llu %10llu %9.4f %10llu %9.4f\n",
                std::string(CertKindName(static_cast<CertKind>(k))).c_str(),
                static_cast<unsigned long long>(o), static_cast<unsigned long long>(s), percent(s),
                static_cast<unsigned long long>(e), percent(e));
  }
}

std::vector<float> ZeroMean(std::uint32_t stream, std::int64_t count) {
  PhiloxStream s(7, 0, stream);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) {
    const std::uint32_t w = s.NextU32();
    const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
    x = std::ldexp((w >> 31) != 0 ? -frac : frac, -static_cast<int>((w >> 23) % 9u));
  }
  return v;
}

// exact_only: also time the arbiter's exact-only path once per shape (CPU, slow).
void GemmTable(const std::vector<std::array<std::int64_t, 3>>& shapes, bool exact_only = true) {
  std::printf("\nGEMM m x k x n, zero-mean full-precision inputs, %d thread(s), GEMMs on %s, best of %d\n", g_threads,
              DeviceDescription(g_device).c_str(), g_reps);
  std::printf("%-16s %12s %12s %14s %8s %10s %10s %16s\n", "m x k x n", "sgemm GF/s", "dgemm GF/s",
              "certified GF/s", "ratio", "÷ dgemm", "slow", "exact-only GF/s");
  for (const auto& [m, k, n] : shapes) {
    const std::vector<float> a = ZeroMean(1, m * k), b = ZeroMean(2, k * n);
    std::vector<float> c(static_cast<std::size_t>(m * n));
    GemmArgs g;
    g.m = m, g.n = n, g.k = k, g.lda = k, g.ldb = n, g.ldc = n;
    ExecConfig config;
    config.threads = g_threads;
    config.device = g_device;
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const double sgemm = BestSeconds([&] { GemmNative(config, g, a.data(), b.data(), c.data()); });
    // The fast path's floor: the fp64 GEMM alone, on operands already widened.
    const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());
    std::vector<double> c64(c.size());
    const double dgemm = BestSeconds([&] { GemmF64(config, g, a64.data(), b64.data(), c64.data()); });
    const std::uint64_t slow0 = CertifiedCounts().slow[static_cast<int>(CertKind::kGemm)];
    const double cert = BestSeconds([&] { CertifiedGemm(config, g, a.data(), b.data(), c.data()); });
    const std::uint64_t slow = (CertifiedCounts().slow[static_cast<int>(CertKind::kGemm)] - slow0) / (g_reps + 1);
    // The arbiter's exact-only path (ExecConfig::certified_exact_only), timed once.
    double exact_s = 0;
    if (exact_only) {
      ExecConfig exact = config;
      exact.certified_exact_only = true;
      exact.device = Device::kCpu;
      const auto t0 = std::chrono::steady_clock::now();
      CertifiedGemm(exact, g, a.data(), b.data(), c.data());
      exact_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld", static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(n));
    std::printf("%-16s %12.1f %12.1f %14.1f %8.3f %10.3f %10llu %16.2f\n", name, flops / sgemm * 1e-9,
                flops / dgemm * 1e-9, flops / cert * 1e-9, sgemm / cert, dgemm / cert,
                static_cast<unsigned long long>(slow), exact_only ? flops / exact_s * 1e-9 : 0.0);
  }
}

// Values whose exponents cover the whole fp32 range (subnormals to 2^104,
// the products' bucket range is then full): the worst case for an exact
// accumulator that scans its exponent range per output.
std::vector<float> Spread(std::uint32_t stream, std::int64_t count) {
  PhiloxStream s(11, 0, stream);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) {
    const std::uint32_t w = s.NextU32();
    const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
    x = std::ldexp((w >> 31) != 0 ? -frac : frac, -149 + static_cast<int>(s.NextU32() % 254u));
  }
  return v;
}

// Best CPU time of the calling thread (one-thread runs: robust to other
// processes sharing the cores, unlike wall time).
template <class F>
double BestThreadSeconds(const F& f) {
  auto now = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  f();  // warm-up
  double best = 1e30;
  for (int r = 0; r < g_reps; ++r) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

void ExactTable(const std::vector<std::array<std::int64_t, 3>>& shapes) {
  std::printf("\nExact-only GEMM (the arbiter's path) vs repops, 1 thread, thread CPU time, best of %d\n", g_reps);
  std::printf("%-16s %-9s %11s %13s %8s %12s\n", "m x k x n", "inputs", "repops GF/s", "exact GF/s", "ratio",
              "ns / output");
  for (const auto& [m, k, n] : shapes) {
    for (const bool spread : {false, true}) {
      const std::vector<float> a = spread ? Spread(1, m * k) : ZeroMean(1, m * k);
      const std::vector<float> b = spread ? Spread(2, k * n) : ZeroMean(2, k * n);
      std::vector<float> c(static_cast<std::size_t>(m * n));
      GemmArgs g;
      g.m = m, g.n = n, g.k = k, g.lda = k, g.ldb = n, g.ldc = n;
      ExecConfig config;
      config.threads = 1;
      const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      const double repops = BestThreadSeconds([&] { GemmRepops(config, g, a.data(), b.data(), c.data()); });
      ExecConfig exact = config;
      exact.mode = Mode::kCertified;
      exact.certified_exact_only = true;
      const double ex = BestThreadSeconds([&] { CertifiedGemm(exact, g, a.data(), b.data(), c.data()); });
      char name[64];
      std::snprintf(name, sizeof name, "%lldx%lldx%lld", static_cast<long long>(m), static_cast<long long>(k),
                    static_cast<long long>(n));
      std::printf("%-16s %-9s %11.2f %13.3f %8.1f %12.1f\n", name, spread ? "spread" : "zero-mean",
                  flops / repops * 1e-9, flops / ex * 1e-9, ex / repops,
                  ex * 1e9 / static_cast<double>(m * n));
    }
  }
}


// Table 5: the worst case of each certified operator class (verify/
// certified_price.h) on one thread, thread CPU time, in units of the repops
// gas (flops_per_gas = 1000 repops flops, measured in the same run): the
// prices of contract_vm/gas.h are these times a margin of 2, rounded up.
void PriceTable() {
  constexpr double kMargin = 2.0;
  std::printf("\nCertified arbitration price, 1 thread, thread CPU time, best of %d (gas = 1000 repops flops)\n",
              g_reps);
  ExecConfig one;
  one.threads = 1;
  // The repops reference: 256^3 zero-mean GEMM.
  const std::int64_t d = 256;
  const std::vector<float> a = ZeroMean(1, d * d), b = ZeroMean(2, d * d);
  std::vector<float> c(static_cast<std::size_t>(d * d));
  GemmArgs g;
  g.m = g.n = g.k = d, g.lda = g.ldb = g.ldc = d;
  const double flops = 2.0 * static_cast<double>(d * d * d);
  const double gas_ns = BestThreadSeconds([&] { GemmRepops(one, g, a.data(), b.data(), c.data()); }) * 1e9 / flops *
                        1000.0;
  std::printf("%-40s %12s %10s %14s\n", "class: worst case", "ns / unit", "gas / unit", "price (x2, ceil)");
  auto row = [&](const char* name, double ns) {
    std::printf("%-40s %12.2f %10.3f %14.0f\n", name, ns, ns / gas_ns, std::ceil(kMargin * ns / gas_ns));
  };
  std::printf("%-40s %12.2f\n", "repops gas (1000 flops, 256^3)", gas_ns);
  ExecConfig exact = one;
  exact.mode = Mode::kCertified;
  exact.certified_exact_only = true;
  {  // GEMM-like: per flop (spread exponents, 256^3) and per output (K = 2).
    const std::vector<float> sa = Spread(1, d * d), sb = Spread(2, d * d);
    const double ns = BestThreadSeconds([&] { CertifiedGemm(exact, g, sa.data(), sb.data(), c.data()); }) * 1e9 / flops;
    std::printf("%-40s %12.3f %10.4f %14s\n", "gemm: per flop (spread, 256^3)", ns, ns / gas_ns,
                ("1/" + std::to_string(static_cast<int>(gas_ns / (kMargin * ns)))).c_str());
    GemmArgs t;
    t.m = t.n = 512, t.k = 2, t.lda = 2, t.ldb = 512, t.ldc = 512;
    const std::vector<float> ta = Spread(3, 1024), tb = Spread(4, 1024);
    std::vector<float> tc(512 * 512);
    row("gemm: per output (spread, 512x2x512)",
        BestThreadSeconds([&] { CertifiedGemm(exact, t, ta.data(), tb.data(), tc.data()); }) * 1e9 / (512.0 * 512.0));
  }
  {  // Reductions: every row of [64, 4096] opens with a cancelling 2^60 pair, so
     // no fp64 bound decides it: every output on the slow path.
    const std::int64_t rows = 64, n = 4096;
    Tensor x(Shape{rows, n});
    const std::vector<float> z = ZeroMean(5, rows * n);
    for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = z[static_cast<std::size_t>(i)];
    for (std::int64_t r = 0; r < rows; ++r) x[r * n] = 0x1p60f, x[r * n + 1] = -0x1p60f;
    const OpContext ctx(exact, nullptr, RngAddress{});
    const Tensor* in[] = {&x};
    std::vector<Tensor> out;
    const std::uint64_t slow0 = CertifiedCounts().slow[static_cast<int>(CertKind::kSum)];
    const double s = BestThreadSeconds([&] {
      out.clear();
      (void)RunOp(ctx, OpKind::kSum, ReduceAttrs(1), in, out);
    });
    const std::uint64_t slow = CertifiedCounts().slow[static_cast<int>(CertKind::kSum)] - slow0;
    char name[64];
    std::snprintf(name, sizeof name, "sum: per term, all slow (%llu/%lld)",
                  static_cast<unsigned long long>(slow / static_cast<std::uint64_t>(g_reps + 1)),
                  static_cast<long long>(rows));
    row(name, s * 1e9 / static_cast<double>(rows * n));
  }
  {  // Element-wise: relu and add per output (exact path configuration).
    const std::int64_t n = 1 << 16;
    Tensor x(Shape{n}), y(Shape{n});
    const std::vector<float> z = ZeroMean(6, 2 * n);
    for (std::int64_t i = 0; i < n; ++i) x[i] = z[static_cast<std::size_t>(i)], y[i] = z[static_cast<std::size_t>(n + i)];
    const OpContext ctx(exact, nullptr, RngAddress{});
    const Tensor* in[] = {&x, &y};
    std::vector<Tensor> out;
    row("element-wise: add, per output", BestThreadSeconds([&] {
          out.clear();
          (void)RunOp(ctx, OpKind::kAdd, OpAttrs{}, in, out);
        }) * 1e9 / static_cast<double>(n));
  }
  {  // Transcendentals: the fast evaluation plus the double-double slow path
     // (crmath::detail::SlowPathOnly) for every call: what an input that
     // forces the slow path costs, whether or not one is known.
    struct Fn {
      const char* name;
      float (*fn)(float);
      float lo, hi;
    };
    const Fn fns[] = {{"Exp", &crmath::Exp, -80.0f, 80.0f},  {"Log", &crmath::Log, 1e-30f, 1e30f},
                      {"Tanh", &crmath::Tanh, -9.0f, 9.0f},  {"Erf", &crmath::Erf, -3.5f, 3.5f},
                      {"Cos", &crmath::Cos, -100.0f, 100.0f}, {"Sin", &crmath::Sin, -100.0f, 100.0f}};
    constexpr int kCalls = 4096;
    for (const Fn& f : fns) {
      PhiloxStream s(7, 0, 0);
      std::vector<float> xs(kCalls);
      for (float& v : xs) {
        const double u = static_cast<double>(s.NextU32()) / 4294967296.0;
        v = f.name[0] == 'L' ? static_cast<float>(std::exp(std::log(f.lo) + u * (std::log(f.hi) - std::log(f.lo))))
                             : static_cast<float>(f.lo + u * (f.hi - f.lo));
      }
      float sink = 0;
      // Priced on the baseline copy (libm's fma, the slower one): a validator
      // without FMA runs it. The FMA copy, where the CPU has one, beside it.
      const bool has_fma = crmath::detail::SetFmaPathForTesting(1);
      const double fast_fma = BestThreadSeconds([&] {
        for (float v : xs) sink += f.fn(v);
      });
      crmath::detail::SetFmaPathForTesting(0);
      const double fast = BestThreadSeconds([&] {
        for (float v : xs) sink += f.fn(v);
      });
      const double worst = BestThreadSeconds([&] {
        for (float v : xs) {
          sink += f.fn(v);
          sink += crmath::detail::SlowPathOnly(f.fn, v).value_or(0.0f);
        }
      });
      char name[64];
      std::snprintf(name, sizeof name, "crmath %s: fast path, per call", f.name);
      row(name, fast * 1e9 / kCalls);
      std::snprintf(name, sizeof name, "crmath %s: + slow path, per call", f.name);
      row(name, worst * 1e9 / kCalls);
      crmath::detail::SetFmaPathForTesting(-1);
      if (has_fma) {
        std::snprintf(name, sizeof name, "crmath %s: fast path, FMA copy", f.name);
        row(name, fast_fma * 1e9 / kCalls);
      }
      if (sink == 12345.0f) std::printf(" ");
    }
  }
}

}  // namespace
}  // namespace vt::kernels

int main(int argc, char** argv) {
  bool quick = false, exact = false, price = false, steps = false, gemm_only = false, device_given = false;
  std::string only_model;  // --model: table 1–2 on that preset alone
  std::array<std::int64_t, 3> only_shape{};  // --shape: table 3 on that GEMM alone
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--exact") == 0) exact = true;
    if (std::strcmp(argv[i], "--price") == 0) price = true;
    if (std::strcmp(argv[i], "--steps") == 0) steps = true;
    if (std::strcmp(argv[i], "--gemm") == 0) gemm_only = true;
    if (std::strncmp(argv[i], "--model=", 8) == 0) only_model = argv[i] + 8;
    if (std::strncmp(argv[i], "--shape=", 8) == 0) {
      long long m = 0, k = 0, n = 0;
      if (std::sscanf(argv[i] + 8, "%lldx%lldx%lld", &m, &k, &n) != 3 || m < 1 || k < 1 || n < 1) {
        std::printf("--shape=%s: not MxKxN with three positive sizes\n", argv[i] + 8);
        return 2;
      }
      only_shape = {m, k, n};
    }
    if (std::strncmp(argv[i], "--threads=", 10) == 0) vt::kernels::g_threads = std::atoi(argv[i] + 10);
    if (std::strncmp(argv[i], "--reps=", 7) == 0) vt::kernels::g_reps = std::atoi(argv[i] + 7);
    if (std::strncmp(argv[i], "--device=", 9) == 0) {
      auto device = vt::kernels::ParseDevice(argv[i] + 9);
      if (!device.ok() || !vt::kernels::DeviceReady(*device).ok()) {
        std::printf("device %s: %s\n", argv[i] + 9,
                    device.ok() ? vt::kernels::DeviceReady(*device).ToString().c_str() : device.status().ToString().c_str());
        return 0;
      }
      vt::kernels::g_device = *device;
      device_given = true;
    }
  }
  if (vt::kernels::g_threads < 1) vt::kernels::g_threads = 1;
  if (vt::kernels::g_reps < 1) vt::kernels::g_reps = 1;
  if (quick) {
    vt::kernels::g_reps = 1;
    vt::kernels::StepTable({{"mlp-tiny", 8}, {"cnn-tiny", 4}, {"gpt-tiny", 2}});
    vt::kernels::GemmTable({{64, 64, 64}});
    vt::kernels::ExactTable({{32, 64, 32}});
    return 0;
  }
  if (price) {
    vt::kernels::PriceTable();
    return 0;
  }
  // mlp-fashion's three large GEMMs (forward, dx, dW), then the two.
  const std::vector<std::array<std::int64_t, 3>> gemm_shapes = {
      {64, 784, 128}, {64, 128, 784}, {128, 64, 784}, {512, 768, 2304}, {1024, 1024, 1024}};
  if (gemm_only) {
    vt::kernels::GemmTable(only_shape[0] > 0 ? std::vector{only_shape} : gemm_shapes, false);
    return 0;
  }
  if (exact) {
    vt::kernels::ExactTable({{128, 784, 64}, {256, 256, 256}, {64, 4096, 64}, {512, 2, 512}});
    return 0;
  }
  std::vector<vt::kernels::StepCase> step_cases = {{"mlp-fashion", 64}, {"cnn-fashion", 16}, {"gpt-tiny", 8}};
  std::erase_if(step_cases,
                [&](const vt::kernels::StepCase& c) { return !only_model.empty() && only_model != c.model; });
  if (step_cases.empty()) {
    std::printf("--model=%s: not one of mlp-fashion, cnn-fashion, gpt-tiny\n", only_model.c_str());
    return 2;
  }
  vt::kernels::StepTable(step_cases);
  if (steps) return 0;
  if (device_given) {
    // Tables 1–3 only (table 4 is the CPU arbiter's), and a larger GEMM.
    vt::kernels::GemmTable({{512, 768, 2304}, {1024, 1024, 1024}, {2048, 2048, 2048}}, false);
    return 0;
  }
  vt::kernels::GemmTable(gemm_shapes);
  vt::kernels::ExactTable({{128, 784, 64}, {256, 256, 256}, {64, 4096, 64}, {512, 2, 512}});
  return 0;
}
