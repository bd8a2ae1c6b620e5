// The log bundle a rounded-mode solver publishes: a challenger that unpacks
// it audits the solver's run exactly as from the solver's own directory, and
// every damaged, truncated or substituted bundle is refused before anything
// is written.

#include <gtest/gtest.h>

#include "tests/worker/train_fixtures.h"
#include "worker/commitment.h"
#include "worker/log_bundle.h"
#include "worker/replay.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

using test::Family;

// A rounded-mode solver run with its signed commitment.
struct RoundedRun : test::SolverRun {
  RoundedRun() : SolverRun(Family::kMlp, "rounded") {}
};

TEST(LogBundle, AChallengerAuditsFromTheUnpackedBundle) {
  RoundedRun solver;
  ASSERT_FALSE(solver.manifest.logs.empty());
  auto bundle = ExportLogBundle(solver.Run());
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();

  test::TempDir unpacked, own;
  auto manifest = ImportLogBundle(*bundle, unpacked.path());
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(*manifest, solver.manifest);
  auto run = RunDir::Open(unpacked.path(), false);
  ASSERT_TRUE(run.ok());
  // The unpacked directory holds exactly the solver's log files.
  for (const IntervalLogEntry& e : solver.manifest.logs)
    EXPECT_EQ(test::ReadAll(run->LogPath(e.index)), test::ReadAll(solver.Run().LogPath(e.index)));

  AuditOptions options;
  options.threads = 2;
  options.own_run_dir = own.path();
  auto report = Audit(solver.job.job, solver.job.dataset, *run, solver.commitment, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->agree()) << report->reason << " " << report->detail;
  EXPECT_EQ(report->steps_replayed, solver.job.job.spec.num_steps);

  // Importing the same bundle again is harmless.
  EXPECT_TRUE(ImportLogBundle(*bundle, unpacked.path()).ok());
}

TEST(LogBundle, DamagedBundlesAreRefusedWithoutWriting) {
  RoundedRun solver;
  auto bundle = ExportLogBundle(solver.Run());
  ASSERT_TRUE(bundle.ok());
  auto refused = [&](const Bytes& bytes) {
    test::TempDir target;
    auto r = ImportLogBundle(bytes, target.path() / "run");
    EXPECT_FALSE(std::filesystem::exists(target.path() / "run" / "run.json")) << "nothing written on failure";
    return r.ok() ? std::string("ok") : r.status().reason();
  };
  // Every truncation.
  for (std::size_t len = 0; len < bundle->size(); len += 1 + len / 7)
    EXPECT_NE(refused(Bytes(bundle->begin(), bundle->begin() + static_cast<std::ptrdiff_t>(len))), "ok") << len;
  // Trailing garbage, a bad magic, an unknown version.
  Bytes longer = *bundle;
  longer.push_back(0);
  EXPECT_EQ(refused(longer), "log-bundle-corrupt");
  Bytes bad = *bundle;
  bad[0] = 'X';
  EXPECT_EQ(refused(bad), "log-bundle-corrupt");
  bad = *bundle;
  bad[4] = 9;
  EXPECT_EQ(refused(bad), "log-bundle-corrupt");
  // A flipped byte inside the last log file (its zstd frame has a checksum,
  // its header a hash): refused whatever the reason.
  bad = *bundle;
  bad[bad.size() - 3] ^= 0x40;
  EXPECT_NE(refused(bad), "ok");
}

// The explorer reads only the manifest (the losses): the same manifest as a
// full import, and a header or manifest it cannot trust is refused.
TEST(LogBundle, TheManifestAloneReadsAsTheImportedOne) {
  RoundedRun solver;
  auto bundle = ExportLogBundle(solver.Run());
  ASSERT_TRUE(bundle.ok());
  auto manifest = ReadLogBundleManifest(*bundle);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(*manifest, solver.manifest);
  EXPECT_EQ(manifest->losses.size(), solver.job.job.spec.num_steps);
  Bytes bad = *bundle;
  bad[0] = 'X';
  EXPECT_EQ(ReadLogBundleManifest(bad).status().reason(), "log-bundle-corrupt");
  for (std::size_t len : {std::size_t{0}, std::size_t{5}, std::size_t{9}, std::size_t{40}})
    EXPECT_EQ(ReadLogBundleManifest(ByteSpan(bundle->data(), len)).status().reason(), "log-bundle-corrupt") << len;
}

TEST(LogBundle, AnotherRunsLogsUnderThisManifestAreAMismatch) {
  RoundedRun a;
  LoadedJob other_job = test::MakeJob(Family::kMlp, "rounded", 8, 3);
  other_job.job.spec.seed += 1;  // another trajectory, same shape of logs
  test::TempDir other_dir;
  ASSERT_TRUE(Train(other_job.job, other_job.dataset, other_dir.path(), TrainOptions{}).ok());
  auto other = RunDir::Open(other_dir.path(), false);
  ASSERT_TRUE(other.ok());
  // Copy the other run's first log file over ours, then bundle: the export
  // itself refuses a file its manifest does not name.
  const RunDir mine = a.Run();
  std::filesystem::copy_file(other->LogPath(0), mine.LogPath(0), std::filesystem::copy_options::overwrite_existing);
  auto bundle = ExportLogBundle(mine);
  ASSERT_FALSE(bundle.ok());
  EXPECT_EQ(bundle.status().reason(), "log-file-mismatch");
}

}  // namespace
}  // namespace vt::worker
