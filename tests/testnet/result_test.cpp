// The client's side end to end on a multi-process testnet (label testnet):
// `vt bounty result` fetches the trained model a solver committed to (the
// blob travels from the solver's node to the client's over P2P), checks it
// against the commitment and writes safetensors; `vt bounty post --init`
// starts the next bounty from those weights (fine-tuning), the solver and
// the challenger fetch and check them, and it finalizes without a dispute;
// a bounty naming an h_0 that nobody can produce is never claimed.
#include <random>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "node/bounty_flow.h"
#include "tests/testnet/testnet_util.h"
#include "worker/job.h"
#include "worker/model_weights.h"
#include "worker/safetensors.h"

#ifndef VT_SOURCE_DIR
#error "VT_SOURCE_DIR must name the repository root"
#endif

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
namespace fs = std::filesystem;

const node::BountyTerms kTerms{1'000'000, 3'000'000, 2'000'000, 300, 12, 40};

TEST(TestnetResult, ClientFetchesTheModelAndFineTunesFromItInANextBounty) {
  const fs::path job_file = fs::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp.json";
  ScopedTestnet t("result", DaemonSpec(job_file, 3));
  ASSERT_TRUE(t.ok());
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--threads", "1"});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100", "--threads", "1"});
  ASSERT_TRUE(t.net().Up().ok());
  // The client talks to v1; the solver's node is v0, the challenger's v2.
  auto c = t.Client("v1");
  const std::string rpc = "--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v1"));
  const std::string keys = "--passphrase-file " + t.net().PassphrasePath().string() + " ";
  const std::string client_key = (t.net().dir() / "keys" / "client.key").string();
  auto loaded = worker::LoadJobWithDataset(job_file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();

  // 1. A bounty trained from the seeded init, finalized.
  auto client = t.net().Key("client");
  ASSERT_TRUE(client.ok());
  auto b0 = node::PostBounty(c, *client, *loaded, kTerms);
  ASSERT_TRUE(b0.ok()) << b0.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, *b0).value_or("") == "finalized"; }, 90s))
      << BountyState(c, *b0).value_or("?");
  auto bounty0 = c.Bounty(*b0);
  ASSERT_TRUE(bounty0.ok());
  EXPECT_FALSE(bounty0->state_blob.IsZero()) << "the solver named its final checkpoint";

  // 2. vt bounty result: checked against the commitment, written as safetensors.
  const fs::path dir = t.net().dir();
  const fs::path weights = dir / "b0.safetensors";
  CliRun r = Vt(rpc + " --json bounty result " + std::to_string(*b0) + " --out " + weights.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json out = Json::parse(r.out);
  EXPECT_EQ(out["state_hash"], bounty0->commitment.final_state_hash.Hex());
  EXPECT_EQ(out["step"], loaded->job.spec.num_steps);
  auto file = worker::LoadSafetensors(weights);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->metadata["veritrain.state_hash"], bounty0->commitment.final_state_hash.Hex());
  EXPECT_EQ(file->metadata["veritrain.bounty_id"], std::to_string(*b0));
  EXPECT_EQ(file->metadata["veritrain.job_hash"], loaded->job.Hash().Hex());
  EXPECT_EQ(file->metadata["veritrain.step"], std::to_string(loaded->job.spec.num_steps));
  EXPECT_TRUE(file->tensors.count("fc.0.weight") && file->tensors.count("head.bias"));
  EXPECT_EQ(file->tensors.size(), 4u) << "parameters only: no optimizer state";
  // The library path agrees bit for bit.
  auto fetched = node::FetchBountyResult(c, *b0);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_TRUE(file->tensors.at("fc.0.weight").BitwiseEqual(fetched->state.tensors.at("fc.0.weight")));

  // An open bounty has no result yet: a clear refusal, exit code 1.
  // 3. Fine-tune: the next bounty starts from those weights.
  r = Vt(rpc + " " + keys + "--json bounty post --from " + client_key + " --job " + job_file.string() +
         " --init " + weights.string() + " --solve-window 300 --challenge-window 12 --clock-budget 40");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json posted = Json::parse(r.out);
  const std::uint64_t b1 = posted["bounty_id"];
  ASSERT_TRUE(posted.contains("initial_blob"));
  worker::Job with_init = loaded->job;
  ASSERT_TRUE(worker::LoadInitialWeights(with_init, weights).ok());
  const Hash256 h0 = worker::StateHash(*worker::InitialStateOf(with_init));
  auto bounty1 = c.Bounty(b1);
  ASSERT_TRUE(bounty1.ok());
  EXPECT_EQ(bounty1->initial_state, h0);
  EXPECT_NE(bounty1->initial_state, bounty0->initial_state);
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, b1).value_or("") == "finalized"; }, 90s))
      << BountyState(c, b1).value_or("?");
  bounty1 = c.Bounty(b1);
  auto games1 = c.BountyGames(b1);
  ASSERT_TRUE(games1.ok()) << games1.status().ToString();
  EXPECT_TRUE(games1->empty()) << "the challenger replayed from the same weights and agreed";
  EXPECT_NE(bounty1->commitment.final_state_hash, bounty0->commitment.final_state_hash);
  auto fetched1 = node::FetchBountyResult(c, b1);
  ASSERT_TRUE(fetched1.ok()) << fetched1.status().ToString();

  // 4. An h_0 nobody can produce (no blob, not the seeded init): never
  // claimed. The solver polls bounties in id order, so once the honest
  // bounty after it is claimed, it has passed this one over.
  referee::PostBountyArgs bogus;
  bogus.job = loaded->job.spec;
  bogus.initial_state = crypto::Sha256Digest(std::string_view("no such state"));
  bogus.reward = 1000;
  auto minimum = node::MinimumBond(loaded->job.spec);
  ASSERT_TRUE(minimum.ok()) << minimum.status().ToString();
  bogus.solver_bond = bogus.challenger_bond = *minimum;
  bogus.solve_window = 300;
  bogus.challenge_window = 12;
  bogus.clock_budget = 40;
  auto tx = c.CallReferee(*client, referee::Method::kPostBounty, EncodeToBytes(bogus));
  ASSERT_TRUE(tx.ok());
  auto posted_bogus = c.WaitReceipt(*tx);
  ASSERT_TRUE(posted_bogus.ok());
  ASSERT_TRUE((*posted_bogus)["success"].get<bool>()) << posted_bogus->dump();
  const std::uint64_t b2 = b1 + 1;
  auto b3 = node::PostBounty(c, *client, *loaded, kTerms);
  ASSERT_TRUE(b3.ok());
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, *b3).value_or("open") != "open"; }, 60s));
  EXPECT_EQ(BountyState(c, b2).value_or("?"), "open") << "the solver did not lock its bond on an untrainable bounty";
  r = Vt(rpc + " bounty result " + std::to_string(b2) + " --out " + (dir / "none.safetensors").string());
  EXPECT_EQ(r.code, 1) << "no result for an open bounty";
}

}  // namespace
}  // namespace vt::test
