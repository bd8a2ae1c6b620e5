// The training loop: determinism across thread counts, checkpoints, resume,
// corrupted files, interval logs, manifests and commitments.

#include <gtest/gtest.h>

#include <random>

#include "tests/support/test_seed.h"
#include "tests/worker/train_fixtures.h"
#include "worker/checkpoint_store.h"
#include "worker/commitment.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

using test::Family;

struct Param {
  Family family;
  const char* mode;
};

std::string ParamName(const testing::TestParamInfo<Param>& info) {
  return std::string(test::FamilyName(info.param.family)) + "_" + info.param.mode;
}

const std::vector<Param> kAll = {
    {Family::kMlp, "native"}, {Family::kMlp, "repops"}, {Family::kMlp, "rounded"},
    {Family::kCnn, "native"}, {Family::kCnn, "repops"}, {Family::kCnn, "rounded"},
    {Family::kGpt, "native"}, {Family::kGpt, "repops"}, {Family::kGpt, "rounded"},
};

class TrainTest : public testing::TestWithParam<Param> {};

TEST_P(TrainTest, CheckpointsAtEveryIntervalAndAtTheEnd) {
  const LoadedJob j = test::MakeJob(GetParam().family, GetParam().mode);
  test::TempDir dir;
  auto summary = Train(j.job, j.dataset, dir.path());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_TRUE(summary->complete);
  EXPECT_EQ(summary->steps_run, 8u);
  const RunManifest& m = summary->manifest;
  ASSERT_EQ(m.checkpoints.size(), 4u);
  const std::vector<std::uint64_t> steps = {0, 3, 6, 8};
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(m.checkpoints[i].step, steps[i]);
  EXPECT_EQ(m.losses.size(), 8u);
  for (float loss : m.losses) EXPECT_TRUE(std::isfinite(loss));
  const bool rounded = std::string(GetParam().mode) == "rounded";
  ASSERT_EQ(m.logs.size(), rounded ? 3u : 0u);
  if (rounded) {
    EXPECT_EQ(m.logs[2].first_step, 6u);
    EXPECT_EQ(m.logs[2].steps, 2u);
    EXPECT_GT(summary->values_rounded, 0u);
  }
  // The manifest on disk is the one returned, and every checkpoint reads
  // back to a state with that hash and step.
  EXPECT_EQ(test::ManifestOf(dir.path()), m);
  auto run = RunDir::Open(dir.path(), false);
  ASSERT_TRUE(run.ok());
  for (const CheckpointEntry& e : m.checkpoints) {
    auto state = LoadCheckpoint(*run, m, e.index);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    EXPECT_EQ(StateHash(*state), e.state_hash);
    EXPECT_EQ(state->step, e.step);
    EXPECT_EQ(state->cursor, CursorAt(e.step * j.job.spec.batch_size, j.dataset.size()));
  }
}

TEST_P(TrainTest, StepEngineReproducesTheCheckpoints) {
  const LoadedJob j = test::MakeJob(GetParam().family, GetParam().mode);
  test::TempDir dir;
  auto summary = Train(j.job, j.dataset, dir.path());
  ASSERT_TRUE(summary.ok());
  StepEngine engine(j.job, j.dataset, ExecConfigFor(j.job));
  auto state = engine.InitialState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(StateHash(*state), summary->manifest.checkpoints[0].state_hash);
  std::size_t next = 1;
  for (std::uint64_t s = 0; s < 8; ++s) {
    auto outcome = engine.Step(*state);
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_EQ(outcome->result.loss, summary->manifest.losses[s]);
    if (state->step == summary->manifest.checkpoints[next].step) {
      EXPECT_EQ(StateHash(*state), summary->manifest.checkpoints[next].state_hash) << "step " << state->step;
      ++next;
    }
  }
  EXPECT_EQ(next, 4u);
}

INSTANTIATE_TEST_SUITE_P(Families, TrainTest, testing::ValuesIn(kAll), ParamName);

