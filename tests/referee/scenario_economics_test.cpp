// Scenario tests of the game's economics (label `scenario`): games nobody can
// crowd out, bonds priced from the job's worst arbitration, arbitration gas
// reimbursed by the loser, nobody profiting from a failure it causes, and
// jobs whose arbitration the chain cannot carry refused at posting
// (docs/referee.md, "Threat model").

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <string>

#include "contract_vm/arbitration.h"
#include "contract_vm/arbitration_cost.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "referee/bonds.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/scenario.h"
#include "verify/certified_price.h"
#include "verify/element_game.h"
#include "verify/node_spec.h"

namespace vt::test {
namespace {

using referee::BountyState;
using referee::GamePhase;
using referee::GameResult;
using referee::Method;

constexpr vm::Amount Share(vm::Amount a) { return a / 2; }  // winner share 50%

// The minimum bonds of a job on a chain with `params`, as PostBounty computes them.
referee::BondTerms Terms(const protocol::JobSpec& job, const vm::ChainParams& params = {}) {
  return BondTermsOf(job, params);
}

// The receipt of the transaction that resolved game `game_id`, and its size.
struct Resolving {
  vm::Receipt receipt;
  std::uint64_t tx_bytes = 0;
};
Resolving ResolvingTx(TestChain& chain, std::uint64_t game_id) {
  std::size_t r = 0;
  for (const vm::Block& b : chain.blocks()) {
    for (const vm::Transaction& tx : b.txs) {
      const vm::Receipt& rc = chain.all_receipts()[r++];
      for (const vm::Event& e : rc.events) {
        if (e.topic != referee::topics::kGameResolved) continue;
        auto ev = DecodeExact<referee::GameResolvedEvent>(e.data);
        if (ev.ok() && ev->game_id == game_id) return {rc, vm::EncodeTransaction(tx).size()};
      }
    }
  }
  ADD_FAILURE() << "game " << game_id << " never resolved";
  return {};
}

// A puppet of the solver: an account that opens a game with a root that
// differs from the solver's early (a lie at `step`), so that it loses, and
// then falls silent from `silent` on.
AgentPlan Puppet(std::uint64_t step, std::uint32_t node, GamePhase silent) {
  AgentPlan p;
  p.lies = {Lie{LieKind::kOutput, step, node}};
  p.silent_from = silent;
  return p;
}

// ---- item 1: games nobody can crowd out ------------------------------------------------

// The solver lies at step 7 and, right after committing, opens 80 games from
// throwaway keys (more than the old cap of 64 per bounty) that never move.
// The honest challenger, whose opening comes last, still gets its game and
// wins it; the wrong result never finalizes; the transaction that decides
// the honest game costs the same gas with 80 puppets as with none (no loop
// over other games); every puppet game closes, one call each.
TEST(Scenario, SybilGamesCannotBlockAnHonestChallenger) {
  constexpr std::size_t kPuppets = 80;
  std::uint64_t deciding_gas[2] = {0, 0};
  for (std::size_t puppets : {std::size_t{0}, kPuppets}) {
    SCOPED_TRACE(puppets);
    ScenarioConfig c;
    c.solver.lies = {Lie{LieKind::kOutput, 7, 5}};
    for (std::size_t i = 0; i < puppets; ++i) c.challengers.push_back(Puppet(1, 2, GamePhase::kCheckpointWalk));
    c.challengers.push_back(AgentPlan{});  // the honest challenger, last in the block
    c.clock_budget = 30;  // the puppets' clocks outlast the honest game
    ScenarioDriver d(c);
    const ScenarioReport r = d.Run();
    ASSERT_EQ(r.games.size(), puppets + 1) << "every challenger got its game";
    const GameReport& honest = r.games.back();
    EXPECT_EQ(honest.challenger, puppets);
    EXPECT_EQ(honest.game.result, GameResult::kChallengerWon);
    EXPECT_EQ(honest.game.reason, "arbitration");
    EXPECT_EQ(r.bounty.state, BountyState::kFailed);
    EXPECT_EQ(r.bounty.open_games, 0u) << "every game closed";
    for (std::size_t i = 0; i < puppets; ++i) {
      EXPECT_EQ(r.games[i].game.result, GameResult::kNoContest) << "puppet " << i;
      EXPECT_EQ(r.net.at("challenger" + std::to_string(i)), 0) << "a moot game refunds its bond";
    }
    EXPECT_GT(r.net.at("challenger" + std::to_string(puppets)), 0);
    EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(c.solver_bond));
    auto ids = referee::ReadBountyGames(d.chain().store(), 0);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->size(), puppets + 1);
    const Resolving deciding = ResolvingTx(d.chain(), honest.game.id);
    deciding_gas[puppets == 0 ? 0 : 1] = deciding.receipt.gas_used;
    // Each moot game was closed by its own small call.
    for (std::size_t i = 0; i < puppets; ++i)
      EXPECT_LT(ResolvingTx(d.chain(), r.games[i].game.id).receipt.gas_used, deciding.receipt.gas_used);
  }
  EXPECT_EQ(deciding_gas[0], deciding_gas[1]) << "losing one game costs the same whatever the number of games";
}

