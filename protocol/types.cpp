#include "protocol/types.h"

#include <string>

#include "common/limits.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::protocol {

namespace {

constexpr std::uint32_t kJobVersion = 1;
constexpr std::uint8_t kMaxMode = 3;  // kernels::Mode::kCertified (append-only)
constexpr std::uint8_t kModeRounded = 2;
constexpr std::uint8_t kMinRoundingBits = 23;
constexpr std::uint8_t kMaxRoundingBits = 32;

// Everything of a commitment except the signature: the signed message.
void EncodeUnsignedCommitment(Writer& w, const Commitment& c) {
  w.PutU64(c.bounty_id);
  w.PutHash(c.job_hash);
  w.PutHash(c.checkpoint_root);
  w.PutHash(c.final_state_hash);
  w.PutHash(c.log_root);
  w.PutFixed(c.solver);
}

template <std::size_t N>
Result<std::array<std::uint8_t, N>> GetArray(Reader& r) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, r.GetFixed(N));
  std::array<std::uint8_t, N> out{};
  std::copy(view.begin(), view.end(), out.begin());
  return out;
}

}  // namespace

// ---- JobSpec ------------------------------------------------------------------

Status ValidateJobSpec(const JobSpec& job) {
  if (job.version != kJobVersion)
    return Status::Invalid("job-bad-version", "job version " + std::to_string(job.version) + " is not 1");
  if (job.mode > kMaxMode) return Status::Invalid("job-bad-mode", "mode " + std::to_string(job.mode) + " is undefined");
  if (job.mode == kModeRounded) {
    if (job.rounding_bits < kMinRoundingBits || job.rounding_bits > kMaxRoundingBits)
      return Status::Invalid("job-bad-rounding",
                             "rounding bits " + std::to_string(job.rounding_bits) + " outside [23, 32]");
  } else if (job.rounding_bits != kMaxRoundingBits || !job.tau_table.empty()) {
    // One job, one encoding: unused rounding fields must hold their defaults.
    return Status::Invalid("job-bad-rounding", "rounding bits must be 32 and the tau table empty outside rounded mode");
  }
  if (job.batch_size == 0 || job.batch_size > limits::kMaxBatchSize)
    return Status::Invalid("job-bad-batch-size", "batch size " + std::to_string(job.batch_size) + " outside [1, " +
                                                     std::to_string(limits::kMaxBatchSize) + "]");
  if (job.dataset_size == 0 || job.dataset_size > limits::kMaxDatasetSize)
    return Status::Invalid("job-bad-dataset-size", "dataset size " + std::to_string(job.dataset_size) +
                                                       " outside [1, " + std::to_string(limits::kMaxDatasetSize) + "]");
  if (job.num_steps == 0 || job.num_steps > limits::kMaxSteps)
    return Status::Invalid("job-bad-steps", "number of steps " + std::to_string(job.num_steps) + " outside [1, " +
                                                std::to_string(limits::kMaxSteps) + "]");
  if (job.checkpoint_interval == 0) return Status::Invalid("job-bad-interval", "checkpoint interval is 0");
  if (CheckpointCount(job.num_steps, job.checkpoint_interval) > kMaxCheckpoints)
    return Status::Invalid("job-too-many-checkpoints", "more than 2^24 checkpoints");
  return Status::Ok();
}

void Encode(Writer& w, const JobSpec& job) {
  w.PutU32(job.version);
  w.PutBytes(job.model);
  w.PutBytes(job.optimizer);
  w.PutHash(job.dataset_root);
  w.PutU64(job.dataset_size);
  w.PutU64(job.seed);
  w.PutU32(job.batch_size);
  w.PutU64(job.num_steps);
  w.PutU64(job.checkpoint_interval);
  w.PutU8(job.mode);
  w.PutU8(job.rounding_bits);
  w.PutBytes(job.tau_table);
}

