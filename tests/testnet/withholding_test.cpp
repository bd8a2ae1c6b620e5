// Data availability on a multi-process testnet (label testnet): a
// rounded-mode solver that names its log bundle and final state in its
// commit but never serves them cannot get the commit into any block
// (availability is block validity, referee/blob_rules.h), so its solve
// window ends and Refund slashes its bond; the same testnet then pays an
// honest solver, whose commit's blobs every node holds, pinned (also after
// a restart).
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

Result<Json> GetBounty(node::ChainClient& c, std::uint64_t id) { return c.Call("get_bounty", Json::array({id})); }

TEST(TestnetAvailability, SolverWithholdingItsLogsLosesItsBondAndAnHonestOneIsPaid) {
  ScopedTestnet t("withhold", DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp-rounded.json", 3));
  ASSERT_TRUE(UpWithAWithholdingSolver(t));

  auto loaded = worker::LoadJobWithDataset(t.net().spec().jobs.front());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->job.mode(), kernels::Mode::kRounded);
  auto c = t.Client("v1");
  auto client = t.net().Key("client");
  auto solver = t.net().Key("solver");
  ASSERT_TRUE(client.ok() && solver.ok());

  // 1. The withholding solver: 40 blocks (~8 s) to claim and commit.
  // A rounded challenger replays after the commit: 20 blocks to open a game.
  node::BountyTerms terms{1'000'000, 1'600'000, 1'400'000, 40, 20, 40};
  const vm::Amount solver_start = c.Account(solver->address())->balance;
  const vm::Amount client_start = c.Account(client->address())->balance;
  auto id = node::PostBounty(c, *client, *loaded, terms);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_EQ(*id, 0u);
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, 0).value_or("?") == "claimed"; }, 30s)) << BountyState(c, 0).value_or("?");
  auto posted = GetBounty(c, 0);
  ASSERT_TRUE(posted.ok());
  const std::uint64_t deadline = (*posted)["solve_deadline"].get<std::uint64_t>();
  // Its commit (sent, and re-sent, within the window) is never included:
  // no node holds its blobs, so no proposer proposes it and no block
  // holding it would be accepted.
  ASSERT_TRUE(c.WaitHeight(deadline + 1, 60s).ok());
  EXPECT_EQ(BountyState(c, 0).value_or("?"), "claimed") << "a commit whose blobs nobody holds reached a block";
  EXPECT_EQ(c.Account(solver->address())->nonce, 1u) << "only the claim is on chain";

  // 2. The window is over: anyone may refund; the solver's bond is slashed.
  auto refund = c.CallReferee(*client, referee::Method::kRefund, EncodeToBytes(referee::BountyIdArgs{0}));
  ASSERT_TRUE(refund.ok()) << refund.status().ToString();
  auto receipt = c.WaitReceipt(*refund, 30s);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_TRUE((*receipt)["success"].get<bool>()) << receipt->dump();
  EXPECT_EQ(BountyState(c, 0).value_or("?"), "failed");
  const vm::Amount solver_after = c.Account(solver->address())->balance;
  const vm::Amount client_after = c.Account(client->address())->balance;
  EXPECT_LE(solver_after + terms.solver_bond, solver_start) << "the solver lost its bond";
  // The reward came back (minus fees); the bond burned, so nobody profits
  // from a failure (docs/referee.md, "Threat model").
  EXPECT_GT(client_after + terms.reward, client_start) << "the client got its reward back, minus fees";
  EXPECT_LT(client_after, client_start) << "the client earns nothing from the solver's bond";

  // 3. The same testnet, an honest solver: its commit names both blobs, it
  //    is included, every node holds them, pinned, and the bounty pays.
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100"});
  ASSERT_TRUE(t.net().Stop("solver").ok());
  ASSERT_TRUE(t.net().Start("solver").ok());
  terms.solve_window = 300;
  id = node::PostBounty(c, *client, *loaded, terms);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return BountyState(c, 1).value_or("?") == "finalized"; }, 90s)) << "honest bounty: " << BountyState(c, 1).value_or("?");
  auto b1 = GetBounty(c, 1);
  ASSERT_TRUE(b1.ok());
  EXPECT_TRUE((*b1)["games"].empty()) << "the challenger, following the logs, agreed";
  auto state_blob = Hash256::FromHex((*b1)["state_blob"].get<std::string>());
  auto log_bundle = Hash256::FromHex((*b1)["commitment"]["log_bundle"].get<std::string>());
  ASSERT_TRUE(state_blob.ok() && log_bundle.ok());
  EXPECT_FALSE(state_blob->IsZero());
  for (const char* name : {"v0", "v1", "v2"}) {
    auto node = t.Client(name);
    for (const Hash256& h : {*state_blob, *log_bundle}) {
      // Already stored (the node checked it before accepting the block): no fetch.
      auto blob = node.Call("get_blob", Json::array({h.Hex()}));
      ASSERT_TRUE(blob.ok()) << name << ": " << blob.status().ToString();
      EXPECT_TRUE((*blob)["pinned"].get<bool>()) << name;
    }
  }
  // Pins survive a restart (they are written with the block).
  ASSERT_TRUE(t.net().Stop("v2").ok());
  ASSERT_TRUE(t.net().Start("v2").ok());
  auto v2 = t.Client("v2");
  ASSERT_TRUE(WaitFor([&] { return HeightOf(v2).has_value(); }, 20s));
  for (const Hash256& h : {*state_blob, *log_bundle}) {
    auto blob = v2.Call("get_blob", Json::array({h.Hex()}));
    ASSERT_TRUE(blob.ok()) << blob.status().ToString();
    EXPECT_TRUE((*blob)["pinned"].get<bool>());
  }
}

}  // namespace
}  // namespace vt::test
