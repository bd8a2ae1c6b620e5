// ArbitrationDeterminism.*: a rounded-mode verdict is a pure function of the
// node's inputs and log. The arbitration precompile (contract_vm
// Arbiter::Arbitrate) runs one node through RunOp with a replaying
// NodeRounding and ExecConfig::f64_reference — exactly ExecuteNode with a
// replay log, which is what every child here does. OpenBLAS picks its
// kernels per CPU model and OPENBLAS_CORETYPE forces a model at process
// start, so each configuration (every core type this CPU runs × 1 and 2
// threads) is a child process: this test binary re-run with
// VT_ARBDET_CHILD set, which writes one receipt line per arbitration.
//
// The receipts cover every node of one rounded step of mlp-fashion,
// cnn-fashion and gpt-tiny (batch 2, the step recorded against the
// canonical reference, so the same in every process), arbitrated with the
// trainer's log and with a steered log (the non-nearest neighbour of every
// value within w: every entry the rule accepts against the nearest choice),
// plus a matmul whose reference value sits at 0.99× and 1.01× of each edge of
// the acceptance rule (w for the non-nearest direction, 2w for the nearest).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/graph/executor.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "tests/kernels/graph/graph_test_util.h"
#include "tests/support/openblas_coretypes.h"

namespace vt::kernels::graph {
namespace {

constexpr const char* kPresets[] = {"mlp-fashion", "cnn-fashion", "gpt-tiny"};
constexpr std::int64_t kBatch = 2;
constexpr std::uint64_t kSeed = 7;

std::string Hex(const Hash256& h) { return h.Hex().substr(0, 16); }

// One receipt per arbitration: the verdict (ok or the reject reason), the
// output hashes and the log hash.
std::string Receipt(const std::string& label, const Result<NodeResult>& r, const RoundingLog& log) {
  std::string line = label + " log=" + Hex(HashRoundingLog(log)) + " ";
  if (!r.ok()) return line + "verdict=" + r.status().reason() + "\n";
  line += "verdict=ok";
  for (const Tensor& t : r->outputs) line += " " + Hex(t.Hash());
  return line + "\n";
}

// Every node of one rounded step of `preset`, arbitrated with `threads`.
std::string PresetReceipts(const std::string& preset, int threads) {
  const ModelSpec model = test::Preset(preset);
  const OptimizerSpec opt = test::Adam(1e-3f);
  const StepGraph g = *BuildStepGraph(model, opt, 0, *BatchShapes(model, kBatch));
  const std::vector<Tensor> state = InitState(model, opt, 3)->tensors;
  const std::vector<Tensor> batch = test::SyntheticBatch(model, kBatch, 11);
  ExecConfig record;
  record.mode = Mode::kRounded;
  record.threads = 1;
  record.f64_reference = true;  // the same recording in every process
  std::string out;
  for (const bool steer : {false, true}) {
    StepOptions options;
    options.seed = kSeed;
    options.keep_outputs = true;
    options.steer_rounding = steer;
    auto step = ExecuteStep(record, g, state, batch, options);
    if (!step.ok()) return "step failed: " + step.status().ToString() + "\n";
    ExecConfig arbiter;
    arbiter.mode = Mode::kRounded;
    arbiter.threads = threads;
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const std::vector<const Tensor*> inputs = NodeInputTensors(g, i, state, batch, step->outputs);
      auto r = ExecuteNode(arbiter, g, i, inputs, kSeed, &step->logs[i]);
      out += Receipt(preset + (steer ? " steered " : " honest ") + std::to_string(i) + " " + g.nodes[i].name, r,
                     step->logs[i]);
    }
  }
  return out;
}

// A 1×3·3×1 matmul whose canonical value is 1 + 2^-24 (the rounding boundary
// between 1 and 1 + 2^-23) + d, arbitrated with one entry at position 0.
std::string EdgeReceipt(double d, bool nearest_direction, std::uint32_t tau_q16, int threads) {
  Tensor a({1, 3}), b({3, 1});
  a[0] = 1.0f;
  a[1] = 0x1p-24f;
  a[2] = static_cast<float>(d);
  b[0] = b[1] = b[2] = 1.0f;
  const bool up = d > 0 ? nearest_direction : !nearest_direction;  // above m, nearest is up
  ExecConfig config;
  config.mode = Mode::kRounded;
  config.threads = threads;
  config.rounding.tau_q16 = tau_q16;
  NodeRounding rounding = NodeRounding::Replay(config.rounding, RoundingLog{{LogEntry{0, up}}});
  std::vector<Tensor> outputs;
  const std::vector<const Tensor*> in = {&a, &b};
  Status s = RunOp(OpContext(config, &rounding), OpKind::kMatMul, MatMulAttrs(false, false), in, outputs);
  if (s.ok()) s = rounding.Finish();
  char label[96];
  std::snprintf(label, sizeof label, "edge d=%a up=%d tau=%u ", d, up ? 1 : 0, tau_q16);
  if (!s.ok()) return std::string(label) + "verdict=" + s.reason() + "\n";
  return std::string(label) + "verdict=ok " + Hex(outputs[0].Hash()) + "\n";
}

struct Edge {
  double ratio;  // of the edge
  bool nearest;  // the entry's direction
  bool accepted;
};

// u = 2^-23 at 1; w = τ·u (β of this tiny product is ~2^-50, far below).
constexpr Edge kEdges[] = {
    {0.99, false, true}, {1.01, false, false},  // the non-nearest neighbour: accepted iff |ref − m| < w
    {1.98, true, true},  {2.02, true, false},   // the nearest one: accepted iff |ref − m| < 2w
};
constexpr std::uint32_t kEdgeTaus[] = {16, 4096};  // 2^-12 and 1/16 ulp

std::string EdgeReceipts(int threads) {
  std::string out;
  for (std::uint32_t tau : kEdgeTaus) {
    const double w = static_cast<double>(tau) / 65536.0 * 0x1p-23;
    for (const Edge& e : kEdges) {
      for (double sign : {1.0, -1.0}) out += EdgeReceipt(sign * e.ratio * w, e.nearest, tau, threads);
    }
  }
  return out;
}

std::string AllReceipts(int threads) {
  std::string out;
  for (const char* preset : kPresets) out += PresetReceipts(preset, threads);
  return out + EdgeReceipts(threads);
}

std::string SelfPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// The child: writes AllReceipts(threads) to the file VT_ARBDET_CHILD names.
TEST(ArbitrationDeterminism, Child) {
  const char* path = std::getenv("VT_ARBDET_CHILD");
  if (path == nullptr) GTEST_SKIP() << "runs only as the child process of ArbitrationDeterminism.*";
  const char* threads = std::getenv("VT_ARBDET_THREADS");
  std::ofstream(path) << AllReceipts(threads != nullptr ? std::atoi(threads) : 1);
}

TEST(ArbitrationDeterminism, EdgeEntriesGetTheRuleVerdict) {
  // The edge cases mean something: each side of each edge has its verdict.
  for (std::uint32_t tau : kEdgeTaus) {
    const double w = static_cast<double>(tau) / 65536.0 * 0x1p-23;
    for (const Edge& e : kEdges) {
      for (double sign : {1.0, -1.0}) {
        const std::string r = EdgeReceipt(sign * e.ratio * w, e.nearest, tau, 1);
        EXPECT_EQ(r.find("verdict=ok") != std::string::npos, e.accepted) << r;
        if (!e.accepted) {
          EXPECT_NE(r.find("log-entry-outside-region"), std::string::npos) << r;
        }
      }
    }
  }
}

TEST(ArbitrationDeterminism, ReceiptsAreByteIdenticalAcrossCoreTypesAndThreads) {
  const std::string self = SelfPath();
  ASSERT_FALSE(self.empty());
  const std::string expected = AllReceipts(1);
  ASSERT_EQ(expected.find("failed"), std::string::npos) << expected;
  // Every node of every preset got a receipt, the steered logs were accepted
  // (a steering cheater is not caught by the arbiter: docs/referee.md).
  std::size_t receipts = 0, rejected = 0;
  for (std::size_t p = 0; (p = expected.find('\n', p)) != std::string::npos; ++p) ++receipts;
  for (std::size_t p = 0; (p = expected.find("log-entry-outside-region", p)) != std::string::npos; ++p) ++rejected;
  EXPECT_EQ(rejected, 8u) << "only the eight entries past an edge are rejected:\n" << expected;
  const std::string tmp = testing::TempDir() + "arbdet_" + std::to_string(getpid());
  int runs = 0;
  for (const std::string& core : vt::test::OpenBlasCoreTypes()) {
    for (int threads : {1, 2}) {
      const std::string file = tmp + "_" + (core.empty() ? "default" : core) + "_" + std::to_string(threads);
      const std::string cmd = (core.empty() ? "env -u OPENBLAS_CORETYPE" : "env OPENBLAS_CORETYPE=" + core) +
                              " VT_ARBDET_CHILD='" + file + "' VT_ARBDET_THREADS=" + std::to_string(threads) +
                              " '" + self + "' --gtest_filter=ArbitrationDeterminism.Child >/dev/null 2>&1";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      std::ifstream in(file);
      const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::remove(file.c_str());
      EXPECT_EQ(got, expected) << "core type '" << core << "', " << threads << " threads";
      ++runs;
    }
  }
  std::printf("[arbitration determinism] %zu receipts, identical in %d child processes\n", receipts, runs);
}

}  // namespace
}  // namespace vt::kernels::graph