// Randomized: a random number of puppets with random early lies, falling
// silent at random phases (or playing to the end and losing), the honest
// challenger at a random position, the solver lying at a random late node
// and sometimes falling silent. The honest challenger always wins (or its
// game is moot because a puppet happened to beat the solver first, with its
// bond refunded), never loses money, and the wrong result never finalizes.
TEST(Scenario, SybilPuppetsNeverLetAWrongResultFinalize) {
  std::mt19937_64 rng(20261123);
  // Nodes of the tiny MLP whose changed output 0 reaches the next state (not
  // the loss value, node 3, nor fc.0.backward's input gradient, node 8): a
  // lie there changes the lying party's root.
  const std::uint32_t reaching[] = {0, 1, 2, 4, 5, 6, 7};
  auto node = [&] { return reaching[rng() % 7]; };
  const GamePhase phases[] = {GamePhase::kCheckpointWalk, GamePhase::kStepRoots, GamePhase::kNodeRoots,
                              GamePhase::kRevealRecords, GamePhase::kArbitration, GamePhase::kResolved};
  std::size_t total_games = 0;
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    ScenarioConfig c;
    c.clock_budget = 4 + rng() % 20;
    const std::uint64_t lie_step = 6 + rng() % 4;
    c.solver.lies = {Lie{LieKind::kOutput, lie_step, node()}};
    if (rng() % 3 == 0) c.solver.silent_from = phases[1 + rng() % 4];
    const std::size_t puppets = rng() % 40;
    const std::size_t honest_at = rng() % (puppets + 1);
    for (std::size_t i = 0; i < puppets; ++i)
      c.challengers.push_back(Puppet(rng() % lie_step, node(), phases[rng() % 6]));
    c.challengers.insert(c.challengers.begin() + static_cast<std::ptrdiff_t>(honest_at), AgentPlan{});
    const ScenarioReport r = RunScenario(c);
    ASSERT_EQ(r.games.size(), puppets + 1) << (r.failed_calls.empty() ? "" : r.failed_calls.front());
    total_games += r.games.size();
    EXPECT_EQ(r.bounty.state, BountyState::kFailed) << "the wrong result never finalizes";
    EXPECT_EQ(r.bounty.open_games, 0u);
    const auto honest = std::find_if(r.games.begin(), r.games.end(),
                                     [&](const GameReport& g) { return g.challenger == honest_at; });
    ASSERT_NE(honest, r.games.end());
    EXPECT_TRUE(honest->game.result == GameResult::kChallengerWon || honest->game.result == GameResult::kNoContest)
        << referee::GameResultName(honest->game.result) << " " << honest->game.reason;
    EXPECT_GE(r.net.at("challenger" + std::to_string(honest_at)), 0);
    // The solver and its puppets together lose money: a puppet's lost bond
    // pays the solver only half of it.
    std::int64_t cheaters = r.net.at("solver");
    for (std::size_t i = 0; i <= puppets; ++i)
      if (i != honest_at) cheaters += r.net.at("challenger" + std::to_string(i));
    EXPECT_LT(cheaters, 0) << "a lying solver never profits, puppets included";
  }
  std::cout << "[ sybil ] " << total_games << " games in 6 random bounties\n";
}

// Finalize waits for every open game, however many: an honest solver facing
// a slow lying challenger cannot finalize until that game is resolved.
TEST(Scenario, FinalizeWaitsForEveryOpenGame) {
  ScenarioConfig c;
  c.challengers = {Puppet(2, 1, GamePhase::kStepRoots)};
  c.clock_budget = 40;  // the silent liar's clock runs long after the challenge window
  ScenarioDriver d(c);
  d.Start();
  auto b = referee::ReadBounty(d.chain().store(), 0);
  ASSERT_TRUE(b.ok());
  d.chain().MineUntil(b->challenge_deadline + 1);
  const vm::Receipt early = d.chain().Run(d.chain().Call(d.key(1), referee::kRefereeContractId,
                                                         static_cast<std::uint16_t>(Method::kFinalize),
                                                         EncodeToBytes(referee::BountyIdArgs{0})));
  EXPECT_EQ(early.reason, "bounty-games-open");
  // Nobody can close a game that is not moot (the solver has lost nothing).
  const vm::Receipt close = d.chain().Run(d.chain().Call(d.key(0), referee::kRefereeContractId,
                                                         static_cast<std::uint16_t>(Method::kCloseGame),
                                                         EncodeToBytes(referee::GameIdArgs{d.game_ids().at(0)})));
  EXPECT_EQ(close.reason, "game-not-moot");
  while (d.Step()) {
  }  // the game plays out (the liar times out) …
  const ScenarioReport r = d.Finish();  // … and then the solver finalizes
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  ASSERT_EQ(r.games.size(), 1u);
  EXPECT_EQ(r.games[0].game.result, GameResult::kSolverWon);
}

// ---- item 7: bond minimums, reimbursement, no profit from failures ----------------------

TEST(Scenario, BondsBelowTheMinimumAreRefused) {
  ScenarioConfig c;
  c.solver_claims = false;
  ScenarioDriver d(c);
  const referee::BondTerms t = Terms(d.tiny().job);
  ASSERT_GT(t.minimum, 0u);
  EXPECT_EQ(t.minimum, t.arbitration_allowance + (2 * t.moves * t.move_gas)) << "p_min = 1, winner share 50%";
  auto post = [&](vm::Amount solver_bond, vm::Amount challenger_bond) {
    referee::PostBountyArgs a{d.tiny().job, d.tiny().initial_state, 1000, solver_bond, challenger_bond, 5, 5, 5, Hash256{}, 0};
    return d.chain().Run(d.chain().Call(TestKey(1), referee::kRefereeContractId,
                                        static_cast<std::uint16_t>(Method::kPostBounty), EncodeToBytes(a)));
  };
  const vm::Receipt low_c = post(t.minimum, t.minimum - 1);
  EXPECT_EQ(low_c.reason, "bounty-bond-below-minimum");
  EXPECT_EQ(post(t.minimum - 1, t.minimum).reason, "bounty-bond-below-minimum");
  const vm::Receipt ok = post(t.minimum, t.minimum);
  EXPECT_TRUE(ok.success) << ok.reason;
  auto b = referee::ReadBounty(d.chain().store(), 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->min_bond, t.minimum);
  EXPECT_EQ(b->arbitration_allowance, t.arbitration_allowance);
  std::cout << "[ bonds ] tiny MLP: minimum " << t.minimum << " = allowance " << t.arbitration_allowance << " + 2 x "
            << t.moves << " moves x " << t.move_gas << " gas\n";
}

