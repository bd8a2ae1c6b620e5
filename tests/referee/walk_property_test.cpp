// Property tests of the leftmost-difference walk as the referee runs it:
// random histories of up to 2^30 leaves with a random first divergence end
// at exactly that leaf, in as many moves as the leaf has two-child ancestors
// (= ceil(log2 n) for a power of two, never more). The trees are virtual
// (piecewise-constant leaves), so 2^30 leaves cost microseconds.

#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/history.h"
#include "tests/referee/scenario.h"
#include "tests/referee/virtual_tree.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

Hash256 RandomHash(std::mt19937_64& rng) {
  Hash256 h;
  for (auto& b : h.bytes) b = static_cast<std::uint8_t>(rng());
  return h;
}

unsigned CeilLog2(std::uint64_t n) { return n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1)); }

// Two parties' trees over n leaves that agree on [0, d) (several common
// segments) and differ from d on (segments of their own).
std::pair<VirtualTree, VirtualTree> DivergingTrees(std::mt19937_64& rng, std::uint64_t n, std::uint64_t d,
                                                   const std::optional<Hash256>& first_leaf = std::nullopt) {
  std::vector<std::uint64_t> cuts{0};
  if (first_leaf && d > 1) cuts.push_back(1);
  for (int k = 0; k < 3 && d > 1; ++k) cuts.push_back(1 + rng() % (d - 1));
  cuts.push_back(d);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<VirtualTree::Segment> common;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const Hash256 v = (k == 0 && first_leaf) ? *first_leaf : RandomHash(rng);
    common.push_back({cuts[k], cuts[k + 1], v});
  }
  auto tail = [&]() {
    std::vector<VirtualTree::Segment> s = common;
    std::uint64_t at = d;
    while (at < n) {
      const std::uint64_t end = (rng() % 2 == 0) ? n : at + 1 + rng() % (n - at);
      s.push_back({at, end, RandomHash(rng)});
      at = end;
    }
    return VirtualTree(std::move(s));
  };
  VirtualTree a = tail();
  VirtualTree b = tail();
  return {std::move(a), std::move(b)};
}

std::uint64_t RandomLeafCount(std::mt19937_64& rng) {
  const unsigned bits = 1 + static_cast<unsigned>(rng() % 30);  // 2 .. 2^30
  const std::uint64_t hi = std::uint64_t{1} << bits;
  return std::max<std::uint64_t>(2, hi / 2 + 1 + rng() % (hi / 2));
}

// The referee's walk (transcript + replay), driven to the end by honest parties.
TEST(WalkProperty, EndsAtTheFirstDivergenceInAtMostCeilLog2Moves) {
  std::mt19937_64 rng(TestSeed());
  for (int trial = 0; trial < 200; ++trial) {
    const std::uint64_t n = trial == 0 ? (std::uint64_t{1} << 30) : RandomLeafCount(rng);
    const std::uint64_t d = rng() % n;
    auto [a, b] = DivergingTrees(rng, n, d);
    referee::WalkTranscript t{n, {a.root(), b.root()}, {a.top(), b.top()}, {}};
    while (true) {
      auto walk = referee::ReplayWalk(t);
      ASSERT_TRUE(walk.ok()) << walk.status().ToString();
      if (walk->phase() == crypto::MerkleWalk::Phase::kDone) {
        EXPECT_EQ(walk->disputed_leaf(), d) << "n=" << n;
        EXPECT_EQ(walk->moves(), crypto::MerkleShape(n).ProofLength(d));
        EXPECT_LE(walk->moves(), CeilLog2(n));
        if (std::has_single_bit(n)) {
          EXPECT_EQ(walk->moves(), CeilLog2(n));
        }
        EXPECT_EQ(walk->leaf_hash(crypto::MerkleWalk::Party::kA), a.Leaf(d));
        EXPECT_EQ(walk->leaf_hash(crypto::MerkleWalk::Party::kB), b.Leaf(d));
        break;
      }
      t.reveals[0].push_back(a.Children(walk->current()));
      t.reveals[1].push_back(b.Children(walk->current()));
      ASSERT_LE(t.reveals[0].size(), 64u);
    }
  }
}

