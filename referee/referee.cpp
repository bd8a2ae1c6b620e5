#include "referee/referee.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "contract_vm/amount.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/node_spec.h"
#include "contract_vm/vm.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "referee/blob_rules.h"
#include "verify/arbitrate.h"
#include "verify/element_game.h"
#include "verify/state_walk.h"

#include "referee/bonds.h"
#include "referee/messages.h"
#include "referee/records.h"

namespace vt::referee {
namespace {

// The element rules with the node's attributes (conv2d's stride, matmul's
// transposes, pooling's window): verify's attribute overloads, one call each.
Result<verify::DotElement> DotOf(const protocol::NodeRecord& rec, const ElementGame& e) {
  return verify::DotElementAt(rec.op_kind, rec.attrs, e.slot, e.value, e.input_shapes);
}
// The reduction rule the job's mode plays (certified: the exact sums).
Result<verify::ReduceElement> ReduceOf(std::uint8_t mode, const protocol::NodeRecord& rec,
                                       const ElementGame& e) {
  return verify::ReduceRuleAt(mode, rec.op_kind, rec.attrs, e.slot, e.value, e.input_shapes);
}
Result<verify::ElementPlan> PlanOf(const protocol::NodeRecord& rec, const ElementGame& e) {
  return verify::PlanElement(rec.op_kind, rec.attrs, e.slot, e.value, e.input_shapes);
}

// The node's own output slot s as a rule reads it (a kOwnOutput factor, a
// slice with output_slot ≥ 0): the records' common hash of that slot. The
// chunk walk took the first differing slot in verify::SlotWalkOrder, which
// puts every slot a rule reads first, so a differing one here is a bug.
Result<Hash256> OwnOutputHash(const Game& g, const ElementGame& e, std::uint32_t s) {
  if (s >= e.output_shapes.size() || s >= g.records[0]->output_hashes.size() ||
      s >= g.records[1]->output_hashes.size())
    return Status::Error("game-inconsistent", "own output slot " + std::to_string(s) + " not declared");
  if (g.records[0]->output_hashes[s] != g.records[1]->output_hashes[s])
    return Status::Error("game-inconsistent", "own output slot " + std::to_string(s) + " not agreed");
  return g.records[0]->output_hashes[s];
}

using crypto::MerkleProof;
using vm::Amount;
using WalkParty = crypto::MerkleWalk::Party;

const Bytes kNextBountyKey = {'n', '/', 'b'};
const Bytes kNextGameKey = {'n', '/', 'g'};

constexpr Party kSolver = Party::kSolver;
constexpr Party kChallenger = Party::kChallenger;
constexpr WalkParty AsWalk(Party p) { return p == kSolver ? WalkParty::kA : WalkParty::kB; }
constexpr Party Other(Party p) { return p == kSolver ? kChallenger : kSolver; }

Bytes U64(std::uint64_t v) {
  Writer w;
  w.PutU64(v);
  return std::move(w).Take();
}

template <typename T>
Result<T> DecodeArgs(ByteSpan args) {
  auto v = DecodeExact<T>(args);
  if (!v.ok()) return Status::Invalid("referee-malformed-args", v.status().ToString());
  return v;
}

bool IsWalkPhase(GamePhase p) {
  return p == GamePhase::kCheckpointWalk || p == GamePhase::kStepWalk || p == GamePhase::kNodeWalk ||
         p == GamePhase::kChunkWalk || p == GamePhase::kPartialsWalk;
}

bool IsElementWalk(GamePhase p) { return p == GamePhase::kChunkWalk || p == GamePhase::kPartialsWalk; }

Level LevelOf(GamePhase p) {
  switch (p) {
    case GamePhase::kCheckpointWalk: return Level::kCheckpoint;
    case GamePhase::kStepWalk: return Level::kStep;
    case GamePhase::kChunkWalk: return Level::kChunk;
    case GamePhase::kPartialsWalk: return Level::kPartials;
    default: return Level::kNode;
  }
}

// One call's view of the referee: the context, and helpers that meter and
// check everything against it.
class Session {
 public:
  Session(vm::CallContext& ctx, const RefereeParams& params) : m_ctx(ctx), m_params(params) {}

  Status PostBounty(const PostBountyArgs& a);
  Status Claim(const BountyIdArgs& a);
  Status Commit(const CommitArgs& a);
  Status Refund(const BountyIdArgs& a);
  Status Finalize(const BountyIdArgs& a);
  Status OpenGame(const OpenGameArgs& a);
  Status RevealChildren(const RevealChildrenArgs& a);
  Status PostStepRoot(const StepRootArgs& a);
  Status PostNodeRoot(const NodeRootArgs& a);
  Status RevealRecord(const RevealRecordArgs& a);
  Status Arbitrate(const ArbitrateArgs& a);
  Status ClaimTimeout(const GameIdArgs& a);
  Status CloseMootGame(const GameIdArgs& a);
  // The element level (docs/referee.md, "Element-level descent").
  Status PostChunkRoot(const ChunkRootArgs& a);
  Status RevealChunk(const RevealChunkArgs& a);
  Status PostPartialsRoot(const PartialsRootArgs& a);
  Status RevealStep(const RevealStepArgs& a);
  Status OpenElement(const OpenElementArgs& a);
  Status RevealReduceStep(const RevealReduceStepArgs& a);

 private:
  std::uint64_t height() const { return m_ctx.height(); }

