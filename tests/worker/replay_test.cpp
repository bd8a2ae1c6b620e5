// Audits and dispute answers of honest runs: agreement across thread counts,
// inconsistent claims, per-step hashes, node records, node inputs with
// proofs and single-node re-execution.

#include <gtest/gtest.h>

#include "tests/worker/train_fixtures.h"
#include "worker/commitment.h"
#include "worker/dispute.h"
#include "worker/replay.h"
#include "kernels/tensor_codec.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

using test::Family;

struct Param {
  Family family;
  const char* mode;
  // Rounded: the fp64 GEMM the solver records on (kAuto: this machine's
  // choice, kernels/blas_core.h).
  kernels::F64Gemm f64_gemm = kernels::F64Gemm::kAuto;
};

std::string ParamName(const testing::TestParamInfo<Param>& info) {
  std::string name = std::string(test::FamilyName(info.param.family)) + "_" + info.param.mode;
  if (info.param.f64_gemm != kernels::F64Gemm::kAuto)
    name += "_" + std::string(kernels::F64GemmName(info.param.f64_gemm));
  return name;
}

using SolverRun = test::SolverRun;

class AuditTest : public testing::TestWithParam<Param> {};

// Whichever fp64 GEMM a rounded solver records on, the challenger's replay
// (on the canonical reference) follows its logs to the same checkpoints.
TEST_P(AuditTest, AChallengerWithAnotherThreadCountAgreesEverywhere) {
  SolverRun solver(GetParam().family, GetParam().mode, 1, GetParam().f64_gemm);
  test::TempDir own;
  AuditOptions options;
  options.threads = 3;
  options.own_run_dir = own.path();
  auto report = Audit(solver.job.job, solver.job.dataset, solver.Run(), solver.commitment, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->agree()) << report->reason << " " << report->detail;
  EXPECT_EQ(report->checkpoints.size(), 4u);
  EXPECT_EQ(report->steps_replayed, 8u);
  for (const CheckpointComparison& c : report->checkpoints) EXPECT_TRUE(c.match());
  // The challenger kept its own run: the same checkpoints.
  EXPECT_EQ(test::ManifestOf(own.path()).CheckpointHashes(), solver.manifest.CheckpointHashes());
}

INSTANTIATE_TEST_SUITE_P(Families, AuditTest,
                         testing::Values(Param{Family::kMlp, "repops"}, Param{Family::kMlp, "rounded"},
                                         Param{Family::kCnn, "repops"}, Param{Family::kCnn, "rounded"},
                                         Param{Family::kGpt, "repops"}, Param{Family::kGpt, "rounded"},
                                         Param{Family::kMlp, "rounded", kernels::F64Gemm::kVendor},
                                         Param{Family::kMlp, "rounded", kernels::F64Gemm::kReference},
                                         Param{Family::kCnn, "rounded", kernels::F64Gemm::kVendor},
                                         Param{Family::kCnn, "rounded", kernels::F64Gemm::kReference},
                                         Param{Family::kGpt, "rounded", kernels::F64Gemm::kVendor},
                                         Param{Family::kGpt, "rounded", kernels::F64Gemm::kReference}),
                         ParamName);

TEST(AuditTest, InconsistentClaimsAreReported) {
  SolverRun solver(Family::kMlp, "rounded");
  RunDir run = solver.Run();
  // A commitment for another job.
  const LoadedJob other = test::MakeJob(Family::kMlp, "repops");
  auto report = Audit(other.job, other.dataset, run, solver.commitment);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->verdict, AuditVerdict::kClaimInvalid);
  EXPECT_EQ(report->reason, "commitment-job-mismatch");
  // A bad signature.
  protocol::Commitment forged = solver.commitment;
  forged.signature[3] ^= 1;
  report = Audit(solver.job.job, solver.job.dataset, run, forged);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->reason, "commitment-bad-signature");
  // A manifest that does not match the signed root.
  RunManifest m = solver.manifest;
  m.checkpoints[2].state_hash.bytes[0] ^= 1;
  ASSERT_TRUE(run.SaveManifest(m).ok());
  report = Audit(solver.job.job, solver.job.dataset, run, solver.commitment);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->verdict, AuditVerdict::kClaimInvalid);
  EXPECT_EQ(report->reason, "commitment-checkpoint-mismatch");
  ASSERT_TRUE(run.SaveManifest(solver.manifest).ok());
  // A corrupted manifest file.
  test::WriteBytes(run.ManifestPath(), AsBytes("[]"));
  report = Audit(solver.job.job, solver.job.dataset, run, solver.commitment);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->reason, "run-manifest-corrupt");
}

