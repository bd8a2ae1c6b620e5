#include "node/solver_note.h"

#include <bit>
#include <string>

#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "protocol/types.h"

namespace vt::node {
namespace {

void EncodeUnsigned(Writer& w, const SolverNote& n) {
  w.PutU64(n.bounty_id);
  w.PutU64(n.seq);
  w.PutU64(n.step);
  w.PutU64(n.num_steps);
  w.PutU32(std::bit_cast<std::uint32_t>(n.loss));  // a report, never consensus: its bits as sent
  w.PutU64(n.eta_ms);
  w.PutVector(n.checkpoints);
}

bool Active(referee::BountyState s) {
  return s == referee::BountyState::kClaimed || s == referee::BountyState::kCommitted ||
         s == referee::BountyState::kFinalized;
}

bool Committed(referee::BountyState s) {
  return s == referee::BountyState::kCommitted || s == referee::BountyState::kFinalized;
}

}  // namespace

void Encode(Writer& w, const ServedCheckpoint& c) {
  w.PutU64(c.index);
  w.PutHash(c.state_hash);
  w.PutHash(c.blob);
  w.PutU64(c.blob_bytes);
  crypto::Encode(w, c.proof);
}

Result<ServedCheckpoint> Decode(Reader& r, DecodeAs<ServedCheckpoint>) {
  ServedCheckpoint c;
  VT_ASSIGN_OR_RETURN(c.index, r.GetU64());
  VT_ASSIGN_OR_RETURN(c.state_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.blob, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.blob_bytes, r.GetU64());
  VT_ASSIGN_OR_RETURN(c.proof, crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}));
  return c;
}

void Encode(Writer& w, const SolverNote& n) {
  EncodeUnsigned(w, n);
  crypto::Encode(w, n.signature);
}

