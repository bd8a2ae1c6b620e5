#pragma once
// The training state at one step (docs/formats.md, "Training-state hash h_t";
// docs/models.md, "Training state"): named tensors (parameters and optimizer
// state), the step counter, the RNG counter and the data cursor. Its hash h_t
// is the layout of protocol/state.h:
//
//   leaves = [Tensor::Hash of each tensor in name order, StateHeaderHash(header)]
//   h_t    = crypto Merkle root over them
//
// so that one tensor can be opened against h_t with a Merkle proof.

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "worker/data_order.h"

namespace vt::worker {

struct TrainingState {
  std::map<std::string, kernels::Tensor> tensors;  // ordered bytewise by name: the leaf order
  std::uint64_t step = 0;
  std::uint64_t rng_counter = 0;
  DataCursor cursor;

  // The last leaf: scalars and tensor names.
  protocol::StateHeader Header() const;
  // Same names, shapes, values (bit for bit) and scalars.
  bool BitwiseEqual(const TrainingState& other) const;
};

// Ok, or Invalid "state-bad-names" (empty or over-long names, more than
// protocol::kMaxStateTensors tensors).
Status ValidateState(const TrainingState& state);

// h_t. Hashes every tensor (SHA-256 over all parameter bytes).
// Precondition: ValidateState(state).ok().
Hash256 StateHash(const TrainingState& state);

// The leaf hashes of h_t's tree, in leaf order (tensors, then the header).
std::vector<Hash256> StateLeafHashes(const TrainingState& state);

struct TensorOpening {
  std::uint64_t index = 0;  // position in name order = leaf index
  Hash256 tensor_hash;      // Tensor::Hash
  crypto::MerkleProof proof;
};

// Invalid "state-no-such-tensor" when `name` is not in the state. Verify with
// protocol::VerifyStateTensor(h_t, tensors.size(), index, tensor_hash, proof).
// Hashes the whole state to build the tree: for several tensors use
// OpenAllTensors.
Result<TensorOpening> OpenTensor(const TrainingState& state, std::string_view name);
// All openings at once (one tree instead of one per tensor).
std::vector<TensorOpening> OpenAllTensors(const TrainingState& state);

// ---- canonical encoding (checkpoints, transfer) --------------------------------
//   EncodeStateHeader(header) | for each tensor in name order: EncodeTensor(t)
// The tensor names come from the header. Decoding validates the header
// (state-bad-names) and the tensors (kernels/tensor_codec.h reasons).
//
// StreamState hands out those bytes in order without gathering them:
// `bytes` gets the state header and each tensor's header, `values` each
// tensor's values (EncodeTensor writes them as their raw little-endian
// bytes). EncodeState is StreamState into one Writer; a checkpoint streams
// them into its compressor and never holds a copy of the state.
void StreamState(const TrainingState& state, const std::function<void(ByteSpan)>& bytes,
                 const std::function<void(std::span<const float>)>& values);
void EncodeState(Writer& w, const TrainingState& state);
Bytes EncodeState(const TrainingState& state);
Result<TrainingState> DecodeState(ByteSpan bytes);

}  // namespace vt::worker