TEST(AuditTest, DamagedOrMissingLogsAreADivergenceAtTheirInterval) {
  SolverRun solver(Family::kMlp, "rounded");
  RunDir run = solver.Run();
  const Bytes good = test::ReadAll(run.LogPath(1));
  Bytes bad = good;
  bad[bad.size() - 5] ^= 0x40;
  test::WriteBytes(run.LogPath(1), bad);
  auto report = Audit(solver.job.job, solver.job.dataset, run, solver.commitment);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->verdict, AuditVerdict::kDiverged);
  EXPECT_EQ(report->reason, "log-file-corrupt");
  EXPECT_EQ(report->first_divergent, 2u);
  EXPECT_EQ(report->checkpoints.size(), 2u);  // 0 and 1 agreed
  std::filesystem::remove(run.LogPath(1));
  report = Audit(solver.job.job, solver.job.dataset, run, solver.commitment);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->reason, "file-not-found");
  EXPECT_EQ(report->first_divergent, 2u);
}

TEST(AuditTest, WrongDatasetIsAnError) {
  SolverRun solver(Family::kMlp, "repops");
  const Dataset small = SyntheticClassification(11, 10, 16, 4);
  EXPECT_EQ(Audit(solver.job.job, small, solver.Run(), solver.commitment).status().reason(), "job-dataset-mismatch");
}

// ---- dispute answers of an honest run ----------------------------------------------------

class DisputeAnswersTest : public testing::TestWithParam<Param> {};

TEST_P(DisputeAnswersTest, StepHashesAndNodeRecordsAreConsistent) {
  SolverRun solver(GetParam().family, GetParam().mode);
  RunDir run = solver.Run();
  const Job& job = solver.job.job;
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  Party party{&job, &solver.job.dataset, &run, rounded ? &run : nullptr, ExecConfigFor(job, 2), nullptr};

  // (a) every interval: k+1 hashes from checkpoint j-1 to checkpoint j.
  for (std::uint64_t j = 1; j < 4; ++j) {
    auto a = AnswerStepHashes(party, j);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(a->complete());
    const std::uint64_t s0 = solver.manifest.checkpoints[j - 1].step;
    const std::uint64_t s1 = solver.manifest.checkpoints[j].step;
    EXPECT_EQ(a->first_step, s0);
    ASSERT_EQ(a->hashes.size(), s1 - s0 + 1);
    EXPECT_EQ(a->hashes.front(), solver.manifest.checkpoints[j - 1].state_hash);
    EXPECT_EQ(a->hashes.back(), solver.manifest.checkpoints[j].state_hash);
  }
  EXPECT_EQ(AnswerStepHashes(party, 0).status().reason(), "dispute-bad-checkpoint");
  EXPECT_EQ(AnswerStepHashes(party, 4).status().reason(), "dispute-bad-checkpoint");

  // (b) the records of step 4: the graph's nodes in order, then assemble.
  auto a = AnswerStepHashes(party, 2);  // steps 3..6
  auto b = AnswerNodeRecords(party, 4);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(b->complete());
  const kernels::graph::StepGraph g = test::GraphOf(job, 4);
  ASSERT_EQ(b->records.size(), g.nodes.size() + 1);
  EXPECT_EQ(b->state_hash, a->hashes[1]);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const protocol::NodeRecord& r = b->records[i];
    EXPECT_EQ(r.op_kind, static_cast<std::uint16_t>(g.nodes[i].kind));
    EXPECT_EQ(r.attrs, EncodeToBytes(g.nodes[i].attrs));
    ASSERT_EQ(r.inputs.size(), g.nodes[i].inputs.size());
    EXPECT_EQ(r.output_hashes.size(), g.nodes[i].num_outputs());
    EXPECT_EQ(r.log_hash.IsZero(), !rounded);
    EXPECT_EQ(b->names[i], g.nodes[i].name);
  }
  const protocol::NodeRecord& assemble = b->records.back();
  EXPECT_EQ(assemble.op_kind, kAssembleOpKind);
  ASSERT_EQ(assemble.output_hashes.size(), 1u);
  EXPECT_EQ(assemble.output_hashes[0], a->hashes[2]);  // h_5
  EXPECT_TRUE(assemble.log_hash.IsZero());
  EXPECT_EQ(b->Root(), crypto::MerkleRoot(b->LeafHashes()));
  // Deterministic: asked again (with another thread count), the same answer.
  party.config.threads = 1;
  auto again = AnswerNodeRecords(party, 4);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->Root(), b->Root());
}

