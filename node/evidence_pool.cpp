#include "node/evidence_pool.h"

#include <algorithm>

namespace vt::node {

EvidencePool::EvidencePool(std::size_t validators, std::size_t capacity)
    : m_capacity(capacity), m_per_validator(std::max<std::size_t>(1, capacity / std::max<std::size_t>(1, validators))) {}

bool EvidencePool::Add(const vm::Offence& offence, Bytes item) {
  if (m_items.size() >= m_capacity) return false;
  std::size_t& held = m_count[offence.validator];
  if (held >= m_per_validator) return false;
  if (!m_keys.insert(KeyOf(offence)).second) return false;
  ++held;
  m_items.push_back({offence, std::move(item)});
  return true;
}

void EvidencePool::Forget(std::uint64_t next_height, const std::function<bool(const vm::Offence&)>& recorded) {
  std::erase_if(m_items, [&](const HeldEvidence& e) {
    const bool gone = e.offence.height + vm::kEvidenceMaxAge < next_height || recorded(e.offence);
    if (gone) {
      m_keys.erase(KeyOf(e.offence));
      if (--m_count[e.offence.validator] == 0) m_count.erase(e.offence.validator);
    }
    return gone;
  });
}

}  // namespace vt::node
