#include "referee/bonds.h"

#include <algorithm>

#include "contract_vm/arbitration_cost.h"
#include "crypto/merkle.h"

namespace vt::referee {
namespace {

using vm::GasMeter;

std::uint64_t Height(std::uint64_t leaves) {
  if (!crypto::MerkleShape::IsValidLeafCount(leaves)) return 64;
  return crypto::MerkleShape(leaves).height();
}
std::uint64_t ProofBytes(std::uint64_t siblings) { return GasMeter::Add(16, GasMeter::Mul(32, siblings)); }

// Sizes of the referee's records, bounded (referee/records.h): a game holds
// fixed fields (< 1 KiB) and up to two node records; a bounty fixed fields
// and the commitment; a walk transcript 64 bytes per reveal.
constexpr std::uint64_t kGameFixedBytes = 1024;
constexpr std::uint64_t kBountyBytes = 1024;
constexpr std::uint64_t kTranscriptFixedBytes = 256;

Status Overflow() { return Status::Invalid("bounty-bad-bond", "bond minimum overflows"); }

}  // namespace

Result<BondTerms> ComputeBondTerms(const vm::Arbiter& arbiter, const protocol::JobSpec& job,
                                   const vm::ChainParams& params, std::uint32_t winner_share_bps, vm::GasMeter& gas) {
  if (winner_share_bps == 0 || winner_share_bps > vm::kBpsDenominator)
    return Status::Invalid("bounty-bad-bond", "the winner's share must be in (0, 10000] bps");
  VT_ASSIGN_OR_RETURN(vm::ArbitrationCost arb, vm::WorstArbitrationCost(arbiter, job, gas));

  // Tree heights: every proof and every walk of a game is at most this deep.
  const std::uint64_t h_checkpoints = Height(protocol::CheckpointCount(job.num_steps, job.checkpoint_interval));
  const std::uint64_t h_steps = Height(job.checkpoint_interval + 1);
  const std::uint64_t h_nodes = Height(arb.node_count);
  const std::uint64_t h = std::max({h_checkpoints, h_steps, h_nodes});
  const std::uint64_t job_bytes = protocol::EncodeJobSpec(job).size();

  // V: the costliest non-arbitration move. Its transaction carries at most a
  // node record and four proofs; it loads the bounty, the game, the walk
  // transcript and (node roots, records) the job and its step graph, checks
  // proofs and the transcript, and writes the game and the transcript.
  const std::uint64_t record = arb.max_record_bytes;
  const std::uint64_t move_bytes = GasMeter::Add(kMoveEnvelopeBytes + record, GasMeter::Mul(4, ProofBytes(h)));
  const std::uint64_t game_bytes = GasMeter::Add(kGameFixedBytes, GasMeter::Mul(2, record + 1));
  const std::uint64_t transcript_bytes = GasMeter::Add(kTranscriptFixedBytes, GasMeter::Mul(128, h));
  std::uint64_t v = vm::IntrinsicGas(move_bytes);
  for (std::uint64_t g : {vm::HashGas(job_bytes), vm::GraphGas(arb.node_count), vm::HashGas(game_bytes),
                          vm::HashGas(kBountyBytes), vm::HashGas(transcript_bytes), vm::HashGas(record),
                          vm::MerkleGas(2 + 2 * h), GasMeter::Mul(6, vm::ProofGas(h)),
                          GasMeter::Mul(vm::kGas.state_byte, GasMeter::Add(game_bytes, transcript_bytes)),
                          kMoveFixedGas})
    v = GasMeter::Add(v, g);

  // A: the worst node's arbitration transaction: its payload, the log's
  // three proofs in rounded mode, the precompile's charges, and the
  // bookkeeping of a move (loads, the log proofs' checks, the resolution).
  const bool rounded = job.mode == kModeRounded;
  const std::uint64_t log_proofs = rounded ? GasMeter::Add(1 + 64, GasMeter::Mul(3, ProofBytes(h))) : 1;
  BondTerms t;
  t.arbitration_tx_bytes =
      GasMeter::Add(GasMeter::Add(arb.max_payload_bytes, kArbitrateEnvelopeBytes), log_proofs);
  t.arbitration_node = arb.max_gas_node;
  t.arbitration_gas = GasMeter::Add(GasMeter::Add(arb.max_gas, vm::IntrinsicGas(t.arbitration_tx_bytes)),
                                    GasMeter::Add(v, GasMeter::Mul(3, vm::ProofGas(h))));
  t.move_gas = v;
  t.moves = h_checkpoints + h_steps + h_nodes + 5;

  auto allowance = vm::CheckedMul(t.arbitration_gas, params.min_gas_price);
  if (!allowance.ok()) return Overflow();
  t.arbitration_allowance = *allowance;
  auto walk = vm::CheckedMul(GasMeter::Mul(t.moves, t.move_gas), params.min_gas_price);
  if (!walk.ok()) return Overflow();
  auto scaled = vm::CheckedMul(*walk, vm::kBpsDenominator);
  if (!scaled.ok()) return Overflow();
  auto minimum = vm::CheckedAdd(t.arbitration_allowance, vm::CeilDiv(*scaled, winner_share_bps));
  if (!minimum.ok()) return Overflow();
  t.minimum = *minimum;
  return t;
}

}  // namespace vt::referee
