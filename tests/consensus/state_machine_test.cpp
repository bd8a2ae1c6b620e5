// The Tendermint rules one at a time, on one machine whose peers the test
// plays by hand (signatures are the driver's job and not needed here).

#include <gtest/gtest.h>

#include "consensus/state_machine.h"

namespace vt::consensus {
namespace {

Hash256 H(std::uint8_t x) {
  Hash256 h;
  h.bytes.fill(x);
  return h;
}

ValidatorSet FourValidators() {
  std::vector<crypto::PublicKey> pubs;
  for (int i = 0; i < 4; ++i) {
    std::array<std::uint8_t, 32> b{};
    b[31] = static_cast<std::uint8_t>(i + 1);
    pubs.push_back(crypto::SecretKey::FromBytes(b).value().public_key());
  }
  return ValidatorSet::Create(pubs).value();
}

template <typename A>
std::vector<A> Only(const Actions& actions) {
  std::vector<A> out;
  for (const Action& a : actions)
    if (const A* x = std::get_if<A>(&a)) out.push_back(*x);
  return out;
}

Vote V(VoteType t, std::uint32_t who, std::uint32_t round, std::optional<Hash256> b, std::uint64_t height = 1) {
  return Vote{t, height, round, b, who, {}};
}

// One machine at height 1; its own messages are fed back as the driver would.
struct One {
  explicit One(std::optional<std::uint32_t> self, SafetyState start = {})
      : m(FourValidators(), self, Timeouts{}, start) {}
  Actions Feed(Actions actions) {
    Actions all = actions;
    for (const Action& a : actions) {
      if (const auto* v = std::get_if<action::BroadcastVote>(&a)) {
        const Actions more = Feed(m.OnVote(v->vote));
        all.insert(all.end(), more.begin(), more.end());
      } else if (const auto* p = std::get_if<action::BroadcastProposal>(&a)) {
        const Actions more = Feed(m.OnProposal(p->proposal, true));
        all.insert(all.end(), more.begin(), more.end());
      }
    }
    return all;
  }
  Actions Vote(VoteType t, std::uint32_t who, std::uint32_t round, std::optional<Hash256> b) {
    return Feed(m.OnVote(V(t, who, round, b)));
  }
  Actions Propose(std::uint32_t round, const Hash256& b, std::optional<std::uint32_t> vr = {}, bool valid = true) {
    return Feed(m.OnProposal(Proposal{1, round, vr, b, m.validators().Proposer(1, round), {}}, valid));
  }
  Machine m;
};

TEST(Machine, ProposerDecidesWithAQuorumInRoundZero) {
  One one(1);  // validator 1 proposes height 1, round 0
  Actions a = one.Feed(one.m.Start());
  ASSERT_EQ(Only<action::BuildBlock>(a).size(), 1u);
  ASSERT_EQ(Only<action::ScheduleTimeout>(a).size(), 1u);
  a = one.Feed(one.m.OnBlockBuilt(1, 0, H(9)));
  ASSERT_EQ(Only<action::BroadcastProposal>(a).size(), 1u);
  const auto prevotes = Only<action::BroadcastVote>(a);
  ASSERT_EQ(prevotes.size(), 1u);
  EXPECT_EQ(prevotes[0].vote.block, H(9));
  EXPECT_EQ(one.m.step(), Step::kPrevote);
  EXPECT_TRUE(Only<action::BroadcastVote>(one.Vote(VoteType::kPrevote, 0, 0, H(9))).empty());
  a = one.Vote(VoteType::kPrevote, 2, 0, H(9));  // a polka: lock and precommit
  const auto precommits = Only<action::BroadcastVote>(a);
  ASSERT_EQ(precommits.size(), 1u);
  EXPECT_EQ(precommits[0].vote.type, VoteType::kPrecommit);
  EXPECT_EQ(one.m.safety().locked_block, H(9));
  EXPECT_TRUE(Only<action::Commit>(one.Vote(VoteType::kPrecommit, 3, 0, H(9))).empty());
  a = one.Vote(VoteType::kPrecommit, 0, 0, H(9));
  const auto commits = Only<action::Commit>(a);
  ASSERT_EQ(commits.size(), 1u);
  EXPECT_EQ(commits[0].height, 1u);
  EXPECT_EQ(commits[0].block, H(9));
  EXPECT_EQ(commits[0].precommits.size(), 3u);
  EXPECT_EQ(one.m.height(), 2u);
  EXPECT_FALSE(one.m.safety().locked_round);  // a new height forgets the lock
}

TEST(Machine, InvalidBlockGetsANilPrevote) {
  One one(0);
  one.Feed(one.m.Start());
  const auto votes = Only<action::BroadcastVote>(one.Propose(0, H(9), {}, false));
  ASSERT_EQ(votes.size(), 1u);
  EXPECT_FALSE(votes[0].vote.block);
  // Even a quorum of precommits does not make us commit a block we judged invalid.
  for (std::uint32_t w : {1u, 2u, 3u}) EXPECT_TRUE(Only<action::Commit>(one.Vote(VoteType::kPrecommit, w, 0, H(9))).empty());
}

TEST(Machine, LockHoldsUntilALaterPolkaUnlocksIt) {
  One one(0);
  one.Feed(one.m.Start());
  one.Propose(0, H(1));
  one.Vote(VoteType::kPrevote, 1, 0, H(1));
  one.Vote(VoteType::kPrevote, 2, 0, H(1));
  ASSERT_EQ(one.m.safety().locked_round, 0u);
  // The others precommit nil (they missed the polka): round 1 after the timeout.
  one.Vote(VoteType::kPrecommit, 1, 0, std::nullopt);
  const auto timeouts = Only<action::ScheduleTimeout>(one.Vote(VoteType::kPrecommit, 2, 0, std::nullopt));
  ASSERT_EQ(timeouts.size(), 1u);
  EXPECT_EQ(timeouts[0].step, Step::kPrecommit);
  one.Feed(one.m.OnTimeout(Step::kPrecommit, 1, 0));
  ASSERT_EQ(one.m.round(), 1u);
  // A fresh other block: locked on H(1), we prevote nil.
  auto votes = Only<action::BroadcastVote>(one.Propose(1, H(2)));
  ASSERT_EQ(votes.size(), 1u);
  EXPECT_FALSE(votes[0].vote.block);
  // We give up on round 1 before seeing its polka for H(2), so we stay locked on H(1)...
  one.Feed(one.m.OnTimeout(Step::kPrevote, 1, 1));
  for (std::uint32_t w : {1u, 2u, 3u}) one.Vote(VoteType::kPrevote, w, 1, H(2));
  EXPECT_EQ(one.m.safety().locked_block, H(1));
  EXPECT_EQ(one.m.safety().valid_block, H(2));
  // ...until a re-proposal of H(2) cites that polka, later than our lock (round 0): unlock.
  one.Vote(VoteType::kPrecommit, 1, 1, std::nullopt);
  one.Vote(VoteType::kPrecommit, 2, 1, std::nullopt);
  one.Feed(one.m.OnTimeout(Step::kPrecommit, 1, 1));
  ASSERT_EQ(one.m.round(), 2u);
  votes = Only<action::BroadcastVote>(one.Propose(2, H(2), 1));
  ASSERT_EQ(votes.size(), 1u);
  EXPECT_EQ(votes[0].vote.block, H(2));
}

TEST(Machine, ReproposalWithAnOlderPolkaThanTheLockIsRefused) {
  One one(0);
  one.Feed(one.m.Start());
  one.Feed(one.m.OnTimeout(Step::kPropose, 1, 0));  // nil prevote in round 0
  // Round 0 had a polka for H(2) that we only see now (we already prevoted): no lock, but valid.
  for (std::uint32_t w : {1u, 2u, 3u}) one.Vote(VoteType::kPrevote, w, 0, H(2));
  for (std::uint32_t w : {1u, 2u}) one.Vote(VoteType::kPrecommit, w, 0, std::nullopt);
  one.Feed(one.m.OnTimeout(Step::kPrecommit, 1, 0));
  // Round 1: we lock on H(1).
  one.Propose(1, H(1));
  for (std::uint32_t w : {1u, 2u}) one.Vote(VoteType::kPrevote, w, 1, H(1));
  ASSERT_EQ(one.m.safety().locked_round, 1u);
  for (std::uint32_t w : {1u, 2u}) one.Vote(VoteType::kPrecommit, w, 1, std::nullopt);
  one.Feed(one.m.OnTimeout(Step::kPrecommit, 1, 1));
  // Round 2 re-proposes H(2) citing the round-0 polka, older than our lock: nil.
  const auto votes = Only<action::BroadcastVote>(one.Propose(2, H(2), 0));
  ASSERT_EQ(votes.size(), 1u);
  EXPECT_FALSE(votes[0].vote.block);
}

TEST(Machine, EquivocationIsReportedOnceAndCountsOnlyForProposedBlocks) {
  One one(0);
  one.Feed(one.m.Start());
  one.Propose(0, H(1));
  EXPECT_TRUE(Only<action::Evidence>(one.Vote(VoteType::kPrevote, 3, 0, H(1))).empty());
  auto ev = Only<action::Evidence>(one.Vote(VoteType::kPrevote, 3, 0, H(2)));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].first.block, H(1));
  EXPECT_EQ(ev[0].second.block, H(2));
  EXPECT_TRUE(Only<action::Evidence>(one.Vote(VoteType::kPrevote, 3, 0, std::nullopt)).empty());
  EXPECT_TRUE(Only<action::Evidence>(one.Vote(VoteType::kPrevote, 3, 0, H(1))).empty());  // a repeat is no evidence
  // H(2) was never proposed, so validator 3 counts once for H(1) (and for
  // nil): 0 and 3 prevoted H(1), no polka yet.
  EXPECT_EQ(one.m.step(), Step::kPrevote);
  EXPECT_FALSE(one.m.safety().locked_round);
  one.Vote(VoteType::kPrevote, 1, 0, H(1));
  EXPECT_EQ(one.m.safety().locked_round, 0u);
}