TEST_P(DisputeAnswersTest, EveryNodeReexecutesFromItsExportedInputs) {
  SolverRun solver(GetParam().family, GetParam().mode);
  RunDir run = solver.Run();
  const Job& job = solver.job.job;
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  Party party{&job, &solver.job.dataset, &run, rounded ? &run : nullptr, ExecConfigFor(job), nullptr};
  const std::uint64_t step = 7;  // in the short last interval
  auto records = AnswerNodeRecords(party, step);
  ASSERT_TRUE(records.ok());
  for (std::uint64_t i = 0; i < records->records.size(); ++i) {
    auto inputs = AnswerNodeInputs(party, step, i);
    ASSERT_TRUE(inputs.ok()) << "node " << i << ": " << inputs.status().ToString();
    EXPECT_EQ(inputs->record, records->records[i]);
    EXPECT_EQ(inputs->node_root, records->Root());
    // (d) the proofs check out and the node alone reproduces its record.
    auto verdict = ReexecuteNode(job, *inputs);
    ASSERT_TRUE(verdict.ok()) << "node " << i << ": " << verdict.status().ToString();
    EXPECT_EQ(verdict->kind, NodeVerdictKind::kExecuted) << verdict->detail;
    EXPECT_TRUE(verdict->Confirms(records->records[i], rounded)) << "node " << i << " " << inputs->node_name;
    if (rounded && i + 1 < records->records.size()) {
      EXPECT_TRUE(VerifyLogChain(job, *inputs, solver.commitment.log_root).ok());
    }
    // The file form round-trips.
    auto back = DecodeNodeInputsFile(EncodeNodeInputsFile(*inputs));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, *inputs);
  }
}

