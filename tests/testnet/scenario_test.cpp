// End-to-end flows on a multi-process testnet (label testnet): an honest
// solver daemon is paid; a cheating one is caught by the challenger daemon
// at the exact step and operator and slashed — while, mid-dispute, the
// solver daemon is killed (kill -9) and restarted and a validator is killed
// and restarted; the restarted solver still answers before its clock runs out.
#include "node/bounty_flow.h"
#include "tests/testnet/testnet_util.h"
#include "worker/job.h"

#ifndef VT_SOURCE_DIR
#error "VT_SOURCE_DIR must name the repository root"
#endif

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// Short windows: a challenge window of 12 blocks, 40 blocks on each clock.
const node::BountyTerms kTerms{1'000'000, 800'000, 400'000, 300, 12, 40};

TEST(TestnetScenario, HonestPaidThenCheaterCaughtAcrossDaemonAndValidatorRestarts) {
  ScopedTestnet t("scenario",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp.json", 4));
  ASSERT_TRUE(t.ok());
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100"});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  ASSERT_TRUE(t.net().Up().ok());

  auto loaded = worker::LoadJobWithDataset(t.net().spec().jobs.front());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto c = t.Client("v0");
  auto client = t.net().Key("client");
  auto solver = t.net().Key("solver");
  ASSERT_TRUE(client.ok() && solver.ok());
  auto post = [&] {
    auto id = node::PostBounty(c, *client, *loaded, kTerms);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  };

  // 1. Honest: finalized, the solver earns the reward.
  const vm::Amount solver_before = c.Account(solver->address())->balance;
  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(c, 0).value_or("") == "finalized"; }, 60s))
      << "honest bounty: " << BountyState(c, 0).value_or("?");
  const vm::Amount solver_after = c.Account(solver->address())->balance;
  EXPECT_GT(solver_after, solver_before + 900'000) << "reward paid (minus fees)";

  // 2. Cheating: wrong output of node 1 at step 5.
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--adversary", "wrong-output:step=5,node=1"});
  ASSERT_TRUE(t.net().Stop("solver").ok());
  ASSERT_TRUE(t.net().Start("solver").ok());
  post();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto b = c.Call("get_bounty", Json::array({1}));
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
  EXPECT_TRUE(WaitFor([&] { return BountyState(c, 1).value_or("") == "failed"; }, 90s))
      << "cheating bounty: " << BountyState(c, 1).value_or("?");
  auto game = c.Call("get_dispute", Json::array({0}));
  ASSERT_TRUE(game.ok());
  EXPECT_EQ((*game)["result"], "challenger-won");
  EXPECT_EQ((*game)["reason"], "arbitration") << "decided by re-execution, not by a timeout";
  EXPECT_EQ((*game)["step"], 5u);
  EXPECT_EQ((*game)["node_index"], 1u);
  // The restarted validator is on the same chain.
  auto c2 = t.Client("v2");
  const std::uint64_t h = *HeightOf(c);
  ASSERT_TRUE(c2.WaitHeight(h, 30s).ok());
  EXPECT_EQ(BlockHashAt(c2, h - 1), BlockHashAt(c, h - 1));
}

// Rounded mode end to end: the solver daemon publishes its rounding logs as
// a blob on its own node; the challenger's node (another validator) fetches
// it from peers; the challenger replays following the logs and agrees with
// the honest run, then catches a cheating one at the planted step and node.
TEST(TestnetScenario, RoundedModeLogsTravelOverTheNetworkAndACheaterIsCaught) {
  ScopedTestnet t(
      "rounded",
      DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp-rounded.json", 3));
  ASSERT_TRUE(t.ok());
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100"});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  ASSERT_TRUE(t.net().Up().ok());

  auto loaded = worker::LoadJobWithDataset(t.net().spec().jobs.front());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->job.mode(), kernels::Mode::kRounded);
  auto c = t.Client("v0");
  auto client = t.net().Key("client");
  ASSERT_TRUE(client.ok());
  auto post = [&] {
    auto id = node::PostBounty(c, *client, *loaded, kTerms);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
  };

  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(c, 0).value_or("") == "finalized"; }, 90s))
      << "honest rounded bounty: " << BountyState(c, 0).value_or("?");
  auto b0 = c.Call("get_bounty", Json::array({0}));
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

  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--adversary", "wrong-output:step=5,node=1"});
  ASSERT_TRUE(t.net().Stop("solver").ok());
  ASSERT_TRUE(t.net().Start("solver").ok());
  post();
  EXPECT_TRUE(WaitFor([&] { return BountyState(c, 1).value_or("") == "failed"; }, 120s))
      << "cheating rounded bounty: " << BountyState(c, 1).value_or("?");
  auto game = c.Call("get_dispute", Json::array({0}));
  ASSERT_TRUE(game.ok());
  EXPECT_EQ((*game)["result"], "challenger-won");
  EXPECT_EQ((*game)["reason"], "arbitration");
  EXPECT_EQ((*game)["step"], 5u);
  EXPECT_EQ((*game)["node_index"], 1u);
}

}  // namespace
}  // namespace vt::test
