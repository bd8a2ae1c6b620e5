#pragma once
// Bond minimums (docs/referee.md, "Bond minimums"): what a game can make the
// honest side pay in gas, priced at the chain's minimum gas price, so that
// the loser's bond always covers it.
//
//   A     = an Arbitrate transaction of the job's worst node, in gas: the
//           precompile's bound (contract_vm/arbitration_cost.h) + the intrinsic
//           gas of the worst payload's transaction + one move's bookkeeping
//   V     = one non-arbitration move (open, reveal, root, record, timeout), in gas
//   R     = moves one party makes in a game: ⌈log₂ checkpoints⌉ + ⌈log₂ (k+1)⌉ +
//           ⌈log₂ nodes⌉ walk rounds + open + 2 roots + record + timeout claim
//   allowance = A · p_min                    the most an arbitration is reimbursed
//   minimum   = allowance + ⌈R · V · p_min · 10000 / winner_share_bps⌉
//
// Both bonds (solver's and challenger's) must be at least `minimum`: the
// loser's bond first reimburses the arbitration's submitter (≤ allowance);
// the winner's share of the rest pays the winner's own moves.

#include <cstdint>

#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/gas.h"
#include "contract_vm/vm.h"
#include "protocol/types.h"
#include "referee/referee.h"

namespace vt::vm {
class Arbiter;
}

namespace vt::referee {

// The job modes the referee accepts (kernels::Mode values; referee/ does not
// include kernels/).
inline constexpr std::uint8_t kModeRepops = 1;
inline constexpr std::uint8_t kModeRounded = 2;
// Certified: no logs; arbitration runs the exact path, priced per operator
// class at its worst case (verify/certified_price.h, contract_vm/gas.h
// exact_*), so its bond minimum follows from the same A below.
inline constexpr std::uint8_t kModeCertified = 3;

// Bytes of an Arbitrate transaction around its payload: the transaction
// envelope (version, chain, nonce, gas, price, sender, kind, contract,
// method, lengths, signature) and ArbitrateArgs' own fields, log proofs
// excluded (counted from the job's trees).
inline constexpr std::uint64_t kArbitrateEnvelopeBytes = 256;
// Bytes of the largest non-arbitration move around its node records and
// Merkle proofs (ids, roots, tops, lengths, the transaction envelope).
inline constexpr std::uint64_t kMoveEnvelopeBytes = 512;
// A move's fixed bookkeeping: the state reads, escrow updates and events of
// the longest referee call (Resolve on a game: release, burn, refund, two
// saves, two events), above what is sized by records and transcripts.
inline constexpr std::uint64_t kMoveFixedGas = 6'000;
// Bytes of the element state around its shapes, chunk openings and proofs
// (slot, counts, roots, tops, values, flags, rounds).
inline constexpr std::uint64_t kElementStateFixedBytes = 1024;

struct BondTerms {
  // A: on a chain that plays the element level, over the nodes it does not
  // cover and its deciding move (an honest party never arbitrates a covered
  // node whole; one that chooses to is reimbursed up to A only).
  std::uint64_t arbitration_gas = 0;
  std::uint64_t arbitration_tx_bytes = 0;  // the worst node's Arbitrate transaction, encoded
  std::uint64_t arbitration_node = 0;      // which node is the costliest to arbitrate
  // The largest transaction an honest party may have to send: the worst
  // Arbitrate transaction over the nodes it may have to arbitrate whole (on
  // a chain that plays the element level: the nodes verify::ElementCoversNode
  // does not cover) and the element level's deciding move. PostBounty refuses
  // a job whose required_tx_bytes exceeds the chain's max_tx_bytes.
  std::uint64_t required_tx_bytes = 0;
  std::uint64_t required_node = 0;         // the node of that Arbitrate transaction
  bool required_by_element_move = false;   // ... or none: an element move is the largest
  std::uint64_t move_gas = 0;              // V
  std::uint64_t moves = 0;                 // R
  vm::Amount arbitration_allowance = 0;    // A · p_min
  vm::Amount minimum = 0;                  // the smallest bond PostBounty accepts
};

// For a chain whose referee runs with `referee` (its winner's share, and
// whether the element level is played: its moves are then priced in).
// Invalid "bounty-bad-bond" when winner_share_bps is 0 (no share could pay
// anyone) or an amount overflows; the arbiter's reasons for a job it cannot
// build. Charges `gas` for building and evaluating the step graph first.
Result<BondTerms> ComputeBondTerms(const vm::Arbiter& arbiter, const protocol::JobSpec& job,
                                   const vm::ChainParams& params, const RefereeParams& referee, vm::GasMeter& gas);

}  // namespace vt::referee
