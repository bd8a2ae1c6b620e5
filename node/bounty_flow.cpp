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
                                                                      referee::RefereeParams{}.winner_share_bps,
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

Result<BountyResult> FetchBountyResult(ChainClient& c, std::uint64_t bounty_id, std::chrono::milliseconds timeout) {
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
  if (b.state_blob.IsZero())
    return Status::Invalid("result-no-state-blob", "the solver's commit of bounty " + id + " names no state blob");
  BountyResult r;
  r.bounty_id = bounty_id;
  r.bounty_state = state;
  r.blob = b.state_blob;
  r.state_hash = b.commitment.final_state_hash;
  VT_ASSIGN_OR_RETURN(protocol::JobSpec spec, c.Job(bounty_id));
  if (protocol::JobHash(spec) != b.job_hash)
    return Status::Invalid("result-bad-job", "the node's job of bounty " + id + " does not hash to its job_hash");
  VT_ASSIGN_OR_RETURN(r.job, worker::JobFromSpec(spec));
  // GetBlob checks the bytes against the blob's SHA-256; the decode checks
  // that they hold the very state the solver committed to.
  VT_ASSIGN_OR_RETURN(Bytes file, c.GetBlob(b.state_blob, timeout));
  r.blob_bytes = file.size();
  VT_ASSIGN_OR_RETURN(r.state, DecodeStateBlob(file, r.state_hash));  // the validators' own bounded check
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
    return fmt::format("bisection over the step's operator graph -> disputed OPERATOR node {}", idx);
  }
  if (topic == "game-resolved")
    return fmt::format("referee re-executed that one operator: {} ({})", d["result"].get<std::string>(),
                       d["reason"].get<std::string>());
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
