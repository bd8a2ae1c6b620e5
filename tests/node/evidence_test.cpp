// Equivocation evidence in blocks and the slashing it causes (docs/node.md
// "Evidence and slashing"): the chain's real rules (node/evidence_rules.h,
// consensus::VerifyEvidence) under the VM (contract_vm/evidence.h), on an
// in-memory state. Attacks first: forged evidence, evidence for a
// non-validator, duplicates in one block, the same offence in two blocks,
// evidence too old or from the future; then the property that only a real
// double-sign is ever evidence, so an honest validator is never slashed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <tuple>

#include "consensus/commit.h"
#include "contract_vm/evidence.h"
#include "contract_vm/vm.h"
#include "node/evidence_rules.h"
#include "tests/support/test_seed.h"

namespace vt::node {
namespace {

constexpr std::uint64_t kChain = 41;
constexpr vm::Amount kBond = 1'000'000;
constexpr std::size_t kValidators = 4;

crypto::SecretKey KeyOf(std::size_t i) {
  std::array<std::uint8_t, 32> b{};
  b[0] = 0x29;
  b[31] = static_cast<std::uint8_t>(i + 1);
  return std::move(crypto::SecretKey::FromBytes(b).value());
}

Hash256 BlockId(std::uint8_t tag) {
  Hash256 h;
  h.bytes.fill(tag);
  return h;
}

consensus::Vote Signed(std::size_t who, consensus::VoteType type, std::uint64_t height, std::uint32_t round,
                       std::optional<Hash256> block, const crypto::SecretKey* signer = nullptr) {
  consensus::Vote v{type, height, round, block, static_cast<std::uint32_t>(who), {}};
  if (signer != nullptr) {
    EXPECT_TRUE(consensus::SignVote(kChain, *signer, v).ok());
  } else {
    EXPECT_TRUE(consensus::SignVote(kChain, KeyOf(who), v).ok());
  }
  return v;
}

Bytes DoubleSign(std::size_t who, std::uint64_t height, std::uint32_t round = 0,
                 consensus::VoteType type = consensus::VoteType::kPrevote) {
  return EncodeEvidence(consensus::MakeEvidence(Signed(who, type, height, round, BlockId(1)),
                                                Signed(who, type, height, round, BlockId(2))));
}

// A chain of four bonded validators on an in-memory state, driven through
// the VM with the node's evidence rules.
class Fixture {
 public:
  Fixture()
      : m_rules(kChain, MakeSet()), m_vm(m_registry, nullptr, &m_rules) {
    vm::Genesis g;
    g.params.chain_id = kChain;
    g.time = 1000;
    for (std::size_t i = 0; i < kValidators; ++i) g.bonds.push_back({KeyOf(i).public_key().bytes(), kBond});
    std::sort(g.bonds.begin(), g.bonds.end(),
              [](const vm::Bond& a, const vm::Bond& b) { return a.validator < b.validator; });
    m_tip = m_vm.ApplyGenesis(m_store, g).value();
  }

  // Produces and applies the next block by `proposer` offering `evidence`.
  vm::BlockResult Produce(std::vector<Bytes> evidence, std::size_t proposer = 0) {
    auto r = m_vm.ProduceBlock(m_store, m_tip, {}, m_tip.time + 1, KeyOf(proposer), nullptr, std::move(evidence));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    m_tip = r->tip;
    return *r;
  }

  // A block at the next height carrying exactly `evidence`, signed by v0,
  // applied (all or nothing): its status.
  Status ApplyCarrying(std::vector<Bytes> evidence, std::uint64_t height_jump = 0) {
    vm::ChainTip parent = m_tip;
    parent.height += height_jump;
    // Build it empty on a scratch copy, then put the evidence in and re-sign:
    // the VM checks evidence before it recomputes the state root.
    vm::StateOverlay scratch(m_store);
    auto built = m_vm.ProduceBlock(scratch, parent, {}, parent.time + 1, KeyOf(0), nullptr);
    EXPECT_TRUE(built.ok());
    vm::Block b = built->block;
    b.evidence = std::move(evidence);
    b.header.evidence_root = vm::EvidenceRoot(b.evidence);
    EXPECT_TRUE(vm::SignBlock(b.header, KeyOf(0)).ok());
    vm::StateOverlay attempt(m_store);
    return m_vm.ApplyBlock(attempt, parent, b).status();
  }