// The submitter of the deciding arbitration gets its gas back (at its price,
// at most the bounty's allowance) from the loser's bond, before the winner's
// share and the burn. Both directions, both modes; and the bounds the bond
// minimum is made of hold for every real transaction of these games.
TEST(Scenario, ArbitrationGasIsReimbursedByTheLoser) {
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified}) {
    for (bool solver_lies : {false, true}) {
      SCOPED_TRACE(std::string(kernels::ModeName(mode)) + (solver_lies ? " lying solver" : " lying challenger"));
      ScenarioConfig c;
      c.mode = mode;
      if (solver_lies)
        c.solver.lies = {Lie{LieKind::kOutput, 4, 6}};
      else
        c.challengers = {AgentPlan{{Lie{LieKind::kOutput, 4, 6}}, std::nullopt}};
      if (solver_lies) c.challengers = {AgentPlan{}};
      ScenarioDriver d(c);
      const ScenarioReport r = d.Run();
      ASSERT_EQ(r.games.size(), 1u);
      const referee::Game& g = r.games[0].game;
      ASSERT_EQ(g.reason, "arbitration");
      const Resolving arb = ResolvingTx(d.chain(), g.id);
      ASSERT_TRUE(arb.receipt.success);
      // Reimbursed: the gas of the whole transaction, settlement included, at
      // the price paid — exactly its fee (well under the allowance here).
      EXPECT_EQ(g.reimbursement, arb.receipt.fee);
      EXPECT_LE(g.reimbursement, r.bounty.arbitration_allowance);
      const vm::Amount loser_bond = solver_lies ? c.solver_bond : c.challenger_bond;
      const vm::Amount share = Share(loser_bond - g.reimbursement);
      // The winner sent the arbitration (it holds the right record): it gets
      // reimbursed and the share of the rest; the rest burns.
      if (solver_lies) {
        EXPECT_EQ(g.result, GameResult::kChallengerWon);
        EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(g.reimbursement + share));
        EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(c.solver_bond));
        EXPECT_EQ(r.net.at("client"), 0);
      } else {
        EXPECT_EQ(g.result, GameResult::kSolverWon);
        EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(c.reward + g.reimbursement + share));
        EXPECT_EQ(r.net.at("challenger0"), -static_cast<std::int64_t>(c.challenger_bond));
      }
      EXPECT_EQ(r.burned, loser_bond - g.reimbursement - share);

      // The bounds behind the minimum hold for the real transactions.
      const referee::BondTerms t = Terms(d.tiny().job);
      EXPECT_LE(arb.receipt.gas_used, t.arbitration_gas);
      EXPECT_LE(arb.tx_bytes, t.arbitration_tx_bytes);
      std::size_t k = 0;
      std::uint64_t max_move = 0;
      for (const vm::Block& b : d.chain().blocks()) {
        for (const vm::Transaction& tx : b.txs) {
          const vm::Receipt& rc = d.chain().all_receipts()[k++];
          const auto& call = std::get<vm::CallPayload>(tx.payload);
          const auto m = static_cast<Method>(call.method);
          if (m == Method::kPostBounty || m == Method::kCommit || m == Method::kArbitrate) continue;
          EXPECT_LE(rc.gas_used, t.move_gas) << "method " << call.method;
          max_move = std::max(max_move, rc.gas_used);
        }
      }
      std::cout << "[ reimburse ] " << kernels::ModeName(mode) << ": arbitration " << arb.receipt.gas_used
                << " gas (bound " << t.arbitration_gas << "), reimbursed " << g.reimbursement << "; largest move "
                << max_move << " gas (bound " << t.move_gas << ")\n";
    }
  }
}

// A claimant that never commits loses its whole bond to the burn: the client
// gets its reward back and nothing more, so posting a bounty that cannot be
// finished earns the client nothing.
TEST(Scenario, ClaimantThatNeverCommitsProfitsNobody) {
  ScenarioConfig c;
  c.solver_commits = false;
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.net.at("client"), 0);
  EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(c.solver_bond));
  EXPECT_EQ(r.burned, c.solver_bond);
}