// Repops and rounded results never depend on the thread count (the OpenBLAS
// core-type axis is in cli_test.cpp, which needs separate processes).
class ThreadsTest : public testing::TestWithParam<Param> {};

TEST_P(ThreadsTest, SameCheckpointsAndLogsWithOneOrThreeThreads) {
  const LoadedJob j = test::MakeJob(GetParam().family, GetParam().mode);
  test::TempDir a, b;
  TrainOptions one, three;
  three.threads = 3;
  auto ra = Train(j.job, j.dataset, a.path(), one);
  auto rb = Train(j.job, j.dataset, b.path(), three);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->manifest.CheckpointHashes(), rb->manifest.CheckpointHashes());
  EXPECT_EQ(ra->manifest.IntervalLogHashes(), rb->manifest.IntervalLogHashes());
  EXPECT_EQ(ra->manifest.losses, rb->manifest.losses);
}

INSTANTIATE_TEST_SUITE_P(Deterministic, ThreadsTest,
                         testing::Values(Param{Family::kMlp, "repops"}, Param{Family::kMlp, "rounded"},
                                         Param{Family::kCnn, "repops"}, Param{Family::kCnn, "rounded"},
                                         Param{Family::kGpt, "repops"}, Param{Family::kGpt, "rounded"}),
                         ParamName);

// ---- resume --------------------------------------------------------------------------

class ResumeTest : public testing::TestWithParam<Param> {};

TEST_P(ResumeTest, ResumingFromAnyCheckpointContinuesIdentically) {
  const LoadedJob j = test::MakeJob(GetParam().family, GetParam().mode);
  test::TempDir full;
  auto reference = Train(j.job, j.dataset, full.path());
  ASSERT_TRUE(reference.ok());
  for (const CheckpointEntry& c : reference->manifest.checkpoints) {
    test::TempDir copy;
    std::filesystem::copy(full.path(), copy.path(), std::filesystem::copy_options::recursive |
                                                        std::filesystem::copy_options::overwrite_existing);
    TrainOptions options;
    options.resume = true;
    options.resume_step = c.step;
    auto resumed = Train(j.job, j.dataset, copy.path(), options);
    ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
    EXPECT_EQ(resumed->steps_run, 8 - c.step);
    EXPECT_EQ(resumed->manifest, reference->manifest) << "resumed from step " << c.step;
  }
}

TEST_P(ResumeTest, AnInterruptedRunResumesToTheSameCommitment) {
  const LoadedJob j = test::MakeJob(GetParam().family, GetParam().mode);
  test::TempDir full, interrupted;
  auto reference = Train(j.job, j.dataset, full.path());
  ASSERT_TRUE(reference.ok());
  TrainOptions stop;
  stop.stop_at_step = 5;  // between checkpoints 3 and 6: steps 3, 4 are redone
  auto part = Train(j.job, j.dataset, interrupted.path(), stop);
  ASSERT_TRUE(part.ok());
  EXPECT_FALSE(part->complete);
  EXPECT_EQ(part->manifest.checkpoints.size(), 2u);
  EXPECT_EQ(BuildCommitment(0, j.job.spec, part->manifest).status().reason(), "commitment-incomplete-run");
  TrainOptions resume;
  resume.resume = true;
  auto rest = Train(j.job, j.dataset, interrupted.path(), resume);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->steps_run, 5u);
  EXPECT_EQ(rest->manifest, reference->manifest);
  auto c1 = BuildCommitment(7, j.job.spec, reference->manifest);
  auto c2 = BuildCommitment(7, j.job.spec, rest->manifest);
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_EQ(*c1, *c2);
}

INSTANTIATE_TEST_SUITE_P(Families, ResumeTest,
                         testing::Values(Param{Family::kMlp, "repops"}, Param{Family::kMlp, "rounded"},
                                         Param{Family::kCnn, "rounded"}, Param{Family::kGpt, "repops"},
                                         Param{Family::kGpt, "native"}),
                         ParamName);

