// Certified mode trains mlp-fashion, cnn-fashion and gpt-tiny, and its steps
// are bitwise identical across thread counts, SIMD choices and deliberately
// shuffled fp64 summation orders (random permutation of K, random split-K:
// SetF64ShuffleSeedForTesting), with no rounding logs.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/certified.h"
#include "kernels/graph/executor.h"
#include "tests/kernels/graph/graph_test_util.h"
#include "tests/support/bit_hash.h"

namespace vt::kernels::graph {
namespace {

struct Case {
  const char* model;
  std::int64_t batch;
  int steps;
};

struct TrainRun {
  std::uint64_t hash = 0;  // every state tensor and loss of every step
  std::vector<float> losses;
};

TrainRun Train(const Case& c, Mode mode, int threads, Simd simd, std::uint64_t shuffle_seed) {
  const ModelSpec model = test::Preset(c.model);
  const OptimizerSpec opt = test::Adam(1e-3f);
  const std::vector<Tensor> batch = test::SyntheticBatch(model, c.batch, 1234);
  auto init = InitState(model, opt, 99);
  EXPECT_TRUE(init.ok());
  std::vector<Tensor> state = std::move(init->tensors);
  ExecConfig config;
  config.mode = mode;
  config.threads = threads;
  config.simd = simd;
  SetF64ShuffleSeedForTesting(shuffle_seed);
  TrainRun run;
  vt::test::BitHasher h;
  for (int t = 0; t < c.steps; ++t) {
    auto g = BuildStepGraph(model, opt, static_cast<std::uint64_t>(t), *BatchShapes(model, c.batch));
    EXPECT_TRUE(g.ok());
    StepOptions o;
    o.seed = 5;
    auto r = ExecuteStep(config, *g, state, batch, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) break;
    EXPECT_TRUE(r->logs.empty()) << "certified mode keeps no rounding log";
    run.losses.push_back(r->loss);
    h.AddFloat(r->loss);
    for (const Tensor& s : r->next_state) {
      for (float v : s.values()) h.AddFloat(v);
    }
    state = std::move(r->next_state);
  }
  SetF64ShuffleSeedForTesting(0);
  run.hash = h.value();
  return run;
}

class CertifiedStep : public testing::TestWithParam<Case> {};

TEST_P(CertifiedStep, BitwiseAcrossThreadsSimdAndShuffledOrders) {
  const Case c = GetParam();
  const CertCounts before = CertifiedCounts();
  const TrainRun ref = Train(c, Mode::kCertified, 1, Simd::kScalar, 0);
  const CertCounts after = CertifiedCounts();
  ASSERT_EQ(ref.losses.size(), static_cast<std::size_t>(c.steps));
  for (float l : ref.losses) EXPECT_TRUE(std::isfinite(l));
  std::uint64_t outputs = 0, slow = 0;
  for (int k = 0; k < kCertKinds; ++k) {
    outputs += after.outputs[k] - before.outputs[k];
    slow += after.slow[k] - before.slow[k];
  }
  std::printf("%s: %d certified steps, %llu certified outputs, %llu slow (%.4f %%), losses", c.model, c.steps,
              static_cast<unsigned long long>(outputs), static_cast<unsigned long long>(slow),
              outputs == 0 ? 0.0 : 100.0 * static_cast<double>(slow) / static_cast<double>(outputs));
  for (float l : ref.losses) std::printf(" %.6f", static_cast<double>(l));
  std::printf("\n");
  for (int k = 0; k < kCertKinds; ++k) {
    std::printf("  %-5s %9llu outputs %6llu slow\n", std::string(CertKindName(static_cast<CertKind>(k))).c_str(),
                static_cast<unsigned long long>(after.outputs[k] - before.outputs[k]),
                static_cast<unsigned long long>(after.slow[k] - before.slow[k]));
  }
  EXPECT_GT(outputs, 0u);

  struct Config {
    int threads;
    Simd simd;
    std::uint64_t shuffle;
  };
  for (const Config cfg : {Config{2, Simd::kAuto, 0}, Config{3, Simd::kAvx2, 0}, Config{1, Simd::kAuto, 11},
                           Config{2, Simd::kScalar, 12}, Config{3, Simd::kAuto, 13}}) {
    const TrainRun other = Train(c, Mode::kCertified, cfg.threads, cfg.simd, cfg.shuffle);
    EXPECT_EQ(other.hash, ref.hash) << c.model << " threads " << cfg.threads << " simd " << SimdName(cfg.simd)
                                    << " shuffle " << cfg.shuffle;
  }

  // The same function as the other modes up to rounding: the loss agrees
  // with repops to a few ulps of accumulated difference.
  const TrainRun repops = Train(c, Mode::kRepops, 2, Simd::kAuto, 0);
  for (std::size_t t = 0; t < ref.losses.size(); ++t) {
    EXPECT_NEAR(ref.losses[t], repops.losses[t], 1e-3 * std::fabs(repops.losses[t])) << "step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, CertifiedStep,
                         testing::Values(Case{"mlp-fashion", 16, 3}, Case{"cnn-fashion", 4, 2},
                                         Case{"gpt-tiny", 2, 2}),
                         [](const testing::TestParamInfo<Case>& p) {
                           std::string s = p.param.model;
                           for (char& ch : s) {
                             if (ch == '-') ch = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace vt::kernels::graph
