#pragma once
// A party's moves at the element level of a game (docs/referee.md,
// "How the referee plays them"), packed as the referee's arguments from its
// side of the disputed node (worker::ElementSide: input tensors, their hash
// openings, its outputs) and its answers (worker/element_answers.h). The
// solver and challenger daemons (node/agent.cpp) send exactly these; the
// referee's scenario harness sends them too, with a test liar's own partial
// results in place of the honest ones.
//
// Invalid "elem-no-input-opening" when a move needs an input the side has
// no hash opening for (the batch), or the answers' own reasons.

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "crypto/merkle.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "verify/element_game.h"
#include "worker/element_answers.h"

namespace vt::node {

// Where a party descends from kArbitration, as the referee accepts it
// (verify::StartDescent): the assemble node's walk, or the output slot
// whose chunk tree the first chunk root posts. A rounded job's records that
// differ in their log hash alone have no differing output: the descent's
// log settles them before any output is read (the referee's FixNodeLog),
// whatever the node's rules, so the party posts slot 0's tree with the log
// (`log_alone`) — never the whole node, which may not fit a transaction.
// StartDescent's reasons otherwise: the node is arbitrated whole.
struct Descent {
  bool assemble = false;
  bool log_alone = false;
  std::uint32_t slot = 0;
  std::uint64_t chunks = 0;  // of `slot` (the assemble node: h_{t+1}'s leaves); 0 when log_alone
};
Result<Descent> PlanDescent(std::uint8_t job_mode, const verify::StepGraph& graph, std::uint64_t node_index,
                            const protocol::NodeRecord& a, const protocol::NodeRecord& b);

// kChunkRoots: the root and top of the output's chunk tree (OutputChunkTree).
// The move that opens the element level of a rounded job's logged node
// (from kArbitration) carries the node's committed log (`log`: NodeLogProofOf).
referee::ChunkRootArgs ChunkRootMove(const crypto::MerkleTree& chunk_tree, std::uint64_t game_id,
                                     std::optional<referee::NodeLogProof> log = std::nullopt);
// A node's committed log hash with its chain up to the commitment's log root
// (an arbitration export's log and log_chain): nullopt without a chain (a
// job that is not rounded, the assemble node). Invalid "elem-bad-log" when
// the log does not decode.
Result<std::optional<referee::NodeLogProof>> NodeLogProofOf(const verify::ArbitrationPayload& payload,
                                                            const std::optional<verify::LogChain>& chain);
// kChunkReveal: the chunk where level 4 ended.
Result<referee::RevealChunkArgs> RevealChunkMove(const worker::ElementSide& side, std::uint64_t game_id,
                                                 std::uint32_t slot, std::uint64_t chunk);
// kPartialsRoots: the root over the value's partial results and its end
// proofs, in the job mode's leaves.
referee::PartialsRootArgs PartialsRootMove(const worker::DotPartialsAnswer& mine, std::uint64_t game_id);
referee::PartialsRootArgs PartialsRootMove(const worker::ReduceRuleAnswer& mine, std::uint64_t game_id);
// kStepReveal: where the walk over the partial results ended (e.step_leaf =
// m+1); `node_root_of` names the party whose node root the producers'
// proofs in `side.openings` are against (the sender's own: 0 solver, 1 challenger).
Result<referee::RevealStepArgs> RevealStepMove(const worker::ElementSide& side,
                                               const worker::DotPartialsAnswer& mine,
                                               const referee::ElementGame& e, std::uint64_t game_id,
                                               std::uint8_t node_root_of);
Result<referee::RevealReduceStepArgs> RevealReduceStepMove(const worker::ElementSide& side,
                                                           const worker::ReduceRuleAnswer& mine,
                                                           const referee::ElementGame& e,
                                                           std::uint64_t game_id, std::uint8_t node_root_of);
// kOpenElement: the value's input slices (pointwise/row rule) or the bias
// value of a dot epilogue and, in rounded mode (the side holds the node's
// log), the log opened at the value — all a rounded sum's epilogue opens,
// with the value's leaf from the party's sums `mine` where the value has a
// slack (verify::OpenValueLeaf).
Result<referee::OpenElementArgs> OpenElementMove(const worker::ElementSide& side,
                                                 const referee::ElementGame& e, std::uint64_t game_id,
                                                 std::uint8_t node_root_of,
                                                 const worker::ReduceRuleAnswer* mine = nullptr);

// kOpenElement of the assemble node's walk (verify/state_walk.h): what leaf
// `leaf` of h_{t+1} must be, from the party's arbitration payload of the
// assemble node (worker::AnswerStateLeaf).
Result<referee::OpenElementArgs> OpenStateLeafMove(const verify::ArbitrationPayload& assemble,
                                                   std::uint64_t leaf, std::uint64_t game_id,
                                                   std::uint8_t node_root_of);

}  // namespace vt::node
