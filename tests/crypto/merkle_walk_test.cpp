// The leftmost-difference walk of the dispute game (crypto/merkle.h).
//
// How it is tested:
//  * against real trees for random sizes 1..1000 and random divergence sets:
//    the walk must stop at exactly the smallest differing index, report both
//    parties' leaf hashes there, and use exactly ProofLength(i) <= ceil(log2 n)
//    moves, whichever party reveals first;
//  * bad, duplicate and out-of-phase reveals are rejected with their stable
//    reason, blamed on the caller, and leave the walk unchanged;
//  * at 2^30 leaves and beyond with "virtual" trees: all leaves take a default
//    value except a few exceptions, so every complete subtree without an
//    exception has a hash that depends only on its level (memoised), and only
//    O(height * exceptions) nodes are ever hashed. The virtual tree is first
//    checked against MerkleTree for small sizes.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "crypto/merkle.h"
#include "tests/support/test_seed.h"

namespace vt::crypto {
namespace {

using Party = MerkleWalk::Party;
using Phase = MerkleWalk::Phase;

Hash256 RandomHash(std::mt19937_64& rng) {
  Hash256 h;
  for (auto& b : h.bytes) b = static_cast<std::uint8_t>(rng());
  return h;
}

unsigned CeilLog2(std::uint64_t n) {
  unsigned k = 0;
  while ((std::uint64_t{1} << k) < n) ++k;
  return k;
}

// A tree over n leaves that equal `fill` except at the given indices.
class VirtualTree {
 public:
  VirtualTree(std::uint64_t n, const Hash256& fill, std::map<std::uint64_t, Hash256> exceptions)
      : m_shape(n), m_fill(fill), m_exceptions(std::move(exceptions)) {
    m_uniform.push_back(fill);
    for (unsigned level = 1; level <= m_shape.height(); ++level) {
      m_uniform.push_back(MerkleNodeHash(m_uniform.back(), m_uniform.back()));
    }
  }

  const MerkleShape& shape() const { return m_shape; }
  Hash256 Leaf(std::uint64_t i) const {
    auto it = m_exceptions.find(i);
    return it == m_exceptions.end() ? m_fill : it->second;
  }
  Hash256 Node(MerkleNodeId id) const {
    const auto [first, last] = m_shape.LeafRange(id);
    const bool complete = last - first == std::uint64_t{1} << id.level;
    const auto it = m_exceptions.lower_bound(first);
    const bool has_exception = it != m_exceptions.end() && it->first < last;
    if (complete && !has_exception) return m_uniform[id.level];
    if (id.level == 0) return Leaf(id.index);
    const Hash256 left = Node({id.level - 1, 2 * id.index});
    if (m_shape.Kind(id) == MerkleNodeKind::kPromoted) return left;
    return MerkleNodeHash(left, Node({id.level - 1, 2 * id.index + 1}));
  }
  Hash256 Top() const { return Node({m_shape.height(), 0}); }
  Hash256 Root() const { return MerkleRootFromTop(m_shape.leaf_count(), Top()); }
  NodeReveal Children(MerkleNodeId id) const {
    return {Node({id.level - 1, 2 * id.index}), Node({id.level - 1, 2 * id.index + 1})};
  }

