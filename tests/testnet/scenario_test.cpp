// End-to-end flows on a multi-process testnet (label testnet): an honest
// solver daemon is paid; a cheating one is caught by the challenger daemon
// at the exact step, operator and output value and slashed — while,
// mid-dispute, the solver daemon is killed (kill -9) and restarted and a
// validator is killed and restarted; the restarted solver still answers
// before its clock runs out.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "node/bounty_flow.h"
#include "tests/support/test_seed.h"
#include "tests/testnet/testnet_util.h"
#include "verify/graph_source.h"
#include "worker/adversary.h"
#include "worker/commitment.h"
#include "worker/job.h"
#include "worker/trainer.h"

#ifndef VT_SOURCE_DIR
#error "VT_SOURCE_DIR must name the repository root"
#endif

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// Short windows: a challenge window of 20 blocks (4 s), 40 blocks on each
// clock. A repops challenger has replayed before the commit lands (it
// replays while the solver trains); a rounded one replays only then,
// following the solver's logs, so the window must hold that replay on a
// loaded 2-core machine.
const node::BountyTerms kTerms{1'000'000, 3'000'000, 2'000'000, 300, 20, 40};

// The solver daemon's arguments: polling every 100 ms, cheating (TEST ONLY) when named.
std::vector<std::string> SolverArgs(const std::string& adversary = "") {
  std::vector<std::string> args{"--poll-ms", "100"};
  if (!adversary.empty()) args.insert(args.end(), {"--adversary", adversary});
  return args;
}

// Both daemons polling every 100 ms; the testnet up.
testing::AssertionResult UpWithDaemons(ScopedTestnet& t) {
  if (!t.ok()) return testing::AssertionFailure() << "no testnet";
  t.net().SetWorkerArgs("solver", SolverArgs());
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  if (Status s = t.net().Up(); !s.ok()) return testing::AssertionFailure() << s.ToString();
  return testing::AssertionSuccess();
}

// What a test drives the testnet with: its first job loaded with its
// dataset, an RPC client of validator v0, and the client's key (SessionOn).
struct Session {
  worker::LoadedJob job;
  node::ChainClient rpc;
  crypto::SecretKey client;
};

Result<Session> SessionOn(ScopedTestnet& t) {
  VT_ASSIGN_OR_RETURN(worker::LoadedJob job, worker::LoadJobWithDataset(t.net().spec().jobs.front()));
  VT_ASSIGN_OR_RETURN(crypto::SecretKey client, t.net().Key("client"));
  return Session{std::move(job), t.Client("v0"), std::move(client)};
}

// The testnet up with both daemons (UpWithDaemons), and a Session on it.
Result<Session> UpWithSession(ScopedTestnet& t) {
  if (testing::AssertionResult up = UpWithDaemons(t); !up)
    return Status::Invalid("testnet-down", up.message());
  return SessionOn(t);
}

// The solver daemon restarted as a cheater.
testing::AssertionResult RestartSolverCheating(ScopedTestnet& t, const std::string& adversary) {
  t.net().SetWorkerArgs("solver", SolverArgs(adversary));
  if (Status s = t.net().Stop("solver"); !s.ok()) return testing::AssertionFailure() << s.ToString();
  if (Status s = t.net().Start("solver"); !s.ok()) return testing::AssertionFailure() << s.ToString();
  return testing::AssertionSuccess();
}

// A one-value cheat (wrong-value): the solver daemon adds 1 to value
// `element` of output `slot` of node `node` at step `step`.
struct OneValueCheat {
  std::uint64_t step = 0, node = 0, slot = 0, element = 0;
  std::string Adversary() const {
    return "wrong-value:step=" + std::to_string(step) + ",node=" + std::to_string(node) +
           ",slot=" + std::to_string(slot) + ",element=" + std::to_string(element);
  }
};

// A random value of output `slot` of node `node` at `step`.
OneValueCheat RandomValueOf(const verify::StepGraph& graph, std::uint64_t step, std::uint64_t node,
                            std::uint64_t slot, std::mt19937_64& rng) {
  std::uint64_t numel = 1;
  for (std::int64_t d : graph.nodes.at(node).output_shapes.at(slot)) numel *= static_cast<std::uint64_t>(d);
  return OneValueCheat{step, node, slot, rng() % numel};
}