TEST(TrainerTest, RefusesToOverwriteOrMixJobs) {
  const LoadedJob mlp = test::MakeJob(Family::kMlp, "repops");
  const LoadedJob other = test::MakeJob(Family::kMlp, "rounded");
  test::TempDir dir;
  ASSERT_TRUE(Train(mlp.job, mlp.dataset, dir.path()).ok());
  EXPECT_EQ(Train(mlp.job, mlp.dataset, dir.path()).status().reason(), "run-exists");
  EXPECT_EQ(Train(other.job, other.dataset, dir.path()).status().reason(), "run-job-mismatch");
  TrainOptions resume;
  resume.resume = true;
  resume.resume_step = 4;  // not a checkpoint step
  EXPECT_EQ(Train(mlp.job, mlp.dataset, dir.path(), resume).status().reason(), "resume-no-checkpoint");
}

TEST(TrainerTest, TrainingReducesTheLoss) {
  auto job = ParseJobJson(test::JobJson(Family::kMlp, "repops", 60, 20));
  ASSERT_TRUE(job.ok());
  auto data = LoadJobDataset(*job);
  ASSERT_TRUE(ResolveDataset(*job, *data).ok());
  test::TempDir dir;
  auto summary = Train(*job, *data, dir.path());
  ASSERT_TRUE(summary.ok());
  const auto& l = summary->manifest.losses;
  const double first = (l[0] + l[1] + l[2] + l[3]) / 4.0;
  const double last = (l[56] + l[57] + l[58] + l[59]) / 4.0;
  EXPECT_LT(last, 0.8 * first) << "first " << first << " last " << last;
}

// ---- corrupted checkpoints -------------------------------------------------------------

