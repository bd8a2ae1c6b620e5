#pragma once
// The state root: a crypto Merkle tree (crypto/merkle.h) over every state
// entry in increasing key order, leaf i = StateEntryHash(key_i, value_i).
//
// Trade-off (docs/referee.md, "State root"): the tree is recomputed from the
// sorted entries once per block, O(n) hashes for n entries. It is simple,
// obviously deterministic and gives standard inclusion proofs; the chain's
// state is small (accounts, bounties, games; tensors travel in transactions,
// never in state). A sparse Merkle tree would make updates O(log n) and add
// non-inclusion proofs; it can replace this behind the same functions.

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/state.h"
#include "crypto/merkle.h"

namespace vt::vm {

// TaggedHash("veritrain/state/entry/v1", bytes(key) ‖ SHA256(value)).
Hash256 StateEntryHash(ByteSpan key, ByteSpan value);

// Root over all entries of `store` (the crypto root over 0 leaves when empty).
Result<Hash256> ComputeStateRoot(const StateStore& store) noexcept;

// An entry and its inclusion proof against a state root.
struct StateProof {
  Bytes key;
  Bytes value;
  crypto::MerkleProof proof;
  bool operator==(const StateProof&) const = default;
};

// Invalid "state-key-absent" when the key has no entry.
Result<StateProof> ProveStateEntry(const StateStore& store, ByteSpan key) noexcept;
// Ok when `proof` shows that `root` holds (key, value); crypto's
// "merkle-proof-*" reasons otherwise.
Status VerifyStateProof(const Hash256& root, const StateProof& proof) noexcept;

void Encode(Writer& w, const StateProof& p);
Result<StateProof> Decode(Reader& r, DecodeAs<StateProof>);

}  // namespace vt::vm
