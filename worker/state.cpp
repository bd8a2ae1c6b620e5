#include "worker/state.h"

#include <cassert>
#include <iterator>

#include "kernels/tensor_codec.h"

namespace vt::worker {

protocol::StateHeader TrainingState::Header() const {
  protocol::StateHeader h;
  h.step = step;
  h.rng_counter = rng_counter;
  h.data_epoch = cursor.epoch;
  h.data_offset = cursor.offset;
  h.tensor_names.reserve(tensors.size());
  for (const auto& [name, t] : tensors) h.tensor_names.push_back(name);
  return h;
}

bool TrainingState::BitwiseEqual(const TrainingState& other) const {
  if (step != other.step || rng_counter != other.rng_counter || !(cursor == other.cursor) ||
      tensors.size() != other.tensors.size())
    return false;
  for (auto a = tensors.begin(), b = other.tensors.begin(); a != tensors.end(); ++a, ++b) {
    if (a->first != b->first || !a->second.BitwiseEqual(b->second)) return false;
  }
  return true;
}

Status ValidateState(const TrainingState& state) { return protocol::ValidateStateHeader(state.Header()); }

std::vector<Hash256> StateLeafHashes(const TrainingState& state) {
  std::vector<Hash256> hashes;
  hashes.reserve(state.tensors.size());
  for (const auto& [name, t] : state.tensors) hashes.push_back(t.Hash());
  return protocol::StateLeaves(hashes, state.Header());
}

Hash256 StateHash(const TrainingState& state) {
  assert(ValidateState(state).ok());
  return crypto::MerkleRoot(StateLeafHashes(state));
}

std::vector<TensorOpening> OpenAllTensors(const TrainingState& state) {
  std::vector<Hash256> leaves = StateLeafHashes(state);
  const auto tree = crypto::MerkleTree::FromLeafHashes(leaves);
  std::vector<TensorOpening> out;
  out.reserve(state.tensors.size());
  for (std::uint64_t i = 0; i < state.tensors.size(); ++i) out.push_back({i, leaves[i], tree.Prove(i)});
  return out;
}

Result<TensorOpening> OpenTensor(const TrainingState& state, std::string_view name) {
  const auto it = state.tensors.find(std::string(name));
  if (it == state.tensors.end())
    return Status::Invalid("state-no-such-tensor", "the state has no tensor '" + std::string(name) + "'");
  const auto index = static_cast<std::uint64_t>(std::distance(state.tensors.begin(), it));
  const auto tree = crypto::MerkleTree::FromLeafHashes(StateLeafHashes(state));
  return TensorOpening{index, tree.Leaf(index), tree.Prove(index)};
}

void StreamState(const TrainingState& state, const std::function<void(ByteSpan)>& bytes,
                 const std::function<void(std::span<const float>)>& values) {
  Writer header;
  protocol::Encode(header, state.Header());
  bytes(header.bytes());
  for (const auto& [name, t] : state.tensors) {
    Writer tensor_header;
    kernels::EncodeTensorHeader(tensor_header, t.shape());
    bytes(tensor_header.bytes());
    values(t.values());
  }
}

void EncodeState(Writer& w, const TrainingState& state) {
  StreamState(
      state, [&w](ByteSpan b) { w.PutFixed(b); },
      [&w](std::span<const float> v) {
        w.PutFixed(ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size_bytes()));
      });
}

Bytes EncodeState(const TrainingState& state) {
  Writer w;
  EncodeState(w, state);
  return std::move(w).Take();
}

Result<TrainingState> DecodeState(ByteSpan bytes) {
  Reader r(bytes);
  VT_ASSIGN_OR_RETURN(protocol::StateHeader header, protocol::Decode(r, DecodeAs<protocol::StateHeader>{}));
  TrainingState state;
  state.step = header.step;
  state.rng_counter = header.rng_counter;
  state.cursor = {header.data_epoch, header.data_offset};
  for (std::string& name : header.tensor_names) {
    VT_ASSIGN_OR_RETURN(kernels::Tensor t, kernels::DecodeTensor(r));
    state.tensors.emplace_hint(state.tensors.end(), std::move(name), std::move(t));
  }
  VT_TRY(r.Finish());
  return state;
}

}  // namespace vt::worker
