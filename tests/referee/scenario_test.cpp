// Scenario tests (label `scenario`): agents play whole bounties and dispute
// games through the VM, block by block. Every block is replayed by a
// validator and the supply invariant is audited after it (TestChain).

#include <gtest/gtest.h>

#include "contract_vm/amount.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "tests/referee/scenario.h"

namespace vt::test {
namespace {

using referee::BountyState;
using referee::GamePhase;
using referee::GameResult;
using referee::Level;

constexpr vm::Amount kReward = 1'000'000;
const vm::Amount kSolverBond = ScenarioConfig{}.solver_bond;
const vm::Amount kChallengerBond = ScenarioConfig{}.challenger_bond;
constexpr vm::Amount Share(vm::Amount a) { return a / 2; }  // winner share 50%
// A loser's bond: the arbitration's submitter is reimbursed first (the winner
// here: it holds the right record), the winner gets its share of the rest,
// the remainder burns.
vm::Amount WinnerGets(vm::Amount bond, const referee::Game& g) {
  return g.reimbursement + Share(bond - g.reimbursement);
}
vm::Amount BurnedOf(vm::Amount bond, const referee::Game& g) { return bond - WinnerGets(bond, g); }

// Nodes of the tiny MLP's step graph (kernels/graph order): 0 fc.0, 1 relu,
// 2 head, 3 loss, 4 loss.seed, 5 loss.backward, 6 head.backward, 7 relu.backward,
// 8 fc.0.backward, 9 lr, 10-13 sgd updates, then the assemble node (14). A lie
// must be at a node whose changed output reaches the next state (the loss
// value, node 3, does not).
std::size_t GraphNodes() {
  const TinyJob t = MakeTinyJob(10, 3, kernels::Mode::kRepops);
  auto model = kernels::graph::DecodeModelSpec(t.job.model);
  auto opt = kernels::graph::DecodeOptimizerSpec(t.job.optimizer);
  auto shapes = kernels::graph::BatchShapes(*model, 4);
  auto g = kernels::graph::BuildStepGraph(*model, *opt, 0, *shapes);
  return g->nodes.size();
}

void ExpectWalks(const GameReport& g, std::uint64_t checkpoint, std::uint64_t step, std::uint64_t node) {
  ASSERT_EQ(g.walks.size(), 3u) << "the game must pass all three levels";
  EXPECT_EQ(g.walks[0].level, Level::kCheckpoint);
  EXPECT_EQ(g.walks[0].index, checkpoint);
  EXPECT_EQ(g.walks[1].level, Level::kStep);
  EXPECT_EQ(g.walks[1].index, step);
  EXPECT_EQ(g.walks[2].level, Level::kNode);
  EXPECT_EQ(g.walks[2].index, node);
  EXPECT_EQ(g.game.checkpoint_index, checkpoint);
  EXPECT_EQ(g.game.step, step);
  EXPECT_EQ(g.game.node_index, node);
}

TEST(Scenario, HonestSolverWithoutChallengeIsPaid) {
  ScenarioConfig c;
  c.challengers = {AgentPlan{}};  // an honest auditor: same history, opens nothing
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  EXPECT_TRUE(r.games.empty());
  EXPECT_EQ(r.net.at("client"), -static_cast<std::int64_t>(kReward));
  EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward));
  EXPECT_EQ(r.net.at("challenger0"), 0);
  EXPECT_EQ(r.burned, 0u);
  EXPECT_TRUE(r.failed_calls.empty()) << r.failed_calls.front();
}

TEST(Scenario, HonestSolverWithoutChallengeIsPaidRounded) {
  ScenarioConfig c;
  c.mode = kernels::Mode::kRounded;
  c.challengers = {AgentPlan{}};
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  EXPECT_TRUE(r.games.empty()) << "a replaying auditor following the solver's logs agrees bit for bit";
  EXPECT_FALSE(r.bounty.commitment.log_root.IsZero());
  EXPECT_FALSE(r.bounty.log_bundle.IsZero()) << "challengers learn where the logs are from the bounty";
  EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward));
}

