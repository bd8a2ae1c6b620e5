#pragma once
// A node's rounding log committed as a Merkle tree over its entries, so that
// what the log says at one output position — an entry, or none — can be
// opened without the rest of the log (docs/formats.md "Rounding logs";
// docs/referee.md "Element-level descent", rounded mode). Leaf i is entry i:
//
//   leaf      MerkleLeafHash(u64le position ‖ u8 up)        (crypto/merkle.h)
//   log hash  TaggedHash("veritrain/rounding-log/v2", root)  root over the leaves
//
// (v1 hashed the flat payload: a value's entry could only be shown with the
// whole log, which for a large node does not fit one transaction.)
//
// An opening at position p is the entry at p, or the two entries around it —
// the last one before p and the first one after, either absent at an end of
// the log — at adjacent leaves, so no entry lies between them. It is the only
// opening at p in a log whose positions strictly increase, and every log a
// party can publish is one (the payload's parser refuses anything else,
// kernels/rounding.h): a challenger opens the log it downloaded, and an
// honest solver's own log.

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/rounding.h"

namespace vt::kernels {

// The tree's leaf hash of one entry.
Hash256 LogEntryLeafHash(const LogEntry& entry);
// The root of the log's tree (the Merkle root of 0 leaves for an empty log).
Hash256 LogTreeRoot(const RoundingLog& log);
// The log hash of a node record from its tree's root.
Hash256 LogHashFromRoot(const Hash256& root);

// One entry with its inclusion proof (proof.leaf_index is its index).
struct LogEntryProof {
  LogEntry entry;
  crypto::MerkleProof proof;
  bool operator==(const LogEntryProof&) const = default;
};

// What the log says at one position (see above): `at`, or `before`/`after`.
struct LogOpening {
  Hash256 root;  // the log tree's root: the log hash is LogHashFromRoot(root)
  std::optional<LogEntryProof> at;
  std::optional<LogEntryProof> before;
  std::optional<LogEntryProof> after;
  bool operator==(const LogOpening&) const = default;
};

// A log with its tree, to open at any position. Positions must strictly
// increase (a log that parsed from a payload).
class RoundingLogTree {
 public:
  explicit RoundingLogTree(RoundingLog log);
  const RoundingLog& log() const { return m_log; }
  const Hash256& root() const { return m_tree.root(); }
  Hash256 hash() const { return LogHashFromRoot(root()); }
  LogOpening Open(std::uint64_t position) const;

 private:
  LogEntryProof Entry(std::size_t index) const;

  RoundingLog m_log;
  crypto::MerkleTree m_tree;
};

// The direction the log with hash `log_hash` logs at `position` (true: up),
// or nullopt when it has no entry there. Invalid:
//   "log-opening-bad-root"      the root is not the log hash's
//   "log-opening-bad-proof"     an entry's proof fails against the root
//   "log-opening-wrong-entry"   `at` is not at the position, or `before`/`after`
//                               not before/after it, or `at` comes with them
//   "log-opening-not-adjacent"  `before` and `after` are not neighbours, or an
//                               absent one is not the end of the log
// Unmetered: a caller charges the opening's proofs first (at most two, each
// of at most 62 siblings).
Result<std::optional<bool>> OpenLogAt(const Hash256& log_hash, std::uint64_t position,
                                      const LogOpening& opening);

// Wire form: hash root ‖ optional<entry> at ‖ optional<entry> before ‖
// optional<entry> after, entry = u64 position ‖ bool up ‖ MerkleProof.
void Encode(Writer& w, const LogOpening& opening);
Result<LogOpening> Decode(Reader& r, DecodeAs<LogOpening>);

}  // namespace vt::kernels
