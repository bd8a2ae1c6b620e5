#pragma once
// Merkle trees, inclusion proofs and the leftmost-difference walk of the
// dispute game (docs/referee.md, "The game"). Format (docs/formats.md,
// "Hashing and Merkle trees"):
//
//   leaf hash   H_leaf(bytes) = TaggedHash("veritrain/merkle/leaf/v1", 0x00 || bytes)
//   node hash   H_node(l, r)  = TaggedHash("veritrain/merkle/node/v1", 0x01 || l || r)
//   root        = TaggedHash("veritrain/merkle/root/v1", u64le(leaf_count) || top)
//
// Level 0 holds the n leaf hashes. Level k+1 pairs up level k from the left:
// node (k+1, j) = H_node(node(k, 2j), node(k, 2j+1)); when a level has an odd
// number of nodes its last node is PROMOTED unchanged to the next level (never
// paired with a copy of itself: Bitcoin's CVE-2012-2459). The level with one
// node is the top. The shape is a pure function of n: level k has ceil(n/2^k)
// nodes and node (k, j) covers the leaves [j*2^k, min((j+1)*2^k, n)).
//
// Callers may build a tree over their own leaf hashes (e.g. tensor hashes)
// instead of H_leaf(bytes), provided those are tagged hashes under a tag other
// than the node tag, so that a leaf can never be confused with a node.

#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"

namespace vt::crypto {

// Leaf counts above this are rejected (a proof or walk from a peer naming a
// larger count is invalid); it keeps every shift in the shape arithmetic
// defined. 2^62 leaves is far beyond anything the system commits to.
inline constexpr std::uint64_t kMaxMerkleLeaves = std::uint64_t{1} << 62;

Hash256 MerkleLeafHash(ByteSpan leaf_bytes);
Hash256 MerkleNodeHash(const Hash256& left, const Hash256& right);
Hash256 MerkleRootFromTop(std::uint64_t leaf_count, const Hash256& top);

struct MerkleNodeId {
  unsigned level = 0;       // 0 = leaves
  std::uint64_t index = 0;  // from the left, within the level
  auto operator<=>(const MerkleNodeId&) const = default;
};

enum class MerkleNodeKind : std::uint8_t {
  kLeaf,      // level 0
  kPair,      // two children: hash = H_node(left, right)
  kPromoted,  // one child (the last node of an odd level below): hash = child's hash
};

// The tree's shape as a pure function of the leaf count; the referee uses it
// without any leaves. All members are O(1).
class MerkleShape {
 public:
  // Precondition: leaf_count <= kMaxMerkleLeaves (IsValidLeafCount).
  constexpr explicit MerkleShape(std::uint64_t leaf_count) : m_leaf_count(leaf_count) {}

  static constexpr bool IsValidLeafCount(std::uint64_t n) { return n >= 1 && n <= kMaxMerkleLeaves; }

  constexpr std::uint64_t leaf_count() const { return m_leaf_count; }
  // Levels above the leaves; the top is at level height(). Equals ceil(log2 n)
  // (0 for n <= 1), which bounds proof lengths and walk moves.
  unsigned height() const;
  // Number of nodes at `level` (ceil(n / 2^level)); 0 above the top.
  std::uint64_t NodesAt(unsigned level) const;
  bool Contains(MerkleNodeId node) const {
    return node.level <= height() && node.index < NodesAt(node.level);
  }
  // Precondition: Contains(node).
  MerkleNodeKind Kind(MerkleNodeId node) const;
  // Leaves under `node`, as [first, second). Precondition: Contains(node).
  std::pair<std::uint64_t, std::uint64_t> LeafRange(MerkleNodeId node) const;
  // Number of siblings in the inclusion proof of `leaf_index` (= number of
  // kPair ancestors). Precondition: leaf_index < leaf_count().
  unsigned ProofLength(std::uint64_t leaf_index) const;

