#include "node/agent.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/encoding.h"
#include "common/log.h"
#include "crypto/sha256.h"
#include "node/blob_rules.h"
#include "node/element_moves.h"
#include "node/json_view.h"
#include "referee/blob_rules.h"
#include "referee/records.h"
#include "verify/element_game.h"
#include "verify/graph_source.h"
#include "worker/checkpoint_store.h"
#include "worker/commitment.h"
#include "worker/file_io.h"
#include "worker/log_bundle.h"
#include "worker/replay.h"
#include "worker/trainer.h"

namespace vt::node {
namespace {

using referee::GamePhase;
using referee::Method;
using referee::Party;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

constexpr std::uint64_t kRetryBlocks = 12;

}  // namespace

Agent::Agent(AgentConfig config, crypto::SecretKey key)
    : m_config(std::move(config)),
      m_key(std::move(key)),
      m_client(m_config.rpc_host, m_config.rpc_port, std::chrono::seconds(30)) {}

Agent::~Agent() = default;

void Agent::Say(const std::string& line) {
  if (!m_said.insert(line).second) return;
  log::Get(m_config.role == AgentRole::kSolver ? "solver" : "challenger").info("{}", line);
  if (m_config.on_event) m_config.on_event(line);
}

Status Agent::Init() {
  for (const auto& path : m_config.job_files) {
    VT_ASSIGN_OR_RETURN(worker::LoadedJob loaded, worker::LoadJobWithDataset(path));
    const Hash256 h = loaded.job.Hash();
    m_jobs.push_back({std::move(loaded), h});
  }
  if (m_jobs.empty()) return Status::Invalid("agent-no-jobs", "give at least one --job");
  std::filesystem::create_directories(m_config.data_dir);
  return Status::Ok();
}

Agent::Served* Agent::FindJob(const Hash256& job_hash) {
  for (Served& s : m_jobs)
    if (s.job_hash == job_hash) return &s;
  return nullptr;
}

Result<const worker::Job*> Agent::BountyJob(const referee::Bounty& b, Served& served) {
  if (auto it = m_bounty_jobs.find(b.id); it != m_bounty_jobs.end()) return it->second.get();
  auto job = std::make_unique<worker::Job>(served.loaded.job);
  job->initial_state = nullptr;
  job->init_path.clear();
  if (!b.initial_blob.IsZero()) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> blob, m_client.TryGetBlob(b.initial_blob));
    if (!blob) {
      Say("bounty " + std::to_string(b.id) + ": fetching the client's initial weights (blob " +
          b.initial_blob.Hex().substr(0, 16) + ")");
      return static_cast<const worker::Job*>(nullptr);
    }
    auto h0 = DecodeStateBlob(*blob, b.initial_state);  // the validators' own bounded check
    Status usable = h0.ok() ? worker::CheckInitialState(*job, *h0) : h0.status();
    if (!usable.ok()) {
      // The blob is what the client posted (its hash was checked): nothing to retry.
      m_done.insert(b.id);
      Say("bounty " + std::to_string(b.id) + ": its initial weights are unusable: " + usable.ToString());
      return usable;
    }
    job->initial_state = std::make_shared<const worker::TrainingState>(std::move(h0).value());
    Say("bounty " + std::to_string(b.id) + ": got the client's initial weights (" +
        std::to_string(blob->size()) + " bytes, h_0 checked)");
  } else {
    VT_ASSIGN_OR_RETURN(worker::TrainingState h0, worker::InitialStateOf(*job, m_config.threads));
    if (worker::StateHash(h0) != b.initial_state) {
      m_done.insert(b.id);
      return Status::Invalid("agent-bad-initial-state", "bounty " + std::to_string(b.id) +
                                                            " names an h_0 that is not its job's seeded init "
                                                            "and no initial blob");
    }
  }
  return m_bounty_jobs.emplace(b.id, std::move(job)).first->second.get();
}

worker::Party Agent::PartyOf(Served& job, JobRun& run) {
  worker::Party p;
  p.job = run.job;
  p.dataset = &job.loaded.dataset;
  p.states = run.dir.get();
  // Rounded mode: both sides follow the solver's logs (the solver's own run).
  if (job.loaded.job.mode() == kernels::Mode::kRounded) {
    p.logs = run.solver_logs ? run.solver_logs.get() : run.dir.get();
    p.skip_invalid_log_entries = run.solver_logs != nullptr;  // the challenger (ReplayRounded)
  }
  p.config = worker::ExecConfigFor(job.loaded.job, m_config.threads);
  p.adversary = run.adversary.get();
  return p;
}

