#include "contract_vm/state_root.h"

#include <vector>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::vm {
namespace {

const crypto::TaggedHasher& EntryHasher() {
  static const crypto::TaggedHasher hasher(crypto::tags::kStateEntry);
  return hasher;
}

Result<std::vector<Hash256>> CollectLeaves(const StateStore& store, ByteSpan find_key,
                                           std::optional<std::uint64_t>* found_index,
                                           Bytes* found_value) {
  std::vector<Hash256> leaves;
  VT_TRY(store.Scan({}, [&](ByteSpan key, ByteSpan value) {
    if (found_index != nullptr && !found_index->has_value() && key.size() == find_key.size() &&
        std::equal(key.begin(), key.end(), find_key.begin())) {
      *found_index = leaves.size();
      found_value->assign(value.begin(), value.end());
    }
    leaves.push_back(StateEntryHash(key, value));
    return true;
  }));
  return leaves;
}

}  // namespace

Hash256 StateEntryHash(ByteSpan key, ByteSpan value) {
  Writer w;
  w.PutBytes(key);
  w.PutHash(crypto::Sha256Digest(value));
  return EntryHasher().Hash(w.bytes());
}

Result<Hash256> ComputeStateRoot(const StateStore& store) noexcept {
  VT_ASSIGN_OR_RETURN(std::vector<Hash256> leaves, CollectLeaves(store, {}, nullptr, nullptr));
  return crypto::MerkleRoot(leaves);
}

Result<StateProof> ProveStateEntry(const StateStore& store, ByteSpan key) noexcept {
  std::optional<std::uint64_t> index;
  Bytes value;
  VT_ASSIGN_OR_RETURN(std::vector<Hash256> leaves, CollectLeaves(store, key, &index, &value));
  if (!index) return Status::Invalid("state-key-absent", "no entry under key " + ToHex(key));
  const crypto::MerkleTree tree = crypto::MerkleTree::FromLeafHashes(std::move(leaves));
  return StateProof{Bytes(key.begin(), key.end()), std::move(value), tree.Prove(*index)};
}

Status VerifyStateProof(const Hash256& root, const StateProof& proof) noexcept {
  return crypto::VerifyMerkleProof(root, StateEntryHash(proof.key, proof.value), proof.proof);
}

void Encode(Writer& w, const StateProof& p) {
  w.PutBytes(p.key);
  w.PutBytes(p.value);
  Encode(w, p.proof);
}

Result<StateProof> Decode(Reader& r, DecodeAs<StateProof>) {
  StateProof p;
  VT_ASSIGN_OR_RETURN(p.key, r.GetBytes());
  VT_ASSIGN_OR_RETURN(p.value, r.GetBytes());
  VT_ASSIGN_OR_RETURN(p.proof, crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}));
  return p;
}

}  // namespace vt::vm
