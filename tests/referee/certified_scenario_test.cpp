// Certified mode (job mode 3) on chain, attack first (label `scenario`):
// agents play whole bounties through the VM, block by block, with the
// arbitration precompile re-executing the disputed node by the exact path
// only (kernels/certified.h certified_exact_only) and charging its own price
// (contract_vm/gas.h exact_flops_per_gas, exact_output_gas).
//   * a cheating certified solver is caught at the checkpoint, step and node
//     of its lie and slashed; a lying challenger loses; an honest bounty is
//     paid; a certified commitment carrying a log root or a log bundle is
//     refused;
//   * property: random lies (step, node, which side lies) over seeds — the
//     honest party always wins, at exactly the lie's position.

#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <string>

#include "common/philox.h"
#include "contract_vm/amount.h"
#include "referee/bonds.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/scenario.h"

namespace vt::test {
namespace {

using referee::BountyState;
using referee::GameResult;
using referee::Level;
using referee::Method;

constexpr vm::Amount kReward = 1'000'000;
const vm::Amount kSolverBond = ScenarioConfig{}.solver_bond;
const vm::Amount kChallengerBond = ScenarioConfig{}.challenger_bond;
constexpr vm::Amount Share(vm::Amount a) { return a / 2; }  // winner share 50%
vm::Amount WinnerGets(vm::Amount bond, const referee::Game& g) { return g.reimbursement + Share(bond - g.reimbursement); }

ScenarioConfig Certified() {
  ScenarioConfig c;
  c.mode = kernels::Mode::kCertified;
  return c;
}

// The checkpoint index holding step `step` with the scenarios' interval 3.
std::uint64_t CheckpointOf(std::uint64_t step) { return step / 3 + 1; }

void ExpectWalks(const GameReport& g, std::uint64_t checkpoint, std::uint64_t step, std::uint64_t node) {
  ASSERT_EQ(g.walks.size(), 3u) << "the game must pass all three levels";
  EXPECT_EQ(g.walks[0].level, Level::kCheckpoint);
  EXPECT_EQ(g.walks[0].index, checkpoint);
  EXPECT_EQ(g.walks[1].level, Level::kStep);
  EXPECT_EQ(g.walks[1].index, step);
  EXPECT_EQ(g.walks[2].level, Level::kNode);
  EXPECT_EQ(g.walks[2].index, node);
}

TEST(CertifiedScenario, TheCertifiedBondPricesTheExactPath) {
  // The same job in both modes, arbitrated node by node (a repops game may
  // also descend to the element level, priced in on a chain that plays it):
  // certified arbitration costs more gas (the exact path's flops and
  // per-output price), so its minimum bond is larger.
  const TinyJob repops = MakeTinyJob(10, 3, kernels::Mode::kRepops);
  const TinyJob certified = MakeTinyJob(10, 3, kernels::Mode::kCertified);
  referee::RefereeParams whole;
  whole.element_level = false;
  const vm::Amount repops_min = MinimumBond(repops.job, whole), certified_min = MinimumBond(certified.job);
  EXPECT_GT(MinimumBond(certified.job, whole), repops_min);
  // On a chain that plays the element level a certified game descends too
  // (the dot rule over exact sums, the pointwise rule; a reduction stays
  // whole): its moves are priced in, each at least as dear as repops' (an
  // exact leaf travels in 82 bytes, an fp32 one in 5).
  EXPECT_GT(certified_min, MinimumBond(certified.job, whole)) << "the element level's moves are priced in";
  EXPECT_GT(BondTermsOf(certified.job).move_gas, BondTermsOf(repops.job).move_gas);
  EXPECT_GT(MinimumBond(repops.job), repops_min) << "the element level's moves are priced in";
  EXPECT_LT(certified_min, kChallengerBond) << "the scenarios' bonds must stay above the minimum";
  std::printf("tiny MLP minimum bond: repops %llu, certified %llu\n", static_cast<unsigned long long>(repops_min),
              static_cast<unsigned long long>(certified_min));
}

TEST(CertifiedScenario, HonestCertifiedSolverIsPaid) {
  ScenarioConfig c = Certified();
  c.challengers = {AgentPlan{}};  // an honest auditor: same bits, opens nothing
  const ScenarioReport r = RunScenario(c);
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  EXPECT_EQ(r.bounty.mode, static_cast<std::uint8_t>(kernels::Mode::kCertified));
  EXPECT_TRUE(r.games.empty());
  EXPECT_TRUE(r.bounty.commitment.log_root.IsZero()) << "certified mode has no logs";
  EXPECT_TRUE(r.bounty.log_bundle.IsZero());
  EXPECT_EQ(r.net.at("client"), -static_cast<std::int64_t>(kReward));
  EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward));
  EXPECT_EQ(r.burned, 0u);
  EXPECT_TRUE(r.failed_calls.empty()) << r.failed_calls.front();
}