Result<Agent::JobRun*> Agent::EnsureRun(const referee::Bounty& b, Served& job, bool cheat) {
  const std::uint64_t bounty_id = b.id;
  if (auto it = m_runs.find(bounty_id); it != m_runs.end()) return &it->second;
  JobRun run;
  VT_ASSIGN_OR_RETURN(run.job, BountyJob(b, job));
  if (run.job == nullptr) return static_cast<JobRun*>(nullptr);
  const auto dir = m_config.data_dir / ("bounty-" + std::to_string(bounty_id));
  VT_ASSIGN_OR_RETURN(worker::RunDir rd, worker::RunDir::Open(dir, true));
  run.dir = std::make_unique<worker::RunDir>(std::move(rd));
  if (cheat && m_config.adversary) {
    VT_ASSIGN_OR_RETURN(run.adversary,
                        worker::MakeAdversary(*m_config.adversary, *run.job, job.loaded.dataset));
  }
  bool complete = false;
  if (run.dir->HasManifest()) {
    VT_ASSIGN_OR_RETURN(run.manifest, run.dir->LoadManifest());
    complete = run.manifest.Complete() && run.manifest.job_hash == job.job_hash;
  }
  if (!complete) {
    worker::TrainOptions opts;
    opts.threads = m_config.threads;
    opts.resume = run.dir->HasManifest();  // a restart continues from the last checkpoint
    opts.adversary = run.adversary.get();
    if (m_config.role == AgentRole::kSolver) {
      // Progress for `vt bounty show`: at most one note a second, and the last step.
      const std::uint64_t n = job.loaded.job.spec.num_steps;
      opts.on_step = [this, bounty_id, n, started = std::chrono::steady_clock::now(),
                      first = std::uint64_t{0}, last = std::chrono::steady_clock::time_point{}](
                         std::uint64_t step, float loss) mutable {
        if (first == 0) first = step;  // resumed runs start late
        SolverNote& note = m_notes[bounty_id];
        note.bounty_id = bounty_id;
        note.step = step;
        note.num_steps = n;
        note.loss = loss;
        const double per_step = Seconds(started) / static_cast<double>(step - first + 1);
        note.eta_ms = static_cast<std::uint64_t>(per_step * static_cast<double>(n - step) * 1000.0);
        const auto now = std::chrono::steady_clock::now();
        if (step < n && now - last < std::chrono::seconds(1)) return;
        last = now;
        if (Status s = PublishNote(bounty_id); !s.ok())
          log::Get("solver").warn("bounty {}: progress note: {}", bounty_id, s.ToString());
      };
    }
    Say(std::string(m_config.role == AgentRole::kSolver ? "training" : "replaying") + " bounty " +
        std::to_string(bounty_id) + " (" + std::to_string(job.loaded.job.spec.num_steps) + " steps" +
        (run.adversary ? ", CHEATING: " + worker::DescribeAdversary(*m_config.adversary) : "") + ")");
    const auto t0 = std::chrono::steady_clock::now();
    VT_ASSIGN_OR_RETURN(worker::TrainSummary summary,
                        worker::Train(*run.job, job.loaded.dataset, run.dir->dir(), opts));
    m_times.training_s += Seconds(t0);
    run.manifest = summary.manifest;
    if (!run.manifest.Complete()) return Status::Error("agent-train-incomplete");
  }
  run.checkpoint_tree = worker::CheckpointTree(run.manifest);
  return &m_runs.emplace(bounty_id, std::move(run)).first->second;
}

Result<Agent::JobRun*> Agent::EnsureReplay(std::uint64_t bounty_id, const referee::Bounty& b, Served& job) {
  if (job.loaded.job.mode() != kernels::Mode::kRounded) return EnsureRun(b, job, false);
  if (auto it = m_runs.find(bounty_id); it != m_runs.end()) return &it->second;
  JobRun run;
  VT_ASSIGN_OR_RETURN(run.job, BountyJob(b, job));
  if (run.job == nullptr) return static_cast<JobRun*>(nullptr);
  const auto base = m_config.data_dir / ("bounty-" + std::to_string(bounty_id));
  VT_ASSIGN_OR_RETURN(worker::RunDir own, worker::RunDir::Open(base, true));
  run.dir = std::make_unique<worker::RunDir>(std::move(own));
  VT_ASSIGN_OR_RETURN(
      worker::RunDir logs,
      worker::RunDir::Open(m_config.data_dir / ("bounty-" + std::to_string(bounty_id) + "-solver-logs"),
                           true));
  run.solver_logs = std::make_unique<worker::RunDir>(std::move(logs));
  if (!run.solver_logs->HasManifest()) {
    if (b.log_bundle.IsZero())
      return Status::Invalid("agent-no-log-bundle", "the commit names no log bundle");
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> bundle, m_client.TryGetBlob(b.log_bundle));
    if (!bundle) {
      Say("bounty " + std::to_string(bounty_id) + ": fetching the solver's rounding logs (blob " +
          b.log_bundle.Hex().substr(0, 16) + ")");
      return static_cast<JobRun*>(nullptr);  // still on its way to our node; next poll
    }
    VT_TRY(worker::ImportLogBundle(*bundle, run.solver_logs->dir()).status());
    Say("bounty " + std::to_string(bounty_id) + ": got the solver's rounding logs (" +
        std::to_string(bundle->size()) + " bytes)");
  }
  bool complete = false;
  if (run.dir->HasManifest()) {
    VT_ASSIGN_OR_RETURN(run.manifest, run.dir->LoadManifest());
    complete = run.manifest.Complete() && run.manifest.job_hash == job.job_hash;
  }
  if (!complete) VT_TRY(ReplayRounded(b, job, run));
  run.checkpoint_tree = worker::CheckpointTree(run.manifest);
  return &m_runs.emplace(bounty_id, std::move(run)).first->second;
}

Status Agent::ReplayRounded(const referee::Bounty& b, Served& job, JobRun& run) {
  Say("replaying bounty " + std::to_string(b.id) + " (" + std::to_string(job.loaded.job.spec.num_steps) +
      " steps, following the solver's rounding logs)");
  const auto t0 = std::chrono::steady_clock::now();
  // Follow the solver's logs, skipping entries we must reject, all the way to
  // the end: our checkpoints are then the honest trajectory under its logs,
  // and the dispute answers (PartyOf) are computed the same way.
  worker::AuditOptions options;
  options.threads = m_config.threads;
  options.own_run_dir = run.dir->dir();
  options.skip_invalid_log_entries = true;
  options.to_the_end = true;
  VT_ASSIGN_OR_RETURN(worker::AuditReport report,
                      worker::Audit(*run.job, job.loaded.dataset, *run.solver_logs, b.commitment, options));
  m_times.training_s += Seconds(t0);
  if (report.verdict == worker::AuditVerdict::kClaimInvalid) {
    // Cannot happen on a valid chain: every validator checked, before
    // accepting the commit's block, that this bundle reproduces the signed
    // commitment (referee/blob_rules.h). So our node or our job file is not
    // the chain's; nothing here to dispute.
    m_done.insert(b.id);
    return Status::Invalid("agent-claim-invalid",
                           "bounty " + std::to_string(b.id) + ": " + report.reason + " " + report.detail);
  }
  if (!report.agree()) {
    Say("bounty " + std::to_string(b.id) + ": replay diverges at checkpoint " +
        std::to_string(report.first_divergent.value_or(0)) + " (" + report.reason + ", " +
        std::to_string(report.skipped_log_entries) + " of the solver's log entries rejected)");
  }
  VT_ASSIGN_OR_RETURN(run.manifest, run.dir->LoadManifest());
  if (!run.manifest.Complete()) return Status::Error("agent-replay-incomplete");
  return Status::Ok();
}