  // How many of `evidence` a proposer would put in the next block (at
  // height + 1 + height_jump); nothing is stored.
  std::size_t Included(std::vector<Bytes> evidence, std::uint64_t height_jump = 0) {
    vm::ChainTip parent = m_tip;
    parent.height += height_jump;
    vm::StateOverlay scratch(m_store);
    auto built = m_vm.ProduceBlock(scratch, parent, {}, parent.time + 1, KeyOf(0), nullptr, std::move(evidence));
    EXPECT_TRUE(built.ok());
    // What the proposer built, every validator accepts.
    vm::StateOverlay check(m_store);
    EXPECT_TRUE(m_vm.ApplyBlock(check, parent, built->block).ok());
    return built->block.evidence.size();
  }

  vm::Amount Bond(std::size_t who) const { return vm::ReadBond(m_store, KeyOf(who).public_key().bytes()).value(); }
  vm::Amount Balance(std::size_t who) const {
    return vm::ReadAccount(m_store, KeyOf(who).address()).value().balance;
  }
  std::size_t Offences(std::size_t who) const {
    return vm::ReadSlashSummary(m_store, KeyOf(who).public_key().bytes()).value().offences;
  }
  const vm::StateStore& state() const { return m_store; }
  const vm::ChainTip& tip() const { return m_tip; }

 private:
  static consensus::ValidatorSet MakeSet() {
    std::vector<crypto::PublicKey> keys;
    for (std::size_t i = 0; i < kValidators; ++i) keys.push_back(KeyOf(i).public_key());
    return consensus::ValidatorSet::Create(keys).value();
  }

  vm::ContractRegistry m_registry;
  VoteEvidenceRules m_rules;
  vm::Vm m_vm;
  vm::MemoryStateStore m_store;
  vm::ChainTip m_tip;
};

TEST(Evidence, DoubleSignIsRecordedAndSlashedOnceWithTheReporterPaid) {
  Fixture f;
  const vm::BlockResult b = f.Produce({DoubleSign(2, 1)}, /*proposer=*/1);
  ASSERT_EQ(b.block.evidence.size(), 1u);
  const vm::Amount slash = kBond / vm::kSlashDivisor;
  const vm::Amount reward = slash / vm::kReporterShareDivisor;
  EXPECT_EQ(f.Bond(2), kBond - slash);
  EXPECT_EQ(f.Balance(1), reward);  // the proposer reported it
  for (std::size_t i : {0u, 1u, 3u}) EXPECT_EQ(f.Bond(i), kBond) << "v" << i;
  const auto rec = vm::LatestSlashes(f.state(), KeyOf(2).public_key().bytes(), 16).value();
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0].first.height, 1u);
  EXPECT_EQ(rec[0].second, (vm::SlashRecord{1, slash, reward}));
  const vm::SupplyReport supply = vm::AuditSupply(f.state()).value();
  EXPECT_EQ(supply.burned, slash - reward);
  EXPECT_EQ(supply.supply, kValidators * kBond);
  EXPECT_EQ(vm::ReadSlashSummary(f.state(), KeyOf(2).public_key().bytes()).value(), (vm::SlashSummary{1, slash}));
}

TEST(Evidence, TheSameOffenceInASecondBlockIsRefused) {
  Fixture f;
  f.Produce({DoubleSign(3, 1)});
  const vm::Amount after_first = f.Bond(3);
  // A proposer offering it again leaves it out...
  EXPECT_TRUE(f.Produce({DoubleSign(3, 1)}).block.evidence.empty());
  // ...and a block carrying it anyway is invalid (not prevoted).
  const Status s = f.ApplyCarrying({DoubleSign(3, 1)});
  EXPECT_EQ(s.reason(), "evidence-duplicate") << s.ToString();
  // Another encoding of the same offence (a third vote) is the same offence.
  const Bytes other = EncodeEvidence(consensus::MakeEvidence(
      Signed(3, consensus::VoteType::kPrevote, 1, 0, BlockId(1)), Signed(3, consensus::VoteType::kPrevote, 1, 0, std::nullopt)));
  EXPECT_EQ(f.ApplyCarrying({other}).reason(), "evidence-duplicate");
  EXPECT_EQ(f.Bond(3), after_first);
  EXPECT_EQ(f.Offences(3), 1u);
}

