#pragma once
// The one rule that judges a node (docs/referee.md, "Arbitration"): given the
// facts the dispute game has established — the job, the step t, the agreed
// state hash h_t, a node-record root whose leaves before the disputed node
// are agreed, and the disputed node's index — check the supplied inputs of
// that one node against those agreed hashes (Merkle proofs), re-execute the
// node with the canonical kernel (kernels RunOp in the job's mode; in rounded
// mode the canonical fp64 reference — no vendor BLAS, no libm, one thread —
// following the supplied log and rejecting the entries the acceptance rule
// refuses) and return the correct output hashes.
//
// The arbitration precompile (contract_vm/arbitration.h) calls it with a
// meter that charges gas; a worker answering or checking a dispute
// (worker/dispute.h: ReexecuteNode, `vt-worker audit --locate`) calls it with
// FreeMeter. So a party computes exactly the verdict the referee will.
//
// Every piece of work is reported to the Meter *before* it is done, so a
// gas-charging meter refuses an unpaid request before it costs anything.
//
// Protocol types only (no kernels types): contract_vm/ and referee/ headers
// include this one.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "verify/node_spec.h"
#include "verify/wire.h"

namespace vt::verify {

class StepGraphSource;

// What the check is about to do, in the units its price is set in.
enum class Cost : std::uint8_t {
  kHashBytes = 0,          // hash (or decode) this many bytes
  kProofSiblings = 1,      // verify a Merkle proof with this many siblings
  kMerkleHashes = 2,       // compute this many Merkle node hashes
  kDataOrderElements = 3,  // generate this many data-order words (protocol::BatchIndicesWork)
  kFlops = 4,              // run an operator of this many flops (kernels OpFlops)
  kExactFlops = 5,         // certified mode: run an operator of this many flops by the exact path
  kExactOutputs = 6,       // certified mode: round this many output values from an exact accumulator
  kExactTerms = 7,         // certified mode: this many reduction terms, each on the slow path at worst
  kExactElements = 8,      // certified mode: this many element-wise output values
  kExactTranscendentals = 9,  // certified mode: this many crmath calls, each on its slow path at worst
};

class Meter {
 public:
  virtual ~Meter() = default;
  // A non-ok status stops the check with that status (e.g. "tx-out-of-gas").
  virtual Status Charge(Cost cost, std::uint64_t amount) = 0;
};

// Off chain: nothing to pay.
class FreeMeter final : public Meter {
 public:
  Status Charge(Cost, std::uint64_t) override { return Status::Ok(); }
};

// What the referee has established before it asks.
struct ArbitrationCase {
  protocol::JobSpec job;
  std::uint64_t step = 0;       // t: the node belongs to the step h_t → h_{t+1}
  Hash256 state_hash;           // h_t, agreed by both parties
  Hash256 node_root;            // a node-record root whose leaves [0, node_index) are agreed
  std::uint64_t node_count = 0; // leaves of that tree: graph nodes + 1 (assemble)
  std::uint64_t node_index = 0; // the disputed node
};

enum class ArbitrationKind : std::uint8_t {
  kExecuted = 0,     // output_hashes holds the correct outputs
  kLogRejected = 1,  // rounded mode: the acceptance rule refuses an entry of the supplied log, or one lies past the outputs
  kOpFailed = 2,     // the operator rejects the agreed inputs: no record can be correct
};

struct ArbitrationOutcome {
  ArbitrationKind kind = ArbitrationKind::kExecuted;
  std::string detail;                  // the kernel's reason for kLogRejected / kOpFailed
  std::vector<Hash256> output_hashes;  // kExecuted
  Hash256 log_hash;                    // rounded mode: kernels HashRoundingLog of the supplied log; zero otherwise
  std::uint64_t flops = 0;             // the operator's flop estimate (what was metered)
};

// The one rule for every Merkle opening of the game: `proof` is for leaf
// `index` of a tree of `count` leaves and opens `leaf` against `root`.
// Invalid `reason` otherwise. Unmetered: a caller charges the proof first
// (Cost::kProofSiblings).
Status CheckProofAt(const Hash256& root, const Hash256& leaf, const crypto::MerkleProof& proof, std::uint64_t index,
                    std::uint64_t count, std::string_view reason);

// Whether `record` is the node's one correct record by this outcome: its
// outputs and, where the node logs (`logged`: rounded mode, not the assemble
// node), its log hash.
bool OutcomeConfirms(const ArbitrationOutcome& outcome, const protocol::NodeRecord& record, bool logged);

// The one rule for what re-executing an operator node reports to the Meter
// before it runs: its `flops` (kernels OpFlops) and, in certified mode
// (job mode 3), which the arbiter runs by the exact path only (kernels/
// certified.h, certified_exact_only), the work of its operator class at the
// class's worst case (verify/certified_price.h CertifiedWorkOf of `op_kind`,
// `flops` and its `outputs` declared output values; priced in
// contract_vm/gas.h). ArbitrateNode charges it; the bond minimums bound it
// with the same call (contract_vm/arbitration_cost.h).
Status ChargeReexecution(Meter& meter, std::uint8_t mode, std::uint16_t op_kind, std::uint64_t flops,
                         std::uint64_t outputs, std::span<const std::vector<std::int64_t>> input_shapes = {},
                         std::span<const std::int64_t> attr_ints = {});

// `graph` is graphs.Build(c.job, c.step), built (and paid for) by the caller.
// Invalid (the request is wrong, nobody is at fault): "arb-bad-header",
// "arb-header-step-mismatch", "arb-bad-input-count", "arb-bad-input-proof",
// "arb-bad-input-tensor", "arb-bad-producer", "arb-bad-examples",
// "arb-bad-log", "arb-bad-node-index"; or the meter's status.
Result<ArbitrationOutcome> ArbitrateNode(const StepGraphSource& graphs, const StepGraph& graph,
                                         const ArbitrationCase& c, const ArbitrationPayload& payload, Meter& meter);

// Where a node's log sits in a commitment's log tree: node `node` of the
// `node_count` records of step `step` (the assemble record has no log).
struct LogPosition {
  std::uint64_t num_steps = 0;
  std::uint64_t checkpoint_interval = 0;
  std::uint64_t step = 0;
  std::uint64_t node = 0;
  std::uint64_t node_count = 0;
};

// Rounded mode: `log_hash` proven through `chain` up to `log_root` (a
// commitment's): node log → step log root → interval log hash → log root
// (docs/referee.md, "Rounding logs"). Each proof is charged before it is
// checked. Invalid "arb-bad-log-proof".
Status VerifyLogChain(const LogPosition& at, const Hash256& log_hash, const LogChain& chain, const Hash256& log_root,
                      Meter& meter);

}  // namespace vt::verify
