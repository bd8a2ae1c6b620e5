#include "crypto/merkle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "tests/support/test_seed.h"

namespace vt::crypto {
namespace {

Bytes U32Le(std::uint32_t v) {
  return {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v >> 16),
          static_cast<std::uint8_t>(v >> 24)};
}

std::vector<Hash256> RandomLeaves(std::mt19937_64& rng, std::size_t n) {
  std::vector<Hash256> leaves(n);
  for (auto& h : leaves)
    for (auto& b : h.bytes) b = static_cast<std::uint8_t>(rng());
  return leaves;
}

// The tree by its definition, written independently of merkle.cpp: recursive
// over leaf ranges, with the split at the largest aligned power of two.
Hash256 ReferenceTop(std::span<const Hash256> leaves, unsigned level) {
  if (level == 0) return leaves[0];
  const std::size_t half = std::size_t{1} << (level - 1);
  if (leaves.size() <= half) return ReferenceTop(leaves, level - 1);  // promoted
  return MerkleNodeHash(ReferenceTop(leaves.first(half), level - 1),
                        ReferenceTop(leaves.subspan(half), level - 1));
}

Hash256 ReferenceRoot(std::span<const Hash256> leaves) {
  unsigned height = 0;
  while ((std::size_t{1} << height) < leaves.size()) ++height;
  const Hash256 top = leaves.empty() ? Hash256{} : ReferenceTop(leaves, height);
  Bytes buf = U32Le(static_cast<std::uint32_t>(leaves.size()));
  buf.resize(8, 0);
  buf.insert(buf.end(), top.bytes.begin(), top.bytes.end());
  return TaggedHash("veritrain/merkle/root/v1", buf);
}

// Expected values from tests/crypto/data/golden_vectors.py (Python hashlib,
// its own implementation of the tree).
TEST(MerkleTest, GoldenVectors) {
  EXPECT_EQ(MerkleLeafHash({}).Hex(), "21cc09fab47fc75ee978a6479c96bd6cf9c13dcda90d8e5bb8edbf471bed4572");
  EXPECT_EQ(MerkleNodeHash(Hash256{}, Hash256{}).Hex(),
            "8853d02c4f1ec1bd51005ba821e094f32d9c60369ecb18b9ae4b6cbcd5b64858");
  EXPECT_EQ(MerkleTree().root().Hex(), "c86a0e59a069bebb0d71a71c59ac09bb406377274c96a2e4dcdd5789b92ba211");
  EXPECT_EQ(MerkleRoot({}).Hex(), "c86a0e59a069bebb0d71a71c59ac09bb406377274c96a2e4dcdd5789b92ba211");

  auto bytes_of = [](std::initializer_list<const char*> items) {
    std::vector<Bytes> out;
    for (const char* s : items) {
      const ByteSpan b = AsBytes(s);
      out.emplace_back(b.begin(), b.end());
    }
    return out;
  };
  EXPECT_EQ(MerkleTree::FromLeafBytes(bytes_of({"a"})).root().Hex(),
            "9f942f1e902febf8ca66cec6f8314b1d45fb761946d0e73a0e4a785e98692fbf");
  EXPECT_EQ(MerkleTree::FromLeafBytes(bytes_of({"a", "b", "c"})).root().Hex(),
            "6cbf4ab37c47ff469e221a5e301b508caee8371104272fc1bb27a4bd2077d5a5");
  EXPECT_EQ(MerkleTree::FromLeafBytes(bytes_of({"a", "b", "c", "d", "e"})).root().Hex(),
            "d0f1e21f204940b2b6765ab6281cd0370a3d6a8ba23a4f1925945aa34c357cb8");
  std::vector<Bytes> seven;
  for (std::uint32_t i = 0; i < 7; ++i) seven.push_back(U32Le(i));
  EXPECT_EQ(MerkleTree::FromLeafBytes(seven).root().Hex(),
            "a4e0bb10b4a9ec7f049a9379e1a2cd5736a71d12daedf506180fff41cd72fcb5");
}

TEST(MerkleTest, LeafAndNodeHashesAreDomainSeparated) {
  Hash256 l;
  Hash256 r;
  l.bytes.fill(1);
  r.bytes.fill(2);
  Bytes concat(64);
  std::copy(l.bytes.begin(), l.bytes.end(), concat.begin());
  std::copy(r.bytes.begin(), r.bytes.end(), concat.begin() + 32);
  // A 64-byte leaf whose bytes are l || r does not hash like the node (l, r).
  EXPECT_NE(MerkleLeafHash(concat), MerkleNodeHash(l, r));
}

TEST(MerkleTest, ShapeByDefinition) {
  for (std::uint64_t n = 1; n <= 300; ++n) {
    const MerkleShape shape(n);
    unsigned expected_height = 0;
    while ((std::uint64_t{1} << expected_height) < n) ++expected_height;
    ASSERT_EQ(shape.height(), expected_height) << n;
    ASSERT_EQ(shape.NodesAt(0), n);
    ASSERT_EQ(shape.NodesAt(shape.height()), 1u) << n;
    ASSERT_EQ(shape.NodesAt(shape.height() + 1), 0u) << n;
    for (unsigned level = 1; level <= shape.height(); ++level) {
      const std::uint64_t below = shape.NodesAt(level - 1);
      ASSERT_EQ(shape.NodesAt(level), (below + 1) / 2);
      for (std::uint64_t j = 0; j < shape.NodesAt(level); ++j) {
        const MerkleNodeKind kind = shape.Kind({level, j});
        ASSERT_EQ(kind, 2 * j + 1 < below ? MerkleNodeKind::kPair : MerkleNodeKind::kPromoted);
        const auto [first, last] = shape.LeafRange({level, j});
        const auto [cfirst, clast] = shape.LeafRange({level - 1, 2 * j});
        ASSERT_EQ(first, cfirst);
        ASSERT_EQ(last,
                  kind == MerkleNodeKind::kPair ? shape.LeafRange({level - 1, 2 * j + 1}).second : clast);
      }
    }
    EXPECT_EQ(shape.Kind({0, 0}), MerkleNodeKind::kLeaf);
    EXPECT_EQ(shape.LeafRange({shape.height(), 0}), std::make_pair(std::uint64_t{0}, n));
  }
  // Large counts are pure arithmetic.
  const MerkleShape big(kMaxMerkleLeaves);
  EXPECT_EQ(big.height(), 62u);
  EXPECT_EQ(big.NodesAt(62), 1u);
  const MerkleShape odd((std::uint64_t{1} << 40) + 1);
  EXPECT_EQ(odd.height(), 41u);
  EXPECT_EQ(odd.Kind({41, 0}), MerkleNodeKind::kPair);
  EXPECT_EQ(odd.Kind({40, 1}), MerkleNodeKind::kPromoted);
  EXPECT_EQ(odd.ProofLength(std::uint64_t{1} << 40), 1u);
  EXPECT_EQ(odd.ProofLength(0), 41u);
}

TEST(MerkleTest, TreeMatchesReferenceAndOneShotRoot) {
  std::mt19937_64 rng(test::TestSeed());
  for (std::size_t n = 0; n <= 70; ++n) {
    const auto leaves = RandomLeaves(rng, n);
    const MerkleTree tree = MerkleTree::FromLeafHashes(leaves);
    ASSERT_EQ(tree.root(), ReferenceRoot(leaves)) << n;
    ASSERT_EQ(MerkleRoot(leaves), tree.root()) << n;
    ASSERT_EQ(tree.root(), MerkleRootFromTop(n, tree.top()));
  }
}

TEST(MerkleTest, PromotedOddNodeIsNotDuplicated) {
  std::mt19937_64 rng(test::TestSeed() + 2);
  const auto abc = RandomLeaves(rng, 3);
  std::vector<Hash256> abcc = abc;
  abcc.push_back(abc[2]);
  EXPECT_NE(MerkleRoot(abc), MerkleRoot(abcc));
  // Not even the tops agree (Bitcoin's tree would give the same top here).
  EXPECT_NE(MerkleTree::FromLeafHashes(abc).top(), MerkleTree::FromLeafHashes(abcc).top());
  // The promoted node is c itself at level 1.
  const MerkleTree t = MerkleTree::FromLeafHashes(abc);
  EXPECT_EQ(t.Node({1, 1}), abc[2]);
  EXPECT_EQ(t.top(), MerkleNodeHash(MerkleNodeHash(abc[0], abc[1]), abc[2]));
}

TEST(MerkleTest, RootCommitsToCount) {
  // The same top under different counts gives different roots.
  Hash256 top;
  top.bytes.fill(7);
  EXPECT_NE(MerkleRootFromTop(1, top), MerkleRootFromTop(2, top));
  EXPECT_NE(MerkleRootFromTop(3, top), MerkleRootFromTop(4, top));
  // A tree of 2 leaves whose top equals another tree's single leaf.
  std::mt19937_64 rng(test::TestSeed() + 3);
  const auto two = RandomLeaves(rng, 2);
  const MerkleTree t2 = MerkleTree::FromLeafHashes(two);
  const MerkleTree t1 = MerkleTree::FromLeafHashes({t2.top()});
  EXPECT_EQ(t1.top(), t2.top());
  EXPECT_NE(t1.root(), t2.root());
}

TEST(MerkleTest, EveryProofVerifiesAndEveryFlipFails) {
  std::mt19937_64 rng(test::TestSeed() + 4);
  std::vector<std::size_t> sizes = {1, 2, 3, 4, 5, 7, 8, 9, 1000};
  for (int i = 0; i < 12; ++i) sizes.push_back(1 + rng() % 1000);
  for (std::size_t n : sizes) {
    const auto leaves = RandomLeaves(rng, n);
    const MerkleTree tree = MerkleTree::FromLeafHashes(leaves);
    const MerkleShape shape(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const MerkleProof proof = tree.Prove(i);
      ASSERT_EQ(proof.siblings.size(), shape.ProofLength(i));
      ASSERT_LE(proof.siblings.size(), shape.height());
      ASSERT_TRUE(VerifyMerkleProof(tree.root(), leaves[i], proof).ok()) << "n=" << n << " i=" << i;
      // Round trip through the canonical encoding.
      const Bytes enc = EncodeToBytes(proof);
      ASSERT_EQ(enc.size(), 16 + 32 * proof.siblings.size());
      auto dec = DecodeExact<MerkleProof>(enc);
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      ASSERT_EQ(*dec, proof);
    }
    // Bit flips, on a sample of leaves for the big sizes.
    const std::uint64_t samples = std::min<std::uint64_t>(n, 24);
    for (std::uint64_t s = 0; s < samples; ++s) {
      const std::uint64_t i = n <= 24 ? s : rng() % n;
      const MerkleProof proof = tree.Prove(i);
      const unsigned bit = static_cast<unsigned>(rng() % 256);
      Hash256 bad_leaf = leaves[i];
      bad_leaf.bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      EXPECT_EQ(VerifyMerkleProof(tree.root(), bad_leaf, proof).reason(), "merkle-proof-mismatch");
      Hash256 bad_root = tree.root();
      bad_root.bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
      EXPECT_EQ(VerifyMerkleProof(bad_root, leaves[i], proof).reason(), "merkle-proof-mismatch");
      for (std::size_t k = 0; k < proof.siblings.size(); ++k) {
        MerkleProof bad = proof;
        bad.siblings[k].bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[i], bad).reason(), "merkle-proof-mismatch");
      }
      // A proof for leaf i does not prove that leaf at another index.
      if (n > 1) {
        MerkleProof moved = proof;
        moved.leaf_index = (i + 1) % n;
        EXPECT_FALSE(VerifyMerkleProof(tree.root(), leaves[i], moved).ok());
      }
      // Nor under another leaf count.
      MerkleProof recount = proof;
      recount.leaf_count = n + 1;
      EXPECT_FALSE(VerifyMerkleProof(tree.root(), leaves[i], recount).ok());
      // Nor with a sibling too many or too few.
      MerkleProof longer = proof;
      longer.siblings.push_back(leaves[i]);
      EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[i], longer).reason(), "merkle-proof-bad-length");
      if (!proof.siblings.empty()) {
        MerkleProof shorter = proof;
        shorter.siblings.pop_back();
        EXPECT_EQ(VerifyMerkleProof(tree.root(), leaves[i], shorter).reason(), "merkle-proof-bad-length");
      }
    }
  }
}