// An equivocator that reaches us first with another vote cannot hide a
// polka: its vote for the proposed block counts too (safe: two quorums for
// different blocks would still need f+1 equivocators).
TEST(Machine, AnEquivocatorCannotHideAPolkaByVotingOtherwiseFirst) {
  One one(0);
  one.Feed(one.m.Start());
  one.Vote(VoteType::kPrevote, 3, 0, std::nullopt);  // to us: nil
  one.Propose(0, H(1));                              // we prevote H(1)
  one.Vote(VoteType::kPrevote, 1, 0, H(1));
  EXPECT_FALSE(one.m.safety().locked_round);
  const auto ev = Only<action::Evidence>(one.Vote(VoteType::kPrevote, 3, 0, H(1)));  // relayed by a peer: H(1)
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_EQ(one.m.safety().locked_round, 0u);
  EXPECT_EQ(one.m.safety().locked_block, H(1));
}

TEST(Machine, FPlusOneInAHigherRoundPullsUsThereButFDoNot) {
  One one(0);
  one.Feed(one.m.Start());
  one.Vote(VoteType::kPrevote, 3, 50, std::nullopt);
  one.Vote(VoteType::kPrecommit, 3, 4'000'000'000u, std::nullopt);  // far beyond the window: not stored
  EXPECT_EQ(one.m.round(), 0u);
  one.Vote(VoteType::kPrevote, 2, 7, std::nullopt);
  EXPECT_EQ(one.m.round(), 7u);  // the second-highest of {4e9, 7}: at least one honest is there
}

TEST(Machine, RestartedFromItsSafetyStateItNeverVotesTwiceInAStep) {
  One one(0);
  one.Feed(one.m.Start());
  one.Propose(0, H(1));  // prevoted H(1)
  const SafetyState saved = one.m.safety();
  ASSERT_EQ(saved.step, Step::kPrevote);
  One again(0, saved);
  const Actions start = again.Feed(again.m.Start());
  EXPECT_TRUE(Only<action::BroadcastVote>(start).empty());
  ASSERT_EQ(Only<action::ScheduleTimeout>(start).size(), 1u);
  EXPECT_TRUE(Only<action::BroadcastVote>(again.Propose(0, H(2))).empty());  // no second prevote for another block
  // But it still finishes the round: a polka makes it precommit.
  again.Vote(VoteType::kPrevote, 1, 0, H(2));
  again.Vote(VoteType::kPrevote, 2, 0, H(2));
  const auto pc = Only<action::BroadcastVote>(again.Vote(VoteType::kPrevote, 3, 0, H(2)));
  ASSERT_EQ(pc.size(), 1u);
  EXPECT_EQ(pc[0].vote.type, VoteType::kPrecommit);
}

TEST(Machine, AFollowerDecidesWithoutVoting) {
  One one(std::nullopt);
  one.Feed(one.m.Start());
  Actions a = one.Propose(0, H(5));
  for (std::uint32_t w : {0u, 1u, 2u}) {
    const Actions more = one.Vote(VoteType::kPrecommit, w, 0, H(5));
    a.insert(a.end(), more.begin(), more.end());
  }
  EXPECT_TRUE(Only<action::BroadcastVote>(a).empty());
  ASSERT_EQ(Only<action::Commit>(a).size(), 1u);
  EXPECT_EQ(one.m.height(), 2u);
}

TEST(Machine, EarlyVotesForTheNextHeightAreKeptBounded) {
  One one(std::nullopt);
  one.Feed(one.m.Start());
  // Next-height precommits arrive before this height's; a spammer's flood is capped.
  for (std::uint32_t r = 0; r < 1000; ++r) (void)one.m.OnVote(V(VoteType::kPrevote, 3, r, H(8), 2));
  for (std::uint32_t w : {0u, 1u, 2u}) (void)one.m.OnVote(V(VoteType::kPrecommit, w, 0, H(8), 2));
  one.Propose(0, H(5));
  for (std::uint32_t w : {0u, 1u, 2u}) one.Vote(VoteType::kPrecommit, w, 0, H(5));
  ASSERT_EQ(one.m.height(), 2u);
  const auto commits = Only<action::Commit>(
      one.Feed(one.m.OnProposal(Proposal{2, 0, std::nullopt, H(8), one.m.validators().Proposer(2, 0), {}}, true)));
  ASSERT_EQ(commits.size(), 1u);  // the kept early precommits decided height 2
  EXPECT_EQ(commits[0].block, H(8));
}

TEST(Machine, AQuorumOfNilPrecommitsEndsTheRoundAtOnce) {
  One one(0);
  one.Feed(one.m.Start());
  one.Feed(one.m.OnTimeout(Step::kPropose, 1, 0));  // nothing proposed: prevote nil
  for (std::uint32_t w : {1u, 2u}) one.Vote(VoteType::kPrevote, w, 0, std::nullopt);  // precommit nil
  EXPECT_EQ(one.m.round(), 0u);
  one.Vote(VoteType::kPrecommit, 1, 0, std::nullopt);
  one.Vote(VoteType::kPrecommit, 2, 0, std::nullopt);  // 3 nil of 4: no block can win round 0
  EXPECT_EQ(one.m.round(), 1u);
}

TEST(Machine, TimeoutsGrowPerRound) {
  const Timeouts t{1000, 500, 400, 250};
  EXPECT_EQ(t.For(Step::kPropose, 0), 1000u);
  EXPECT_EQ(t.For(Step::kPrevote, 2), 1000u);
  EXPECT_EQ(t.For(Step::kPrecommit, 4), 1400u);
}

}  // namespace
}  // namespace vt::consensus
