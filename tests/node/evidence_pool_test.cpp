// The evidence a validator holds until a block records it
// (node/evidence_pool.h). Attacks first: a Byzantine validator producing
// offences without end must not crowd out evidence against the others, and
// evidence a block recorded must leave the pool (the state refuses it from
// then on); then a randomized adversary against the pool's bounds.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <set>
#include <tuple>

#include "contract_vm/block.h"
#include "node/evidence_pool.h"
#include "tests/support/test_seed.h"

namespace vt::node {
namespace {

constexpr std::size_t kValidators = 4;

vm::Offence OffenceOf(std::size_t validator, std::uint64_t height, std::uint32_t round = 0, std::uint8_t kind = 1) {
  vm::Offence o;
  o.validator.fill(static_cast<std::uint8_t>(validator + 1));
  o.height = height;
  o.round = round;
  o.kind = kind;
  return o;
}

Bytes ItemOf(const vm::Offence& o) { return Bytes{o.validator[0], static_cast<std::uint8_t>(o.height), o.kind}; }

bool Add(EvidencePool& pool, const vm::Offence& o) { return pool.Add(o, ItemOf(o)); }

const auto kNothingRecorded = [](const vm::Offence&) { return false; };

TEST(EvidencePool, OneValidatorsOffencesCannotCrowdOutTheOthers) {
  EvidencePool pool(kValidators);
  ASSERT_EQ(pool.per_validator(), kMaxHeldEvidence / kValidators);
  // v3 equivocates in every round of many heights: far more than the pool holds.
  std::size_t kept = 0;
  for (std::uint64_t h = 1; h <= 1000; ++h)
    for (std::uint32_t r = 0; r < 4; ++r) kept += Add(pool, OffenceOf(3, h, r)) ? 1 : 0;
  EXPECT_EQ(kept, pool.per_validator());
  EXPECT_EQ(pool.items().size(), pool.per_validator());
  // Evidence against another validator still finds room.
  EXPECT_TRUE(Add(pool, OffenceOf(1, 1000)));
  EXPECT_EQ(pool.items().back().offence, OffenceOf(1, 1000));
}

TEST(EvidencePool, RecordedEvidenceLeavesThePoolAndMakesRoom) {
  EvidencePool pool(kValidators);
  for (std::uint64_t h = 1; h <= pool.per_validator(); ++h) ASSERT_TRUE(Add(pool, OffenceOf(3, h)));
  EXPECT_FALSE(Add(pool, OffenceOf(3, 5000))) << "v3's share is full";
  // A block at height 40 records v3's offences at heights 1..32 (one block's worth).
  pool.Forget(41, [](const vm::Offence& o) { return o.height <= 32; });
  EXPECT_EQ(pool.items().size(), pool.per_validator() - 32);
  for (const HeldEvidence& e : pool.items()) EXPECT_GT(e.offence.height, 32u);
  // New offences get in again, oldest first stays the order.
  EXPECT_TRUE(Add(pool, OffenceOf(3, 5000)));
  EXPECT_EQ(pool.items().front().offence.height, 33u);
  EXPECT_EQ(pool.items().back().offence.height, 5000u);
}

TEST(EvidencePool, TheSameOffenceIsHeldOnceUntilItLeaves) {
  EvidencePool pool(kValidators);
  EXPECT_TRUE(Add(pool, OffenceOf(2, 7, 1, 2)));
  EXPECT_FALSE(Add(pool, OffenceOf(2, 7, 1, 2)));
  EXPECT_TRUE(Add(pool, OffenceOf(2, 7, 1, 1))) << "another vote type is another offence";
  pool.Forget(8, [](const vm::Offence& o) { return o.kind == 2; });
  ASSERT_EQ(pool.items().size(), 1u);
  // Recorded, dropped: offering it again is allowed here (the chain, which
  // refuses it, is asked before a block carries it: Chain::EvidenceCandidates).
  EXPECT_TRUE(Add(pool, OffenceOf(2, 7, 1, 2)));
}

TEST(EvidencePool, TooOldEvidenceLeaves) {
  EvidencePool pool(kValidators);
  ASSERT_TRUE(Add(pool, OffenceOf(0, 10)));
  ASSERT_TRUE(Add(pool, OffenceOf(1, 11)));
  pool.Forget(10 + vm::kEvidenceMaxAge, kNothingRecorded);
  EXPECT_EQ(pool.items().size(), 2u) << "a block at 10 + max age may still carry it";
  pool.Forget(11 + vm::kEvidenceMaxAge, kNothingRecorded);
  ASSERT_EQ(pool.items().size(), 1u);
  EXPECT_EQ(pool.items()[0].offence.height, 11u);
}

// f = 1 Byzantine validator of four floods the pool in random order while
// blocks record random parts of what is held. Always: the pool stays within
// its bounds, holds each offence once, and an honest validator's offence
// (rare: e.g. a key compromised once) is never refused for lack of room.
TEST(EvidencePool, RandomizedFloodNeverCrowdsOutOthersAndStaysBounded) {
  const std::uint64_t seed = test::TestSeed();
  SCOPED_TRACE("VT_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  EvidencePool pool(kValidators);
  std::set<std::tuple<std::uint8_t, std::uint64_t, std::uint32_t, std::uint8_t>> recorded;
  std::uint64_t height = 1;
  std::size_t honest_added = 0;
  bool flood_filled_its_share = false;
  for (int step = 0; step < 20000; ++step) {
    const int what = static_cast<int>(rng() % 100);
    // (A driver never reports an offence a final block recorded: its state
    // machine only holds votes of heights after the last final block.)
    const auto is_recorded = [&](const vm::Offence& o) {
      return recorded.count({o.validator[0], o.height, o.round, o.kind}) > 0;
    };
    if (what < 90 || what >= 94) {
      const vm::Offence o = OffenceOf(3, height - rng() % std::min<std::uint64_t>(height, 50),
                                      static_cast<std::uint32_t>(rng() % 20), static_cast<std::uint8_t>(1 + rng() % 2));
      if (!is_recorded(o)) (void)Add(pool, o);
    } else if (what < 93) {
      const vm::Offence o = OffenceOf(rng() % 3, height, static_cast<std::uint32_t>(rng() % 4));
      bool held = false;
      for (const HeldEvidence& e : pool.items()) held = held || e.offence == o;
      if (!held && !is_recorded(o)) {
        EXPECT_TRUE(Add(pool, o)) << "honest validator's evidence refused at step " << step;
        ++honest_added;
      }
    } else {  // 93
      // A block commits (1 step in 100): it records up to 32 of what is
      // held, at random, so the flood outpaces what blocks record.
      ++height;
      std::size_t in_block = 0;
      for (const HeldEvidence& e : pool.items())
        if (in_block < vm::kMaxBlockEvidence && rng() % 2 == 0 &&
            recorded.insert({e.offence.validator[0], e.offence.height, e.offence.round, e.offence.kind}).second)
          ++in_block;
      pool.Forget(height, is_recorded);
    }
    ASSERT_LE(pool.items().size(), kMaxHeldEvidence);
    std::map<std::uint8_t, std::size_t> per;
    std::set<std::tuple<std::uint8_t, std::uint64_t, std::uint32_t, std::uint8_t>> keys;
    for (const HeldEvidence& e : pool.items()) {
      ASSERT_LE(++per[e.offence.validator[0]], pool.per_validator());
      flood_filled_its_share = flood_filled_its_share || per[OffenceOf(3, 0).validator[0]] == pool.per_validator();
      ASSERT_TRUE(keys.insert({e.offence.validator[0], e.offence.height, e.offence.round, e.offence.kind}).second);
      ASSERT_FALSE(recorded.count({e.offence.validator[0], e.offence.height, e.offence.round, e.offence.kind}))
          << "recorded evidence still held";
    }
  }
  EXPECT_GT(honest_added, 100u);
  EXPECT_TRUE(flood_filled_its_share) << "the flood never reached its bound: the test proves nothing";
  pool.Forget(height, [](const vm::Offence&) { return true; });
  EXPECT_TRUE(pool.items().empty());
}

}  // namespace
}  // namespace vt::node