  // ---- storage ----
  template <typename T>
  Result<T> Load(const Bytes& key, std::string_view absent) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, m_ctx.Get(key));
    if (!v) return Status::Invalid(absent);
    VT_TRY(m_ctx.ChargeHashing(v->size()));
    auto rec = DecodeExact<T>(*v);
    if (!rec.ok()) return Status::Error("state-corrupt", rec.status().ToString());
    return rec;
  }
  Result<Bounty> LoadBounty(std::uint64_t id) { return Load<Bounty>(BountyKey(id), "bounty-unknown"); }
  Result<Game> LoadGame(std::uint64_t id) { return Load<Game>(GameKey(id), "game-unknown"); }
  Result<WalkTranscript> LoadWalk(std::uint64_t id) {
    auto t = Load<WalkTranscript>(WalkKey(id), "game-no-walk");
    if (!t.ok() && t.status().is_invalid()) return Status::Error("state-corrupt", "a walk phase without a walk");
    return t;
  }
  Result<protocol::JobSpec> LoadJob(std::uint64_t bounty_id) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, m_ctx.Get(JobKey(bounty_id)));
    if (!v) return Status::Error("state-corrupt", "bounty without its job");
    VT_TRY(m_ctx.ChargeHashing(v->size()));
    auto job = protocol::DecodeJobSpec(*v);
    if (!job.ok()) return Status::Error("state-corrupt", job.status().ToString());
    return job;
  }
  Status Save(const Bounty& b) { return m_ctx.Put(BountyKey(b.id), EncodeToBytes(b)); }
  Status Save(const Game& g) { return m_ctx.Put(GameKey(g.id), EncodeToBytes(g)); }
  Status Save(std::uint64_t game_id, const WalkTranscript& t) { return m_ctx.Put(WalkKey(game_id), EncodeToBytes(t)); }
  Status Save(std::uint64_t game_id, const ElementGame& e) { return m_ctx.Put(ElementKey(game_id), EncodeToBytes(e)); }
  Result<ElementGame> LoadElement(std::uint64_t id) {
    auto e = Load<ElementGame>(ElementKey(id), "game-no-element");
    if (!e.ok() && e.status().is_invalid()) return Status::Error("state-corrupt", "an element phase without its state");
    return e;
  }
  Result<std::uint64_t> NextId(const Bytes& counter) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, m_ctx.Get(counter));
    std::uint64_t next = 0;
    if (v) {
      Reader r(*v);
      auto u = r.GetU64();
      if (!u.ok() || !r.Finish().ok()) return Status::Error("state-corrupt", "id counter");
      next = *u;
    }
    VT_TRY(m_ctx.Put(counter, U64(next + 1)));
    return next;
  }

  // ---- checks ----
  // Named blobs: refused when badly declared, else every named byte paid.
  Status ChargeBlobs(const Result<std::vector<BlobRequirement>>& blobs) {
    if (!blobs.ok()) return blobs.status();
    return m_ctx.gas().Charge(BlobGas(*blobs));
  }
  Status CheckTop(std::uint64_t count, const Hash256& top, const Hash256& root, std::string_view reason) {
    VT_TRY(m_ctx.ChargeMerkle(1));
    if (crypto::MerkleRootFromTop(count, top) != root) return Status::Invalid(reason, "top does not match the root");
    return Status::Ok();
  }
  Status CheckProof(const Hash256& root, const Hash256& leaf, const MerkleProof& proof, std::uint64_t index,
                    std::uint64_t count, std::string_view reason) {
    VT_TRY(m_ctx.ChargeMerkle(proof.siblings.size() + 1));
    return verify::CheckProofAt(root, leaf, proof, index, count, reason);
  }
  Result<Party> PartyOf(const Bounty& b, const Game& g) const {
    if (m_ctx.sender() == b.solver) return kSolver;
    if (m_ctx.sender() == g.challenger) return kChallenger;
    return Status::Invalid("game-not-a-party");
  }
  Status CheckMove(const Game& g, Party p) const {
    if (g.phase == GamePhase::kResolved) return Status::Invalid("game-resolved");
    const Clock& c = g.clocks[Idx(p)];
    if (!c.owes) return Status::Invalid("game-not-your-turn");
    if (Expired(c)) return Status::Invalid("game-clock-expired");
    return Status::Ok();
  }
  // A Fischer increment of one block: the reply in the block right after
  // the obligation arose is free, so prompt parties never lose budget and
  // `clock_budget` is the total delay a party may add over a whole game.
  bool Expired(const Clock& c) const { return c.owes && height() > c.owes_since + c.left + 1; }
  void Spend(Game& g, Party p) const {
    Clock& c = g.clocks[Idx(p)];
    const std::uint64_t elapsed = height() - c.owes_since;
    c.left -= elapsed > 0 ? elapsed - 1 : 0;  // CheckMove made sure it does not underflow
    c.owes = false;
  }
  void Owe(Game& g, Party p) const {
    g.clocks[Idx(p)].owes = true;
    g.clocks[Idx(p)].owes_since = height();
  }
  void OweBoth(Game& g) const {
    Owe(g, kSolver);
    Owe(g, kChallenger);
  }
  std::uint64_t CheckpointCount(const Bounty& b) const {
    return protocol::CheckpointCount(b.num_steps, b.checkpoint_interval);
  }
  std::uint64_t CheckpointStep(const Bounty& b, std::uint64_t i) const {
    return protocol::CheckpointStepAt(b.num_steps, b.checkpoint_interval, i);
  }

  // ---- outcomes ----
  Status Emit(std::string_view topic, const Bytes& data) { return m_ctx.Emit(topic, data); }
  Status FinishLevel(Game& g, const Bounty& b, const crypto::MerkleWalk& walk);
  Status FinishElementWalk(Game& g, ElementGame& e, const crypto::MerkleWalk& walk);
  // Shared by the element moves.
  struct Loaded {
    Game g;
    Bounty b;
    bool moot = false;
  };
  Result<Loaded> LoadMove(std::uint64_t game_id, GamePhase phase);
  // A final move's batch opening: exactly the examples `positions` the move
  // reads (none: no opening), checked against the disputed step's batch
  // (verify::VerifyBatchOpening, charged as it goes). nullopt when the move
  // reads no example. `job`: the bounty's, when the caller has loaded it.
  // Invalid "elem-bad-batch" or the opening's reasons.
  Result<std::optional<verify::OpenedBatch>> OpenMoveBatch(const Loaded& l, const ElementGame& e,
                                                           const std::optional<verify::BatchOpening>& opening,
                                                           const std::vector<std::uint64_t>& positions,
                                                           const protocol::JobSpec* job = nullptr);
  // A party's move at the element level: LoadMove, then (unless moot) the
  // sender is one of the game's parties, on time, and the element state.
  struct ElementMove {
    Loaded l;
    Party p{};
    ElementGame e;
  };
  Result<ElementMove> LoadElementMove(std::uint64_t game_id, GamePhase phase);
  Status ChargeProof(const MerkleProof& proof) { return m_ctx.ChargeMerkle(proof.siblings.size() + 1); }
  Status ChargeChunk(const verify::ChunkOpening& c) {
    VT_TRY(ChargeProof(c.proof));
    return m_ctx.ChargeHashing(c.values.size() * sizeof(float) + 64);
  }
  // A log opening: each entry's proof (kernels::OpenLogAt) and the log hash from the root.
  Status ChargeLogOpening(const verify::LogOpening& o) {
    for (const auto* entry : {&o.at, &o.before, &o.after})
      if (*entry) VT_TRY(ChargeProof((*entry)->proof));
    return m_ctx.ChargeHashing(64);
  }
  // A rounded epilogue's log entry at the disputed value (its direction, or
  // none), opened against the game's fixed log hash; the opening and the
  // rounding charged.
  Result<std::optional<bool>> OpenValueLog(const ElementGame& e, const verify::LogOpening& o) {
    VT_TRY(ChargeLogOpening(o));
    VT_ASSIGN_OR_RETURN(
        std::optional<bool> logged,
        verify::OpenLogAt(e.log_hash, verify::LogPositionOf(e.output_shapes, e.slot, e.value), o));
    VT_TRY(m_ctx.gas().Charge(vm::FlopsGas(verify::kRoundedEpilogueFlops)));
    return logged;
  }
  // A rounded epilogue's verdict: an entry the acceptance rule refuses
  // loses the solver (its committed log is wrong); else the value decides.
  Status SettleRoundedEpilogue(Game& g, Bounty& b, const Result<verify::StepVerdict>& verdict) {
    if (!verdict.ok() && verdict.status().reason() == "log-entry-outside-region")
      return Resolve(g, b, true, false, "element-log-rejected", true);
    VT_TRY(verdict.status());
    return ResolveElement(g, b, *verdict, "element-epilogue");
  }
  // Rounded mode fixes a logged node's committed log before its element
  // level: the descent carries it, proven up to the commitment's log root
  // (`log`), and a record naming another log hash loses at once — both, if
  // neither names it. Returns whether the game was resolved; else the log
  // hash is the element game's. Invalid "elem-bad-log" (a rounded logged
  // node without `log`, another node with one) or VerifyLogChain's reason.
  Result<bool> FixNodeLog(Game& g, Bounty& b, const std::optional<NodeLogProof>& log, ElementGame& e);
  // The hash of input `opening.input` of the disputed node, opened by
  // verify::VerifyInputHash (charged first: the proof and the producer).
  Result<Hash256> OpenInputHash(const Game& g, const Bounty& b, std::uint8_t node_root_of,
                                const verify::InputHashOpening& opening);
  Status StartWalk(Game& g, ElementGame& e, GamePhase walk_phase, std::uint64_t leaves,
                   const std::array<Hash256, 2>& roots, const std::array<Hash256, 2>& tops);
  Status ResolveElement(Game& g, Bounty& b, const verify::StepVerdict& v, std::string_view reason);
  // ResolveElement, then both records saved: how every element verdict ends.
  Status SettleElement(Loaded& l, const verify::StepVerdict& v, std::string_view reason) {
    VT_TRY(ResolveElement(l.g, l.b, v, reason));
    VT_TRY(Save(l.b));
    return Save(l.g);
  }
  // A step reveal opens exactly the inputs `want` names, in that order
  // ("elem-bad-inputs" otherwise; `what` names them in the message).
  static Status CheckOpenedInputs(const std::vector<verify::InputHashOpening>& got,
                                  const std::vector<std::uint32_t>& want, std::string_view what) {
    if (got.size() != want.size())
      return Status::Invalid("elem-bad-inputs",
                             "open the " + std::string(what) + " inputs (" + std::to_string(want.size()) + ")");
    for (std::size_t i = 0; i < want.size(); ++i)
      if (got[i].input != want[i])
        return Status::Invalid("elem-bad-inputs", "open the " + std::string(what) + " input " + std::to_string(want[i]));
    return Status::Ok();
  }
  Status SettleLoserBond(ByteSpan escrow, Amount bond, Amount reimbursement, const crypto::Address* winner);
  Status Resolve(Game& g, Bounty& b, bool solver_lost, bool challenger_lost, std::string_view reason,
                 bool arbitrated = false);
  Amount Reimbursement(const Game& g, const Bounty& b, bool solver_lost, std::string_view reason);
  Result<bool> CloseIfMoot(Game& g, Bounty& b);
  Status CloseGame(Game& g, GameResult result, std::string_view reason);

  vm::CallContext& m_ctx;
  const RefereeParams& m_params;
};

// ---- bounty lifecycle -------------------------------------------------------------

Status Session::PostBounty(const PostBountyArgs& a) {
  VT_TRY(protocol::ValidateJobSpec(a.job));
  if (a.job.mode != kModeRepops && a.job.mode != kModeRounded && a.job.mode != kModeCertified)
    return Status::Invalid("bounty-bad-mode", "disputes need a reproducible mode (repops, rounded or certified)");
  if (a.reward == 0) return Status::Invalid("bounty-bad-reward");
  if (a.solver_bond == 0 || a.challenger_bond == 0) return Status::Invalid("bounty-bad-bond");
  for (std::uint64_t w : {a.solve_window, a.challenge_window, a.clock_budget})
    if (w == 0 || w > m_params.max_window) return Status::Invalid("bounty-bad-window");
  VT_TRY(ChargeBlobs(BlobsOf(a)));

  // Price the job's worst arbitration (charged before it is computed): the
  // chain must carry its transaction — else a lying challenger could steer
  // an honest solver to a node whose inputs it cannot deliver — and both
  // bonds must pay for a whole game (referee/bonds.h).
  VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
  VT_ASSIGN_OR_RETURN(BondTerms terms,
                      ComputeBondTerms(*arbiter, a.job, m_ctx.params(), m_params, m_ctx.gas()));
  if (terms.required_tx_bytes > m_ctx.params().max_tx_bytes)
    return Status::Invalid(
        "bounty-job-too-large",
        (terms.required_by_element_move ? std::string("an element move")
                                        : "arbitrating node " + std::to_string(terms.required_node)) +
            " may need a " + std::to_string(terms.required_tx_bytes) +
            "-byte transaction; the chain carries " + std::to_string(m_ctx.params().max_tx_bytes));
  if (a.solver_bond < terms.minimum || a.challenger_bond < terms.minimum)
    return Status::Invalid("bounty-bond-below-minimum",
                           "both bonds must be at least " + std::to_string(terms.minimum) + " (arbitration " +
                               std::to_string(terms.arbitration_gas) + " gas, " + std::to_string(terms.moves) +
                               " moves of " + std::to_string(terms.move_gas) + " gas)");

  VT_ASSIGN_OR_RETURN(std::uint64_t id, NextId(kNextBountyKey));
  VT_TRY(m_ctx.LockFromSender(RewardEscrow(id), a.reward));
  Bounty b;
  b.id = id;
  b.client = m_ctx.sender();
  b.job_hash = protocol::JobHash(a.job);
  b.initial_state = a.initial_state;
  b.initial_blob = a.initial_blob;
  b.reward = a.reward;
  b.solver_bond = a.solver_bond;
  b.challenger_bond = a.challenger_bond;
  b.min_bond = terms.minimum;
  b.arbitration_allowance = terms.arbitration_allowance;
  b.posted_height = height();
  b.solve_deadline = height() + a.solve_window;
  b.challenge_window = a.challenge_window;
  b.clock_budget = a.clock_budget;
  b.num_steps = a.job.num_steps;
  b.checkpoint_interval = a.job.checkpoint_interval;
  b.mode = a.job.mode;
  const Bytes job = protocol::EncodeJobSpec(a.job);
  VT_TRY(m_ctx.ChargeHashing(job.size()));
  VT_TRY(m_ctx.Put(JobKey(id), job));
  VT_TRY(Save(b));
  return Emit(topics::kBountyPosted, U64(id));
}

Status Session::Claim(const BountyIdArgs& a) {
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(a.bounty_id));
  if (b.state != BountyState::kOpen) return Status::Invalid("bounty-not-open");
  if (height() > b.solve_deadline) return Status::Invalid("bounty-solve-window-over");
  VT_TRY(m_ctx.LockFromSender(SolverBondEscrow(b.id), b.solver_bond));
  b.state = BountyState::kClaimed;
  b.solver = m_ctx.sender();
  std::copy(m_ctx.sender_key().begin(), m_ctx.sender_key().end(), b.solver_key.begin());
  VT_TRY(Save(b));
  return Emit(topics::kBountyClaimed, U64(b.id));
}

