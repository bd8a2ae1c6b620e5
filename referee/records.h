#pragma once
// What the referee keeps in contract storage: bounties, games, and the
// transcript of the walk in progress (docs/formats.md, "Referee"). Exposed
// so that clients and tests can read a bounty or a game from any state.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/state.h"
#include "crypto/keys.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "referee/messages.h"

namespace vt::referee {

enum class BountyState : std::uint8_t {
  kOpen = 0,       // posted, no solver yet
  kClaimed = 1,    // a solver has bonded; its commitment is due by solve_deadline
  kCommitted = 2,  // commitment posted; challenge window running
  kFinalized = 3,  // reward and bond paid to the solver
  kFailed = 4,     // the solver lost a game or timed out: reward back to the client
  kRefunded = 5,   // nobody solved it: reward back to the client
};

struct Bounty {
  std::uint64_t id = 0;
  crypto::Address client;
  Hash256 job_hash;
  Hash256 initial_state;
  Hash256 initial_blob;  // the client's initial weights, zero for the seeded init (PostBountyArgs::initial_blob)
  Amount reward = 0;
  Amount solver_bond = 0;
  Amount challenger_bond = 0;
  // Fixed at posting from the job's worst-case arbitration (referee/bonds.h):
  // the smallest bond accepted, and the most an arbitration's submitter is
  // reimbursed from the loser's bond.
  Amount min_bond = 0;
  Amount arbitration_allowance = 0;
  std::uint64_t posted_height = 0;
  std::uint64_t solve_deadline = 0;  // last height to claim and commit
  std::uint64_t challenge_window = 0;
  std::uint64_t clock_budget = 0;
  std::uint64_t num_steps = 0;
  std::uint64_t checkpoint_interval = 0;
  std::uint8_t mode = 0;
  BountyState state = BountyState::kOpen;
  crypto::Address solver;
  std::array<std::uint8_t, 32> solver_key{};
  protocol::Commitment commitment;
  Hash256 checkpoint_top;
  Hash256 log_bundle;  // rounded mode: where the solver's logs are (CommitArgs::log_bundle)
  Hash256 state_blob;  // the final checkpoint, the client's model (CommitArgs::state_blob)
  std::uint64_t challenge_deadline = 0;  // last height to open a game
  // Games opened and not yet closed. There is no cap on games: each is paid
  // for by its own bond, and ReadBountyGames lists them (one storage entry
  // per game, so no call ever loads them all).
  std::uint64_t open_games = 0;
  bool operator==(const Bounty&) const = default;
};

enum class Party : std::uint8_t { kSolver = 0, kChallenger = 1 };
inline constexpr std::size_t Idx(Party p) { return static_cast<std::size_t>(p); }

enum class GamePhase : std::uint8_t {
  kCheckpointWalk = 0,
  kStepRoots = 1,
  kStepWalk = 2,
  kNodeRoots = 3,
  kNodeWalk = 4,
  kRevealRecords = 5,
  kArbitration = 6,
  kResolved = 7,
  // The element level (docs/referee.md, "Element-level descent"), entered
  // from kArbitration by a chunk-root post; its state is an ElementGame.
  kChunkRoots = 8,      // both post the chunk root of the first differing output (assemble: h_{t+1}'s top)
  kChunkWalk = 9,       // level 4: walk over the chunks (assemble: over h_{t+1}'s leaves)
  kChunkReveal = 10,    // both open the disputed chunk: the disputed value e
  kPartialsRoots = 11,  // dot rule: both post the partial sums' root of e
  kPartialsWalk = 12,   // level 5b: walk over the partial sums
  kStepReveal = 13,     // dot rule: both open the disputed step (the final verdict)
  kOpenElement = 14,    // pointwise/row rule, the dot epilogue, or the assemble node's disputed leaf opened
                        // (the final verdict)
};

// A per-party chess clock, in blocks. While `owes` is set the party is due to
// move and its clock runs from `owes_since`; a move at height h costs
// max(0, h - owes_since - 1) (the next block is free: a one-block Fischer
// increment) and the clock has run out at a height h > owes_since + left + 1.
struct Clock {
  bool owes = false;
  std::uint64_t owes_since = 0;
  std::uint64_t left = 0;
  bool operator==(const Clock&) const = default;
};

struct Game {
  std::uint64_t id = 0;
  std::uint64_t bounty_id = 0;
  crypto::Address challenger;
  Hash256 challenger_root;
  GamePhase phase = GamePhase::kCheckpointWalk;
  GameResult result = GameResult::kOpen;
  std::string reason;
  std::array<Clock, 2> clocks{};
  std::uint64_t opened_height = 0;
  std::uint64_t resolved_height = 0;
  // Paid from the loser's bond to whoever sent the deciding arbitration (its
  // gas at its price, at most the bounty's arbitration_allowance).
  Amount reimbursement = 0;
  std::array<std::uint32_t, 3> rounds{};  // completed walk rounds per level
  // Level 1 result: the first disputed checkpoint j and each party's h there.
  std::uint64_t checkpoint_index = 0;
  std::array<Hash256, 2> checkpoint_leaf{};
  // Level 2.
  std::array<bool, 2> step_posted{};
  std::array<Hash256, 2> step_root{};
  std::array<Hash256, 2> step_top{};
  Hash256 start_state;
  std::uint64_t step = 0;  // t: agreed h_t, disputed h_{t+1}
  std::array<Hash256, 2> step_leaf{};
  // Level 3.
  std::uint64_t node_count = 0;
  std::array<bool, 2> node_posted{};
  std::array<Hash256, 2> node_root{};
  std::array<Hash256, 2> node_top{};
  Hash256 agreed_state;
  std::uint64_t node_index = 0;
  std::array<Hash256, 2> node_leaf{};
  std::array<std::optional<protocol::NodeRecord>, 2> records{};
  bool operator==(const Game&) const = default;
};

// The element level of a game (present from its first chunk-root post): the
// disputed output slot, its shapes from the step graph, and each phase's
// posts. Kept under its own key so a game that never descends stores
// exactly what it did before.
struct ElementGame {
  std::uint32_t slot = 0;
  std::uint32_t num_state_tensors = 0;                  // of h_t (state inputs are opened in it)
  std::vector<std::vector<std::int64_t>> input_shapes;  // the node's inputs, from the step graph
  std::vector<std::int64_t> output_shape;               // of `slot`
  std::vector<std::vector<std::int64_t>> output_shapes;  // every slot's: own-output factors and slices
  std::uint64_t chunks = 0;
  std::array<bool, 2> chunk_posted{};
  std::array<Hash256, 2> chunk_root{};
  std::array<Hash256, 2> chunk_top{};
  std::uint64_t chunk = 0;                                   // where level 4 ended
  std::array<std::optional<verify::ChunkOpening>, 2> chunk_opening{};
  std::int64_t value = -1;                                   // the disputed value e
  std::array<float, 2> y{};                                  // each party's value at e
  verify::ElementKind kind = verify::ElementKind::kDot;
  std::uint64_t k = 0;  // the walk's steps: dot terms, verify::ReduceElement::Steps
  // The partial results' leaves are the job mode's (verify::PartialLeaf): fp32
  // in repops, exact in certified mode, for the dot and the reduction rule.
  std::array<bool, 2> partials_posted{};
  std::array<Hash256, 2> partials_root{};
  std::array<Hash256, 2> partials_top{};
  std::array<verify::PartialLeaf, 2> p_k{};
  std::uint64_t step_leaf = 0;                               // m+1, where level 5b ended
  std::array<bool, 2> step_revealed{};
  std::array<verify::PartialLeaf, 2> p_m{};
  std::array<verify::PartialLeaf, 2> next{};
  std::array<crypto::MerkleProof, 2> p_m_proof{};
  std::array<crypto::MerkleProof, 2> next_proof{};
  std::array<std::uint32_t, 2> rounds{};                     // walk rounds: chunks, partial sums
  // The assemble node's walk (kind kState, verify/state_walk.h): the leaf of
  // h_{t+1} where it ended is `chunk`, and these are each party's hashes there.
  std::array<Hash256, 2> leaf{};
  // Rounded mode, a logged node: its committed log hash, proven up to the
  // commitment's log root when the descent began (both records carry it), and
  // the node's τ — what the rounded dot rule's epilogue opens and rounds by.
  Hash256 log_hash;
  std::uint32_t tau_q16 = 0;
  bool operator==(const ElementGame&) const = default;
};

// The walk of the current level, as the reveals that drive a crypto
// MerkleWalk from its start: replaying them rebuilds the walk exactly.
struct WalkTranscript {
  std::uint64_t leaf_count = 0;
  std::array<Hash256, 2> root{};
  std::array<Hash256, 2> top{};
  std::array<std::vector<crypto::NodeReveal>, 2> reveals{};
  bool operator==(const WalkTranscript&) const = default;
};

void Encode(Writer& w, const Bounty& b);
Result<Bounty> Decode(Reader& r, DecodeAs<Bounty>);
void Encode(Writer& w, const Game& g);
Result<Game> Decode(Reader& r, DecodeAs<Game>);
void Encode(Writer& w, const ElementGame& e);
Result<ElementGame> Decode(Reader& r, DecodeAs<ElementGame>);
void Encode(Writer& w, const WalkTranscript& t);
Result<WalkTranscript> Decode(Reader& r, DecodeAs<WalkTranscript>);

// Storage keys inside the referee's contract storage.
Bytes BountyKey(std::uint64_t id);
Bytes JobKey(std::uint64_t bounty_id);
Bytes GameKey(std::uint64_t id);
Bytes WalkKey(std::uint64_t game_id);
Bytes ElementKey(std::uint64_t game_id);
// One entry per game of a bounty (value empty): "G/" ‖ u64be bounty ‖ u64be game.
Bytes BountyGameKey(std::uint64_t bounty_id, std::uint64_t game_id);
// Escrow names.
Bytes RewardEscrow(std::uint64_t bounty_id);
Bytes SolverBondEscrow(std::uint64_t bounty_id);
Bytes ChallengerBondEscrow(std::uint64_t game_id);

// Readers over any chain state (absent: Invalid "bounty-unknown" / "game-unknown").
Result<Bounty> ReadBounty(const vm::StateStore& state, std::uint64_t id) noexcept;
Result<Game> ReadGame(const vm::StateStore& state, std::uint64_t id) noexcept;
Result<protocol::JobSpec> ReadJob(const vm::StateStore& state, std::uint64_t bounty_id) noexcept;
// The ids of every game opened on the bounty, increasing (an off-chain read:
// it scans the bounty's game entries).
Result<std::vector<std::uint64_t>> ReadBountyGames(const vm::StateStore& state, std::uint64_t bounty_id) noexcept;
// nullopt when no walk is in progress.
Result<std::optional<WalkTranscript>> ReadWalk(const vm::StateStore& state, std::uint64_t game_id) noexcept;
// nullopt when the game has not entered the element level.
Result<std::optional<ElementGame>> ReadElementGame(const vm::StateStore& state, std::uint64_t game_id) noexcept;
// Rebuilds the MerkleWalk a transcript describes.
Result<crypto::MerkleWalk> ReplayWalk(const WalkTranscript& t) noexcept;

}  // namespace vt::referee
