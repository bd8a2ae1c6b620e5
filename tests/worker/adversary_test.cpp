// TEST-ONLY adversaries: each kind of cheating is located at exactly the
// checkpoint, step and node where it acted, and the re-execution of that
// node convicts the solver.

#include <gtest/gtest.h>

#include <random>

#include "tests/support/test_seed.h"
#include "tests/worker/train_fixtures.h"
#include "worker/adversary.h"
#include "worker/commitment.h"
#include "worker/data_order.h"
#include "worker/dispute.h"
#include "worker/replay.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

using test::Family;
namespace graph = kernels::graph;

struct Case {
  Family family;
  const char* mode;
  std::string adversary;  // ParseAdversarySpec text
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  std::string name = std::string(test::FamilyName(info.param.family)) + "_" + info.param.mode + "_" +
                     info.param.adversary.substr(0, info.param.adversary.find(':'));
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

// Where the adversary acts, from the job and the spec alone.
struct Expected {
  std::uint64_t step = 0;
  std::uint64_t node = 0;
};

Expected Expect(const Job& job, const Dataset& dataset, const AdversarySpec& spec) {
  Expected e;
  e.step = spec.step;
  const graph::StepGraph g = test::GraphOf(job, spec.step);
  auto producer_min = [&] {
    std::uint64_t m = g.nodes.size();
    for (const auto& in : g.next_state) {
      if (in.source == graph::NodeInputSource::kNode) m = std::min<std::uint64_t>(m, in.index);
    }
    return m;
  };
  switch (spec.kind) {
    case AdversaryKind::kTamperWeight: {
      std::size_t k = 0;
      while (g.state_names[k] != spec.tensor && k + 1 < g.state_names.size()) ++k;
      e.node = g.next_state[k].index;
      break;
    }
    case AdversaryKind::kSkipSteps:
      e.node = producer_min();
      break;
    case AdversaryKind::kWrongLr:
      for (const graph::Node& n : g.nodes) {
        if (n.kind == kernels::OpKind::kAdamW || n.kind == kernels::OpKind::kSgd) {
          e.node = n.inputs.back().index;
          break;
        }
      }
      break;
    case AdversaryKind::kForgeLog:
    case AdversaryKind::kWrongOutput:
    case AdversaryKind::kWrongValue:
      e.node = spec.node;
      break;
    case AdversaryKind::kWrongHeader:
      e.node = g.nodes.size();  // the assemble node: only h_{T+1}'s header leaf differs
      break;
    case AdversaryKind::kSteerLog:
      // Never located: every choice it makes is accepted
      // (Scenario.SteerLogAdversaryIsCaughtOrBounded).
      ADD_FAILURE() << "steer-log is not a located adversary";
      break;
    case AdversaryKind::kPoisonLabels: {
      // The first step whose batch holds a poisoned example, at the first
      // node that reads the targets.
      const std::vector<std::uint64_t> poisoned = PoisonedExamples(spec, dataset.size());
      DataOrder order(job.spec.seed, dataset.size());
      DataCursor cursor;
      EXPECT_FALSE(poisoned.empty());
      e.step = job.spec.num_steps;  // never, unless a batch holds a poisoned example
      for (std::uint64_t s = 0; s < job.spec.num_steps; ++s) {
        auto batch = order.NextBatch(cursor, job.spec.batch_size);
        bool hit = false;
        for (std::uint64_t i : *batch) hit |= std::binary_search(poisoned.begin(), poisoned.end(), i);
        if (hit) {
          e.step = s;
          break;
        }
      }
      const graph::StepGraph gs = test::GraphOf(job, e.step);
      for (std::size_t i = 0; i < gs.nodes.size(); ++i) {
        for (const auto& in : gs.nodes[i].inputs) {
          if (in.source == graph::NodeInputSource::kBatch && in.index == graph::kBatchTargets) {
            e.node = i;
            i = gs.nodes.size();
            break;
          }
        }
      }
      break;
    }
  }
  return e;
}

class AdversaryTest : public testing::TestWithParam<Case> {};

TEST_P(AdversaryTest, LocatedAtExactlyTheCheckpointStepAndNode) {
  const Case& c = GetParam();
  const LoadedJob j = test::MakeJob(c.family, c.mode);
  const Job& job = j.job;
  auto spec = ParseAdversarySpec(c.adversary);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto adversary = MakeAdversary(*spec, job, j.dataset);
  ASSERT_TRUE(adversary.ok()) << adversary.status().ToString();
  const Expected want = Expect(job, j.dataset, (*adversary)->spec());
  ASSERT_LT(want.step, job.spec.num_steps) << "the adversary never acts in this job";
  const std::uint64_t k = job.spec.checkpoint_interval;
  const std::uint64_t want_checkpoint = want.step / k + 1;

  // The cheating solver trains and commits.
  test::TempDir solver_dir, challenger_dir;
  TrainOptions train;
  train.adversary = adversary->get();
  auto summary = Train(job, j.dataset, solver_dir.path(), train);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  auto commitment = BuildCommitment(0, job.spec, summary->manifest);
  auto key = crypto::SecretKey::Generate();
  ASSERT_TRUE(commitment.ok() && key.ok() && SignCommitment(*commitment, *key).ok());
  auto solver_run = RunDir::Open(solver_dir.path(), false);

  // An honest challenger (another thread count) audits: the first divergent checkpoint.
  AuditOptions audit;
  audit.threads = 2;
  audit.own_run_dir = challenger_dir.path();
  auto report = Audit(job, j.dataset, *solver_run, *commitment, audit);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->verdict, AuditVerdict::kDiverged) << report->reason;
  EXPECT_EQ(report->first_divergent, want_checkpoint) << report->reason << " " << report->detail;
  if (spec->kind == AdversaryKind::kForgeLog) {
    // The replay itself rejects the forged entry, at its step and node.
    EXPECT_EQ(report->reason, "log-entry-outside-region");
    EXPECT_EQ(report->failed_step, want.step);
    EXPECT_EQ(report->failed_node, want.node);
  }

