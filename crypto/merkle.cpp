#include "crypto/merkle.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::crypto {
namespace {

const TaggedHasher& LeafHasher() {
  static const TaggedHasher hasher(tags::kMerkleLeaf);
  return hasher;
}
const TaggedHasher& NodeHasher() {
  static const TaggedHasher hasher(tags::kMerkleNode);
  return hasher;
}
const TaggedHasher& RootHasher() {
  static const TaggedHasher hasher(tags::kMerkleRoot);
  return hasher;
}

constexpr std::uint8_t kLeafPrefix = 0x00;
constexpr std::uint8_t kNodePrefix = 0x01;

}  // namespace

Hash256 MerkleLeafHash(ByteSpan leaf_bytes) {
  const std::uint8_t prefix = kLeafPrefix;
  return LeafHasher().Hash({ByteSpan(&prefix, 1), leaf_bytes});
}

Hash256 MerkleNodeHash(const Hash256& left, const Hash256& right) {
  // One contiguous update: each EVP_DigestUpdate call has a fixed cost that
  // is noticeable next to hashing 65 bytes.
  std::uint8_t buf[1 + 2 * Hash256::kSize];
  buf[0] = kNodePrefix;
  std::memcpy(buf + 1, left.bytes.data(), Hash256::kSize);
  std::memcpy(buf + 1 + Hash256::kSize, right.bytes.data(), Hash256::kSize);
  return NodeHasher().Hash(ByteSpan(buf, sizeof buf));
}

Hash256 MerkleRootFromTop(std::uint64_t leaf_count, const Hash256& top) {
  std::uint8_t buf[8 + Hash256::kSize];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<std::uint8_t>(leaf_count >> (8 * i));
  std::memcpy(buf + 8, top.bytes.data(), Hash256::kSize);
  return RootHasher().Hash(ByteSpan(buf, sizeof buf));
}

// ---- shape ---------------------------------------------------------------------

unsigned MerkleShape::height() const {
  assert(m_leaf_count <= kMaxMerkleLeaves);
  return m_leaf_count <= 1 ? 0u : static_cast<unsigned>(std::bit_width(m_leaf_count - 1));
}

std::uint64_t MerkleShape::NodesAt(unsigned level) const {
  if (level > height()) return 0;
  // No overflow: n <= 2^62 and level <= 62.
  return (m_leaf_count + (std::uint64_t{1} << level) - 1) >> level;
}

MerkleNodeKind MerkleShape::Kind(MerkleNodeId node) const {
  assert(Contains(node));
  if (node.level == 0) return MerkleNodeKind::kLeaf;
  return 2 * node.index + 1 < NodesAt(node.level - 1) ? MerkleNodeKind::kPair : MerkleNodeKind::kPromoted;
}

std::pair<std::uint64_t, std::uint64_t> MerkleShape::LeafRange(MerkleNodeId node) const {
  assert(Contains(node));
  const std::uint64_t first = node.index << node.level;
  const std::uint64_t width = std::uint64_t{1} << node.level;
  const std::uint64_t last = m_leaf_count - first < width ? m_leaf_count : first + width;
  return {first, last};
}

unsigned MerkleShape::ProofLength(std::uint64_t leaf_index) const {
  assert(leaf_index < m_leaf_count);
  unsigned length = 0;
  for (unsigned level = 1; level <= height(); ++level) {
    if (Kind({level, leaf_index >> level}) == MerkleNodeKind::kPair) ++length;
  }
  return length;
}

// ---- proofs --------------------------------------------------------------------