TEST(Evidence, TwiceInOneBlockIsRefused) {
  Fixture f;
  EXPECT_EQ(f.ApplyCarrying({DoubleSign(1, 1), DoubleSign(1, 1)}).reason(), "evidence-duplicate");
  // A proposer offered both includes one.
  EXPECT_EQ(f.Produce({DoubleSign(1, 1), DoubleSign(1, 1)}).block.evidence.size(), 1u);
  EXPECT_EQ(f.Offences(1), 1u);
}

TEST(Evidence, EachOffenceIsSlashedSeparately) {
  Fixture f;
  // Prevote and precommit of one round, and another round: three offences.
  f.Produce({DoubleSign(2, 1, 0, consensus::VoteType::kPrevote), DoubleSign(2, 1, 0, consensus::VoteType::kPrecommit),
             DoubleSign(2, 1, 1, consensus::VoteType::kPrevote)});
  vm::Amount bond = kBond;
  for (int i = 0; i < 3; ++i) bond -= vm::SlashAmount(bond);
  EXPECT_EQ(f.Bond(2), bond);
  EXPECT_EQ(f.Offences(2), 3u);
}

// A state that counts what is read from it.
class CountingStore final : public vm::StateStore {
 public:
  explicit CountingStore(const vm::StateStore& inner) : m_inner(inner) {}
  Result<std::optional<Bytes>> Get(ByteSpan key) const noexcept override {
    ++reads;
    return m_inner.Get(key);
  }
  Status Scan(ByteSpan prefix, const vm::ScanVisitor& visit) const noexcept override {
    return m_inner.Scan(prefix, [&](ByteSpan k, ByteSpan v) {
      ++reads;
      return visit(k, v);
    });
  }
  Status Commit(const vm::WriteBatch&) noexcept override { return Status::Error("read-only"); }
  mutable std::size_t reads = 0;

 private:
  const vm::StateStore& m_inner;
};

// chain_status shows every validator's offences: what it reads must not
// grow with how often a validator was slashed (a Byzantine validator
// decides that), while the totals still count every offence.
TEST(Evidence, ReadingAValidatorsSlashesCostsTheSameHoweverManyOffences) {
  Fixture f;
  constexpr std::size_t kShown = 16;
  std::vector<std::size_t> reads;
  std::uint64_t offences = 0;
  vm::Amount bond = kBond, slashed = 0;
  for (int blocks : {1, 20}) {
    for (int b = 0; b < blocks; ++b) {
      std::vector<Bytes> ev;
      const std::uint64_t h = f.tip().height + 1;
      for (std::uint32_t r = 0; r < vm::kMaxBlockEvidence; ++r) ev.push_back(DoubleSign(3, h, r));
      ASSERT_EQ(f.Produce(ev).block.evidence.size(), vm::kMaxBlockEvidence);
      for (std::size_t i = 0; i < vm::kMaxBlockEvidence; ++i) {
        slashed += vm::SlashAmount(bond);
        bond -= vm::SlashAmount(bond);
      }
      offences += vm::kMaxBlockEvidence;
    }
    CountingStore counting(f.state());
    const auto key = KeyOf(3).public_key().bytes();
    const vm::SlashSummary summary = vm::ReadSlashSummary(counting, key).value();
    EXPECT_EQ(summary, (vm::SlashSummary{offences, slashed}));
    EXPECT_EQ(f.Bond(3), bond);
    const auto latest = vm::LatestSlashes(counting, key, kShown).value();
    ASSERT_EQ(latest.size(), kShown);
    // The last ones recorded, in recording order: the last block's top rounds.
    for (std::size_t i = 0; i < kShown; ++i) {
      EXPECT_EQ(latest[i].first.height, f.tip().height);
      EXPECT_EQ(latest[i].first.round, vm::kMaxBlockEvidence - kShown + i);
      EXPECT_EQ(latest[i].second.block_height, f.tip().height);
    }
    reads.push_back(counting.reads);
  }
  EXPECT_EQ(reads[0], reads[1]) << "32 offences vs 672: reads must not grow";
  EXPECT_LE(reads[1], 2 * kShown + 2);
}