// A challenger that times out pays the solver's moves: its bond covers a
// whole game of the solver's gas (the minimum's walk part, at the winner's
// share), so griefing with games that go nowhere costs the griefer, not the
// solver.
TEST(Scenario, GriefingGamesPayTheSolversGas) {
  ScenarioConfig c;
  c.challengers = {Puppet(2, 4, GamePhase::kNodeWalk), Puppet(5, 1, GamePhase::kStepRoots),
                   Puppet(8, 2, GamePhase::kArbitration)};
  c.challenger_bond = Terms(MakeTinyJob(c.steps, c.interval, c.mode).job).minimum;
  c.solver_bond = c.challenger_bond;
  ScenarioDriver d(c);
  const ScenarioReport r = d.Run();
  ASSERT_EQ(r.games.size(), 3u);
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  vm::Amount solver_fees = 0;
  std::size_t k = 0;
  for (const vm::Block& b : d.chain().blocks()) {
    for (const vm::Transaction& tx : b.txs) {
      const vm::Receipt& rc = d.chain().all_receipts()[k++];
      const auto m = static_cast<Method>(std::get<vm::CallPayload>(tx.payload).method);
      if (tx.sender == d.key(1).public_key().bytes() && m != Method::kClaim && m != Method::kCommit &&
          m != Method::kFinalize)
        solver_fees += rc.fee;
    }
  }
  for (const GameReport& g : r.games) EXPECT_EQ(g.game.result, GameResult::kSolverWon);
  // The solver's game income, net of every fee it paid in the games, is positive.
  const std::int64_t income = r.net.at("solver") - static_cast<std::int64_t>(c.reward);
  EXPECT_GT(income - static_cast<std::int64_t>(solver_fees), 0)
      << "income " << income << ", fees " << solver_fees;
}

// ---- item 8: jobs whose arbitration the network cannot carry ---------------------------

struct PresetJob {
  const char* model;  // a kernels/graph preset, or "fashion-mlp-32" (testnet/jobs/fashion-mlp*.json)
  std::uint32_t batch;
  std::uint64_t dataset;
};

protocol::JobSpec PresetSpec(const PresetJob& p, kernels::Mode mode) {
  protocol::JobSpec job = MakeTinyJob(24, 4, kernels::Mode::kRepops).job;  // SGD with momentum, 24 steps, k = 4
  kernels::graph::ModelSpec model;
  if (std::string_view(p.model) == "fashion-mlp-32") {
    model.arch = kernels::graph::MlpSpec{784, {32}, 10, kernels::graph::Activation::kRelu};
  } else if (std::string_view(p.model) == "mlp-64-2048-2048-10") {
    model.arch = kernels::graph::MlpSpec{64, {2048, 2048}, 10, kernels::graph::Activation::kRelu};
  } else if (std::string_view(p.model) ==
             "cnn-128") {  // 128×128 images, no stem pool: a 16 384-value GAP plane
    model.arch = kernels::graph::CnnSpec{1, 128, 128, 4, 0, false, 10};
  } else if (std::string_view(p.model) ==
             "cnn-128-pool") {  // the same with a 2×2 max pool over the 128×128 stem
    model.arch = kernels::graph::CnnSpec{1, 128, 128, 4, 0, true, 10};
  } else if (std::string_view(p.model) == "cnn-512") {  // 3 × 512 × 512 images: 3 MiB examples
    model.arch = kernels::graph::CnnSpec{3, 512, 512, 4, 0, true, 10};
  } else if (std::string_view(p.model) == "gpt-12288") {  // GPT-3's width: 12 288-value layer-norm rows
    model.arch = kernels::graph::GptSpec{256, 32, 1, 96, 12288, 0.0f};
  } else if (std::string_view(p.model) ==
             "gpt-long") {  // T = 1 024 on a tiny body: attention's trees are the tallest
    model.arch = kernels::graph::GptSpec{16, 1024, 1, 1, 16, 0.0f};
  } else if (std::string_view(p.model) == "gpt2-vocab") {  // testnet/jobs/gpt2-vocab.json's model
    model.arch = kernels::graph::GptSpec{50257, 16, 1, 2, 32, 0.0f};
  } else {
    auto preset = kernels::graph::ModelPreset(p.model);
    EXPECT_TRUE(preset.ok()) << p.model;
    model = preset.value_or(model);
  }
  job.model = kernels::graph::EncodeModelSpec(model);
  job.batch_size = p.batch;
  job.dataset_size = p.dataset;
  job.mode = static_cast<std::uint8_t>(mode);
  return job;
}

// The name of node `index` of the job's step graph, for the printed lines.
std::string NodeName(const protocol::JobSpec& job, std::uint64_t index) {
  auto model = kernels::graph::DecodeModelSpec(job.model);
  auto opt = kernels::graph::DecodeOptimizerSpec(job.optimizer);
  if (!model.ok() || !opt.ok()) return "?";
  auto shapes = kernels::graph::BatchShapes(*model, static_cast<std::int64_t>(job.batch_size));
  if (!shapes.ok()) return "?";
  auto graph = kernels::graph::BuildStepGraph(*model, *opt, 1, *shapes);
  if (!graph.ok()) return "?";
  return index < graph->nodes.size() ? graph->nodes[index].name : "assemble";
}

// With the network's real limit (1 MiB, gossip's cap, as ChainParams
// max_tx_bytes), a job is refused at posting, with the reason, when an
// honest party may have to send more than that: an element move that opens
// an example larger than that (a CNN on 3 × 512 × 512 images), or any
// node's whole arbitration on a chain or in a mode without the element level
// (GPT-2 small's lm_head.backward: ~363 MB). The testnet jobs (their MLPs:
// the synthetic mlp-tiny one and fashion 784-32-10) and the tiny GPT are
// accepted in every mode with bonds at their minimum; mlp-fashion,
// cnn-fashion (its batch norms' 1.6 MB whole arbitrations covered), 128×128
// CNNs (their poolings' 16 384-value planes), a 2048-wide MLP, a GPT of
// GPT-3's width (its layer norms' 12 288-value rows), the GPT-2-vocabulary
// job and GPT-2 small, whose every node the element level covers, in repops
// mode only.

