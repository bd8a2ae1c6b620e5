#include "referee/bonds.h"

#include <algorithm>

#include "contract_vm/arbitration_cost.h"
#include "crypto/merkle.h"
#include "verify/element_game.h"
#include "verify/reduce_rule.h"

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
                                   const vm::ChainParams& params, const RefereeParams& referee, vm::GasMeter& gas) {
  const std::uint32_t winner_share_bps = referee.winner_share_bps;
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
  const auto tx_bytes = [&](std::uint64_t payload) {
    return GasMeter::Add(GasMeter::Add(payload, kArbitrateEnvelopeBytes), log_proofs);
  };
  const auto arbitration_gas = [&](std::uint64_t node_gas, std::uint64_t tx) {
    return GasMeter::Add(GasMeter::Add(node_gas, vm::IntrinsicGas(tx)),
                         GasMeter::Add(v, GasMeter::Mul(3, vm::ProofGas(h))));
  };
  BondTerms t;
  t.arbitration_tx_bytes = tx_bytes(arb.max_payload_bytes);
  t.arbitration_node = arb.max_gas_node;
  t.arbitration_gas = arbitration_gas(arb.max_gas, t.arbitration_tx_bytes);
  t.move_gas = v;
  t.moves = h_checkpoints + h_steps + h_nodes + 5;
  t.required_tx_bytes = t.arbitration_tx_bytes;
  t.required_node = arb.max_payload_node;

  // The element level (docs/referee.md "Element-level descent"). With value
  // rules (repops; certified's dot and pointwise/row rules, whose partial
  // sums are 82-byte exact leaves; rounded's pointwise, dot and reduction
  // rules, with 25- and 9-byte fp64 leaves and the log below): up to descent.moves more moves of a party,
  // each opening at most four chunks, three partial results and verify::kMaxStepReads values and inputs
  // by hash (a reduction step's reveal; the other moves open fewer), on top of the loads, writes and walk
  // checks of a move; the deciding move opens at most what the job's rules open (verify::BoundDecidingMove:
  // the pointwise/row slices' chunks at their worst alignment, the inputs by hash, the examples) and
  // re-executes one value from them. With only the assemble node's walk (every other mode): walk reveals, and
  // a deciding move that opens one input by its hash or the header of h_t (verify/state_walk.h). Priced like
  // V and A, from the same gas functions.
  const verify::DescentBound& d = arb.descent;
  if (referee.element_level && d.moves > 0) {
    const bool values = d.value_rules;
    const std::uint64_t move_chunks = values ? 4 : 0, move_leaves = values ? 3 : 0,
                        move_openings = values ? verify::kMaxStepReads : 0;
    const std::uint64_t final_chunks = d.final_chunks, final_openings = d.final_openings;
    constexpr auto kChunkBytes = static_cast<std::uint64_t>(verify::kChunkValues) * 4;
    const std::uint64_t chunk_bytes = GasMeter::Add(kChunkBytes + 64, ProofBytes(d.chunk_height));
    const std::uint64_t chunk_gas =
        GasMeter::Add(vm::ProofGas(d.chunk_height), vm::HashGas(kChunkBytes + 64));
    const std::uint64_t leaf_bytes = GasMeter::Add(ProofBytes(d.partials_height), d.leaf_bytes);
    const std::uint64_t opening_bytes = GasMeter::Add(64 + record, ProofBytes(d.opening_height));
    const std::uint64_t opening_gas = GasMeter::Add(vm::ProofGas(d.opening_height), vm::HashGas(record));
    const std::uint64_t state_bytes =
        GasMeter::Add(GasMeter::Add(kElementStateFixedBytes + d.shape_bytes, GasMeter::Mul(2, chunk_bytes)),
                      GasMeter::Mul(4, leaf_bytes));
    const std::uint64_t h_walk = std::max(d.chunk_height, d.partials_height);
    // Rounded mode: the move that starts the descent carries the node's log
    // chain (its three proofs, as a whole arbitration does), and a rounded
    // epilogue (a dot product's or a sum's) opens the log at its value: the
    // root and at most two entries, each proven in a tree of at most one
    // entry a value of the node's outputs (DescentBound::log_height), and a
    // sum's value with a slack its own partial result (verify::OpenValueLeaf)
    // — then rounds the value.
    const std::uint64_t log_height = d.log_height;
    const std::uint64_t chain_bytes = rounded ? log_proofs : 0;
    const std::uint64_t chain_gas = rounded ? GasMeter::Mul(3, vm::ProofGas(h)) : 0;
    const std::uint64_t log_opening_bytes =
        rounded ? GasMeter::Add(
                      GasMeter::Add(64 + 3, GasMeter::Mul(2, GasMeter::Add(10, ProofBytes(log_height)))),
                      leaf_bytes)
                : 0;
    const std::uint64_t log_opening_gas =
        rounded ? GasMeter::Add(GasMeter::Add(GasMeter::Mul(2, vm::ProofGas(log_height)), vm::HashGas(64)),
                                GasMeter::Add(vm::FlopsGas(verify::kRoundedEpilogueFlops),
                                              vm::ProofGas(d.partials_height)))
                : 0;
    // What every element move may pay besides its own openings.
    std::uint64_t base = 0;
    for (std::uint64_t g : {vm::HashGas(job_bytes), vm::GraphGas(arb.node_count), vm::HashGas(game_bytes),
                            vm::HashGas(kBountyBytes), vm::HashGas(transcript_bytes), vm::HashGas(state_bytes),
                            vm::MerkleGas(2 + 2 * h_walk),
                            GasMeter::Mul(vm::kGas.state_byte,
                                          GasMeter::Add(GasMeter::Add(game_bytes, transcript_bytes), state_bytes)),
                            kMoveFixedGas})
      base = GasMeter::Add(base, g);
    // A move's openings, charged twice when it completes a claim; a step
    // that reads the batch also opens its example (checked once a move).
    const std::uint64_t move_bytes_e = GasMeter::Add(
        GasMeter::Add(GasMeter::Add(kMoveEnvelopeBytes, GasMeter::Mul(move_chunks, chunk_bytes)),
                      GasMeter::Add(GasMeter::Mul(move_leaves, leaf_bytes),
                                    GasMeter::Mul(move_openings, opening_bytes))),
        GasMeter::Add(values ? arb.batch_opening_bytes : 0, chain_bytes));
    const std::uint64_t openings_gas =
        GasMeter::Add(GasMeter::Add(GasMeter::Mul(move_chunks, chunk_gas),
                                    GasMeter::Mul(move_leaves, vm::ProofGas(d.partials_height))),
                      GasMeter::Mul(move_openings, opening_gas));
    const std::uint64_t v_e = GasMeter::Add(GasMeter::Add(GasMeter::Add(vm::IntrinsicGas(move_bytes_e), base),
                                                          values ? arb.batch_opening_gas : 0),
                                            GasMeter::Add(GasMeter::Mul(2, openings_gas), chain_gas));
    // The deciding move may also open examples of the batch (verify/batch_opening.h)
    // or the header of h_t.
    const std::uint64_t final_bytes = GasMeter::Add(
        GasMeter::Add(GasMeter::Add(kMoveEnvelopeBytes, GasMeter::Mul(final_chunks, chunk_bytes)),
                      GasMeter::Mul(final_openings, opening_bytes)),
        GasMeter::Add(arb.batch_opening_bytes, log_opening_bytes));
    const std::uint64_t values_read = final_chunks * static_cast<std::uint64_t>(verify::kChunkValues);
    const std::uint64_t a_e = GasMeter::Add(
        GasMeter::Add(GasMeter::Add(vm::IntrinsicGas(std::max(final_bytes, move_bytes_e)), base),
                      GasMeter::Add(GasMeter::Mul(final_chunks, chunk_gas),
                                    GasMeter::Mul(final_openings, opening_gas))),
        GasMeter::Add(GasMeter::Add(GasMeter::Mul(2, openings_gas), arb.batch_opening_gas),
                      GasMeter::Add(vm::FlopsGas(GasMeter::Mul(values_read, verify::kElementFlopsPerValue)),
                                    log_opening_gas)));
    t.move_gas = std::max(t.move_gas, v_e);
    t.moves = GasMeter::Add(t.moves, d.moves);
    // The nodes the element level covers are never arbitrated whole by an
    // honest party (verify::ElementCoversNode): the allowance and the
    // largest required transaction are those of the other nodes' whole
    // arbitration and of the element level's deciding move.
    const std::uint64_t whole_tx = tx_bytes(arb.max_whole_payload_bytes);
    t.arbitration_gas = std::max(arbitration_gas(arb.max_whole_gas, whole_tx), a_e);
    const std::uint64_t element_tx = std::max(final_bytes, move_bytes_e);
    t.required_tx_bytes = std::max(whole_tx, element_tx);
    t.required_node = arb.max_whole_payload_node;
    t.required_by_element_move = element_tx >= whole_tx;
  }

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
