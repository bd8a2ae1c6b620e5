#pragma once
// The assemble node's element level (docs/referee.md, "The assemble node's
// walk"). The last node of a step outputs h_{t+1}, the Merkle root of
// protocol::StateLeaves — the next state's N tensor hashes, then the hash of
// the next header — and its inputs are the references those hashes come
// from. When both parties agree on every other record of the step but not on
// h_{t+1}, whole arbitration opens all N references (GPT-2 small: 153 666 B).
// Instead, the parties walk their h_{t+1} trees as they walk an output's
// chunks (crypto::MerkleWalk: each posts its top, then children) to the first
// leaf k whose hashes differ, and one final move opens what leaf k must be:
//
//   k < N   input k of the assemble node by its hash alone
//           (verify::VerifyInputHash: a state tensor in h_t, or an earlier
//           node's output through its record in the node tree);
//   k = N   the header of h_t opened against h_t (verify::CheckStateHeader),
//           advanced by the graph source: leaf N is StateHeaderHash of it.
//
// No arithmetic is judged, so the walk is played in every job mode. Every
// move is a few hashes; the final one at most one record and a proof, or the
// header.
//
// Protocol types only (no kernels types): referee/ includes this header.

#include <cstdint>
#include <optional>
#include <span>

#include "common/bytes.h"
#include "common/result.h"
#include "protocol/types.h"
#include "verify/batch_opening.h"
#include "verify/element_game.h"

namespace vt::verify {

class Meter;
class StepGraphSource;

// The leaves of h_{t+1}'s tree for a step graph of `num_state_tensors`
// tensors: N + 1.
inline std::uint64_t StateLeafCount(std::uint64_t num_state_tensors) { return num_state_tensors + 1; }

// What the walk agreed on: the job, step t, h_t and its tensor count, and
// the disputed leaf k.
struct StateLeafCase {
  const protocol::JobSpec* job = nullptr;
  std::uint64_t step = 0;
  Hash256 state_hash;  // h_t
  std::uint64_t num_state_tensors = 0;
  std::uint64_t leaf = 0;  // k, < N + 1
};

// The pieces the final move for leaf k carries: for k < N exactly one
// opening, of input k (`inputs`; `header` absent) — its hash is then opened
// as any input of the disputed node is (verify::VerifyInputHash, the
// referee's input opening); for k = N the header of h_t with its proof and
// nothing else (`header`: no positions, no examples). Invalid
// "elem-bad-inputs" otherwise.
Status CheckStateLeafPieces(const StateLeafCase& c, std::span<const InputHashOpening> inputs,
                            const std::optional<BatchOpening>& header);

// Leaf N: the header of h_t opened against h_t (verify::CheckStateHeader,
// charged first), advanced by the graph source; its StateHeaderHash. Error
// "graph-invalid" when the graph source cannot advance it.
Result<Hash256> TrueHeaderLeaf(const StepGraphSource& graphs, const StateLeafCase& c,
                               const BatchOpening& header, Meter& meter);

// The verdict: which party's leaf k is the true one.
StepVerdict JudgeStateLeaf(const Hash256& truth, const Hash256& leaf_a, const Hash256& leaf_b);

}  // namespace vt::verify
