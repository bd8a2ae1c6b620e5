#pragma once
// One bounty seen from the client's side of the chain: post it, then follow
// its events until it ends — what `vt-demo` prints as a timeline and what
// `vt-bench-testnet` times (posted → claimed → committed → game opened →
// resolved → ended). Everything goes through JSON-RPC (ChainClient).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "common/result.h"
#include "contract_vm/vm.h"
#include "crypto/keys.h"
#include "node/client.h"
#include "node/solver_note.h"
#include "worker/job.h"

namespace vt::node {

// A job file by name: `name` itself if it exists, else testnet/jobs/<name>
// under the current directory or the source tree the running binary was
// built from (build/<x>/bin/..). Returned as given when found nowhere.
std::filesystem::path FindTestnetJob(const std::string& name);

// The smallest bond the referee accepts for `job` on a chain with `params`
// (referee/bonds.h: priced from the job's worst arbitration at the chain's
// minimum gas price), computed here the way PostBounty computes it.
Result<vm::Amount> MinimumBond(const protocol::JobSpec& job, const vm::ChainParams& params = {});

// The amounts the demo and the benchmark post with. Bonds below the job's
// minimum (0 by default) are raised to it.
struct BountyTerms {
  vm::Amount reward = 1'000'000;
  vm::Amount solver_bond = 0;
  vm::Amount challenger_bond = 0;
  std::uint64_t solve_window = 400;      // blocks
  std::uint64_t challenge_window = 25;   // blocks
  std::uint64_t clock_budget = 40;       // blocks per party in a game
};

// Posts a bounty for `job` signed by `client`; waits for its receipt and
// returns the new bounty's id (and the transaction's, when asked). h_0 is
// the job's initial state: the seeded init, or the client's own weights
// (job.job.initial_state, worker/job.h LoadInitialWeights), which are first
// published as a checkpoint-file blob named by PostBountyArgs::initial_blob.
// Invalid with the receipt's reason if the referee refused it.
Result<std::uint64_t> PostBounty(ChainClient& c, const crypto::SecretKey& client, const worker::LoadedJob& job,
                                 const BountyTerms& terms = {}, Hash256* tx_id = nullptr);

// What a client gets back from a bounty: the final state the solver
// committed to, fetched from the blob its commit names
// (CommitArgs::state_blob) and checked against the committed
// final_state_hash, with the job it trained — or, when asked for, an earlier
// committed checkpoint, which the solver publishes on request
// (request_checkpoint; node/solver_note.h), checked against its leaf and
// the leaf's Merkle proof against the committed checkpoint root.
struct BountyResult {
  std::uint64_t bounty_id = 0;
  std::uint64_t checkpoint = 0;  // the leaf of the checkpoint tree this state is
  std::string bounty_state;  // "committed" (challenges may still come) or "finalized"
  worker::Job job;           // from the chain's job spec (no dataset source)
  Hash256 state_hash;
  Hash256 blob;
  std::uint64_t blob_bytes = 0;
  worker::TrainingState state;
};
// Invalid "result-not-committed" (open or claimed: nothing to fetch yet),
// "result-bounty-failed" (the solver was caught: its state is not the job's),
// "result-no-state-blob", the blob fetch's reasons (blob-timeout, ...), or
// "checkpoint-*" when the blob does not hold the committed state. With a
// `checkpoint`: "checkpoint-out-of-range", "checkpoint-not-served" (the
// solver did not publish it within `timeout`), "note-*" (the note naming it
// fails VerifySolverNote: e.g. its proof does not reach the root),
// "checkpoint-wrong-step".
// `notes`: the node the solver's daemon keeps its notes on, when it is not
// `c` (the checkpoint's blob then reaches `c` from its peers).
Result<BountyResult> FetchBountyResult(ChainClient& c, std::uint64_t bounty_id,
                                       std::chrono::milliseconds timeout = std::chrono::minutes(2),
                                       std::optional<std::uint64_t> checkpoint = std::nullopt,
                                       ChainClient* notes = nullptr);

// The bounty's solver note as the node holds it, checked (VerifySolverNote);
// nullopt when the node holds none.
Result<std::optional<SolverNote>> ReadSolverNote(ChainClient& c, const referee::Bounty& b);

// Seconds since the caller's t0; -1 = did not happen.
struct BountyTimeline {
  double posted = -1, claimed = -1, committed = -1, opened = -1, resolved = -1, ended = -1;
  std::string outcome;      // "finalized" | "failed" | "refunded"
  std::string game_result;  // of the bounty's first game, if any
  std::string game_reason;
};

// Called once per event of the bounty (and of its games): when (seconds
// since t0), the block height, and a readable line.
using TimelineSink = std::function<void(double at, std::uint64_t height, const std::string& what)>;

// Polls get_events from `next_height` (updated, so consecutive bounties can
// be followed in turn) until the bounty finalizes, fails or is refunded.
// Error "flow-timeout" after `timeout`.
Result<BountyTimeline> FollowBounty(ChainClient& c, std::uint64_t bounty, std::uint64_t& next_height,
                                    std::chrono::steady_clock::time_point t0, const TimelineSink& sink = {},
                                    std::chrono::milliseconds timeout = std::chrono::minutes(5));

}  // namespace vt::node
