#include "verify/state_walk.h"

#include <string>

#include "protocol/state.h"
#include "verify/arbitrate.h"
#include "verify/graph_source.h"

namespace vt::verify {

Status CheckStateLeafPieces(const StateLeafCase& c, std::span<const InputHashOpening> inputs,
                            const std::optional<BatchOpening>& header) {
  if (c.leaf < c.num_state_tensors) {
    if (header || inputs.size() != 1 || inputs[0].input != c.leaf)
      return Status::Invalid("elem-bad-inputs", "open input " + std::to_string(c.leaf) + " alone");
    return Status::Ok();
  }
  if (!header || !inputs.empty() || !header->positions.empty() || !header->examples.empty())
    return Status::Invalid("elem-bad-inputs", "open the header of h_t alone");
  return Status::Ok();
}

Result<Hash256> TrueHeaderLeaf(const StepGraphSource& graphs, const StateLeafCase& c,
                               const BatchOpening& header, Meter& meter) {
  VT_TRY(CheckStateHeader(BatchCase{c.job, c.step, c.state_hash, c.num_state_tensors}, header.header,
                          header.header_proof, meter));
  auto next = graphs.NextHeader(*c.job, header.header);
  if (!next.ok()) return Status::Error("graph-invalid", next.status().ToString());
  VT_TRY(meter.Charge(Cost::kHashBytes, protocol::EncodeStateHeader(*next).size()));
  return protocol::StateHeaderHash(*next);
}

StepVerdict JudgeStateLeaf(const Hash256& truth, const Hash256& leaf_a, const Hash256& leaf_b) {
  return StepVerdict{leaf_a == truth, leaf_b == truth};
}

}  // namespace vt::verify