// A one-value cheat in output `slot` of the node named `target`, at a
// random step (neither the first nor the last) and value, drawn again until
// `keep` accepts it (Invalid after 16 draws).
Result<OneValueCheat> DrawCheat(
    const worker::LoadedJob& job, const std::string& target, std::uint64_t slot, std::mt19937_64& rng,
    const std::function<bool(const verify::StepGraph&, const OneValueCheat&)>& keep) {
  const std::uint64_t step = 1 + rng() % (job.job.spec.num_steps - 2);
  VT_ASSIGN_OR_RETURN(verify::StepGraph graph, verify::KernelsGraphSource().Build(job.job.spec, step));
  VT_ASSIGN_OR_RETURN(const std::uint64_t node, NodeNamed(job, step, target));
  for (int draw = 0; draw < 16; ++draw) {
    const OneValueCheat cheat = RandomValueOf(graph, step, node, slot, rng);
    if (keep(graph, cheat)) return cheat;
  }
  return Status::Invalid("no-cheat", target + ": no value the test wants in 16 draws");
}

// Posts bounty `bounty` and waits until it fails or finalizes: its state.
std::string PostAndSettle(node::ChainClient& c, const crypto::SecretKey& client, const worker::LoadedJob& job,
                          const node::BountyTerms& terms, std::uint64_t bounty,
                          std::chrono::seconds timeout) {
  auto id = node::PostBounty(c, client, job, terms);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  if (!id.ok()) return "";
  EXPECT_EQ(*id, bounty);
  std::string state;
  EXPECT_TRUE(WaitFor(
      [&] {
        state = BountyState(c, bounty).value_or("");
        return state == "failed" || state == "finalized";
      },
      timeout))
      << "bounty " << bounty << ": " << state;
  return state;
}

// The game over a caught cheat: the challenger won at its step and node;
// at the element level the element-disputed event names its slot and value;
// every move's transaction is within 64 KiB. Returns the verdict's reason
// and the largest transaction.
struct CaughtGame {
  std::string reason;
  std::uint64_t largest = 0;
  bool arbitrated_whole = false;
};
CaughtGame ExpectCaughtAt(node::ChainClient& c, std::uint64_t gid, const OneValueCheat& cheat) {
  CaughtGame out;
  auto game = c.Call("get_dispute", Json::array({gid}));
  EXPECT_TRUE(game.ok());
  if (!game.ok()) return out;
  EXPECT_EQ((*game)["result"], "challenger-won");
  EXPECT_EQ((*game)["step"], cheat.step);
  EXPECT_EQ((*game)["node_index"], cheat.node);
  out.reason = (*game)["reason"];
  if (out.reason.rfind("element-", 0) == 0) {
    auto disputed = c.Call("get_events", Json::array({1, 1000, "element-disputed"}));
    EXPECT_TRUE(disputed.ok());
    bool found = false;
    for (const Json& e : disputed.ok() ? (*disputed)["events"] : Json::array()) {
      if (e["decoded"]["game_id"] != gid) continue;
      found = true;
      EXPECT_EQ(e["decoded"]["slot"], cheat.slot);
      EXPECT_EQ(e["decoded"]["value"], static_cast<std::int64_t>(cheat.element));
    }
    EXPECT_TRUE(found) << "the element level was played without naming its value";
  } else {
    EXPECT_EQ(out.reason, "arbitration");
  }
  auto moves = c.Call("get_game_moves", Json::array({gid}));
  EXPECT_TRUE(moves.ok()) << moves.status().ToString();
  for (const Json& m : moves.ok() ? (*moves)["moves"] : Json::array()) {
    out.largest = std::max(out.largest, m["bytes"].get<std::uint64_t>());
    out.arbitrated_whole = out.arbitrated_whole || m["method"] == "arbitrate";
    EXPECT_LE(m["bytes"].get<std::uint64_t>(), 64u * 1024) << m.dump();
  }
  return out;
}

// Restarts the solver daemon with `cheat`, posts bounty `bounty` with
// `terms` and checks that it failed over one game, decided at the element
// level at the cheat's value (ExpectCaughtAt) without arbitrating the node
// whole.
CaughtGame ExpectSettledAtItsValue(ScopedTestnet& t, node::ChainClient& c, const crypto::SecretKey& client,
                                   const worker::LoadedJob& job, const node::BountyTerms& terms,
                                   std::uint64_t bounty, const OneValueCheat& cheat,
                                   std::chrono::seconds timeout) {
  CaughtGame out;
  EXPECT_TRUE(RestartSolverCheating(t, cheat.Adversary()));
  EXPECT_EQ(PostAndSettle(c, client, job, terms, bounty, timeout), "failed") << "the cheat was not caught";
  auto games = c.BountyGames(bounty);
  EXPECT_TRUE(games.ok() && games->size() == 1u) << "one game over the bounty";
  if (!games.ok() || games->size() != 1u) return out;
  out = ExpectCaughtAt(c, games->front(), cheat);
  EXPECT_EQ(out.reason.rfind("element-", 0), 0u) << out.reason;
  EXPECT_FALSE(out.arbitrated_whole) << "the node was arbitrated whole";
  return out;
}

