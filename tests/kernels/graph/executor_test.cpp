// Step execution on mlp-tiny, cnn-tiny and gpt-tiny: training makes
// progress, repops is bitwise reproducible across threads and SIMD paths,
// rounded mode replays exactly from its logs, every node re-executes alone to
// the same bits, every node writes every value of its outputs (Resize does
// not zero them), and a tampered node is caught by that re-execution.

#include "kernels/graph/executor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>

#include "tests/kernels/graph/graph_test_util.h"
#include "tests/support/bit_hash.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::graph {
namespace {

using test::Preset;
using test::SyntheticBatch;

struct Case {
  const char* model;
  std::int64_t batch;
  float lr;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::string s = info.param.model;
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

class StepExec : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    model = Preset(GetParam().model);
    opt = test::Adam(GetParam().lr);
    batch = SyntheticBatch(model, GetParam().batch, 1234);
    auto init = InitState(model, opt, 99);
    ASSERT_TRUE(init.ok());
    state = std::move(init->tensors);
  }

  StepGraph Graph(std::uint64_t step) const {
    auto g = BuildStepGraph(model, opt, step, *BatchShapes(model, GetParam().batch));
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    return std::move(g).value();
  }

  static ExecConfig Config(Mode mode, int threads, Simd simd = Simd::kAuto) {
    ExecConfig c;
    c.mode = mode;
    c.threads = threads;
    c.simd = simd;
    return c;
  }

  // `steps` training steps from the initial state; returns the final state.
  std::vector<Tensor> Train(const ExecConfig& config, int steps, std::vector<float>* losses = nullptr,
                            std::vector<std::vector<RoundingLog>>* record = nullptr,
                            const std::vector<std::vector<RoundingLog>>* replay = nullptr,
                            std::uint64_t seed = 5) const {
    std::vector<Tensor> s = state;
    for (int t = 0; t < steps; ++t) {
      const StepGraph g = Graph(static_cast<std::uint64_t>(t));
      StepOptions o;
      o.seed = seed;
      if (replay != nullptr) o.replay_logs = &(*replay)[static_cast<std::size_t>(t)];
      auto r = ExecuteStep(config, g, s, batch, o);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) return {};
      if (losses != nullptr) losses->push_back(r->loss);
      if (record != nullptr) record->push_back(std::move(r->logs));
      s = std::move(r->next_state);
    }
    return s;
  }

  ModelSpec model;
  OptimizerSpec opt;
  std::vector<Tensor> batch;
  std::vector<Tensor> state;
};

void ExpectBitwiseEqual(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].BitwiseEqual(b[i])) << what << ": tensor " << i;
}

TEST_P(StepExec, TrainingOnAFixedBatchLowersTheLoss) {
  std::vector<float> losses;
  Train(Config(Mode::kRepops, 2), 8, &losses);
  ASSERT_EQ(losses.size(), 8u);
  for (float l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(losses.back(), 0.8f * losses.front()) << "first " << losses.front() << " last " << losses.back();
  // Native mode trains the same model to nearly the same losses.
  std::vector<float> native;
  Train(Config(Mode::kNative, 2), 8, &native);
  for (std::size_t t = 0; t < native.size(); ++t) EXPECT_NEAR(native[t], losses[t], 2e-3f * losses[t]) << t;
}

TEST_P(StepExec, RepopsIsBitwiseIdenticalAcrossThreadsAndSimd) {
  std::vector<float> ref_losses;
  const std::vector<Tensor> ref = Train(Config(Mode::kRepops, 1, Simd::kScalar), 2, &ref_losses);
  // A SIMD path the CPU lacks falls back to the widest it has (ResolveSimd),
  // so every combination runs on every machine.
  for (int threads : {1, 2, 3}) {
    for (Simd simd : {Simd::kScalar, Simd::kAvx2, Simd::kAvx512}) {
      if (threads == 1 && simd == Simd::kScalar) continue;
      std::vector<float> losses;
      const auto s = Train(Config(Mode::kRepops, threads, simd), 2, &losses);
      ExpectBitwiseEqual(ref, s,
                         "threads " + std::to_string(threads) + " simd " + std::string(SimdName(simd)));
      ASSERT_EQ(losses.size(), ref_losses.size());
      for (std::size_t i = 0; i < losses.size(); ++i) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(losses[i]), std::bit_cast<std::uint32_t>(ref_losses[i]));
      }
    }
  }
}

