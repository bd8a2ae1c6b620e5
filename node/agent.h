#pragma once
// The worker daemons (docs/node.md, "Solver and challenger daemons"): a
// solver that claims bounties whose job it serves, trains, commits and
// answers every dispute move; a challenger that replays committed runs,
// opens a game on a mismatch and plays it to the end. Both talk to a node
// only over JSON-RPC and poll the chain; they act on what the chain says,
// so a restart (of the daemon or of its node) loses nothing: the chain is
// the state of every game, and the runs (checkpoints) are on disk under the
// data directory, reused on restart.
//
// Blobs: the solver publishes its final checkpoint (every mode) and, in
// rounded mode, its log bundle (worker/log_bundle.h) as blobs on its node and
// names them in its commit; a block holding the commit is valid only where
// those blobs are available and verify (referee/blob_rules.h), so once the
// commit is on chain every node has them. The challenger fetches the bundle
// through its node and replays to the end following those logs, skipping any
// entry a strict replay rejects (the referee rejects it too), so that it has
// a complete checkpoint tree to dispute with and answers every move from the
// same trajectory. A bounty whose client brought its own initial weights
// names them as a blob (PostBountyArgs::initial_blob); both daemons fetch and
// check it before claiming or replaying.
//
// Notes: the solver signs a note on each bounty it trains (node/solver_note.h)
// and keeps it on its node: its progress (step, loss, ETA; at most one note a
// second while training) and, once committed, the checkpoints clients asked
// for (request_checkpoint), each published as a blob with its Merkle proof.
// It serves such requests for its committed and finalized bounties while its
// run is on disk.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "crypto/keys.h"
#include "node/client.h"
#include "node/solver_note.h"
#include "worker/adversary.h"
#include "worker/dataset.h"
#include "worker/dispute.h"
#include "worker/element_answers.h"
#include "worker/job.h"
#include "worker/run_dir.h"

namespace vt::node {

enum class AgentRole : std::uint8_t { kSolver, kChallenger };

struct AgentConfig {
  AgentRole role = AgentRole::kSolver;
  std::string rpc_host = "127.0.0.1";
  std::uint16_t rpc_port = 0;
  std::filesystem::path data_dir;
  std::vector<std::filesystem::path> job_files;    // the jobs this agent can serve
  std::optional<worker::AdversarySpec> adversary;  // TEST-ONLY: a cheating solver
  // TEST-ONLY: name the blobs (log bundle, final state) in the commit but
  // never publish them — the chain must never include such a commit.
  bool withhold_blobs = false;
  int threads = 1;
  std::chrono::milliseconds poll{150};
  // One line per thing that happened (the demo's timeline); may be empty.
  std::function<void(const std::string&)> on_event;
};

struct AgentTimes {
  double training_s = 0;  // solver: training; challenger: replay
  double answers_s = 0;   // computing dispute answers
};

class Agent {
 public:
  Agent(AgentConfig config, crypto::SecretKey key);
  ~Agent();

  // Loads the job files and their datasets.
  Status Init();
  // One round: read the chain, act. Errors of the node (down, restarting)
  // are returned; the caller retries.
  Status Poll();
  // Poll until `stop`; survives node restarts (logs and retries).
  void Run(const std::atomic<bool>& stop);
  AgentTimes times() const { return m_times; }

 private:
  struct Served {
    worker::LoadedJob loaded;
    Hash256 job_hash;
  };
  // A game's disputed node as this party answers it: whether the re-executed
  // node confirms our record, and our side of the node for the element level
  // (node/element_moves.h), with the trees it walks, built once.
  struct Arbitration {
    std::uint64_t step = 0, node = 0;
    bool right = false;
    worker::NodeCase node_case;
    std::optional<worker::ElementSide> side;
    std::map<std::uint32_t, crypto::MerkleTree> chunk_trees;  // by output slot
    std::optional<worker::DotPartialsAnswer> partials;        // of the disputed value, the job mode's
    // Likewise, a reduction's; a long walk's recomputes its leaves from `side`'s
    // tensors (verify/partials.h), so it is built after `side` and replaced with it.
    std::optional<worker::ReduceRuleAnswer> reduce_partials;
    std::optional<crypto::MerkleTree> state_tree;  // the assemble node's: over h_{t+1}'s leaves
  };
  struct JobRun {
    const worker::Job* job = nullptr;  // the bounty's job (its h_0 included): BountyJob
    std::unique_ptr<worker::RunDir> dir;
    // Rounded mode, challenger: the solver's published logs, unpacked.
    std::unique_ptr<worker::RunDir> solver_logs;
    worker::RunManifest manifest;
    crypto::MerkleTree checkpoint_tree;
    std::unique_ptr<worker::Adversary> adversary;
    std::map<std::uint64_t, worker::StepHashes> step_hashes;    // by checkpoint index j
    std::map<std::uint64_t, worker::StepRecords> step_records;  // by step t
    std::map<std::uint64_t, Arbitration> arbitrations;          // by game id
  };