Result<JobSpec> Decode(Reader& r, DecodeAs<JobSpec>) {
  JobSpec job;
  VT_ASSIGN_OR_RETURN(job.version, r.GetU32());
  // A later version may lay out its fields differently: stop before reading them.
  if (job.version != kJobVersion)
    return Status::Invalid("job-bad-version", "job version " + std::to_string(job.version) + " is not 1");
  VT_ASSIGN_OR_RETURN(job.model, r.GetBytes(kMaxSpecBytes));
  VT_ASSIGN_OR_RETURN(job.optimizer, r.GetBytes(kMaxSpecBytes));
  VT_ASSIGN_OR_RETURN(job.dataset_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(job.dataset_size, r.GetU64());
  VT_ASSIGN_OR_RETURN(job.seed, r.GetU64());
  VT_ASSIGN_OR_RETURN(job.batch_size, r.GetU32());
  VT_ASSIGN_OR_RETURN(job.num_steps, r.GetU64());
  VT_ASSIGN_OR_RETURN(job.checkpoint_interval, r.GetU64());
  VT_ASSIGN_OR_RETURN(job.mode, r.GetU8());
  VT_ASSIGN_OR_RETURN(job.rounding_bits, r.GetU8());
  VT_ASSIGN_OR_RETURN(job.tau_table, r.GetBytes(kMaxSpecBytes));
  VT_TRY(ValidateJobSpec(job));
  return job;
}

Bytes EncodeJobSpec(const JobSpec& job) { return EncodeToBytes(job); }
Result<JobSpec> DecodeJobSpec(ByteSpan bytes) { return DecodeExact<JobSpec>(bytes); }

Hash256 JobHash(const JobSpec& job) {
  static const crypto::TaggedHasher hasher(crypto::tags::kJob);
  return hasher.Hash(EncodeJobSpec(job));
}

// ---- checkpoints ----------------------------------------------------------------

std::uint64_t CheckpointCount(std::uint64_t num_steps, std::uint64_t interval) {
  if (interval == 0) return 0;
  // 0, k, …, floor(N/k)·k, and N once more when it is not a multiple of k.
  return num_steps / interval + 1 + (num_steps % interval != 0 ? 1 : 0);
}

std::uint64_t CheckpointStepAt(std::uint64_t num_steps, std::uint64_t interval, std::uint64_t i) {
  // i <= N/k guarantees i*k <= N (no overflow); beyond that it is the final N.
  return i <= num_steps / interval ? i * interval : num_steps;
}

std::vector<std::uint64_t> CheckpointSteps(std::uint64_t num_steps, std::uint64_t interval) {
  const std::uint64_t count = CheckpointCount(num_steps, interval);
  std::vector<std::uint64_t> steps;
  steps.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) steps.push_back(CheckpointStepAt(num_steps, interval, i));
  return steps;
}

// ---- Commitment -------------------------------------------------------------------

void Encode(Writer& w, const Commitment& c) {
  EncodeUnsignedCommitment(w, c);
  w.PutFixed(c.signature);
}

Result<Commitment> Decode(Reader& r, DecodeAs<Commitment>) {
  Commitment c;
  VT_ASSIGN_OR_RETURN(c.bounty_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(c.job_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.checkpoint_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.final_state_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.log_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.solver, GetArray<32>(r));
  VT_ASSIGN_OR_RETURN(c.signature, GetArray<64>(r));
  return c;
}

Bytes EncodeCommitment(const Commitment& c) { return EncodeToBytes(c); }
Result<Commitment> DecodeCommitment(ByteSpan bytes) { return DecodeExact<Commitment>(bytes); }

Hash256 CommitmentSigningHash(const Commitment& c) {
  static const crypto::TaggedHasher hasher(crypto::tags::kCommitment);
  Writer w;
  EncodeUnsignedCommitment(w, c);
  return hasher.Hash(w.bytes());
}

// ---- NodeRecord -------------------------------------------------------------------

void Encode(Writer& w, const InputRef& in) {
  w.PutEnum(in.source);
  w.PutU32(in.index);
  w.PutU32(in.slot);
}

Result<InputRef> Decode(Reader& r, DecodeAs<InputRef>) {
  InputRef in;
  VT_ASSIGN_OR_RETURN(in.source, r.GetEnum(InputSource::kNode));
  VT_ASSIGN_OR_RETURN(in.index, r.GetU32());
  VT_ASSIGN_OR_RETURN(in.slot, r.GetU32());
  // Only node outputs have slots; a slot elsewhere would give one input two encodings.
  if (in.source != InputSource::kNode && in.slot != 0)
    return Status::Invalid("node-bad-input-ref", "slot " + std::to_string(in.slot) + " on a state or batch input");
  return in;
}

void Encode(Writer& w, const NodeRecord& rec) {
  w.PutU16(rec.op_kind);
  w.PutBytes(rec.attrs);
  w.PutVector(rec.inputs);
  w.PutVector(rec.output_hashes);
  w.PutHash(rec.log_hash);
}

Result<NodeRecord> Decode(Reader& r, DecodeAs<NodeRecord>) {
  NodeRecord rec;
  VT_ASSIGN_OR_RETURN(rec.op_kind, r.GetU16());
  VT_ASSIGN_OR_RETURN(rec.attrs, r.GetBytes(kMaxNodeAttrBytes));
  VT_ASSIGN_OR_RETURN(rec.inputs, r.GetVector<InputRef>(kMaxNodeInputs));
  VT_ASSIGN_OR_RETURN(rec.output_hashes, r.GetVector<Hash256>(kMaxNodeOutputs));
  VT_ASSIGN_OR_RETURN(rec.log_hash, r.GetHash());
  return rec;
}

Bytes EncodeNodeRecord(const NodeRecord& r) { return EncodeToBytes(r); }
Result<NodeRecord> DecodeNodeRecord(ByteSpan bytes) { return DecodeExact<NodeRecord>(bytes); }

Hash256 NodeRecordHash(const NodeRecord& r) {
  static const crypto::TaggedHasher hasher(crypto::tags::kNodeRecord);
  return hasher.Hash(EncodeNodeRecord(r));
}

}  // namespace vt::protocol