// Every node covered, the largest transaction an honest party may have to
// send is an element move: #11's target is 64 KiB, whatever the node's size.
constexpr std::uint64_t kElementTarget = std::uint64_t{64} << 10;

TEST(Scenario, OversizedJobIsRefusedAtPosting) {
  vm::ChainParams params;
  params.chain_id = TestChain::kChainId;
  params.max_tx_bytes = std::uint64_t{1} << 20;
  vm::Genesis genesis;
  genesis.params = params;
  genesis.allocations.push_back({TestKey(1).address(), 1'000'000'000'000});
  referee::Referee referee_contract;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  vm::ContractRegistry registry;
  registry.Register(referee::kRefereeContractId, &referee_contract);
  vm::Vm machine(registry, &arbiter);
  vm::MemoryStateStore store;
  auto tip = machine.ApplyGenesis(store, genesis);
  ASSERT_TRUE(tip.ok());
  std::uint64_t nonce = 0;
  auto post = [&](const protocol::JobSpec& job, vm::Amount bond) {
    vm::Transaction tx;
    tx.chain_id = params.chain_id;
    tx.nonce = nonce;
    tx.gas_limit = 10'000'000;
    tx.gas_price = 1;
    referee::PostBountyArgs a{job, Hash256{}, 1000, bond, bond, 5, 5, 5, Hash256{}, 0};
    tx.payload = vm::CallPayload{referee::kRefereeContractId, static_cast<std::uint16_t>(Method::kPostBounty),
                                 EncodeToBytes(a)};
    EXPECT_TRUE(vm::SignTransaction(tx, TestKey(1)).ok());
    auto block = machine.ProduceBlock(store, *tip, {tx}, tip->time + 5, TestKey(1000), nullptr);
    EXPECT_TRUE(block.ok()) << block.status().ToString();
    if (!block.ok() || block->receipts.size() != 1) return vm::Receipt{};
    *tip = block->tip;
    ++nonce;
    return block->receipts[0];
  };

  const PresetJob accepted[] = {{"mlp-tiny", 8, 64}, {"fashion-mlp-32", 16, 512}, {"gpt-tiny", 8, 512}};
  // Accepted because the element level covers its SGD updates (their whole
  // arbitration carries three copies of a 128 × 784 weight) — in repops, and
  // in rounded mode, which plays the element-wise operators' values.
  const PresetJob mlp_fashion{"mlp-fashion", 16, 512};
  {
    const protocol::JobSpec job = PresetSpec(mlp_fashion, kernels::Mode::kRepops);
    const referee::BondTerms t = Terms(job, params);
    EXPECT_LE(t.required_tx_bytes, kElementTarget);
    EXPECT_TRUE(t.required_by_element_move);
    EXPECT_GT(t.arbitration_tx_bytes, params.max_tx_bytes);
    EXPECT_TRUE(post(job, t.minimum).success);
    const protocol::JobSpec rounded = PresetSpec(mlp_fashion, kernels::Mode::kRounded);
    const referee::BondTerms rt = Terms(rounded, params);
    EXPECT_LE(rt.required_tx_bytes, kElementTarget);
    EXPECT_TRUE(rt.required_by_element_move) << "every node played at the element level, db's sums included";
    EXPECT_TRUE(post(rounded, rt.minimum).success);
    referee::RefereeParams node_level;
    node_level.element_level = false;
    EXPECT_GT(BondTermsOf(rounded, params, node_level).required_tx_bytes, params.max_tx_bytes)
        << "a chain without the element level refuses it";
    for (const auto& [mode, terms] : {std::pair{"repops", t}, std::pair{"rounded", rt}})
      std::cout << "[ posting ] mlp-fashion " << mode << " B=16: whole-node arbitration up to "
                << terms.arbitration_tx_bytes << " bytes, required " << terms.required_tx_bytes << " bytes ("
                << (terms.required_by_element_move ? "an element move" : "a whole node")
                << "); accepted, minimum bond " << terms.minimum << "\n";
  }
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified}) {
    for (const PresetJob& p : accepted) {
      SCOPED_TRACE(std::string(p.model) + " " + std::string(kernels::ModeName(mode)));
      const protocol::JobSpec job = PresetSpec(p, mode);
      const referee::BondTerms t = Terms(job, params);
      EXPECT_LE(t.required_tx_bytes, params.max_tx_bytes);
      const vm::Receipt r = post(job, t.minimum);
      EXPECT_TRUE(r.success) << r.reason;
      std::cout << "[ posting ] " << p.model << " " << kernels::ModeName(mode) << " B=" << p.batch
                << ": worst arbitration " << t.arbitration_tx_bytes << " bytes, " << t.arbitration_gas
                << " gas (node " << t.arbitration_node << "); minimum bond " << t.minimum << "\n";
    }
  }
  {
    // A CNN on 3 × 512 × 512 images: a move that reads the batch opens
    // whole examples (verify/batch_opening.h), here 3 MiB each — more than
    // the chain carries in one transaction, so the job is refused.
    const PresetJob p{"cnn-512", 2, 64};
    const protocol::JobSpec big = PresetSpec(p, kernels::Mode::kRepops);
    const referee::BondTerms t = Terms(big, params);
    EXPECT_GT(t.required_tx_bytes, params.max_tx_bytes);
    EXPECT_TRUE(t.required_by_element_move) << "every node is covered: the example is what is too large";
    const vm::Receipt r = post(big, t.minimum);
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.reason, "bounty-job-too-large");
    EXPECT_LT(r.gas_used, 200'000u) << "pricing the job is cheap, and charged";
    std::cout << "[ posting ] " << p.model << " B=" << p.batch << ": worst arbitration "
              << t.required_tx_bytes
              << " bytes (an element move that opens an example), refused; PostBounty used " << r.gas_used
              << " gas\n";
  }
  // Jobs whose big nodes the element level covers: their whole-node
  // transactions exceed the chain's limit (and stay priced), yet a job is
  // accepted on a chain that plays the element level, in repops and in
  // rounded mode; a chain without it refuses them. A 2048 × 2048 hidden layer (16 MiB of
  // weights: ~50 MB whole arbitrations); GPT-2's vocabulary on a small body
  // (its loss, the loss's gradient and the tied head's backward read 32 rows
  // of 50 257 logits, 6.4 MB); GPT-2 small (lm_head.backward: ~463 MB).
  struct Covered {
    PresetJob job;
    std::uint64_t whole_at_least;
    std::uint64_t required_at_most = kElementTarget;
    bool rounded_accepted = false;
    bool rounded_element_only = false;  // every node of the rounded job played at the element level
  };
  // CNNs on 128×128 images, without and with a 2×2 max pool after the
  // stem: their poolings read 16 384-value planes, settled one value a step
  // (the reduction rule's scan) and their backwards from the windows
  // covering a value. A move that reads the batch opens a whole example,
  // here a 64 KiB image: above the 64 KiB target, within the chain's 1 MiB.
  const Covered covered_jobs[] = {
      // Rounded mode plays every node of these CNNs at the element level
      // too since conv2d_backward's dx is played with its β as leaves.
      {{"cnn-fashion", 16, 512}, std::uint64_t{1} << 20, kElementTarget, true, true},
      {{"cnn-128", 16, 512}, std::uint64_t{1} << 20, std::uint64_t{1} << 20, true, true},
      {{"cnn-128-pool", 16, 512}, std::uint64_t{1} << 20, std::uint64_t{1} << 20, true, true},
      {{"mlp-64-2048-2048-10", 8, 64}, std::uint64_t{16} << 20, kElementTarget, true, true},
      // GPT-3's width, d = 12 288: its layer norms' rows are reductions
      // and y a pointwise value of the agreed mean and rstd (in rounded
      // mode a reduction of the row's sums).
      {{"gpt-12288", 1, 64}, std::uint64_t{1} << 20, kElementTarget, true, true},
      // Accepted in rounded mode too, every node played at the element
      // level since attention's y and backward are (β as leaves).
      {{"gpt2-vocab", 2, 256}, std::uint64_t{6} << 20, kElementTarget, true, true},
      {{"gpt2-small", 1, 512}, std::uint64_t{300} << 20, kElementTarget, true, true}};
  referee::RefereeParams whole;
  whole.element_level = false;
  for (const Covered& c : covered_jobs) {
    SCOPED_TRACE(c.job.model);
    const protocol::JobSpec repops = PresetSpec(c.job, kernels::Mode::kRepops);
    const referee::BondTerms t = Terms(repops, params);
    EXPECT_GT(t.arbitration_tx_bytes, c.whole_at_least) << "the whole-node transaction is still priced";
    EXPECT_LE(t.required_tx_bytes, c.required_at_most);
    EXPECT_TRUE(t.required_by_element_move);
    const vm::Receipt r = post(repops, t.minimum);
    EXPECT_TRUE(r.success) << r.reason;
    EXPECT_LT(r.gas_used, 200'000u) << "pricing the job is cheap, and charged";
    EXPECT_GT(BondTermsOf(repops, params, whole).required_tx_bytes, params.max_tx_bytes);
    // Rounded mode plays every node of these jobs at the element level.
    const protocol::JobSpec rounded = PresetSpec(c.job, kernels::Mode::kRounded);
    const referee::BondTerms rt = Terms(rounded, params);
    if (c.rounded_accepted) {
      const auto rounded_graph = graphs.Build(rounded, 0);
      ASSERT_TRUE(rounded_graph.ok());
      const std::string whole_node = rt.required_by_element_move
                                         ? "an element move"
                                         : "a whole " +
                                               std::string(kernels::OpKindName(static_cast<kernels::OpKind>(
                                                   rounded_graph->nodes.at(rt.required_node).op_kind))) +
                                               " node";
      std::printf("[ posting ] %s rounded B=%lld: required %llu bytes (%s); minimum bond %llu\n", c.job.model,
                  static_cast<long long>(c.job.batch), static_cast<unsigned long long>(rt.required_tx_bytes),
                  whole_node.c_str(), static_cast<unsigned long long>(rt.minimum));
      EXPECT_LE(rt.required_tx_bytes, c.rounded_element_only ? c.required_at_most : params.max_tx_bytes);
      EXPECT_EQ(rt.required_by_element_move, c.rounded_element_only);
      EXPECT_TRUE(post(rounded, rt.minimum).success);
    } else {
      EXPECT_EQ(post(rounded, rt.minimum).reason, "bounty-job-too-large");
    }
    // The assemble node is walked (verify/state_walk.h), never sent whole.
    const auto graph = graphs.Build(repops, 0);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    EXPECT_TRUE(verify::ElementCoversNode(repops.mode, *graph, graph->nodes.size()));
    const auto assemble = vm::NodeArbitrationCostOf(repops, *graph, graph->nodes.size());
    ASSERT_TRUE(assemble.ok()) << assemble.status().ToString();
    std::cout << "[ posting ] " << c.job.model << ": the assemble node's whole arbitration ("
              << graph->num_state_tensors << " next-state hashes) " << assemble->payload_bytes
              << " bytes, walked instead\n";
    std::cout << "[ posting ] " << c.job.model << " repops B=" << c.job.batch
              << ": whole-node arbitration up to " << t.arbitration_tx_bytes << " bytes (node "
              << t.arbitration_node << ", " << NodeName(repops, t.arbitration_node) << "), required "
              << t.required_tx_bytes << " bytes (an element move); accepted, minimum bond " << t.minimum
              << ", PostBounty used " << r.gas_used << " gas\n";
  }
}

