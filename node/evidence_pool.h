#pragma once
// The evidence a node holds until a block records it (docs/node.md
// "Evidence and slashing", "Who reports").
//
// Bounded twice, because a Byzantine validator decides how much evidence
// it produces: at most `capacity` items in all, and at most
// capacity / validators of them against any one validator, so however
// many offences one validator commits, evidence against the others always
// finds room. An item leaves the pool once a final block recorded its
// offence (the state refuses it from then on, so holding it only takes a
// place) or once no block may carry it any more (vm::kEvidenceMaxAge).

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "common/bytes.h"
#include "contract_vm/evidence.h"

namespace vt::node {

// Evidence kept in memory by a validator's driver.
inline constexpr std::size_t kMaxHeldEvidence = 1024;

struct HeldEvidence {
  vm::Offence offence;
  Bytes item;  // what a block carries (EncodeEvidence)
};

class EvidencePool {
 public:
  // `validators`: the size of the validator set (> 0).
  explicit EvidencePool(std::size_t validators, std::size_t capacity = kMaxHeldEvidence);
  // Keeps `item` unless its offence is held already or the pool, or the
  // validator's share of it, is full. Whether it was kept.
  bool Add(const vm::Offence& offence, Bytes item);
  // Drops what no block at `next_height` or later may carry: offences
  // `recorded` by a final block, and those older than vm::kEvidenceMaxAge.
  void Forget(std::uint64_t next_height, const std::function<bool(const vm::Offence&)>& recorded);
  // Oldest first.
  const std::vector<HeldEvidence>& items() const { return m_items; }
  std::size_t per_validator() const { return m_per_validator; }

 private:
  using Key = std::tuple<std::array<std::uint8_t, 32>, std::uint64_t, std::uint32_t, std::uint8_t>;
  static Key KeyOf(const vm::Offence& o) { return {o.validator, o.height, o.round, o.kind}; }

  std::size_t m_capacity;
  std::size_t m_per_validator;
  std::vector<HeldEvidence> m_items;
  std::set<Key> m_keys;
  std::map<std::array<std::uint8_t, 32>, std::size_t> m_count;  // items held per validator
};

}  // namespace vt::node