Status Agent::SendOnce(const std::string& key, std::uint64_t height, Method method, Bytes args,
                       std::uint64_t gas_limit) {
  if (auto it = m_sent.find(key); it != m_sent.end() && height < it->second + kRetryBlocks)
    return Status::Ok();
  auto id = m_client.CallReferee(m_key, method, std::move(args), gas_limit);
  if (!id.ok()) {
    // Rejected by the mempool (e.g. a duplicate after a restart): retry later.
    m_sent[key] = height;
    return id.status().is_invalid() ? Status::Ok() : id.status();
  }
  m_sent[key] = height;
  return Status::Ok();
}

Result<std::pair<Hash256, std::uint64_t>> Agent::Publish(const Bytes& blob, const std::string& what,
                                                         const std::string& tag) {
  if (blob.size() > referee::kMaxBlobBytes)
    return Status::Invalid("blob-too-large", what + " of " + tag + " is " + std::to_string(blob.size()) +
                                                 " bytes, above the protocol's " +
                                                 std::to_string(referee::kMaxBlobBytes));
  if (m_config.withhold_blobs) {
    const Hash256 h = crypto::Sha256Digest(blob);
    Say("WITHHOLDING " + what + " of " + tag + " (" + std::to_string(blob.size()) + " bytes, blob " +
        h.Hex().substr(0, 16) + "): named in the commit, never published");
    return std::make_pair(h, static_cast<std::uint64_t>(blob.size()));
  }
  VT_ASSIGN_OR_RETURN(Hash256 h, m_client.PutBlob(m_key, blob));
  Say("published " + what + " of " + tag + " (" + std::to_string(blob.size()) + " bytes, blob " +
      h.Hex().substr(0, 16) + ")");
  return std::make_pair(h, static_cast<std::uint64_t>(blob.size()));
}

Status Agent::Poll() {
  VT_ASSIGN_OR_RETURN(std::uint64_t height, m_client.Height());
  for (std::uint64_t id = 0;; ++id) {
    auto b = m_client.Bounty(id);
    if (!b.ok()) {
      if (b.status().reason() == "bounty-unknown") break;
      return b.status();
    }
    if (m_done.count(id)) continue;
    if (FindJob(b->job_hash) == nullptr) continue;
    if (m_config.role == AgentRole::kSolver) {
      VT_TRY(PollSolver(id, *b, height));
    } else {
      VT_TRY(PollChallenger(id, *b, height));
    }
  }
  return Status::Ok();
}

Status Agent::PollSolver(std::uint64_t id, const referee::Bounty& b, std::uint64_t height) {
  const crypto::Address me = m_key.address();
  const std::string tag = "bounty " + std::to_string(id);
  switch (b.state) {
    case referee::BountyState::kOpen:
      if (height < b.solve_deadline) {
        // Claim only what we can train: the bond is at stake once claimed.
        auto job = BountyJob(b, *FindJob(b.job_hash));
        if (!job.ok()) {
          if (!job.status().is_invalid()) return job.status();
          Say("not claiming " + tag + ": " + job.status().ToString());
          m_done.insert(id);
          return Status::Ok();
        }
        if (*job == nullptr) return Status::Ok();  // the initial weights are on their way
        Say("claiming " + tag);
        return SendOnce("claim/" + std::to_string(id), height, Method::kClaim,
                        EncodeToBytes(referee::BountyIdArgs{id}));
      }
      return Status::Ok();
    case referee::BountyState::kClaimed: {
      if (b.solver != me) {
        m_done.insert(id);
        return Status::Ok();
      }
      Served* job = FindJob(b.job_hash);
      VT_ASSIGN_OR_RETURN(JobRun * run, EnsureRun(b, *job, true));
      if (run == nullptr) return Status::Ok();
      referee::CommitArgs a;
      a.bounty_id = id;
      VT_ASSIGN_OR_RETURN(a.commitment, worker::BuildCommitment(id, job->loaded.job.spec, run->manifest));
      VT_TRY(worker::SignCommitment(a.commitment, m_key));
      a.checkpoint_top = run->checkpoint_tree.top();
      a.first_proof = run->checkpoint_tree.Prove(0);
      a.last_proof = run->checkpoint_tree.Prove(run->checkpoint_tree.leaf_count() - 1);
      // Publish the blobs first: no validator accepts the commit without them.
      // The final checkpoint (the client's model) as the file bytes on disk …
      VT_ASSIGN_OR_RETURN(Bytes state_file,
                          worker::ReadFile(run->dir->checkpoints().PathFor(a.commitment.final_state_hash)));
      VT_ASSIGN_OR_RETURN(std::tie(a.state_blob, a.state_blob_bytes),
                          Publish(state_file, "the final state", tag));
      if (job->loaded.job.mode() == kernels::Mode::kRounded) {
        // … and the rounding logs, without which challengers cannot replay.
        VT_ASSIGN_OR_RETURN(Bytes bundle, worker::ExportLogBundle(*run->dir));
        VT_ASSIGN_OR_RETURN(std::tie(a.log_bundle, a.log_bundle_bytes),
                            Publish(bundle, "the rounding logs", tag));
      }
      VT_ASSIGN_OR_RETURN(std::vector<referee::BlobRequirement> blobs, referee::BlobsOf(a));
      Say("committing " + tag + " checkpoint_root=" + a.commitment.checkpoint_root.Hex().substr(0, 16));
      return SendOnce("commit/" + std::to_string(id), height, Method::kCommit, EncodeToBytes(a),
                      kDefaultGasLimit + referee::BlobGas(blobs));
    }
    case referee::BountyState::kCommitted: {
      if (b.solver != me) {
        m_done.insert(id);
        return Status::Ok();
      }
      Served* job = FindJob(b.job_hash);
      VT_ASSIGN_OR_RETURN(JobRun * run, EnsureRun(b, *job, true));
      if (run == nullptr) return Status::Ok();
      if (Status s = ServeCheckpoints(id, *run); !s.ok()) Say(tag + ": serving checkpoints: " + s.ToString());
      VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> games, m_client.BountyGames(id));
      for (std::uint64_t g : games) VT_TRY(PlayGame(g, Party::kSolver, *job, *run));
      if (height > b.challenge_deadline && b.open_games == 0) {
        Say("finalizing " + tag);
        return SendOnce("finalize/" + std::to_string(id), height, Method::kFinalize,
                        EncodeToBytes(referee::BountyIdArgs{id}));
      }
      return Status::Ok();
    }
    case referee::BountyState::kFinalized: {
      // Still the client's to fetch checkpoints from: serve them while the
      // run is on disk (never retrain for it).
      if (b.solver != me || (!m_runs.count(id) && !HasCompleteRun(id, b.job_hash))) {
        if (b.solver == me) Say(tag + " ended: finalized");
        m_done.insert(id);
        return Status::Ok();
      }
      Say(tag + " ended: finalized; serving its checkpoints on request");
      VT_ASSIGN_OR_RETURN(JobRun * run, EnsureRun(b, *FindJob(b.job_hash), true));
      if (run == nullptr) return Status::Ok();
      if (Status s = ServeCheckpoints(id, *run); !s.ok()) Say(tag + ": serving checkpoints: " + s.ToString());
      return Status::Ok();
    }
    default:
      if (b.solver == me) Say(tag + " ended: " + std::string(BountyStateName(b.state)));
      m_done.insert(id);
      return Status::Ok();
  }
}