Status Session::Commit(const CommitArgs& a) {
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(a.bounty_id));
  if (b.state != BountyState::kClaimed) return Status::Invalid("bounty-not-claimed");
  if (m_ctx.sender() != b.solver) return Status::Invalid("bounty-not-solver");
  if (height() > b.solve_deadline) return Status::Invalid("bounty-solve-window-over");
  const protocol::Commitment& c = a.commitment;
  if (c.bounty_id != b.id || c.job_hash != b.job_hash) return Status::Invalid("commit-bad-job");
  if (c.solver != b.solver_key) return Status::Invalid("commit-bad-signer");
  bool valid = false;
  const Hash256 msg = protocol::CommitmentSigningHash(c);
  VT_TRY(m_ctx.VerifySignature(c.solver, msg.span(), c.signature, &valid));
  if (!valid) return Status::Invalid("commit-bad-signature");
  const std::uint64_t n = CheckpointCount(b);
  VT_TRY(CheckTop(n, a.checkpoint_top, c.checkpoint_root, "commit-bad-top"));
  VT_TRY(CheckProof(c.checkpoint_root, b.initial_state, a.first_proof, 0, n, "commit-bad-first-leaf"));
  VT_TRY(CheckProof(c.checkpoint_root, c.final_state_hash, a.last_proof, n - 1, n, "commit-bad-last-leaf"));
  if (c.log_root.IsZero() != (b.mode != kModeRounded)) return Status::Invalid("commit-bad-log-root");
  if (a.log_bundle.IsZero() != (b.mode != kModeRounded)) return Status::Invalid("commit-bad-log-bundle");
  // The blobs' contents were checked before the block was accepted
  // (availability is block validity); here their declarations and gas.
  VT_TRY(ChargeBlobs(BlobsOf(a)));
  b.commitment = c;
  b.checkpoint_top = a.checkpoint_top;
  b.log_bundle = a.log_bundle;
  b.state_blob = a.state_blob;
  b.state = BountyState::kCommitted;
  b.challenge_deadline = height() + b.challenge_window;
  VT_TRY(Save(b));
  return Emit(topics::kBountyCommitted, U64(b.id));
}

// A loser's bond: first the arbitration's submitter is reimbursed (at most
// the bond), then the winner's share of the rest, and the remainder burns.
Status Session::SettleLoserBond(ByteSpan escrow, Amount bond, Amount reimbursement, const crypto::Address* winner) {
  if (reimbursement > 0) VT_TRY(m_ctx.Release(escrow, m_ctx.sender(), reimbursement));
  const Amount rest = bond - reimbursement;
  const Amount share = winner != nullptr ? vm::ShareBps(rest, m_params.winner_share_bps) : 0;
  if (share > 0) VT_TRY(m_ctx.Release(escrow, *winner, share));
  return m_ctx.Burn(escrow, rest - share);
}

Status Session::Refund(const BountyIdArgs& a) {
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(a.bounty_id));
  if (height() <= b.solve_deadline) return Status::Invalid("bounty-not-refundable", "the solve window is open");
  if (b.state == BountyState::kOpen) {
    VT_TRY(m_ctx.Release(RewardEscrow(b.id), b.client, b.reward));
    b.state = BountyState::kRefunded;
    VT_TRY(Save(b));
    return Emit(topics::kBountyRefunded, U64(b.id));
  }
  if (b.state == BountyState::kClaimed) {
    // The solver bonded and never committed: it timed out. Its bond burns in
    // full — paid to the client, it would let a client profit from posting a
    // bounty nobody can finish; kept by the claimant, it would make squatting
    // on bounties free.
    VT_TRY(m_ctx.Release(RewardEscrow(b.id), b.client, b.reward));
    VT_TRY(m_ctx.Burn(SolverBondEscrow(b.id), b.solver_bond));
    b.state = BountyState::kFailed;
    VT_TRY(Save(b));
    return Emit(topics::kBountyFailed, U64(b.id));
  }
  return Status::Invalid("bounty-not-refundable");
}

Status Session::Finalize(const BountyIdArgs& a) {
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(a.bounty_id));
  if (b.state != BountyState::kCommitted) return Status::Invalid("bounty-not-committed");
  if (height() <= b.challenge_deadline) return Status::Invalid("bounty-challenge-window-open");
  if (b.open_games != 0) return Status::Invalid("bounty-games-open");
  VT_TRY(m_ctx.Release(RewardEscrow(b.id), b.solver, b.reward));
  VT_TRY(m_ctx.Release(SolverBondEscrow(b.id), b.solver, b.solver_bond));
  b.state = BountyState::kFinalized;
  VT_TRY(Save(b));
  return Emit(topics::kBountyFinalized, U64(b.id));
}

// ---- the game -----------------------------------------------------------------------

Status Session::OpenGame(const OpenGameArgs& a) {
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(a.bounty_id));
  if (b.state != BountyState::kCommitted) return Status::Invalid("bounty-not-challengeable");
  if (height() > b.challenge_deadline) return Status::Invalid("bounty-challenge-window-over");
  if (m_ctx.sender() == b.solver) return Status::Invalid("game-solver-cannot-challenge");
  const std::uint64_t n = CheckpointCount(b);
  VT_TRY(CheckTop(n, a.checkpoint_top, a.checkpoint_root, "game-bad-top"));
  VT_TRY(CheckProof(a.checkpoint_root, b.initial_state, a.first_proof, 0, n, "game-bad-first-leaf"));
  if (a.checkpoint_root == b.commitment.checkpoint_root) return Status::Invalid("game-same-root");

  VT_ASSIGN_OR_RETURN(std::uint64_t id, NextId(kNextGameKey));
  VT_TRY(m_ctx.LockFromSender(ChallengerBondEscrow(id), b.challenger_bond));
  Game g;
  g.id = id;
  g.bounty_id = b.id;
  g.challenger = m_ctx.sender();
  g.challenger_root = a.checkpoint_root;
  g.phase = GamePhase::kCheckpointWalk;
  g.opened_height = height();
  g.clocks[0].left = g.clocks[1].left = b.clock_budget;
  OweBoth(g);
  WalkTranscript t;
  t.leaf_count = n;
  t.root = {b.commitment.checkpoint_root, a.checkpoint_root};
  t.top = {b.checkpoint_top, a.checkpoint_top};
  if (auto walk = ReplayWalk(t); !walk.ok()) return walk.status();
  // No cap on games: each is paid for by its bond and played on its own
  // clocks, so puppets cannot crowd out an honest challenger.
  b.open_games += 1;
  VT_TRY(m_ctx.Put(BountyGameKey(b.id, id), {}));
  VT_TRY(Save(id, t));
  VT_TRY(Save(g));
  VT_TRY(Save(b));
  return Emit(topics::kGameOpened, EncodeToBytes(GameOpenedEvent{id, b.id}));
}

Status Session::RevealChildren(const RevealChildrenArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (!IsWalkPhase(g.phase)) return Status::Invalid(g.phase == GamePhase::kResolved ? "game-resolved" : "game-wrong-phase");
  VT_ASSIGN_OR_RETURN(Party p, PartyOf(b, g));
  VT_TRY(CheckMove(g, p));
  VT_ASSIGN_OR_RETURN(WalkTranscript t, LoadWalk(g.id));
  // Replaying the transcript costs one check per reveal so far.
  VT_TRY(m_ctx.ChargeMerkle(2 + t.reveals[0].size() + t.reveals[1].size()));
  auto replayed = ReplayWalk(t);
  if (!replayed.ok()) return Status::Error("state-corrupt", "walk transcript: " + replayed.status().ToString());
  crypto::MerkleWalk walk = std::move(replayed).value();
  const unsigned before = walk.moves();
  VT_TRY(walk.RevealChildren(AsWalk(p), a.reveal));
  t.reveals[Idx(p)].push_back(a.reveal);
  Spend(g, p);
  if (walk.moves() > before) {
    if (IsElementWalk(g.phase)) {
      VT_ASSIGN_OR_RETURN(ElementGame e, LoadElement(g.id));
      e.rounds[g.phase == GamePhase::kChunkWalk ? 0 : 1] += 1;
      if (walk.phase() == crypto::MerkleWalk::Phase::kDone) {
        VT_TRY(m_ctx.Delete(WalkKey(g.id)));
        VT_TRY(FinishElementWalk(g, e, walk));
      } else {
        OweBoth(g);
        VT_TRY(Save(g.id, t));
      }
      VT_TRY(Save(g.id, e));
      return Save(g);
    }
    g.rounds[static_cast<std::size_t>(LevelOf(g.phase))] += 1;
    if (walk.phase() == crypto::MerkleWalk::Phase::kDone) {
      VT_TRY(m_ctx.Delete(WalkKey(g.id)));
      VT_TRY(FinishLevel(g, b, walk));
    } else {
      OweBoth(g);
      VT_TRY(Save(g.id, t));
    }
  } else {
    VT_TRY(Save(g.id, t));
  }
  return Save(g);
}

Status Session::FinishLevel(Game& g, const Bounty& b, const crypto::MerkleWalk& walk) {
  const std::uint64_t leaf = walk.disputed_leaf();
  const std::array<Hash256, 2> hashes = {walk.leaf_hash(WalkParty::kA), walk.leaf_hash(WalkParty::kB)};
  WalkDoneEvent event{g.id, LevelOf(g.phase), leaf};
  switch (g.phase) {
    case GamePhase::kCheckpointWalk:
      // Leaf 0 is h_0 in both trees (checked at commit and open).
      if (leaf == 0) return Status::Error("game-inconsistent", "checkpoint 0 disputed");
      g.checkpoint_index = leaf;
      g.checkpoint_leaf = hashes;
      g.phase = GamePhase::kStepRoots;
      break;
    case GamePhase::kStepWalk:
      // Leaf 0 is the agreed start in both step trees.
      if (leaf == 0) return Status::Error("game-inconsistent", "interval start disputed");
      g.step = CheckpointStep(b, g.checkpoint_index - 1) + leaf - 1;
      g.step_leaf = hashes;
      g.phase = GamePhase::kNodeRoots;
      event.index = g.step;
      break;
    case GamePhase::kNodeWalk:
      g.node_index = leaf;
      g.node_leaf = hashes;
      g.phase = GamePhase::kRevealRecords;
      break;
    default:
      return Status::Error("game-inconsistent", "no walk in this phase");
  }
  OweBoth(g);
  return Emit(topics::kWalkDone, EncodeToBytes(event));
}

Status Session::PostStepRoot(const StepRootArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase != GamePhase::kStepRoots) return Status::Invalid("game-wrong-phase");
  VT_ASSIGN_OR_RETURN(Party p, PartyOf(b, g));
  VT_TRY(CheckMove(g, p));
  if (g.step_posted[Idx(p)]) return Status::Invalid("game-duplicate-move");
  const std::uint64_t j = g.checkpoint_index;
  const std::uint64_t s0 = CheckpointStep(b, j - 1);
  const std::uint64_t leaves = CheckpointStep(b, j) - s0 + 1;
  VT_TRY(CheckTop(leaves, a.top, a.root, "game-bad-top"));
  // Leaf j-1 is agreed: a proof against the poster's own root carries the
  // same leaf as one against the other's (crypto/merkle.h, MerkleWalk).
  const Hash256& own_root = p == kSolver ? b.commitment.checkpoint_root : g.challenger_root;
  VT_TRY(CheckProof(own_root, a.start_state, a.start_proof, j - 1, CheckpointCount(b), "game-bad-start"));
  if (g.step_posted[Idx(Other(p))] && a.start_state != g.start_state) return Status::Invalid("game-bad-start");
  VT_TRY(CheckProof(a.root, a.start_state, a.first_proof, 0, leaves, "game-bad-first-leaf"));
  VT_TRY(CheckProof(a.root, g.checkpoint_leaf[Idx(p)], a.last_proof, leaves - 1, leaves, "game-bad-last-leaf"));
  g.start_state = a.start_state;
  g.step_root[Idx(p)] = a.root;
  g.step_top[Idx(p)] = a.top;
  g.step_posted[Idx(p)] = true;
  Spend(g, p);
  if (g.step_posted[0] && g.step_posted[1]) {
    if (g.step_root[0] == g.step_root[1]) return Status::Invalid("game-same-root");
    WalkTranscript t{leaves, g.step_root, g.step_top, {}};
    VT_TRY(Save(g.id, t));
    g.phase = GamePhase::kStepWalk;
    OweBoth(g);
  }
  return Save(g);
}

