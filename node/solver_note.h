#pragma once
// A solver's note on a bounty it trains (docs/node.md, "Solver notes"):
// its training progress (step, loss, ETA) while it trains, and, once it has
// committed, the checkpoints it serves on request — each with the blob of
// its checkpoint file and the Merkle proof of its state hash against the
// committed checkpoint root. The note is signed by the bounty's solver (the
// key its claim recorded, Bounty::solver_key) and lives off chain, in the
// memory of the node the solver's daemon talks to (SolverBoard): nothing in
// it is trusted beyond what the signature and the proofs show, and a note
// never changes the chain.
//
// Bounds, so that no caller can make a node hold much: one note per bounty
// (a newer seq replaces it), at most kMaxServedCheckpoints entries, at most
// kMaxSolverNoteBytes encoded, at most kMaxCheckpointRequests open requests
// per bounty, at most kMaxNotedBounties bounties (the lowest ids go first).

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/keys.h"
#include "crypto/merkle.h"
#include "referee/records.h"

namespace vt::node {

inline constexpr std::size_t kMaxServedCheckpoints = 16;
inline constexpr std::size_t kMaxCheckpointRequests = 8;
inline constexpr std::size_t kMaxNotedBounties = 1024;
inline constexpr std::size_t kMaxSolverNoteBytes = std::size_t{64} << 10;

// One committed checkpoint the solver has published as a blob.
struct ServedCheckpoint {
  std::uint64_t index = 0;    // its leaf in the checkpoint tree
  Hash256 state_hash;         // the leaf: the state hash of that checkpoint
  Hash256 blob;               // SHA-256 of its checkpoint file (worker/checkpoint_store.h)
  std::uint64_t blob_bytes = 0;
  crypto::MerkleProof proof;  // of state_hash at index, against Commitment::checkpoint_root
  bool operator==(const ServedCheckpoint&) const = default;
};

struct SolverNote {
  std::uint64_t bounty_id = 0;
  std::uint64_t seq = 0;        // strictly increasing per bounty: the solver's wall clock, ms since 1970
  std::uint64_t step = 0;       // steps trained so far
  std::uint64_t num_steps = 0;  // the job's N
  float loss = 0;               // of the last step trained
  std::uint64_t eta_ms = 0;     // until training completes; 0 once done
  std::vector<ServedCheckpoint> checkpoints;
  crypto::Signature signature;  // BIP-340 by the bounty's solver over SolverNoteSigningHash
  bool operator==(const SolverNote&) const = default;
};

void Encode(Writer& w, const ServedCheckpoint& c);
Result<ServedCheckpoint> Decode(Reader& r, DecodeAs<ServedCheckpoint>);
void Encode(Writer& w, const SolverNote& n);
Result<SolverNote> Decode(Reader& r, DecodeAs<SolverNote>);

// TaggedHash("veritrain/solver-note/v1", the encoding without the signature).
Hash256 SolverNoteSigningHash(const SolverNote& n);
Status SignSolverNote(SolverNote& n, const crypto::SecretKey& key);

// The one check of a note against the bounty's chain record, made by the
// node before keeping it and by the CLI before believing it. Invalid
// "note-*": another bounty, a bounty that has no solver to speak for it
// (open, failed, refunded), a signature not by its solver, step or N not the
// job's, too many checkpoints, checkpoints before a commit, or a proof that
// does not reach the committed root.
Status VerifySolverNote(const SolverNote& n, const referee::Bounty& b);

// The notes one node keeps (thread-safe), and the checkpoint requests
// clients leave for the solver's daemon.
class SolverBoard {
 public:
  // Verifies and keeps `n`; Invalid "note-stale" unless its seq is newer.
  Status Put(const SolverNote& n, const referee::Bounty& b);
  std::optional<SolverNote> Get(std::uint64_t bounty_id) const;
  // Asks the solver for checkpoint `index` of a committed bounty. Invalid
  // "checkpoint-out-of-range", "checkpoint-not-committed" or
  // "checkpoint-requests-full" (kMaxCheckpointRequests open; ask later).
  // A checkpoint already in the note needs no request: false is returned.
  Result<bool> Request(const referee::Bounty& b, std::uint64_t index);
  std::vector<std::uint64_t> Requests(std::uint64_t bounty_id) const;

 private:
  struct Entry {
    std::optional<SolverNote> note;
    std::set<std::uint64_t> requests;
  };
  Entry& At(std::uint64_t bounty_id);  // creates; evicts the lowest id beyond kMaxNotedBounties

  mutable std::mutex m_mu;
  std::map<std::uint64_t, Entry> m_entries;
};

}  // namespace vt::node