TEST_P(StepExec, RoundedModeReplaysItsLogExactly) {
  std::vector<std::vector<RoundingLog>> logs;
  const auto recorded = Train(Config(Mode::kRounded, 1, Simd::kScalar), 2, nullptr, &logs);
  ASSERT_EQ(logs.size(), 2u);
  EXPECT_EQ(logs[0].size(), Graph(0).nodes.size());
  std::size_t entries = 0;
  for (const auto& step : logs) {
    for (const auto& l : step) entries += l.entries.size();
  }
  for (int threads : {2, 3}) {
    std::vector<std::vector<RoundingLog>> replayed_logs;
    const auto replayed = Train(Config(Mode::kRounded, threads), 2, nullptr, &replayed_logs, &logs);
    ExpectBitwiseEqual(recorded, replayed, "replay with " + std::to_string(threads) + " threads");
    // Replaying returns no logs of its own (the caller holds them).
    for (const auto& step : replayed_logs) EXPECT_TRUE(step.empty());
  }
  RecordProperty("logged_entries", static_cast<int>(entries));
}

TEST_P(StepExec, EveryNodeReExecutesAloneToTheSameBits) {
  for (Mode mode : {Mode::kRepops, Mode::kRounded}) {
    SCOPED_TRACE(std::string(ModeName(mode)));
    const StepGraph g = Graph(1);
    StepOptions o;
    o.seed = 77;
    o.keep_outputs = true;
    o.hash_outputs = true;
    const auto r = ExecuteStep(Config(mode, 1, Simd::kScalar), g, state, batch, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->outputs.size(), g.nodes.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      const auto inputs = NodeInputTensors(g, i, state, batch, r->outputs);
      const RoundingLog* log = mode == Mode::kRounded ? &r->logs[i] : nullptr;
      // The referee's machine differs: other threads, other SIMD path.
      const auto n = ExecuteNode(Config(mode, 3), g, i, inputs, 77, log);
      ASSERT_TRUE(n.ok()) << g.nodes[i].name << ": " << n.status().ToString();
      ASSERT_EQ(n->outputs.size(), r->outputs[i].size());
      for (std::size_t k = 0; k < n->outputs.size(); ++k) {
        EXPECT_TRUE(n->outputs[k].BitwiseEqual(r->outputs[i][k])) << "node " << i << " " << g.nodes[i].name;
        EXPECT_EQ(n->outputs[k].Hash(), r->output_hashes[i][k]);
      }
    }
    // The same step without kept outputs (intermediates freed early) ends in
    // the same state.
    StepOptions lean;
    lean.seed = 77;
    const auto l = ExecuteStep(Config(mode, 2), g, state, batch, lean);
    ASSERT_TRUE(l.ok());
    EXPECT_TRUE(l->outputs.empty());
    ExpectBitwiseEqual(r->next_state, l->next_state, "lean run");
  }
}

// Tensor::Resize leaves new values unspecified (no zero fill): with the test
// switch marking them, every node of a whole step in every mode writes all
// of its outputs, and the step's outputs and next state equal the unmarked
// run's bit for bit (native: only the first; its order is not fixed).
TEST_P(StepExec, EveryNodeWritesEveryOutputValue) {
  for (Mode mode : {Mode::kNative, Mode::kRepops, Mode::kRounded, Mode::kCertified}) {
    SCOPED_TRACE(std::string(ModeName(mode)));
    const StepGraph g = Graph(1);
    StepOptions o;
    o.seed = 77;
    o.keep_outputs = true;
    SetResizeFillForTesting(true);
    const auto marked = ExecuteStep(Config(mode, 2), g, state, batch, o);
    SetResizeFillForTesting(false);
    ASSERT_TRUE(marked.ok()) << marked.status().ToString();
    ASSERT_EQ(marked->outputs.size(), g.nodes.size());
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      for (std::size_t k = 0; k < marked->outputs[i].size(); ++k) {
        EXPECT_FALSE(HasUnwrittenValue(marked->outputs[i][k]))
            << "node " << i << " " << g.nodes[i].name << " output " << k;
      }
    }
    for (const Tensor& t : marked->next_state) EXPECT_FALSE(HasUnwrittenValue(t));
    if (mode == Mode::kNative) continue;
    const auto plain = ExecuteStep(Config(mode, 2), g, state, batch, o);
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    ExpectBitwiseEqual(plain->next_state, marked->next_state, "next state");
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      ExpectBitwiseEqual(plain->outputs[i], marked->outputs[i], "node " + g.nodes[i].name);
    }
  }
}

