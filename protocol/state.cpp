#include "protocol/state.h"

#include <cassert>
#include <string>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::protocol {

Status ValidateStateHeader(const StateHeader& h) {
  if (h.tensor_names.size() > kMaxStateTensors)
    return Status::Invalid("state-bad-names", "more than " + std::to_string(kMaxStateTensors) + " tensors");
  for (std::size_t i = 0; i < h.tensor_names.size(); ++i) {
    const std::string& name = h.tensor_names[i];
    if (name.empty() || name.size() > kMaxTensorNameBytes)
      return Status::Invalid("state-bad-names", "tensor name " + std::to_string(i) + " is empty or too long");
    // Strictly increasing: sorted (the leaf order) and unique.
    if (i > 0 && !(h.tensor_names[i - 1] < name))
      return Status::Invalid("state-bad-names", "tensor names not strictly increasing at '" + name + "'");
  }
  return Status::Ok();
}

void Encode(Writer& w, const StateHeader& h) {
  w.PutU64(h.step);
  w.PutU64(h.rng_counter);
  w.PutU64(h.data_epoch);
  w.PutU64(h.data_offset);
  w.PutVector(h.tensor_names, &Writer::PutString);
}

Result<StateHeader> Decode(Reader& r, DecodeAs<StateHeader>) {
  StateHeader h;
  VT_ASSIGN_OR_RETURN(h.step, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.rng_counter, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.data_epoch, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.data_offset, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.tensor_names,
                      r.GetVector<std::string>([](Reader& rr) { return rr.GetString(kMaxTensorNameBytes); },
                                               kMaxStateTensors));
  VT_TRY(ValidateStateHeader(h));
  return h;
}

Bytes EncodeStateHeader(const StateHeader& h) { return EncodeToBytes(h); }
Result<StateHeader> DecodeStateHeader(ByteSpan bytes) { return DecodeExact<StateHeader>(bytes); }

Hash256 StateHeaderHash(const StateHeader& h) {
  static const crypto::TaggedHasher hasher(crypto::tags::kStateHeader);
  return hasher.Hash(EncodeStateHeader(h));
}

std::vector<Hash256> StateLeaves(std::span<const Hash256> tensor_hashes, const StateHeader& header) {
  assert(tensor_hashes.size() == header.tensor_names.size());
  std::vector<Hash256> leaves(tensor_hashes.begin(), tensor_hashes.end());
  leaves.push_back(StateHeaderHash(header));
  return leaves;
}

Hash256 StateHashFromLeaves(std::span<const Hash256> tensor_hashes, const StateHeader& header) {
  return crypto::MerkleRoot(StateLeaves(tensor_hashes, header));
}

Status VerifyStateTensor(const Hash256& state_hash, std::uint64_t tensor_count, std::uint64_t tensor_index,
                         const Hash256& tensor_hash, const crypto::MerkleProof& proof) {
  if (tensor_count > kMaxStateTensors || tensor_index >= tensor_count || proof.leaf_index != tensor_index ||
      proof.leaf_count != tensor_count + 1)
    return Status::Invalid("state-proof-bad-position", "the proof is not for tensor " + std::to_string(tensor_index) +
                                                           " of " + std::to_string(tensor_count));
  return crypto::VerifyMerkleProof(state_hash, tensor_hash, proof);
}

Status VerifyStateHeader(const Hash256& state_hash, const StateHeader& header, const crypto::MerkleProof& proof) {
  const std::uint64_t n = header.tensor_names.size();
  if (proof.leaf_index != n || proof.leaf_count != n + 1)
    return Status::Invalid("state-proof-bad-position", "the proof is not for the header leaf");
  return crypto::VerifyMerkleProof(state_hash, StateHeaderHash(header), proof);
}

}  // namespace vt::protocol