 private:
  std::uint64_t m_leaf_count;
};

// What a party reveals about a two-child node: its children's hashes.
struct NodeReveal {
  Hash256 left;
  Hash256 right;
  bool operator==(const NodeReveal&) const = default;
};

// An inclusion proof: the sibling hashes of the kPair ancestors of the leaf,
// bottom-up. Promoted levels contribute no sibling.
struct MerkleProof {
  std::uint64_t leaf_index = 0;
  std::uint64_t leaf_count = 0;
  std::vector<Hash256> siblings;
  bool operator==(const MerkleProof&) const = default;
};

// ok, or invalid with one of: "merkle-proof-bad-count", "merkle-proof-bad-index",
// "merkle-proof-bad-length", "merkle-proof-mismatch".
Status VerifyMerkleProof(const Hash256& root, const Hash256& leaf_hash, const MerkleProof& proof);

// A tree with every level in memory (32 bytes per node, about 2n nodes).
class MerkleTree {
 public:
  // An empty tree (0 leaves): top is all zeros, root = root-hash(0, zeros).
  MerkleTree() : MerkleTree(std::vector<Hash256>{}) {}
  // Precondition: leaf_hashes.size() <= kMaxMerkleLeaves.
  static MerkleTree FromLeafHashes(std::vector<Hash256> leaf_hashes) {
    return MerkleTree(std::move(leaf_hashes));
  }
  // Leaves are hashed with MerkleLeafHash.
  static MerkleTree FromLeafBytes(std::span<const Bytes> leaves);
  // The same tree over leaf_count leaves whose hashes `leaf` gives, keeping
  // only the levels from `kept_from` up (at most 64/2^kept_from bytes a
  // leaf): a node below them is recomputed from its 2^level leaves when
  // asked for (Node, Prove, Children). For trees too large to hold whole — a
  // dispute's partial results over GPT-2's 1.2·10^8 gradient terms would take
  // 8 GB. Precondition: leaf_count <= kMaxMerkleLeaves.
  static MerkleTree FromLeafSource(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf,
                                   unsigned kept_from);
  // The same, from the kept level's nodes the caller already hashed while
  // producing its leaves in one pass (node j of level `kept_from` is
  // FromLeafHashes over leaves [j·2^kept_from, (j+1)·2^kept_from), the last
  // run short: its top), so `leaf` is asked only for later proofs and
  // reveals. Preconditions: 1 <= leaf_count <= kMaxMerkleLeaves, kept_from <=
  // MerkleShape(leaf_count).height(), kept.size() == NodesAt(kept_from).
  static MerkleTree FromKeptLevel(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf,
                                  unsigned kept_from, std::vector<Hash256> kept);

  const MerkleShape& shape() const { return m_shape; }
  std::uint64_t leaf_count() const { return m_shape.leaf_count(); }
  const Hash256& top() const { return m_top; }
  const Hash256& root() const { return m_root; }
  // Precondition: shape().Contains(node).
  Hash256 Node(MerkleNodeId node) const;
  Hash256 Leaf(std::uint64_t index) const { return Node({0, index}); }

  // Precondition: leaf_index < leaf_count().
  MerkleProof Prove(std::uint64_t leaf_index) const;
  // The honest reveal for a kPair node (the walk's "current node").
  NodeReveal Children(MerkleNodeId node) const;

 private:
  explicit MerkleTree(std::vector<Hash256> leaf_hashes);

  MerkleTree(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf, unsigned kept_from,
             std::optional<std::vector<Hash256>> kept);
  void BuildAbove(unsigned level);  // m_levels[level] filled: every level above it, the top and root
  // The hash of a node below the kept levels, from its leaves.
  Hash256 Recompute(MerkleNodeId node) const;