// ExpectSettledAtItsValue with both bonds at the job's minimum, and that
// minimum gone from the solver's balance.
CaughtGame ExpectSlashedAtItsValue(ScopedTestnet& t, node::ChainClient& c, const crypto::SecretKey& client,
                                   const crypto::Address& solver, const worker::LoadedJob& job,
                                   std::uint64_t bounty, const OneValueCheat& cheat,
                                   std::chrono::seconds timeout) {
  const auto bond = node::MinimumBond(job.job.spec);
  EXPECT_TRUE(bond.ok()) << bond.status().ToString();
  const vm::Amount before = c.Account(solver)->balance;
  const node::BountyTerms terms{1'000'000, 0, 0, 300, 12, 40};  // bonds: the job's minimum
  const CaughtGame g = ExpectSettledAtItsValue(t, c, client, job, terms, bounty, cheat, timeout);
  EXPECT_LE(c.Account(solver)->balance + bond.value_or(0), before) << "the solver's bond is slashed";
  return g;
}

// One line per caught cheat, for the test's log.
void Report(const char* tag, const std::string& target, const OneValueCheat& cheat, const CaughtGame& g) {
  std::printf(
      "[ %s ] %s slot %llu: caught at step %llu node %llu value %llu by %s; largest game transaction %llu "
      "B\n",
      tag, target.c_str(), static_cast<unsigned long long>(cheat.slot),
      static_cast<unsigned long long>(cheat.step), static_cast<unsigned long long>(cheat.node),
      static_cast<unsigned long long>(cheat.element), g.reason.c_str(),
      static_cast<unsigned long long>(g.largest));
}

// An output of a node named in the model's step graph: (node name, output slot).
using NamedOutput = std::pair<std::string, std::uint64_t>;
// Which drawn cheats a test keeps (DrawCheat), knowing the job and the target.
using KeepCheat = std::function<bool(const worker::LoadedJob&, const NamedOutput&, const verify::StepGraph&,
                                     const OneValueCheat&)>;