// The deciding move's bound (verify::BoundDecidingMove, taken by
// BoundDescent at each output's first and last value) holds at every value:
// at random values of every node output of the presets, GPT-2 small
// included, the real opening — the plan's slices in chunks where they
// actually start, the examples they span, the inputs opened by hash — is
// no larger. (cnn-fashion's 28 × 28 planes start anywhere in a chunk.)
TEST(Scenario, TheDecidingMoveBoundHoldsAtEveryValue) {
  vm::KernelsGraphSource graphs;
  std::mt19937_64 rng(20261127);
  const PresetJob jobs[] = {{"mlp-fashion", 16, 512},  {"cnn-fashion", 16, 512}, {"cnn-128", 16, 512},
                            {"cnn-128-pool", 16, 512}, {"gpt-tiny", 8, 512},     {"gpt2-vocab", 2, 256},
                            {"gpt2-small", 1, 512},    {"gpt-long", 1, 64}};
  for (const auto& [p, mode] : [&] {
         std::vector<std::pair<PresetJob, kernels::Mode>> runs;
         for (const PresetJob& j : jobs) runs.emplace_back(j, kernels::Mode::kRepops);
         for (const PresetJob& j : jobs) runs.emplace_back(j, kernels::Mode::kRounded);
         return runs;
       }()) {
    SCOPED_TRACE(std::string(p.model) + " " + std::string(kernels::ModeName(mode)));
    const protocol::JobSpec job = PresetSpec(p, mode);
    const auto graph = graphs.Build(job, 0);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const auto descent = verify::BoundDescent(job.mode, *graph);
    ASSERT_TRUE(descent.ok()) << descent.status().ToString();
    std::uint64_t values = 0, plans = 0, max_chunks = 0, max_height = 0;
    for (const verify::NodeSpec& node : graph->nodes) {
      const auto shapes = verify::NodeInputShapes(*graph, node);
      ASSERT_TRUE(shapes.ok());
      for (std::uint32_t slot = 0; slot < node.output_shapes.size(); ++slot) {
        const std::int64_t numel = kernels::NumElements(node.output_shapes[slot]);
        verify::DecidingMoveBound bound;
        for (std::int64_t e : {std::int64_t{0}, numel - 1}) {
          auto b = verify::BoundDecidingMove(job.mode, node, *shapes, slot, e);
          if (!b.ok()) continue;
          bound.chunks = std::max(bound.chunks, b->chunks);
          bound.openings = std::max(bound.openings, b->openings);
          bound.examples = std::max(bound.examples, b->examples);
        }
        for (int draw = 0; draw < 24; ++draw) {
          const std::int64_t e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(numel));
          auto choice =
              verify::ChooseElementRule(job.mode, node.op_kind, node.attrs, slot, e, node.inputs, *shapes);
          if (!choice.ok()) continue;
          ++values;
          EXPECT_LE(choice->opened_inputs.size(), bound.openings)
              << node.op_kind << "/" << slot << " at " << e;
          EXPECT_LE(choice->opened_inputs.size(), descent->final_openings);
          if (choice->kind != verify::ElementKind::kPlan) {
            EXPECT_LE(static_cast<std::uint64_t>(choice->batch_examples), bound.examples);
            // The value's partial results: a tree no taller than the bound's (its walk and proofs).
            std::uint64_t leaves = 0;
            if (choice->kind == verify::ElementKind::kDot) {
              leaves = static_cast<std::uint64_t>(
                           verify::DotElementAt(node.op_kind, node.attrs, slot, e, *shapes).value().k) +
                       1;
            } else {
              leaves =
                  verify::ReduceRuleAt(job.mode, node.op_kind, node.attrs, slot, e, *shapes).value().Steps() +
                  1;
            }
            const std::uint64_t height = crypto::MerkleShape(leaves).height();
            max_height = std::max(max_height, height);
            EXPECT_LE(height, descent->partials_height) << node.op_kind << "/" << slot << " at " << e;
            continue;
          }
          ++plans;
          auto plan = verify::PlanElement(node.op_kind, node.attrs, slot, e, *shapes);
          ASSERT_TRUE(plan.ok());
          std::uint64_t chunks = 0;
          for (std::size_t i = 0; i < plan->inputs.size(); ++i) {
            const verify::InputSlice& s = plan->inputs[i];
            if (s.count > 0 && (s.output_slot >= 0 || !verify::IsBatchInput(node.inputs, i)))
              chunks += static_cast<std::uint64_t>(verify::SliceChunks(s));
          }
          max_chunks = std::max(max_chunks, chunks);
          EXPECT_LE(chunks, bound.chunks) << node.op_kind << "/" << slot << " at " << e;
          EXPECT_LE(chunks, descent->final_chunks);
          const auto examples = verify::PlanBatchPositions(*plan, node.inputs, *shapes).size();
          EXPECT_LE(examples, bound.examples) << node.op_kind << "/" << slot << " at " << e;
          EXPECT_LE(examples, descent->batch_examples);
        }
      }
    }
    EXPECT_GT(plans, 0u);
    std::printf(
        "[ deciding ] %s %s: %llu values drawn (%llu pointwise/row), largest real opening %llu chunks, "
        "tallest partial-results tree %llu; bound %llu chunks, %llu inputs by hash, %llu examples, "
        "height %llu\n",
        p.model, kernels::ModeName(mode).data(), static_cast<unsigned long long>(values),
        static_cast<unsigned long long>(plans), static_cast<unsigned long long>(max_chunks),
        static_cast<unsigned long long>(max_height), static_cast<unsigned long long>(descent->final_chunks),
        static_cast<unsigned long long>(descent->final_openings),
        static_cast<unsigned long long>(descent->batch_examples),
        static_cast<unsigned long long>(descent->partials_height));
  }
}

