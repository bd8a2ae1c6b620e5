#include "contract_vm/state.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace vt::vm {
namespace {

bool HasPrefix(ByteSpan key, ByteSpan prefix) {
  return key.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), key.begin());
}

}  // namespace

bool BytesLess::operator()(ByteSpan a, ByteSpan b) const noexcept {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

void WriteBatch::Put(ByteSpan key, ByteSpan value) {
  m_ops.insert_or_assign(Bytes(key.begin(), key.end()), Bytes(value.begin(), value.end()));
}

void WriteBatch::Delete(ByteSpan key) { m_ops.insert_or_assign(Bytes(key.begin(), key.end()), std::nullopt); }

void WriteBatch::Merge(const WriteBatch& later) {
  for (const auto& [key, value] : later.m_ops) m_ops.insert_or_assign(key, value);
}

// ---- MemoryStateStore -----------------------------------------------------------

Result<std::optional<Bytes>> MemoryStateStore::Get(ByteSpan key) const noexcept {
  const auto it = m_entries.find(key);
  if (it == m_entries.end()) return std::optional<Bytes>();
  return std::optional<Bytes>(it->second);
}

Status MemoryStateStore::Scan(ByteSpan prefix, const ScanVisitor& visit) const noexcept {
  for (auto it = m_entries.lower_bound(prefix); it != m_entries.end() && HasPrefix(it->first, prefix); ++it) {
    if (!visit(it->first, it->second)) break;
  }
  return Status::Ok();
}

Status MemoryStateStore::Commit(const WriteBatch& batch) noexcept {
  for (const auto& [key, value] : batch.ops()) {
    if (value) {
      m_entries.insert_or_assign(key, *value);
    } else {
      m_entries.erase(key);
    }
  }
  return Status::Ok();
}

// ---- StateOverlay ---------------------------------------------------------------

Result<std::optional<Bytes>> StateOverlay::Get(ByteSpan key) const noexcept {
  const auto it = m_writes.ops().find(key);
  if (it != m_writes.ops().end()) return it->second;
  return m_base.Get(key);
}

Status StateOverlay::Scan(ByteSpan prefix, const ScanVisitor& visit) const noexcept {
  // Merge the base's ordered entries with the staged writes, also ordered.
  std::vector<std::pair<Bytes, Bytes>> base;
  VT_TRY(m_base.Scan(prefix, [&](ByteSpan key, ByteSpan value) {
    base.emplace_back(Bytes(key.begin(), key.end()), Bytes(value.begin(), value.end()));
    return true;
  }));
  const auto& ops = m_writes.ops();
  auto w = ops.lower_bound(prefix);
  const auto w_end = ops.end();
  std::size_t b = 0;
  const BytesLess less;
  while (true) {
    const bool w_live = w != w_end && HasPrefix(w->first, prefix);
    const bool b_live = b < base.size();
    if (!w_live && !b_live) break;
    if (w_live && (!b_live || !less(base[b].first, w->first))) {
      // The staged write wins (and shadows an equal base key).
      if (b_live && !less(w->first, base[b].first)) ++b;
      if (w->second && !visit(w->first, *w->second)) return Status::Ok();
      ++w;
    } else {
      if (!visit(base[b].first, base[b].second)) return Status::Ok();
      ++b;
    }
  }
  return Status::Ok();
}

Status StateOverlay::Commit(const WriteBatch& batch) noexcept {
  m_writes.Merge(batch);
  return Status::Ok();
}

}  // namespace vt::vm