// A lying challenger disputes every level and loses at arbitration.
TEST(Scenario, LyingChallengerIsSlashed) {
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded}) {
    SCOPED_TRACE(kernels::ModeName(mode));
    ScenarioConfig c;
    c.mode = mode;
    c.challengers = {AgentPlan{{Lie{LieKind::kOutput, 4, 6}}, std::nullopt}};
    const ScenarioReport r = RunScenario(c);
    ASSERT_EQ(r.games.size(), 1u);
    const GameReport& g = r.games[0];
    ExpectWalks(g, 2, 4, 6);
    EXPECT_EQ(g.game.result, GameResult::kSolverWon);
    EXPECT_EQ(g.game.reason, "arbitration");
    EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
    EXPECT_GT(g.game.reimbursement, 0u) << "the solver sent the arbitration";
    EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward + WinnerGets(kChallengerBond, g.game)));
    EXPECT_EQ(r.net.at("challenger0"), -static_cast<std::int64_t>(kChallengerBond));
    EXPECT_EQ(r.net.at("client"), -static_cast<std::int64_t>(kReward));
    EXPECT_EQ(r.burned, BurnedOf(kChallengerBond, g.game));
  }
}

struct AdversaryCase {
  const char* name;
  kernels::Mode mode;
  Lie lie;
  std::uint64_t checkpoint, step;
  bool last_node;       // the disputed node is the assemble node
  std::uint64_t node;   // otherwise this node
  const char* reason;
};

class SolverAdversary : public ::testing::TestWithParam<AdversaryCase> {};

// Each way a solver can lie is caught at the right checkpoint, step and node;
// the solver is slashed, the challenger rewarded, the client refunded.
TEST_P(SolverAdversary, CaughtAtTheRightNode) {
  const AdversaryCase& a = GetParam();
  ScenarioConfig c;
  c.mode = a.mode;
  c.solver.lies = {a.lie};
  c.challengers = {AgentPlan{}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  const GameReport& g = r.games[0];
  const std::uint64_t node = a.last_node ? GraphNodes() : a.node;
  ExpectWalks(g, a.checkpoint, a.step, node);
  EXPECT_EQ(g.game.result, GameResult::kChallengerWon);
  EXPECT_EQ(g.game.reason, a.reason);
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.net.at("client"), 0) << "the reward goes back to the client";
  EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(kSolverBond));
  EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(WinnerGets(kSolverBond, g.game)));
  EXPECT_EQ(r.burned, BurnedOf(kSolverBond, g.game));
  EXPECT_EQ(g.game.reimbursement > 0, std::string(a.reason) != "record-bad-op") << "only arbitrations are reimbursed";
}

INSTANTIATE_TEST_SUITE_P(
    Scenario, SolverAdversary,
    ::testing::Values(
        AdversaryCase{"WrongOutput", kernels::Mode::kRepops, {LieKind::kOutput, 7, 5}, 3, 7, false, 5, "arbitration"},
        AdversaryCase{"WrongOutputFirstStep", kernels::Mode::kRepops, {LieKind::kOutput, 0, 9}, 1, 0, false, 9,
                      "arbitration"},
        AdversaryCase{"WrongOutputLastStep", kernels::Mode::kRepops, {LieKind::kOutput, 9, 2}, 4, 9, false, 2,
                      "arbitration"},
        AdversaryCase{"WrongOutputOfNodeReadingTheBatch", kernels::Mode::kRepops, {LieKind::kOutput, 3, 0}, 2, 3,
                      false, 0, "arbitration"},
        AdversaryCase{"WrongOutputOfNodeReadingTheBatchRounded", kernels::Mode::kRounded, {LieKind::kOutput, 8, 0}, 3,
                      8, false, 0, "arbitration"},
        AdversaryCase{"WrongOpKind", kernels::Mode::kRepops, {LieKind::kSpec, 2, 1}, 1, 2, false, 1, "record-bad-op"},
        AdversaryCase{"WrongCheckpoint", kernels::Mode::kRepops, {LieKind::kCheckpoint, 2, 0}, 2, 5, true, 0,
                      "arbitration"},
        AdversaryCase{"WrongOutputRounded", kernels::Mode::kRounded, {LieKind::kOutput, 3, 4}, 2, 3, false, 4,
                      "arbitration"},
        AdversaryCase{"LogOutsideRegion", kernels::Mode::kRounded, {LieKind::kLog, 5, 13}, 2, 5, false, 13,
                      "solver-log-rejected"}),
    [](const ::testing::TestParamInfo<AdversaryCase>& p) { return std::string(p.param.name); });

// ---- timeouts and data availability -----------------------------------------------

TEST(Scenario, SilentCheatingSolverTimesOut) {
  ScenarioConfig c;
  c.solver.lies = {Lie{LieKind::kOutput, 6, 11}};
  c.solver.silent_from = GamePhase::kStepRoots;  // withholds its step-level data
  c.challengers = {AgentPlan{}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  EXPECT_EQ(r.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(r.games[0].game.reason, "timeout");
  EXPECT_EQ(r.games[0].walks.size(), 1u) << "only the checkpoint level completed";
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.games[0].game.reimbursement, 0u) << "a timeout has no arbitration to reimburse";
  EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(kSolverBond));
  EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(Share(kSolverBond)));
  // The clock gave the solver its full budget before anyone could claim.
  EXPECT_GT(r.games[0].blocks, c.clock_budget);
}

