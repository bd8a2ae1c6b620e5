// vt bounty post|show|list|watch|result.
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "common/cli_number.h"
#include "node/bin/vt/vt_cli.h"
#include "node/bounty_flow.h"
#include "node/solver_note_rpc.h"
#include "worker/model_weights.h"
#include "worker/safetensors.h"

namespace vt::cli {

namespace fs = std::filesystem;

namespace {

struct BountyOptions {
  std::string from, job_file, init, out;
  std::string solver_node;  // --solver-node: where the solver's notes are, if not --rpc
  std::uint64_t id = 0;
  node::BountyTerms terms{1'000'000, 0, 0, 400, 40, 40};  // bonds 0: the job's minimum
  std::uint64_t watch_timeout_s = 600;
  std::uint64_t fetch_timeout_s = 120;
  std::optional<std::uint64_t> checkpoint;  // --checkpoint: an earlier committed state
};

std::string BountyLine(const Json& b) {
  return "bounty " + std::to_string(b["id"].get<std::uint64_t>()) + "  " + b["state"].get<std::string>() +
         "  reward " + std::to_string(b["reward"].get<std::uint64_t>()) + "  steps " +
         std::to_string(b["num_steps"].get<std::uint64_t>()) + "  mode " + b["mode"].get<std::string>() +
         "  games " + std::to_string(b["games"].size()) + "\n";
}

int Post(Globals& g, const BountyOptions& o) {
  // The job first: its mistakes are the likeliest and need no key or node.
  auto loaded = worker::LoadJobWithDataset(o.job_file);
  if (!loaded.ok()) return Fail(g, loaded.status().WithContext("job " + o.job_file));
  if (!o.init.empty())
    if (Status s = worker::LoadInitialWeights(loaded->job, o.init); !s.ok()) return Fail(g, s);
  auto key = LoadKey(g, o.from);
  if (!key.ok()) return Fail(g, key.status());
  auto c = Client(g);
  if (!c.ok()) return Fail(g, c.status());
  Hash256 tx;
  auto id = node::PostBounty(*c, *key, *loaded, o.terms, &tx);
  if (!id.ok()) return Fail(g, id.status().WithContext("post-bounty"));
  auto b = c->Bounty(*id);
  if (!b.ok()) return Fail(g, b.status());
  Json out{{"bounty_id", *id}, {"tx_id", tx.Hex()}, {"job_hash", loaded->job.Hash().Hex()},
           {"initial_state", b->initial_state.Hex()}};
  std::string human = "posted bounty " + std::to_string(*id) + " (job " + loaded->job.Hash().Hex().substr(0, 16) + ")";
  if (!b->initial_blob.IsZero()) {
    out["initial_blob"] = b->initial_blob.Hex();
    human += ", starting from the given weights (h_0 " + b->initial_state.Hex().substr(0, 16) + ")";
  }
  Print(g, out, human + "\n");
  return 0;
}

// --solver-node: where the solver's notes are, when not the --rpc node.
Result<std::optional<node::ChainClient>> SolverNodeClient(const BountyOptions& o) {
  if (o.solver_node.empty()) return std::optional<node::ChainClient>();
  auto ep = net::Endpoint::Parse(o.solver_node);
  if (!ep.ok()) return ep.status().WithContext("--solver-node");
  return std::optional<node::ChainClient>(std::in_place, ep->host, ep->port, std::chrono::seconds(30));
}

int WriteResult(Globals& g, const BountyOptions& o) {
  auto c = Client(g);
  if (!c.ok()) return Fail(g, c.status());
  auto notes = SolverNodeClient(o);
  if (!notes.ok()) return Fail(g, notes.status());
  auto r = node::FetchBountyResult(*c, o.id, std::chrono::seconds(o.fetch_timeout_s), o.checkpoint,
                                   *notes ? &**notes : nullptr);
  if (!r.ok()) return Fail(g, r.status());
  auto tensors = worker::ModelWeightsForTorch(r->job.model, r->state);
  if (!tensors.ok()) return Fail(g, tensors.status());
  auto meta = worker::WeightsMetadata(r->job.Hash(), r->state_hash, r->state.step, o.id);
  meta["veritrain.checkpoint"] = std::to_string(r->checkpoint);
  if (Status s = worker::SaveSafetensors(o.out, *tensors, meta); !s.ok()) return Fail(g, s);
  std::uint64_t values = 0;
  for (const auto& [name, t] : *tensors) values += static_cast<std::uint64_t>(t.numel());
  Json out{{"bounty_id", o.id},          {"bounty_state", r->bounty_state}, {"out", o.out},
           {"state_hash", r->state_hash.Hex()}, {"step", r->state.step},      {"job_hash", r->job.Hash().Hex()},
           {"blob", r->blob.Hex()},      {"blob_bytes", r->blob_bytes},     {"tensors", tensors->size()},
           {"values", values},           {"checkpoint", r->checkpoint}};
  std::string human = "wrote " + o.out + ": " + std::to_string(tensors->size()) + " tensors (" +
                      std::to_string(values) + " values) of checkpoint " + std::to_string(r->checkpoint) +
                      " (step " + std::to_string(r->state.step) + "), state " + r->state_hash.Hex().substr(0, 16) +
                      (r->checkpoint + 1 == protocol::CheckpointCount(r->job.spec.num_steps,
                                                                      r->job.spec.checkpoint_interval)
                           ? " (checked against the committed final state)\n"
                           : " (its leaf and Merkle proof checked against the committed checkpoint root)\n");
  if (r->bounty_state != "finalized")
    human += "note: bounty " + std::to_string(o.id) + " is " + r->bounty_state +
             ", not finalized: a challenger may still dispute this result\n";
  Print(g, out, human);
  return 0;
}

std::string Seconds(std::uint64_t ms) {
  if (ms < 120'000) return std::to_string((ms + 500) / 1000) + " s";
  return std::to_string((ms + 30'000) / 60'000) + " min";
}

// The solver's own account of its run (node/solver_note.h): signed by the
// bounty's solver and checked here, but what it says about progress is its
// word, not the chain's.
std::string ProgressLine(const node::SolverNote& n, const std::string& state) {
  const auto now_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  char loss[32];
  std::snprintf(loss, sizeof loss, "%.4f", static_cast<double>(n.loss));
  std::string line = "solver progress: step " + std::to_string(n.step) + "/" + std::to_string(n.num_steps) +
                     ", loss " + loss;
  if (n.step < n.num_steps && state == "claimed") line += ", ETA " + Seconds(n.eta_ms);
  if (now_ms > n.seq) line += " (reported " + Seconds(now_ms - n.seq) + " ago)";
  if (!n.checkpoints.empty()) {
    line += "; serves checkpoints";
    for (const auto& c : n.checkpoints) line += " " + std::to_string(c.index);
  }
  return line + "\n";
}

int Show(Globals& g, const BountyOptions& o) {
  auto c = Client(g);
  if (!c.ok()) return Fail(g, c.status());
  auto b = c->Call("get_bounty", Json::array({o.id}));
  if (!b.ok()) return Fail(g, b.status());
  b->erase("encoded");
  std::string progress;
  const std::string state = (*b)["state"];
  auto record = c->Bounty(o.id);
  if (!record.ok()) return Fail(g, record.status());
  auto solver_node = SolverNodeClient(o);
  if (!solver_node.ok()) return Fail(g, solver_node.status());
  if (auto note = node::ReadSolverNote(*solver_node ? **solver_node : *c, *record); note.ok() && *note) {
    (*b)["progress"] = node::SolverNoteJson(**note);
    (*b)["progress"].erase("encoded");
    progress = ProgressLine(**note, state);
  } else if (!note.ok()) {
    progress = "solver progress: the node's note is unusable: " + note.status().ToString() + "\n";
  } else if (state == "claimed") {
    progress = "solver progress: none published on this node yet (the solver's daemon publishes to the node it "
               "talks to: name that one with --solver-node)\n";
  }
  Print(g, *b, BountyLine(*b) + progress + b->dump(2) + "\n");
  return 0;
}

int Watch(Globals& g, const BountyOptions& o) {
  auto c = Client(g);
  if (!c.ok()) return Fail(g, c.status());
  std::uint64_t next = 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.watch_timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    auto ev = c->Call("get_events", Json{{"from_height", next}});
    if (ev.ok()) {
      for (const auto& e : (*ev)["events"]) {
        if (!e.contains("decoded")) continue;
        const auto& d = e["decoded"];
        if (d.contains("bounty_id") && d["bounty_id"].get<std::uint64_t>() != o.id) continue;
        if (g.json)
          std::cout << e.dump() << "\n";
        else
          std::cout << "block " << e["height"] << "  " << e["topic"].get<std::string>() << "  " << d.dump() << "\n";
      }
      next = (*ev)["next_height"].get<std::uint64_t>();
    }
    auto b = c->Call("get_bounty", Json::array({o.id}));
    if (b.ok()) {
      const std::string st = (*b)["state"];
      if (st == "finalized" || st == "failed" || st == "refunded") {
        if (!g.json) std::cout << "bounty " << o.id << " " << st << "\n";
        return 0;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return Fail(g, Status::Error("watch-timeout", "bounty " + std::to_string(o.id) + " did not end within " +
                                                    std::to_string(o.watch_timeout_s) + " s (--timeout)"));
}

}  // namespace

void AddBountyCommands(CLI::App& app, Globals& g) {
  auto* bounty = app.add_subcommand("bounty", "training bounties")->require_subcommand(1);
  auto o = std::make_shared<BountyOptions>();
  const auto max_window = std::uint64_t{1} << 32;

  auto* post = bounty->add_subcommand("post", "post a bounty for a job file");
  post->add_option("--from", o->from, "client key")->required();
  post->add_option("--job", o->job_file, "job file (JSON)")->required()->check(CLI::ExistingFile);
  post->add_option("--init", o->init, "start from these weights (safetensors, e.g. from `vt bounty result`)")
      ->check(CLI::ExistingFile);
  AddNumber(post, "--reward", o->terms.reward, "reward", std::uint64_t{1})->capture_default_str();
  AddNumber(post, "--solver-bond", o->terms.solver_bond, "solver bond (default: the job's minimum)", std::uint64_t{1});
  AddNumber(post, "--challenger-bond", o->terms.challenger_bond, "challenger bond (default: the job's minimum)",
            std::uint64_t{1});
  AddNumber(post, "--solve-window", o->terms.solve_window, "blocks to claim and commit", std::uint64_t{1}, max_window)
      ->capture_default_str();
  AddNumber(post, "--challenge-window", o->terms.challenge_window, "blocks to open disputes", std::uint64_t{1},
            max_window)
      ->capture_default_str();
  AddNumber(post, "--clock-budget", o->terms.clock_budget, "blocks on each chess clock", std::uint64_t{1}, max_window)
      ->capture_default_str();
  post->callback(Runs(g, [&g, o] { return Post(g, *o); }));

  auto* show = bounty->add_subcommand("show", "show a bounty");
  AddNumber(show, "id", o->id, "bounty id")->required();
  show->add_option("--solver-node", o->solver_node,
                   "HOST:PORT of the node the solver's daemon talks to, when not --rpc (for its progress)");
  show->callback(Runs(g, [&g, o] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    return Show(g, *o);
  }));

  auto* list = bounty->add_subcommand("list", "list bounties");
  list->callback(Runs(g, [&g] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto r = c->Call("list_bounties", Json::object());
    if (!r.ok()) return Fail(g, r.status());
    std::string human;
    for (const auto& b : (*r)["bounties"]) human += BountyLine(b);
    Print(g, *r, human.empty() ? "no bounties\n" : human);
    return 0;
  }));

  auto* watch = bounty->add_subcommand("watch", "follow a bounty's events until it ends");
  AddNumber(watch, "id", o->id, "bounty id")->required();
  AddNumber(watch, "--timeout", o->watch_timeout_s, "seconds", std::uint64_t{1}, std::uint64_t{86'400 * 365})
      ->capture_default_str();
  watch->callback(Runs(g, [&g, o] { return Watch(g, *o); }));

  auto* result = bounty->add_subcommand(
      "result", "fetch the trained model of a committed bounty, check it against the commitment, write safetensors");
  AddNumber(result, "id", o->id, "bounty id")->required();
  result->add_option("--out", o->out, "output .safetensors file")->required();
  AddNumber(result, "--timeout", o->fetch_timeout_s, "seconds to wait for the blob", std::uint64_t{1},
            std::uint64_t{86'400})
      ->capture_default_str();
  AddNumber(result, "--checkpoint", o->checkpoint,
            "an earlier committed checkpoint, 0 (h_0) .. the last (the final model); the solver publishes it on "
            "request",
            std::uint64_t{0});
  result->add_option("--solver-node", o->solver_node,
                     "HOST:PORT of the node the solver's daemon talks to, when not --rpc (for --checkpoint)");
  result->callback(Runs(g, [&g, o] { return WriteResult(g, *o); }));
}

}  // namespace vt::cli
