#include "worker/checkpoint_queue.h"

#include <iterator>
#include <new>
#include <string>
#include <utility>

#include "worker/file_io.h"

namespace vt::worker {

namespace {

std::size_t StateBytes(const TrainingState& state) {
  std::size_t bytes = 0;
  for (const auto& [name, tensor] : state.tensors) bytes += tensor.values().size_bytes();
  return bytes;
}

}  // namespace

CheckpointQueue::CheckpointQueue(RunDir& run, RunManifest& manifest, std::size_t max_bytes)
    : m_run(run), m_manifest(manifest), m_max_bytes(max_bytes), m_thread([this] { WriterLoop(); }) {}

CheckpointQueue::~CheckpointQueue() {
  (void)Drain();
  {
    const std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_changed.notify_all();
  m_thread.join();
}

Status CheckpointQueue::Push(const TrainingState& state, PendingCheckpoint c) {
  const std::size_t bytes = StateBytes(state);
  std::unique_lock lock(m_mu);
  if (bytes > m_max_bytes) {
    // A copy would cost more memory than waiting: write it here once the
    // writer has finished everything before it.
    m_changed.wait(lock, [&] { return m_waiting.empty() && !m_writing; });
    if (!m_error.ok()) return m_error;
    lock.unlock();
    std::vector<Item> batch;
    batch.push_back(Item{std::move(c), std::nullopt, &state, bytes});
    Status s = WriteBatch(batch);
    lock.lock();
    if (!s.ok() && m_error.ok()) m_error = std::move(s);
    return m_error;
  }
  // The budget is taken before the copy is made, so the copies never exceed it.
  m_changed.wait(lock, [&] { return m_bytes + bytes <= m_max_bytes || !m_error.ok(); });
  if (!m_error.ok()) return m_error;
  m_bytes += bytes;
  lock.unlock();
  std::optional<Item> item;
  try {
    item.emplace(Item{std::move(c), state, nullptr, bytes});
  } catch (const std::bad_alloc&) {
    lock.lock();
    m_bytes -= bytes;
    return Status::Error("out-of-memory", "copying the state for checkpoint " + std::to_string(c.index));
  }
  lock.lock();
  m_waiting.push_back(std::move(*item));
  m_changed.notify_all();
  return Status::Ok();
}

Status CheckpointQueue::Drain() {
  std::unique_lock lock(m_mu);
  m_changed.wait(lock, [&] { return m_waiting.empty() && !m_writing; });
  return m_error;
}

void CheckpointQueue::WriterLoop() {
  std::unique_lock lock(m_mu);
  for (;;) {
    m_changed.wait(lock, [&] { return m_stop || !m_waiting.empty(); });
    if (m_waiting.empty()) return;  // stopped, and everything written
    std::vector<Item> batch(std::make_move_iterator(m_waiting.begin()),
                            std::make_move_iterator(m_waiting.end()));
    m_waiting.clear();
    m_writing = true;
    // After a failure nothing more is written: the manifest stops before it.
    const bool failed = !m_error.ok();
    lock.unlock();
    Status s = failed ? Status::Ok() : WriteBatch(batch);
    std::size_t freed = 0;
    for (const Item& item : batch) freed += item.bytes;
    batch.clear();  // the copies go before the budget is given back
    lock.lock();
    if (!s.ok() && m_error.ok()) m_error = std::move(s);
    m_bytes -= freed;
    m_writing = false;
    m_changed.notify_all();
  }
}

Status CheckpointQueue::WriteBatch(std::vector<Item>& batch) {
  // The writer thread has no caller to throw to: running out of memory while
  // encoding is a failed write like any other.
  try {
    return WriteBatchOrThrow(batch);
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory",
                         "writing checkpoint " + std::to_string(batch.front().checkpoint.index));
  }
}

Status CheckpointQueue::WriteBatchOrThrow(std::vector<Item>& batch) {
  std::vector<Hash256> hashes;
  std::vector<IntervalLogEntry> log_entries;
  for (const Item& item : batch) {
    VT_ASSIGN_OR_RETURN(Hash256 h, m_run.checkpoints().Put(item.state(), DirSync::kDeferred));
    hashes.push_back(h);
    const PendingCheckpoint& c = item.checkpoint;
    if (c.logs) {
      VT_ASSIGN_OR_RETURN(IntervalLogEntry e,
                          m_run.SaveIntervalLogs(c.index - 1, *c.logs, c.values_rounded, DirSync::kDeferred));
      log_entries.push_back(e);
    }
  }
  // Every file of the batch durable under its name, then the manifest.
  VT_TRY(SyncDirectory(m_run.checkpoints().dir()));
  if (!log_entries.empty()) VT_TRY(SyncDirectory(m_run.LogDir()));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const PendingCheckpoint& c = batch[i].checkpoint;
    m_manifest.losses.insert(m_manifest.losses.end(), c.losses.begin(), c.losses.end());
    m_manifest.checkpoints.push_back(CheckpointEntry{c.index, batch[i].state().step, hashes[i]});
  }
  for (const IntervalLogEntry& e : log_entries) {
    m_manifest.logs.push_back(e);
    m_totals.entries += e.entries;
    m_totals.file_bytes += e.file_bytes;
    m_totals.values_rounded += e.values_rounded;
  }
  return m_run.SaveManifest(m_manifest);
}

}  // namespace vt::worker
