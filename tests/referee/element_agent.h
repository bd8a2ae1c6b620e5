#pragma once
// A party's moves at the element level of a game (docs/referee.md,
// "Element-level descent"), built from its History with the worker's answer
// functions (worker/element_answers.h) — what a solver or challenger daemon
// sends in the phases kChunkRoots … kOpenElement. A test-only liar may post
// partial sums of its own (SumsLie) to cover its planted value.

#include <cstdint>
#include <optional>

#include "referee/messages.h"
#include "referee/records.h"
#include "tests/referee/history.h"
#include "worker/element_answers.h"

namespace vt::test {

// How a liar's partial sums of the disputed value look (a value it planted
// wrong): honest sums (so the epilogue is disputed), or sums that leave the
// honest ones one ulp off at step `from` (1-based, clamped to K) and follow
// the rule after, or sums made up from `from` on.
enum class SumsLie : std::uint8_t { kHonest = 0, kDiverge = 1, kMadeUp = 2 };
struct SumsPlan {
  SumsLie kind = SumsLie::kHonest;
  std::uint64_t from = 1;
};

// The party's view of node `node` of step `step`: its inputs (the batch as
// an empty tensor: no rule opens it) and its outputs.
worker::ElementSide SideOf(const History& h, std::uint64_t step, std::uint64_t node);

// The element moves. `g`/`e` are the game and its element state as read
// from the chain.
referee::ChunkRootArgs MakeChunkRoot(const worker::ElementSide& side, std::uint64_t game_id,
                                     std::uint32_t slot);
const crypto::MerkleTree& ChunkTreeFor(const worker::ElementSide& side, std::uint32_t slot);
referee::RevealChunkArgs MakeRevealChunk(const worker::ElementSide& side, std::uint64_t game_id,
                                         std::uint32_t slot, std::uint64_t chunk);
// The party's partial sums of value e (its SumsPlan when it lied about e).
worker::PartialsAnswer PartialsFor(const worker::ElementSide& side, std::uint32_t slot, std::int64_t e,
                                   const std::optional<SumsPlan>& lie);
referee::PartialsRootArgs MakePartialsRoot(const worker::PartialsAnswer& mine, std::uint64_t game_id);
referee::RevealStepArgs MakeRevealStep(const History& h, const worker::ElementSide& side,
                                       const worker::PartialsAnswer& mine, const referee::Game& g,
                                       const referee::ElementGame& e, std::uint8_t node_root_of);
// The reduction rule's moves (a TreeSum output): a liar's sums are honest
// (the epilogue is disputed) or made up from leaf `from` on.
worker::ReducePartialsAnswer ReducePartialsFor(const worker::ElementSide& side, std::uint32_t slot,
                                               std::int64_t e, const std::optional<SumsPlan>& lie);
referee::PartialsRootArgs MakeReducePartialsRoot(const worker::ReducePartialsAnswer& mine,
                                                 std::uint64_t game_id);
referee::RevealReduceStepArgs MakeRevealReduceStep(const History& h, const worker::ElementSide& side,
                                                   const worker::ReducePartialsAnswer& mine,
                                                   const referee::Game& g, const referee::ElementGame& e,
                                                   std::uint8_t node_root_of);
referee::OpenElementArgs MakeOpenElement(const History& h, const worker::ElementSide& side,
                                         const referee::Game& g, const referee::ElementGame& e,
                                         std::uint8_t node_root_of);

}  // namespace vt::test