TEST(MerkleTest, ProofRejectsBadCountsAndIndices) {
  MerkleProof p;
  p.leaf_count = 0;
  EXPECT_EQ(VerifyMerkleProof(Hash256{}, Hash256{}, p).reason(), "merkle-proof-bad-count");
  p.leaf_count = kMaxMerkleLeaves + 1;
  EXPECT_EQ(VerifyMerkleProof(Hash256{}, Hash256{}, p).reason(), "merkle-proof-bad-count");
  p.leaf_count = 5;
  p.leaf_index = 5;
  EXPECT_EQ(VerifyMerkleProof(Hash256{}, Hash256{}, p).reason(), "merkle-proof-bad-index");
}

TEST(MerkleTest, ProofDecodingIsStrict) {
  std::mt19937_64 rng(test::TestSeed() + 5);
  const auto leaves = RandomLeaves(rng, 11);
  const MerkleTree tree = MerkleTree::FromLeafHashes(leaves);
  const Bytes enc = EncodeToBytes(tree.Prove(10));
  // Every strict prefix is truncated; any trailing byte is rejected.
  for (std::size_t len = 0; len < enc.size(); ++len) {
    auto dec = DecodeExact<MerkleProof>(ByteSpan(enc).first(len));
    ASSERT_FALSE(dec.ok()) << len;
    EXPECT_EQ(dec.status().reason(), "enc-truncated") << len;
  }
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeExact<MerkleProof>(longer).status().reason(), "enc-trailing-bytes");

  Writer w;
  w.PutU64(3);
  w.PutU64(3);
  EXPECT_EQ(DecodeExact<MerkleProof>(std::move(w).Take()).status().reason(), "merkle-proof-bad-index");
  Writer w0;
  w0.PutU64(0);
  w0.PutU64(0);
  EXPECT_EQ(DecodeExact<MerkleProof>(std::move(w0).Take()).status().reason(), "merkle-proof-bad-count");
}

