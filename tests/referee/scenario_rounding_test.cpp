// Rounded mode against a solver that steers its rounding (issue 10, item 4).
//
// Scenario.SteerLogAdversaryIsCaughtOrBounded: the test-only `steer-log`
// solver takes the non-nearest neighbour of every value the acceptance rule
// lets it (within w of the boundary, judged at the canonical reference) and
// logs it. It is not caught — an honest challenger's replay agrees with every
// checkpoint and the arbitration precompile confirms every node record of a
// steered step — so the test checks the bound instead: at every node, given
// the same inputs, the steered outputs differ from the canonical rounding to
// nearest only at logged positions whose reference lies within w of its
// boundary, by exactly one grid step. It prints the residual freedom —
// values per step with two accepted outcomes — for mlp-fashion, cnn-fashion
// and gpt-tiny (docs/referee.md, "Residual freedom").

#include <gtest/gtest.h>

#include <bit>
#include <cstdio>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/model.h"
#include "tests/worker/train_fixtures.h"
#include "worker/adversary.h"
#include "worker/dispute.h"
#include "worker/replay.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

namespace graph = kernels::graph;
using test::Family;

// Every node of `step` of the cheater's run: the arbiter confirms the
// cheater's record (outputs and log). Returns the entries of its logs.
std::uint64_t ArbiterConfirmsSteeredStep(const Party& cheater, std::uint64_t step) {
  const Job& job = *cheater.job;
  const vm::KernelsGraphSource source;
  const vm::Arbiter arbiter(source);
  auto records = AnswerNodeRecords(cheater, step);
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  if (!records.ok()) return 0;
  std::uint64_t entries = 0;
  for (std::uint64_t i = 0; i + 1 < records->records.size(); ++i) {
    auto inputs = AnswerNodeInputs(cheater, step, i);
    EXPECT_TRUE(inputs.ok()) << inputs.status().ToString();
    if (!inputs.ok()) continue;
    vm::ArbitrationCase c;
    c.job = job.spec;
    c.step = step;
    c.state_hash = inputs->state_hash;
    c.node_root = inputs->node_root;
    c.node_count = inputs->node_count;
    c.node_index = i;
    vm::GasMeter gas(std::uint64_t{1} << 50);
    auto outcome = arbiter.Arbitrate(c, EncodeArbitrationPayload(*inputs), gas);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    if (!outcome.ok()) continue;
    EXPECT_EQ(outcome->kind, vm::ArbitrationKind::kExecuted) << "node " << i << ": " << outcome->detail;
    EXPECT_EQ(outcome->output_hashes, records->records[i].output_hashes) << "node " << i << " " << inputs->node_name;
    EXPECT_EQ(outcome->log_hash, records->records[i].log_hash) << "node " << i;
    auto log = kernels::DecodeRoundingLog(inputs->log);
    if (log.ok()) entries += log->entries.size();
  }
  return entries;
}

struct Freedom {
  std::uint64_t values = 0;   // values rounded in the step
  std::uint64_t steered = 0;  // values with two accepted outcomes (the steer-log entries)
  std::uint64_t honest_logged = 0;  // entries an honest (vendor) trainer logs in the same step
};

