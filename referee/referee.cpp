#include "referee/referee.h"

#include <algorithm>
#include <string>
#include <utility>

#include "contract_vm/amount.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/node_spec.h"
#include "contract_vm/vm.h"
#include "verify/arbitrate.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "referee/blob_rules.h"

#include "referee/bonds.h"
#include "referee/messages.h"
#include "referee/records.h"

namespace vt::referee {
namespace {

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
  return p == GamePhase::kCheckpointWalk || p == GamePhase::kStepWalk || p == GamePhase::kNodeWalk;
}

Level LevelOf(GamePhase p) {
  switch (p) {
    case GamePhase::kCheckpointWalk: return Level::kCheckpoint;
    case GamePhase::kStepWalk: return Level::kStep;
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
  if (a.job.mode != kModeRepops && a.job.mode != kModeRounded)
    return Status::Invalid("bounty-bad-mode", "disputes need a reproducible mode (repops or rounded)");
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
                      ComputeBondTerms(*arbiter, a.job, m_ctx.params(), m_params.winner_share_bps, m_ctx.gas()));
  if (terms.arbitration_tx_bytes > m_ctx.params().max_tx_bytes)
    return Status::Invalid("bounty-job-too-large",
                           "arbitrating node " + std::to_string(terms.arbitration_node) + " may need a " +
                               std::to_string(terms.arbitration_tx_bytes) + "-byte transaction; the chain carries " +
                               std::to_string(m_ctx.params().max_tx_bytes));
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
  g.phase = GamePhase::kResolved;
  g.result = result;
  g.reason = std::string(reason);
  g.resolved_height = height();
  g.clocks[0].owes = g.clocks[1].owes = false;
  VT_TRY(m_ctx.Delete(WalkKey(g.id)));
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