TEST(TrainerTest, CorruptedTruncatedAndMissingCheckpointsAreDetected) {
  const LoadedJob j = test::MakeJob(Family::kMlp, "repops");
  test::TempDir dir;
  auto summary = Train(j.job, j.dataset, dir.path());
  ASSERT_TRUE(summary.ok());
  auto run = RunDir::Open(dir.path(), false);
  ASSERT_TRUE(run.ok());
  const RunManifest& m = summary->manifest;
  const std::filesystem::path file = run->checkpoints().PathFor(m.checkpoints[2].state_hash);
  const Bytes good = test::ReadAll(file);
  std::mt19937_64 rng(vt::test::TestSeed());

  // Flip one random bit anywhere in the file: the read must fail, never
  // return a different state.
  for (int trial = 0; trial < 8; ++trial) {
    Bytes bad = good;
    const std::size_t at = std::uniform_int_distribution<std::size_t>(0, bad.size() - 1)(rng);
    bad[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    test::WriteBytes(file, bad);
    auto state = LoadCheckpoint(*run, m, 2);
    ASSERT_FALSE(state.ok()) << "bit flip at byte " << at;
    EXPECT_TRUE(state.status().reason() == "checkpoint-corrupt" || state.status().reason() == "checkpoint-truncated")
        << state.status().ToString();
    // Resuming from it fails with the same reason.
    TrainOptions resume;
    resume.resume = true;
    resume.resume_step = 6;
    EXPECT_EQ(Train(j.job, j.dataset, dir.path(), resume).status().reason(), state.status().reason());
  }
  test::WriteBytes(file, ByteSpan(good).first(good.size() / 2));
  EXPECT_EQ(LoadCheckpoint(*run, m, 2).status().reason(), "checkpoint-truncated");
  std::filesystem::remove(file);
  EXPECT_EQ(LoadCheckpoint(*run, m, 2).status().reason(), "checkpoint-not-found");
  EXPECT_EQ(LoadCheckpoint(*run, m, 9).status().reason(), "checkpoint-not-in-run");
  // A good copy repairs the run.
  test::WriteBytes(file, good);
  EXPECT_TRUE(LoadCheckpoint(*run, m, 2).ok());
}

// ---- interval logs and manifests ---------------------------------------------------------

TEST(RunDirTest, IntervalLogFilesRoundTripAndRejectDamage) {
  const LoadedJob j = test::MakeJob(Family::kMlp, "rounded");
  test::TempDir dir;
  auto summary = Train(j.job, j.dataset, dir.path());
  ASSERT_TRUE(summary.ok());
  auto run = RunDir::Open(dir.path(), false);
  const IntervalLogEntry& e = summary->manifest.logs[1];
  auto logs = run->LoadIntervalLogs(e);
  ASSERT_TRUE(logs.ok()) << logs.status().ToString();
  EXPECT_EQ(logs->first_step, 3u);
  EXPECT_EQ(logs->steps.size(), 3u);
  EXPECT_EQ(IntervalLogHash(*logs), e.hash);
  EXPECT_EQ(CountLogEntries(*logs), e.entries);
  EXPECT_GT(e.entries, 0u);
  // The interval hash is the root over the step roots, each the root over
  // the node log hashes.
  std::vector<Hash256> step_roots;
  for (const auto& step : logs->steps) {
    std::vector<Hash256> node_hashes;
    for (const auto& l : step) node_hashes.push_back(kernels::HashRoundingLog(l));
    step_roots.push_back(crypto::MerkleRoot(node_hashes));
  }
  EXPECT_EQ(crypto::MerkleRoot(step_roots), e.hash);

  const Bytes file = EncodeIntervalLogFile(*logs);
  auto back = DecodeIntervalLogFile(file);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *logs);
  EXPECT_EQ(DecodeIntervalLogFile(ByteSpan(file).first(40)).status().reason(), "log-file-truncated");
  EXPECT_EQ(DecodeIntervalLogFile(ByteSpan(file).first(file.size() - 3)).status().reason(), "log-file-truncated");
  Bytes bad_magic = file;
  bad_magic[0] = 'X';
  EXPECT_EQ(DecodeIntervalLogFile(bad_magic).status().reason(), "log-file-corrupt");
  Bytes bad_hash = file;
  bad_hash[40] ^= 1;
  EXPECT_EQ(DecodeIntervalLogFile(bad_hash).status().reason(), "log-file-corrupt");
  Bytes bad_data = file;
  bad_data[file.size() - 6] ^= 0x10;  // inside the frame (its checksum catches it)
  EXPECT_EQ(DecodeIntervalLogFile(bad_data).status().reason(), "log-file-corrupt");
  // A valid file of another interval is not the one the manifest names.
  std::filesystem::copy_file(run->LogPath(0), run->LogPath(1), std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(run->LoadIntervalLogs(e).status().reason(), "log-file-mismatch");
}

TEST(RunDirTest, ManifestRoundTripAndCorruption) {
  const LoadedJob j = test::MakeJob(Family::kMlp, "rounded");
  test::TempDir dir;
  auto summary = Train(j.job, j.dataset, dir.path());
  ASSERT_TRUE(summary.ok());
  auto back = ManifestFromJson(ManifestToJson(summary->manifest));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, summary->manifest);
  for (const char* bad : {"", "{}", "[1]", R"({"version": 1})", "{\"version\": 1, \"job_hash\": \"zz\"}"}) {
    EXPECT_EQ(ManifestFromJson(bad).status().reason(), "run-manifest-corrupt") << bad;
  }
  // Checkpoints out of order.
  RunManifest m = summary->manifest;
  std::swap(m.checkpoints[1], m.checkpoints[2]);
  EXPECT_EQ(ManifestFromJson(ManifestToJson(m)).status().reason(), "run-manifest-corrupt");
  auto run = RunDir::Open(dir.path(), false);
  test::WriteBytes(run->ManifestPath(), AsBytes("{not json"));
  EXPECT_EQ(run->LoadManifest().status().reason(), "run-manifest-corrupt");
  std::filesystem::remove(run->ManifestPath());
  EXPECT_EQ(run->LoadManifest().status().reason(), "run-no-manifest");
  EXPECT_EQ(RunDir::Open(dir / "nope", false).status().reason(), "run-dir-missing");
}

// ---- commitments -----------------------------------------------------------------------

