#pragma once
// The referee's calls (method ids and canonical argument encodings) and the
// events it emits (docs/formats.md, "Referee"). Clients, the worker's
// solver/challenger daemons and the tests build transactions from these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "crypto/merkle.h"
#include "protocol/types.h"
#include "verify/batch_opening.h"
#include "verify/element_game.h"
#include "verify/wire.h"

namespace vt::referee {

using vm::Amount;

// The referee's contract id on every chain.
inline constexpr std::uint16_t kRefereeContractId = 1;

// The one table of referee methods (docs/formats.md, "Referee"): the Method
// enum, MethodName, and the dispatch of Referee::Call (argument type decoded,
// then the handler called) are generated from it, so adding a method is one
// row plus its handler. Ids are append-only: never renumber or reuse one.
// clang-format off
#define VT_REFEREE_METHODS(X)                                                         \
  /* enumerator        id  name               arguments           handler */         \
  X(kPostBounty,       1,  "post-bounty",     PostBountyArgs,     PostBounty)         \
  X(kClaim,            2,  "claim",           BountyIdArgs,       Claim)              \
  X(kCommit,           3,  "commit",          CommitArgs,         Commit)             \
  X(kRefund,           4,  "refund",          BountyIdArgs,       Refund)             \
  X(kFinalize,         5,  "finalize",        BountyIdArgs,       Finalize)           \
  X(kOpenGame,         10, "open-game",       OpenGameArgs,       OpenGame)           \
  X(kRevealChildren,   11, "reveal-children", RevealChildrenArgs, RevealChildren)     \
  X(kPostStepRoot,     12, "post-step-root",  StepRootArgs,       PostStepRoot)       \
  X(kPostNodeRoot,     13, "post-node-root",  NodeRootArgs,       PostNodeRoot)       \
  X(kRevealRecord,     14, "reveal-record",   RevealRecordArgs,   RevealRecord)       \
  X(kArbitrate,        15, "arbitrate",       ArbitrateArgs,      Arbitrate)          \
  X(kClaimTimeout,     16, "claim-timeout",   GameIdArgs,         ClaimTimeout)       \
  /* anyone: closes a game whose solver lost another game */                         \
  X(kCloseGame,        17, "close-game",      GameIdArgs,         CloseMootGame)      \
  /* the element level (docs/referee.md, "Element-level descent") */               \
  X(kPostChunkRoot,    18, "post-chunk-root", ChunkRootArgs,      PostChunkRoot)      \
  X(kRevealChunk,      19, "reveal-chunk",    RevealChunkArgs,    RevealChunk)        \
  X(kPostPartialsRoot, 20, "post-partials-root", PartialsRootArgs, PostPartialsRoot)  \
  X(kRevealStep,       21, "reveal-step",     RevealStepArgs,     RevealStep)         \
  X(kOpenElement,      22, "open-element",    OpenElementArgs,    OpenElement)        \
  X(kRevealReduceStep, 23, "reveal-reduce-step", RevealReduceStepArgs, RevealReduceStep)
// clang-format on

enum class Method : std::uint16_t {
#define VT_REFEREE_METHOD_ENUM(enumerator, id, ...) enumerator = id,
  VT_REFEREE_METHODS(VT_REFEREE_METHOD_ENUM)
#undef VT_REFEREE_METHOD_ENUM
};

// The method's name in logs and JSON ("post-bounty"); "unknown" for an id
// that is not in the table.
std::string_view MethodName(std::uint16_t method);
inline std::string_view MethodName(Method method) { return MethodName(static_cast<std::uint16_t>(method)); }

struct PostBountyArgs {
  protocol::JobSpec job;
  Hash256 initial_state;          // h_0: the client fixes the starting state
  Amount reward = 0;
  Amount solver_bond = 0;
  Amount challenger_bond = 0;
  std::uint64_t solve_window = 0;      // blocks from posting: claim and commit before it ends
  std::uint64_t challenge_window = 0;  // blocks from the commitment: open games before it ends
  std::uint64_t clock_budget = 0;      // blocks on each party's chess clock, per game
  // Optional initial weights (fine-tuning): zero when the job's seeded init
  // is used; otherwise SHA-256 of a blob holding the initial state (a
  // checkpoint file, worker/checkpoint_store.h) whose state hash must be
  // `initial_state`, and its exact length in bytes (paid per byte; 0 with a
  // zero hash). Availability is part of block validity (referee/blob_rules.h).
  Hash256 initial_blob;
  std::uint64_t initial_blob_bytes = 0;
  bool operator==(const PostBountyArgs&) const = default;
};

// Claim, Refund, Finalize.
struct BountyIdArgs {
  std::uint64_t bounty_id = 0;
  bool operator==(const BountyIdArgs&) const = default;
};

struct CommitArgs {
  std::uint64_t bounty_id = 0;
  protocol::Commitment commitment;
  Hash256 checkpoint_top;          // the top under commitment.checkpoint_root
  crypto::MerkleProof first_proof; // leaf 0 = the bounty's h_0
  crypto::MerkleProof last_proof;  // last leaf = commitment.final_state_hash
  // Rounded mode: SHA-256 of the solver's published log bundle (a blob on the
  // network, worker/log_bundle.h), which challengers need to replay; zero in
  // the other modes. The referee records it and never reads the blob: the
  // logs are bound by commitment.log_root, and a block holding this call is
  // valid only where the bundle is available and reproduces the commitment
  // (referee/blob_rules.h).
  Hash256 log_bundle;
  // Every mode: SHA-256 of a blob holding the final checkpoint (the
  // checkpoint file bytes, worker/checkpoint_store.h) whose state hash is
  // commitment.final_state_hash — how the client gets its model. Required.
  Hash256 state_blob;
  // Exact lengths of the two blobs (paid per byte; 0 for a zero hash).
  std::uint64_t log_bundle_bytes = 0;
  std::uint64_t state_blob_bytes = 0;
  bool operator==(const CommitArgs&) const = default;
};

struct OpenGameArgs {
  std::uint64_t bounty_id = 0;
  Hash256 checkpoint_root;         // the challenger's root over the same checkpoints
  Hash256 checkpoint_top;
  crypto::MerkleProof first_proof; // leaf 0 = the bounty's h_0
  bool operator==(const OpenGameArgs&) const = default;
};

struct RevealChildrenArgs {
  std::uint64_t game_id = 0;
  crypto::NodeReveal reveal;
  bool operator==(const RevealChildrenArgs&) const = default;
};

// Level 2: a root over the per-step state hashes h_{s_{j-1}} … h_{s_j} of the
// disputed interval (leaves are the state hashes themselves).
struct StepRootArgs {
  std::uint64_t game_id = 0;
  Hash256 root;
  Hash256 top;
  Hash256 start_state;              // h_{s_{j-1}}, the agreed checkpoint …
  crypto::MerkleProof start_proof;  // … opened in the poster's own checkpoint tree at j-1
  crypto::MerkleProof first_proof;  // leaf 0 of `root` = start_state
  crypto::MerkleProof last_proof;   // last leaf of `root` = the poster's checkpoint j
  bool operator==(const StepRootArgs&) const = default;
};

// Level 3: a root over the node records of step t (graph nodes, then the
// assemble node whose single output is the poster's h_{t+1}).
struct NodeRootArgs {
  std::uint64_t game_id = 0;
  Hash256 root;
  Hash256 top;
  Hash256 agreed_state;              // h_t …
  crypto::MerkleProof agreed_proof;  // … opened in the poster's own step tree
  protocol::NodeRecord assemble;     // the last leaf of `root` …
  crypto::MerkleProof assemble_proof;
  bool operator==(const NodeRootArgs&) const = default;
};

struct RevealRecordArgs {
  std::uint64_t game_id = 0;
  protocol::NodeRecord record;
  bool operator==(const RevealRecordArgs&) const = default;
};

// Rounded mode: the chain from the disputed node's log hash to the
// commitment's log_root (docs/referee.md, "Rounding logs"); one definition
// and codec, in verify/wire.h.
using LogProofs = verify::LogChain;

struct ArbitrateArgs {
  std::uint64_t game_id = 0;
  std::uint8_t node_root_of = 0;  // producer proofs are against this party's node root (0 solver, 1 challenger)
  Bytes payload;  // vm::ArbitrationPayload, encoded
  std::optional<LogProofs> log_proofs;
  bool operator==(const ArbitrateArgs&) const = default;
};

struct GameIdArgs {
  std::uint64_t game_id = 0;
  bool operator==(const GameIdArgs&) const = default;
};

// ---- the element level (docs/referee.md, "Element-level descent") ----------------

// Bounds on what a move may carry (each checked by the decoder): input
// openings per move, chunks per opened slice.
inline constexpr std::size_t kMaxElementInputs = verify::kMaxOpenedInputs;
inline constexpr std::size_t kMaxSliceChunks = static_cast<std::size_t>(verify::kMaxOpenedChunks);

// Rounded mode: a node's committed log hash with its chain up to the
// commitment's log root (verify::VerifyLogChain).
struct NodeLogProof {
  Hash256 log_hash;
  LogProofs chain;
  bool operator==(const NodeLogProof&) const = default;
};

// Level 4 opens (in kArbitration, instead of the node's inputs) or goes on:
// the poster's chunk root (and its top) of the disputed node's first
// differing output; TensorHashFromRoot(shape, root) must be its record's hash.
// In rounded mode the move that opens the level at a logged node (every
// node but the assemble node) carries the node's committed log hash
// (`log`): a record whose log hash is not it loses at once
// ("element-log-hash"); the rounded dot rule's epilogue opens that log.
struct ChunkRootArgs {
  std::uint64_t game_id = 0;
  Hash256 root;
  Hash256 top;
  std::optional<NodeLogProof> log;
  bool operator==(const ChunkRootArgs&) const = default;
};

// Level 4's end: the poster's chunk where the chunk walk ended.
struct RevealChunkArgs {
  std::uint64_t game_id = 0;
  verify::ChunkOpening chunk;
  bool operator==(const RevealChunkArgs&) const = default;
};

// Level 5b (dot rule): the poster's root over the K+1 partial sums of the
// disputed value, with leaves 0 (+0) and K (p_k) proven; the sums are the
// job mode's (verify::PartialLeaf: fp32, or exact in a certified job). The
// reduction rule's: its ReduceElement::Steps() + 1 partial results, p_k its
// last, likewise in the job mode's leaves.
struct PartialsRootArgs {
  std::uint64_t game_id = 0;
  Hash256 root;
  Hash256 top;
  verify::PartialLeaf p_k = 0.0f;
  crypto::MerkleProof first;
  crypto::MerkleProof last;
  bool operator==(const PartialsRootArgs&) const = default;
};

// Level 5b's end (dot rule): the poster's leaves m and m+1 of its own
// partials tree, and the m-th factors opened against the node's agreed
// inputs (`inputs`: the hash openings of the factors' input tensors).
struct RevealStepArgs {
  std::uint64_t game_id = 0;
  std::uint8_t node_root_of = 0;  // producer proofs are against this party's node root
  verify::PartialLeaf p_m = 0.0f;  // the job mode's leaves, as in PartialsRootArgs
  verify::PartialLeaf next = 0.0f;
  crypto::MerkleProof p_m_proof;
  crypto::MerkleProof next_proof;
  verify::ValueOpening a, b;  // a factor of the batch: empty, its value from `batch`
  std::vector<verify::InputHashOpening> inputs;
  std::optional<verify::BatchOpening> batch;  // the example a factor of the batch comes from
  bool operator==(const RevealStepArgs&) const = default;
};

// The final move of the pointwise/row rule (the value's input slices) and of
// the dot rule's epilogue (the bias value): the hash opening of each input
// the rule reads, in input order, and the chunks of each slice it reads, in
// the plan's order (the node's own agreed outputs last, opened against the
// records' common hash; an unread input has neither). Anyone may send it.
struct OpenElementArgs {
  std::uint64_t game_id = 0;
  std::uint8_t node_root_of = 0;
  std::vector<verify::InputHashOpening> inputs;
  std::vector<std::vector<verify::ChunkOpening>> slices;  // one per read slice not of the batch
  std::optional<verify::BatchOpening> batch;              // the examples the batch slices read
  std::optional<verify::LogOpening>
      log;  // a rounded dot epilogue: the log at the value (ElementGame::log_hash)
  // A rounded sum's epilogue whose value has a slack: the value's leaf
  // (verify::OpenValueLeaf), its p_K being the slack's fold.
  std::optional<verify::LeafOpening> value_leaf;
  bool operator==(const OpenElementArgs&) const = default;
};

// The final move of the reduction rule (verify::ReduceMoveClaim), each
// party's: its leaf m+1 with its proof, and the step's operands from its own
// tree (leaf `left`, for a combination also leaf `right`: they precede m+1,
// so they are agreed; a certified sum's `left` is leaf m, and it has no
// `right`) and the values the step reads (verify::StepReadsAt) with the
// hash openings of the inputs they come from (in that order, once each).
// The leaves are the job mode's (verify::PartialLeaf), as in PartialsRootArgs.
struct RevealReduceStepArgs {
  std::uint64_t game_id = 0;
  std::uint8_t node_root_of = 0;
  verify::PartialLeaf next = 0.0f;
  crypto::MerkleProof next_proof;
  verify::PartialLeaf left = 0.0f;
  crypto::MerkleProof left_proof;
  std::optional<verify::LeafOpening> right;  // the steps that read a second leaf
  std::vector<verify::ValueOpening> reads;  // the step's reads of hashed inputs
  std::vector<verify::InputHashOpening> inputs;
  std::optional<verify::BatchOpening> batch;  // the example a batch value read comes from
  bool operator==(const RevealReduceStepArgs&) const = default;
};

#define VT_REFEREE_CODEC(T)         \
  void Encode(Writer& w, const T& v); \
  Result<T> Decode(Reader& r, DecodeAs<T>);
VT_REFEREE_CODEC(PostBountyArgs)
VT_REFEREE_CODEC(BountyIdArgs)
VT_REFEREE_CODEC(CommitArgs)
VT_REFEREE_CODEC(OpenGameArgs)
VT_REFEREE_CODEC(RevealChildrenArgs)
VT_REFEREE_CODEC(StepRootArgs)
VT_REFEREE_CODEC(NodeRootArgs)
VT_REFEREE_CODEC(RevealRecordArgs)
VT_REFEREE_CODEC(ArbitrateArgs)
VT_REFEREE_CODEC(GameIdArgs)
VT_REFEREE_CODEC(ChunkRootArgs)
VT_REFEREE_CODEC(RevealChunkArgs)
VT_REFEREE_CODEC(PartialsRootArgs)
VT_REFEREE_CODEC(RevealStepArgs)
VT_REFEREE_CODEC(OpenElementArgs)
VT_REFEREE_CODEC(RevealReduceStepArgs)
#undef VT_REFEREE_CODEC

// ---- events ---------------------------------------------------------------------

namespace topics {
inline constexpr std::string_view kBountyPosted = "bounty-posted";        // u64 bounty
inline constexpr std::string_view kBountyClaimed = "bounty-claimed";      // u64 bounty
inline constexpr std::string_view kBountyCommitted = "bounty-committed";  // u64 bounty
inline constexpr std::string_view kBountyFinalized = "bounty-finalized";  // u64 bounty
inline constexpr std::string_view kBountyRefunded = "bounty-refunded";    // u64 bounty
inline constexpr std::string_view kBountyFailed = "bounty-failed";        // u64 bounty
inline constexpr std::string_view kGameOpened = "game-opened";            // GameOpenedEvent
inline constexpr std::string_view kWalkDone = "walk-done";                // WalkDoneEvent
inline constexpr std::string_view kGameResolved = "game-resolved";        // GameResolvedEvent
inline constexpr std::string_view kElementDisputed = "element-disputed";  // ElementDisputedEvent
}  // namespace topics

// kChunk and kPartials: the element level's walks (chunks of the disputed
// output, partial sums of the disputed value).
enum class Level : std::uint8_t { kCheckpoint = 0, kStep = 1, kNode = 2, kChunk = 3, kPartials = 4 };

enum class GameResult : std::uint8_t {
  kOpen = 0,
  kSolverWon = 1,      // the challenger lost
  kChallengerWon = 2,  // the solver lost
  kBothLost = 3,       // neither claim was right (or both clocks ran out)
  kNoContest = 4,      // closed because the solver lost another game; bond refunded
};
std::string_view GameResultName(GameResult r);

struct GameOpenedEvent {
  std::uint64_t game_id = 0;
  std::uint64_t bounty_id = 0;
  bool operator==(const GameOpenedEvent&) const = default;
};

struct WalkDoneEvent {
  std::uint64_t game_id = 0;
  Level level = Level::kCheckpoint;
  std::uint64_t index = 0;  // checkpoint j, step t (absolute), node i, chunk c, partial-sum leaf m+1
  bool operator==(const WalkDoneEvent&) const = default;
};

struct GameResolvedEvent {
  std::uint64_t game_id = 0;
  GameResult result = GameResult::kOpen;
  std::string reason;  // "timeout", "arbitration", "record-bad-op", …
  bool operator==(const GameResolvedEvent&) const = default;
};

// Level 4 ended: value `value` of output `slot` of the disputed node is the
// one the element level judges.
struct ElementDisputedEvent {
  std::uint64_t game_id = 0;
  std::uint32_t slot = 0;
  std::int64_t value = 0;
  bool operator==(const ElementDisputedEvent&) const = default;
};

void Encode(Writer& w, const ElementDisputedEvent& e);
Result<ElementDisputedEvent> Decode(Reader& r, DecodeAs<ElementDisputedEvent>);
void Encode(Writer& w, const GameOpenedEvent& e);
Result<GameOpenedEvent> Decode(Reader& r, DecodeAs<GameOpenedEvent>);
void Encode(Writer& w, const WalkDoneEvent& e);
Result<WalkDoneEvent> Decode(Reader& r, DecodeAs<WalkDoneEvent>);
void Encode(Writer& w, const GameResolvedEvent& e);
Result<GameResolvedEvent> Decode(Reader& r, DecodeAs<GameResolvedEvent>);

}  // namespace vt::referee