 private:
  MerkleShape m_shape;
  Hash256 m_fill;
  std::map<std::uint64_t, Hash256> m_exceptions;
  std::vector<Hash256> m_uniform;  // hash of a complete exception-free subtree, per level
};

// Drives the walk with honest reveals from two trees (MerkleTree or
// VirtualTree), alternating which party reveals first.
template <typename Tree>
void RunHonest(MerkleWalk& walk, const Tree& a, const Tree& b, std::mt19937_64& rng) {
  while (walk.phase() != Phase::kDone) {
    const bool a_first = (rng() & 1) != 0;
    for (int k = 0; k < 2; ++k) {
      const Party p = (k == 0) == a_first ? Party::kA : Party::kB;
      const Tree& t = p == Party::kA ? a : b;
      Status st = walk.phase() == Phase::kRevealTop ? walk.RevealTop(p, t.Top())
                                                    : walk.RevealChildren(p, t.Children(walk.current()));
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }
}

// MerkleTree with the accessors RunHonest expects.
struct RealTree {
  MerkleTree tree;
  Hash256 Top() const { return tree.top(); }
  Hash256 Root() const { return tree.root(); }
  NodeReveal Children(MerkleNodeId id) const { return tree.Children(id); }
};

TEST(MerkleWalkTest, VirtualTreeMatchesRealTree) {
  std::mt19937_64 rng(test::TestSeed());
  for (int round = 0; round < 60; ++round) {
    const std::uint64_t n = 1 + rng() % 200;
    const Hash256 fill = RandomHash(rng);
    std::map<std::uint64_t, Hash256> ex;
    for (int k = 0; k < 4; ++k) ex[rng() % n] = RandomHash(rng);
    const VirtualTree v(n, fill, ex);
    std::vector<Hash256> leaves;
    for (std::uint64_t i = 0; i < n; ++i) leaves.push_back(v.Leaf(i));
    const MerkleTree t = MerkleTree::FromLeafHashes(leaves);
    ASSERT_EQ(v.Root(), t.root()) << n;
    for (unsigned level = 0; level <= t.shape().height(); ++level) {
      for (std::uint64_t j = 0; j < t.shape().NodesAt(level); ++j)
        ASSERT_EQ(v.Node({level, j}), t.Node({level, j}));
    }
  }
}

TEST(MerkleWalkTest, FindsFirstDifferenceForRandomSizes) {
  std::mt19937_64 rng(test::TestSeed() + 1);
  std::vector<std::uint64_t> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 1000};
  for (int i = 0; i < 60; ++i) sizes.push_back(1 + rng() % 1000);
  for (std::uint64_t n : sizes) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<Hash256> a(n);
      for (auto& h : a) h = RandomHash(rng);
      // B differs from A at d (chosen at random, with the ends favoured) and
      // at a random set of later indices.
      const std::uint64_t d = trial == 0 ? 0 : trial == 1 ? n - 1 : rng() % n;
      std::vector<Hash256> b = a;
      b[d] = RandomHash(rng);
      for (std::uint64_t j = d + 1; j < n; ++j)
        if (rng() % 3 == 0) b[j] = RandomHash(rng);
      const RealTree ta{MerkleTree::FromLeafHashes(a)};
      const RealTree tb{MerkleTree::FromLeafHashes(b)};
      auto walk = MerkleWalk::Start(n, ta.Root(), tb.Root());
      ASSERT_TRUE(walk.ok()) << walk.status().ToString();
      ASSERT_EQ(walk->phase(), Phase::kRevealTop);
      ASSERT_EQ(walk->current(), (MerkleNodeId{MerkleShape(n).height(), 0}));
      RunHonest(*walk, ta, tb, rng);
      ASSERT_EQ(walk->disputed_leaf(), d) << "n=" << n;
      EXPECT_EQ(walk->leaf_hash(Party::kA), a[d]);
      EXPECT_EQ(walk->leaf_hash(Party::kB), b[d]);
      EXPECT_EQ(walk->moves(), MerkleShape(n).ProofLength(d));
      EXPECT_LE(walk->moves(), CeilLog2(n));
      // The agreed predecessor can be opened against either root and the
      // openings agree.
      if (d > 0) {
        const MerkleProof pa = ta.tree.Prove(d - 1);
        const MerkleProof pb = tb.tree.Prove(d - 1);
        EXPECT_TRUE(VerifyMerkleProof(walk->root(Party::kA), a[d - 1], pa).ok());
        EXPECT_TRUE(VerifyMerkleProof(walk->root(Party::kB), b[d - 1], pb).ok());
        EXPECT_EQ(a[d - 1], b[d - 1]);
      }
    }
  }
}

TEST(MerkleWalkTest, RespondHonestlyDrivesTheWalk) {
  std::mt19937_64 rng(test::TestSeed() + 2);
  std::vector<Hash256> a(37);
  for (auto& h : a) h = RandomHash(rng);
  std::vector<Hash256> b = a;
  b[20] = RandomHash(rng);
  const MerkleTree ta = MerkleTree::FromLeafHashes(a);
  const MerkleTree tb = MerkleTree::FromLeafHashes(b);
  auto walk = MerkleWalk::Start(37, ta.root(), tb.root());
  ASSERT_TRUE(walk.ok());
  while (walk->phase() != Phase::kDone) {
    ASSERT_TRUE(RespondHonestly(*walk, Party::kB, tb).ok());
    ASSERT_TRUE(RespondHonestly(*walk, Party::kA, ta).ok());
  }
  EXPECT_EQ(walk->disputed_leaf(), 20u);
  EXPECT_EQ(RespondHonestly(*walk, Party::kA, ta).reason(), "walk-wrong-phase");
}

