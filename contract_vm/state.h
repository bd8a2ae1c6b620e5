#pragma once
// Chain state as ordered byte keys → byte values, reached only through the
// StateStore interface: in memory for tests (MemoryStateStore), LevelDB in
// the node. The VM never iterates an unordered container: every scan is in
// increasing bytewise key order, so anything derived from the state (the
// state root above all) is the same on every machine.
//
// Writes are staged in a StateOverlay (one per block, one per transaction on
// top of it) and reach the store as one WriteBatch, so a failed transaction
// or an invalid block leaves no trace.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::vm {

// Bytewise lexicographic order of unsigned bytes, usable with ByteSpan keys
// (heterogeneous lookup) and with Bytes.
struct BytesLess {
  using is_transparent = void;
  bool operator()(ByteSpan a, ByteSpan b) const noexcept;
};

// Puts (value) and deletes (nullopt), ordered by key; the last write to a key wins.
class WriteBatch {
 public:
  using Ops = std::map<Bytes, std::optional<Bytes>, BytesLess>;

  void Put(ByteSpan key, ByteSpan value);
  void Delete(ByteSpan key);
  void Merge(const WriteBatch& later);  // `later` wins on shared keys
  const Ops& ops() const { return m_ops; }
  bool empty() const { return m_ops.empty(); }
  void Clear() { m_ops.clear(); }

 private:
  Ops m_ops;
};

// Called once per entry in increasing key order; return false to stop.
using ScanVisitor = std::function<bool(ByteSpan key, ByteSpan value)>;

class StateStore {
 public:
  virtual ~StateStore() = default;
  // nullopt when absent; Status::Error for a local failure (disk).
  virtual Result<std::optional<Bytes>> Get(ByteSpan key) const noexcept = 0;
  // Every entry whose key starts with `prefix` (all entries for an empty
  // prefix), in increasing bytewise key order.
  virtual Status Scan(ByteSpan prefix, const ScanVisitor& visit) const noexcept = 0;
  // Applies the batch atomically: all of it or (on error) none of it.
  virtual Status Commit(const WriteBatch& batch) noexcept = 0;
};

class MemoryStateStore final : public StateStore {
 public:
  Result<std::optional<Bytes>> Get(ByteSpan key) const noexcept override;
  Status Scan(ByteSpan prefix, const ScanVisitor& visit) const noexcept override;
  Status Commit(const WriteBatch& batch) noexcept override;

  std::size_t size() const { return m_entries.size(); }

 private:
  std::map<Bytes, Bytes, BytesLess> m_entries;
};

// Staged writes over a base store: reads see the staged writes first.
// Commit() stages a batch here; batch() is what to commit to the base.
class StateOverlay final : public StateStore {
 public:
  explicit StateOverlay(const StateStore& base) : m_base(base) {}

  Result<std::optional<Bytes>> Get(ByteSpan key) const noexcept override;
  Status Scan(ByteSpan prefix, const ScanVisitor& visit) const noexcept override;
  Status Commit(const WriteBatch& batch) noexcept override;

  void Put(ByteSpan key, ByteSpan value) { m_writes.Put(key, value); }
  void Delete(ByteSpan key) { m_writes.Delete(key); }
  const WriteBatch& batch() const { return m_writes; }
  void Discard() { m_writes.Clear(); }

 private:
  const StateStore& m_base;
  WriteBatch m_writes;
};

}  // namespace vt::vm