Result<SolverNote> Decode(Reader& r, DecodeAs<SolverNote>) {
  SolverNote n;
  VT_ASSIGN_OR_RETURN(n.bounty_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(n.seq, r.GetU64());
  VT_ASSIGN_OR_RETURN(n.step, r.GetU64());
  VT_ASSIGN_OR_RETURN(n.num_steps, r.GetU64());
  VT_ASSIGN_OR_RETURN(std::uint32_t loss_bits, r.GetU32());
  n.loss = std::bit_cast<float>(loss_bits);
  VT_ASSIGN_OR_RETURN(n.eta_ms, r.GetU64());
  VT_ASSIGN_OR_RETURN(n.checkpoints, r.GetVector<ServedCheckpoint>(kMaxServedCheckpoints));
  VT_ASSIGN_OR_RETURN(n.signature, crypto::Decode(r, DecodeAs<crypto::Signature>{}));
  return n;
}

Hash256 SolverNoteSigningHash(const SolverNote& n) {
  Writer w;
  EncodeUnsigned(w, n);
  return crypto::TaggedHash(crypto::tags::kSolverNote, w.bytes());
}

Status SignSolverNote(SolverNote& n, const crypto::SecretKey& key) {
  VT_ASSIGN_OR_RETURN(n.signature, crypto::Sign(key, SolverNoteSigningHash(n).span()));
  return Status::Ok();
}

Status VerifySolverNote(const SolverNote& n, const referee::Bounty& b) {
  const std::string id = std::to_string(b.id);
  if (n.bounty_id != b.id) return Status::Invalid("note-wrong-bounty", "the note is about another bounty");
  if (!Active(b.state))
    return Status::Invalid("note-no-solver", "bounty " + id + " has no solver whose notes count (not claimed, "
                                             "committed or finalized)");
  if (!crypto::VerifyBytes(b.solver_key, SolverNoteSigningHash(n).span(), n.signature.span()))
    return Status::Invalid("note-bad-signature", "the note is not signed by the solver of bounty " + id);
  if (n.num_steps != b.num_steps || n.step > n.num_steps)
    return Status::Invalid("note-bad-step", "step " + std::to_string(n.step) + " of " + std::to_string(n.num_steps) +
                                                " does not fit the job's " + std::to_string(b.num_steps) + " steps");
  if (n.checkpoints.size() > kMaxServedCheckpoints)
    return Status::Invalid("note-too-many-checkpoints", "at most " + std::to_string(kMaxServedCheckpoints));
  if (!n.checkpoints.empty() && !Committed(b.state))
    return Status::Invalid("note-checkpoints-before-commit", "bounty " + id + " has no committed checkpoints yet");
  const std::uint64_t count = protocol::CheckpointCount(b.num_steps, b.checkpoint_interval);
  for (const ServedCheckpoint& c : n.checkpoints) {
    if (c.index >= count || c.proof.leaf_index != c.index || c.proof.leaf_count != count)
      return Status::Invalid("note-bad-checkpoint", "checkpoint " + std::to_string(c.index) + " is not a leaf of " +
                                                        std::to_string(count) + " checkpoints");
    if (Status s = crypto::VerifyMerkleProof(b.commitment.checkpoint_root, c.state_hash, c.proof); !s.ok())
      return Status::Invalid("note-bad-proof", "checkpoint " + std::to_string(c.index) +
                                                   ": its proof does not reach the committed checkpoint root (" +
                                                   s.reason() + ")");
  }
  return Status::Ok();
}

SolverBoard::Entry& SolverBoard::At(std::uint64_t bounty_id) {
  if (!m_entries.count(bounty_id) && m_entries.size() >= kMaxNotedBounties) m_entries.erase(m_entries.begin());
  return m_entries[bounty_id];
}

Status SolverBoard::Put(const SolverNote& n, const referee::Bounty& b) {
  VT_TRY(VerifySolverNote(n, b));
  std::lock_guard lock(m_mu);
  Entry& e = At(b.id);
  if (e.note && e.note->seq >= n.seq)
    return Status::Invalid("note-stale", "seq " + std::to_string(n.seq) + " is not newer than the note held (" +
                                             std::to_string(e.note->seq) + ")");
  e.note = n;
  for (const ServedCheckpoint& c : n.checkpoints) e.requests.erase(c.index);
  return Status::Ok();
}

std::optional<SolverNote> SolverBoard::Get(std::uint64_t bounty_id) const {
  std::lock_guard lock(m_mu);
  auto it = m_entries.find(bounty_id);
  return it == m_entries.end() ? std::nullopt : it->second.note;
}

Result<bool> SolverBoard::Request(const referee::Bounty& b, std::uint64_t index) {
  const std::uint64_t count = protocol::CheckpointCount(b.num_steps, b.checkpoint_interval);
  if (!Committed(b.state))
    return Status::Invalid("checkpoint-not-committed", "bounty " + std::to_string(b.id) +
                                                           " has no committed checkpoints (claimed, open, failed "
                                                           "or refunded)");
  if (index >= count)
    return Status::Invalid("checkpoint-out-of-range", "bounty " + std::to_string(b.id) + " has checkpoints 0.." +
                                                          std::to_string(count - 1));
  std::lock_guard lock(m_mu);
  Entry& e = At(b.id);
  if (e.note)
    for (const ServedCheckpoint& c : e.note->checkpoints)
      if (c.index == index) return false;
  if (e.requests.count(index)) return true;
  if (e.requests.size() >= kMaxCheckpointRequests)
    return Status::Invalid("checkpoint-requests-full", std::to_string(kMaxCheckpointRequests) +
                                                           " checkpoints of this bounty are already requested; ask "
                                                           "again once the solver has served them");
  e.requests.insert(index);
  return true;
}

std::vector<std::uint64_t> SolverBoard::Requests(std::uint64_t bounty_id) const {
  std::lock_guard lock(m_mu);
  auto it = m_entries.find(bounty_id);
  if (it == m_entries.end()) return {};
  return {it->second.requests.begin(), it->second.requests.end()};
}

}  // namespace vt::node
