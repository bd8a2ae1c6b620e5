#pragma once
// The solver's signed commitment (docs/formats.md, "Commitment — a solver's
// signed claim"): bounty id, job hash, the Merkle root over the checkpoint
// state hashes h_0, h_k, …, h_N (leaves are the state hashes themselves),
// the final state hash, and in rounded mode the root over the per-interval
// rounding-log hashes (worker/run_dir.h), zero otherwise. Signed with
// BIP-340 over protocol::CommitmentSigningHash; canonical bytes are
// protocol::EncodeCommitment.
//
// Reasons (Invalid): commitment-bad-signature, commitment-job-mismatch,
// commitment-checkpoint-mismatch, commitment-final-mismatch,
// commitment-log-mismatch, commitment-incomplete-run, commitment-corrupt
// (a file that does not decode).

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/keys.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "worker/run_dir.h"

namespace vt::worker {

Hash256 CheckpointRoot(std::span<const Hash256> checkpoint_hashes);
Hash256 LogRoot(std::span<const Hash256> interval_log_hashes);
// The full checkpoint tree (for CommitArgs' top and first/last proofs).
crypto::MerkleTree CheckpointTree(const RunManifest& manifest);

// The unsigned commitment of a complete run. Invalid "commitment-incomplete-run"
// when the manifest lacks checkpoints or (rounded mode) interval logs.
Result<protocol::Commitment> BuildCommitment(std::uint64_t bounty_id, const protocol::JobSpec& job,
                                             const RunManifest& manifest);
// Sets `solver` to the key's x-only public key and signs.
Status SignCommitment(protocol::Commitment& commitment, const crypto::SecretKey& key);
// The signature against `solver`.
Status VerifyCommitmentSignature(const protocol::Commitment& commitment);
// Signature, job hash, and every root against a run's manifest.
Status CheckCommitment(const protocol::Commitment& commitment, const protocol::JobSpec& job,
                       const RunManifest& manifest);

Status SaveCommitment(const std::filesystem::path& path, const protocol::Commitment& commitment);
// Error file-*; Invalid "commitment-corrupt" for bytes that do not decode.
Result<protocol::Commitment> LoadCommitment(const std::filesystem::path& path);

std::string CommitmentToJson(const protocol::Commitment& commitment, int indent = 2);

}  // namespace vt::worker