// Brings the testnet up with its job, then posts one bounty per target, the
// solver daemon cheating at one value of it (drawn at a random step and
// value until `keep` accepts it), and expects each cheat settled at its value
// and the solver slashed (ExpectSlashedAtItsValue); a log line each (`tag`).
void ExpectNamedCheatsSettled(ScopedTestnet& t, const char* tag, std::span<const NamedOutput> targets,
                              std::chrono::seconds timeout, const KeepCheat& keep) {
  auto session = UpWithSession(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto solver = t.net().Key("solver");
  ASSERT_TRUE(solver.ok());
  std::mt19937_64 rng(TestSeed());
  for (std::uint64_t bounty = 0; bounty < targets.size(); ++bounty) {
    const NamedOutput& target = targets[bounty];
    auto drawn = DrawCheat(session->job, target.first, target.second, rng,
                           [&](const verify::StepGraph& graph, const OneValueCheat& v) {
                             return keep(session->job, target, graph, v);
                           });
    ASSERT_TRUE(drawn.ok()) << drawn.status().ToString();
    SCOPED_TRACE(drawn->Adversary());
    const CaughtGame g = ExpectSlashedAtItsValue(t, session->rpc, session->client, solver->address(),
                                                 session->job, bounty, *drawn, timeout);
    Report(tag, target.first, *drawn, g);
  }
}

TEST(TestnetScenario, HonestPaidThenCheaterCaughtAcrossDaemonAndValidatorRestarts) {
  ScopedTestnet t("scenario",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp.json", 4));
  auto session = UpWithSession(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto solver = t.net().Key("solver");
  ASSERT_TRUE(solver.ok());
  auto post = [&] {
    auto id = node::PostBounty(session->rpc, session->client, session->job, kTerms);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  };

  // 1. Honest: finalized, the solver earns the reward.
  const vm::Amount solver_before = session->rpc.Account(solver->address())->balance;
  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(session->rpc, 0).value_or("") == "finalized"; }, 60s))
      << "honest bounty: " << BountyState(session->rpc, 0).value_or("?");
  const vm::Amount solver_after = session->rpc.Account(solver->address())->balance;
  EXPECT_GT(solver_after, solver_before + 900'000) << "reward paid (minus fees)";

  // 2. Cheating: wrong output of node 1 at step 5.
  ASSERT_TRUE(RestartSolverCheating(t, "wrong-output:step=5,node=1"));
  post();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto b = session->rpc.Call("get_bounty", Json::array({1}));
        return b.ok() && !(*b)["games"].empty();
      },
      60s))
      << "no dispute opened";
  // Mid-dispute: kill -9 the solver daemon and a validator, then restart both.
  ASSERT_TRUE(t.net().Kill("solver").ok());
  ASSERT_TRUE(t.net().Kill("v2").ok());
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(t.net().Start("solver").ok());
  ASSERT_TRUE(t.net().Start("v2").ok());
  EXPECT_TRUE(WaitFor([&] { return BountyState(session->rpc, 1).value_or("") == "failed"; }, 90s))
      << "cheating bounty: " << BountyState(session->rpc, 1).value_or("?");
  auto game = session->rpc.Call("get_dispute", Json::array({0}));
  ASSERT_TRUE(game.ok());
  EXPECT_EQ((*game)["result"], "challenger-won");
  // Node 1 (relu) has the pointwise rule: the honest challenger daemon
  // descends into its output and the referee re-executes one value.
  EXPECT_EQ((*game)["reason"], "element-reexecuted") << "decided by re-executing one value, not by a timeout";
  EXPECT_EQ((*game)["step"], 5u);
  EXPECT_EQ((*game)["node_index"], 1u);
  auto disputed = session->rpc.Call("get_events", Json::array({1, 1000, "element-disputed"}));
  ASSERT_TRUE(disputed.ok()) << disputed.status().ToString();
  ASSERT_EQ((*disputed)["events"].size(), 1u) << disputed->dump();
  const Json& value = (*disputed)["events"][0]["decoded"];
  EXPECT_EQ(value["game_id"], 0u);
  EXPECT_EQ(value["slot"], 0u);
  EXPECT_EQ(value["value"], 0) << "every value is off by one: the walk ends at the first";
  // Every move of the game fits a 64 KiB transaction, the element level's included.
  auto moves = session->rpc.Call("get_game_moves", Json::array({0}));
  ASSERT_TRUE(moves.ok()) << moves.status().ToString();
  std::set<std::string> methods;
  for (const Json& m : (*moves)["moves"]) {
    EXPECT_LE(m["bytes"].get<std::uint64_t>(), 64u * 1024) << m.dump();
    if (m["success"].get<bool>()) methods.insert(m["method"].get<std::string>());
  }
  for (const char* m : {"post-chunk-root", "reveal-chunk", "open-element"})
    EXPECT_TRUE(methods.count(m)) << m;
  EXPECT_FALSE(methods.count("arbitrate")) << "the node's inputs never travel whole";
  // The restarted validator is on the same chain.
  auto c2 = t.Client("v2");
  const std::uint64_t h = *HeightOf(session->rpc);
  ASSERT_TRUE(c2.WaitHeight(h, 30s).ok());
  EXPECT_EQ(BlockHashAt(c2, h - 1), BlockHashAt(session->rpc, h - 1));

  // 3. Cheating in a dot-rule output: the last linear layer's backward (dx,
  // read from no batch), so both daemons post the disputed value's partial
  // sums; they agree, and the epilogue decides.
  auto graph = verify::KernelsGraphSource().Build(session->job.job.spec, 6);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  std::optional<std::uint64_t> dot_node;
  for (std::uint64_t i = 0; i < graph->nodes.size(); ++i) {
    const verify::NodeSpec& n = graph->nodes[i];
    const bool batch = std::any_of(n.inputs.begin(), n.inputs.end(), [](const protocol::InputRef& r) {
      return r.source == protocol::InputSource::kBatch;
    });
    if (n.op_kind == static_cast<std::uint16_t>(kernels::OpKind::kLinearBackward) && !batch) dot_node = i;
  }
  ASSERT_TRUE(dot_node.has_value());
  ASSERT_TRUE(RestartSolverCheating(t, "wrong-output:step=6,node=" + std::to_string(*dot_node)));
  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(session->rpc, 2).value_or("") == "failed"; }, 90s))
      << "cheating bounty: " << BountyState(session->rpc, 2).value_or("?");
  auto games = session->rpc.BountyGames(2);
  ASSERT_TRUE(games.ok() && games->size() == 1u);
  const std::uint64_t dot_game = games->front();
  game = session->rpc.Call("get_dispute", Json::array({dot_game}));
  ASSERT_TRUE(game.ok());
  EXPECT_EQ((*game)["result"], "challenger-won");
  EXPECT_EQ((*game)["reason"], "element-epilogue");
  EXPECT_EQ((*game)["step"], 6u);
  EXPECT_EQ((*game)["node_index"], *dot_node);
  moves = session->rpc.Call("get_game_moves", Json::array({dot_game}));
  ASSERT_TRUE(moves.ok()) << moves.status().ToString();
  std::size_t partials = 0;
  for (const Json& m : (*moves)["moves"]) {
    EXPECT_LE(m["bytes"].get<std::uint64_t>(), 64u * 1024) << m.dump();
    partials += m["method"] == "post-partials-root" && m["success"].get<bool>();
  }
  EXPECT_EQ(partials, 2u) << "both daemons post the value's partial sums";
}