TEST(MerkleWalkTest, PromotedNodesCostNoMove) {
  std::mt19937_64 rng(test::TestSeed() + 3);
  // 2^k + 1 leaves, disputed last leaf: it is promoted up to the level below
  // the top, so the walk takes a single move.
  for (unsigned k = 0; k <= 9; ++k) {
    const std::uint64_t n = (std::uint64_t{1} << k) + 1;
    std::vector<Hash256> a(n);
    for (auto& h : a) h = RandomHash(rng);
    std::vector<Hash256> b = a;
    b[n - 1] = RandomHash(rng);
    const RealTree ta{MerkleTree::FromLeafHashes(a)};
    const RealTree tb{MerkleTree::FromLeafHashes(b)};
    auto walk = MerkleWalk::Start(n, ta.Root(), tb.Root());
    ASSERT_TRUE(walk.ok());
    RunHonest(*walk, ta, tb, rng);
    EXPECT_EQ(walk->disputed_leaf(), n - 1);
    EXPECT_EQ(walk->moves(), 1u) << n;
  }
  // A single leaf: the opening alone decides.
  auto single =
      MerkleWalk::Start(1, MerkleRootFromTop(1, RandomHash(rng)), MerkleRootFromTop(1, RandomHash(rng)));
  ASSERT_TRUE(single.ok());
  EXPECT_TRUE(single->RevealTop(Party::kA, Hash256{}).is_invalid());
}

TEST(MerkleWalkTest, StartRejectsNothingToDispute) {
  Hash256 r1;
  Hash256 r2;
  r2.bytes[0] = 1;
  EXPECT_EQ(MerkleWalk::Start(10, r1, r1).status().reason(), "walk-same-roots");
  EXPECT_EQ(MerkleWalk::Start(0, r1, r2).status().reason(), "walk-bad-count");
  EXPECT_EQ(MerkleWalk::Start(kMaxMerkleLeaves + 1, r1, r2).status().reason(), "walk-bad-count");
  EXPECT_TRUE(MerkleWalk::Start(kMaxMerkleLeaves, r1, r2).ok());
}

TEST(MerkleWalkTest, BadRevealsBlameTheRevealerAndChangeNothing) {
  std::mt19937_64 rng(test::TestSeed() + 4);
  const std::uint64_t n = 100;
  std::vector<Hash256> a(n);
  for (auto& h : a) h = RandomHash(rng);
  std::vector<Hash256> b = a;
  b[61] = RandomHash(rng);
  const MerkleTree ta = MerkleTree::FromLeafHashes(a);
  const MerkleTree tb = MerkleTree::FromLeafHashes(b);
  auto started = MerkleWalk::Start(n, ta.root(), tb.root());
  ASSERT_TRUE(started.ok());
  MerkleWalk& walk = *started;

  // Opening: A reveals B's top, a random top, and children out of phase.
  EXPECT_EQ(walk.RevealTop(Party::kA, tb.top()).reason(), "walk-bad-top");
  EXPECT_EQ(walk.RevealTop(Party::kA, RandomHash(rng)).reason(), "walk-bad-top");
  EXPECT_EQ(walk.RevealChildren(Party::kA, {ta.top(), ta.top()}).reason(), "walk-wrong-phase");
  EXPECT_FALSE(walk.HasRevealed(Party::kA));
  EXPECT_EQ(walk.phase(), Phase::kRevealTop);
  ASSERT_TRUE(walk.RevealTop(Party::kB, tb.top()).ok());
  EXPECT_EQ(walk.RevealTop(Party::kB, tb.top()).reason(), "walk-duplicate-reveal");
  EXPECT_TRUE(walk.HasRevealed(Party::kB));
  ASSERT_TRUE(walk.RevealTop(Party::kA, ta.top()).ok());
  ASSERT_EQ(walk.phase(), Phase::kRevealChildren);
  EXPECT_EQ(walk.current_hash(Party::kA), ta.top());
  EXPECT_EQ(walk.current_hash(Party::kB), tb.top());

  // Every move: the liar's bad reveals (swapped children, the other party's
  // children, garbage) are rejected and blamed on it; the honest side is not
  // affected whichever order they come in.
  int round = 0;
  while (walk.phase() != Phase::kDone) {
    const MerkleNodeId at = walk.current();
    const unsigned moves_before = walk.moves();
    const Party liar = round % 2 == 0 ? Party::kA : Party::kB;
    const Party honest = liar == Party::kA ? Party::kB : Party::kA;
    const MerkleTree& lt = liar == Party::kA ? ta : tb;
    const MerkleTree& ht = liar == Party::kA ? tb : ta;
    const NodeReveal good = lt.Children(at);
    if (round % 3 == 0) {
      ASSERT_TRUE(walk.RevealChildren(honest, ht.Children(at)).ok());
    }
    EXPECT_EQ(walk.RevealChildren(liar, {good.right, good.left}).reason(), "walk-bad-children");
    EXPECT_EQ(walk.RevealChildren(liar, {RandomHash(rng), good.right}).reason(), "walk-bad-children");
    if (ht.Children(at) != good) {
      EXPECT_EQ(walk.RevealChildren(liar, ht.Children(at)).reason(), "walk-bad-children");
    }
    EXPECT_EQ(walk.RevealTop(liar, lt.top()).reason(), "walk-wrong-phase");
    EXPECT_FALSE(walk.HasRevealed(liar));
    EXPECT_EQ(walk.current(), at);
    EXPECT_EQ(walk.moves(), moves_before);
    if (round % 3 != 0) {
      ASSERT_TRUE(walk.RevealChildren(honest, ht.Children(at)).ok());
    }
    EXPECT_EQ(walk.RevealChildren(honest, ht.Children(at)).reason(), "walk-duplicate-reveal");
    ASSERT_TRUE(walk.RevealChildren(liar, good).ok());
    ++round;
  }
  EXPECT_EQ(walk.disputed_leaf(), 61u);
  EXPECT_EQ(walk.RevealChildren(Party::kA, ta.Children({1, 0})).reason(), "walk-wrong-phase");
  EXPECT_EQ(walk.RevealTop(Party::kA, ta.top()).reason(), "walk-wrong-phase");
}