  // The dispute narrows it to the step and node; the re-execution convicts the solver.
  auto challenger_run = RunDir::Open(challenger_dir.path(), false);
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  Party solver{&job, &j.dataset, &*solver_run, rounded ? &*solver_run : nullptr, ExecConfigFor(job),
               adversary->get()};
  Party challenger{&job, &j.dataset, &*challenger_run, rounded ? &*solver_run : nullptr, ExecConfigFor(job, 2),
                   nullptr};
  auto loc = LocateDispute(solver, challenger);
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  EXPECT_EQ(loc->checkpoint_index, want_checkpoint);
  EXPECT_EQ(loc->step, want.step);
  EXPECT_EQ(loc->node, want.node) << "located " << loc->node_name;
  ASSERT_TRUE(loc->verdict.has_value());
  EXPECT_FALSE(loc->solver_right);
  EXPECT_TRUE(loc->challenger_right);
  if (spec->kind == AdversaryKind::kForgeLog) {
    EXPECT_EQ(loc->verdict->kind, NodeVerdictKind::kLogRejected);
  } else {
    EXPECT_EQ(loc->verdict->kind, NodeVerdictKind::kExecuted);
  }


  // The solver's own answers are consistent with its commitment: its
  // per-step hashes end at its committed checkpoint.
  auto a = AnswerStepHashes(solver, want_checkpoint);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->hashes.back(), summary->manifest.checkpoints[want_checkpoint].state_hash);

  // Each party's tree of h_{t+1} (the assemble node's walk) has the root its
  // assemble record outputs (where it has one: a strict replay of a forged
  // log stops before); at a wrong header the two differ in the header leaf alone.
  std::array<crypto::MerkleTree, 2> trees;
  std::size_t complete = 0;
  for (std::size_t side = 0; side < 2; ++side) {
    const Party& party = side == 0 ? solver : challenger;
    auto records = AnswerNodeRecords(party, want.step);
    ASSERT_TRUE(records.ok()) << records.status().ToString();
    if (!records->complete()) continue;
    auto tree = AnswerStateTree(party, want.step);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    EXPECT_EQ(tree->root(), records->records.back().output_hashes.at(0));
    trees[side] = std::move(tree).value();
    ++complete;
  }
  if (spec->kind == AdversaryKind::kWrongHeader) {
    ASSERT_EQ(complete, 2u);
    const std::uint64_t n = trees[0].leaf_count();
    for (std::uint64_t leaf = 0; leaf < n; ++leaf)
      EXPECT_EQ(trees[0].Leaf(leaf) == trees[1].Leaf(leaf), leaf + 1 < n) << "leaf " << leaf;
  }

  if (rounded) {
    // The challenger daemon's way (node/agent.h): follow the solver's logs to
    // the end, skipping entries a strict replay rejects. It has a complete run,
    // names the same first divergent checkpoint, and the dispute played from
    // that trajectory lands on the same step and node.
    test::TempDir full_dir;
    AuditOptions to_end = audit;
    to_end.own_run_dir = full_dir.path();
    to_end.skip_invalid_log_entries = true;
    to_end.to_the_end = true;
    auto full = Audit(job, j.dataset, *solver_run, *commitment, to_end);
    ASSERT_TRUE(full.ok()) << full.status().ToString();
    EXPECT_EQ(full->steps_replayed, job.spec.num_steps);
    EXPECT_TRUE(test::ManifestOf(full_dir.path()).Complete());
    if (spec->kind == AdversaryKind::kForgeLog) {
      EXPECT_GE(full->skipped_log_entries, 1u);
    }
    if (spec->kind == AdversaryKind::kForgeLog && full->agree()) {
      // The forged value did not reach any state (e.g. a negative value
      // bumped up before a ReLU): every committed checkpoint is right, so
      // there is nothing to dispute — only the strict audit sees the entry.
      EXPECT_EQ(test::ManifestOf(full_dir.path()).CheckpointHashes(), summary->manifest.CheckpointHashes());
      return;
    }
    ASSERT_EQ(full->verdict, AuditVerdict::kDiverged);
    EXPECT_EQ(full->first_divergent, want_checkpoint);
    auto full_run = RunDir::Open(full_dir.path(), false);
    Party lenient{&job, &j.dataset, &*full_run, &*solver_run, ExecConfigFor(job, 2), nullptr};
    lenient.skip_invalid_log_entries = true;
    auto loc2 = LocateDispute(solver, lenient);
    ASSERT_TRUE(loc2.ok()) << loc2.status().ToString();
    EXPECT_EQ(loc2->checkpoint_index, want_checkpoint);
    EXPECT_EQ(loc2->step, want.step);
    EXPECT_EQ(loc2->node, want.node) << "located " << loc2->node_name;
    EXPECT_FALSE(loc2->solver_right);
    EXPECT_TRUE(loc2->challenger_right);
  }
}

