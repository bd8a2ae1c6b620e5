#include "node/bounty_flow.h"

#include <algorithm>
#include <limits>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "common/encoding.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "node/blob_rules.h"
#include "node/json_view.h"
#include "referee/blob_rules.h"
#include "referee/bonds.h"
#include "referee/records.h"
#include "referee/referee.h"
#include "worker/checkpoint_store.h"
#include "worker/state.h"
#include "worker/trainer.h"

namespace vt::node {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

fs::path FindTestnetJob(const std::string& name) {
  if (fs::exists(name)) return fs::canonical(name);
  std::error_code ec;
  const fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& base : {fs::current_path(), bin / "../../..", bin / "../.."}) {
    const fs::path p = base / "testnet" / "jobs" / name;
    if (fs::exists(p)) return fs::canonical(p);
  }
  return name;
}

Result<vm::Amount> MinimumBond(const protocol::JobSpec& job, const vm::ChainParams& params) {
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  vm::GasMeter unmetered(std::numeric_limits<std::uint64_t>::max());
  VT_ASSIGN_OR_RETURN(referee::BondTerms t, referee::ComputeBondTerms(arbiter, job, params,
                                                                      referee::RefereeParams{},
                                                                      unmetered));
  return t.minimum;
}

Result<std::uint64_t> PostBounty(ChainClient& c, const crypto::SecretKey& client, const worker::LoadedJob& job,
                                 const BountyTerms& terms, Hash256* tx_id) {
  VT_ASSIGN_OR_RETURN(worker::TrainingState h0, worker::InitialStateOf(job.job));
  referee::PostBountyArgs args;
  args.job = job.job.spec;
  args.initial_state = worker::StateHash(h0);
  args.reward = terms.reward;
  // A bond left at 0 is the job's minimum (referee/bonds.h); one set below
  // it is the referee's to refuse, with the minimum in its reason.
  VT_ASSIGN_OR_RETURN(vm::Amount minimum, MinimumBond(job.job.spec));
  args.solver_bond = terms.solver_bond != 0 ? terms.solver_bond : minimum;
  args.challenger_bond = terms.challenger_bond != 0 ? terms.challenger_bond : minimum;
  args.solve_window = terms.solve_window;
  args.challenge_window = terms.challenge_window;
  args.clock_budget = terms.clock_budget;
  if (job.job.initial_state) {
    // The client's own weights: solvers and challengers fetch them from here.
    const Bytes blob = worker::EncodeCheckpointFile(h0, args.initial_state);
    VT_ASSIGN_OR_RETURN(args.initial_blob, c.PutBlob(client, blob));
    args.initial_blob_bytes = blob.size();
  }
  // Named blobs are paid per byte (referee/blob_rules.h).
  VT_ASSIGN_OR_RETURN(std::vector<referee::BlobRequirement> blobs, referee::BlobsOf(args));
  VT_ASSIGN_OR_RETURN(Hash256 tx, c.CallReferee(client, referee::Method::kPostBounty, EncodeToBytes(args),
                                                kDefaultGasLimit + referee::BlobGas(blobs)));
  if (tx_id != nullptr) *tx_id = tx;
  VT_ASSIGN_OR_RETURN(Json r, c.WaitReceipt(tx));
  if (!r.value("success", false)) return Status::Invalid(r.value("reason", std::string("post-failed")));
  for (const Json& e : r["events"]) {
    if (e.value("topic", std::string()) == "bounty-posted" && e.contains("decoded"))
      return e["decoded"]["bounty_id"].get<std::uint64_t>();
  }
  return Status::Error("flow-no-event", "the post receipt carries no bounty-posted event");
}

Result<std::optional<SolverNote>> ReadSolverNote(ChainClient& c, const referee::Bounty& b) {
  VT_ASSIGN_OR_RETURN(Json board, c.Call("get_solver_note", Json::array({b.id})));
  if (board["note"].is_null()) return std::optional<SolverNote>();
  auto bytes = FromHex(board["note"]["encoded"].get<std::string>());
  if (!bytes.ok()) return Status::Invalid("note-bad-encoding", "the node's note is not hex");
  VT_ASSIGN_OR_RETURN(SolverNote n, DecodeExact<SolverNote>(*bytes));
  // The node checked it too; we do not take its word for it.
  VT_TRY(VerifySolverNote(n, b));
  return std::optional<SolverNote>(std::move(n));
}

