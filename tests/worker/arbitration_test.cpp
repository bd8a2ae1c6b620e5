// The worker's dispute answers are what the chain's arbitration precompile
// accepts: node-input exports decode as vm::ArbitrationPayload and the
// arbiter, rebuilding the node from the job alone, confirms an honest record
// and convicts a forged log. (worker/ may not include contract_vm/; this
// test may.)

#include <gtest/gtest.h>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/node_spec.h"
#include "tests/worker/train_fixtures.h"
#include "worker/adversary.h"
#include "worker/commitment.h"
#include "worker/dispute.h"
#include "worker/element_answers.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

using test::Family;

struct Param {
  Family family;
  const char* mode;
};

class ArbitrationTest : public testing::TestWithParam<Param> {};

void ConfirmEveryHonestRecord(const LoadedJob& j) {
  const Job& job = j.job;
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  test::TempDir dir;
  ASSERT_TRUE(Train(job, j.dataset, dir.path()).ok());
  auto run = RunDir::Open(dir.path(), false);
  Party party{&job, &j.dataset, &*run, rounded ? &*run : nullptr, ExecConfigFor(job), nullptr};
  const vm::KernelsGraphSource source;
  const vm::Arbiter arbiter(source);
  const std::uint64_t step = 4;
  auto records = AnswerNodeRecords(party, step);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  for (std::uint64_t i = 0; i < records->records.size(); ++i) {
    auto inputs = AnswerNodeInputs(party, step, i);
    ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
    // The record is the node the referee expects from the job alone.
    vm::GasMeter spec_gas(std::uint64_t{1} << 40);
    auto spec = arbiter.ExpectedNode(job.spec, step, i, spec_gas);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_TRUE(vm::CheckRecordAgainstSpec(records->records[i], *spec, rounded).ok()) << "node " << i;

    const Bytes payload = EncodeArbitrationPayload(*inputs);
    ASSERT_TRUE(DecodeExact<vm::ArbitrationPayload>(payload).ok());
    vm::ArbitrationCase c;
    c.job = job.spec;
    c.step = step;
    c.state_hash = inputs->state_hash;
    c.node_root = inputs->node_root;
    c.node_count = inputs->node_count;
    c.node_index = i;
    vm::GasMeter gas(std::uint64_t{1} << 50);
    auto outcome = arbiter.Arbitrate(c, payload, gas);
    ASSERT_TRUE(outcome.ok()) << "node " << i << ": " << outcome.status().ToString();
    EXPECT_EQ(outcome->kind, vm::ArbitrationKind::kExecuted) << outcome->detail;
    EXPECT_EQ(outcome->output_hashes, records->records[i].output_hashes)
        << "node " << i << " " << inputs->node_name;
    if (rounded && i + 1 < records->records.size()) {
      EXPECT_EQ(outcome->log_hash, records->records[i].log_hash);
    }
  }
}

// The side of each node a party answers the element level from
// (ElementSideOf over AnswerNodeCase): its outputs are the ones its record
// commits, and every input except the batch is opened by its tensor hash as
// the referee checks it (verify::VerifyInputHash).
TEST(ArbitrationTest, ElementSidesOpenEveryInputAsTheRefereeChecksIt) {
  const LoadedJob j = test::MakeJob(Family::kMlp, "repops");
  const Job& job = j.job;
  test::TempDir dir;
  ASSERT_TRUE(Train(job, j.dataset, dir.path()).ok());
  auto run = RunDir::Open(dir.path(), false);
  Party party{&job, &j.dataset, &*run, nullptr, ExecConfigFor(job), nullptr};
  const std::uint64_t step = 3;
  auto records = AnswerNodeRecords(party, step);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  auto graph = vm::KernelsGraphSource().Build(job.spec, step);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  std::size_t batch_inputs = 0, opened = 0;
  for (std::uint64_t i = 0; i + 1 < records->records.size(); ++i) {
    auto c = AnswerNodeCase(party, step, i);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto side = ElementSideOf(*c);
    ASSERT_TRUE(side.ok()) << side.status().ToString();
    const protocol::NodeRecord& rec = records->records[i];
    ASSERT_EQ(side->outputs.size(), rec.output_hashes.size());
    for (std::size_t s = 0; s < rec.output_hashes.size(); ++s)
      EXPECT_EQ(side->outputs[s].Hash(), rec.output_hashes[s]);
    ASSERT_EQ(side->openings.size(), rec.inputs.size());
    const verify::InputHashContext at{c->inputs.state_hash, graph->num_state_tensors, c->inputs.node_root,
                                      c->inputs.node_count, i};
    for (std::uint32_t k = 0; k < rec.inputs.size(); ++k) {
      const auto& o = side->openings[k];
      if (rec.inputs[k].source == protocol::InputSource::kBatch) {
        EXPECT_FALSE(o.has_value());
        ++batch_inputs;
        continue;
      }
      ASSERT_TRUE(o.has_value());
      EXPECT_EQ(o->tensor_hash, side->inputs[k].Hash());
      EXPECT_TRUE(
          verify::VerifyInputHash(at, rec.inputs[k], o->tensor_hash, o->proof, o->producer, "input").ok())
          << "node " << i << " input " << k;
      // A tensor hash that is not the input's is refused.
      Hash256 wrong = o->tensor_hash;
      wrong.bytes[0] ^= 1;
      EXPECT_FALSE(verify::VerifyInputHash(at, rec.inputs[k], wrong, o->proof, o->producer, "input").ok());
      ++opened;
    }
  }
  EXPECT_GT(batch_inputs, 0u);
  EXPECT_GT(opened, 10u);
  // An export without an input's bytes is refused.
  auto c = AnswerNodeCase(party, step, 2);
  ASSERT_TRUE(c.ok());
  for (verify::InputOpening& in : c->inputs.inputs) in.tensor.clear();
  EXPECT_EQ(ElementSideOf(*c).status().reason(), "elem-no-input-tensor");
}

