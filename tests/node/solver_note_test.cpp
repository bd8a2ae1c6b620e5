// Solver notes (node/solver_note.h): what a node keeps and a client believes
// about a bounty's progress and the checkpoints its solver serves. The
// attacks come first: another key, a field changed after signing, a leaf
// that is not in the committed tree, a proof for another index, too many
// entries, notes on bounties that have no solver, stale replays, request
// floods; then random corruption of the encoded note, which must never
// yield a note that verifies and says something else.

#include <gtest/gtest.h>

#include <random>

#include "crypto/merkle.h"
#include "crypto/sha256.h"
#include "node/solver_note.h"
#include "protocol/types.h"
#include "tests/support/test_seed.h"

namespace vt::node {
namespace {

crypto::SecretKey Key() {
  auto k = crypto::SecretKey::Generate();
  if (!k.ok()) throw std::runtime_error("key");
  return std::move(k).value();
}

Hash256 H(std::uint64_t i) { return crypto::Sha256Digest(std::string_view("leaf " + std::to_string(i))); }

// A committed bounty of N = 10 steps, a checkpoint every 4: leaves 0, 4, 8, 10.
struct Fixture {
  crypto::SecretKey solver = Key();
  std::vector<Hash256> leaves{H(0), H(4), H(8), H(10)};
  crypto::MerkleTree tree = crypto::MerkleTree::FromLeafHashes(leaves);
  referee::Bounty bounty;

  Fixture() {
    bounty.id = 7;
    bounty.num_steps = 10;
    bounty.checkpoint_interval = 4;
    bounty.state = referee::BountyState::kCommitted;
    bounty.solver = solver.address();
    bounty.solver_key = solver.public_key().bytes();
    bounty.commitment.checkpoint_root = tree.root();
  }

  ServedCheckpoint Served(std::uint64_t i) const {
    return {i, leaves[i], crypto::Sha256Digest(std::string_view("file " + std::to_string(i))), 1000 + i,
            tree.Prove(i)};
  }