struct CheatCase {
  const char* name;
  Lie lie;
  std::uint64_t checkpoint, step, node;  // node: the graph node, or the assemble node (14) for a checkpoint lie
};

class CertifiedCheat : public ::testing::TestWithParam<CheatCase> {};

TEST_P(CertifiedCheat, CaughtAtTheRightNodeAndSlashed) {
  const CheatCase& a = GetParam();
  ScenarioConfig c = Certified();
  c.solver.lies = {a.lie};
  c.challengers = {AgentPlan{}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  const GameReport& g = r.games[0];
  ExpectWalks(g, a.checkpoint, a.step, a.node);
  EXPECT_EQ(g.game.result, GameResult::kChallengerWon);
  EXPECT_EQ(g.game.reason, "arbitration");
  EXPECT_GT(g.game.reimbursement, 0u) << "the arbitration (exact path) is reimbursed from the loser's bond";
  EXPECT_EQ(r.bounty.state, BountyState::kFailed);
  EXPECT_EQ(r.net.at("client"), 0) << "the reward goes back to the client";
  EXPECT_EQ(r.net.at("solver"), -static_cast<std::int64_t>(kSolverBond));
  EXPECT_EQ(r.net.at("challenger0"), static_cast<std::int64_t>(WinnerGets(kSolverBond, g.game)));
  EXPECT_TRUE(r.failed_calls.empty()) << r.failed_calls.front();
}

// Nodes of the tiny MLP's step (tests/referee/scenario_test.cpp): 0 fc.0
// (reads the batch), 2 head, 7 relu.backward (its input is head.backward's
// GEMM), 11 an SGD update; 14 the assemble node. (A lie in fc.0.backward's
// output 0, the gradient of the batch, reaches nothing: no game.)
INSTANTIATE_TEST_SUITE_P(
    Scenario, CertifiedCheat,
    ::testing::Values(CheatCase{"WrongOutputOfNodeReadingTheBatch", {LieKind::kOutput, 3, 0}, 2, 3, 0},
                      CheatCase{"WrongGemmOutput", {LieKind::kOutput, 7, 2}, 3, 7, 2},
                      CheatCase{"WrongHiddenGradient", {LieKind::kOutput, 0, 7}, 1, 0, 7},
                      CheatCase{"WrongUpdateLastStep", {LieKind::kOutput, 9, 11}, 4, 9, 11},
                      CheatCase{"WrongCheckpoint", {LieKind::kCheckpoint, 2, 0}, 2, 5, 14}),
    [](const ::testing::TestParamInfo<CheatCase>& p) { return std::string(p.param.name); });

TEST(CertifiedScenario, LyingChallengerLosesToAnHonestCertifiedSolver) {
  ScenarioConfig c = Certified();
  c.challengers = {AgentPlan{{Lie{LieKind::kOutput, 4, 6}}, std::nullopt}};
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  const GameReport& g = r.games[0];
  ExpectWalks(g, 2, 4, 6);
  EXPECT_EQ(g.game.result, GameResult::kSolverWon);
  EXPECT_EQ(g.game.reason, "arbitration");
  EXPECT_EQ(r.bounty.state, BountyState::kFinalized);
  EXPECT_EQ(r.net.at("solver"), static_cast<std::int64_t>(kReward + WinnerGets(kChallengerBond, g.game)));
  EXPECT_EQ(r.net.at("challenger0"), -static_cast<std::int64_t>(kChallengerBond));
}

// A certified solver may not commit a log root or name a log bundle (no logs
// exist in certified mode: a log root would be an unplayable commitment).
TEST(CertifiedScenario, CommitWithALogRootOrBundleIsRefused) {
  ScenarioConfig c = Certified();
  c.solver_commits = false;  // this test sends the commits itself
  ScenarioDriver d(c);
  d.Start();
  TestChain& chain = d.chain();
  const crypto::SecretKey& solver = d.key(1);
  auto send = [&](const referee::CommitArgs& a) {
    return chain.Run(chain.Call(solver, referee::kRefereeContractId, static_cast<std::uint16_t>(Method::kCommit),
                                EncodeToBytes(a)));
  };
  History with_log = d.history(1);
  with_log.log_root.bytes[0] = 1;
  EXPECT_EQ(send(MakeCommit(with_log, 0, solver)).reason, "commit-bad-log-root");
  referee::CommitArgs bundle = MakeCommit(d.history(1), 0, solver);
  bundle.log_bundle.bytes[3] = 7;
  EXPECT_EQ(send(bundle).reason, "commit-bad-log-bundle");
  const vm::Receipt ok = send(MakeCommit(d.history(1), 0, solver));
  EXPECT_TRUE(ok.success) << ok.reason;
}

// Property: over seeds, a random side lies at a random step and node; the
// game always ends at exactly that position and the honest side wins.
TEST(CertifiedScenario, RandomLiesTheHonestSideAlwaysWins) {
  // Nodes whose output 0 reaches the next state (not 3, the loss value, nor
  // 8, fc.0.backward's gradient of the batch).
  constexpr std::uint32_t kNodes[] = {0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 13};
  PhiloxStream rng(2026, 0, 12);
  int solver_lies = 0, challenger_lies = 0;
  for (int seed = 0; seed < 16; ++seed) {
    const std::uint64_t step = rng.NextU32() % 10;
    const std::uint32_t node = kNodes[rng.NextU32() % std::size(kNodes)];
    const bool solver_lying = (rng.NextU32() & 1u) != 0 || seed == 0;
    SCOPED_TRACE(::testing::Message() << "seed " << seed << ": " << (solver_lying ? "solver" : "challenger")
                                      << " lies at step " << step << ", node " << node);
    ScenarioConfig c = Certified();
    const Lie lie{LieKind::kOutput, step, node};
    if (solver_lying) {
      c.solver.lies = {lie};
      c.challengers = {AgentPlan{}};
      ++solver_lies;
    } else {
      c.challengers = {AgentPlan{{lie}, std::nullopt}};
      ++challenger_lies;
    }
    const ScenarioReport r = RunScenario(c);
    ASSERT_EQ(r.games.size(), 1u);
    ExpectWalks(r.games[0], CheckpointOf(step), step, node);
    EXPECT_EQ(r.games[0].game.result, solver_lying ? GameResult::kChallengerWon : GameResult::kSolverWon);
    EXPECT_EQ(r.bounty.state, solver_lying ? BountyState::kFailed : BountyState::kFinalized);
    EXPECT_LT(r.net.at(solver_lying ? "solver" : "challenger0"), 0) << "the liar pays";
  }
  EXPECT_GT(solver_lies, 0);
  EXPECT_GT(challenger_lies, 0) << "draws must exercise both sides";
}

}  // namespace
}  // namespace vt::test
