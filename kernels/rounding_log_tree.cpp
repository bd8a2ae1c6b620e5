#include "kernels/rounding_log_tree.h"

#include <algorithm>
#include <vector>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::kernels {
namespace {

std::vector<Hash256> LeafHashes(const RoundingLog& log) {
  std::vector<Hash256> leaves;
  leaves.reserve(log.entries.size());
  for (const LogEntry& e : log.entries) leaves.push_back(LogEntryLeafHash(e));
  return leaves;
}

Status CheckEntry(const Hash256& root, const LogEntryProof& e) {
  if (!crypto::VerifyMerkleProof(root, LogEntryLeafHash(e.entry), e.proof).ok())
    return Status::Invalid("log-opening-bad-proof", "a log entry's proof fails against the log's root");
  return Status::Ok();
}

void PutEntry(Writer& w, const LogEntryProof& e) {
  w.PutU64(e.entry.position);
  w.PutBool(e.entry.up);
  crypto::Encode(w, e.proof);
}

Result<LogEntryProof> GetEntry(Reader& r) {
  LogEntryProof e;
  VT_ASSIGN_OR_RETURN(e.entry.position, r.GetU64());
  VT_ASSIGN_OR_RETURN(e.entry.up, r.GetBool());
  VT_ASSIGN_OR_RETURN(e.proof, crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}));
  return e;
}

}  // namespace

Hash256 LogEntryLeafHash(const LogEntry& entry) {
  Writer w;
  w.PutU64(entry.position);
  w.PutBool(entry.up);
  return crypto::MerkleLeafHash(w.bytes());
}

Hash256 LogTreeRoot(const RoundingLog& log) { return crypto::MerkleRoot(LeafHashes(log)); }

Hash256 LogHashFromRoot(const Hash256& root) {
  static const crypto::TaggedHasher hasher(crypto::tags::kRoundingLog);
  return hasher.Hash(root.span());
}

Hash256 HashRoundingLog(const RoundingLog& log) { return LogHashFromRoot(LogTreeRoot(log)); }

RoundingLogTree::RoundingLogTree(RoundingLog log)
    : m_log(std::move(log)), m_tree(crypto::MerkleTree::FromLeafHashes(LeafHashes(m_log))) {}

LogEntryProof RoundingLogTree::Entry(std::size_t index) const {
  return LogEntryProof{m_log.entries[index], m_tree.Prove(index)};
}

LogOpening RoundingLogTree::Open(std::uint64_t position) const {
  LogOpening opening;
  opening.root = root();
  const auto& entries = m_log.entries;
  const auto next = std::partition_point(entries.begin(), entries.end(),
                                         [&](const LogEntry& e) { return e.position < position; });
  const auto i = static_cast<std::size_t>(next - entries.begin());
  if (next != entries.end() && next->position == position) {
    opening.at = Entry(i);
    return opening;
  }
  if (i > 0) opening.before = Entry(i - 1);
  if (next != entries.end()) opening.after = Entry(i);
  return opening;
}

Result<std::optional<bool>> OpenLogAt(const Hash256& log_hash, std::uint64_t position, const LogOpening& o) {
  if (LogHashFromRoot(o.root) != log_hash)
    return Status::Invalid("log-opening-bad-root", "the opened root is not the log hash's");
  if (o.at) {
    if (o.before || o.after || o.at->entry.position != position)
      return Status::Invalid("log-opening-wrong-entry", "the entry opened is not at the position");
    VT_TRY(CheckEntry(o.root, *o.at));
    return std::optional<bool>(o.at->entry.up);
  }
  if ((o.before && o.before->entry.position >= position) || (o.after && o.after->entry.position <= position))
    return Status::Invalid("log-opening-wrong-entry", "the neighbours do not surround the position");
  if (o.before) VT_TRY(CheckEntry(o.root, *o.before));
  if (o.after) VT_TRY(CheckEntry(o.root, *o.after));
  // The neighbours are adjacent leaves, and an absent one is an end of the log.
  bool adjacent = false;
  if (o.before && o.after) {
    adjacent = o.before->proof.leaf_count == o.after->proof.leaf_count &&
               o.after->proof.leaf_index == o.before->proof.leaf_index + 1;
  } else if (o.before) {
    adjacent = o.before->proof.leaf_index + 1 == o.before->proof.leaf_count;
  } else if (o.after) {
    adjacent = o.after->proof.leaf_index == 0;
  } else {
    adjacent = o.root == crypto::MerkleRoot({});  // the empty log
  }
  if (!adjacent)
    return Status::Invalid("log-opening-not-adjacent", "an entry of the log may lie between the neighbours");
  return std::optional<bool>();
}

void Encode(Writer& w, const LogOpening& o) {
  w.PutHash(o.root);
  for (const auto* e : {&o.at, &o.before, &o.after}) w.PutOptional(*e, PutEntry);
}

Result<LogOpening> Decode(Reader& r, DecodeAs<LogOpening>) {
  LogOpening o;
  VT_ASSIGN_OR_RETURN(o.root, r.GetHash());
  for (auto* e : {&o.at, &o.before, &o.after}) {
    VT_ASSIGN_OR_RETURN(*e, r.GetOptional<LogEntryProof>(GetEntry));
  }
  return o;
}

}  // namespace vt::kernels