  SolverNote Note(std::vector<std::uint64_t> served = {1, 2}, std::uint64_t seq = 100) const {
    SolverNote n;
    n.bounty_id = 7;
    n.seq = seq;
    n.step = n.num_steps = 10;
    n.loss = 1.25f;
    for (std::uint64_t i : served) n.checkpoints.push_back(Served(i));
    EXPECT_TRUE(SignSolverNote(n, solver).ok());
    return n;
  }
};

std::string Reason(const Status& s) { return s.ok() ? "ok" : s.reason(); }

TEST(SolverNote, AnHonestNoteVerifiesAndRoundTrips) {
  Fixture f;
  const SolverNote n = f.Note();
  EXPECT_TRUE(VerifySolverNote(n, f.bounty).ok());
  auto back = DecodeExact<SolverNote>(EncodeToBytes(n));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, n);
  EXPECT_LE(EncodeToBytes(f.Note({0, 1, 2, 3})).size(), kMaxSolverNoteBytes);
}

TEST(SolverNote, ForgedOrAlteredNotesAreRefusedWithTheirReason) {
  Fixture f;
  const crypto::SecretKey mallory = Key();
  struct Case {
    std::string name;
    std::function<void(SolverNote&)> alter;
    bool resign;  // re-signed by the solver after the change (the solver itself lies)
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"signed by another key", [&](SolverNote& n) { ASSERT_TRUE(SignSolverNote(n, mallory).ok()); }, false,
       "note-bad-signature"},
      {"step changed after signing", [](SolverNote& n) { n.step = 3; }, false, "note-bad-signature"},
      {"loss changed after signing", [](SolverNote& n) { n.loss = 0.5f; }, false, "note-bad-signature"},
      {"blob swapped after signing", [](SolverNote& n) { n.checkpoints[0].blob = H(99); }, false,
       "note-bad-signature"},
      {"a leaf not in the committed tree", [](SolverNote& n) { n.checkpoints[0].state_hash = H(99); }, true,
       "note-bad-proof"},
      {"the proof of another index", [&](SolverNote& n) { n.checkpoints[0].proof = f.tree.Prove(2); }, true,
       "note-bad-checkpoint"},
      {"index and proof of another leaf, this leaf's hash",
       [&](SolverNote& n) {
         n.checkpoints[0].index = 2;
         n.checkpoints[0].proof = f.tree.Prove(2);
       },
       true, "note-bad-proof"},
      {"index beyond the tree", [](SolverNote& n) { n.checkpoints[0].index = 4; }, true, "note-bad-checkpoint"},
      {"a proof over another leaf count",
       [](SolverNote& n) {
         auto t = crypto::MerkleTree::FromLeafHashes({H(0), H(4), H(8), H(10), H(11)});
         n.checkpoints[0].proof = t.Prove(1);
       },
       true, "note-bad-checkpoint"},
      {"more steps than the job", [](SolverNote& n) { n.step = 11; }, true, "note-bad-step"},
      {"another N", [](SolverNote& n) { n.step = n.num_steps = 12; }, true, "note-bad-step"},
      {"another bounty", [](SolverNote& n) { n.bounty_id = 8; }, true, "note-wrong-bounty"},
      {"too many checkpoints",
       [&](SolverNote& n) {
         for (std::size_t i = n.checkpoints.size(); i <= kMaxServedCheckpoints; ++i)
           n.checkpoints.push_back(f.Served(i % 4));
       },
       true, "note-too-many-checkpoints"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SolverNote n = f.Note();
    c.alter(n);
    if (c.resign) {
      ASSERT_TRUE(SignSolverNote(n, f.solver).ok());
    }
    EXPECT_EQ(Reason(VerifySolverNote(n, f.bounty)), c.reason);
    SolverBoard board;
    EXPECT_EQ(Reason(board.Put(n, f.bounty)), c.reason) << "the node keeps only what verifies";
    EXPECT_FALSE(board.Get(7).has_value());
  }
  // Too many entries never even decode: the count is capped in the encoding.
  SolverNote many = f.Note();
  for (std::size_t i = many.checkpoints.size(); i <= kMaxServedCheckpoints; ++i) many.checkpoints.push_back(f.Served(0));
  EXPECT_FALSE(DecodeExact<SolverNote>(EncodeToBytes(many)).ok());
}

TEST(SolverNote, OnlyABountyWithASolverHasNotesAndCheckpointsComeAfterItsCommit) {
  Fixture f;
  for (auto [state, ok] : {std::pair{referee::BountyState::kOpen, false}, {referee::BountyState::kFailed, false},
                           {referee::BountyState::kRefunded, false}, {referee::BountyState::kFinalized, true}}) {
    f.bounty.state = state;
    EXPECT_EQ(VerifySolverNote(f.Note(), f.bounty).ok(), ok) << static_cast<int>(state);
  }
  f.bounty.state = referee::BountyState::kClaimed;
  EXPECT_TRUE(VerifySolverNote(f.Note({}), f.bounty).ok()) << "progress while training";
  EXPECT_EQ(Reason(VerifySolverNote(f.Note({1}), f.bounty)), "note-checkpoints-before-commit");
}

TEST(SolverNote, RandomCorruptionOfTheEncodedNoteNeverVerifiesAsSomethingElse) {
  Fixture f;
  const SolverNote honest = f.Note({0, 1, 2, 3});
  const Bytes bytes = EncodeToBytes(honest);
  std::mt19937_64 rng(test::TestSeed());
  int decoded = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Bytes bad = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < flips; ++i) bad[rng() % bad.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());  // and sometimes truncated
    auto n = DecodeExact<SolverNote>(bad);
    if (!n.ok()) continue;
    ++decoded;
    if (*n == honest) continue;  // flips that cancelled out
    EXPECT_FALSE(VerifySolverNote(*n, f.bounty).ok()) << "trial " << trial;
  }
  EXPECT_GT(decoded, 100) << "most single flips still decode: the signature is what refuses them";
}