Status Session::PostNodeRoot(const NodeRootArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase != GamePhase::kNodeRoots) return Status::Invalid("game-wrong-phase");
  VT_ASSIGN_OR_RETURN(Party p, PartyOf(b, g));
  VT_TRY(CheckMove(g, p));
  if (g.node_posted[Idx(p)]) return Status::Invalid("game-duplicate-move");
  if (g.node_count == 0) {
    VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(b.id));
    VT_ASSIGN_OR_RETURN(vm::StepShape shape, arbiter->Shape(job, g.step, m_ctx.gas()));
    g.node_count = shape.node_count;
  }
  const std::uint64_t nodes = g.node_count;
  VT_TRY(CheckTop(nodes, a.top, a.root, "game-bad-top"));
  const std::uint64_t j = g.checkpoint_index;
  const std::uint64_t s0 = CheckpointStep(b, j - 1);
  const std::uint64_t leaves = CheckpointStep(b, j) - s0 + 1;
  VT_TRY(CheckProof(g.step_root[Idx(p)], a.agreed_state, a.agreed_proof, g.step - s0, leaves,
                    "game-bad-agreed-state"));
  if (g.node_posted[Idx(Other(p))] && a.agreed_state != g.agreed_state)
    return Status::Invalid("game-bad-agreed-state");
  if (a.assemble.op_kind != vm::kAssembleOpKind || a.assemble.output_hashes.size() != 1 ||
      a.assemble.output_hashes[0] != g.step_leaf[Idx(p)])
    return Status::Invalid("game-bad-assemble", "the last node must output the poster's h_{t+1}");
  VT_TRY(CheckProof(a.root, protocol::NodeRecordHash(a.assemble), a.assemble_proof, nodes - 1, nodes,
                    "game-bad-assemble"));
  g.agreed_state = a.agreed_state;
  g.node_root[Idx(p)] = a.root;
  g.node_top[Idx(p)] = a.top;
  g.node_posted[Idx(p)] = true;
  Spend(g, p);
  if (g.node_posted[0] && g.node_posted[1]) {
    if (g.node_root[0] == g.node_root[1]) return Status::Invalid("game-same-root");
    WalkTranscript t{nodes, g.node_root, g.node_top, {}};
    VT_TRY(Save(g.id, t));
    g.phase = GamePhase::kNodeWalk;
    OweBoth(g);
  }
  return Save(g);
}

Status Session::RevealRecord(const RevealRecordArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase != GamePhase::kRevealRecords) return Status::Invalid("game-wrong-phase");
  VT_ASSIGN_OR_RETURN(Party p, PartyOf(b, g));
  VT_TRY(CheckMove(g, p));
  if (g.records[Idx(p)]) return Status::Invalid("game-duplicate-move");
  const Bytes encoded = protocol::EncodeNodeRecord(a.record);
  VT_TRY(m_ctx.ChargeHashing(encoded.size()));
  if (protocol::NodeRecordHash(a.record) != g.node_leaf[Idx(p)]) return Status::Invalid("game-bad-record");
  VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
  VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(b.id));
  VT_ASSIGN_OR_RETURN(vm::NodeSpec spec, arbiter->ExpectedNode(job, g.step, g.node_index, m_ctx.gas()));
  if (Status s = vm::CheckRecordAgainstSpec(a.record, spec, b.mode == kModeRounded); !s.ok()) {
    // A committed record that is not the node the job prescribes: its author lied.
    VT_TRY(Resolve(g, b, p == kSolver, p == kChallenger, s.reason()));
    VT_TRY(Save(b));
    return Save(g);
  }
  g.records[Idx(p)] = a.record;
  Spend(g, p);
  if (g.records[0] && g.records[1]) {
    // The solver owes the node's inputs; anyone may supply them.
    g.phase = GamePhase::kArbitration;
    Owe(g, kSolver);
  }
  return Save(g);
}

Status Session::Arbitrate(const ArbitrateArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase != GamePhase::kArbitration) return Status::Invalid("game-wrong-phase");
  if (Expired(g.clocks[Idx(kSolver)])) return Status::Invalid("game-clock-expired");
  VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
  vm::ArbitrationCase c;
  VT_ASSIGN_OR_RETURN(c.job, LoadJob(b.id));
  c.step = g.step;
  c.state_hash = g.agreed_state;
  // Leaves before the disputed node are agreed: producers may be opened
  // against either party's root, whichever the submitter holds the tree of.
  if (a.node_root_of > 1) return Status::Invalid("referee-malformed-args", "node_root_of is 0 or 1");
  c.node_root = g.node_root[a.node_root_of];
  c.node_count = g.node_count;
  c.node_index = g.node_index;
  VT_ASSIGN_OR_RETURN(vm::ArbitrationOutcome outcome, arbiter->Arbitrate(c, a.payload, m_ctx.gas()));

  const bool logged = b.mode == kModeRounded && g.node_index + 1 < g.node_count;
  if (logged) {
    if (!a.log_proofs) return Status::Invalid("arb-bad-log-proof", "rounded mode needs the log's proofs");
    vm::GasCosts costs(m_ctx.gas());
    const verify::LogPosition at{b.num_steps, b.checkpoint_interval, g.step, g.node_index, g.node_count};
    VT_TRY(verify::VerifyLogChain(at, outcome.log_hash, *a.log_proofs, b.commitment.log_root, costs));
  } else if (a.log_proofs) {
    return Status::Invalid("arb-bad-log-proof", "this node has no log");
  }

  constexpr bool kArbitrated = true;  // Resolve reimburses the submitter from the loser's bond
  switch (outcome.kind) {
    case vm::ArbitrationKind::kLogRejected:
      VT_TRY(Resolve(g, b, true, false, "solver-log-rejected", kArbitrated));
      break;
    case vm::ArbitrationKind::kOpFailed:
      VT_TRY(Resolve(g, b, true, true, "node-op-failed", kArbitrated));
      break;
    case vm::ArbitrationKind::kExecuted: {
      std::array<bool, 2> right{};
      for (Party p : {kSolver, kChallenger}) {
        right[Idx(p)] = verify::OutcomeConfirms(outcome, *g.records[Idx(p)], logged);
      }
      // Two different records cannot both be the node's one correct record.
      if (right[0] && right[1]) return Status::Invalid("game-inconsistent", "both records match the re-execution");
      VT_TRY(Resolve(g, b, !right[Idx(kSolver)], !right[Idx(kChallenger)], "arbitration", kArbitrated));
      break;
    }
  }
  VT_TRY(Save(b));
  return Save(g);
}

// ---- the element level (docs/referee.md, "Element-level descent") ---------------
//
// Entered from kArbitration when either party posts its chunk root of the
// disputed node's first differing output (repops, an output with an element
// rule, inputs that have tensor hashes); node-level arbitration stays open
// until then. Then: the chunk walk (level 4), both chunks opened (the
// disputed value e), and by e's rule either the partial sums (level 5b) down
// to one multiply-add, or e's input slices re-executed. Every rule is
// verify/'s (element_game.h, descent.h, element_rules.h): the one the
// workers predict with.

Result<Session::Loaded> Session::LoadMove(std::uint64_t game_id, GamePhase phase) {
  Loaded l;
  VT_ASSIGN_OR_RETURN(l.g, LoadGame(game_id));
  VT_ASSIGN_OR_RETURN(l.b, LoadBounty(l.g.bounty_id));
  VT_ASSIGN_OR_RETURN(l.moot, CloseIfMoot(l.g, l.b));
  if (l.moot) return l;
  if (l.g.phase != phase)
    return Status::Invalid(l.g.phase == GamePhase::kResolved ? "game-resolved" : "game-wrong-phase");
  return l;
}

Result<Session::ElementMove> Session::LoadElementMove(std::uint64_t game_id, GamePhase phase) {
  ElementMove m;
  VT_ASSIGN_OR_RETURN(m.l, LoadMove(game_id, phase));
  if (m.l.moot) return m;
  VT_ASSIGN_OR_RETURN(m.p, PartyOf(m.l.b, m.l.g));
  VT_TRY(CheckMove(m.l.g, m.p));
  VT_ASSIGN_OR_RETURN(m.e, LoadElement(m.l.g.id));
  return m;
}

Result<Hash256> Session::OpenInputHash(const Game& g, const Bounty& b, std::uint8_t node_root_of,
                                       const verify::InputHashOpening& opening) {
  (void)b;
  if (node_root_of > 1) return Status::Invalid("referee-malformed-args", "node_root_of is 0 or 1");
  const protocol::NodeRecord& rec = *g.records[0];  // both records name the same inputs (CheckRecordAgainstSpec)
  if (opening.input >= rec.inputs.size()) return Status::Invalid("elem-bad-inputs", "no such input");
  VT_TRY(ChargeProof(opening.proof));
  if (opening.producer) VT_TRY(m_ctx.ChargeHashing(protocol::EncodeNodeRecord(*opening.producer).size()));
  VT_ASSIGN_OR_RETURN(ElementGame e, LoadElement(g.id));
  const verify::InputHashContext at{g.agreed_state, e.num_state_tensors, g.node_root[node_root_of], g.node_count,
                                    g.node_index};
  VT_TRY(verify::VerifyInputHash(at, rec.inputs[opening.input], opening.tensor_hash, opening.proof, opening.producer,
                                 "input " + std::to_string(opening.input)));
  return opening.tensor_hash;
}

Status Session::StartWalk(Game& g, ElementGame& e, GamePhase walk_phase, std::uint64_t leaves,
                          const std::array<Hash256, 2>& roots, const std::array<Hash256, 2>& tops) {
  WalkTranscript t{leaves, roots, tops, {}};
  auto walk = ReplayWalk(t);
  if (!walk.ok()) return Status::Error("game-inconsistent", walk.status().ToString());
  g.phase = walk_phase;
  if (walk->phase() == crypto::MerkleWalk::Phase::kDone) return FinishElementWalk(g, e, *walk);  // one leaf
  OweBoth(g);
  return Save(g.id, t);
}