Status VerifyMerkleProof(const Hash256& root, const Hash256& leaf_hash, const MerkleProof& proof) {
  if (!MerkleShape::IsValidLeafCount(proof.leaf_count)) {
    return Status::Invalid("merkle-proof-bad-count", "leaf count outside [1, 2^62]");
  }
  if (proof.leaf_index >= proof.leaf_count) {
    return Status::Invalid("merkle-proof-bad-index", "leaf index not below leaf count");
  }
  const MerkleShape shape(proof.leaf_count);
  if (proof.siblings.size() != shape.ProofLength(proof.leaf_index)) {
    return Status::Invalid("merkle-proof-bad-length", "sibling count does not match the tree shape");
  }
  Hash256 h = leaf_hash;
  std::size_t next = 0;
  for (unsigned level = 1; level <= shape.height(); ++level) {
    if (shape.Kind({level, proof.leaf_index >> level}) != MerkleNodeKind::kPair) continue;
    const bool is_right_child = ((proof.leaf_index >> (level - 1)) & 1) != 0;
    const Hash256& sibling = proof.siblings[next++];
    h = is_right_child ? MerkleNodeHash(sibling, h) : MerkleNodeHash(h, sibling);
  }
  if (MerkleRootFromTop(proof.leaf_count, h) != root) {
    return Status::Invalid("merkle-proof-mismatch", "proof does not lead to the root");
  }
  return Status::Ok();
}

void Encode(Writer& w, const MerkleProof& proof) {
  w.PutU64(proof.leaf_index);
  w.PutU64(proof.leaf_count);
  for (const Hash256& sibling : proof.siblings) w.PutHash(sibling);
}

Result<MerkleProof> Decode(Reader& r, DecodeAs<MerkleProof>) {
  MerkleProof proof;
  VT_ASSIGN_OR_RETURN(proof.leaf_index, r.GetU64());
  VT_ASSIGN_OR_RETURN(proof.leaf_count, r.GetU64());
  if (!MerkleShape::IsValidLeafCount(proof.leaf_count)) {
    return Status::Invalid("merkle-proof-bad-count", "leaf count outside [1, 2^62]");
  }
  if (proof.leaf_index >= proof.leaf_count) {
    return Status::Invalid("merkle-proof-bad-index", "leaf index not below leaf count");
  }
  const unsigned length = MerkleShape(proof.leaf_count).ProofLength(proof.leaf_index);
  proof.siblings.reserve(length);
  for (unsigned i = 0; i < length; ++i) {
    VT_ASSIGN_OR_RETURN(Hash256 sibling, r.GetHash());
    proof.siblings.push_back(sibling);
  }
  return proof;
}

// ---- trees ---------------------------------------------------------------------

namespace {

// Next level up from `below`: pairs hashed, an odd last node promoted.
void Reduce(std::span<const Hash256> below, std::vector<Hash256>& above) {
  above.resize((below.size() + 1) / 2);
  const std::size_t pairs = below.size() / 2;
  for (std::size_t j = 0; j < pairs; ++j) above[j] = MerkleNodeHash(below[2 * j], below[2 * j + 1]);
  if (below.size() % 2 != 0) above[pairs] = below.back();
}

}  // namespace

MerkleTree::MerkleTree(std::vector<Hash256> leaf_hashes) : m_shape(leaf_hashes.size()) {
  assert(leaf_hashes.size() <= kMaxMerkleLeaves);
  m_levels.resize(m_shape.height() + 1);
  m_levels[0] = std::move(leaf_hashes);
  BuildAbove(0);
}

MerkleTree::MerkleTree(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf, unsigned kept_from,
                       std::optional<std::vector<Hash256>> kept)
    : m_shape(leaf_count), m_leaf(std::move(leaf)) {
  assert(leaf_count <= kMaxMerkleLeaves);
  m_kept_from = std::min(kept_from, m_shape.height());
  m_levels.resize(m_shape.height() + 1);
  if (kept) {
    assert(m_kept_from == kept_from && kept->size() == m_shape.NodesAt(m_kept_from));
    m_levels[m_kept_from] = std::move(*kept);
  } else {
    std::vector<Hash256>& level = m_levels[m_kept_from];
    level.reserve(m_shape.NodesAt(m_kept_from));
    for (std::uint64_t j = 0; j < m_shape.NodesAt(m_kept_from); ++j)
      level.push_back(Recompute({m_kept_from, j}));
  }
  BuildAbove(m_kept_from);
}