// One step of a preset from its initial state, steered against the
// canonical reference, checked node by node against the canonical nearest
// rounding of the same inputs: they differ exactly at the steered positions,
// by one grid step; the arbiter's replay of the steered log reproduces the
// steered outputs.
Freedom SteeredStepIsBounded(const std::string& preset, std::int64_t batch) {
  auto model = graph::ModelPreset(preset);
  graph::OptimizerSpec opt;
  opt.kind = graph::OptimizerKind::kAdamW;
  opt.lr = 1e-3f;
  opt.weight_decay = 0.01f;
  const graph::StepGraph g = *graph::BuildStepGraph(*model, opt, 0, *graph::BatchShapes(*model, batch));
  const std::vector<kernels::Tensor> state = graph::InitState(*model, opt, 3)->tensors;
  // A batch: normal inputs / valid labels or tokens.
  std::vector<kernels::Shape> shapes = *graph::BatchShapes(*model, batch);
  std::vector<kernels::Tensor> data = {kernels::Tensor(shapes[0]), kernels::Tensor(shapes[1])};
  const bool gpt = model->family() == graph::ModelFamily::kGpt;
  for (std::int64_t i = 0; i < data[0].numel(); ++i)
    data[0][i] = gpt ? static_cast<float>((i * 37) % 256) : static_cast<float>(((i * 7919) % 1000) / 500.0 - 1.0);
  for (std::int64_t i = 0; i < data[1].numel(); ++i) data[1][i] = static_cast<float>(gpt ? (i * 53) % 256 : i % 10);

  kernels::ExecConfig reference;
  reference.mode = kernels::Mode::kRounded;
  reference.threads = 2;
  reference.f64_reference = true;
  graph::StepOptions steer;
  steer.seed = 5;
  steer.steer_rounding = true;
  steer.keep_outputs = true;
  auto steered = graph::ExecuteStep(reference, g, state, data, steer);
  EXPECT_TRUE(steered.ok()) << steered.status().ToString();
  Freedom f;
  if (!steered.ok()) return f;
  f.values = steered->values_rounded;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const std::vector<const kernels::Tensor*> inputs = graph::NodeInputTensors(g, i, state, data, steered->outputs);
    const kernels::RoundingLog& log = steered->logs[i];
    f.steered += log.entries.size();
    auto nearest = graph::ExecuteNode(reference, g, i, inputs, 5);  // recording: round to nearest
    auto replay = graph::ExecuteNode(reference, g, i, inputs, 5, &log);
    EXPECT_TRUE(nearest.ok() && replay.ok()) << g.nodes[i].name;
    if (!nearest.ok() || !replay.ok()) continue;
    std::size_t e = 0;
    std::uint64_t position = 0;
    for (std::size_t k = 0; k < nearest->outputs.size(); ++k) {
      const kernels::Tensor& want = nearest->outputs[k];
      const kernels::Tensor& got = steered->outputs[i][k];
      EXPECT_EQ(replay->outputs[k].Hash(), got.Hash()) << "the arbiter's replay of " << g.nodes[i].name;
      for (std::int64_t v = 0; v < want.numel(); ++v, ++position) {
        const std::uint32_t a = std::bit_cast<std::uint32_t>(want[v]), b = std::bit_cast<std::uint32_t>(got[v]);
        const bool logged = e < log.entries.size() && log.entries[e].position == position;
        if (logged) {
          ++e;
          // The other neighbour: one grid step (same sign, adjacent patterns).
          EXPECT_EQ(a > b ? a - b : b - a, 1u) << g.nodes[i].name << " position " << position;
        } else {
          EXPECT_EQ(a, b) << g.nodes[i].name << " position " << position << " is not steered";
        }
      }
    }
    EXPECT_EQ(e, log.entries.size());
  }
  // The honest trainer's log in the same step (vendor GEMMs), for comparison.
  kernels::ExecConfig vendor = reference;
  vendor.f64_reference = false;
  graph::StepOptions honest;
  honest.seed = 5;
  auto rec = graph::ExecuteStep(vendor, g, state, data, honest);
  if (rec.ok()) {
    for (const auto& log : rec->logs) f.honest_logged += log.entries.size();
  }
  return f;
}

TEST(Scenario, SteerLogAdversaryIsCaughtOrBounded) {
  for (Family f : {Family::kMlp, Family::kGpt}) {
    SCOPED_TRACE(std::string(test::FamilyName(f)));
    const LoadedJob j = test::MakeJob(f, "rounded");
    auto adversary = MakeAdversary(*ParseAdversarySpec("steer-log:step=0"), j.job, j.dataset);
    ASSERT_TRUE(adversary.ok()) << adversary.status().ToString();
    test::TempDir dir;
    TrainOptions options;
    options.adversary = adversary->get();
    auto summary = Train(j.job, j.dataset, dir.path(), options);
    ASSERT_TRUE(summary.ok()) << summary.status().ToString();
    auto run = RunDir::Open(dir.path(), false);
    ASSERT_TRUE(run.ok());
    auto commitment = BuildCommitment(1, j.job.spec, summary->manifest);
    auto key = crypto::SecretKey::Generate();
    ASSERT_TRUE(commitment.ok() && key.ok() && SignCommitment(*commitment, *key).ok());

    // Not caught: the honest challenger's replay (the canonical reference,
    // the one acceptance rule) agrees at every checkpoint and skips nothing.
    auto report = Audit(j.job, j.dataset, *run, *commitment);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->agree()) << AuditReportToJson(*report);
    EXPECT_EQ(report->skipped_log_entries, 0u);

    // The arbiter confirms every record of a steered step.
    Party cheater{&j.job, &j.dataset, &*run, &*run, ExecConfigFor(j.job), adversary->get()};
    EXPECT_GT(ArbiterConfirmsSteeredStep(cheater, 4), 0u) << "the cheater steered nothing";
  }

  // Bounded: per value, one grid step where the rule allows it. The residual
  // freedom of one step (batch 8; gpt-tiny 2) of each preset.
  const std::pair<const char*, std::int64_t> presets[] = {{"mlp-fashion", 8}, {"cnn-fashion", 8}, {"gpt-tiny", 2}};
  for (const auto& [preset, batch] : presets) {
    SCOPED_TRACE(preset);
    const Freedom f = SteeredStepIsBounded(preset, batch);
    EXPECT_GT(f.values, 0u);
    EXPECT_GT(f.steered, 0u) << "no value with two accepted outcomes: the test would prove nothing";
    EXPECT_LT(f.steered * 1000, f.values) << "residual freedom above 0.1% of values";
    std::printf("[residual freedom] %s batch %lld: %llu of %llu values per step (%.4f%%) have two accepted "
                "outcomes; an honest trainer logs %llu\n",
                preset, static_cast<long long>(batch), static_cast<unsigned long long>(f.steered),
                static_cast<unsigned long long>(f.values), 100.0 * static_cast<double>(f.steered) / static_cast<double>(f.values),
                static_cast<unsigned long long>(f.honest_logged));
  }
}

}  // namespace
}  // namespace vt::worker