Status Agent::PublishNote(std::uint64_t bounty_id) {
  SolverNote& note = m_notes[bounty_id];
  const auto now_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                     std::chrono::system_clock::now().time_since_epoch())
                                                     .count());
  note.seq = std::max(now_ms, note.seq + 1);
  VT_TRY(SignSolverNote(note, m_key));
  return m_client.Call("put_solver_note", Json::array({ToHex(EncodeToBytes(note))})).status();
}

Status Agent::ServeCheckpoints(std::uint64_t bounty_id, JobRun& run) {
  VT_ASSIGN_OR_RETURN(Json board, m_client.Call("get_solver_note", Json::array({bounty_id})));
  SolverNote& note = m_notes[bounty_id];
  // Our node forgot the note (a restart) or never had it (we restarted): say it again.
  bool changed = board["note"].is_null();
  note.bounty_id = bounty_id;
  note.step = note.num_steps = run.manifest.num_steps;
  note.eta_ms = 0;
  if (!run.manifest.losses.empty()) note.loss = run.manifest.losses.back();
  const std::string tag = "bounty " + std::to_string(bounty_id);
  for (const Json& want : board["requests"]) {
    const std::uint64_t i = want.get<std::uint64_t>();
    if (i >= run.manifest.checkpoints.size()) continue;
    if (std::any_of(note.checkpoints.begin(), note.checkpoints.end(),
                    [&](const ServedCheckpoint& c) { return c.index == i; }))
      continue;
    const Hash256 h = run.manifest.checkpoints[i].state_hash;
    VT_ASSIGN_OR_RETURN(Bytes file, worker::ReadFile(run.dir->checkpoints().PathFor(h)));
    VT_ASSIGN_OR_RETURN(auto blob, Publish(file, "checkpoint " + std::to_string(i), tag));
    note.checkpoints.push_back({i, h, blob.first, blob.second, run.checkpoint_tree.Prove(i)});
    if (note.checkpoints.size() > kMaxServedCheckpoints) note.checkpoints.erase(note.checkpoints.begin());
    changed = true;
  }
  return changed ? PublishNote(bounty_id) : Status::Ok();
}

bool Agent::HasCompleteRun(std::uint64_t bounty_id, const Hash256& job_hash) const {
  auto dir = worker::RunDir::Open(m_config.data_dir / ("bounty-" + std::to_string(bounty_id)), false);
  if (!dir.ok() || !dir->HasManifest()) return false;
  auto manifest = dir->LoadManifest();
  return manifest.ok() && manifest->Complete() && manifest->job_hash == job_hash;
}

Status Agent::ReplayAhead(std::uint64_t id, const referee::Bounty& b) {
  if (b.solver == m_key.address() || m_runs.count(id)) return Status::Ok();
  Served* job = FindJob(b.job_hash);
  // Rounded mode replays follow the solver's logs, published with its commit.
  if (job->loaded.job.mode() == kernels::Mode::kRounded) return Status::Ok();
  VT_ASSIGN_OR_RETURN(JobRun * run, EnsureRun(b, *job, false));
  if (run != nullptr) Say("bounty " + std::to_string(id) + ": replayed ahead of its commitment");
  return Status::Ok();
}