TEST(MerkleWalkTest, PartyWithoutATreeCannotOpen) {
  // A root that is no tree's root cannot be opened (the party can only stall
  // until its clock runs out).
  std::mt19937_64 rng(test::TestSeed() + 5);
  std::vector<Hash256> a(9);
  for (auto& h : a) h = RandomHash(rng);
  const MerkleTree ta = MerkleTree::FromLeafHashes(a);
  auto walk = MerkleWalk::Start(9, ta.root(), RandomHash(rng));
  ASSERT_TRUE(walk.ok());
  EXPECT_TRUE(walk->RevealTop(Party::kA, ta.top()).ok());
  EXPECT_EQ(walk->RevealTop(Party::kB, ta.top()).reason(), "walk-bad-top");
  EXPECT_EQ(walk->phase(), Phase::kRevealTop);
}

// Builds two virtual trees over n leaves that agree before d (shared fill and
// shared exceptions), differ at d and differ arbitrarily after d.
void HugeWalk(std::uint64_t n, std::uint64_t d, std::mt19937_64& rng) {
  const Hash256 fill = RandomHash(rng);
  std::map<std::uint64_t, Hash256> shared;
  for (int k = 0; k < 5 && d > 0; ++k) shared[rng() % d] = RandomHash(rng);
  if (d > 0) shared[d - 1] = RandomHash(rng);
  std::map<std::uint64_t, Hash256> ea = shared;
  std::map<std::uint64_t, Hash256> eb = shared;
  ea[d] = RandomHash(rng);
  eb[d] = RandomHash(rng);
  for (int k = 0; k < 4 && d + 1 < n; ++k) {
    ea[d + 1 + rng() % (n - d - 1)] = RandomHash(rng);
    eb[d + 1 + rng() % (n - d - 1)] = RandomHash(rng);
  }
  const VirtualTree a(n, fill, ea);
  const VirtualTree b(n, fill, eb);
  auto walk = MerkleWalk::Start(n, a.Root(), b.Root());
  ASSERT_TRUE(walk.ok()) << walk.status().ToString();
  RunHonest(*walk, a, b, rng);
  EXPECT_EQ(walk->disputed_leaf(), d) << "n=" << n;
  EXPECT_EQ(walk->leaf_hash(Party::kA), ea[d]);
  EXPECT_EQ(walk->leaf_hash(Party::kB), eb[d]);
  EXPECT_EQ(walk->moves(), MerkleShape(n).ProofLength(d));
  EXPECT_LE(walk->moves(), CeilLog2(n));
}

TEST(MerkleWalkTest, TwoToTheThirtyLeaves) {
  std::mt19937_64 rng(test::TestSeed() + 6);
  const std::uint64_t n = std::uint64_t{1} << 30;
  HugeWalk(n, rng() % n, rng);
  HugeWalk(n, 0, rng);
  HugeWalk(n, n - 1, rng);
  EXPECT_EQ(MerkleShape(n).ProofLength(12345), 30u);  // a full tree: every move counts
}

TEST(MerkleWalkTest, HugeOddCounts) {
  std::mt19937_64 rng(test::TestSeed() + 7);
  for (std::uint64_t n : {(std::uint64_t{1} << 30) + 12345, (std::uint64_t{1} << 40) + 1,
                          (std::uint64_t{1} << 40) + 1, kMaxMerkleLeaves - 3, kMaxMerkleLeaves}) {
    HugeWalk(n, rng() % n, rng);
    HugeWalk(n, n - 1, rng);
  }
}

}  // namespace
}  // namespace vt::crypto