MerkleTree MerkleTree::FromLeafSource(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf,
                                      unsigned kept_from) {
  return MerkleTree(leaf_count, std::move(leaf), kept_from, std::nullopt);
}

MerkleTree MerkleTree::FromKeptLevel(std::uint64_t leaf_count, std::function<Hash256(std::uint64_t)> leaf,
                                     unsigned kept_from, std::vector<Hash256> kept) {
  return MerkleTree(leaf_count, std::move(leaf), kept_from, std::move(kept));
}

void MerkleTree::BuildAbove(unsigned level) {
  for (unsigned up = level + 1; up < m_levels.size(); ++up) Reduce(m_levels[up - 1], m_levels[up]);
  if (!m_levels.back().empty()) m_top = m_levels.back().front();  // else all zeros
  m_root = MerkleRootFromTop(m_shape.leaf_count(), m_top);
}

Hash256 MerkleTree::Recompute(MerkleNodeId node) const {
  // The node's leaves start at a multiple of 2^level, so pairing them level
  // by level pairs them as the whole tree does; only a range ending at the
  // last leaf is short, and its odd last nodes are the ones the whole tree
  // promotes too.
  const auto [first, last] = m_shape.LeafRange(node);
  std::vector<Hash256> level, above;
  level.reserve(last - first);
  for (std::uint64_t i = first; i < last; ++i) level.push_back(m_leaf(i));
  for (unsigned l = 0; l < node.level; ++l) {
    Reduce(level, above);
    level.swap(above);
  }
  return level.front();
}

Hash256 MerkleTree::Node(MerkleNodeId node) const {
  assert(m_shape.Contains(node));
  if (node.level >= m_kept_from) return m_levels[node.level][node.index];
  return Recompute(node);
}

MerkleTree MerkleTree::FromLeafBytes(std::span<const Bytes> leaves) {
  std::vector<Hash256> hashes;
  hashes.reserve(leaves.size());
  for (const Bytes& leaf : leaves) hashes.push_back(MerkleLeafHash(leaf));
  return MerkleTree(std::move(hashes));
}

MerkleProof MerkleTree::Prove(std::uint64_t leaf_index) const {
  assert(leaf_index < leaf_count());
  MerkleProof proof;
  proof.leaf_index = leaf_index;
  proof.leaf_count = leaf_count();
  for (unsigned level = 1; level <= m_shape.height(); ++level) {
    if (m_shape.Kind({level, leaf_index >> level}) != MerkleNodeKind::kPair) continue;
    const std::uint64_t below = leaf_index >> (level - 1);
    proof.siblings.push_back(Node({level - 1, below ^ 1}));
  }
  return proof;
}

NodeReveal MerkleTree::Children(MerkleNodeId node) const {
  assert(m_shape.Contains(node) && m_shape.Kind(node) == MerkleNodeKind::kPair);
  return {Node({node.level - 1, 2 * node.index}), Node({node.level - 1, 2 * node.index + 1})};
}

Hash256 MerkleRoot(std::span<const Hash256> leaf_hashes) {
  assert(leaf_hashes.size() <= kMaxMerkleLeaves);
  if (leaf_hashes.empty()) return MerkleRootFromTop(0, Hash256{});
  if (leaf_hashes.size() == 1) return MerkleRootFromTop(1, leaf_hashes[0]);
  std::vector<Hash256> level;
  Reduce(leaf_hashes, level);
  // In place: entry j of the next level depends only on entries 2j, 2j+1 >= j.
  while (level.size() > 1) {
    const std::size_t pairs = level.size() / 2;
    for (std::size_t j = 0; j < pairs; ++j) level[j] = MerkleNodeHash(level[2 * j], level[2 * j + 1]);
    if (level.size() % 2 != 0) level[pairs] = level.back();
    level.resize((level.size() + 1) / 2);
  }
  return MerkleRootFromTop(leaf_hashes.size(), level.front());
}