Status Agent::PollChallenger(std::uint64_t id, const referee::Bounty& b, std::uint64_t height) {
  const crypto::Address me = m_key.address();
  if (b.state == referee::BountyState::kFailed) return CloseMootGames(id);
  if (b.state == referee::BountyState::kClaimed) return ReplayAhead(id, b);
  if (b.state != referee::BountyState::kCommitted) {
    if (b.state >= referee::BountyState::kFinalized) m_done.insert(id);
    return Status::Ok();
  }
  if (b.solver == me) return Status::Ok();
  Served* job = FindJob(b.job_hash);
  // Our own games first (after a restart there may be one already).
  bool have_game = false;
  VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> games, m_client.BountyGames(id));
  for (std::uint64_t gid : games) {
    VT_ASSIGN_OR_RETURN(GameView gv, m_client.Game(gid));
    if (gv.game.challenger != me) continue;
    have_game = true;
    VT_ASSIGN_OR_RETURN(JobRun * run, EnsureReplay(id, b, *job));
    if (run == nullptr) return Status::Ok();
    VT_TRY(PlayGame(gid, Party::kChallenger, *job, *run));
  }
  if (have_game || height > b.challenge_deadline) return Status::Ok();
  VT_ASSIGN_OR_RETURN(JobRun * run, EnsureReplay(id, b, *job));
  if (run == nullptr) return Status::Ok();
  if (run->checkpoint_tree.root() == b.commitment.checkpoint_root) {
    Say("bounty " + std::to_string(id) + ": replay agrees with the commitment at every checkpoint");
    m_done.insert(id);
    return Status::Ok();
  }
  Say("bounty " + std::to_string(id) + ": replay DISAGREES with the commitment; opening a dispute");
  return SendOnce(
      "open/" + std::to_string(id), height, Method::kOpenGame,
      EncodeToBytes(referee::OpenGameArgs{id, run->checkpoint_tree.root(), run->checkpoint_tree.top(),
                                          run->checkpoint_tree.Prove(0)}));
}

// The solver lost some game of the bounty: our games there are moot. Close
// them (the referee refunds the bond) — the referee does it lazily, one call
// per game.
Status Agent::CloseMootGames(std::uint64_t id) {
  VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> games, m_client.BountyGames(id));
  bool open = false;
  for (std::uint64_t gid : games) {
    VT_ASSIGN_OR_RETURN(GameView gv, m_client.Game(gid));
    if (gv.game.challenger != m_key.address() || gv.game.phase == referee::GamePhase::kResolved) continue;
    open = true;
    Say("bounty " + std::to_string(id) + ": the solver lost another game; closing game " +
        std::to_string(gid) + " (bond refunded)");
    VT_TRY(SendOnce("close/" + std::to_string(gid), gv.height, Method::kCloseGame,
                    EncodeToBytes(referee::GameIdArgs{gid})));
  }
  if (!open) m_done.insert(id);
  return Status::Ok();
}