// Randomized one-value cheats through the real daemons (repops): a solver
// daemon adds 1 to one random value of one random output of one random node
// at a random step (wrong-value). The property: the cheat never pays — the
// game ends against the solver at the planted step and node and, where the
// element level is played, at the planted output slot and value — and every
// transaction of every game fits 64 KiB. A cheat absorbed before the next
// checkpoint changes nothing committed (the replay agrees, no game).
// The challenger daemon does not wait for a commitment to replay a repops
// job: its replay needs nothing from the solver, so it runs while the solver
// trains, and the challenge window has to cover only the dispute's opening,
// never a replay (a window shorter than the replay once let a cheat through).
// The solver here names its final state in a commit it never publishes, so
// the bounty stays claimed: the challenger must have replayed it all the
// same, and opened no game.
TEST(TestnetScenario, TheChallengerReplaysWhileTheSolverTrains) {
  ScopedTestnet t("ahead",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp.json", 3));
  ASSERT_TRUE(UpWithAWithholdingSolver(t));
  auto session = SessionOn(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto id = node::PostBounty(session->rpc, session->client, session->job, kTerms);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const auto challenger_log = [&] {
    std::ifstream in(t.net().LogPath("challenger"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_TRUE(WaitFor(
      [&] {
        return challenger_log().find("bounty 0: replayed ahead of its commitment") != std::string::npos;
      },
      60s))
      << challenger_log();
  EXPECT_EQ(BountyState(session->rpc, 0).value_or("?"), "claimed") << "the withheld commit reached a block";
  auto games = session->rpc.BountyGames(0);
  ASSERT_TRUE(games.ok());
  EXPECT_TRUE(games->empty()) << "a game over a bounty with no commitment";
}

TEST(TestnetScenario, RandomOneValueCheatsAreCaughtAtTheirValue) {
  ScopedTestnet t("values",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp.json", 3));
  auto session = UpWithSession(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::mt19937_64 rng(TestSeed());
  const std::uint64_t steps = session->job.job.spec.num_steps;
  std::size_t caught = 0, element_level = 0;
  for (std::uint64_t bounty = 0; bounty < 3; ++bounty) {
    const std::uint64_t step = 1 + rng() % (steps - 2);
    auto graph = verify::KernelsGraphSource().Build(session->job.job.spec, step);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const std::uint64_t node = rng() % graph->nodes.size();
    const std::uint64_t slot = rng() % graph->nodes[node].output_shapes.size();
    const OneValueCheat cheat = RandomValueOf(*graph, step, node, slot, rng);
    SCOPED_TRACE(cheat.Adversary());
    ASSERT_TRUE(RestartSolverCheating(t, cheat.Adversary()));
    const std::string state = PostAndSettle(session->rpc, session->client, session->job, kTerms, bounty, 90s);
    auto games = session->rpc.BountyGames(bounty);
    ASSERT_TRUE(games.ok());
    if (state == "finalized") {
      EXPECT_TRUE(games->empty()) << "a game over a bounty that finalized";
      continue;
    }
    ASSERT_EQ(state, "failed");
    ASSERT_EQ(games->size(), 1u);
    const CaughtGame g = ExpectCaughtAt(session->rpc, games->front(), cheat);
    if (g.reason.rfind("element-", 0) == 0) ++element_level;
    ++caught;
  }
  EXPECT_GE(caught, 1u) << "no cheat reached a checkpoint";
  std::printf("[ values ] %zu of 3 random one-value cheats caught, %zu at the element level\n", caught,
              element_level);
}

// A solver whose every node is honest but whose next-state header is not
// (wrong-header: one rng draw ahead after step T). The dispute ends at step
// T's assemble node; the daemons walk their h_{t+1} trees leaf by leaf
// (verify/state_walk.h) to the header leaf, the last, and the challenger
// daemon opens the header of h_T: it wins without the node's N openings
// being sent, every transaction within 64 KiB — in repops and in rounded
// mode (no arithmetic is judged).
TEST(TestnetScenario, AWrongNextStateHeaderIsSettledByTheAssembleWalk) {
  for (const char* file : {"synthetic-mlp.json", "synthetic-mlp-rounded.json"}) {
    SCOPED_TRACE(file);
    ScopedTestnet t("header", DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs" / file, 3));
    auto session = UpWithSession(t);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    const std::uint64_t step = 1 + TestSeed() % (session->job.job.spec.num_steps - 2);
    auto graph = verify::KernelsGraphSource().Build(session->job.job.spec, step);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    // Where it must be caught: the assemble node, its last leaf (the header).
    const OneValueCheat where{step, graph->nodes.size(), 0, graph->num_state_tensors};
    const std::string cheat = "wrong-header:step=" + std::to_string(step);
    SCOPED_TRACE(cheat);
    ASSERT_TRUE(RestartSolverCheating(t, cheat));
    ASSERT_EQ(PostAndSettle(session->rpc, session->client, session->job, kTerms, 0, 90s), "failed")
        << "the cheat was not caught";
    auto games = session->rpc.BountyGames(0);
    ASSERT_TRUE(games.ok() && games->size() == 1u) << "one game over the bounty";
    const CaughtGame g = ExpectCaughtAt(session->rpc, games->front(), where);
    EXPECT_EQ(g.reason, "element-state-leaf");
    EXPECT_FALSE(g.arbitrated_whole) << "the assemble node was arbitrated whole";
    std::printf(
        "[ header ] %s, %s: caught at the assemble node's header leaf %u, largest game transaction %llu B\n",
        file, cheat.c_str(), graph->num_state_tensors, static_cast<unsigned long long>(g.largest));
  }
}

// Cheats in the GPT nodes that read the batch: the token embedding (its
// value gathers one weight row by the token id at its position), the
// cross-entropy gradient (its final step reads the row's label) and the
// embedding's backward (each step of its scan over the positions reads the
// token id there). The element level opens the one example that holds the
// id or label from the dataset commitment (verify/batch_opening.h), so each
// node is settled at the planted value without its inputs being sent whole,
// every transaction within 64 KiB.
TEST(TestnetScenario, GptCheatsThatReadTheBatchAreSettledFromOneExample) {
  ScopedTestnet t("batch",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/tiny-gpt.json", 3));
  auto session = UpWithSession(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::mt19937_64 rng(TestSeed());
  const kernels::OpKind kTargets[] = {kernels::OpKind::kEmbedding, kernels::OpKind::kCrossEntropyBackward,
                                      kernels::OpKind::kEmbeddingBackward};
  for (std::uint64_t bounty = 0; bounty < std::size(kTargets); ++bounty) {
    const std::uint64_t step = 1 + rng() % (session->job.job.spec.num_steps - 2);
    auto graph = verify::KernelsGraphSource().Build(session->job.job.spec, step);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    std::uint64_t node = 0;
    while (node < graph->nodes.size() &&
           graph->nodes[node].op_kind != static_cast<std::uint16_t>(kTargets[bounty]))
      ++node;
    ASSERT_LT(node, graph->nodes.size()) << kernels::OpKindName(kTargets[bounty]);
    const OneValueCheat cheat = RandomValueOf(*graph, step, node, 0, rng);
    SCOPED_TRACE(cheat.Adversary());
    const node::BountyTerms terms{1'000'000, 8'000'000, 8'000'000, 300, 12, 40};
    const CaughtGame g =
        ExpectSettledAtItsValue(t, session->rpc, session->client, session->job, terms, bounty, cheat, 120s);
    std::printf(
        "[ batch ] %s: caught at step %llu node %llu value %llu by %s; largest game transaction %llu B\n",
        std::string(kernels::OpKindName(kTargets[bounty])).c_str(), static_cast<unsigned long long>(step),
        static_cast<unsigned long long>(node), static_cast<unsigned long long>(cheat.element),
        g.reason.c_str(), static_cast<unsigned long long>(g.largest));
  }
}

// A GPT-2-shaped job: GPT-2's real vocabulary (50 257 tokens, the head tied
// to the token embedding) on a small body (testnet/jobs/gpt2-vocab.json:
// 1 layer, d 32, 16 tokens, batch 2). Its loss, the loss's gradient and the
// head's backward read 32 rows of 50 257 logits (6.4 MB), which no
// transaction may carry: the job is accepted only because the element
// level covers them. A cheat in lm_head.backward's dx (a 50 257-term dot
// product per value), one in its dW (a 32-term one), one in the embedding's
// backward (a 50 257 × 32 scatter: a scan over the 32 positions), one in the
// attention's probabilities and one in its backward are each caught at the
// planted value and the solver's bond slashed, every transaction of the game
// within 64 KiB (read from the blocks: get_game_moves). (A lie in the loss
// alone changes no checkpoint; ElementGame.ALieInTheLossIsSettledAtOneStepOfItsRows
// plays one with a later lie.)
TEST(TestnetScenario, Gpt2VocabularyCheatsAreCaughtWithinOneSmallTransactionEach) {
  ScopedTestnet t("gpt2v",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/gpt2-vocab.json", 3));
  // lm_head.backward's dx and dW (its db is unused: the head has no bias),
  // wte.backward's dW, the attention's probabilities att below the diagonal
  // (a walk over the row's scores) and its backward dqkv (re-executed from
  // its image's dy, qkv and att).
  const NamedOutput targets[] = {{"lm_head.backward", 0},
                                 {"lm_head.backward", 1},
                                 {"wte.backward", 0},
                                 {"h.0.attn", 1},
                                 {"h.0.attn.backward", 0}};
  ExpectNamedCheatsSettled(t, "gpt2-vocab", targets, 180s,
                           [](const worker::LoadedJob&, const NamedOutput& target,
                              const verify::StepGraph& graph, const OneValueCheat& v) {
                             if (target.first != "h.0.attn") return true;
                             // att below the diagonal: the walk over the row's scores.
                             const auto t_count =
                                 static_cast<std::uint64_t>(graph.nodes[v.node].output_shapes[1].back());
                             return v.element % t_count <= (v.element / t_count) % t_count;
                           });
}

// Whether a one-value cheat changes the run's checkpoints (a lie can be
// absorbed downstream: behind a relu, or routed nowhere): the job trained
// here, honestly and cheating, each into its own directory.
bool ReachesACheckpoint(const worker::LoadedJob& job, const OneValueCheat& cheat,
                        const std::filesystem::path& dir) {
  const auto root = [&](worker::Adversary* adversary, const char* name) -> std::optional<Hash256> {
    std::filesystem::remove_all(dir / name);
    worker::TrainOptions opts;
    opts.adversary = adversary;
    auto run = worker::Train(job.job, job.dataset, dir / name, opts);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    if (!run.ok()) return std::nullopt;
    return worker::CheckpointTree(run->manifest).root();
  };
  auto spec = worker::ParseAdversarySpec(cheat.Adversary());
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return false;
  auto adversary = worker::MakeAdversary(*spec, job.job, job.dataset);
  EXPECT_TRUE(adversary.ok()) << adversary.status().ToString();
  if (!adversary.ok()) return false;
  const auto honest = root(nullptr, "honest"), cheating = root(adversary->get(), "cheating");
  return honest && cheating && *honest != *cheating;
}

// A CNN with batch norms (the cnn-tiny preset: an 8×8 image, a stem and one
// residual block): one-value cheats in the outputs the element level
// settles by reading the batch-norm node's own agreed statistics — the
// batch rstd, the running variance (a reduction over the squared deviations
// from the node's own mean), the running mean, the backward's dx (the
// node's own dγ and dβ) — and in a convolution's input gradient (col2im
// over its taps' dot products) are each caught at the planted value, the
// solver slashed, every game transaction within 64 KiB. The values are
// drawn among those whose lie reaches a checkpoint (trained here first).
TEST(TestnetScenario, CnnBatchNormAndConvolutionGradientCheatsAreSettledAtTheirValue) {
  ScopedTestnet t("cnn", DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/tiny-cnn.json", 3));
  const std::filesystem::path scratch = t.net().dir() / "cheat-runs";
  const NamedOutput targets[] = {{"stem.bn", 4},
                                 {"blocks.0.bn1", 2},
                                 {"blocks.0.bn2", 1},
                                 {"blocks.0.bn1.backward", 0},
                                 {"blocks.0.conv2.backward", 0}};
  ExpectNamedCheatsSettled(t, "cnn", targets, 120s,
                           [&](const worker::LoadedJob& job, const NamedOutput&, const verify::StepGraph&,
                               const OneValueCheat& v) { return ReachesACheckpoint(job, v, scratch); });
}

// Certified mode through the real daemons: one-value cheats in the dot
// rule's outputs — the head's y (its bias in the epilogue), its backward's
// dx, and the first layer's dW (a factor from the batch) — in the head's db
// (one exact sum) and in the loss gradient's rows (a row's max, its exact
// sum of exponentials and a final step reading the label from the batch)
// are walked over the disputed value's exact partial sums (82-byte leaves)
// and settled at the planted value, the solver slashed, every transaction
// within 64 KiB.
TEST(TestnetScenario, CertifiedCheatsAreSettledOverExactPartialSums) {
  ScopedTestnet t(
      "certified",
      DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp-certified.json", 3));
  const std::filesystem::path scratch = t.net().dir() / "cheat-runs";
  const NamedOutput targets[] = {
      {"head", 0}, {"head.backward", 0}, {"fc.0.backward", 1}, {"head.backward", 2}, {"loss.backward", 0}};
  const auto reaches = [&](const worker::LoadedJob& job, const NamedOutput&, const verify::StepGraph&,
                           const OneValueCheat& v) { return ReachesACheckpoint(job, v, scratch); };
  ExpectNamedCheatsSettled(t, "certified", targets, 120s, reaches);
}

// Rounded mode end to end: the solver daemon publishes its rounding logs as
// a blob on its own node; the challenger's node (another validator) fetches
// it from peers; the challenger replays following the logs and agrees with
// the honest run, then catches a cheating one at the planted step and node
// — node 2, the head's linear y, settled at its first value by the rounded
// dot rule: the challenger daemon's descent carries the node's committed log
// hash with its chain, both daemons post their fp64 partial results (equal:
// the cheat is in the rounding), and the epilogue opens the log at the value.
TEST(TestnetScenario, RoundedModeLogsTravelOverTheNetworkAndACheaterIsCaught) {
  ScopedTestnet t(
      "rounded",
      DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp-rounded.json", 3));
  auto session = UpWithSession(t);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ASSERT_EQ(session->job.job.mode(), kernels::Mode::kRounded);
  auto post = [&] {
    auto id = node::PostBounty(session->rpc, session->client, session->job, kTerms);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  };

  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(session->rpc, 0).value_or("") == "finalized"; }, 90s))
      << "honest rounded bounty: " << BountyState(session->rpc, 0).value_or("?");
  auto b0 = session->rpc.Call("get_bounty", Json::array({0}));
  ASSERT_TRUE(b0.ok());
  EXPECT_TRUE((*b0)["games"].empty()) << "the challenger, following the logs, agreed";
  ASSERT_TRUE((*b0)["commitment"].contains("log_bundle"));
  auto bundle_hash = Hash256::FromHex((*b0)["commitment"]["log_bundle"].get<std::string>());
  ASSERT_TRUE(bundle_hash.ok());
  // The challenger's node (the last validator) holds the blob: it came over P2P.
  auto last = t.Client("v2");
  auto blob = last.GetBlob(*bundle_hash, 10s);
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  EXPECT_GT(blob->size(), 64u);

  ASSERT_TRUE(RestartSolverCheating(t, "wrong-output:step=5,node=2"));
  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(session->rpc, 1).value_or("") == "failed"; }, 120s))
      << "cheating rounded bounty: " << BountyState(session->rpc, 1).value_or("?");
  auto game = session->rpc.Call("get_dispute", Json::array({0}));
  ASSERT_TRUE(game.ok());
  EXPECT_EQ((*game)["result"], "challenger-won");
  EXPECT_EQ((*game)["reason"], "element-epilogue");
  EXPECT_EQ((*game)["step"], 5u);
  EXPECT_EQ((*game)["node_index"], 2u);
}

}  // namespace
}  // namespace vt::test