TEST_P(DisputeAnswersTest, TamperedExportsAreRejected) {
  SolverRun solver(GetParam().family, GetParam().mode);
  RunDir run = solver.Run();
  const Job& job = solver.job.job;
  const bool rounded = job.mode() == kernels::Mode::kRounded;
  Party party{&job, &solver.job.dataset, &run, rounded ? &run : nullptr, ExecConfigFor(job), nullptr};
  const std::uint64_t step = 2;
  // The first node that reads the state and the batch, and one that reads an earlier node.
  const kernels::graph::StepGraph g = test::GraphOf(job, step);
  std::optional<std::uint64_t> state_node, batch_node, node_node;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& in : g.nodes[i].inputs) {
      if (in.source == kernels::graph::NodeInputSource::kState && !state_node) state_node = i;
      if (in.source == kernels::graph::NodeInputSource::kBatch && !batch_node) batch_node = i;
      if (in.source == kernels::graph::NodeInputSource::kNode && !node_node) node_node = i;
    }
  }
  ASSERT_TRUE(state_node && batch_node && node_node);

  auto first_of = [&](std::uint64_t node, kernels::graph::NodeInputSource src) {
    for (std::size_t k = 0; k < g.nodes[node].inputs.size(); ++k) {
      if (g.nodes[node].inputs[k].source == src) return k;
    }
    return std::size_t{0};
  };
  auto reason = [&](const NodeInputs& ex) { return ReexecuteNode(job, ex).status().reason(); };

  auto s = AnswerNodeInputs(party, step, *state_node);
  ASSERT_TRUE(s.ok());
  {
    NodeInputs ex = *s;
    const std::size_t k = first_of(*state_node, kernels::graph::NodeInputSource::kState);
    Reader r(ex.inputs[k].tensor);
    kernels::Tensor t = std::move(kernels::DecodeTensor(r)).value();
    t[0] += 1.0f;
    ex.inputs[k].tensor = kernels::EncodeTensor(t);
    EXPECT_EQ(reason(ex), "arb-bad-input-proof");
  }
  {
    NodeInputs ex = *s;
    ex.header.step += 1;
    EXPECT_EQ(reason(ex), "arb-bad-header");
  }
  {
    NodeInputs ex = *s;
    ex.inputs.pop_back();
    EXPECT_EQ(reason(ex), "arb-bad-input-count");
  }
  auto b = AnswerNodeInputs(party, step, *batch_node);
  ASSERT_TRUE(b.ok());
  {
    NodeInputs ex = *b;
    ASSERT_FALSE(ex.examples.empty());
    ex.examples[0].leaf.back() ^= 1;
    EXPECT_EQ(reason(ex), "arb-bad-examples");
    ex = *b;
    std::swap(ex.examples[0], ex.examples.back());  // right examples, wrong order
    if (ex.examples[0].leaf != b->examples[0].leaf) {
      EXPECT_EQ(reason(ex), "arb-bad-examples");
    }
  }
  auto n = AnswerNodeInputs(party, step, *node_node);
  ASSERT_TRUE(n.ok());
  {
    NodeInputs ex = *n;
    const std::size_t k = first_of(*node_node, kernels::graph::NodeInputSource::kNode);
    ex.inputs[k].producer->output_hashes[0].bytes[0] ^= 1;
    EXPECT_EQ(reason(ex), "arb-bad-producer");
    ex = *n;
    Reader r(ex.inputs[k].tensor);
    kernels::Tensor t = std::move(kernels::DecodeTensor(r)).value();
    t[0] = -t[0] + 0.5f;
    ex.inputs[k].tensor = kernels::EncodeTensor(t);
    EXPECT_EQ(reason(ex), "arb-bad-input-tensor");
  }
  if (rounded) {
    NodeInputs ex = *n;
    ex.log_chain->step_log_root.bytes[0] ^= 1;
    EXPECT_EQ(VerifyLogChain(job, ex, solver.commitment.log_root).reason(), "arb-bad-log-proof");
  }
  Bytes file = EncodeNodeInputsFile(*n);
  file.resize(file.size() - 1);
  EXPECT_EQ(DecodeNodeInputsFile(file).status().reason(), "node-inputs-corrupt");
}

INSTANTIATE_TEST_SUITE_P(Families, DisputeAnswersTest,
                         testing::Values(Param{Family::kMlp, "repops"}, Param{Family::kMlp, "rounded"},
                                         Param{Family::kCnn, "repops"}, Param{Family::kCnn, "rounded"},
                                         Param{Family::kGpt, "repops"}, Param{Family::kGpt, "rounded"},
                                         Param{Family::kMlp, "native"}),
                         ParamName);

TEST(DisputeTest, HonestPartiesHaveNothingToDispute) {
  SolverRun solver(Family::kMlp, "repops");
  RunDir run = solver.Run();
  test::TempDir own;
  AuditOptions options;
  options.own_run_dir = own.path();
  ASSERT_TRUE(Audit(solver.job.job, solver.job.dataset, run, solver.commitment, options)->agree());
  auto own_run = RunDir::Open(own.path(), false);
  const Job& job = solver.job.job;
  Party s{&job, &solver.job.dataset, &run, nullptr, ExecConfigFor(job), nullptr};
  Party c{&job, &solver.job.dataset, &*own_run, nullptr, ExecConfigFor(job, 2), nullptr};
  EXPECT_EQ(LocateDispute(s, c).status().reason(), "dispute-no-divergence");
}

}  // namespace
}  // namespace vt::worker