// ---- walk ----------------------------------------------------------------------

Result<MerkleWalk> MerkleWalk::Start(std::uint64_t leaf_count, const Hash256& root_a,
                                     const Hash256& root_b) noexcept {
  if (!MerkleShape::IsValidLeafCount(leaf_count)) return Status::Invalid("walk-bad-count");
  if (root_a == root_b) return Status::Invalid("walk-same-roots");
  MerkleWalk walk(leaf_count, root_a, root_b);
  walk.m_current = {walk.m_shape.height(), 0};
  return walk;
}

Status MerkleWalk::CheckTurn(Party p, Phase expected) const noexcept {
  if (m_phase != expected) return Status::Invalid("walk-wrong-phase");
  if (m_revealed[Index(p)]) return Status::Invalid("walk-duplicate-reveal");
  return Status::Ok();
}

Status MerkleWalk::RevealTop(Party p, const Hash256& top) noexcept {
  VT_TRY(CheckTurn(p, Phase::kRevealTop));
  if (MerkleRootFromTop(m_shape.leaf_count(), top) != m_root[Index(p)]) {
    return Status::Invalid("walk-bad-top");
  }
  m_hash[Index(p)] = top;
  m_revealed[Index(p)] = true;
  if (m_revealed[0] && m_revealed[1]) {
    // Same count, different roots, so the tops differ.
    m_revealed[0] = m_revealed[1] = false;
    m_phase = Phase::kRevealChildren;
    SkipPromoted();
  }
  return Status::Ok();
}

Status MerkleWalk::RevealChildren(Party p, const NodeReveal& reveal) noexcept {
  VT_TRY(CheckTurn(p, Phase::kRevealChildren));
  if (MerkleNodeHash(reveal.left, reveal.right) != m_hash[Index(p)]) {
    return Status::Invalid("walk-bad-children");
  }
  m_reveal[Index(p)] = reveal;
  m_revealed[Index(p)] = true;
  if (m_revealed[0] && m_revealed[1]) Advance();
  return Status::Ok();
}

void MerkleWalk::Advance() noexcept {
  m_revealed[0] = m_revealed[1] = false;
  ++m_moves;
  const NodeReveal& a = m_reveal[0];
  const NodeReveal& b = m_reveal[1];
  // Both reveals hash to their party's node hash and those differ, so the
  // pairs differ: if the left children agree, the right ones do not.
  const bool go_left = a.left != b.left;
  m_current = {m_current.level - 1, 2 * m_current.index + (go_left ? 0 : 1)};
  m_hash[0] = go_left ? a.left : a.right;
  m_hash[1] = go_left ? b.left : b.right;
  assert(m_hash[0] != m_hash[1]);
  SkipPromoted();
}

void MerkleWalk::SkipPromoted() noexcept {
  while (m_current.level > 0 && m_shape.Kind(m_current) == MerkleNodeKind::kPromoted) {
    m_current = {m_current.level - 1, 2 * m_current.index};
  }
  if (m_current.level == 0) m_phase = Phase::kDone;
}

Status RespondHonestly(MerkleWalk& walk, MerkleWalk::Party p, const MerkleTree& tree) {
  assert(tree.leaf_count() == walk.shape().leaf_count());
  switch (walk.phase()) {
    case MerkleWalk::Phase::kRevealTop:
      return walk.RevealTop(p, tree.top());
    case MerkleWalk::Phase::kRevealChildren:
      return walk.RevealChildren(p, tree.Children(walk.current()));
    case MerkleWalk::Phase::kDone:
      break;
  }
  return Status::Invalid("walk-wrong-phase");
}

}  // namespace vt::crypto
