#pragma once
// The referee: the native contract that runs training bounties and their
// dispute games (docs/referee.md, "Bounty lifecycle" and "The game").
//
// Bounty: post (job, h_0, escrowed reward, bonds, windows, clock budget) →
// claim (solver bond) → commit (signed commitment, leaf 0 = h_0, last leaf =
// final state) → challenge window → finalize (reward + bond to the solver),
// or refund (nobody solved it; or the solver timed out: its bond is slashed).
//
// Game (one per challenger, many in parallel): three leftmost-difference
// walks — checkpoints, steps of the disputed interval, node records of the
// disputed step — each root checked against its parent level, then both
// records of the disputed node are revealed and checked against the job's
// graph, then the arbitration precompile re-executes the node. Per-party
// chess clocks in blocks; anyone may claim a timeout. The loser's bond: the
// deciding arbitration's gas back to its submitter, then a winner's share of
// the rest to the winner, the remainder burned. A solver that loses any game
// loses the bounty; each other game then closes, bond refunded, on the next
// call that touches it (CloseGame, callable by anyone). There is no cap on
// games: each is paid for by its bond, which PostBounty requires to cover a
// whole game (referee/bonds.h).

#include <cstdint>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/contract.h"

namespace vt::referee {

struct RefereeParams {
  std::uint32_t winner_share_bps = 5000;   // of the loser's bond; the rest is burned
  std::uint64_t max_window = std::uint64_t{1} << 32;  // blocks, for windows and clock budgets
  // Whether a party may descend to the element level (docs/referee.md,
  // "Element-level descent"). The vt-worker daemons answer every element
  // phase (node/agent.cpp); off only for tests and benchmarks that compare
  // against whole-node arbitration.
  bool element_level = true;
};

class Referee final : public vm::NativeContract {
 public:
  explicit Referee(RefereeParams params = {}) : m_params(params) {}
  Status Call(vm::CallContext& ctx, std::uint16_t method, ByteSpan args) override;

  const RefereeParams& params() const { return m_params; }

 private:
  RefereeParams m_params;
};

}  // namespace vt::referee
