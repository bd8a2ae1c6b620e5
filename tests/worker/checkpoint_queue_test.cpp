// The background checkpoint writer (worker/checkpoint_queue.h): whatever the
// memory budget — every state written in Push, one state at a time, or all
// queued and written in batches — the manifest on disk lists every
// checkpoint in order with its step, hash, losses and interval logs, and
// each file it names loads; a failed write stops the manifest before it.

#include "worker/checkpoint_queue.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "tests/worker/test_util.h"
#include "worker/trainer.h"

namespace vt::worker {
namespace {

constexpr std::uint64_t kSteps = 24, kInterval = 2;
constexpr std::uint64_t kCheckpoints = kSteps / kInterval + 1;

// The state at checkpoint `index`: values that differ from one to the next.
TrainingState StateAt(std::uint64_t index) {
  TrainingState s;
  kernels::Tensor w({64, 16});
  for (std::size_t i = 0; i < w.values().size(); ++i)
    w.values()[i] = static_cast<float>(i * (index + 1)) * 1e-3f;
  s.tensors.emplace("w", std::move(w));
  s.step = index * kInterval;
  s.rng_counter = index;
  return s;
}

// What checkpoint `index` adds to the manifest: its interval's losses and logs.
PendingCheckpoint PendingAt(std::uint64_t index) {
  PendingCheckpoint c;
  c.index = index;
  if (index == 0) return c;
  IntervalLogs logs;
  logs.first_step = (index - 1) * kInterval;
  for (std::uint64_t s = 0; s < kInterval; ++s) {
    c.losses.push_back(static_cast<float>(logs.first_step + s) * 0.5f);
    logs.steps.emplace_back();  // a step whose nodes logged nothing
  }
  c.logs = std::move(logs);
  c.values_rounded = 100 * index;
  return c;
}

RunManifest EmptyManifest() {
  RunManifest m;
  m.num_steps = kSteps;
  m.interval = kInterval;
  return m;
}

// The manifest on disk against what was pushed, and every file it names.
void ExpectListsCheckpoints(RunDir& run, std::uint64_t count, const std::string& what) {
  auto m = run.LoadManifest();
  ASSERT_TRUE(m.ok()) << what << ": " << m.status().ToString();
  ASSERT_EQ(m->checkpoints.size(), count) << what;
  ASSERT_EQ(m->logs.size(), count == 0 ? 0 : count - 1) << what;
  ASSERT_EQ(m->losses.size(), count == 0 ? 0 : (count - 1) * kInterval) << what;
  for (std::uint64_t i = 0; i < count; ++i) {
    EXPECT_EQ(m->checkpoints[i].step, i * kInterval) << what;
    EXPECT_EQ(m->checkpoints[i].state_hash, StateHash(StateAt(i))) << what << ", checkpoint " << i;
    EXPECT_TRUE(LoadCheckpoint(run, *m, i).ok()) << what << ", checkpoint " << i;
  }
  for (std::uint64_t i = 0; i + 1 < count; ++i) {
    EXPECT_EQ(m->logs[i].values_rounded, 100 * (i + 1)) << what;
    EXPECT_TRUE(run.LoadIntervalLogs(m->logs[i]).ok()) << what << ", log " << i;
  }
  for (std::size_t s = 0; s < m->losses.size(); ++s)
    EXPECT_EQ(m->losses[s], static_cast<float>(s) * 0.5f) << what;
}

TEST(CheckpointQueueTest, ListsEveryCheckpointInOrderWhateverTheBudget) {
  const std::size_t one_state = StateAt(0).tensors.at("w").values().size_bytes();
  for (const std::size_t budget : {std::size_t{0}, one_state, 100 * one_state}) {
    test::TempDir dir;
    auto run = RunDir::Open(dir.path(), /*create=*/true);
    ASSERT_TRUE(run.ok());
    RunManifest manifest = EmptyManifest();
    LogTotals totals;
    {
      CheckpointQueue queue(*run, manifest, budget);
      for (std::uint64_t i = 0; i < kCheckpoints; ++i) {
        const TrainingState s = StateAt(i);  // gone when Push returns: the queue keeps its own copy
        ASSERT_TRUE(queue.Push(s, PendingAt(i)).ok());
      }
      ASSERT_TRUE(queue.Drain().ok());
      totals = queue.log_totals();
    }
    const std::string what = "budget " + std::to_string(budget);
    ExpectListsCheckpoints(*run, kCheckpoints, what);
    EXPECT_EQ(manifest, run->LoadManifest().value()) << what;
    EXPECT_EQ(totals.values_rounded, 100 * (kCheckpoints - 1) * kCheckpoints / 2) << what;
  }
}

// A state above the budget is written before Push returns: it is on disk,
// listed, with nothing left to wait for.
TEST(CheckpointQueueTest, AStateAboveTheBudgetIsListedWhenPushReturns) {
  test::TempDir dir;
  auto run = RunDir::Open(dir.path(), /*create=*/true);
  ASSERT_TRUE(run.ok());
  RunManifest manifest = EmptyManifest();
  CheckpointQueue queue(*run, manifest, /*max_bytes=*/0);
  for (std::uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(queue.Push(StateAt(i), PendingAt(i)).ok());
    ExpectListsCheckpoints(*run, i + 1, "after push " + std::to_string(i));
  }
}

// The checkpoint directory replaced by a file: the next write fails, Push
// or Drain reports it, and the manifest on disk keeps what was durable.
TEST(CheckpointQueueTest, AFailedWriteStopsTheManifestBeforeIt) {
  test::TempDir dir;
  auto run = RunDir::Open(dir.path(), /*create=*/true);
  ASSERT_TRUE(run.ok());
  RunManifest manifest = EmptyManifest();
  CheckpointQueue queue(*run, manifest, std::size_t{1} << 30);
  ASSERT_TRUE(queue.Push(StateAt(0), PendingAt(0)).ok());
  ASSERT_TRUE(queue.Push(StateAt(1), PendingAt(1)).ok());
  ASSERT_TRUE(queue.Drain().ok());
  const std::filesystem::path store = run->checkpoints().dir();
  std::filesystem::remove_all(store);
  test::WriteBytes(store, AsBytes(std::string("not a directory")));
  Status first = Status::Ok();
  for (std::uint64_t i = 2; i < kCheckpoints && first.ok(); ++i) first = queue.Push(StateAt(i), PendingAt(i));
  const Status drained = queue.Drain();
  EXPECT_FALSE(drained.ok());
  EXPECT_EQ(drained.reason(), "file-write-failed") << drained.ToString();
  EXPECT_TRUE(first.ok() || first.reason() == drained.reason());
  // Later pushes report the same failure and write nothing.
  EXPECT_EQ(queue.Push(StateAt(9), PendingAt(9)).reason(), drained.reason());
  std::filesystem::remove(store);
  std::filesystem::create_directories(store);
  auto m = run->LoadManifest();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->checkpoints.size(), 2u);
}

}  // namespace
}  // namespace vt::worker
