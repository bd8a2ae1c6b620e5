#pragma once
// A run's checkpoints written in the background while training goes on
// (docs/worker.md, "Checkpoints in the background").
//
// Order and durability: checkpoints are written in the order they were
// pushed; each checkpoint file and its interval's log file are durable under
// their names before the manifest that lists them is written, so a crash at
// any moment leaves a manifest that names only complete files (and at worst
// files no manifest names yet, which a resume overwrites).
//
// Group commit: a writer that falls behind takes every checkpoint waiting
// and makes the batch durable together — one fsync per file, one per
// directory and one manifest write for the whole batch, where one at a time
// costs four fsyncs each (file, directory, manifest, directory).
//
// Memory: the states waiting hold at most `max_bytes` between them; Push
// waits for the writer beyond that, and a state larger than the whole budget
// is written on the pushing thread (after the queue drains), from the
// caller's own state rather than a copy.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/result.h"
#include "worker/run_dir.h"
#include "worker/state.h"

namespace vt::worker {

// Totals of the rounding logs written (rounded runs).
struct LogTotals {
  std::uint64_t entries = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t values_rounded = 0;
};

// One checkpoint and what the manifest gains with it.
struct PendingCheckpoint {
  std::uint64_t index = 0;           // its position in manifest.checkpoints
  std::vector<float> losses;         // of the steps since the previous checkpoint
  std::optional<IntervalLogs> logs;  // rounded runs: the interval that ends here
  std::uint64_t values_rounded = 0;  // in that interval
};

class CheckpointQueue {
 public:
  // `manifest` belongs to the queue until Drain returns: it appends to it.
  CheckpointQueue(RunDir& run, RunManifest& manifest, std::size_t max_bytes);
  CheckpointQueue(const CheckpointQueue&) = delete;
  CheckpointQueue& operator=(const CheckpointQueue&) = delete;
  // Drains (what was pushed is written) and stops the writer.
  ~CheckpointQueue();

  // Queues `state` (copied unless it is written here, see above) as
  // checkpoint `c`. Returns the first error of any write so far: the run
  // must stop, and nothing after the failed checkpoint reaches the manifest.
  Status Push(const TrainingState& state, PendingCheckpoint c);
  // Waits until everything pushed is durable and listed; the first error.
  Status Drain();

  // What the writes so far added up to (after Drain).
  const LogTotals& log_totals() const { return m_totals; }

 private:
  struct Item {
    PendingCheckpoint checkpoint;
    std::optional<TrainingState> copy;      // the queue's own copy, or
    const TrainingState* caller = nullptr;  // the caller's state (written in Push)
    std::size_t bytes = 0;
    const TrainingState& state() const { return copy ? *copy : *caller; }
  };

  void WriterLoop();
  // Writes a batch in order and saves the manifest once (the writer thread,
  // or the pushing thread for an oversized state with the writer idle).
  // A failure, out of memory included, is a Status.
  Status WriteBatch(std::vector<Item>& batch);
  Status WriteBatchOrThrow(std::vector<Item>& batch);

  RunDir& m_run;
  RunManifest& m_manifest;
  const std::size_t m_max_bytes;
  LogTotals m_totals;

  std::mutex m_mu;
  std::condition_variable m_changed;
  std::deque<Item> m_waiting;  // guarded by m_mu
  std::size_t m_bytes = 0;     // of m_waiting and the batch being written
  bool m_writing = false;
  bool m_stop = false;
  Status m_error;  // the first failure
  std::thread m_thread;
};

}  // namespace vt::worker