TEST(SolverBoard, KeepsTheNewestNoteAndRefusesReplays) {
  Fixture f;
  SolverBoard board;
  ASSERT_TRUE(board.Put(f.Note({1}, 100), f.bounty).ok());
  EXPECT_EQ(Reason(board.Put(f.Note({1}, 100), f.bounty)), "note-stale");
  EXPECT_EQ(Reason(board.Put(f.Note({}, 99), f.bounty)), "note-stale");
  ASSERT_TRUE(board.Put(f.Note({2}, 101), f.bounty).ok());
  ASSERT_TRUE(board.Get(7).has_value());
  EXPECT_EQ(board.Get(7)->checkpoints.at(0).index, 2u);
  EXPECT_FALSE(board.Get(8).has_value());
}

TEST(SolverBoard, CheckpointRequestsAreBoundedAndClearedWhenServed) {
  Fixture f;
  f.bounty.num_steps = 40;  // 11 checkpoints: 0, 4, ..., 40
  f.bounty.checkpoint_interval = 4;
  SolverBoard board;
  EXPECT_EQ(Reason(board.Request(f.bounty, 11).status()), "checkpoint-out-of-range");
  for (std::uint64_t i = 0; i < kMaxCheckpointRequests; ++i) {
    auto r = board.Request(f.bounty, i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(*r);
  }
  EXPECT_TRUE(*board.Request(f.bounty, 0)) << "asking again costs nothing";
  EXPECT_EQ(Reason(board.Request(f.bounty, 9).status()), "checkpoint-requests-full");
  EXPECT_EQ(board.Requests(7).size(), kMaxCheckpointRequests);

  // The solver serves 1 and 2: those requests are done, and asking for them again needs nothing.
  Fixture g;
  g.bounty = f.bounty;
  g.leaves.clear();
  for (std::uint64_t s : protocol::CheckpointSteps(40, 4)) g.leaves.push_back(H(s));
  g.tree = crypto::MerkleTree::FromLeafHashes(g.leaves);
  g.bounty.commitment.checkpoint_root = g.tree.root();
  g.bounty.solver = g.solver.address();
  g.bounty.solver_key = g.solver.public_key().bytes();
  SolverNote n = g.Note({});
  n.step = n.num_steps = 40;
  n.checkpoints = {g.Served(1), g.Served(2)};
  ASSERT_TRUE(SignSolverNote(n, g.solver).ok());
  ASSERT_TRUE(board.Put(n, g.bounty).ok());
  EXPECT_EQ(board.Requests(7).size(), kMaxCheckpointRequests - 2);
  EXPECT_FALSE(*board.Request(g.bounty, 1));
  EXPECT_TRUE(*board.Request(g.bounty, 9)) << "room again";

  g.bounty.state = referee::BountyState::kClaimed;
  EXPECT_EQ(Reason(board.Request(g.bounty, 3).status()), "checkpoint-not-committed");
}

TEST(SolverBoard, HoldsAtMostKMaxNotedBounties) {
  Fixture f;
  f.bounty.num_steps = 40;
  SolverBoard board;
  for (std::uint64_t id = 0; id < kMaxNotedBounties + 10; ++id) {
    f.bounty.id = id;
    ASSERT_TRUE(board.Request(f.bounty, 1).ok());
  }
  std::size_t held = 0;
  for (std::uint64_t id = 0; id < kMaxNotedBounties + 10; ++id) held += board.Requests(id).empty() ? 0 : 1;
  EXPECT_EQ(held, kMaxNotedBounties);
  EXPECT_TRUE(board.Requests(0).empty()) << "the lowest ids go first";
  EXPECT_FALSE(board.Requests(kMaxNotedBounties + 9).empty());
}

}  // namespace
}  // namespace vt::node