// Rounded mode with a job's TauTable: each node rounds with the τ of its key
// (op name and input shapes), others with the table's "*" default; node
// re-execution with the same table reproduces the logs.
TEST_P(StepExec, PerNodeTauFromTheJobTable) {
  const StepGraph g = Graph(0);
  StepOptions base;
  base.seed = 3;
  const auto plain = ExecuteStep(Config(Mode::kRounded, 1), g, state, batch, base);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  // Pick the node with the most outputs rounded by its key's τ at the cap.
  std::size_t target = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind == OpKind::kLinear || g.nodes[i].kind == OpKind::kMatMul) {
      target = i;
      break;
    }
  }
  const std::string key = NodeTauKey(g, target);
  EXPECT_EQ(key.rfind(std::string(OpKindName(g.nodes[target].kind)) + "/", 0), 0u) << key;
  TauTable taus;
  taus.Set(key, kMaxTauQ16);
  StepOptions keyed = base;
  keyed.tau_table = &taus;
  keyed.keep_outputs = true;
  const auto with = ExecuteStep(Config(Mode::kRounded, 1), g, state, batch, keyed);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  std::size_t grew = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (NodeTauKey(g, i) == key) {
      // τ = 1/4 ulp logs about half of the node's values.
      EXPECT_GT(with->logs[i].entries.size(), plain->logs[i].entries.size()) << g.nodes[i].name;
      ++grew;
      const auto inputs = NodeInputTensors(g, i, state, batch, with->outputs);
      EXPECT_TRUE(ExecuteNode(Config(Mode::kRounded, 2), g, i, inputs, 3, &with->logs[i], &taus).ok());
      // The same entries without the table are outside the default τ's window.
      EXPECT_EQ(ExecuteNode(Config(Mode::kRounded, 2), g, i, inputs, 3, &with->logs[i]).status().reason(),
                "log-entry-outside-region");
    }
  }
  EXPECT_GE(grew, 1u);
  // A "*" entry changes every node.
  TauTable star;
  star.Set("*", kMaxTauQ16);
  StepOptions all = base;
  all.tau_table = &star;
  const auto everywhere = ExecuteStep(Config(Mode::kRounded, 1), g, state, batch, all);
  ASSERT_TRUE(everywhere.ok());
  std::size_t total_plain = 0, total_star = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    total_plain += plain->logs[i].entries.size();
    total_star += everywhere->logs[i].entries.size();
  }
  EXPECT_GT(total_star, 10 * total_plain + 10);
}

// A cheating solver alters one node's output. Comparing node hashes finds
// exactly that node first, and re-executing it from the agreed inputs gives
// the honest output — the operator-level dispute in miniature.
TEST_P(StepExec, ATamperedNodeIsTheFirstDivergenceAndReExecutionCatchesIt) {
  const StepGraph g = Graph(0);
  const ExecConfig config = Config(Mode::kRepops, 2);
  StepOptions honest;
  honest.seed = 3;
  honest.keep_outputs = true;
  honest.hash_outputs = true;
  const auto h = ExecuteStep(config, g, state, batch, honest);
  ASSERT_TRUE(h.ok());
  PhiloxStream rng(vt::test::TestSeed(), 2, 0);
  const std::size_t target =
      NextUniformInt(rng, g.nodes.size() - 1);  // any node but the last optimizer update
  StepOptions cheat = honest;
  cheat.observer = [&](std::size_t i, std::span<Tensor> outputs) -> Status {
    if (i == target) outputs[0][0] = outputs[0][0] + 1.0f;
    return Status::Ok();
  };
  const auto c = ExecuteStep(config, g, state, batch, cheat);
  ASSERT_TRUE(c.ok());
  std::size_t first = g.nodes.size();
  for (std::size_t i = 0; i < g.nodes.size() && first == g.nodes.size(); ++i) {
    if (c->output_hashes[i] != h->output_hashes[i]) first = i;
  }
  EXPECT_EQ(first, target) << g.nodes[target].name;
  const auto inputs = NodeInputTensors(g, target, state, batch, c->outputs);
  const auto redo = ExecuteNode(config, g, target, inputs, 3);
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->outputs[0].Hash(), h->output_hashes[target][0]);
  EXPECT_NE(redo->outputs[0].Hash(), c->output_hashes[target][0]);
}