// The size bound is an upper bound node by node: the real payload of every
// node of a step (every mode) is no larger than its bound, and the gas the
// precompile charges for it no more than its bound.
TEST(Scenario, ArbitrationCostBoundsEveryNode) {
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified}) {
    SCOPED_TRACE(kernels::ModeName(mode));
    const TinyJob tiny = MakeTinyJob(10, 3, mode);
    auto h = Train(tiny, {});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    vm::KernelsGraphSource graphs;
    vm::Arbiter arbiter(graphs);
    for (std::uint64_t step : {std::uint64_t{0}, std::uint64_t{7}}) {
      vm::GasMeter build(1'000'000);
      auto graph = arbiter.BuildGraph(tiny.job, step, build);
      ASSERT_TRUE(graph.ok());
      const std::uint64_t nodes = graph->nodes.size() + 1;
      for (std::uint64_t i = 0; i < nodes; ++i) {
        SCOPED_TRACE(i);
        auto bound = vm::NodeArbitrationCostOf(tiny.job, *graph, i);
        ASSERT_TRUE(bound.ok()) << bound.status().ToString();
        const referee::ArbitrateArgs args = MakeArbitrate(tiny, *h, *h, 1, 0, step, i);
        EXPECT_LE(args.payload.size(), bound->payload_bytes);
        EXPECT_EQ(protocol::EncodeNodeRecord(h->records[step][i]).size(), bound->record_bytes);
        vm::ArbitrationCase c{tiny.job, step, h->h[step], h->node_trees[step].root(), nodes, i};
        vm::GasMeter meter(std::uint64_t{1} << 40);
        auto outcome = arbiter.Arbitrate(c, args.payload, meter);
        ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
        EXPECT_LE(meter.used(), bound->gas);
      }
    }
  }
}

}  // namespace
}  // namespace vt::test