  MerkleShape m_shape;
  std::vector<std::vector<Hash256>> m_levels;  // below m_kept_from: empty
  unsigned m_kept_from = 0;
  std::function<Hash256(std::uint64_t)> m_leaf;  // FromLeafSource and FromKeptLevel only
  Hash256 m_top;
  Hash256 m_root;
};

// The root over `leaf_hashes` without keeping the levels (n/2 hashes of
// scratch memory). Precondition: size <= kMaxMerkleLeaves.
Hash256 MerkleRoot(std::span<const Hash256> leaf_hashes);

// ---- proof encoding (common/encoding.h conventions; docs/formats.md) -----------
// u64 leaf_index, u64 leaf_count, then exactly ProofLength(leaf_index) sibling
// hashes of 32 bytes each. The number of siblings follows from the shape, so
// it is not encoded and cannot disagree with it. Decode rejects a count
// outside [1, 2^62] ("merkle-proof-bad-count"), an index not below the count
// ("merkle-proof-bad-index") and short input ("enc-truncated"); use
// DecodeExact<MerkleProof>(bytes) to also reject trailing bytes.
void Encode(Writer& w, const MerkleProof& proof);
Result<MerkleProof> Decode(Reader& r, DecodeAs<MerkleProof>);

// ---- the leftmost-difference walk --------------------------------------------
//
// Two parties, A and B, have published roots over the same number of leaves n,
// and the roots differ. The walk finds the leftmost leaf index at which their
// committed leaf hashes differ, by descending from the top:
//
//  1. Opening: each party reveals its top hash, checked against its root
//     (root = H_root(n, top)).
//  2. Moves: at the current node both parties reveal its (left, right)
//     children, each checked against that party's own hash of the node. The
//     walk descends into the left child if the left hashes differ, else into
//     the right child (whose hashes must then differ, since the parents do).
//     Promoted nodes are descended without a move: their hash is their only
//     child's hash.
//  3. It ends at a leaf, index i, with the two parties' leaf hashes there.
//
// Reveals may come in either order; a reveal that fails its check, comes in
// the wrong phase or twice is rejected with a stable reason and leaves the
// walk unchanged (the referee decides whether that is an immediate loss or a
// rejected transaction while the party's clock runs). Number of moves =
// the number of kPair ancestors of leaf i <= ceil(log2 n).
//
// What the end state guarantees, assuming SHA-256 is collision resistant:
//  * leaf_hash(A) != leaf_hash(B), and each is the ONLY value its party can
//    ever open at index i against its own root.
//  * For every j < i, any Merkle proof of leaf j against root A and any proof
//    of leaf j against root B carry the same leaf hash: the paths of j and i
//    part at a node where the walk went right, i.e. where both parties'
//    left-subtree hashes were equal, and leaf j lies in that left subtree.
//    This is agreement on the committed subtree HASHES only: the walk does not
//    show that either party can open leaf j at all, nor that the leaves are
//    well formed. To use the agreed predecessor (leaf i-1, e.g. checkpoint
//    j-1) the referee asks for its MerkleProof against either party's root.
//  * Nothing is implied about leaves after i.
class MerkleWalk {
 public:
  enum class Party : std::uint8_t { kA = 0, kB = 1 };
  enum class Phase : std::uint8_t { kRevealTop, kRevealChildren, kDone };

  // Invalid "walk-bad-count" (n not in [1, kMaxMerkleLeaves]) or
  // "walk-same-roots" (there is nothing to dispute).
  static Result<MerkleWalk> Start(std::uint64_t leaf_count, const Hash256& root_a,
                                  const Hash256& root_b) noexcept;

  Phase phase() const noexcept { return m_phase; }
  const MerkleShape& shape() const noexcept { return m_shape; }
  // The node being asked about: the top during kRevealTop, the node whose
  // children are due during kRevealChildren, the disputed leaf when kDone.
  MerkleNodeId current() const noexcept { return m_current; }
  // Each party's committed hash of current() (valid after the opening).
  const Hash256& current_hash(Party p) const noexcept { return m_hash[Index(p)]; }
  const Hash256& root(Party p) const noexcept { return m_root[Index(p)]; }
  // Has `p` already revealed in the current round?
  bool HasRevealed(Party p) const noexcept { return m_revealed[Index(p)]; }
  // Completed child-reveal rounds (the opening is not counted).
  unsigned moves() const noexcept { return m_moves; }

  // Invalid "walk-wrong-phase", "walk-duplicate-reveal" or "walk-bad-top".
  Status RevealTop(Party p, const Hash256& top) noexcept;
  // Invalid "walk-wrong-phase", "walk-duplicate-reveal" or "walk-bad-children".
  Status RevealChildren(Party p, const NodeReveal& reveal) noexcept;

  // When kDone: the leftmost leaf whose committed hashes differ.
  std::uint64_t disputed_leaf() const noexcept { return m_current.index; }
  const Hash256& leaf_hash(Party p) const noexcept { return m_hash[Index(p)]; }

 private:
  MerkleWalk(std::uint64_t leaf_count, const Hash256& root_a, const Hash256& root_b) noexcept
      : m_shape(leaf_count), m_root{root_a, root_b} {}
  static unsigned Index(Party p) noexcept { return static_cast<unsigned>(p); }
  Status CheckTurn(Party p, Phase expected) const noexcept;
  void Advance() noexcept;  // both have revealed: descend
  void SkipPromoted() noexcept;

  MerkleShape m_shape;
  Hash256 m_root[2];
  Hash256 m_hash[2];       // each party's hash of m_current
  NodeReveal m_reveal[2];  // this round's reveals
  bool m_revealed[2] = {false, false};
  Phase m_phase = Phase::kRevealTop;
  MerkleNodeId m_current;
  unsigned m_moves = 0;
};

// The honest responder: submit, for party `p` holding `tree`, whatever the
// walk currently asks for (top or children). Precondition: the walk is not
// done and tree.leaf_count() equals the walk's leaf count.
Status RespondHonestly(MerkleWalk& walk, MerkleWalk::Party p, const MerkleTree& tree);

}  // namespace vt::crypto