// The graph's wiring of the backward: the gradient it feeds each optimizer
// node matches a central finite difference of the loss (the forward part of
// the same graph, same dropout masks), at the largest-gradient element of
// every parameter tensor.
TEST_P(StepExec, GradientsMatchFiniteDifferencesOfTheLoss) {
  const StepGraph g = Graph(0);
  const ExecConfig config = Config(Mode::kRepops, 2);
  StepOptions o;
  o.seed = 11;
  o.keep_outputs = true;
  const auto r = ExecuteStep(config, g, state, batch, o);
  ASSERT_TRUE(r.ok());
  const auto specs = *StateSpecs(model, opt);
  std::size_t checked = 0;
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::kAdamW) continue;
    const std::uint32_t p = n.inputs[0].index;  // the parameter (state index)
    const Tensor& grad = r->outputs[n.inputs[1].index][n.inputs[1].slot];
    ASSERT_EQ(grad.shape(), state[p].shape()) << specs[p].name;
    std::int64_t best = 0;
    for (std::int64_t e = 1; e < grad.numel(); ++e) {
      if (std::fabs(grad[e]) > std::fabs(grad[best])) best = e;
    }
    const double gval = grad[best];
    if (std::fabs(gval) < 1e-3) continue;  // below what an fp32 loss difference resolves
    const float h = 1e-2f;
    const auto loss_with = [&](float delta) {
      std::vector<Tensor> s = state;
      s[p][best] += delta;
      StepOptions lean;
      lean.seed = 11;
      const auto rr = ExecuteStep(config, g, s, batch, lean);
      EXPECT_TRUE(rr.ok());
      return static_cast<double>(rr->loss);
    };
    const double fd = (loss_with(h) - loss_with(-h)) / (2.0 * static_cast<double>(h));
    EXPECT_NEAR(fd, gval, 0.03 * std::fabs(gval) + 3e-4) << specs[p].name << " element " << best;
    ++checked;
  }
  EXPECT_GE(checked, 3u);
}

TEST_P(StepExec, RandomnessComesOnlyFromTheSeedStepNodeAddress) {
  const StepGraph g = Graph(0);
  StepOptions a, b;
  a.seed = 1;
  b.seed = 2;
  const auto ra = ExecuteStep(Config(Mode::kRepops, 1), g, state, batch, a);
  const auto ra2 = ExecuteStep(Config(Mode::kRepops, 1), g, state, batch, a);
  const auto rb = ExecuteStep(Config(Mode::kRepops, 1), g, state, batch, b);
  ASSERT_TRUE(ra.ok() && ra2.ok() && rb.ok());
  ExpectBitwiseEqual(ra->next_state, ra2->next_state, "same seed");
  bool differs = false;
  for (std::size_t i = 0; i < ra->next_state.size(); ++i)
    differs |= !ra->next_state[i].BitwiseEqual(rb->next_state[i]);
  // Only gpt-tiny has dropout; the other models ignore the seed entirely.
  EXPECT_EQ(differs, model.family() == ModelFamily::kGpt);
}

// Golden bits of one repops step from the initial state (FNV-1a over every
// value of the next state, in name order, and the loss). Equal for every
// compiler, thread count and SIMD path; it changes when an operator's
// documented operation order, an init rule or the graph changes — update it
// only deliberately, since every job's state hashes change with it.
TEST_P(StepExec, GoldenRepopsStep) {
  const StepGraph g = Graph(0);
  StepOptions o;
  o.seed = 5;
  const auto r = ExecuteStep(Config(Mode::kRepops, 2), g, state, batch, o);
  ASSERT_TRUE(r.ok());
  vt::test::BitHasher h;
  for (const Tensor& t : r->next_state) {
    for (float v : t.values()) h.AddFloat(v);
  }
  h.AddFloat(r->loss);
  const std::map<std::string, std::uint64_t> golden = {
      {"mlp-tiny", 0x66d10b1299c7596full},
      {"cnn-tiny", 0xb4579f2e6a5c703eull},
      {"gpt-tiny", 0xb25af0d3e96741c8ull},
  };
  EXPECT_EQ(h.value(), golden.at(GetParam().model)) << std::hex << "0x" << h.value();
}

INSTANTIATE_TEST_SUITE_P(Models, StepExec,
                         testing::Values(Case{"mlp-tiny", 8, 1e-2f}, Case{"cnn-tiny", 4, 1e-2f},
                                         Case{"gpt-tiny", 2, 3e-3f}),
                         CaseName);

// ---- rejected inputs ---------------------------------------------------------------

class ExecErrors : public testing::Test {
 protected:
  void SetUp() override {
    model = Preset("mlp-tiny");
    g = *BuildStepGraph(model, test::Adam(1e-2f), 0, *BatchShapes(model, 4));
    state = InitState(model, test::Adam(1e-2f), 1)->tensors;
    batch = SyntheticBatch(model, 4, 1);
  }
  ModelSpec model;
  StepGraph g;
  std::vector<Tensor> state, batch;
};