// Golden encoding of a small proof, spelled out byte by byte.
TEST(MerkleTest, ProofEncodingLayout) {
  MerkleProof p;
  p.leaf_index = 4;  // in a tree of 5: siblings only at level 3 (levels 1, 2 promote it)
  p.leaf_count = 5;
  Hash256 s;
  s.bytes.fill(0xab);
  p.siblings = {s};
  std::string expected =
      "0400000000000000"
      "0500000000000000";
  for (int i = 0; i < 32; ++i) expected += "ab";
  EXPECT_EQ(ToHex(EncodeToBytes(p)), expected);
}

TEST(MerkleTest, ChildrenAreTheHonestReveal) {
  std::mt19937_64 rng(test::TestSeed() + 6);
  const auto leaves = RandomLeaves(rng, 13);
  const MerkleTree tree = MerkleTree::FromLeafHashes(leaves);
  const MerkleShape& shape = tree.shape();
  for (unsigned level = 1; level <= shape.height(); ++level) {
    for (std::uint64_t j = 0; j < shape.NodesAt(level); ++j) {
      if (shape.Kind({level, j}) == MerkleNodeKind::kPair) {
        const NodeReveal r = tree.Children({level, j});
        EXPECT_EQ(MerkleNodeHash(r.left, r.right), tree.Node({level, j}));
      } else {
        EXPECT_EQ(tree.Node({level, j}), tree.Node({level - 1, 2 * j}));
      }
    }
  }
}