Status Agent::PlayGame(std::uint64_t game_id, Party me, Served& job, JobRun& run) {
  VT_ASSIGN_OR_RETURN(GameView gv, m_client.Game(game_id));
  const referee::Game& g = gv.game;
  if (g.phase == GamePhase::kResolved) return Status::Ok();
  const std::string gk = "game/" + std::to_string(game_id) + "/";
  const std::uint64_t next = gv.height + 1;
  const Party other = me == Party::kSolver ? Party::kChallenger : Party::kSolver;
  const referee::Clock& theirs = g.clocks[referee::Idx(other)];
  if (theirs.owes && next > theirs.owes_since + theirs.left) {
    Say("game " + std::to_string(game_id) + ": the other side's clock ran out; claiming the timeout");
    return SendOnce(gk + "timeout", gv.height, Method::kClaimTimeout,
                    EncodeToBytes(referee::GameIdArgs{game_id}));
  }
  const worker::Party party = PartyOf(job, run);
  const protocol::JobSpec& spec = job.loaded.job.spec;
  const auto t0 = std::chrono::steady_clock::now();
  auto step_hashes = [&](std::uint64_t j) -> Result<const worker::StepHashes*> {
    if (!run.step_hashes.count(j)) {
      VT_ASSIGN_OR_RETURN(worker::StepHashes sh, worker::AnswerStepHashes(party, j));
      run.step_hashes.emplace(j, std::move(sh));
    }
    return &run.step_hashes.at(j);
  };
  auto step_records = [&](std::uint64_t t) -> Result<const worker::StepRecords*> {
    if (!run.step_records.count(t)) {
      VT_ASSIGN_OR_RETURN(worker::StepRecords sr, worker::AnswerNodeRecords(party, t));
      run.step_records.emplace(t, std::move(sr));
    }
    return &run.step_records.at(t);
  };
  Status result = Status::Ok();
  const std::string round = std::to_string(static_cast<int>(g.phase)) + "/" + std::to_string(g.rounds[0]) +
                            "." + std::to_string(g.rounds[1]) + "." + std::to_string(g.rounds[2]);
  if (g.phase == GamePhase::kArbitration) {
    result = Arbitrate(gv, me, job, run);
  } else if (g.phase >= GamePhase::kChunkRoots) {
    result = PlayElement(gv, me, job, run);
  } else if (g.clocks[referee::Idx(me)].owes) {
    const auto wp = me == Party::kSolver ? crypto::MerkleWalk::Party::kA : crypto::MerkleWalk::Party::kB;
    switch (g.phase) {
      case GamePhase::kCheckpointWalk:
      case GamePhase::kStepWalk:
      case GamePhase::kNodeWalk: {
        if (!gv.walk) return Status::Ok();
        VT_ASSIGN_OR_RETURN(crypto::MerkleWalk walk, referee::ReplayWalk(*gv.walk));
        if (walk.HasRevealed(wp)) break;
        crypto::MerkleTree tree;
        if (g.phase == GamePhase::kCheckpointWalk) {
          tree = run.checkpoint_tree;
        } else if (g.phase == GamePhase::kStepWalk) {
          VT_ASSIGN_OR_RETURN(const worker::StepHashes* sh, step_hashes(g.checkpoint_index));
          tree = crypto::MerkleTree::FromLeafHashes(sh->hashes);
        } else {
          VT_ASSIGN_OR_RETURN(const worker::StepRecords* sr, step_records(g.step));
          tree = crypto::MerkleTree::FromLeafHashes(sr->LeafHashes());
        }
        result = SendOnce(gk + "reveal/" + round, gv.height, Method::kRevealChildren,
                          EncodeToBytes(referee::RevealChildrenArgs{game_id, tree.Children(walk.current())}));
        break;
      }
      case GamePhase::kStepRoots: {
        if (g.step_posted[referee::Idx(me)]) break;
        const std::uint64_t j = g.checkpoint_index;
        VT_ASSIGN_OR_RETURN(const worker::StepHashes* sh, step_hashes(j));
        const auto tree = crypto::MerkleTree::FromLeafHashes(sh->hashes);
        referee::StepRootArgs a;
        a.game_id = game_id;
        a.root = tree.root();
        a.top = tree.top();
        a.start_state = sh->hashes.front();
        a.start_proof = run.checkpoint_tree.Prove(j - 1);
        a.first_proof = tree.Prove(0);
        a.last_proof = tree.Prove(tree.leaf_count() - 1);
        Say("game " + std::to_string(game_id) + ": first disputed checkpoint " + std::to_string(j) +
            "; posting the per-step hashes of its interval");
        result = SendOnce(gk + "steproot", gv.height, Method::kPostStepRoot, EncodeToBytes(a));
        break;
      }
      case GamePhase::kNodeRoots: {
        if (g.node_posted[referee::Idx(me)]) break;
        const std::uint64_t j = g.checkpoint_index;
        const std::uint64_t t = g.step;
        const std::uint64_t s0 = protocol::CheckpointStepAt(spec.num_steps, spec.checkpoint_interval, j - 1);
        VT_ASSIGN_OR_RETURN(const worker::StepHashes* sh, step_hashes(j));
        VT_ASSIGN_OR_RETURN(const worker::StepRecords* sr, step_records(t));
        const auto steps = crypto::MerkleTree::FromLeafHashes(sh->hashes);
        const auto nodes = crypto::MerkleTree::FromLeafHashes(sr->LeafHashes());
        referee::NodeRootArgs a;
        a.game_id = game_id;
        a.root = nodes.root();
        a.top = nodes.top();
        a.agreed_state = sr->state_hash;
        a.agreed_proof = steps.Prove(t - s0);
        a.assemble = sr->records.back();
        a.assemble_proof = nodes.Prove(nodes.leaf_count() - 1);
        Say("game " + std::to_string(game_id) + ": disputed step " + std::to_string(t) +
            "; posting the node records of that step");
        result = SendOnce(gk + "noderoot", gv.height, Method::kPostNodeRoot, EncodeToBytes(a));
        break;
      }
      case GamePhase::kRevealRecords: {
        if (g.records[referee::Idx(me)]) break;
        VT_ASSIGN_OR_RETURN(const worker::StepRecords* sr, step_records(g.step));
        if (g.node_index >= sr->records.size()) return Status::Error("agent-bad-node-index");
        Say("game " + std::to_string(game_id) + ": disputed node " + std::to_string(g.node_index) + " (" +
            (g.node_index < sr->names.size() ? sr->names[g.node_index] : std::string("assemble")) +
            ") of step " + std::to_string(g.step) + "; revealing our record");
        result = SendOnce(gk + "record", gv.height, Method::kRevealRecord,
                          EncodeToBytes(referee::RevealRecordArgs{game_id, sr->records[g.node_index]}));
        break;
      }
      default:
        break;
    }
  }
  m_times.answers_s += Seconds(t0);
  return result;
}

Result<Agent::Arbitration*> Agent::ArbitrationOf(const GameView& gv, Served& job, JobRun& run) {
  const referee::Game& g = gv.game;
  auto it = run.arbitrations.find(g.id);
  if (it != run.arbitrations.end() && it->second.step == g.step && it->second.node == g.node_index)
    return &it->second;
  const worker::Party party = PartyOf(job, run);
  Arbitration a;
  a.step = g.step;
  a.node = g.node_index;
  VT_ASSIGN_OR_RETURN(a.node_case, worker::AnswerNodeCase(party, g.step, g.node_index));
  VT_ASSIGN_OR_RETURN(worker::NodeVerdict verdict, worker::ReexecuteNode(job.loaded.job, a.node_case.inputs));
  a.right = verdict.Confirms(a.node_case.inputs.record, false);
  return &(run.arbitrations[g.id] = std::move(a));
}