TEST_F(ExecErrors, StepInputsAreValidated) {
  ExecConfig config;
  auto short_state = state;
  short_state.pop_back();
  EXPECT_EQ(ExecuteStep(config, g, short_state, batch).status().reason(), "state-shape-mismatch");
  auto bad_state = state;
  bad_state[0] = Tensor({3});
  EXPECT_EQ(ExecuteStep(config, g, bad_state, batch).status().reason(), "state-shape-mismatch");
  auto bad_batch = batch;
  bad_batch[1] = Tensor({5});
  EXPECT_EQ(ExecuteStep(config, g, state, bad_batch).status().reason(), "batch-shape-mismatch");
  EXPECT_EQ(ExecuteStep(config, g, state, std::span<const Tensor>(batch).first(1)).status().reason(),
            "batch-shape-mismatch");
  // A label outside [0, classes) is the operator's "bad-index", with the node named.
  auto bad_labels = batch;
  bad_labels[1][0] = 4.0f;
  const auto r = ExecuteStep(config, g, state, bad_labels);
  EXPECT_EQ(r.status().reason(), "bad-index");
  EXPECT_NE(r.status().detail().find("(loss)"), std::string::npos) << r.status().detail();

  StepGraph dangling = g;
  dangling.nodes[2].inputs[0] = NodeInput::Node(7, 0);  // a later node
  EXPECT_EQ(ExecuteStep(config, dangling, state, batch).status().reason(), "graph-malformed");
  StepGraph no_loss = g;
  no_loss.loss = NodeInput::State(0);
  EXPECT_EQ(ExecuteStep(config, no_loss, state, batch).status().reason(), "graph-malformed");

  ExecConfig rounded;
  rounded.mode = Mode::kRounded;
  std::vector<RoundingLog> logs(g.nodes.size() - 1);
  StepOptions o;
  o.replay_logs = &logs;
  EXPECT_EQ(ExecuteStep(rounded, g, state, batch, o).status().reason(), "log-count-mismatch");
  rounded.rounding.bits = 40;
  EXPECT_EQ(ExecuteStep(rounded, g, state, batch).status().reason(), "rounding-bits-out-of-range");
}

TEST_F(ExecErrors, ObserverFailureAbortsTheStep) {
  StepOptions o;
  o.observer = [](std::size_t i, std::span<Tensor>) {
    return i == 3 ? Status::Error("disk-full", "cannot store node 3") : Status::Ok();
  };
  EXPECT_EQ(ExecuteStep(ExecConfig{}, g, state, batch, o).status().reason(), "disk-full");
}

TEST_F(ExecErrors, SingleNodeInputsAreValidated) {
  ExecConfig config;
  // Node 0 is fc.0: Linear(inputs, fc.0.weight, fc.0.bias).
  ASSERT_EQ(g.nodes[0].name, "fc.0");
  const Tensor& w = state[1];
  const Tensor& b = state[0];
  std::vector<const Tensor*> ok_inputs{&batch[0], &w, &b};
  EXPECT_TRUE(ExecuteNode(config, g, 0, ok_inputs, 0).ok());
  EXPECT_EQ(ExecuteNode(config, g, g.nodes.size(), ok_inputs, 0).status().reason(), "node-out-of-range");
  std::vector<const Tensor*> two{&batch[0], &w};
  EXPECT_EQ(ExecuteNode(config, g, 0, two, 0).status().reason(), "node-bad-inputs");
  std::vector<const Tensor*> null_in{&batch[0], nullptr, &b};
  EXPECT_EQ(ExecuteNode(config, g, 0, null_in, 0).status().reason(), "node-bad-inputs");
  std::vector<const Tensor*> swapped{&batch[0], &b, &w};
  EXPECT_EQ(ExecuteNode(config, g, 0, swapped, 0).status().reason(), "node-input-shape");
  // Rounded replay with an entry past the node's outputs.
  ExecConfig rounded;
  rounded.mode = Mode::kRounded;
  RoundingLog log;
  log.entries.push_back({4 * 32, true});  // fc.0 has 4·32 outputs: positions 0..127
  EXPECT_EQ(ExecuteNode(rounded, g, 0, ok_inputs, 0, &log).status().reason(), "log-entry-out-of-range");
}

}  // namespace
}  // namespace vt::kernels::graph