// Forward nodes whose first output something downstream reads (a wrong
// value there must reach the next state): candidates for wrong-output.
std::vector<std::uint64_t> ConsumedForwardNodes(Family f) {
  const graph::StepGraph g = test::GraphOf(test::MakeJob(f, "repops").job, 0);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < g.nodes.size() / 2; ++i) {
    bool consumed = false;
    for (std::size_t later = i + 1; later < g.nodes.size(); ++later) {
      for (const auto& in : g.nodes[later].inputs) {
        consumed |= in.source == graph::NodeInputSource::kNode && in.index == i && in.slot == 0;
      }
    }
    if (consumed) out.push_back(i);
  }
  return out;
}

// Steps and nodes are fixed per case except where the test seed picks them.
std::vector<Case> Cases() {
  std::mt19937_64 rng(vt::test::TestSeed());
  auto pick = [&](std::uint64_t n) { return std::to_string(std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng)); };
  auto pick_of = [&](const std::vector<std::uint64_t>& v) {
    return std::to_string(v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]);
  };
  const std::vector<std::uint64_t> mlp_nodes = ConsumedForwardNodes(Family::kMlp);
  const std::vector<std::uint64_t> cnn_nodes = ConsumedForwardNodes(Family::kCnn);
  // One random value of a random state tensor's new value, where the
  // node that produces it writes it (a value of an intermediate output may
  // be absorbed downstream — a relu, a rounding — and never reach a
  // checkpoint; one written to the next state always does).
  const graph::StepGraph mlp_graph = test::GraphOf(test::MakeJob(Family::kMlp, "repops").job, 0);
  std::vector<graph::NodeInput> produced;
  for (const graph::NodeInput& in : mlp_graph.next_state)
    if (in.source == graph::NodeInputSource::kNode) produced.push_back(in);
  const graph::NodeInput target = produced[std::uniform_int_distribution<std::size_t>(0, produced.size() - 1)(rng)];
  const auto value_numel = static_cast<std::uint64_t>(
      kernels::NumElements(mlp_graph.nodes[target.index].output_shapes.at(target.slot)));
  const std::string wrong_value = "wrong-value:step=" + pick(8) + ",node=" + std::to_string(target.index) +
                                  ",slot=" + std::to_string(target.slot) + ",element=" + pick(value_numel);
  return {
      {Family::kMlp, "repops", "wrong-lr:step=4,factor=10"},
      {Family::kMlp, "repops", "tamper-weight:step=" + pick(8)},
      {Family::kMlp, "repops", "skip-steps:step=2,count=2"},
      {Family::kMlp, "repops", "wrong-output:step=" + pick(8) + ",node=0"},
      {Family::kMlp, "repops", "poison-labels:fraction=0.05,seed=3"},
      {Family::kMlp, "rounded", "forge-log:step=" + pick(8) + ",node=0"},
      {Family::kMlp, "rounded", "wrong-lr:step=6,factor=0.5"},
      {Family::kMlp, "rounded", "tamper-weight:step=3,tensor=head.weight,element=5"},
      {Family::kMlp, "rounded", "poison-labels:fraction=0.1,seed=9"},
      {Family::kCnn, "repops", "tamper-weight:step=5"},
      {Family::kCnn, "repops", "skip-steps:step=" + pick(8)},
      {Family::kCnn, "repops", "wrong-output:step=1,node=" + pick_of(cnn_nodes)},
      {Family::kCnn, "rounded", "forge-log:step=7,node=0"},
      {Family::kCnn, "rounded", "wrong-lr:step=2,factor=3"},
      {Family::kGpt, "repops", "wrong-lr:step=" + pick(8) + ",factor=10"},
      {Family::kGpt, "repops", "poison-labels:fraction=0.1"},
      {Family::kGpt, "repops", "wrong-output:step=6,node=0"},
      {Family::kGpt, "rounded", "forge-log:step=5,node=0"},
      {Family::kGpt, "rounded", "tamper-weight:step=1"},
      {Family::kMlp, "native", "wrong-output:step=3,node=" + pick_of(mlp_nodes)},
      {Family::kMlp, "repops", wrong_value},
      {Family::kMlp, "repops", "wrong-header:step=" + pick(8)},
      {Family::kGpt, "rounded", "wrong-header:step=" + pick(8)},
      // Certified mode: no logs; the solver trains with 1 thread, the
      // challenger with 2, and the referee re-executes with the exact path.
      {Family::kMlp, "certified", "wrong-output:step=" + pick(8) + ",node=0"},
      {Family::kCnn, "certified", "wrong-output:step=2,node=" + pick_of(cnn_nodes)},
      {Family::kGpt, "certified", "tamper-weight:step=3"},
  };
}