Status Session::FinishElementWalk(Game& g, ElementGame& e, const crypto::MerkleWalk& walk) {
  const std::uint64_t leaf = walk.disputed_leaf();
  const WalkDoneEvent event{g.id, LevelOf(g.phase), leaf};
  if (e.kind == verify::ElementKind::kState) {
    // The assemble node: the first leaf of h_{t+1} whose hashes differ; what
    // it must be is opened next (verify/state_walk.h), the solver's duty as
    // an arbitration is, anyone's to send.
    e.chunk = leaf;
    e.leaf = {walk.leaf_hash(WalkParty::kA), walk.leaf_hash(WalkParty::kB)};
    g.phase = GamePhase::kOpenElement;
    g.clocks[0].owes = g.clocks[1].owes = false;
    Owe(g, kSolver);
    VT_TRY(Emit(topics::kElementDisputed,
                EncodeToBytes(ElementDisputedEvent{g.id, 0, static_cast<std::int64_t>(leaf)})));
    return Emit(topics::kWalkDone, EncodeToBytes(event));
  }
  if (g.phase == GamePhase::kChunkWalk) {
    e.chunk = leaf;
    g.phase = GamePhase::kChunkReveal;
  } else {
    // Leaf 0 is +0 in both partials trees (CheckPartialsEnds).
    if (leaf == 0) return Status::Error("game-inconsistent", "partial sum 0 disputed");
    e.step_leaf = leaf;
    g.phase = GamePhase::kStepReveal;
  }
  OweBoth(g);
  return Emit(topics::kWalkDone, EncodeToBytes(event));
}

Status Session::ResolveElement(Game& g, Bounty& b, const verify::StepVerdict& v, std::string_view reason) {
  // The two values differ bit for bit, so at most one is the rule's.
  if (v.a_right && v.b_right) return Status::Error("game-inconsistent", "both values match the rule");
  constexpr bool kReimbursed = true;  // the final move, like an arbitration, is paid back by the loser
  return Resolve(g, b, !v.a_right, !v.b_right, reason, kReimbursed);
}

Result<bool> Session::FixNodeLog(Game& g, Bounty& b, const std::optional<NodeLogProof>& log, ElementGame& e) {
  const bool logged = b.mode == kModeRounded && g.node_index + 1 < g.node_count;
  if (!logged) {
    if (log) return Status::Invalid("elem-bad-log", "this node has no log");
    return false;
  }
  if (!log) return Status::Invalid("elem-bad-log", "a rounded node's descent carries its committed log hash");
  vm::GasCosts costs(m_ctx.gas());
  const verify::LogPosition at{b.num_steps, b.checkpoint_interval, g.step, g.node_index, g.node_count};
  VT_TRY(verify::VerifyLogChain(at, log->log_hash, log->chain, b.commitment.log_root, costs));
  const bool solver_wrong = g.records[0]->log_hash != log->log_hash;
  const bool challenger_wrong = g.records[1]->log_hash != log->log_hash;
  if (solver_wrong || challenger_wrong) {
    constexpr bool kReimbursed = true;  // a deciding move, paid back by the loser
    VT_TRY(Resolve(g, b, solver_wrong, challenger_wrong, "element-log-hash", kReimbursed));
    return true;
  }
  e.log_hash = log->log_hash;
  return false;
}

Status Session::PostChunkRoot(const ChunkRootArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase != GamePhase::kArbitration && g.phase != GamePhase::kChunkRoots)
    return Status::Invalid(g.phase == GamePhase::kResolved ? "game-resolved" : "game-wrong-phase");
  VT_ASSIGN_OR_RETURN(Party p, PartyOf(b, g));
  ElementGame e;
  if (g.phase == GamePhase::kArbitration) {
    // Either party may descend instead of sending the whole node's inputs.
    if (Expired(g.clocks[Idx(p)])) return Status::Invalid("game-clock-expired");
    if (!m_params.element_level) return Status::Invalid("elem-disabled", "this chain arbitrates nodes whole");
    // Once only: a game that came back from the element level (a value
    // without a rule) is arbitrated whole.
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> played, m_ctx.Get(ElementKey(g.id)));
    if (played) return Status::Invalid("elem-already-played");
    // Before the outputs: records that differ only in their log hash are
    // settled here, and the descent needs the log for its epilogues.
    VT_ASSIGN_OR_RETURN(bool settled, FixNodeLog(g, b, a.log, e));
    if (settled) {
      VT_TRY(Save(b));
      return Save(g);
    }
    VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(b.id));
    VT_ASSIGN_OR_RETURN(vm::StepGraph graph, arbiter->BuildGraph(job, g.step, m_ctx.gas()));
    VT_ASSIGN_OR_RETURN(verify::DescentStart start,
                        verify::StartDescent(b.mode, graph, g.node_index, *g.records[0], *g.records[1]));
    if (start.assemble) e.kind = verify::ElementKind::kState;
    e.tau_q16 = start.tau_q16;
    e.slot = start.slot;
    e.num_state_tensors = start.num_state_tensors;
    e.input_shapes = std::move(start.input_shapes);
    e.output_shapes = std::move(start.output_shapes);
    if (!start.assemble) e.output_shape = e.output_shapes[e.slot];
    e.chunks = start.chunks;
    g.phase = GamePhase::kChunkRoots;
    // The solver's duty to send the inputs becomes its duty to post its root
    // (its clock keeps running from the same block); the challenger owes
    // its root from now.
    for (Party q : {kSolver, kChallenger})
      if (!g.clocks[Idx(q)].owes) Owe(g, q);
  } else {
    VT_TRY(CheckMove(g, p));
    VT_ASSIGN_OR_RETURN(e, LoadElement(g.id));
    if (e.chunk_posted[Idx(p)]) return Status::Invalid("game-duplicate-move");
    // Both parties may descend in one block: the second may carry the log too, the one fixed.
    if (a.log && (e.log_hash.IsZero() || a.log->log_hash != e.log_hash))
      return Status::Invalid("elem-bad-log", "not the node's log fixed when the descent began");
  }
  VT_TRY(CheckTop(e.chunks, a.top, a.root, "elem-bad-top"));
  VT_TRY(m_ctx.ChargeHashing(64 + 8 * e.output_shape.size()));
  if (e.kind == verify::ElementKind::kState) {
    // The assemble node's output is h_{t+1} itself, the root walked.
    if (a.root != g.records[Idx(p)]->output_hashes[0])
      return Status::Invalid("elem-bad-chunk-root", "not the record's h_{t+1}");
  } else {
    VT_TRY(verify::CheckChunkRoot(g.records[Idx(p)]->output_hashes[e.slot], e.output_shape, a.root));
  }
  e.chunk_root[Idx(p)] = a.root;
  e.chunk_top[Idx(p)] = a.top;
  e.chunk_posted[Idx(p)] = true;
  Spend(g, p);
  if (e.chunk_posted[0] && e.chunk_posted[1]) {
    if (e.chunk_root[0] == e.chunk_root[1]) return Status::Error("game-inconsistent", "same chunk roots");
    VT_TRY(StartWalk(g, e, GamePhase::kChunkWalk, e.chunks, e.chunk_root, e.chunk_top));
  }
  VT_TRY(Save(g.id, e));
  return Save(g);
}

Status Session::RevealChunk(const RevealChunkArgs& a) {
  VT_ASSIGN_OR_RETURN(ElementMove move, LoadElementMove(a.game_id, GamePhase::kChunkReveal));
  if (move.l.moot) return Status::Ok();
  Loaded& l = move.l;
  Game& g = l.g;
  const Party p = move.p;
  ElementGame& e = move.e;
  if (e.chunk_opening[Idx(p)]) return Status::Invalid("game-duplicate-move");
  VT_TRY(ChargeChunk(a.chunk));
  const auto first = static_cast<std::int64_t>(e.chunk) * verify::kChunkValues;
  VT_TRY(verify::VerifyValue(g.records[Idx(p)]->output_hashes[e.slot], e.output_shape, first,
                             verify::ValueOpening{a.chunk})
             .status());
  e.chunk_opening[Idx(p)] = a.chunk;
  Spend(g, p);
  if (e.chunk_opening[0] && e.chunk_opening[1]) {
    VT_TRY(ChargeChunk(*e.chunk_opening[Other(p) == kSolver ? 0 : 1]));
    VT_TRY(ChargeChunk(a.chunk));
    auto value = verify::DisputedValue(e.output_shape, static_cast<std::int64_t>(e.chunk),
                                       g.records[0]->output_hashes[e.slot], *e.chunk_opening[0],
                                       g.records[1]->output_hashes[e.slot], *e.chunk_opening[1]);
    if (!value.ok()) return Status::Error("game-inconsistent", value.status().ToString());
    e.value = *value;
    for (std::size_t q = 0; q < 2; ++q)
      e.y[q] = e.chunk_opening[q]->values[static_cast<std::size_t>(e.value - first)];
    e.chunk_opening = {};
    VT_TRY(Emit(topics::kElementDisputed, EncodeToBytes(ElementDisputedEvent{g.id, e.slot, e.value})));
    const protocol::NodeRecord& rec = *g.records[0];
    auto choice = verify::ChooseElementRule(l.b.mode, rec.op_kind, rec.attrs, e.slot, e.value, rec.inputs,
                                            e.input_shapes);
    g.clocks[0].owes = g.clocks[1].owes = false;
    if (!choice.ok()) {
      // This value has no rule the job's mode plays: the node is arbitrated
      // whole after all (the element state stays, as the mark that the level
      // was played; with today's rules, which depend on the output slot
      // only, StartDescent has refused such a node already).
      g.phase = GamePhase::kArbitration;
      Owe(g, kSolver);
    } else if (choice->kind == verify::ElementKind::kDot) {
      VT_ASSIGN_OR_RETURN(verify::DotElement el, DotOf(rec, e));
      e.kind = verify::ElementKind::kDot;
      e.k = static_cast<std::uint64_t>(el.k);
      g.phase = GamePhase::kPartialsRoots;
      OweBoth(g);
    } else if (choice->kind == verify::ElementKind::kReduce) {
      // The same moves over the mode's partial results: the fixed tree's, or the exact prefix sums.
      VT_ASSIGN_OR_RETURN(verify::ReduceElement el, ReduceOf(l.b.mode, rec, e));
      e.kind = verify::ElementKind::kReduce;
      e.k = el.Steps();
      g.phase = GamePhase::kPartialsRoots;
      OweBoth(g);
    } else {
      // The inputs are the solver's duty, as in an arbitration; anyone may send them.
      e.kind = verify::ElementKind::kPlan;
      g.phase = GamePhase::kOpenElement;
      Owe(g, kSolver);
    }
  }
  VT_TRY(Save(g.id, e));
  return Save(g);
}