TEST(CommitmentTest, BuildSignVerifyAndDetectTampering) {
  for (const char* mode : {"repops", "rounded"}) {
    const LoadedJob j = test::MakeJob(Family::kMlp, mode);
    test::TempDir dir;
    auto summary = Train(j.job, j.dataset, dir.path());
    ASSERT_TRUE(summary.ok());
    const RunManifest& m = summary->manifest;
    auto c = BuildCommitment(42, j.job.spec, m);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->bounty_id, 42u);
    EXPECT_EQ(c->job_hash, j.job.Hash());
    EXPECT_EQ(c->checkpoint_root, crypto::MerkleRoot(m.CheckpointHashes()));
    EXPECT_EQ(c->final_state_hash, m.checkpoints.back().state_hash);
    if (std::string(mode) == "rounded") {
      EXPECT_EQ(c->log_root, crypto::MerkleRoot(m.IntervalLogHashes()));
      EXPECT_FALSE(c->log_root.IsZero());
    } else {
      EXPECT_TRUE(c->log_root.IsZero());
    }
    auto key = crypto::SecretKey::Generate();
    ASSERT_TRUE(key.ok());
    EXPECT_EQ(VerifyCommitmentSignature(*c).reason(), "commitment-bad-signature");  // unsigned
    ASSERT_TRUE(SignCommitment(*c, *key).ok());
    EXPECT_TRUE(CheckCommitment(*c, j.job.spec, m).ok());
    EXPECT_EQ(c->solver, key->public_key().bytes());

    // Any field changed after signing breaks the signature …
    protocol::Commitment forged = *c;
    forged.final_state_hash.bytes[0] ^= 1;
    EXPECT_EQ(CheckCommitment(forged, j.job.spec, m).reason(), "commitment-bad-signature");
    // … and a re-signed wrong claim does not match the run.
    ASSERT_TRUE(SignCommitment(forged, *key).ok());
    EXPECT_EQ(CheckCommitment(forged, j.job.spec, m).reason(), "commitment-final-mismatch");
    forged = *c;
    forged.checkpoint_root.bytes[5] ^= 1;
    ASSERT_TRUE(SignCommitment(forged, *key).ok());
    EXPECT_EQ(CheckCommitment(forged, j.job.spec, m).reason(), "commitment-checkpoint-mismatch");
    forged = *c;
    forged.log_root.bytes[5] ^= 1;
    ASSERT_TRUE(SignCommitment(forged, *key).ok());
    EXPECT_EQ(CheckCommitment(forged, j.job.spec, m).reason(), "commitment-log-mismatch");
    forged = *c;
    forged.job_hash.bytes[5] ^= 1;
    ASSERT_TRUE(SignCommitment(forged, *key).ok());
    EXPECT_EQ(CheckCommitment(forged, j.job.spec, m).reason(), "commitment-job-mismatch");

    // Files.
    ASSERT_TRUE(SaveCommitment(dir / "c.bin", *c).ok());
    auto loaded = LoadCommitment(dir / "c.bin");
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(*loaded, *c);
    const Bytes bytes = test::ReadAll(dir / "c.bin");
    test::WriteBytes(dir / "short.bin", ByteSpan(bytes).first(bytes.size() - 1));
    EXPECT_EQ(LoadCommitment(dir / "short.bin").status().reason(), "commitment-corrupt");
    EXPECT_EQ(LoadCommitment(dir / "none.bin").status().reason(), "file-not-found");
    // The tree's first and last leaves are h_0 and h_N (what CommitArgs proves).
    const crypto::MerkleTree tree = CheckpointTree(m);
    EXPECT_EQ(tree.root(), c->checkpoint_root);
    EXPECT_TRUE(crypto::VerifyMerkleProof(c->checkpoint_root, m.checkpoints.front().state_hash, tree.Prove(0)).ok());
    EXPECT_TRUE(crypto::VerifyMerkleProof(c->checkpoint_root, c->final_state_hash, tree.Prove(m.checkpoints.size() - 1)).ok());
  }
}

}  // namespace
}  // namespace vt::worker