Status Agent::Arbitrate(const GameView& gv, Party me, Served& job, JobRun& run) {
  const referee::Game& g = gv.game;
  const std::string gk = "game/" + std::to_string(g.id) + "/";
  // Whoever is right at the node moves (they are agreed inputs); the liar waits.
  VT_ASSIGN_OR_RETURN(Arbitration * arb, ArbitrationOf(gv, job, run));
  if (!arb->right) return Status::Ok();
  const worker::NodeInputs& inputs = arb->node_case.inputs;
  // Descend, once, where the referee accepts it (a game back from the
  // element level, or a descent the chain refused, is arbitrated whole).
  const std::string descend = gk + "descend";
  const bool refused = m_sent.count(descend) && gv.height >= m_sent[descend] + kRetryBlocks;
  if (!gv.element && !refused && g.records[0] && g.records[1]) {
    VT_ASSIGN_OR_RETURN(verify::StepGraph graph,
                        verify::KernelsGraphSource().Build(job.loaded.job.spec, g.step));
    auto start = PlanDescent(job.loaded.job.spec.mode, graph, g.node_index, *g.records[0], *g.records[1]);
    if (start.ok() && start->assemble) {
      VT_ASSIGN_OR_RETURN(const crypto::MerkleTree* tree, StateTreeOf(*arb, PartyOf(job, run)));
      Say("game " + std::to_string(g.id) + ": walking the " + std::to_string(start->chunks) +
          " leaves of h_{t+1} at step " + std::to_string(g.step));
      return SendOnce(descend, gv.height, Method::kPostChunkRoot, EncodeToBytes(ChunkRootMove(*tree, g.id)));
    }
    if (start.ok()) {
      if (!arb->side) {
        VT_ASSIGN_OR_RETURN(worker::ElementSide side, worker::ElementSideOf(arb->node_case));
        arb->side = std::move(side);
      }
      VT_ASSIGN_OR_RETURN(const crypto::MerkleTree* tree, ChunkTreeOf(*arb, start->slot));
      // Rounded mode: the node's committed log, which the descent fixes.
      VT_ASSIGN_OR_RETURN(std::optional<referee::NodeLogProof> log, NodeLogProofOf(inputs, inputs.log_chain));
      Say("game " + std::to_string(g.id) + ": descending into step " + std::to_string(g.step) + " node " +
          std::to_string(g.node_index) + " (" + inputs.node_name + ")" +
          (start->log_alone ? ": the records differ in their log hash alone, the node's log decides"
                            : ", output " + std::to_string(start->slot) + " of " +
                                  std::to_string(start->chunks) + " chunks"));
      return SendOnce(descend, gv.height, Method::kPostChunkRoot,
                      EncodeToBytes(ChunkRootMove(*tree, g.id, std::move(log))));
    }
    Say("game " + std::to_string(g.id) + ": node " + std::to_string(g.node_index) + " (" + inputs.node_name +
        ") is arbitrated whole: " + start.status().ToString());
  }
  referee::ArbitrateArgs a;
  a.game_id = g.id;
  a.node_root_of = static_cast<std::uint8_t>(me);
  a.payload = worker::EncodeArbitrationPayload(inputs);
  // Rounded mode: the node's committed log, proven up to the commitment's log root.
  a.log_proofs = inputs.log_chain;
  Say("game " + std::to_string(g.id) + ": sending the inputs of step " + std::to_string(g.step) + " node " +
      std::to_string(g.node_index) + " (" + inputs.node_name + ") for arbitration");
  return SendOnce(gk + "arbitrate", gv.height, Method::kArbitrate, EncodeToBytes(a));
}