Status Session::PostPartialsRoot(const PartialsRootArgs& a) {
  VT_ASSIGN_OR_RETURN(ElementMove move, LoadElementMove(a.game_id, GamePhase::kPartialsRoots));
  if (move.l.moot) return Status::Ok();
  Loaded& l = move.l;
  Game& g = l.g;
  const Party p = move.p;
  ElementGame& e = move.e;
  if (e.partials_posted[Idx(p)]) return Status::Invalid("game-duplicate-move");
  VT_TRY(CheckTop(e.k + 1, a.top, a.root, "elem-bad-top"));
  VT_TRY(ChargeProof(a.first));
  VT_TRY(ChargeProof(a.last));
  // The job mode's leaves for the game's rule: fp32, exact sums in a
  // certified job, a rounded job's fp64 sums.
  VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.p_k));
  VT_TRY(verify::CheckPartialsEnds(a.root, e.k, a.p_k, a.first, a.last));
  e.partials_root[Idx(p)] = a.root;
  e.partials_top[Idx(p)] = a.top;
  e.p_k[Idx(p)] = a.p_k;
  e.partials_posted[Idx(p)] = true;
  Spend(g, p);
  if (e.partials_posted[0] && e.partials_posted[1]) {
    if (e.partials_root[0] != e.partials_root[1]) {
      VT_TRY(StartWalk(g, e, GamePhase::kPartialsWalk, e.k + 1, e.partials_root, e.partials_top));
    } else {
      // Both sums agree up to p_K (the same last leaf): the epilogue is disputed.
      const protocol::NodeRecord& rec = *g.records[0];
      if (e.kind == verify::ElementKind::kReduce && l.b.mode != kModeRounded) {
        VT_ASSIGN_OR_RETURN(verify::ReduceElement el, ReduceOf(l.b.mode, rec, e));
        VT_ASSIGN_OR_RETURN(verify::StepVerdict v, verify::JudgeReduceEpilogue(el, e.p_k[0], e.y[0], e.y[1]));
        return SettleElement(l, v, "element-epilogue");
      }
      if (e.kind == verify::ElementKind::kDot) {
        VT_ASSIGN_OR_RETURN(verify::DotElement el, DotOf(rec, e));
        if (!el.bias_input && l.b.mode != kModeRounded) {
          VT_ASSIGN_OR_RETURN(verify::StepVerdict v,
                              verify::JudgeDotEpilogue(e.p_k[0], std::nullopt, e.y[0], e.y[1]));
          return SettleElement(l, v, "element-epilogue");
        }
      }
      // The bias value is opened, and a rounded value's log entry (a dot product's or a sum's).
      g.clocks[0].owes = g.clocks[1].owes = false;
      g.phase = GamePhase::kOpenElement;
      Owe(g, kSolver);
    }
  }
  VT_TRY(Save(g.id, e));
  return Save(g);
}

Result<std::optional<verify::OpenedBatch>> Session::OpenMoveBatch(
    const Loaded& l, const ElementGame& e, const std::optional<verify::BatchOpening>& opening,
    const std::vector<std::uint64_t>& positions, const protocol::JobSpec* job) {
  if (positions.empty() != !opening || (opening && opening->positions != positions))
    return Status::Invalid("elem-bad-batch", "open exactly the " + std::to_string(positions.size()) +
                                                 " examples the move reads");
  if (!opening) return std::optional<verify::OpenedBatch>{};
  std::optional<protocol::JobSpec> loaded;
  if (job == nullptr) {
    VT_ASSIGN_OR_RETURN(loaded, LoadJob(l.b.id));
    job = &*loaded;
  }
  VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
  vm::GasCosts costs(m_ctx.gas());
  const verify::BatchCase at{job, l.g.step, l.g.agreed_state, e.num_state_tensors};
  VT_ASSIGN_OR_RETURN(verify::OpenedBatch batch,
                      verify::VerifyBatchOpening(arbiter->graphs(), at, *opening, costs));
  return std::optional<verify::OpenedBatch>(std::move(batch));
}

Status Session::RevealStep(const RevealStepArgs& a) {
  VT_ASSIGN_OR_RETURN(ElementMove move, LoadElementMove(a.game_id, GamePhase::kStepReveal));
  if (move.l.moot) return Status::Ok();
  Loaded& l = move.l;
  Game& g = l.g;
  const Party p = move.p;
  ElementGame& e = move.e;
  if (e.step_revealed[Idx(p)]) return Status::Invalid("game-duplicate-move");
  if (e.kind != verify::ElementKind::kDot) return Status::Invalid("elem-wrong-rule", "a reduction: reveal-reduce-step");
  const protocol::NodeRecord& rec = *g.records[0];
  VT_ASSIGN_OR_RETURN(verify::DotElement el, DotOf(rec, e));
  // The factors' tensors, by their hashes: the node's own agreed output for
  // a kOwnOutput factor (attention's att), else an input opened by this
  // move — a's then b's, one opening when both come from the same input.
  // A factor of the batch (the first layer's x) comes from its example.
  const auto batch_of = [&](std::uint32_t f) -> std::optional<std::uint32_t> {
    if (!verify::IsBatchInput(rec.inputs, f)) return std::nullopt;
    return rec.inputs[f].index;
  };
  std::vector<std::uint32_t> want;
  for (std::uint32_t f : {el.a_input, el.b_input})
    if (!verify::OwnOutputSlot(f) && !batch_of(f) && std::find(want.begin(), want.end(), f) == want.end())
      want.push_back(f);
  VT_TRY(CheckOpenedInputs(a.inputs, want, "factors'"));
  const auto factor = [&](std::uint32_t f) -> Result<std::pair<Hash256, verify::Shape>> {
    if (auto own = verify::OwnOutputSlot(f)) {
      VT_ASSIGN_OR_RETURN(Hash256 h, OwnOutputHash(g, e, *own));
      return std::make_pair(h, verify::Shape(e.output_shapes[*own]));
    }
    if (f >= e.input_shapes.size())
      return Status::Error("game-inconsistent", "a factor beyond the node's inputs");
    if (batch_of(f)) return std::make_pair(Hash256{}, verify::Shape(e.input_shapes[f]));
    const std::size_t i = static_cast<std::size_t>(std::find(want.begin(), want.end(), f) - want.begin());
    VT_ASSIGN_OR_RETURN(Hash256 h, OpenInputHash(g, l.b, a.node_root_of, a.inputs[i]));
    return std::make_pair(h, verify::Shape(e.input_shapes[f]));
  };
  VT_ASSIGN_OR_RETURN(auto fa, factor(el.a_input));
  VT_ASSIGN_OR_RETURN(auto fb, factor(el.b_input));
  const verify::DotFactors factors{
      fa.first, fb.first, fa.second, fb.second, batch_of(el.a_input), batch_of(el.b_input)};
  const std::uint64_t m = e.step_leaf - 1;
  VT_ASSIGN_OR_RETURN(
      const std::optional<verify::OpenedBatch> batch,
      OpenMoveBatch(l, e, a.batch, verify::DotStepBatchPositions(el, m, rec.inputs, e.input_shapes)));
  const verify::OpenedBatch* opened = batch ? &*batch : nullptr;
  // The poster's own reveal must check out on its own (JudgeDotStepClaim
  // with the poster on both sides): a bad one never blocks the other party.
  VT_TRY(ChargeProof(a.p_m_proof));
  VT_TRY(ChargeProof(a.next_proof));
  VT_TRY(ChargeChunk(a.a.chunk));
  VT_TRY(ChargeChunk(a.b.chunk));
  VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.p_m));
  VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.next));
  const Hash256& own = e.partials_root[Idx(p)];
  const verify::DotStepClaimOf<verify::PartialLeaf> self{
      m, a.p_m, a.p_m_proof, {a.next, a.next}, {a.next_proof, a.next_proof}, a.a, a.b};
  VT_TRY(verify::JudgeDotStepClaim(el, factors, {own, own}, self, opened).status());
  e.p_m[Idx(p)] = a.p_m;
  e.next[Idx(p)] = a.next;
  e.p_m_proof[Idx(p)] = a.p_m_proof;
  e.next_proof[Idx(p)] = a.next_proof;
  e.step_revealed[Idx(p)] = true;
  Spend(g, p);
  if (e.step_revealed[0] && e.step_revealed[1]) {
    // The final verdict: p_m (agreed) from the solver's tree, both p_{m+1},
    // the factors from this move.
    VT_TRY(ChargeProof(e.p_m_proof[0]));
    VT_TRY(ChargeProof(e.next_proof[0]));
    VT_TRY(ChargeProof(e.next_proof[1]));
    VT_TRY(ChargeChunk(a.a.chunk));
    VT_TRY(ChargeChunk(a.b.chunk));
    const verify::DotStepClaimOf<verify::PartialLeaf> claim{
        m, e.p_m[0], e.p_m_proof[0], e.next, e.next_proof, a.a, a.b};
    auto verdict = verify::JudgeDotStepClaim(el, factors, e.partials_root, claim, opened);
    if (!verdict.ok()) return Status::Error("game-inconsistent", verdict.status().ToString());
    return SettleElement(l, *verdict, "element-step");
  }
  VT_TRY(Save(g.id, e));
  return Save(g);
}

