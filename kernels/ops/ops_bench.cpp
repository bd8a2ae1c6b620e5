// Operator benchmark: every training operator of a tiny GPT block, a small
// CNN layer and the optimizers, in native, repops and rounded mode, through
// RunOp (what the worker runs). Prints a table of times and ratios to native
// measured in the same run, plus rounded mode's logging at the old default
// τ = 1/16 ulp and at the new default τ = 2^-12 ulp, both with the current
// rules (the operators' error bound β; τ = 0 for operators whose fp64 result
// is exact, OpFp64IsExact): fraction of values logged, log bytes (zstd,
// EncodeRoundingLog) per million values, the share of entries logged because
// of β rather than τ, and the values whose β reached the u/4 cap.
//
//   kernels_ops_bench            realistic shapes (GPT block B=8 T=128 C=256
//                                H=4 V=2048; conv 3×3 64→64 on 8×64×32×32;
//                                optimizers on 1M parameters)
//   kernels_ops_bench --quick    tiny shapes, one iteration each (CTest smoke run)
//   --threads=N                  worker threads (default: all hardware threads)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=attention).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/philox.h"
#include "kernels/mode.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"

namespace vt::kernels {
namespace {

struct Dims {
  std::int64_t b, t, c, h, vocab;       // transformer block
  std::int64_t n, ch, hw;                // CNN layer: [n, ch, hw, hw]
  std::int64_t params;                   // optimizer tensors
};
constexpr Dims kFull{8, 128, 256, 4, 2048, 8, 64, 32, 1 << 20};
constexpr Dims kQuick{1, 8, 16, 2, 32, 1, 4, 8, 4096};

Tensor Random(const Shape& shape, std::uint32_t tensor, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(shape);
  PhiloxStream s(42, 0, tensor);
  for (float& v : t.values()) v = lo + (hi - lo) * static_cast<float>(s.NextU32() >> 8) * 0x1p-24f;
  return t;
}

Tensor Indices(const Shape& shape, std::int64_t range, std::uint32_t tensor) {
  Tensor t(shape);
  PhiloxStream s(43, 0, tensor);
  for (float& v : t.values()) v = static_cast<float>(s.NextU32() % static_cast<std::uint32_t>(range));
  return t;
}

struct BenchOp {
  std::string name;
  OpKind kind;
  OpAttrs attrs;
  std::vector<Tensor> inputs;
};

// Forward outputs some backward operators read (saved statistics, attention
// probabilities): computed once in native mode.
std::vector<Tensor> Forward(OpKind kind, const OpAttrs& attrs, const std::vector<const Tensor*>& in) {
  ExecConfig cfg;
  cfg.mode = Mode::kNative;
  OpContext ctx(cfg);
  std::vector<Tensor> out;
  const Status s = RunOp(ctx, kind, attrs, in, out);
  if (!s.ok()) {
    std::fprintf(stderr, "setup failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  return out;
}

std::vector<BenchOp> BuildOps(const Dims& d) {
  std::vector<BenchOp> ops;
  const std::int64_t b = d.b, t = d.t, c = d.c;
  // --- transformer block ---
  const Tensor idx = Indices({b, t}, d.vocab, 1), table = Random({d.vocab, c}, 2);
  ops.push_back({"embedding", OpKind::kEmbedding, {}, {idx, table}});
  ops.push_back({"embedding_backward", OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(d.vocab),
                 {Random({b, t, c}, 3), idx}});
  const Tensor x = Random({b, t, c}, 4), gamma = Random({c}, 5, 0.5f, 1.5f), beta = Random({c}, 6);
  ops.push_back({"layernorm", OpKind::kLayerNorm, LayerNormAttrs(1e-5f), {x, gamma, beta}});
  {
    const auto fwd = Forward(OpKind::kLayerNorm, LayerNormAttrs(1e-5f), {&x, &gamma, &beta});
    ops.push_back({"layernorm_backward", OpKind::kLayerNormBackward, {}, {Random({b, t, c}, 7), x, gamma, fwd[1], fwd[2]}});
  }
  const Tensor w_qkv = Random({3 * c, c}, 8, -0.1f, 0.1f), b_qkv = Random({3 * c}, 9);
  ops.push_back({"linear qkv [BT,C]x[3C,C]", OpKind::kLinear, {}, {x, w_qkv, b_qkv}});
  ops.push_back({"linear qkv backward", OpKind::kLinearBackward, {}, {Random({b, t, 3 * c}, 10), x, w_qkv}});
  const Tensor qkv = Random({b, t, 3 * c}, 11);
  ops.push_back({"attention (causal, H heads)", OpKind::kAttention, AttentionAttrs(d.h), {qkv}});
  {
    const auto fwd = Forward(OpKind::kAttention, AttentionAttrs(d.h), {&qkv});
    ops.push_back({"attention_backward", OpKind::kAttentionBackward, AttentionAttrs(d.h),
                   {Random({b, t, c}, 12), qkv, fwd[1]}});
  }
  const Tensor w_fc = Random({4 * c, c}, 13, -0.1f, 0.1f);
  ops.push_back({"linear mlp [BT,C]x[4C,C]", OpKind::kLinear, {}, {x, w_fc}});
  const Tensor h = Random({b, t, 4 * c}, 14, -3.0f, 3.0f);
  ops.push_back({"gelu [BT,4C]", OpKind::kGelu, {}, {h}});
  ops.push_back({"gelu_backward", OpKind::kGeluBackward, {}, {Random({b, t, 4 * c}, 15), h}});
  ops.push_back({"add (residual)", OpKind::kAdd, {}, {x, Random({b, t, c}, 16)}});
  ops.push_back({"dropout p=0.1", OpKind::kDropout, DropoutAttrs(0.1f), {x}});
  const Tensor scores = Random({b * d.h * t, t}, 17, -4.0f, 4.0f);
  ops.push_back({"softmax [BHT,T]", OpKind::kSoftmax, {}, {scores}});
  const Tensor logits = Random({b * t, d.vocab}, 18, -4.0f, 4.0f), labels = Indices({b * t}, d.vocab, 19);
  ops.push_back({"cross_entropy [BT,V]", OpKind::kCrossEntropy, {}, {logits, labels}});
  ops.push_back({"cross_entropy_backward", OpKind::kCrossEntropyBackward, {}, {Tensor({1}, {1.0f}), logits, labels}});
  // --- CNN layer ---
  const Tensor img = Random({d.n, d.ch, d.hw, d.hw}, 20), kernel = Random({d.ch, d.ch, 3, 3}, 21, -0.1f, 0.1f);
  const Tensor bias = Random({d.ch}, 22);
  ops.push_back({"conv2d 3x3 C->C", OpKind::kConv2d, Conv2dAttrs({1, 1, 1, 1}), {img, kernel, bias}});
  ops.push_back({"conv2d_backward", OpKind::kConv2dBackward, Conv2dAttrs({1, 1, 1, 1}),
                 {Random({d.n, d.ch, d.hw, d.hw}, 23), img, kernel}});
  const Tensor ones = Random({d.ch}, 24, 0.5f, 1.5f), zeros = Random({d.ch}, 25, -0.1f, 0.1f);
  ops.push_back({"batchnorm2d_train", OpKind::kBatchNorm2dTrain, BatchNormAttrs({1e-5f, 0.1f}),
                 {img, ones, zeros, zeros, ones}});
  {
    const auto fwd = Forward(OpKind::kBatchNorm2dTrain, BatchNormAttrs({1e-5f, 0.1f}), {&img, &ones, &zeros, &zeros, &ones});
    ops.push_back({"batchnorm2d_backward", OpKind::kBatchNorm2dBackward, {},
                   {Random({d.n, d.ch, d.hw, d.hw}, 26), img, ones, fwd[3], fwd[4]}});
  }
  ops.push_back({"maxpool2d 2x2", OpKind::kMaxPool2d, Pool2dAttrs({2, 2, 2, 2, 0, 0}), {img}});
  ops.push_back({"relu", OpKind::kRelu, {}, {img}});
  // --- optimizer on `params` parameters ---
  const std::int64_t side = 1024 * d.params / kFull.params;
  const Shape ps = {side == 0 ? 4 : side, d.params / (side == 0 ? 4 : side)};
  const Tensor p = Random(ps, 27), g = Random(ps, 28, -0.01f, 0.01f), m = Random(ps, 29, -0.01f, 0.01f);
  const Tensor v = Random(ps, 30, 0.0f, 1e-4f), lr = Tensor({1}, {1e-3f});
  ops.push_back({"adamw (1M params)", OpKind::kAdamW, AdamWAttrs({0.9f, 0.999f, 1e-8f, 0.01f, 10}), {p, g, m, v, lr}});
  ops.push_back({"sgd momentum (1M)", OpKind::kSgd, SgdAttrs({0.9f, 0.0f, false}), {p, g, m, lr}});
  ops.push_back({"clip_grad_norm (1M)", OpKind::kClipGradNorm, ClipGradNormAttrs(1.0f), {g, m}});
  ops.push_back({"sum all (1M)", OpKind::kSum, ReduceAttrs(kReduceAll), {p}});
  return ops;
}

constexpr Mode kModes[] = {Mode::kNative, Mode::kRepops, Mode::kRounded};

std::map<std::string, std::map<Mode, double>> g_ms;  // op name → mode → ms per call

Status RunOnce(const BenchOp& op, const ExecConfig& cfg, std::vector<Tensor>& out, RoundingLog* log = nullptr,
               std::uint64_t* by_slack = nullptr, std::uint64_t* capped = nullptr) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : op.inputs) in.push_back(&t);
  if (cfg.mode != Mode::kRounded) {
    OpContext ctx(cfg, nullptr, RngAddress{1, 2, 3});
    return RunOp(ctx, op.kind, op.attrs, in, out);
  }
  NodeRounding rounding = NodeRounding::Record(cfg.rounding);
  OpContext ctx(cfg, &rounding, RngAddress{1, 2, 3});
  const Status s = RunOp(ctx, op.kind, op.attrs, in, out);
  if (log != nullptr) *log = rounding.log();
  if (by_slack != nullptr) *by_slack = rounding.logged_by_slack();
  if (capped != nullptr) *capped = rounding.slack_capped();
  return s;
}

class TableReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      const std::string name = run.run_name.function_name;  // "op:<name>|<mode>"
      const std::size_t bar = name.rfind('|');
      const std::string op = name.substr(3, bar - 3);
      const Result<Mode> mode = ParseMode(name.substr(bar + 1));
      if (mode.ok()) g_ms[op][*mode] = run.GetAdjustedRealTime();  // Unit(kMillisecond)
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace
}  // namespace vt::kernels

int main(int argc, char** argv) {
  using namespace vt::kernels;
  bool quick = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::max(1, std::atoi(argv[i] + 10));
    } else {
      args.push_back(argv[i]);
    }
  }
  int bench_argc = static_cast<int>(args.size());
  benchmark::Initialize(&bench_argc, args.data());

  const Dims dims = quick ? kQuick : kFull;
  static const std::vector<BenchOp> ops = BuildOps(dims);
  for (const BenchOp& op : ops) {
    for (Mode mode : kModes) {
      const std::string name = "op:" + op.name + "|" + std::string(ModeName(mode));
      auto* bench = benchmark::RegisterBenchmark(name.c_str(), [&op, mode, threads](benchmark::State& state) {
        ExecConfig cfg;
        cfg.mode = mode;
        cfg.threads = threads;
        std::vector<Tensor> out;
        for (auto _ : state) {
          const vt::Status s = RunOnce(op, cfg, out);
          if (!s.ok()) {
            state.SkipWithError(s.ToString().c_str());
            break;
          }
          benchmark::DoNotOptimize(out.data());
        }
      });
      bench->Unit(benchmark::kMillisecond)->UseRealTime();
      if (quick) {
        bench->Iterations(1);
      } else {
        bench->MinTime(0.3);
      }
    }
  }
  TableReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nOperators through RunOp, %d thread(s)%s. Time per call; ratio to native in the same run.\n",
              threads, quick ? " (--quick: tiny shapes, single iterations)" : "");
  std::printf("%-30s %11s %11s %8s %11s %8s\n", "operator", "native ms", "repops ms", "x", "rounded ms", "x");
  for (const BenchOp& op : ops) {
    const auto it = g_ms.find(op.name);
    if (it == g_ms.end()) continue;
    auto ms = [&](Mode m) {
      const auto f = it->second.find(m);
      return f == it->second.end() ? -1.0 : f->second;
    };
    const double n = ms(Mode::kNative), r = ms(Mode::kRepops), d = ms(Mode::kRounded);
    std::printf("%-30s %11.3f %11.3f %8.2f %11.3f %8.2f\n", op.name.c_str(), n, r, n > 0 ? r / n : 0.0, d,
                n > 0 ? d / n : 0.0);
  }

  // Rounded-mode logging, one recording run per op and τ.
  struct LogStats {
    double fraction = -1, bytes_per_million = 0, slack_share = 0;
    std::uint64_t values = 0, entries = 0, bytes = 0, capped = 0;
  };
  auto log_stats = [&](const BenchOp& op, std::uint32_t tau_q16) {
    ExecConfig cfg;
    cfg.mode = Mode::kRounded;
    cfg.threads = threads;
    cfg.rounding.tau_q16 = tau_q16;
    std::vector<Tensor> out;
    RoundingLog log;
    std::uint64_t by_slack = 0;
    LogStats st;
    if (!RunOnce(op, cfg, out, &log, &by_slack, &st.capped).ok()) return st;
    for (const Tensor& t : out) st.values += static_cast<std::uint64_t>(t.numel());
    st.entries = log.entries.size();
    st.bytes = EncodeRoundingLog(log).size();
    const double v = static_cast<double>(std::max<std::uint64_t>(st.values, 1));
    st.fraction = 100.0 * static_cast<double>(st.entries) / v;
    st.bytes_per_million = 1e6 * static_cast<double>(st.bytes) / v;
    st.slack_share =
        st.entries > 0 ? 100.0 * static_cast<double>(by_slack) / static_cast<double>(st.entries) : 0.0;
    return st;
  };
  std::printf(
      "\nRounded-mode log at tau = 1/16 ulp (old default) and 2^-12 ulp (new default); both with the error\n"
      "bound beta and tau = 0 for exact operators.\n");
  std::printf("%-30s %10s %9s %11s %9s %11s %8s %9s\n", "operator", "values", "old log%", "old B/Mval",
              "new log%", "new B/Mval", "beta%", "beta>=u/4");
  LogStats old_total, new_total;
  for (const BenchOp& op : ops) {
    const LogStats o = log_stats(op, kLegacyTauQ16), w = log_stats(op, kDefaultTauQ16);
    std::printf("%-30s %10llu %8.3f%% %11.0f %8.4f%% %11.0f %7.1f%% %9llu\n", op.name.c_str(),
                static_cast<unsigned long long>(w.values), o.fraction, o.bytes_per_million, w.fraction,
                w.bytes_per_million, w.slack_share, static_cast<unsigned long long>(w.capped));
    old_total.values += o.values;
    old_total.entries += o.entries;
    old_total.bytes += o.bytes;
    new_total.values += w.values;
    new_total.entries += w.entries;
    new_total.bytes += w.bytes;
  }
  const double tv = static_cast<double>(std::max<std::uint64_t>(new_total.values, 1));
  std::printf(
      "%-30s %10llu %8.3f%% %11.0f %8.4f%% %11.0f\n", "all operators",
      static_cast<unsigned long long>(new_total.values), 100.0 * static_cast<double>(old_total.entries) / tv,
      1e6 * static_cast<double>(old_total.bytes) / tv, 100.0 * static_cast<double>(new_total.entries) / tv,
      1e6 * static_cast<double>(new_total.bytes) / tv);
  benchmark::Shutdown();
  return 0;
}