Status Agent::PlayElement(const GameView& gv, Party me, Served& job, JobRun& run) {
  const referee::Game& g = gv.game;
  if (!gv.element) return Status::Ok();
  const referee::ElementGame& e = *gv.element;
  VT_ASSIGN_OR_RETURN(Arbitration * found, ArbitrationOf(gv, job, run));
  Arbitration& arb = *found;
  const std::size_t i = referee::Idx(me);
  const auto node_root_of = static_cast<std::uint8_t>(me);
  const std::string key = "game/" + std::to_string(g.id) + "/elem/" +
                          std::to_string(static_cast<int>(g.phase)) + "/" + std::to_string(e.rounds[0]) +
                          "." + std::to_string(e.rounds[1]);
  auto send = [&](Method method, Bytes args) { return SendOnce(key, gv.height, method, std::move(args)); };
  if (e.kind == verify::ElementKind::kState) {
    // The assemble node's walk over h_{t+1}'s leaves (verify/state_walk.h).
    VT_ASSIGN_OR_RETURN(const crypto::MerkleTree* tree, StateTreeOf(arb, PartyOf(job, run)));
    if (g.phase == GamePhase::kOpenElement) {
      if (!arb.right) return Status::Ok();
      VT_ASSIGN_OR_RETURN(referee::OpenElementArgs a,
                          OpenStateLeafMove(arb.node_case.inputs, e.chunk, g.id, node_root_of));
      Say("game " + std::to_string(g.id) + ": opening leaf " + std::to_string(e.chunk) + " of h_{t+1}");
      return send(Method::kOpenElement, EncodeToBytes(a));
    }
    if (!g.clocks[i].owes) return Status::Ok();
    if (g.phase == GamePhase::kChunkRoots && !e.chunk_posted[i])
      return send(Method::kPostChunkRoot, EncodeToBytes(ChunkRootMove(*tree, g.id)));
    if (g.phase != GamePhase::kChunkWalk || !gv.walk) return Status::Ok();
    VT_ASSIGN_OR_RETURN(crypto::MerkleWalk walk, referee::ReplayWalk(*gv.walk));
    if (walk.HasRevealed(me == Party::kSolver ? crypto::MerkleWalk::Party::kA
                                              : crypto::MerkleWalk::Party::kB))
      return Status::Ok();
    return send(Method::kRevealChildren,
                EncodeToBytes(referee::RevealChildrenArgs{g.id, tree->Children(walk.current())}));
  }
  if (!arb.side) {
    VT_ASSIGN_OR_RETURN(worker::ElementSide side, worker::ElementSideOf(arb.node_case));
    arb.side = std::move(side);
  }
  const worker::ElementSide& side = *arb.side;
  // The partial results of the disputed value, computed once.
  auto partials = [&]() -> Result<const worker::DotPartialsAnswer*> {
    if (!arb.partials) {
      VT_ASSIGN_OR_RETURN(worker::DotPartialsAnswer p,
                          worker::AnswerDotPartials(job.loaded.job.spec.mode, side, e.slot, e.value));
      arb.partials = std::move(p);
    }
    return &*arb.partials;
  };
  auto reduce_partials = [&]() -> Result<const worker::ReduceRuleAnswer*> {
    if (!arb.reduce_partials) {
      VT_ASSIGN_OR_RETURN(worker::ReduceRuleAnswer p, worker::AnswerReduceRule(job.loaded.job.spec.mode, side,
                                                                               side.attrs, e.slot, e.value));
      arb.reduce_partials = std::move(p);
    }
    return &*arb.reduce_partials;
  };
  const bool reduce = e.kind == verify::ElementKind::kReduce;
  if (g.phase == GamePhase::kOpenElement) {
    // The solver owes it; whoever is right sends it, as with an arbitration.
    if (!arb.right) return Status::Ok();
    const worker::ReduceRuleAnswer* mine = nullptr;
    if (reduce) {
      VT_ASSIGN_OR_RETURN(mine, reduce_partials());
    }
    VT_ASSIGN_OR_RETURN(referee::OpenElementArgs a, OpenElementMove(side, e, g.id, node_root_of, mine));
    Say("game " + std::to_string(g.id) + ": opening the inputs of output " + std::to_string(e.slot) +
        " value " + std::to_string(e.value));
    return send(Method::kOpenElement, EncodeToBytes(a));
  }
  if (!g.clocks[i].owes) return Status::Ok();
  switch (g.phase) {
    case GamePhase::kChunkRoots: {
      if (e.chunk_posted[i]) return Status::Ok();
      VT_ASSIGN_OR_RETURN(const crypto::MerkleTree* tree, ChunkTreeOf(arb, e.slot));
      return send(Method::kPostChunkRoot, EncodeToBytes(ChunkRootMove(*tree, g.id)));
    }
    case GamePhase::kChunkWalk:
    case GamePhase::kPartialsWalk: {
      if (!gv.walk) return Status::Ok();
      VT_ASSIGN_OR_RETURN(crypto::MerkleWalk walk, referee::ReplayWalk(*gv.walk));
      if (walk.HasRevealed(me == Party::kSolver ? crypto::MerkleWalk::Party::kA
                                                : crypto::MerkleWalk::Party::kB))
        return Status::Ok();
      const crypto::MerkleTree* tree = nullptr;
      if (g.phase == GamePhase::kChunkWalk) {
        VT_ASSIGN_OR_RETURN(tree, ChunkTreeOf(arb, e.slot));
      } else if (reduce) {
        VT_ASSIGN_OR_RETURN(const worker::ReduceRuleAnswer* p, reduce_partials());
        tree = &worker::TreeOf(*p);
      } else {
        VT_ASSIGN_OR_RETURN(const worker::DotPartialsAnswer* p, partials());
        tree = &worker::TreeOf(*p);
      }
      return send(Method::kRevealChildren,
                  EncodeToBytes(referee::RevealChildrenArgs{g.id, tree->Children(walk.current())}));
    }
    case GamePhase::kChunkReveal: {
      if (e.chunk_opening[i]) return Status::Ok();
      VT_ASSIGN_OR_RETURN(referee::RevealChunkArgs a, RevealChunkMove(side, g.id, e.slot, e.chunk));
      return send(Method::kRevealChunk, EncodeToBytes(a));
    }
    case GamePhase::kPartialsRoots: {
      if (e.partials_posted[i]) return Status::Ok();
      Say("game " + std::to_string(g.id) + ": disputed value " + std::to_string(e.value) + " of output " +
          std::to_string(e.slot) + "; posting its " + std::to_string(e.k + 1) + " partial results");
      if (reduce) {
        VT_ASSIGN_OR_RETURN(const worker::ReduceRuleAnswer* p, reduce_partials());
        return send(Method::kPostPartialsRoot, EncodeToBytes(PartialsRootMove(*p, g.id)));
      }
      VT_ASSIGN_OR_RETURN(const worker::DotPartialsAnswer* p, partials());
      return send(Method::kPostPartialsRoot, EncodeToBytes(PartialsRootMove(*p, g.id)));
    }
    case GamePhase::kStepReveal: {
      if (e.step_revealed[i]) return Status::Ok();
      if (reduce) {
        VT_ASSIGN_OR_RETURN(const worker::ReduceRuleAnswer* p, reduce_partials());
        VT_ASSIGN_OR_RETURN(referee::RevealReduceStepArgs a,
                            RevealReduceStepMove(side, *p, e, g.id, node_root_of));
        return send(Method::kRevealReduceStep, EncodeToBytes(a));
      }
      VT_ASSIGN_OR_RETURN(const worker::DotPartialsAnswer* p, partials());
      VT_ASSIGN_OR_RETURN(referee::RevealStepArgs a, RevealStepMove(side, *p, e, g.id, node_root_of));
      return send(Method::kRevealStep, EncodeToBytes(a));
    }
    default:
      return Status::Ok();
  }
}

Result<const crypto::MerkleTree*> Agent::StateTreeOf(Arbitration& arb, const worker::Party& party) {
  if (!arb.state_tree) {
    VT_ASSIGN_OR_RETURN(crypto::MerkleTree tree, worker::AnswerStateTree(party, arb.step));
    arb.state_tree = std::move(tree);
  }
  return &*arb.state_tree;
}

Result<const crypto::MerkleTree*> Agent::ChunkTreeOf(Arbitration& arb, std::uint32_t slot) {
  auto it = arb.chunk_trees.find(slot);
  if (it == arb.chunk_trees.end()) {
    VT_ASSIGN_OR_RETURN(crypto::MerkleTree tree, worker::OutputChunkTree(*arb.side, slot));
    it = arb.chunk_trees.emplace(slot, std::move(tree)).first;
  }
  return &it->second;
}

void Agent::Run(const std::atomic<bool>& stop) {
  auto& lg = log::Get(m_config.role == AgentRole::kSolver ? "solver" : "challenger");
  std::string last_error;
  while (!stop) {
    Status s = Poll();
    if (!s.ok() && s.ToString() != last_error) {
      lg.warn("poll: {} (retrying)", s.ToString());
      last_error = s.ToString();
    } else if (s.ok()) {
      last_error.clear();
    }
    for (auto waited = std::chrono::milliseconds(0); waited < m_config.poll && !stop;
         waited += std::chrono::milliseconds(25))
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

}  // namespace vt::node
