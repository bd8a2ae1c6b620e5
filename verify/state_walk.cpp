#include "verify/state_walk.h"

#include <string>

#include "protocol/state.h"
#include "verify/arbitrate.h"
#include "verify/descent.h"
#include "verify/graph_source.h"

namespace vt::verify {

Result<Hash256> TrueStateLeaf(const StepGraphSource& graphs, const StateLeafCase& c,
                              std::span<const protocol::InputRef> refs,
                              std::span<const InputHashOpening> inputs,
                              const std::optional<BatchOpening>& header, Meter& meter) {
  if (refs.size() != c.num_state_tensors || c.leaf > c.num_state_tensors || c.node_count == 0)
    return Status::Error("game-inconsistent", "a state leaf outside h_{t+1}");
  if (c.leaf < c.num_state_tensors) {
    if (header || inputs.size() != 1 || inputs[0].input != c.leaf)
      return Status::Invalid("elem-bad-inputs", "open input " + std::to_string(c.leaf) + " alone");
    const InputHashOpening& in = inputs[0];
    VT_TRY(meter.Charge(Cost::kProofSiblings, in.proof.siblings.size()));
    if (in.producer) VT_TRY(meter.Charge(Cost::kHashBytes, protocol::EncodeNodeRecord(*in.producer).size()));
    const InputHashContext at{c.state_hash, c.num_state_tensors, c.node_root, c.node_count, c.node_count - 1};
    VT_TRY(VerifyInputHash(at, refs[c.leaf], in.tensor_hash, in.proof, in.producer,
                           "input " + std::to_string(c.leaf)));
    return in.tensor_hash;
  }
  if (!header || !inputs.empty() || !header->positions.empty() || !header->examples.empty())
    return Status::Invalid("elem-bad-inputs", "open the header of h_t alone");
  VT_TRY(CheckStateHeader(BatchCase{c.job, c.step, c.state_hash, c.num_state_tensors}, header->header,
                          header->header_proof, meter));
  auto next = graphs.NextHeader(*c.job, header->header);
  if (!next.ok()) return Status::Error("graph-invalid", next.status().ToString());
  VT_TRY(meter.Charge(Cost::kHashBytes, protocol::EncodeStateHeader(*next).size()));
  return protocol::StateHeaderHash(*next);
}

StepVerdict JudgeStateLeaf(const Hash256& truth, const Hash256& leaf_a, const Hash256& leaf_b) {
  return StepVerdict{leaf_a == truth, leaf_b == truth};
}

}  // namespace vt::verify