// Fewer offences than asked for: all of them; none: nothing, one read.
TEST(Evidence, LatestSlashesOfAFewOrNone) {
  Fixture f;
  f.Produce({DoubleSign(1, 1, 0), DoubleSign(1, 1, 1)});
  const auto latest = vm::LatestSlashes(f.state(), KeyOf(1).public_key().bytes(), 16).value();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].first.round, 0u);
  EXPECT_EQ(latest[1].first.round, 1u);
  CountingStore counting(f.state());
  EXPECT_TRUE(vm::LatestSlashes(counting, KeyOf(0).public_key().bytes(), 16).value().empty());
  EXPECT_EQ(counting.reads, 1u);
}

TEST(Evidence, ForgedEvidenceMakesTheBlockInvalid) {
  Fixture f;
  consensus::DuplicateVote ev = consensus::MakeEvidence(Signed(2, consensus::VoteType::kPrevote, 1, 0, BlockId(1)),
                                                        Signed(2, consensus::VoteType::kPrevote, 1, 0, BlockId(2)));
  consensus::DuplicateVote forged = ev;
  forged.b.sig.bytes[5] ^= 1;
  EXPECT_EQ(f.ApplyCarrying({EncodeEvidence(forged)}).reason(), "consensus-bad-signature");
  // v2 frames v1: an honest vote of v1 and one naming v1 but signed by v2.
  const crypto::SecretKey v2 = KeyOf(2);
  consensus::DuplicateVote framed = consensus::MakeEvidence(Signed(1, consensus::VoteType::kPrevote, 1, 0, BlockId(1)),
                                                            Signed(1, consensus::VoteType::kPrevote, 1, 0, BlockId(2), &v2));
  EXPECT_EQ(f.ApplyCarrying({EncodeEvidence(framed)}).reason(), "consensus-bad-signature");
  // Two votes for one block are no offence; other orders are not canonical.
  const Bytes same = EncodeEvidence(consensus::DuplicateVote{Signed(2, consensus::VoteType::kPrevote, 1, 0, BlockId(1)),
                                                             Signed(2, consensus::VoteType::kPrevote, 1, 0, BlockId(1))});
  EXPECT_EQ(f.ApplyCarrying({same}).reason(), "evidence-not-conflicting");
  EXPECT_EQ(f.ApplyCarrying({EncodeEvidence(consensus::DuplicateVote{ev.b, ev.a})}).reason(), "evidence-not-canonical");
  EXPECT_EQ(f.ApplyCarrying({Bytes{1, 2, 3}}).reason(), "evidence-malformed");
  // A proposer leaves all of them out.
  EXPECT_TRUE(f.Produce({EncodeEvidence(forged), EncodeEvidence(framed), same, Bytes{1, 2, 3}}).block.evidence.empty());
  for (std::size_t i = 0; i < kValidators; ++i) EXPECT_EQ(f.Bond(i), kBond);
}

TEST(Evidence, EvidenceForANonValidatorIsRefused) {
  Fixture f;
  const crypto::SecretKey outsider = KeyOf(77);
  // Index beyond the set, signed by someone outside it.
  const Bytes beyond = EncodeEvidence(consensus::MakeEvidence(
      Signed(kValidators, consensus::VoteType::kPrevote, 1, 0, BlockId(1), &outsider),
      Signed(kValidators, consensus::VoteType::kPrevote, 1, 0, BlockId(2), &outsider)));
  EXPECT_EQ(f.ApplyCarrying({beyond}).reason(), "consensus-bad-validator");
  // A validator's index, signed by the outsider.
  const Bytes posing = EncodeEvidence(consensus::MakeEvidence(
      Signed(0, consensus::VoteType::kPrevote, 1, 0, BlockId(1), &outsider),
      Signed(0, consensus::VoteType::kPrevote, 1, 0, BlockId(2), &outsider)));
  EXPECT_EQ(f.ApplyCarrying({posing}).reason(), "consensus-bad-signature");
  // Votes of another chain are worthless here.
  consensus::Vote a{consensus::VoteType::kPrevote, 1, 0, BlockId(1), 0, {}};
  consensus::Vote b{consensus::VoteType::kPrevote, 1, 0, BlockId(2), 0, {}};
  ASSERT_TRUE(consensus::SignVote(kChain + 1, KeyOf(0), a).ok());
  ASSERT_TRUE(consensus::SignVote(kChain + 1, KeyOf(0), b).ok());
  EXPECT_EQ(f.ApplyCarrying({EncodeEvidence(consensus::MakeEvidence(a, b))}).reason(), "consensus-bad-signature");
}

