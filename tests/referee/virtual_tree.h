#pragma once
// A Merkle tree over up to 2^62 leaves that is never materialised: the leaf
// hashes are piecewise constant (a few segments [begin, end) → value), so a
// node whose leaves lie in one segment has a hash that depends only on its
// leaf count and the value, and only the O(segments · height) nodes that
// straddle a boundary need their children. Same shape and hashes as
// crypto::MerkleTree::FromLeafHashes over the expanded leaves.

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "crypto/merkle.h"

namespace vt::test {

class VirtualTree {
 public:
  struct Segment {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;  // exclusive
    Hash256 value;
  };

  // Segments must cover [0, n) in order, without gaps.
  explicit VirtualTree(std::vector<Segment> segments)
      : m_segments(std::move(segments)), m_shape(m_segments.back().end) {}

  const crypto::MerkleShape& shape() const { return m_shape; }
  std::uint64_t leaf_count() const { return m_shape.leaf_count(); }
  Hash256 Leaf(std::uint64_t i) const {
    for (const Segment& s : m_segments)
      if (i >= s.begin && i < s.end) return s.value;
    return {};
  }
  Hash256 top() { return Node({m_shape.height(), 0}); }
  Hash256 root() { return crypto::MerkleRootFromTop(leaf_count(), top()); }

  Hash256 Node(crypto::MerkleNodeId id) {
    const auto [first, last] = m_shape.LeafRange(id);
    for (const Segment& s : m_segments) {
      if (first >= s.begin && last <= s.end) return UniformTop(last - first, s.value);
    }
    if (auto it = m_memo.find(id); it != m_memo.end()) return it->second;
    Hash256 h;
    if (m_shape.Kind(id) == crypto::MerkleNodeKind::kPromoted) {
      h = Node({id.level - 1, 2 * id.index});
    } else {
      h = crypto::MerkleNodeHash(Node({id.level - 1, 2 * id.index}), Node({id.level - 1, 2 * id.index + 1}));
    }
    m_memo.emplace(id, h);
    return h;
  }

  crypto::NodeReveal Children(crypto::MerkleNodeId id) {
    return {Node({id.level - 1, 2 * id.index}), Node({id.level - 1, 2 * id.index + 1})};
  }

  crypto::MerkleProof Prove(std::uint64_t leaf) {
    crypto::MerkleProof p{leaf, leaf_count(), {}};
    for (unsigned level = 1; level <= m_shape.height(); ++level) {
      if (m_shape.Kind({level, leaf >> level}) != crypto::MerkleNodeKind::kPair) continue;
      p.siblings.push_back(Node({level - 1, (leaf >> (level - 1)) ^ 1}));
    }
    return p;
  }

 private:
  // The top of a standalone tree of m equal leaves: its left part is the
  // largest power of two below m, the rest is its own (promoted-edge) tree.
  Hash256 UniformTop(std::uint64_t m, const Hash256& v) {
    if (m == 1) return v;
    const auto key = std::make_pair(m, v);
    if (auto it = m_uniform.find(key); it != m_uniform.end()) return it->second;
    const crypto::MerkleShape s(m);
    const std::uint64_t left = std::uint64_t{1} << (s.height() - 1);
    const Hash256 h = crypto::MerkleNodeHash(UniformTop(left, v), UniformTop(m - left, v));
    m_uniform.emplace(key, h);
    return h;
  }

  std::vector<Segment> m_segments;
  crypto::MerkleShape m_shape;
  std::map<crypto::MerkleNodeId, Hash256> m_memo;
  std::map<std::pair<std::uint64_t, Hash256>, Hash256> m_uniform;
};

}  // namespace vt::test