namespace vt::test {
namespace {

// Certified arbitration per operator class (verify/certified_price.h): every
// operator of the presets' step graphs has a row of the price table, no
// certified node is bounded below its repops bound, and element-wise nodes
// (SGD/AdamW updates, relu, add...) pay no accumulator rounding — so the
// worst certified node is a GEMM-like or reduction node, not the update.
TEST(Scenario, CertifiedPriceCoversEveryPresetNode) {
  const PresetJob presets[] = {{"mlp-tiny", 8, 64}, {"fashion-mlp-32", 16, 512}, {"cnn-tiny", 4, 64},
                               {"gpt-tiny", 8, 512}};
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  for (const PresetJob& p : presets) {
    SCOPED_TRACE(p.model);
    const protocol::JobSpec certified = PresetSpec(p, kernels::Mode::kCertified);
    const protocol::JobSpec repops = PresetSpec(p, kernels::Mode::kRepops);
    vm::GasMeter build(std::uint64_t{1} << 40);
    auto graph = arbiter.BuildGraph(certified, 0, build);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    std::uint64_t worst = 0, worst_node = 0;
    for (std::uint64_t i = 0; i < graph->nodes.size(); ++i) {
      const verify::NodeSpec spec = verify::NodeSpecAt(*graph, i);
      SCOPED_TRACE(spec.op_kind);
      EXPECT_TRUE(verify::HasCertifiedPrice(spec.op_kind));
      auto c = vm::NodeArbitrationCostOf(certified, *graph, i);
      auto r = vm::NodeArbitrationCostOf(repops, *graph, i);
      ASSERT_TRUE(c.ok() && r.ok());
      EXPECT_GE(c->gas, r->gas);
      if (c->gas > worst) worst = c->gas, worst_node = i;
      const verify::CertifiedWork w = verify::CertifiedWorkOf(spec.op_kind, 0, verify::DeclaredOutputValues(spec));
      if (w.rounded_outputs == 0) {
        EXPECT_LE(c->gas - r->gas, verify::DeclaredOutputValues(spec) * (vm::kGas.exact_element_gas +
                                                                         vm::kGas.exact_transcendental_gas) + 64)
            << "an element-wise node pays per value, not the accumulator's rounding";
      }
    }
    std::cout << "[ certified ] " << p.model << ": worst node " << worst_node << " (op kind "
              << verify::NodeSpecAt(*graph, worst_node).op_kind << ") " << worst << " gas\n";
  }
}

}  // namespace
}  // namespace vt::test