TEST(Evidence, TooOldOrFromTheFutureIsRefused) {
  Fixture f;
  // The next block is at height 1 + jump.
  EXPECT_EQ(f.ApplyCarrying({DoubleSign(1, 5)}, /*height_jump=*/vm::kEvidenceMaxAge + 5).reason(), "evidence-too-old");
  EXPECT_EQ(f.Included({DoubleSign(1, 5)}, /*height_jump=*/vm::kEvidenceMaxAge + 5), 0u);
  EXPECT_EQ(f.Included({DoubleSign(1, 5)}, /*height_jump=*/vm::kEvidenceMaxAge + 4), 1u);  // exactly the window
  EXPECT_EQ(f.ApplyCarrying({DoubleSign(1, 2)}).reason(), "evidence-from-future");
  EXPECT_EQ(f.Included({DoubleSign(1, 2)}), 0u);
  EXPECT_EQ(f.Included({DoubleSign(1, 1)}), 1u);  // the block's own height
}

TEST(Evidence, TooManyItemsOrBadRootIsRefused) {
  Fixture f;
  std::vector<Bytes> many;
  for (std::uint32_t r = 0; r <= vm::kMaxBlockEvidence; ++r) many.push_back(DoubleSign(2, 1, r));
  EXPECT_EQ(f.ApplyCarrying(many).reason(), "block-too-much-evidence");
  // A proposer includes at most the cap.
  EXPECT_EQ(f.Produce(many).block.evidence.size(), vm::kMaxBlockEvidence);
  // The decoder refuses more items, and larger ones, before reading them.
  vm::Block b;
  b.evidence = many;
  b.evidence.push_back(DoubleSign(2, 1, 99));
  EXPECT_FALSE(DecodeExact<vm::Block>(EncodeToBytes(b)).ok());
  b.evidence = {Bytes(vm::kMaxEvidenceBytes + 1, 0)};
  EXPECT_FALSE(DecodeExact<vm::Block>(EncodeToBytes(b)).ok());
  b.evidence = {DoubleSign(2, 1, 0)};
  auto round_trip = DecodeExact<vm::Block>(EncodeToBytes(b));
  ASSERT_TRUE(round_trip.ok());
  EXPECT_EQ(*round_trip, b);
}

TEST(Evidence, AChainWithoutRulesRefusesEvidence) {
  vm::ContractRegistry registry;
  const vm::Vm plain(registry, nullptr);
  vm::MemoryStateStore store;
  vm::Genesis g;
  g.params.chain_id = kChain;
  const vm::ChainTip tip = plain.ApplyGenesis(store, g).value();
  vm::StateOverlay scratch(store);
  auto built = plain.ProduceBlock(scratch, tip, {}, 1, KeyOf(0), nullptr, {DoubleSign(1, 1)});
  ASSERT_TRUE(built.ok());
  EXPECT_TRUE(built->block.evidence.empty());
}