Status Session::RevealReduceStep(const RevealReduceStepArgs& a) {
  VT_ASSIGN_OR_RETURN(ElementMove move, LoadElementMove(a.game_id, GamePhase::kStepReveal));
  if (move.l.moot) return Status::Ok();
  Loaded& l = move.l;
  Game& g = l.g;
  const Party p = move.p;
  ElementGame& e = move.e;
  if (e.step_revealed[Idx(p)]) return Status::Invalid("game-duplicate-move");
  if (e.kind != verify::ElementKind::kReduce) return Status::Invalid("elem-wrong-rule", "a dot product: reveal-step");
  // The job mode's leaves, each (certified: exact sums, and no second operand).
  VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.next));
  VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.left));
  if (a.right) VT_TRY(verify::CheckLeafKind(l.b.mode, e.kind, a.right->first));
  const protocol::NodeRecord& rec = *g.records[0];
  VT_ASSIGN_OR_RETURN(verify::ReduceElement el, ReduceOf(l.b.mode, rec, e));
  const std::uint64_t m = e.step_leaf - 1;
  auto reads = verify::StepReadsAt(el, m);
  if (!reads.ok()) return Status::Error("game-inconsistent", reads.status().ToString());
  // The inputs the step reads, by their hashes, in read order, once
  // each; a value of the batch from the example that holds it; a value of
  // the node's own agreed output (batch-norm's mean) by the records' hash.
  std::vector<std::uint32_t> want;
  std::vector<verify::InputTensor> inputs(e.input_shapes.size()), own(e.output_shapes.size());
  for (const verify::StepRead& read : *reads) {
    const std::uint32_t input = read.input;
    if (auto slot = verify::OwnOutputSlot(input)) {
      VT_ASSIGN_OR_RETURN(Hash256 h, OwnOutputHash(g, e, *slot));
      own[*slot] = verify::InputTensor{h, e.output_shapes[*slot], std::nullopt};
      continue;
    }
    if (input >= inputs.size()) return Status::Error("game-inconsistent", "a read beyond the node's inputs");
    if (const protocol::InputRef& ref = rec.inputs[input]; ref.source == protocol::InputSource::kBatch) {
      inputs[input] = verify::InputTensor{{}, e.input_shapes[input], ref.index};
    } else if (std::find(want.begin(), want.end(), input) == want.end()) {
      want.push_back(input);
    }
  }
  VT_TRY(CheckOpenedInputs(a.inputs, want, "step's"));
  for (std::size_t i = 0; i < want.size(); ++i) {
    VT_ASSIGN_OR_RETURN(Hash256 h, OpenInputHash(g, l.b, a.node_root_of, a.inputs[i]));
    inputs[want[i]] = verify::InputTensor{h, e.input_shapes[want[i]], std::nullopt};
  }
  VT_ASSIGN_OR_RETURN(
      const std::optional<verify::OpenedBatch> batch,
      OpenMoveBatch(l, e, a.batch, verify::StepBatchPositions(*reads, rec.inputs, e.input_shapes)));
  const verify::OpenedBatch* opened = batch ? &*batch : nullptr;
  // The poster's own reveal must check out on its own (its root on both
  // sides): a bad one never blocks the other party.
  VT_TRY(ChargeProof(a.next_proof));
  VT_TRY(ChargeProof(a.left_proof));
  if (a.right) VT_TRY(ChargeProof(a.right->second));
  for (const verify::ValueOpening& v : a.reads) VT_TRY(ChargeChunk(v.chunk));
  const std::size_t me = Idx(p), other = 1 - me;
  verify::ReduceMoveClaim claim{
      m, a.left, a.left_proof, a.right, {a.next, a.next}, {a.next_proof, a.next_proof}, a.reads};
  const Hash256& mine = e.partials_root[me];
  VT_TRY(verify::JudgeReduceStepClaim(el, inputs, {mine, mine}, claim, opened, own).status());
  e.p_m[me] = a.left;  // kept only as the mark of the reveal; the verdict uses this move's operands
  e.p_m_proof[me] = a.left_proof;
  e.next[me] = a.next;
  e.next_proof[me] = a.next_proof;
  e.step_revealed[me] = true;
  Spend(g, p);
  if (e.step_revealed[0] && e.step_revealed[1]) {
    // The final verdict, with this move's operands (agreed leaves, opened
    // against the poster's own root, which therefore comes first) and both
    // parties' leaves m+1.
    // Charged again: the claim is checked whole once more.
    VT_TRY(ChargeProof(e.next_proof[other]));
    VT_TRY(ChargeProof(a.next_proof));
    VT_TRY(ChargeProof(a.left_proof));
    if (a.right) VT_TRY(ChargeProof(a.right->second));
    for (const verify::ValueOpening& v : a.reads) VT_TRY(ChargeChunk(v.chunk));
    claim.next = {a.next, e.next[other]};
    claim.next_proof = {e.next_proof[me], e.next_proof[other]};
    auto verdict =
        verify::JudgeReduceStepClaim(el, inputs, {mine, e.partials_root[other]}, claim, opened, own);
    if (!verdict.ok()) return Status::Error("game-inconsistent", verdict.status().ToString());
    const verify::StepVerdict v = me == 0 ? *verdict : verify::StepVerdict{verdict->b_right, verdict->a_right};
    return SettleElement(l, v, "element-step");
  }
  VT_TRY(Save(g.id, e));
  return Save(g);
}

Status Session::OpenElement(const OpenElementArgs& a) {
  VT_ASSIGN_OR_RETURN(Loaded l, LoadMove(a.game_id, GamePhase::kOpenElement));
  if (l.moot) return Status::Ok();
  Game& g = l.g;
  if (Expired(g.clocks[Idx(kSolver)])) return Status::Invalid("game-clock-expired");
  VT_ASSIGN_OR_RETURN(ElementGame e, LoadElement(g.id));
  const protocol::NodeRecord& rec = *g.records[0];
  if (a.value_leaf && e.kind != verify::ElementKind::kReduce)
    return Status::Invalid("elem-bad-leaf", "only a sum's epilogue opens a leaf");
  if (e.kind == verify::ElementKind::kState) {
    // The assemble node's leaf k: input k by its hash, or the next header.
    if (!a.slices.empty()) return Status::Invalid("elem-bad-inputs", "a state leaf opens no chunks");
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(l.b.id));
    const verify::StateLeafCase at{&job, g.step, g.agreed_state, e.num_state_tensors, e.chunk};
    VT_TRY(verify::CheckStateLeafPieces(at, a.inputs, a.batch));
    Hash256 truth;
    if (a.batch) {
      VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, m_ctx.arbiter());
      vm::GasCosts costs(m_ctx.gas());
      VT_ASSIGN_OR_RETURN(truth, verify::TrueHeaderLeaf(arbiter->graphs(), at, *a.batch, costs));
    } else {
      VT_ASSIGN_OR_RETURN(truth, OpenInputHash(g, l.b, a.node_root_of, a.inputs[0]));
    }
    VT_TRY(ResolveElement(g, l.b, verify::JudgeStateLeaf(truth, e.leaf[0], e.leaf[1]), "element-state-leaf"));
    VT_TRY(Save(l.b));
    return Save(g);
  }
  // Each opened input: its hash (VerifyInputHash), then its slice's chunks.
  const auto open = [&](const Hash256& hash, const verify::Shape& shape, const verify::InputSlice& slice,
                        std::span<const verify::ChunkOpening> chunks) -> Result<std::vector<float>> {
    for (const verify::ChunkOpening& c : chunks) VT_TRY(ChargeChunk(c));
    return verify::VerifySlice(hash, shape, slice, chunks);
  };
  if (e.kind == verify::ElementKind::kDot) {
    // The epilogue: p_K is agreed; the bias value and, in rounded mode, the
    // log's entry at the value decide.
    VT_ASSIGN_OR_RETURN(verify::DotElement el, DotOf(rec, e));
    const bool rounded = l.b.mode == kModeRounded;
    if (!el.bias_input && !rounded) return Status::Error("game-inconsistent", "an epilogue without a bias");
    if (a.batch) return Status::Invalid("elem-bad-batch", "a bias reads no batch");
    if (a.log.has_value() != rounded)
      return Status::Invalid("elem-bad-log",
                             rounded ? "open the log at the value" : "this epilogue reads no log");
    std::optional<float> bias;
    if (el.bias_input) {
      if (a.inputs.size() != 1 || a.slices.size() != 1 || a.inputs[0].input != *el.bias_input)
        return Status::Invalid("elem-bad-inputs", "open the bias input " + std::to_string(*el.bias_input));
      VT_ASSIGN_OR_RETURN(Hash256 hash, OpenInputHash(g, l.b, a.node_root_of, a.inputs[0]));
      VT_ASSIGN_OR_RETURN(
          std::vector<float> values,
          open(hash, e.input_shapes[*el.bias_input], verify::InputSlice{el.bias_index, 1, {1}}, a.slices[0]));
      bias = values[0];
    } else if (!a.inputs.empty() || !a.slices.empty()) {
      return Status::Invalid("elem-bad-inputs", "this epilogue opens no input");
    }
    if (rounded) {
      VT_ASSIGN_OR_RETURN(std::optional<bool> logged, OpenValueLog(e, *a.log));
      VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(l.b.id));
      const verify::RoundedEpilogue how{el.k, verify::RoundingSpec{job.rounding_bits, e.tau_q16}, logged,
                                        std::nullopt};
      VT_TRY(SettleRoundedEpilogue(g, l.b, verify::JudgeDotEpilogue(e.p_k[0], bias, e.y[0], e.y[1], &how)));
    } else {
      VT_ASSIGN_OR_RETURN(verify::StepVerdict v, verify::JudgeDotEpilogue(e.p_k[0], bias, e.y[0], e.y[1]));
      VT_TRY(ResolveElement(g, l.b, v, "element-epilogue"));
    }
  } else if (e.kind == verify::ElementKind::kReduce) {
    // A rounded sum's epilogue (no other reduction comes here): p_K is
    // agreed; the log's entry at the value decides, with τ where the
    // operator is not exact in fp64 (verify::RoundedReduceEpilogueOf).
    if (l.b.mode != kModeRounded)
      return Status::Error("game-inconsistent", "a reduction's epilogue opens nothing");
    // A value with a slack also opens its own leaf (p_K is the slack's fold).
    if (a.batch || !a.inputs.empty() || !a.slices.empty())
      return Status::Invalid("elem-bad-inputs", "a sum's epilogue opens only the log and its value's leaf");
    if (!a.log) return Status::Invalid("elem-bad-log", "open the log at the value");
    VT_ASSIGN_OR_RETURN(verify::ReduceElement el, ReduceOf(l.b.mode, rec, e));
    if (a.value_leaf) VT_TRY(ChargeProof(a.value_leaf->second));
    VT_ASSIGN_OR_RETURN(const std::optional<double> value_leaf,
                        verify::OpenValueLeaf(el, e.partials_root[0], a.value_leaf));
    VT_ASSIGN_OR_RETURN(std::optional<bool> logged, OpenValueLog(e, *a.log));
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(l.b.id));
    verify::RoundedEpilogue how =
        verify::RoundedReduceEpilogueOf(rec.op_kind, job.rounding_bits, e.tau_q16, logged);
    how.value_leaf = value_leaf;
    VT_TRY(SettleRoundedEpilogue(g, l.b, verify::JudgeReduceEpilogue(el, e.p_k[0], e.y[0], e.y[1], &how)));
  } else {
    // One chunk list per slice the plan reads, in the plan's order (an
    // unread input — count 0 — and a slice of the batch have none; the
    // node's own agreed outputs come last, opened against the records'
    // common hash), one hash opening per read input, in input order, and
    // the batch's examples the batch slices read (verify/batch_opening.h).
    VT_ASSIGN_OR_RETURN(verify::ElementPlan plan, PlanOf(rec, e));
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, LoadJob(l.b.id));
    VT_ASSIGN_OR_RETURN(
        const std::optional<verify::OpenedBatch> batch,
        OpenMoveBatch(l, e, a.batch, verify::PlanBatchPositions(plan, rec.inputs, e.input_shapes), &job));
    std::vector<std::vector<float>> slices;
    std::uint64_t values = 0;
    std::size_t opened = 0, read = 0;
    for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
      verify::InputSlice slice = plan.inputs[i];
      Hash256 hash;
      verify::Shape shape;
      if (slice.count == 0) {
        slices.emplace_back();
        continue;
      }
      if (slice.row_from >= 0) {
        // A gathered slice: its row is a value read before it (embedding's index).
        const auto from = static_cast<std::size_t>(slice.row_from);
        if (from >= i || slices[from].size() != 1)
          return Status::Error("game-inconsistent", "gathered slice");
        auto resolved = verify::ResolveSlice(slice, slices[from][0]);
        if (!resolved.ok()) {
          // The operator fails on agreed inputs: neither value can be right.
          VT_TRY(Resolve(g, l.b, true, true, "element-op-failed", true));
          VT_TRY(Save(l.b));
          return Save(g);
        }
        slice = *resolved;
      }
      if (slice.output_slot < 0 && verify::IsBatchInput(rec.inputs, static_cast<std::uint32_t>(i))) {
        std::vector<float> v;
        for (std::int64_t k = 0; k < slice.count; ++k) {
          VT_ASSIGN_OR_RETURN(float x, batch->Value(rec.inputs[i].index, e.input_shapes[i], slice.first + k));
          v.push_back(x);
        }
        values += v.size();
        slices.push_back(std::move(v));
        continue;
      }
      if (read >= a.slices.size()) return Status::Invalid("elem-bad-inputs", "one chunk list per read slice");
      if (slice.output_slot >= 0) {
        const auto s = static_cast<std::uint32_t>(slice.output_slot);
        VT_ASSIGN_OR_RETURN(hash, OwnOutputHash(g, e, s));
        shape = e.output_shapes[s];
      } else {
        if (opened >= a.inputs.size() || a.inputs[opened].input != i)
          return Status::Invalid("elem-bad-inputs", "open input " + std::to_string(i));
        VT_ASSIGN_OR_RETURN(hash, OpenInputHash(g, l.b, a.node_root_of, a.inputs[opened]));
        ++opened;
        shape = e.input_shapes[i];
      }
      VT_ASSIGN_OR_RETURN(std::vector<float> v, open(hash, shape, slice, a.slices[read]));
      ++read;
      values += v.size();
      slices.push_back(std::move(v));
    }
    if (opened != a.inputs.size() || read != a.slices.size())
      return Status::Invalid("elem-bad-inputs", "open only the read inputs and slices");
    // The operator on the slices: at most verify::kElementFlopsPerValue flops
    // a value read (PlanElement refuses a costlier row plan).
    VT_TRY(m_ctx.gas().Charge(vm::FlopsGas(vm::GasMeter::Mul(values, verify::kElementFlopsPerValue))));
    // An operator that draws from the node's RNG stream (dropout's keep)
    // re-executes at the executor's address: job seed, step t, node i.
    const verify::RngAddress rng{job.seed, g.step, g.node_index};
    auto value = verify::ReexecuteElement(verify::ElementModeOf(job.mode, job.rounding_bits), rec.op_kind,
                                          rec.attrs, e.slot, plan, slices, rng);
    if (!value.ok()) {
      if (value.status().reason() == "elem-bad-slice") return value.status();
      // The operator fails on agreed inputs: neither value can be right.
      VT_TRY(Resolve(g, l.b, true, true, "element-op-failed", true));
    } else {
      VT_TRY(ResolveElement(g, l.b, verify::JudgeElementValue(*value, e.y[0], e.y[1]), "element-reexecuted"));
    }
  }
  VT_TRY(Save(l.b));
  return Save(g);
}

