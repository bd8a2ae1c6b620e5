// The fine-tuning recipe of docs/demo.md on a multi-process testnet (label
// testnet): a tiny GPT trained by one bounty is the starting point of the
// next. Along the way: `vt bounty show` reports the solver's signed progress
// (node/solver_note.h); `vt bounty result --checkpoint I` gets an earlier
// committed checkpoint, which the solver publishes on request, checked
// against its leaf and the leaf's Merkle proof — and that state is the one
// an independent local run reaches at that step; out-of-range and bad
// requests are refused with their reason.
#include <cmath>

#include "node/bounty_flow.h"
#include "tests/testnet/testnet_util.h"
#include "worker/job.h"
#include "worker/run_dir.h"
#include "worker/safetensors.h"
#include "worker/trainer.h"

#ifndef VT_SOURCE_DIR
#error "VT_SOURCE_DIR must name the repository root"
#endif

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
namespace fs = std::filesystem;

Json ParseOr(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const std::exception&) {
    return Json();
  }
}

TEST(TestnetFinetune, TinyGptFineTunedFromAnEarlierBountyWithProgressAndProvenCheckpoints) {
  const fs::path pretrain = fs::path(VT_SOURCE_DIR) / "testnet/jobs/tiny-gpt.json";
  const fs::path finetune = fs::path(VT_SOURCE_DIR) / "testnet/jobs/tiny-gpt-finetune.json";
  node::TestnetSpec spec = DaemonSpec(pretrain, 3);
  spec.jobs.push_back(finetune);
  ScopedTestnet t("finetune", spec);
  ASSERT_TRUE(t.ok());
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--threads", "1"});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100", "--threads", "1"});
  ASSERT_TRUE(t.net().Up().ok());
  // The client talks to v0, the node the solver's daemon keeps its notes on;
  // the challenger's node is v2, so the blobs still cross P2P.
  auto c = t.Client("v0");
  const std::string vt = "--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v0")) + " --passphrase-file " +
                         t.net().PassphrasePath().string() + " --json ";
  const std::string client_key = (t.net().dir() / "keys" / "client.key").string();
  const std::string windows = " --solve-window 300 --challenge-window 12 --clock-budget 40";
  const fs::path dir = t.net().dir();

  // 1. Pretrain. While it runs, `vt bounty show` carries the solver's progress.
  CliRun r = Vt(vt + "bounty post --from " + client_key + " --job " + pretrain.string() + windows);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::uint64_t b0 = ParseOr(r.out)["bounty_id"];
  Json progress;
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json shown = ParseOr(Vt(vt + "bounty show " + std::to_string(b0)).out);
        if (!shown.contains("progress")) return false;
        progress = shown["progress"];
        return true;
      },
      120s))
      << "no progress note";
  EXPECT_EQ(progress["num_steps"], 16u);
  EXPECT_GE(progress["step"].get<std::uint64_t>(), 1u);
  EXPECT_LE(progress["step"].get<std::uint64_t>(), 16u);
  const double loss = progress["loss"];
  EXPECT_TRUE(std::isfinite(loss) && loss > 0) << loss;
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, b0).value_or("") == "finalized"; }, 150s))
      << BountyState(c, b0).value_or("?");
  const Json done = ParseOr(Vt(vt + "bounty show " + std::to_string(b0)).out);
  ASSERT_TRUE(done.contains("progress")) << done.dump();
  EXPECT_EQ(done["progress"]["step"], 16u) << "the last note of a finished run";
  EXPECT_EQ(done["progress"]["eta_ms"], 0u);

  // 2. The model, and an earlier checkpoint: 16 steps, one every 4 → leaves 0..4; #2 is step 8.
  const fs::path model0 = dir / "gpt-0.safetensors";
  r = Vt(vt + "bounty result " + std::to_string(b0) + " --out " + model0.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json final0 = ParseOr(r.out);
  EXPECT_EQ(final0["checkpoint"], 4u);
  EXPECT_EQ(final0["step"], 16u);
  const fs::path ck2 = dir / "gpt-0-ck2.safetensors";
  r = Vt(vt + "bounty result " + std::to_string(b0) + " --checkpoint 2 --timeout 60 --out " + ck2.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json mid = ParseOr(r.out);
  EXPECT_EQ(mid["checkpoint"], 2u);
  EXPECT_EQ(mid["step"], 8u);
  EXPECT_NE(mid["state_hash"], final0["state_hash"]);
  auto file = worker::LoadSafetensors(ck2);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->metadata["veritrain.checkpoint"], "2");
  EXPECT_EQ(file->metadata["veritrain.step"], "8");
  EXPECT_EQ(file->metadata["veritrain.state_hash"], mid["state_hash"]);
  EXPECT_EQ(file->tensors.size(), 2u * 12 + 5) << "12 per block; wte, wpe, ln_f.{weight,bias}, lm_head (tied)";
  {
    // Independent: our own run of the same job reaches that state at step 8.
    auto loaded = worker::LoadJobWithDataset(pretrain);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    worker::TrainOptions opts;
    opts.stop_at_step = 8;
    ASSERT_TRUE(worker::Train(loaded->job, loaded->dataset, dir / "local-run", opts).ok());
    auto run = worker::RunDir::Open(dir / "local-run", false);
    ASSERT_TRUE(run.ok());
    auto manifest = run->LoadManifest();
    ASSERT_TRUE(manifest.ok() && manifest->checkpoints.size() == 3);
    EXPECT_EQ(manifest->checkpoints[2].state_hash.Hex(), mid["state_hash"]);
  }
  // From another node: the note comes from the solver's node (--solver-node),
  // the blob reaches v1 from its peers over P2P.
  const std::string on_v1 = "--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v1")) + " --json ";
  r = Vt(on_v1 + "bounty result " + std::to_string(b0) + " --checkpoint 1 --solver-node 127.0.0.1:" +
         std::to_string(t.net().rpc_port("v0")) + " --timeout 60 --out " + (dir / "ck1.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(ParseOr(r.out)["step"], 4u);
  // Checkpoint 0 is h_0 (the seeded init), also served on request.
  auto h0 = node::FetchBountyResult(c, b0, 60s, 0);
  ASSERT_TRUE(h0.ok()) << h0.status().ToString();
  auto bounty0 = c.Bounty(b0);
  ASSERT_TRUE(bounty0.ok());
  EXPECT_EQ(h0->state_hash, bounty0->initial_state);
  EXPECT_EQ(h0->state.step, 0u);
  // Refusals name the problem: no checkpoint 5; an open bounty has none.
  r = Vt(vt + "bounty result " + std::to_string(b0) + " --checkpoint 5 --out " + (dir / "x.safetensors").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(ParseOr(r.out)["error"]["reason"], "checkpoint-out-of-range") << r.out;
  EXPECT_EQ(Vt(vt + "bounty result " + std::to_string(b0) + " --checkpoint -1 --out x").code, 2);

  // 3. Fine-tune from the pretrained model.
  r = Vt(vt + "bounty post --from " + client_key + " --job " + finetune.string() + " --init " + model0.string() +
         windows);
  ASSERT_EQ(r.code, 0) << r.out;
  const Json posted = ParseOr(r.out);
  const std::uint64_t b1 = posted["bounty_id"];
  EXPECT_TRUE(posted.contains("initial_blob"));
  ASSERT_TRUE(WaitFor([&] { return BountyState(c, b1).value_or("") == "finalized"; }, 150s))
      << BountyState(c, b1).value_or("?");
  auto games = c.BountyGames(b1);
  ASSERT_TRUE(games.ok());
  EXPECT_TRUE(games->empty()) << "the challenger replayed from the same weights and agreed";
  const fs::path model1 = dir / "gpt-1.safetensors";
  r = Vt(vt + "bounty result " + std::to_string(b1) + " --out " + model1.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const Json final1 = ParseOr(r.out);
  EXPECT_EQ(final1["step"], 8u);
  EXPECT_NE(final1["state_hash"], final0["state_hash"]);
  // The fine-tune's h_0 (its checkpoint 0) is the pretrained model's weights.
  auto start1 = node::FetchBountyResult(c, b1, 60s, 0);
  ASSERT_TRUE(start1.ok()) << start1.status().ToString();
  auto pre = worker::LoadSafetensors(model0);
  ASSERT_TRUE(pre.ok());
  EXPECT_TRUE(start1->state.tensors.at("wte.weight").BitwiseEqual(pre->tensors.at("transformer.wte.weight")))
      << "bounty 1 started from bounty 0's final weights";

  // 4. No solver to ask: the request stays open and the client is told
  // what happened and what to try, within its --timeout.
  ASSERT_TRUE(t.net().Stop("solver").ok());
  r = Vt(vt + "bounty result " + std::to_string(b1) + " --checkpoint 1 --timeout 2 --out " +
         (dir / "y.safetensors").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(ParseOr(r.out)["error"]["reason"], "checkpoint-not-served") << r.out;
  EXPECT_FALSE(fs::exists(dir / "y.safetensors"));
}

}  // namespace
}  // namespace vt::test