// Property: validators sign random votes over a few heights, rounds and
// types; the honest ones sign at most one per (height, round, type) (what
// the driver's persisted safety state guarantees), the Byzantine one up to
// three. Every pair of signed votes, in both orders, and forged variants,
// is offered as evidence. Only pairs that are real double-signs verify, so
// the honest validators' bonds never move, and the Byzantine one is slashed
// exactly once per (height, round, type) it double-signed.
TEST(Evidence, OnlyRealDoubleSignsAreEvidenceAndHonestValidatorsAreNeverSlashed) {
  const std::uint64_t seed = test::TestSeed();
  std::mt19937_64 rng(seed);
  constexpr int kTrials = 25;
  std::size_t verified_total = 0;
  std::vector<crypto::PublicKey> keys;
  for (std::size_t v = 0; v < kValidators; ++v) keys.push_back(KeyOf(v).public_key());
  const consensus::ValidatorSet set = consensus::ValidatorSet::Create(keys).value();
  for (int trial = 0; trial < kTrials; ++trial) {
    Fixture f;
    // Enough empty blocks that every offence height (1..3) is in the past.
    for (int i = 0; i < 3; ++i) f.Produce({});
    const std::size_t byzantine = rng() % kValidators;
    std::vector<consensus::Vote> votes;
    for (std::size_t who = 0; who < kValidators; ++who)
      for (std::uint64_t h = 1; h <= 3; ++h)
        for (std::uint32_t r = 0; r < 2; ++r)
          for (auto t : {consensus::VoteType::kPrevote, consensus::VoteType::kPrecommit}) {
            const int count = who == byzantine ? static_cast<int>(rng() % 4) : static_cast<int>(rng() % 2);
            for (int k = 0; k < count; ++k) {
              const std::uint64_t pick = rng() % 4;  // nil or one of three blocks
              votes.push_back(Signed(who, t, h, r, pick == 0 ? std::nullopt : std::optional(BlockId(static_cast<std::uint8_t>(pick)))));
            }
          }
    std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, consensus::VoteType>> real;
    std::vector<Bytes> offered;
    for (std::size_t i = 0; i < votes.size(); ++i)
      for (std::size_t j = 0; j < votes.size(); ++j) {
        if (i == j) continue;
        const consensus::Vote& a = votes[i];
        const consensus::Vote& b = votes[j];
        const bool double_sign = a.validator == b.validator && a.height == b.height && a.round == b.round &&
                                 a.type == b.type && a.block != b.block;
        const bool verified = consensus::VerifyEvidence(kChain, set, consensus::MakeEvidence(a, b)).ok();
        ASSERT_EQ(verified, double_sign) << "seed " << seed << " trial " << trial;
        if (double_sign) {
          ASSERT_EQ(a.validator, byzantine) << "an honest validator double-signed in the test itself";
          real.emplace(a.validator, a.height, a.round, a.type);
        }
        if ((i + j) % 5 == 0) offered.push_back(EncodeEvidence(consensus::MakeEvidence(a, b)));
        if ((i * 7 + j) % 11 == 0) {  // a forged one: a flipped bit anywhere
          Bytes bad = EncodeEvidence(consensus::MakeEvidence(a, b));
          bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          offered.push_back(std::move(bad));
        }
      }
    // Every real offence is offered at least once, in canonical form.
    for (std::size_t i = 0; i < votes.size(); ++i)
      for (std::size_t j = i + 1; j < votes.size(); ++j)
        if (votes[i].validator == votes[j].validator && votes[i].height == votes[j].height &&
            votes[i].round == votes[j].round && votes[i].type == votes[j].type && votes[i].block != votes[j].block)
          offered.push_back(EncodeEvidence(consensus::MakeEvidence(votes[i], votes[j])));
    std::shuffle(offered.begin(), offered.end(), rng);
    // Blocks take what applies, kMaxBlockEvidence at a time.
    for (int guard = 0; guard < 64; ++guard) {
      if (f.Produce(offered, /*proposer=*/(byzantine + 1) % kValidators).block.evidence.empty()) break;
    }
    for (std::size_t who = 0; who < kValidators; ++who) {
      if (who == byzantine) continue;
      EXPECT_EQ(f.Bond(who), kBond) << "seed " << seed << " trial " << trial << ": honest v" << who << " slashed";
      EXPECT_EQ(f.Offences(who), 0u);
    }
    EXPECT_EQ(f.Offences(byzantine), real.size()) << "seed " << seed << " trial " << trial;
    vm::Amount bond = kBond;
    for (std::size_t k = 0; k < real.size(); ++k) bond -= vm::SlashAmount(bond);
    EXPECT_EQ(f.Bond(byzantine), bond);
    ASSERT_TRUE(vm::AuditSupply(f.state()).ok());
    verified_total += real.size();
  }
  EXPECT_GT(verified_total, 0u) << "the property never met a double-sign";
  std::printf("[evidence] %d trials, %zu offences slashed, seed %llu\n", kTrials, verified_total,
              static_cast<unsigned long long>(seed));
}

}  // namespace
}  // namespace vt::node
