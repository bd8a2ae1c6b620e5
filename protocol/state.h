#pragma once
// The training-state hash h_t (docs/formats.md, "Training-state hash h_t"),
// defined here rather than in worker/ so that the referee can check openings
// of state tensors without seeing the worker.
//
// For a state with tensors t_0 < t_1 < … < t_{n-1} (sorted bytewise by name):
//
//   leaves   = [ Tensor::Hash(t_0), …, Tensor::Hash(t_{n-1}), StateHeaderHash(header) ]
//   h_t      = crypto Merkle root over those n+1 leaf hashes (leaf count n+1)
//
// Tensor leaves are the tensor content hashes themselves (tagged
// "veritrain/tensor/v2": a chunk-tree commitment, kernels/chunk_tree.h, so a
// single value of a state tensor opens too), so leaf i opens tensor i of the
// name order — the index InputSource::kState uses. The last leaf commits to everything that is
// not a tensor: the scalar fields and the tensor names (format in
// docs/formats.md, "Protocol objects").

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"

namespace vt::protocol {

// Caps enforced by the decoder and by StateHashFromLeaves' callers.
inline constexpr std::size_t kMaxStateTensors = std::size_t{1} << 16;
inline constexpr std::size_t kMaxTensorNameBytes = 256;

// Where the next batch starts: example `data_offset` of the permutation of
// epoch `data_epoch` (worker/data_order.h).
struct StateHeader {
  std::uint64_t step = 0;         // optimizer steps taken
  std::uint64_t rng_counter = 0;  // Philox draws consumed outside (step, node) addressing
  std::uint64_t data_epoch = 0;
  std::uint64_t data_offset = 0;
  std::vector<std::string> tensor_names;  // strictly increasing, bytewise

  bool operator==(const StateHeader&) const = default;
};

void Encode(Writer& w, const StateHeader& h);
// Invalid "state-bad-names" when names are empty, too long, or not strictly
// increasing; enc-* reasons for malformed bytes.
Result<StateHeader> Decode(Reader& r, DecodeAs<StateHeader>);

Bytes EncodeStateHeader(const StateHeader& h);
Result<StateHeader> DecodeStateHeader(ByteSpan bytes);
// TaggedHash("veritrain/state/header/v1", EncodeStateHeader(h)).
Hash256 StateHeaderHash(const StateHeader& h);
// Ok when names are non-empty, at most kMaxTensorNameBytes, strictly
// increasing and at most kMaxStateTensors of them.
Status ValidateStateHeader(const StateHeader& h);

// The n+1 leaves of h_t: the tensor hashes (in name order, one per header
// name), then StateHeaderHash(header). h_t is their Merkle root; the
// assemble node's walk (verify/state_walk.h) descends it leaf by leaf.
// Precondition: tensor_hashes.size() == header.tensor_names.size().
std::vector<Hash256> StateLeaves(std::span<const Hash256> tensor_hashes, const StateHeader& header);
// h_t from the tensor hashes: the Merkle root of StateLeaves.
Hash256 StateHashFromLeaves(std::span<const Hash256> tensor_hashes, const StateHeader& header);

// Checks that `tensor_hash` is tensor `tensor_index` of a state with
// `tensor_count` tensors whose hash is `state_hash`. Invalid
// "state-proof-bad-position" when the proof is for another leaf or tree size,
// or one of crypto's "merkle-proof-*" reasons.
Status VerifyStateTensor(const Hash256& state_hash, std::uint64_t tensor_count, std::uint64_t tensor_index,
                         const Hash256& tensor_hash, const crypto::MerkleProof& proof);
// Same for the header leaf (the last leaf).
Status VerifyStateHeader(const Hash256& state_hash, const StateHeader& header, const crypto::MerkleProof& proof);

}  // namespace vt::protocol
