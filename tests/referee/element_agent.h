#pragma once
// A party's side of a node at the element level of a game (docs/referee.md,
// "Element-level descent"), from its History, for the moves the daemons
// send (node/element_moves.h). A test-only liar may post partial sums of its
// own (SumsLie) to cover its planted value.

#include <cstdint>
#include <optional>
#include <utility>

#include <gtest/gtest.h>

#include "kernels/mode.h"
#include "node/element_moves.h"
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

// The party's view of node `node` of step `step`: its inputs with their
// hash openings (the batch as an empty tensor without one), its outputs and,
// in rounded mode, the node's log as `h` holds it (a challenger's: the
// solver's where it followed them).
worker::ElementSide SideOf(const History& h, std::uint64_t step, std::uint64_t node);

// The output's chunk tree (cached by output hash).
const crypto::MerkleTree& ChunkTreeFor(const worker::ElementSide& side, std::uint32_t slot);
// The party's partial sums of value e in the job's mode (its SumsPlan when
// it lied about e: a certified liar's diverging sum is one exact 2^-140 off).
worker::DotPartialsAnswer PartialsFor(kernels::Mode mode, const worker::ElementSide& side, std::uint32_t slot,
                                      std::int64_t e, const std::optional<SumsPlan>& lie);
// The reduction rule's partial results in the job's mode (the fixed tree's,
// or a certified sum's exact prefix sums): a liar's are honest (the
// epilogue is disputed) or made up from leaf `from` on; a certified liar's
// diverging sums are one exact 2^-140 off there and follow the rule after.
worker::ReduceRuleAnswer ReducePartialsFor(kernels::Mode mode, const worker::ElementSide& side,
                                           std::uint32_t slot, std::int64_t e,
                                           const std::optional<SumsPlan>& lie);

// A move that must build (a test failure otherwise; then an empty move).
template <class T>
T Must(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : T{};
}

}  // namespace vt::test
