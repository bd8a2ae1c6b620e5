// Signed votes, commit certificates and equivocation evidence with real
// BIP-340 keys: every forgery a peer could try is refused with its reason.

#include <gtest/gtest.h>

#include "consensus/commit.h"
#include "consensus/messages.h"
#include "consensus/state_machine.h"
#include "consensus/wire.h"

namespace vt::consensus {
namespace {

constexpr std::uint64_t kChain = 7;

crypto::SecretKey KeyOf(int i) {
  std::array<std::uint8_t, 32> b{};
  b[31] = static_cast<std::uint8_t>(i + 1);
  b[0] = 0x42;
  return std::move(crypto::SecretKey::FromBytes(b).value());
}

Hash256 H(std::uint8_t x) {
  Hash256 h;
  h.bytes.fill(x);
  return h;
}

struct Fixture : ::testing::Test {
  Fixture() {
    std::vector<crypto::PublicKey> pubs;
    for (int i = 0; i < 4; ++i) {
      keys.push_back(KeyOf(i));
      pubs.push_back(keys.back().public_key());
    }
    set = std::make_unique<ValidatorSet>(ValidatorSet::Create(pubs).value());
  }
  Vote Signed(int who, VoteType type, std::uint64_t height, std::uint32_t round, std::optional<Hash256> block,
              std::uint64_t chain = kChain) {
    Vote v{type, height, round, block, static_cast<std::uint32_t>(who), {}};
    EXPECT_TRUE(SignVote(chain, keys[static_cast<std::size_t>(who)], v).ok());
    return v;
  }
  CommitCertificate Cert(std::vector<int> who, std::uint64_t height, const Hash256& block) {
    std::vector<Vote> pcs;
    for (int w : who) pcs.push_back(Signed(w, VoteType::kPrecommit, height, 2, block));
    return MakeCertificate(height, 2, block, pcs);
  }
  std::vector<crypto::SecretKey> keys;
  std::unique_ptr<ValidatorSet> set;
};

TEST_F(Fixture, ValidatorSetQuorumAndRotation) {
  EXPECT_EQ(set->size(), 4u);
  EXPECT_EQ(set->faulty(), 1u);
  EXPECT_EQ(set->quorum(), 3u);
  EXPECT_EQ(set->Proposer(5, 0), 1u);
  EXPECT_EQ(set->Proposer(5, 3), 0u);
  std::vector<crypto::PublicKey> dup{keys[0].public_key(), keys[0].public_key()};
  EXPECT_EQ(ValidatorSet::Create(dup).status().reason(), "consensus-duplicate-validator");
  EXPECT_EQ(ValidatorSet::Create({}).status().reason(), "consensus-no-validators");
  // Quorums of any n intersect in more than f validators: 2q − n ≥ f + 1.
  for (std::size_t n = 1; n <= 40; ++n) {
    std::vector<crypto::PublicKey> pubs;
    for (std::size_t i = 0; i < n; ++i) pubs.push_back(KeyOf(static_cast<int>(i)).public_key());
    const auto s = ValidatorSet::Create(pubs).value();
    EXPECT_GE(2 * s.quorum(), n + s.faulty() + 1) << n;
    EXPECT_LE(s.quorum(), n - s.faulty()) << n;  // the honest ones alone are a quorum
  }
}

TEST_F(Fixture, VotesAndProposalsRoundTripAndVerify) {
  const Vote v = Signed(2, VoteType::kPrecommit, 9, 4, H(3));
  EXPECT_EQ(DecodeExact<Vote>(EncodeToBytes(v)).value(), v);
  EXPECT_LE(EncodeToBytes(v).size(), kVoteBytes);
  EXPECT_TRUE(VerifyVote(kChain, *set, v).ok());
  const Vote nil = Signed(2, VoteType::kPrevote, 9, 4, std::nullopt);
  EXPECT_EQ(DecodeExact<Vote>(EncodeToBytes(nil)).value(), nil);
  EXPECT_TRUE(VerifyVote(kChain, *set, nil).ok());

  Vote other_signer = v;
  other_signer.validator = 1;  // claims to be someone else
  EXPECT_EQ(VerifyVote(kChain, *set, other_signer).reason(), "consensus-bad-signature");
  Vote out_of_set = v;
  out_of_set.validator = 4;
  EXPECT_EQ(VerifyVote(kChain, *set, out_of_set).reason(), "consensus-bad-validator");
  Vote retyped = v;
  retyped.type = VoteType::kPrevote;  // a prevote is no precommit
  EXPECT_EQ(VerifyVote(kChain, *set, retyped).reason(), "consensus-bad-signature");
  EXPECT_EQ(VerifyVote(kChain + 1, *set, v).reason(), "consensus-bad-signature");  // another chain

  Bytes bad = EncodeToBytes(v);
  bad[0] = 3;  // no such vote type
  EXPECT_EQ(DecodeExact<Vote>(bad).status().reason(), "enc-unknown-enum");

  Proposal p{9, 4, 1, H(5), set->Proposer(9, 4), {}};
  ASSERT_TRUE(SignProposal(kChain, keys[p.proposer], p).ok());
  EXPECT_EQ(DecodeExact<Proposal>(EncodeToBytes(p)).value(), p);
  EXPECT_LE(EncodeToBytes(p).size(), kProposalBytes);
  EXPECT_TRUE(VerifyProposal(kChain, *set, p).ok());
  Proposal wrong = p;
  wrong.round = 5;  // someone else's turn
  EXPECT_EQ(VerifyProposal(kChain, *set, wrong).reason(), "consensus-wrong-proposer");
  Proposal vr = p;
  vr.valid_round = 4;  // a polka round must be earlier than the round
  EXPECT_EQ(VerifyProposal(kChain, *set, vr).reason(), "consensus-bad-valid-round");
}

TEST_F(Fixture, CertificateNeedsAQuorumOfDistinctValidSignatures) {
  const Hash256 b = H(7);
  const CommitCertificate good = Cert({3, 0, 2}, 11, b);
  EXPECT_TRUE(VerifyCertificate(kChain, *set, good, 11, b).ok());
  EXPECT_EQ(DecodeExact<CommitCertificate>(EncodeToBytes(good)).value(), good);
  EXPECT_EQ(good.sigs.front().validator, 0u);  // sorted

  EXPECT_EQ(VerifyCertificate(kChain, *set, Cert({0, 1}, 11, b), 11, b).reason(), "commit-no-quorum");
  EXPECT_EQ(VerifyCertificate(kChain, *set, good, 12, b).reason(), "commit-wrong-height");
  EXPECT_EQ(VerifyCertificate(kChain, *set, good, 11, H(8)).reason(), "commit-wrong-block");
  EXPECT_EQ(VerifyCertificate(kChain + 1, *set, good, 11, b).reason(), "consensus-bad-signature");

  CommitCertificate twice = good;  // one validator counted twice
  twice.sigs[1] = twice.sigs[0];
  EXPECT_EQ(VerifyCertificate(kChain, *set, twice, 11, b).reason(), "commit-unsorted");
  CommitCertificate outside = good;
  outside.sigs.back().validator = 9;
  EXPECT_EQ(VerifyCertificate(kChain, *set, outside, 11, b).reason(), "commit-unsorted");
  CommitCertificate moved = good;  // the signatures were for round 2
  moved.round = 3;
  EXPECT_EQ(VerifyCertificate(kChain, *set, moved, 11, b).reason(), "consensus-bad-signature");
  // Prevotes are not precommits.
  std::vector<Vote> prevotes;
  for (int w : {0, 1, 2}) prevotes.push_back(Signed(w, VoteType::kPrevote, 11, 2, b));
  CommitCertificate from_prevotes = good;
  for (std::size_t i = 0; i < 3; ++i) from_prevotes.sigs[i] = CommitSig{prevotes[i].validator, prevotes[i].sig};
  EXPECT_EQ(VerifyCertificate(kChain, *set, from_prevotes, 11, b).reason(), "consensus-bad-signature");
  // A count above the cap is refused before anything is allocated for it.
  Writer w;
  w.PutU64(11);
  w.PutU32(2);
  w.PutHash(b);
  w.PutVarint(kMaxValidators + 1);
  EXPECT_EQ(DecodeExact<CommitCertificate>(w.bytes()).status().reason(), "enc-length-over-cap");
}

TEST_F(Fixture, EvidenceIsTwoConflictingSignedVotesInOneOrder) {
  const Vote a = Signed(1, VoteType::kPrevote, 4, 0, H(1));
  const Vote b = Signed(1, VoteType::kPrevote, 4, 0, H(2));
  const DuplicateVote ev = MakeEvidence(b, a);
  EXPECT_EQ(ev.a, a);  // canonical: the lower block first
  EXPECT_TRUE(VerifyEvidence(kChain, *set, ev).ok());
  EXPECT_EQ(DecodeExact<DuplicateVote>(EncodeToBytes(ev)).value(), ev);
  const Vote nil = Signed(1, VoteType::kPrevote, 4, 0, std::nullopt);
  EXPECT_TRUE(VerifyEvidence(kChain, *set, MakeEvidence(a, nil)).ok());  // nil vs a block also conflicts
  EXPECT_EQ(MakeEvidence(a, nil).a, nil);

  EXPECT_EQ(VerifyEvidence(kChain, *set, DuplicateVote{b, a}).reason(), "evidence-not-canonical");
  EXPECT_EQ(VerifyEvidence(kChain, *set, DuplicateVote{a, a}).reason(), "evidence-not-conflicting");
  const Vote next_round = Signed(1, VoteType::kPrevote, 4, 1, H(2));
  EXPECT_EQ(VerifyEvidence(kChain, *set, MakeEvidence(a, next_round)).reason(), "evidence-not-conflicting");
  const Vote precommit = Signed(1, VoteType::kPrecommit, 4, 0, H(2));
  EXPECT_EQ(VerifyEvidence(kChain, *set, MakeEvidence(a, precommit)).reason(), "evidence-not-conflicting");
  const Vote someone_else = Signed(2, VoteType::kPrevote, 4, 0, H(2));
  EXPECT_EQ(VerifyEvidence(kChain, *set, MakeEvidence(a, someone_else)).reason(), "evidence-not-conflicting");
  // Framing: an honest vote beside a forged one of the same validator.
  Vote forged = b;
  forged.sig = a.sig;
  EXPECT_EQ(VerifyEvidence(kChain, *set, MakeEvidence(a, forged)).reason(), "consensus-bad-signature");
}

TEST_F(Fixture, WireMessagesRoundTripAndResendsAreNewToGossip) {
  const Vote v = Signed(1, VoteType::kPrevote, 3, 0, H(4));
  const Bytes first = EncodeMsg(v);
  const Bytes again = EncodeMsg(v, 7);
  EXPECT_NE(first, again);  // another content id, the same vote
  EXPECT_EQ(std::get<Vote>(DecodeMsg(first).value()), v);
  EXPECT_EQ(std::get<Vote>(DecodeMsg(again).value()), v);
  Proposal p{3, 0, std::nullopt, H(4), set->Proposer(3, 0), {}};
  ASSERT_TRUE(SignProposal(kChain, keys[p.proposer], p).ok());
  const ProposalMsg pm{p, Bytes{1, 2, 3}};
  EXPECT_EQ(std::get<ProposalMsg>(DecodeMsg(EncodeMsg(pm)).value()), pm);
  Bytes junk = first;
  junk[0] = 9;
  EXPECT_EQ(DecodeMsg(junk).status().reason(), "consensus-malformed");
  Bytes trailing = first;
  trailing.push_back(0);
  EXPECT_EQ(DecodeMsg(trailing).status().reason(), "consensus-malformed");
  const FinalBlock fb{Bytes{9, 9}, Cert({0, 1, 2}, 5, H(6))};
  EXPECT_EQ(DecodeExact<FinalBlock>(EncodeToBytes(fb)).value(), fb);
}

TEST(SafetyStateCodec, RoundTrips) {
  SafetyState s{12, 3, Step::kPrecommit, 2, H(4), 3, H(5)};
  EXPECT_EQ(DecodeExact<SafetyState>(EncodeToBytes(s)).value(), s);
  SafetyState fresh;
  EXPECT_EQ(DecodeExact<SafetyState>(EncodeToBytes(fresh)).value(), fresh);
}

}  // namespace
}  // namespace vt::consensus