TEST(Scenario, SilentLyingChallengerTimesOut) {
  ScenarioConfig c;
  c.challengers = {AgentPlan{{Lie{LieKind::kOutput, 1, 2}}, GamePhase::kNodeWalk}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  EXPECT_EQ(r.games[0].game.result, GameResult::kSolverWon);
  EXPECT_EQ(r.games[0].game.reason, "timeout");
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward + Share(kChallengerBond)));
  EXPECT_EQ(r.net.at("challenger0"), -static_cast<std::int64_t>(kChallengerBond));
}

// Data availability at arbitration: the cheating solver owes the node's
// inputs and never supplies them; the challenger does not either, and wins
// when the solver's clock runs out.
TEST(Scenario, SolverWithholdingArbitrationInputsLoses) {
  ScenarioConfig c;
  c.solver.lies = {Lie{LieKind::kOutput, 5, 1}};
  AgentPlan passive;
  passive.arbitrates = false;  // leaves the inputs to the solver, whose duty they are
  c.challengers = {passive};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  ExpectWalks(r.games[0], 2, 5, 1);
  EXPECT_EQ(r.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(r.games[0].game.reason, "timeout");
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
}

TEST(Scenario, SolverThatNeverCommitsIsSlashedAndClientRefunded) {
  ScenarioConfig c;
  c.solver_commits = false;
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.net.at("client"), 0) << "the reward back, nothing from the claimant's bond";
  EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(kSolverBond));
  EXPECT_EQ(r.burned, kSolverBond);
}

TEST(Scenario, UnclaimedBountyIsRefunded) {
  ScenarioConfig c;
  c.solver_claims = false;
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kRefunded);
  EXPECT_EQ(r.net.at("client"), 0);
  EXPECT_EQ(r.net.at("solver"), 0);
  EXPECT_EQ(r.burned, 0u);
}

// ---- many challengers -----------------------------------------------------------------

TEST(Scenario, TwoChallengersOneHonestOneLying) {
  ScenarioConfig c;
  c.solver.lies = {Lie{LieKind::kOutput, 7, 5}};
  c.challengers = {AgentPlan{}, AgentPlan{{Lie{LieKind::kSpec, 1, 2}}, std::nullopt}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 2u);
  const GameReport& honest = r.games[0].challenger == 0 ? r.games[0] : r.games[1];
  const GameReport& liar = r.games[0].challenger == 0 ? r.games[1] : r.games[0];
  EXPECT_EQ(honest.game.result, GameResult::kChallengerWon);
  ExpectWalks(honest, 3, 7, 5);
  // The liar's divergence comes first (step 1): it loses to the solver there,
  // at the record reveal, before the honest game ends.
  EXPECT_EQ(liar.game.result, GameResult::kSolverWon);
  EXPECT_EQ(liar.game.reason, "record-bad-op");
  ExpectWalks(liar, 1, 1, 2);
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.net.at("client"), 0);
  EXPECT_EQ(liar.game.reimbursement, 0u);
  EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(WinnerGets(kSolverBond, honest.game)));
  EXPECT_EQ(r.net.at("challenger1"), -static_cast<std::int64_t>(kChallengerBond));
  EXPECT_EQ(r.net.at("solver"),
            -static_cast<std::int64_t>(kSolverBond) + static_cast<std::int64_t>(Share(kChallengerBond)));
  EXPECT_EQ(r.burned, BurnedOf(kSolverBond, honest.game) + (kChallengerBond - Share(kChallengerBond)));
}

TEST(Scenario, OtherGamesCloseWithoutContestWhenTheSolverLoses) {
  ScenarioConfig c;
  c.solver.lies = {Lie{LieKind::kOutput, 2, 1}};
  // Both honest: the first game to reach arbitration slashes the solver; the
  // second challenger is slower (silent from the node level) and is refunded.
  c.challengers = {AgentPlan{}, AgentPlan{}};
  c.challengers[1].silent_from = GamePhase::kNodeRoots;
  c.clock_budget = 30;  // long enough that the slow game cannot time out first
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 2u);
  EXPECT_EQ(r.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(r.games[1].game.result, GameResult::kNoContest);
  EXPECT_EQ(r.games[1].game.reason, "solver-lost-elsewhere");
  EXPECT_EQ(r.net.at("challenger1"), 0) << "bond refunded";
  EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(WinnerGets(kSolverBond, r.games[0].game)));
}

}  // namespace
}  // namespace vt::test