TEST_P(ArbitrationTest, TheArbiterConfirmsEveryHonestRecord) {
  ConfirmEveryHonestRecord(test::MakeJob(GetParam().family, GetParam().mode));
}

// A rounded job with a calibrated per-node τ table (a "*" default and one
// node key at a larger τ): the referee's graph source derives the same τ per
// node as the worker's executor, so every honest record and log is confirmed.
TEST(ArbitrationTest, TheArbiterConfirmsAJobWithPerNodeTau) {
  LoadedJob plain = test::MakeJob(Family::kMlp, "rounded");
  const std::string key = kernels::graph::NodeTauKey(test::GraphOf(plain.job, 4), 0);
  std::string text = test::JobJson(Family::kMlp, "rounded");
  text.pop_back();  // the closing brace
  text += R"(, "rounding": {"tau_q16": 64, "tau_table": {")" + key + R"(": 2048}}})";
  auto job = ParseJobJson(text);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_TRUE(ResolveDataset(*job, plain.dataset).ok());
  EXPECT_EQ(job->tau_table.Lookup(key), 2048u);
  EXPECT_EQ(job->tau_table.DefaultTau(), 64u);
  EXPECT_FALSE(job->spec.tau_table.empty());
  ConfirmEveryHonestRecord(LoadedJob{std::move(job).value(), std::move(plain.dataset)});
}

INSTANTIATE_TEST_SUITE_P(Families, ArbitrationTest,
                         testing::Values(Param{Family::kMlp, "repops"}, Param{Family::kMlp, "rounded"},
                                         Param{Family::kCnn, "repops"}, Param{Family::kGpt, "rounded"},
                                         Param{Family::kMlp, "certified"}, Param{Family::kCnn, "certified"},
                                         Param{Family::kGpt, "certified"}),
                         [](const testing::TestParamInfo<Param>& p) {
                           return std::string(test::FamilyName(p.param.family)) + "_" + p.param.mode;
                         });

TEST(ArbitrationTest, TheArbiterRejectsAForgedLogEntry) {
  const LoadedJob j = test::MakeJob(Family::kMlp, "rounded");
  const Job& job = j.job;
  auto adversary = MakeAdversary(*ParseAdversarySpec("forge-log:step=4,node=0"), job, j.dataset);
  ASSERT_TRUE(adversary.ok());
  test::TempDir dir;
  TrainOptions options;
  options.adversary = adversary->get();
  ASSERT_TRUE(Train(job, j.dataset, dir.path(), options).ok());
  auto run = RunDir::Open(dir.path(), false);
  Party solver{&job, &j.dataset, &*run, &*run, ExecConfigFor(job), adversary->get()};
  auto inputs = AnswerNodeInputs(solver, 4, 0);
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  const vm::KernelsGraphSource source;
  const vm::Arbiter arbiter(source);
  vm::ArbitrationCase c{job.spec, 4, inputs->state_hash, inputs->node_root, inputs->node_count, 0};
  vm::GasMeter gas(std::uint64_t{1} << 50);
  auto outcome = arbiter.Arbitrate(c, EncodeArbitrationPayload(*inputs), gas);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->kind, vm::ArbitrationKind::kLogRejected) << outcome->detail;
  // The worker's own re-execution agrees with the chain's.
  auto verdict = ReexecuteNode(job, *inputs);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->kind, NodeVerdictKind::kLogRejected);
}

}  // namespace
}  // namespace vt::worker