namespace {

// Asks the solver (through the node) for checkpoint `index` until its note
// names it, with a proof that VerifySolverNote has checked.
Result<ServedCheckpoint> AwaitServedCheckpoint(ChainClient& c, const referee::Bounty& b, std::uint64_t index,
                                               Clock::time_point deadline, std::chrono::milliseconds timeout) {
  for (;;) {
    VT_ASSIGN_OR_RETURN(std::optional<SolverNote> note, ReadSolverNote(c, b));
    if (note)
      for (const ServedCheckpoint& s : note->checkpoints)
        if (s.index == index) return s;
    VT_TRY(c.Call("request_checkpoint", Json::array({b.id, index})).status());
    if (Clock::now() >= deadline)
      return Status::Invalid(
          "checkpoint-not-served",
          "the solver of bounty " + std::to_string(b.id) + " did not publish checkpoint " + std::to_string(index) +
              " within " + std::to_string(timeout.count() / 1000) +
              " s. Its daemon serves checkpoints on request while it runs and still has the run, through the node "
              "it talks to: try again later (--timeout), or name the solver's node (--solver-node)");
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

}  // namespace

Result<BountyResult> FetchBountyResult(ChainClient& c, std::uint64_t bounty_id, std::chrono::milliseconds timeout,
                                       std::optional<std::uint64_t> checkpoint, ChainClient* notes) {
  const auto deadline = Clock::now() + timeout;
  VT_ASSIGN_OR_RETURN(referee::Bounty b, c.Bounty(bounty_id));
  const std::string state(BountyStateName(b.state));
  const std::string id = std::to_string(bounty_id);
  if (b.state == referee::BountyState::kFailed)
    return Status::Invalid("result-bounty-failed", "bounty " + id +
                                                       " failed: its solver was caught cheating, so the state it "
                                                       "committed is not the job's result");
  if (b.state != referee::BountyState::kCommitted && b.state != referee::BountyState::kFinalized)
    return Status::Invalid("result-not-committed", "bounty " + id + " is " + state +
                                                       ": no solver has committed a result yet (follow it with "
                                                       "`vt bounty watch " + id + "`)");
  const std::uint64_t count = protocol::CheckpointCount(b.num_steps, b.checkpoint_interval);
  if (checkpoint && *checkpoint >= count)
    return Status::Invalid("checkpoint-out-of-range",
                           "bounty " + id + " committed checkpoints 0.." + std::to_string(count - 1) +
                               " (one every " + std::to_string(b.checkpoint_interval) + " of its " +
                               std::to_string(b.num_steps) + " steps; the last is the final model): pick one of those");
  BountyResult r;
  r.bounty_id = bounty_id;
  r.bounty_state = state;
  r.checkpoint = checkpoint.value_or(count - 1);
  VT_ASSIGN_OR_RETURN(protocol::JobSpec spec, c.Job(bounty_id));
  if (protocol::JobHash(spec) != b.job_hash)
    return Status::Invalid("result-bad-job", "the node's job of bounty " + id + " does not hash to its job_hash");
  VT_ASSIGN_OR_RETURN(r.job, worker::JobFromSpec(spec));
  if (r.checkpoint + 1 == count) {
    // The final state: named on chain by the commit (its availability was
    // part of the commit's block validity).
    if (b.state_blob.IsZero())
      return Status::Invalid("result-no-state-blob", "the solver's commit of bounty " + id + " names no state blob");
    r.blob = b.state_blob;
    r.state_hash = b.commitment.final_state_hash;
  } else {
    VT_ASSIGN_OR_RETURN(ServedCheckpoint served, AwaitServedCheckpoint(notes != nullptr ? *notes : c, b, r.checkpoint,
                                                                          deadline, timeout));
    r.blob = served.blob;
    r.state_hash = served.state_hash;  // a leaf proven against checkpoint_root (VerifySolverNote)
  }
  // GetBlob checks the bytes against the blob's SHA-256 (the node drops and
  // penalises a peer that serves other bytes, and asks another); the decode
  // checks that they hold the very state committed to.
  const auto left = std::max(std::chrono::milliseconds(1000),
                             std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  VT_ASSIGN_OR_RETURN(Bytes file, c.GetBlob(r.blob, left));
  r.blob_bytes = file.size();
  VT_ASSIGN_OR_RETURN(r.state, DecodeStateBlob(file, r.state_hash));  // the validators' own bounded check
  const std::uint64_t step = protocol::CheckpointStepAt(b.num_steps, b.checkpoint_interval, r.checkpoint);
  if (r.state.step != step)
    return Status::Invalid("checkpoint-wrong-step", "checkpoint " + std::to_string(r.checkpoint) + " holds step " +
                                                        std::to_string(r.state.step) + ", not " + std::to_string(step));
  return r;
}

namespace {

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The readable line of one event; empty for events the timeline skips.
std::string Describe(const std::string& topic, const Json& d) {
  if (topic == "bounty-posted") return "bounty posted";
  if (topic == "bounty-claimed") return "solver claimed it (bond locked); training off-chain";
  if (topic == "bounty-committed")
    return "solver committed (signed Merkle roots of its checkpoints); challenge window opens";
  if (topic == "game-opened")
    return fmt::format("challenger's replay disagrees: dispute game {} opened (challenger bond locked)",
                       d["game_id"].get<std::uint64_t>());
  if (topic == "walk-done") {
    const std::string level = d["level"];
    const std::uint64_t idx = d["index"];
    if (level == "checkpoint") return fmt::format("bisection over checkpoints -> first disputed checkpoint #{}", idx);
    if (level == "step") return fmt::format("bisection over the interval's steps -> disputed STEP {}", idx);
    if (level == "node") return fmt::format("bisection over the step's operator graph -> disputed OPERATOR node {}", idx);
    if (level == "chunk") return fmt::format("bisection over the operator's output chunks -> disputed chunk #{}", idx);
    return fmt::format("bisection over the value's partial sums -> disputed arithmetic step {}", idx);
  }
  if (topic == "element-disputed")
    return fmt::format("the two outputs first differ at VALUE {} of output {}", d["value"].get<std::int64_t>(),
                       d["slot"].get<std::uint64_t>());
  if (topic == "game-resolved") {
    const std::string reason = d["reason"];
    const char* what = reason == "arbitration"          ? "referee re-executed that one operator"
                       : reason.rfind("element-", 0) == 0 ? "referee re-checked that one value"
                                                          : "game decided";
    return fmt::format("{}: {} ({})", what, d["result"].get<std::string>(), reason);
  }
  if (topic == "bounty-finalized") return "bounty FINALIZED: reward and bond paid to the solver";
  if (topic == "bounty-failed") return "bounty FAILED: the solver is slashed, the reward goes back to the client";
  if (topic == "bounty-refunded") return "bounty refunded";
  return topic;
}

}  // namespace

Result<BountyTimeline> FollowBounty(ChainClient& c, std::uint64_t bounty, std::uint64_t& next_height,
                                    Clock::time_point t0, const TimelineSink& sink,
                                    std::chrono::milliseconds timeout) {
  BountyTimeline tl;
  const auto deadline = Clock::now() + timeout;
  std::set<std::uint64_t> games;
  while (Clock::now() < deadline) {
    VT_ASSIGN_OR_RETURN(Json ev, c.Call("get_events", Json{{"from_height", next_height}}));
    for (const Json& e : ev["events"]) {
      if (!e.contains("decoded")) continue;
      const Json& d = e["decoded"];
      const std::string topic = e["topic"];
      const std::uint64_t h = e["height"];
      if (d.contains("bounty_id") && d["bounty_id"].get<std::uint64_t>() != bounty) continue;
      if (topic == "game-opened") games.insert(d["game_id"].get<std::uint64_t>());
      if (d.contains("game_id") && !games.count(d["game_id"].get<std::uint64_t>())) continue;
      const double at = Since(t0);
      if (topic == "bounty-posted") tl.posted = at;
      if (topic == "bounty-claimed") tl.claimed = at;
      if (topic == "bounty-committed") tl.committed = at;
      if (topic == "game-opened" && tl.opened < 0) tl.opened = at;
      if (topic == "game-resolved" && tl.resolved < 0) {
        tl.resolved = at;
        tl.game_result = d["result"].get<std::string>();
        tl.game_reason = d["reason"].get<std::string>();
      }
      if (sink) sink(at, h, Describe(topic, d));
      if (topic == "bounty-finalized" || topic == "bounty-failed" || topic == "bounty-refunded") {
        tl.ended = at;
        tl.outcome = topic.substr(std::string("bounty-").size());
        next_height = h + 1;
        return tl;
      }
    }
    next_height = ev["next_height"].get<std::uint64_t>();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Error("flow-timeout", "bounty " + std::to_string(bounty) + " did not end in time");
}

}  // namespace vt::node
