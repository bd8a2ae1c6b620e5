#pragma once
// A set of content ids with a hard size bound: when full, the oldest id is
// forgotten (FIFO). Gossip uses it to deliver and relay every item once while
// keeping memory fixed whatever peers send. Not thread-safe (io thread only).

#include <cstddef>
#include <cstring>
#include <deque>
#include <unordered_set>

#include "common/bytes.h"

namespace vt::net {

struct Hash256Hasher {
  std::size_t operator()(const Hash256& h) const noexcept {
    // Ids are SHA-256 outputs: any 8 bytes are already uniform.
    std::size_t v;
    std::memcpy(&v, h.bytes.data(), sizeof(v));
    return v;
  }
};

class SeenSet {
 public:
  explicit SeenSet(std::size_t capacity) : m_capacity(capacity == 0 ? 1 : capacity) {}

  bool Contains(const Hash256& id) const { return m_set.count(id) != 0; }

  // True when `id` was not in the set (it is now).
  bool Insert(const Hash256& id) {
    if (!m_set.insert(id).second) return false;
    m_order.push_back(id);
    if (m_order.size() > m_capacity) {
      m_set.erase(m_order.front());
      m_order.pop_front();
    }
    return true;
  }

  std::size_t size() const { return m_order.size(); }
  std::size_t capacity() const { return m_capacity; }

 private:
  std::size_t m_capacity;
  std::unordered_set<Hash256, Hash256Hasher> m_set;
  std::deque<Hash256> m_order;
};

}  // namespace vt::net