TEST(WalkProperty, VirtualTreeMatchesAMaterialisedTree) {
  std::mt19937_64 rng(TestSeed());
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint64_t n = 1 + rng() % 300;
    const std::uint64_t d = rng() % n;
    auto trees = DivergingTrees(rng, n, d);
    VirtualTree& v = trees.first;
    std::vector<Hash256> leaves;
    for (std::uint64_t i = 0; i < n; ++i) leaves.push_back(v.Leaf(i));
    const crypto::MerkleTree real = crypto::MerkleTree::FromLeafHashes(leaves);
    ASSERT_EQ(v.root(), real.root()) << "n=" << n;
    const std::uint64_t i = rng() % n;
    EXPECT_EQ(v.Prove(i), real.Prove(i));
  }
}

// The same through the chain: a job of N = n-1 steps with one checkpoint
// interval, so the step level walks n = N+1 leaves (up to 2^30), every move a
// signed transaction in a block.
TEST(WalkProperty, ThroughTheChainUpTo2Pow30Leaves) {
  std::mt19937_64 rng(TestSeed() ^ 0x5eed);
  referee::Referee referee;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  vm::ContractRegistry registry;
  registry.Register(referee::kRefereeContractId, &referee);
  TestChain chain(registry, &arbiter, 3, 1'000'000'000'000);
  const crypto::SecretKey client = TestKey(1), solver = TestKey(2), challenger = TestKey(3);
  auto call = [&](const crypto::SecretKey& k, referee::Method m, Bytes args) {
    return chain.Call(k, referee::kRefereeContractId, static_cast<std::uint16_t>(m), std::move(args));
  };
  auto expect_ok = [&](const vm::Receipt& r) { EXPECT_TRUE(r.success) << r.reason; };

  const std::vector<std::uint64_t> sizes = {std::uint64_t{1} << 30, RandomLeafCount(rng), RandomLeafCount(rng), 2};
  for (std::size_t trial = 0; trial < sizes.size(); ++trial) {
    const std::uint64_t n = sizes[trial];
    const std::uint64_t steps = n - 1 == 0 ? 1 : n - 1;
    const std::uint64_t leaves = steps + 1;
    const std::uint64_t d = 1 + rng() % steps;  // leaf 0 is the agreed h_0
    SCOPED_TRACE("n=" + std::to_string(leaves) + " d=" + std::to_string(d));
    TinyJob tiny = MakeTinyJob(steps, steps, kernels::Mode::kRepops);
    const std::uint64_t bounty = trial;
    const std::uint64_t game = trial;

    auto [s_tree, c_tree] = DivergingTrees(rng, leaves, d, tiny.initial_state);
    const crypto::MerkleTree s_cp = crypto::MerkleTree::FromLeafHashes({tiny.initial_state, s_tree.Leaf(steps)});
    const crypto::MerkleTree c_cp = crypto::MerkleTree::FromLeafHashes({tiny.initial_state, c_tree.Leaf(steps)});

    const vm::Amount bond = MinimumBond(tiny.job);
    expect_ok(chain.Run(call(client, referee::Method::kPostBounty,
                             EncodeToBytes(referee::PostBountyArgs{tiny.job, tiny.initial_state, 1000, bond, bond, 10,
                                                                   10, 10, Hash256{}, 0}))));
    expect_ok(chain.Run(call(solver, referee::Method::kClaim, EncodeToBytes(referee::BountyIdArgs{bounty}))));
    referee::CommitArgs commit;
    commit.bounty_id = bounty;
    commit.commitment.bounty_id = bounty;
    commit.commitment.job_hash = protocol::JobHash(tiny.job);
    commit.commitment.checkpoint_root = s_cp.root();
    commit.commitment.final_state_hash = s_tree.Leaf(steps);
    commit.commitment.solver = solver.public_key().bytes();
    const std::array<std::uint8_t, 32> aux{};
    commit.commitment.signature =
        crypto::SignWithAux(solver, protocol::CommitmentSigningHash(commit.commitment).span(), aux)->bytes;
    commit.checkpoint_top = s_cp.top();
    commit.first_proof = s_cp.Prove(0);
    commit.last_proof = s_cp.Prove(1);
    commit.state_blob = commit.commitment.final_state_hash;  // any non-zero name: the referee never reads it
    commit.state_blob_bytes = 1;
    expect_ok(chain.Run(call(solver, referee::Method::kCommit, EncodeToBytes(commit))));
    expect_ok(chain.Run(call(challenger, referee::Method::kOpenGame,
                             EncodeToBytes(referee::OpenGameArgs{bounty, c_cp.root(), c_cp.top(), c_cp.Prove(0)}))));
    // Checkpoint level: two leaves, one move.
    chain.Submit(call(solver, referee::Method::kRevealChildren,
                      EncodeToBytes(referee::RevealChildrenArgs{game, s_cp.Children({1, 0})})));
    chain.Submit(call(challenger, referee::Method::kRevealChildren,
                      EncodeToBytes(referee::RevealChildrenArgs{game, c_cp.Children({1, 0})})));
    for (const auto& r : chain.Mine()) expect_ok(r);
    // Step roots.
    auto step_root = [&](VirtualTree& v, const crypto::MerkleTree& cp) {
      return referee::StepRootArgs{game,         v.root(),   v.top(), tiny.initial_state, cp.Prove(0),
                                   v.Prove(0), v.Prove(steps)};
    };
    chain.Submit(call(solver, referee::Method::kPostStepRoot, EncodeToBytes(step_root(s_tree, s_cp))));
    chain.Submit(call(challenger, referee::Method::kPostStepRoot, EncodeToBytes(step_root(c_tree, c_cp))));
    for (const auto& r : chain.Mine()) expect_ok(r);
    // The step walk, one block per round.
    std::optional<referee::WalkDoneEvent> done;
    for (int round = 0; round < 64 && !done; ++round) {
      auto t = referee::ReadWalk(chain.store(), game);
      ASSERT_TRUE(t.ok() && t->has_value());
      auto walk = referee::ReplayWalk(**t);
      ASSERT_TRUE(walk.ok());
      chain.Submit(call(solver, referee::Method::kRevealChildren,
                        EncodeToBytes(referee::RevealChildrenArgs{game, s_tree.Children(walk->current())})));
      chain.Submit(call(challenger, referee::Method::kRevealChildren,
                        EncodeToBytes(referee::RevealChildrenArgs{game, c_tree.Children(walk->current())})));
      for (const auto& r : chain.Mine()) {
        expect_ok(r);
        for (const auto& e : r.events)
          if (e.topic == referee::topics::kWalkDone) done = *DecodeExact<referee::WalkDoneEvent>(e.data);
      }
    }
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->level, referee::Level::kStep);
    EXPECT_EQ(done->index, d - 1) << "the disputed step goes h_{d-1} -> h_d";
    auto g = referee::ReadGame(chain.store(), game);
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->phase, referee::GamePhase::kNodeRoots);
    EXPECT_EQ(g->rounds[0], 1u);
    EXPECT_EQ(g->rounds[1], crypto::MerkleShape(leaves).ProofLength(d));
    EXPECT_LE(g->rounds[1], CeilLog2(leaves));
    EXPECT_EQ(g->step_leaf[0], s_tree.Leaf(d));
    EXPECT_EQ(g->step_leaf[1], c_tree.Leaf(d));
  }
}

}  // namespace
}  // namespace vt::test