INSTANTIATE_TEST_SUITE_P(Cheats, AdversaryTest, testing::ValuesIn(Cases()), CaseName);

TEST(AdversarySpecTest, ParsesAndRejects) {
  auto s = ParseAdversarySpec("tamper-weight:step=3,tensor=fc.0.weight,element=7");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, AdversaryKind::kTamperWeight);
  EXPECT_EQ(s->step, 3u);
  EXPECT_EQ(s->tensor, "fc.0.weight");
  EXPECT_EQ(s->element, 7u);
  EXPECT_EQ(ParseAdversarySpec("wrong-lr:step=1,factor=0.25")->factor, 0.25f);
  for (const char* bad : {"steal:step=1", "wrong-lr:step", "wrong-lr:step=x", "wrong-lr:speed=1",
                          "poison-labels:fraction=2", "skip-steps:count=0"}) {
    EXPECT_EQ(ParseAdversarySpec(bad).status().reason(), "adversary-bad-spec") << bad;
  }
  const LoadedJob j = test::MakeJob(Family::kMlp, "repops");
  EXPECT_EQ(MakeAdversary(*ParseAdversarySpec("wrong-lr:step=8"), j.job, j.dataset).status().reason(),
            "adversary-bad-spec");  // beyond the last step
  EXPECT_EQ(MakeAdversary(*ParseAdversarySpec("forge-log:step=1"), j.job, j.dataset).status().reason(),
            "adversary-bad-spec");  // not a rounded job
  EXPECT_EQ(MakeAdversary(*ParseAdversarySpec("steer-log:step=1"), j.job, j.dataset).status().reason(),
            "adversary-bad-spec");  // not a rounded job
  EXPECT_EQ(DescribeAdversary(*ParseAdversarySpec("steer-log:step=2")), "steer-log:step=2");
  const std::string wrong_value = "wrong-value:step=2,node=3,slot=1,element=17";
  auto wv = ParseAdversarySpec(wrong_value);
  ASSERT_TRUE(wv.ok()) << wv.status().ToString();
  EXPECT_EQ(wv->kind, AdversaryKind::kWrongValue);
  EXPECT_EQ(wv->slot, 1u);
  EXPECT_EQ(wv->element, 17u);
  EXPECT_EQ(DescribeAdversary(*wv), wrong_value);
  EXPECT_NE(ParseAdversarySpec("steal:step=1").status().detail().find("wrong-value"), std::string::npos)
      << "the error lists every kind";
  EXPECT_EQ(MakeAdversary(*ParseAdversarySpec("tamper-weight:step=1,tensor=nope"), j.job, j.dataset).status().reason(),
            "adversary-bad-spec");
  EXPECT_EQ(MakeAdversary(*ParseAdversarySpec("wrong-output:step=1,node=999"), j.job, j.dataset).status().reason(),
            "adversary-bad-spec");
}

TEST(AdversarySpecTest, PoisonChoosesAboutTheFraction) {
  AdversarySpec spec;
  spec.kind = AdversaryKind::kPoisonLabels;
  spec.fraction = 0.25;
  spec.seed = vt::test::TestSeed();
  const auto p = PoisonedExamples(spec, 4000);
  EXPECT_GT(p.size(), 800u);
  EXPECT_LT(p.size(), 1200u);
  EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
  EXPECT_EQ(PoisonedExamples(spec, 4000), p);
}

}  // namespace
}  // namespace vt::worker
