// Rounded mode's rounding pass (NodeRounding::Round) against the cheapest
// pass over the same fp64 values: their plain fp64 → fp32 conversion,
// measured in the same run. The values are one GEMM output as a rounded
// linear layer's backward makes it (dW of mlp-fashion's first layer:
// 128 × 784 values, 64 terms each, with their β from GemmSlackF64), so the
// share of values near a boundary is the real one.
//
//   rounding_bench            the table (a few seconds)
//   rounding_bench --quick    one short pass (the CTest smoke run)
//
// Rows: nearest (τ = 0, no β: exact operators), record τ (τ only), record
// τ+β (a GEMM output), replay (nearest, then the log of record τ+β).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {
namespace {

struct Values {
  std::vector<double> exact, slack;
};

Values GemmOutput(std::int64_t m, std::int64_t k, std::int64_t n) {
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  PhiloxStream s(11, 0, 0);
  for (auto* v : {&a, &b}) {
    for (float& x : *v) x = static_cast<float>(s.NextU32() >> 8) * 0x1p-23f - 1.0f;
  }
  const GemmArgs g{m, n, k, false, false, k, n, n, false};  // row-major, no transposes
  Values v;
  v.exact.resize(static_cast<std::size_t>(m * n));
  v.slack.resize(v.exact.size());
  GemmF64Reference(1, g, a.data(), b.data(), v.exact.data());
  GemmSlackF64(g, a.data(), b.data(), v.slack.data());
  return v;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The baseline: the conversion alone, on the CPU's widest vectors.
VT_SIMD_CLONES void Convert(const double* exact, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(exact[i]);
}

enum class Pass { kConvert, kNearest, kRecordTau, kRecordSlack, kReplay };
struct PassRow {
  Pass pass;
  const char* name;
};
constexpr PassRow kPasses[] = {{Pass::kConvert, "convert (baseline)"},
                               {Pass::kNearest, "nearest"},
                               {Pass::kRecordTau, "record tau"},
                               {Pass::kRecordSlack, "record tau+beta"},
                               {Pass::kReplay, "replay"}};

// One pass over all values; false if Round failed.
bool RunPass(Pass pass, const Values& v, const RoundingLog& log, int threads, std::vector<float>& out) {
  const RoundingSpec spec;
  switch (pass) {
    case Pass::kConvert:
      Convert(v.exact.data(), out.data(), v.exact.size());
      return true;
    case Pass::kNearest: {
      NodeRounding r = NodeRounding::Record(spec);
      r.SetTauApplies(false);
      return r.Round(v.exact, out, {}, threads).ok();
    }
    case Pass::kRecordTau:
      return NodeRounding::Record(spec).Round(v.exact, out, {}, threads).ok();
    case Pass::kRecordSlack:
      return NodeRounding::Record(spec).Round(v.exact, out, v.slack, threads).ok();
    case Pass::kReplay:
      return NodeRounding::Replay(spec, log).Round(v.exact, out, v.slack, threads).ok();
  }
  return false;
}

// Seconds per pass: the best of `reps` batches of `batch` passes.
double TimePass(Pass pass, const Values& v, const RoundingLog& log, int threads, int batch, int reps) {
  std::vector<float> out(v.exact.size());
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    for (int i = 0; i < batch; ++i) {
      if (!RunPass(pass, v, log, threads, out)) {
        std::fprintf(stderr, "rounding_bench: Round failed\n");
        return -1;
      }
    }
    best = std::min(best, (Now() - t0) / batch);
  }
  return best;
}

}  // namespace
}  // namespace vt::kernels

int main(int argc, char** argv) {
  using namespace vt::kernels;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: rounding_bench [--quick]\n");
      return 2;
    }
  }
  const Values v = quick ? GemmOutput(16, 64, 96) : GemmOutput(128, 64, 784);
  RoundingLog log;
  {
    std::vector<float> out(v.exact.size());
    NodeRounding r = NodeRounding::Record(RoundingSpec{});
    if (!r.Round(v.exact, out, v.slack).ok()) return 1;
    log = r.log();
  }
  const int batch = quick ? 1 : 200, reps = quick ? 1 : 7;
  std::printf(
      "NodeRounding::Round on %zu values of a GEMM output (k = 64, b = 32, default tau), %zu logged\n",
      v.exact.size(), log.entries.size());
  std::printf("best of %d batches of %d passes; ratio: time / the plain fp64 -> fp32 conversion\n\n", reps,
              batch);
  std::printf("%-18s %8s %12s %10s\n", "pass", "threads", "ns/value", "ratio");
  for (int threads : {1, 2}) {
    double base = 0;
    for (const PassRow& row : kPasses) {
      const double s = TimePass(row.pass, v, log, row.pass == Pass::kConvert ? 1 : threads, batch, reps);
      if (s < 0) return 1;
      const double ns = s * 1e9 / static_cast<double>(v.exact.size());
      if (row.pass == Pass::kConvert) base = ns;
      std::printf("%-18s %8d %12.3f %9.2fx\n", row.name, threads, ns, ns / base);
    }
  }
  return 0;
}