Status Session::ClaimTimeout(const GameIdArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (moot) return Status::Ok();
  if (g.phase == GamePhase::kResolved) return Status::Invalid("game-resolved");
  const bool solver_out = Expired(g.clocks[Idx(kSolver)]);
  const bool challenger_out = Expired(g.clocks[Idx(kChallenger)]);
  if (!solver_out && !challenger_out) return Status::Invalid("game-no-timeout");
  VT_TRY(Resolve(g, b, solver_out, challenger_out, "timeout"));
  VT_TRY(Save(b));
  return Save(g);
}

Status Session::CloseGame(Game& g, GameResult result, std::string_view reason) {
  // Only a game inside the element level has its state to drop (a Delete is
  // charged, and games that never descend must cost what they did).
  const bool element = g.phase >= GamePhase::kChunkRoots;
  g.phase = GamePhase::kResolved;
  g.result = result;
  g.reason = std::string(reason);
  g.resolved_height = height();
  g.clocks[0].owes = g.clocks[1].owes = false;
  VT_TRY(m_ctx.Delete(WalkKey(g.id)));
  if (element) VT_TRY(m_ctx.Delete(ElementKey(g.id)));
  return Emit(topics::kGameResolved, EncodeToBytes(GameResolvedEvent{g.id, result, std::string(reason)}));
}

// What the submitter of a deciding arbitration gets back: the gas of its
// transaction — spent so far, plus what settling the game will spend (the
// escrow moves, the two records written back, the events) — at its gas
// price, at most the bounty's arbitration allowance and the loser's bond.
Amount Session::Reimbursement(const Game& g, const Bounty& b, bool solver_lost, std::string_view reason) {
  // Escrow moves: reimbursement, share and burn of the loser's bond; the
  // challenger's refund and the reward's return when only the solver lost;
  // the challenger's burn and the reward's return when both lost.
  const std::uint64_t moves = !solver_lost ? 3 : 5;
  Game closed = g;
  closed.phase = GamePhase::kResolved;
  closed.reason = std::string(reason);
  Bounty after = b;
  if (solver_lost) after.state = BountyState::kFailed;
  std::uint64_t settle = vm::GasMeter::Mul(moves, vm::kEscrowMoveGas);
  for (std::uint64_t gas :
       {vm::kGas.state_write,  // the walk transcript's deletion
        vm::EventGas(EncodeToBytes(GameResolvedEvent{g.id, GameResult::kOpen, std::string(reason)}).size()),
        solver_lost ? vm::EventGas(8) : 0,
        vm::WriteGas(GameKey(g.id).size() + EncodeToBytes(closed).size()),
        vm::WriteGas(BountyKey(b.id).size() + EncodeToBytes(after).size())})
    settle = vm::GasMeter::Add(settle, gas);
  auto spent = vm::CheckedMul(vm::GasMeter::Add(m_ctx.gas().used(), settle), m_ctx.gas_price());
  const Amount loser_bond = solver_lost ? b.solver_bond : b.challenger_bond;
  return std::min({spent.ok() ? *spent : b.arbitration_allowance, b.arbitration_allowance, loser_bond});
}

Status Session::Resolve(Game& g, Bounty& b, bool solver_lost, bool challenger_lost, std::string_view reason,
                       bool arbitrated) {
  const Bytes game_bond = ChallengerBondEscrow(g.id);
  const Bytes solver_bond = SolverBondEscrow(b.id);
  // The loser's bond pays it; when both lose, the solver's (the arbitration was its duty).
  g.reimbursement = arbitrated ? Reimbursement(g, b, solver_lost, reason) : 0;
  const Amount reimbursement = g.reimbursement;
  GameResult result;
  if (!solver_lost) {
    // The challenger lied: its bond reimburses the arbitration, pays the
    // solver's share, and the rest burns.
    VT_TRY(SettleLoserBond(game_bond, b.challenger_bond, reimbursement, &b.solver));
    result = GameResult::kSolverWon;
  } else if (!challenger_lost) {
    VT_TRY(m_ctx.Release(game_bond, g.challenger, b.challenger_bond));
    VT_TRY(SettleLoserBond(solver_bond, b.solver_bond, reimbursement, &g.challenger));
    result = GameResult::kChallengerWon;
  } else {
    // Neither record is right: the arbitration (the solver's duty) is
    // reimbursed from the solver's bond, everything else burns.
    VT_TRY(m_ctx.Burn(game_bond, b.challenger_bond));
    VT_TRY(SettleLoserBond(solver_bond, b.solver_bond, reimbursement, nullptr));
    result = GameResult::kBothLost;
  }
  b.open_games -= 1;
  VT_TRY(CloseGame(g, result, reason));
  if (!solver_lost) return Status::Ok();

  // A solver that loses any game loses the bounty: the reward goes back to
  // the client. Its other games are now moot; each closes, bond refunded,
  // on the next call that touches it (CloseIfMoot) — one game per call, so
  // no call loops over games however many were opened.
  VT_TRY(m_ctx.Release(RewardEscrow(b.id), b.client, b.reward));
  b.state = BountyState::kFailed;
  return Emit(topics::kBountyFailed, U64(b.id));
}

// A game of a bounty whose solver lost another game: any call on it — a
// party's move, a timeout claim, CloseGame by anyone — closes it as no
// contest and refunds the challenger's bond (there is no solver bond left
// to win), in O(1).
Result<bool> Session::CloseIfMoot(Game& g, Bounty& b) {
  if (b.state != BountyState::kFailed || g.phase == GamePhase::kResolved) return false;
  VT_TRY(m_ctx.Release(ChallengerBondEscrow(g.id), g.challenger, b.challenger_bond));
  b.open_games -= 1;
  VT_TRY(CloseGame(g, GameResult::kNoContest, "solver-lost-elsewhere"));
  VT_TRY(Save(b));
  VT_TRY(Save(g));
  return true;
}

Status Session::CloseMootGame(const GameIdArgs& a) {
  VT_ASSIGN_OR_RETURN(Game g, LoadGame(a.game_id));
  if (g.phase == GamePhase::kResolved) return Status::Invalid("game-resolved");
  VT_ASSIGN_OR_RETURN(Bounty b, LoadBounty(g.bounty_id));
  VT_ASSIGN_OR_RETURN(bool moot, CloseIfMoot(g, b));
  if (!moot) return Status::Invalid("game-not-moot", "the solver has lost no game of this bounty");
  return Status::Ok();
}

}  // namespace

Status Referee::Call(vm::CallContext& ctx, std::uint16_t method, ByteSpan args) {
  Session s(ctx, m_params);
  // One case per row of VT_REFEREE_METHODS (referee/messages.h): decode the
  // row's argument type strictly, then call the row's Session handler.
  switch (static_cast<Method>(method)) {
#define VT_REFEREE_METHOD_CALL(enumerator, id, name, Args, handler) \
  case Method::enumerator: {                                        \
    VT_ASSIGN_OR_RETURN(Args a, DecodeArgs<Args>(args));            \
    return s.handler(a);                                            \
  }
    VT_REFEREE_METHODS(VT_REFEREE_METHOD_CALL)
#undef VT_REFEREE_METHOD_CALL
  }
  return Status::Invalid("referee-unknown-method", std::to_string(method));
}

}  // namespace vt::referee