  Served* FindJob(const Hash256& job_hash);
  // The served job with the bounty's h_0: the client's initial state when the
  // bounty names an initial blob (fetched through our node and checked:
  // its hash, and a layout the job can train), else the seeded init, whose
  // hash must then be the bounty's initial_state. nullptr while the blob is
  // on its way; Invalid when the bounty cannot be trained from what it names.
  Result<const worker::Job*> BountyJob(const referee::Bounty& b, Served& job);
  // nullptr while BountyJob is (rounded-mode challenger: or the logs are) on their way.
  Result<JobRun*> EnsureRun(const referee::Bounty& b, Served& job, bool cheat);
  // The challenger's run of a committed bounty; nullptr while the solver's
  // logs (rounded mode) are still being fetched.
  Result<JobRun*> EnsureReplay(std::uint64_t bounty_id, const referee::Bounty& b, Served& job);
  // Rounded mode: replay to the end following the solver's logs.
  Status ReplayRounded(const referee::Bounty& b, Served& job, JobRun& run);
  worker::Party PartyOf(Served& job, JobRun& run);
  Status PollSolver(std::uint64_t id, const referee::Bounty& b, std::uint64_t height);
  Status PollChallenger(std::uint64_t id, const referee::Bounty& b, std::uint64_t height);
  // A claimed bounty of a repops or certified job, someone else's: its
  // replay needs nothing from the solver, so it runs while the solver
  // trains, and the challenge window never has to hold a replay.
  Status ReplayAhead(std::uint64_t id, const referee::Bounty& b);
  Status PlayGame(std::uint64_t game_id, referee::Party me, Served& job, JobRun& run);
  // The disputed node of game `gv` (re-executed once), for the arbitration and the element level.
  Result<Arbitration*> ArbitrationOf(const GameView& gv, Served& job, JobRun& run);
  // kArbitration: descend to the element level where the referee would
  // accept it (verify::StartDescent), else send the node's inputs.
  Status Arbitrate(const GameView& gv, referee::Party me, Served& job, JobRun& run);
  // The element phases (kChunkRoots … kOpenElement).
  Status PlayElement(const GameView& gv, referee::Party me, Served& job, JobRun& run);
  static Result<const crypto::MerkleTree*> ChunkTreeOf(Arbitration& arb, std::uint32_t slot);
  static Result<const crypto::MerkleTree*> StateTreeOf(Arbitration& arb, const worker::Party& party);
  Status CloseMootGames(std::uint64_t id);
  // Signs and puts the bounty's note (m_notes) on our node.
  Status PublishNote(std::uint64_t bounty_id);
  // Publishes the checkpoints clients asked for, then the note naming them.
  Status ServeCheckpoints(std::uint64_t bounty_id, JobRun& run);
  // A finished run of the bounty on disk (so serving needs no training).
  bool HasCompleteRun(std::uint64_t bounty_id, const Hash256& job_hash) const;
  // Sends once per key; again only if the chain still asks after `retry_blocks`.
  Status SendOnce(const std::string& key, std::uint64_t height, referee::Method method, Bytes args,
                  std::uint64_t gas_limit = kDefaultGasLimit);
  // Publishes a blob on our node (unless withholding, TEST ONLY) and
  // returns its hash and length for the commit.
  Result<std::pair<Hash256, std::uint64_t>> Publish(const Bytes& blob, const std::string& what,
                                                    const std::string& tag);
  void Say(const std::string& line);

  AgentConfig m_config;
  crypto::SecretKey m_key;
  ChainClient m_client;
  std::vector<Served> m_jobs;
  std::map<std::uint64_t, JobRun> m_runs;                               // by bounty id
  std::map<std::uint64_t, std::unique_ptr<worker::Job>> m_bounty_jobs;  // BountyJob, by bounty id
  std::map<std::string, std::uint64_t> m_sent;                          // move key -> height sent
  std::set<std::uint64_t> m_done;  // bounties this agent has nothing more to do for
  std::set<std::string> m_said;
  std::map<std::uint64_t, SolverNote> m_notes;  // solver: the note of each bounty, as last published
  AgentTimes m_times;
};

}  // namespace vt::node
