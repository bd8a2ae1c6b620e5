// Commitments: build from a run, sign, verify, store.

#include "worker/commitment.h"

#include <nlohmann/json.hpp>

#include "worker/file_io.h"

namespace vt::worker {

Hash256 CheckpointRoot(std::span<const Hash256> checkpoint_hashes) { return crypto::MerkleRoot(checkpoint_hashes); }

Hash256 LogRoot(std::span<const Hash256> interval_log_hashes) { return crypto::MerkleRoot(interval_log_hashes); }

crypto::MerkleTree CheckpointTree(const RunManifest& manifest) {
  return crypto::MerkleTree::FromLeafHashes(manifest.CheckpointHashes());
}

Result<protocol::Commitment> BuildCommitment(std::uint64_t bounty_id, const protocol::JobSpec& job,
                                             const RunManifest& manifest) {
  if (manifest.job_hash != protocol::JobHash(job)) {
    return Status::Invalid("commitment-job-mismatch", "the run is of another job");
  }
  if (!manifest.Complete()) {
    return Status::Invalid("commitment-incomplete-run",
                           "the run has " + std::to_string(manifest.checkpoints.size()) + " of " +
                               std::to_string(protocol::CheckpointCount(job.num_steps, job.checkpoint_interval)) +
                               " checkpoints");
  }
  const bool rounded = job.mode == 2;
  if (rounded && manifest.logs.size() + 1 != manifest.checkpoints.size()) {
    return Status::Invalid("commitment-incomplete-run", "the run lacks rounding logs");
  }
  protocol::Commitment c;
  c.bounty_id = bounty_id;
  c.job_hash = manifest.job_hash;
  const std::vector<Hash256> hashes = manifest.CheckpointHashes();
  c.checkpoint_root = CheckpointRoot(hashes);
  c.final_state_hash = hashes.back();
  if (rounded) c.log_root = LogRoot(manifest.IntervalLogHashes());
  return c;
}

Status SignCommitment(protocol::Commitment& commitment, const crypto::SecretKey& key) {
  commitment.solver = key.public_key().bytes();
  VT_ASSIGN_OR_RETURN(crypto::Signature sig, crypto::Sign(key, protocol::CommitmentSigningHash(commitment).span()));
  commitment.signature = sig.bytes;
  return Status::Ok();
}

Status VerifyCommitmentSignature(const protocol::Commitment& commitment) {
  if (!crypto::VerifyBytes(commitment.solver, protocol::CommitmentSigningHash(commitment).span(),
                           commitment.signature)) {
    return Status::Invalid("commitment-bad-signature", "the signature does not verify under the solver's key");
  }
  return Status::Ok();
}

Status CheckCommitment(const protocol::Commitment& commitment, const protocol::JobSpec& job,
                       const RunManifest& manifest) {
  VT_TRY(VerifyCommitmentSignature(commitment));
  if (commitment.job_hash != protocol::JobHash(job)) {
    return Status::Invalid("commitment-job-mismatch", "commitment is for job " + commitment.job_hash.Hex() +
                                                          ", not " + protocol::JobHash(job).Hex());
  }
  auto expected = BuildCommitment(commitment.bounty_id, job, manifest);
  if (!expected.ok()) return expected.status();
  if (commitment.checkpoint_root != expected->checkpoint_root) {
    return Status::Invalid("commitment-checkpoint-mismatch", "the checkpoint root is not the run's");
  }
  if (commitment.final_state_hash != expected->final_state_hash) {
    return Status::Invalid("commitment-final-mismatch", "the final state hash is not the run's");
  }
  if (commitment.log_root != expected->log_root) {
    return Status::Invalid("commitment-log-mismatch", "the log root is not the run's");
  }
  return Status::Ok();
}

Status SaveCommitment(const std::filesystem::path& path, const protocol::Commitment& commitment) {
  return WriteFileAtomic(path, protocol::EncodeCommitment(commitment));
}

Result<protocol::Commitment> LoadCommitment(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Bytes bytes, ReadFile(path));
  auto c = protocol::DecodeCommitment(bytes);
  if (!c.ok()) return Status::Invalid("commitment-corrupt", path.string() + ": " + c.status().ToString());
  return c;
}

std::string CommitmentToJson(const protocol::Commitment& c, int indent) {
  nlohmann::json j;
  j["bounty_id"] = c.bounty_id;
  j["job_hash"] = c.job_hash.Hex();
  j["checkpoint_root"] = c.checkpoint_root.Hex();
  j["final_state_hash"] = c.final_state_hash.Hex();
  j["log_root"] = c.log_root.Hex();
  j["solver"] = ToHex(c.solver);
  j["signature"] = ToHex(c.signature);
  j["signing_hash"] = protocol::CommitmentSigningHash(c).Hex();
  return j.dump(indent);
}

}  // namespace vt::worker