// A tree that keeps only its upper levels (FromLeafSource) is the same tree:
// for random counts (odd ones promote nodes at the right edge) and every
// kept level, from 0 (every level kept) to above the top, each node, the
// top, the root, every leaf's proof and every pair's reveal equal the whole
// tree's, and a walk against a tree differing at one leaf ends there. The
// kept level handed in (FromKeptLevel: runs of 2^kept leaves hashed as trees
// of their own, the last run short) builds the same tree too, asking for no
// leaf until a node below it is wanted.
TEST(MerkleTest, ATreeKeepingOnlyItsUpperLevelsIsTheSameTree) {
  std::mt19937_64 rng(test::TestSeed() + 8);
  std::size_t trees = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n = trial < 3 ? static_cast<std::size_t>(trial + 1) : 1 + rng() % 700;
    const auto leaves = RandomLeaves(rng, n);
    const MerkleTree whole = MerkleTree::FromLeafHashes(leaves);
    for (unsigned kept : {0u, 1u, 3u, 5u, 8u, 12u}) {
      SCOPED_TRACE(std::to_string(n) + " leaves, kept from " + std::to_string(kept));
      std::uint64_t asked = 0;
      const MerkleTree part = MerkleTree::FromLeafSource(
          n,
          [&](std::uint64_t i) {
            ++asked;
            return leaves[i];
          },
          kept);
      EXPECT_EQ(asked, n) << "building hashes each leaf once";
      std::vector<MerkleTree> parts;
      parts.push_back(part);
      const MerkleShape& shape = whole.shape();
      if (kept <= shape.height()) {
        const std::size_t run = std::size_t{1} << kept;
        std::vector<Hash256> tops;
        for (std::size_t first = 0; first < n; first += run) {
          const std::size_t last = std::min(n, first + run);
          tops.push_back(MerkleTree::FromLeafHashes({leaves.begin() + first, leaves.begin() + last}).top());
        }
        asked = 0;
        parts.push_back(MerkleTree::FromKeptLevel(
            n,
            [&](std::uint64_t i) {
              ++asked;
              return leaves[i];
            },
            kept, std::move(tops)));
        EXPECT_EQ(asked, 0u) << "built from the kept level alone";
      }
      for (const MerkleTree& t : parts) {
        ASSERT_EQ(t.root(), whole.root());
        ASSERT_EQ(t.top(), whole.top());
        for (unsigned level = 0; level <= shape.height(); ++level) {
          for (std::uint64_t j = 0; j < shape.NodesAt(level); ++j) {
            ASSERT_EQ(t.Node({level, j}), whole.Node({level, j})) << "level " << level << " node " << j;
            if (shape.Kind({level, j}) == MerkleNodeKind::kPair) {
              ASSERT_EQ(t.Children({level, j}), whole.Children({level, j}));
            }
          }
        }
        for (std::uint64_t i = 0; i < n; ++i) {
          const MerkleProof proof = t.Prove(i);
          ASSERT_EQ(proof, whole.Prove(i));
          ASSERT_TRUE(VerifyMerkleProof(t.root(), leaves[i], proof).ok());
        }
      }
      if (n < 2) continue;
      std::vector<Hash256> other = leaves;
      const std::uint64_t d = rng() % n;
      other[d].bytes[0] ^= 1;
      const MerkleTree theirs = MerkleTree::FromLeafHashes(other);
      auto walk = MerkleWalk::Start(n, part.root(), theirs.root());
      ASSERT_TRUE(walk.ok());
      while (walk->phase() != MerkleWalk::Phase::kDone) {
        ASSERT_TRUE(RespondHonestly(*walk, MerkleWalk::Party::kA, part).ok());
        ASSERT_TRUE(RespondHonestly(*walk, MerkleWalk::Party::kB, theirs).ok());
      }
      EXPECT_EQ(walk->disputed_leaf(), d);
      ++trees;
    }
  }
  EXPECT_GT(trees, 200u);
}

TEST(MerkleTest, MillionLeavesRootMatchesTree) {
  // Correctness at scale (timing is the benchmark's business): the one-shot
  // root and the full tree agree for an odd count near 2^20.
  std::mt19937_64 rng(test::TestSeed() + 7);
  const auto leaves = RandomLeaves(rng, (1u << 20) - 3);
  const MerkleTree tree = MerkleTree::FromLeafHashes(leaves);
  EXPECT_EQ(MerkleRoot(leaves), tree.root());
  const std::uint64_t i = rng() % leaves.size();
  EXPECT_TRUE(VerifyMerkleProof(tree.root(), leaves[i], tree.Prove(i)).ok());
}

}  // namespace
}  // namespace vt::crypto
