// The web explorer in a real browser (label testnet): a 3-validator testnet
// with a cheating solver daemon and a challenger daemon; headless Chromium
// loads vt-node's explorer pages while the dispute runs (the solver daemon
// paused, so the game is still open) and after it ends,
// and the rendered DOM must show what the chain says: the game pinned to the
// planted step and operator node, both parties' moves level by level, the
// clocks and bonds, the bounty's timeline and loss curve. Screenshots go to
// the test's output directory. Skipped (with the reason) only where Chromium
// is missing or cannot start.
#include <gtest/gtest.h>

#include "node/bounty_flow.h"
#include "node/explorer_rpc.h"
#include "tests/testnet/headless_chromium.h"
#include "tests/testnet/testnet_util.h"
#include "worker/job.h"

#ifndef VT_SOURCE_DIR
#error "VT_SOURCE_DIR must name the repository root"
#endif
#ifndef VT_TEST_OUTPUT_DIR
#error "VT_TEST_OUTPUT_DIR must name where screenshots go"
#endif

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

constexpr std::uint64_t kCheatStep = 5;
// loss.backward (cross_entropy_backward): a reduction, which rounded mode
// settles at one value over the row's fp64 sums, its epilogue by the
// node's log opened at the value.
constexpr std::uint64_t kCheatNode = 5;

bool Contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// Why Chromium cannot render here, or nullopt when it can.
std::optional<std::string> BrowserUnavailable(HeadlessChromium& browser) {
  BrowserRun probe = browser.DumpDom("data:text/html,<p id=probe>ok</p>", 100);
  if (probe.exited && probe.exit_code == 0 && Contains(probe.out, "id=\"probe\"")) return std::nullopt;
  const std::string tail = probe.err.size() > 400 ? probe.err.substr(probe.err.size() - 400) : probe.err;
  return "chromium did not render a page (exit " + std::to_string(probe.exit_code) + "): " + tail;
}

TEST(TestnetExplorer, BrowserShowsTheDisputeLevelByLevelAndTheBountyTimeline) {
  const std::optional<std::filesystem::path> exe = FindChromium();
  if (!exe) GTEST_SKIP() << "no chromium on PATH (./vt setup installs Debian's chromium; VT_CHROMIUM names another)";
  const std::filesystem::path out_dir = VT_TEST_OUTPUT_DIR;
  std::filesystem::remove_all(out_dir);
  std::filesystem::create_directories(out_dir);
  HeadlessChromium browser(*exe, std::filesystem::temp_directory_path() / ("vt-chromium-" + std::to_string(::getpid())));
  if (auto why = BrowserUnavailable(browser)) GTEST_SKIP() << *why;

  // Rounded mode: the solver publishes its run manifest (with the losses).
  ScopedTestnet t("explorer",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/synthetic-mlp-rounded.json", 3));
  ASSERT_TRUE(t.ok());
  const std::string cheat = "wrong-output:step=" + std::to_string(kCheatStep) + ",node=" + std::to_string(kCheatNode);
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--adversary", cheat});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  ASSERT_TRUE(t.net().Up().ok());
  auto c = t.Client("v0");
  const std::string base = "http://127.0.0.1:" + std::to_string(t.net().rpc_port("v0")) + "/";

  // The explorer is served by the node: the page and its script.
  BrowserRun home0 = browser.DumpDom(base);
  ASSERT_TRUE(home0.exited) << "chromium overran its time limit";
  EXPECT_TRUE(Contains(home0.out, "veritrain explorer"));
  EXPECT_TRUE(Contains(home0.out, "no bounty posted yet")) << home0.out.substr(0, 2000);
  EXPECT_TRUE(Contains(home0.out, ">client<")) << "genesis accounts listed";

  auto loaded = worker::LoadJobWithDataset(t.net().spec().jobs.front());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto client = t.net().Key("client");
  ASSERT_TRUE(client.ok());
  // 150 blocks (30 s) on each clock: room to pause the solver mid-game.
  const node::BountyTerms terms{1'000'000, 1'600'000, 1'400'000, 300, 12, 150};
  auto id = node::PostBounty(c, *client, *loaded, terms);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_EQ(*id, 0u);

  auto game_phase = [&]() -> std::string {
    auto g = c.Call("get_dispute", Json::array({0}));
    return g.ok() ? (*g)["phase"].get<std::string>() : "";
  };
  ASSERT_TRUE(WaitFor([&] { return !game_phase().empty(); }, 90s)) << "no dispute opened";

  // Live: the solver daemon is paused (SIGSTOP) as soon as the game opens,
  // so the game is still running while the browser renders it: the page says
  // so, draws the level in progress and shows the solver's clock running.
  ASSERT_TRUE(t.net().Pause("solver").ok());
  const std::string before = game_phase();
  BrowserRun live = browser.DumpDom(base + "#/game/0", 3000);
  BrowserRun live_shot = browser.Screenshot(base + "#/game/0", out_dir / "explorer-dispute-live.png", 1280, 1200, 2000);
  const std::string after = game_phase();
  ASSERT_TRUE(t.net().Resume("solver").ok());
  ASSERT_NE(before, "resolved");
  ASSERT_NE(after, "resolved") << "the game ended while the solver was paused";
  EXPECT_TRUE(Contains(TextOfId(live.out, "verdict"), "in progress")) << TextOfId(live.out, "verdict");
  EXPECT_TRUE(Contains(live.out, "data-level=\"checkpoint\""));
  EXPECT_TRUE(Contains(live.out, "pill live")) << "the round in progress is marked";
  EXPECT_EQ(TextOfId(live.out, "clock-solver"), "solver · to move") << "the paused solver's clock runs";
  EXPECT_TRUE(live_shot.exited);

  ASSERT_TRUE(WaitFor([&] { return game_phase() == "resolved"; }, 120s)) << "game still " << game_phase();
  ASSERT_TRUE(WaitFor([&] {
    auto b = c.Call("get_bounty", Json::array({0}));
    return b.ok() && (*b)["state"] == "failed";
  }, 30s));

  // The replayed history agrees with the referee's record of the game.
  auto moves = c.Call("get_game_moves", Json::array({0}));
  ASSERT_TRUE(moves.ok()) << moves.status().ToString();
  const Json& game = (*moves)["game"];
  ASSERT_EQ((*moves)["levels"].size(), 5u) << "checkpoint, step, node, chunk and partials";
  ASSERT_TRUE(moves->contains("element"));
  EXPECT_EQ((*moves)["element"]["rule"], "reduction");
  EXPECT_EQ((*moves)["levels"][4]["agreed"], true) << "the liar's fp64 sums are the honest ones";
  EXPECT_EQ((*moves)["levels"][0]["disputed"], game["checkpoint_index"]);
  EXPECT_EQ((*moves)["levels"][1]["disputed_step"], kCheatStep);
  EXPECT_EQ((*moves)["levels"][2]["disputed"], kCheatNode);
  EXPECT_EQ(game["step"], kCheatStep);
  EXPECT_EQ(game["node_index"], kCheatNode);
  for (std::size_t l = 0; l < 3; ++l) {
    const Json& level = (*moves)["levels"][l];
    EXPECT_FALSE(level.contains("inconsistent")) << level.dump();
    EXPECT_EQ(level["rounds"].size(), game["rounds"][l]) << "rounds replayed = rounds the referee counted, level " << l;
    for (const Json& r : level["rounds"]) {
      EXPECT_TRUE(r.contains("solver") && r.contains("challenger")) << "both parties revealed: " << r.dump();
      EXPECT_LE(r["range"][0], level["disputed"]);
      EXPECT_GT(r["range"][1], level["disputed"]) << "every round's range holds the leaf finally disputed";
    }
  }
  // Bounded answers: a stranger asking for more gets at most the cap.
  auto many = c.Call("list_blocks", Json{{"limit", 100000}});
  ASSERT_TRUE(many.ok());
  EXPECT_LE((*many)["blocks"].size(), node::kExplorerMaxBlocks);
  auto far = c.Call("get_bounty_timeline", Json{{"bounty_id", 0}, {"from_height", UINT64_MAX}});
  ASSERT_TRUE(far.ok()) << far.status().ToString();
  EXPECT_TRUE((*far)["entries"].empty()) << "no wrap-around past the last height";
  EXPECT_EQ(c.Call("get_game_moves", Json::array({999})).status().reason(), "game-unknown");
  EXPECT_FALSE(c.Call("list_blocks", Json{{"before", -1}}).ok()) << "negative heights are bad params";

  // The finished dispute, as the browser draws it.
  BrowserRun done = browser.DumpDom(base + "#/game/0");
  ASSERT_TRUE(done.exited);
  const std::string verdict = TextOfId(done.out, "verdict");
  EXPECT_TRUE(Contains(verdict, "the challenger won by element-epilogue")) << verdict;
  EXPECT_TRUE(Contains(verdict, "pinned to step " + std::to_string(kCheatStep) + ", operator node " + std::to_string(kCheatNode)))
      << verdict;
  EXPECT_TRUE(Contains(verdict, "the solver's bond (1,600,000) is slashed")) << verdict;
  const std::string step_text = TextOfId(done.out, "disputed-step");
  EXPECT_TRUE(Contains(step_text, "disputed step " + std::to_string(kCheatStep))) << step_text;
  const std::string node_text = TextOfId(done.out, "disputed-node");
  EXPECT_TRUE(Contains(node_text, "disputed operator node " + std::to_string(kCheatNode))) << node_text;
  for (const char* level : {"checkpoint", "step", "node", "chunk", "partials"})
    EXPECT_TRUE(Contains(done.out, std::string("data-level=\"") + level + "\"")) << level;
  EXPECT_TRUE(Contains(done.out, "solver reveals") && Contains(done.out, "challenger reveals"));
  EXPECT_TRUE(Contains(done.out, "id=\"clock-solver\"") && Contains(done.out, "id=\"clock-challenger\""));
  EXPECT_TRUE(Contains(done.out, "open-element")) << "the log opening that decides is listed";
  BrowserRun shot = browser.Screenshot(base + "#/game/0", out_dir / "explorer-dispute.png", 1280, 2200);
  EXPECT_TRUE(shot.exited && std::filesystem::exists(out_dir / "explorer-dispute.png")) << shot.err;

  // The bounty: its timeline from posting to failure, and the loss curve.
  BrowserRun bounty = browser.DumpDom(base + "#/bounty/0");
  ASSERT_TRUE(bounty.exited);
  const std::string timeline = TextOfId(bounty.out, "timeline", "ol");
  for (const char* step : {"post-bounty", "claim", "commit", "open-game", "game-opened", "walk-done", "game-resolved",
                           "bounty-failed"})
    EXPECT_TRUE(Contains(timeline, step)) << step << " missing from the timeline: " << timeline;
  EXPECT_LT(timeline.find("post-bounty"), timeline.find("commit"));
  EXPECT_LT(timeline.find("commit"), timeline.find("open-game"));
  EXPECT_LT(timeline.find("open-game"), timeline.find("bounty-failed"));
  EXPECT_TRUE(Contains(bounty.out, "aria-label=\"training loss by step\"")) << "the loss curve is drawn";
  EXPECT_TRUE(Contains(bounty.out, "<polyline"));
  EXPECT_TRUE(Contains(bounty.out, "disputed step " + std::to_string(kCheatStep)));
  EXPECT_TRUE(browser.Screenshot(base + "#/bounty/0", out_dir / "explorer-bounty.png", 1280, 1600).exited);

  // The chain: the home page lists the bounty; a block page its transactions.
  BrowserRun home = browser.DumpDom(base);
  EXPECT_TRUE(Contains(home.out, "href=\"#/bounty/0\"")) << "bounty listed";
  EXPECT_TRUE(Contains(home.out, "href=\"#/game/0\"")) << "game listed";
  auto post_block = c.Call("get_bounty", Json::array({0}));
  ASSERT_TRUE(post_block.ok());
  const std::uint64_t posted = (*post_block)["posted_height"];
  BrowserRun block = browser.DumpDom(base + "#/block/" + std::to_string(posted));
  EXPECT_TRUE(Contains(block.out, "block #" + std::to_string(posted)));
  EXPECT_TRUE(Contains(block.out, "call post-bounty")) << "the posting transaction is shown";
  EXPECT_TRUE(browser.Screenshot(base, out_dir / "explorer-home.png", 1280, 1400).exited);
  std::cerr << "screenshots in " << out_dir << "\n"
            << "sizes: get_game_moves " << moves->dump().size() << " B, game page DOM " << done.out.size()
            << " B, bounty page DOM " << bounty.out.size() << " B\n";
}

// The element level as the browser draws it: a repops job (the demo's
// MLP), the solver daemon cheating at one value of the first layer's dW
// (32 × 784 values: a 98-chunk walk). The page draws level 4's chunk walk
// round by round down to the disputed chunk and value, level 5b's partial
// results (equal roots here: the walk ends at the epilogue), and the
// verdict pinned to that value; the JSON the page draws from agrees with
// the referee's record of the element level.
TEST(TestnetExplorer, BrowserDrawsTheElementLevelDownToTheDisputedValue) {
  const std::optional<std::filesystem::path> exe = FindChromium();
  if (!exe)
    GTEST_SKIP() << "no chromium on PATH (./vt setup installs Debian's chromium; VT_CHROMIUM names another)";
  const std::filesystem::path out_dir = VT_TEST_OUTPUT_DIR;
  std::filesystem::create_directories(out_dir);
  HeadlessChromium browser(
      *exe, std::filesystem::temp_directory_path() / ("vt-chromium-el-" + std::to_string(::getpid())));
  if (auto why = BrowserUnavailable(browser)) GTEST_SKIP() << *why;

  ScopedTestnet t("explorer-element",
                  DaemonSpec(std::filesystem::path(VT_SOURCE_DIR) / "testnet/jobs/fashion-mlp.json", 3));
  ASSERT_TRUE(t.ok());
  auto loaded = worker::LoadJobWithDataset(t.net().spec().jobs.front());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto node = NodeNamed(*loaded, kCheatStep, "fc.0.backward");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  constexpr std::uint64_t kSlot = 1, kValue = 20'000;  // dW, in chunk 78 of 98
  const std::string cheat = "wrong-value:step=" + std::to_string(kCheatStep) +
                            ",node=" + std::to_string(*node) + ",slot=" + std::to_string(kSlot) +
                            ",element=" + std::to_string(kValue);
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--adversary", cheat});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  ASSERT_TRUE(t.net().Up().ok());
  auto c = t.Client("v0");
  const std::string base = "http://127.0.0.1:" + std::to_string(t.net().rpc_port("v0")) + "/";
  auto client = t.net().Key("client");
  ASSERT_TRUE(client.ok());
  const node::BountyTerms terms{1'000'000, 0, 0, 300, 20, 150};  // bonds at the job's minimum
  auto id = node::PostBounty(c, *client, *loaded, terms);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto game_phase = [&]() -> std::string {
    auto g = c.Call("get_dispute", Json::array({0}));
    return g.ok() ? (*g)["phase"].get<std::string>() : "";
  };
  ASSERT_TRUE(WaitFor([&] { return game_phase() == "resolved"; }, 150s)) << "game still " << game_phase();

  auto moves = c.Call("get_game_moves", Json::array({0}));
  ASSERT_TRUE(moves.ok()) << moves.status().ToString();
  const Json& levels = (*moves)["levels"];
  ASSERT_TRUE(moves->contains("element"))
      << "the game was settled without the element level: " << (*moves)["game"].dump();
  const Json& element = (*moves)["element"];
  EXPECT_EQ(element["slot"], kSlot);
  EXPECT_EQ(element["value"], kValue);
  EXPECT_EQ(element["rule"], "dot");
  EXPECT_EQ(element["chunks"], 98u);
  EXPECT_EQ(element["chunk"], kValue / 256);
  ASSERT_EQ(levels.size(), 5u) << levels.dump();
  const Json& chunk = levels[3];
  EXPECT_EQ(chunk["level"], "chunk");
  EXPECT_EQ(chunk["leaf_count"], 98u);
  EXPECT_EQ(chunk["disputed"], kValue / 256);
  EXPECT_FALSE(chunk.contains("inconsistent")) << chunk.dump();
  EXPECT_EQ(chunk["rounds"].size(), element["rounds"][0]) << "rounds replayed = rounds the referee counted";
  EXPECT_EQ(chunk["rounds"].size(), 7u) << "a 98-leaf walk takes 7 rounds";
  for (const Json& r : chunk["rounds"]) {
    EXPECT_LE(r["range"][0], kValue / 256);
    EXPECT_GT(r["range"][1], kValue / 256) << "every round's range holds the disputed chunk";
  }
  const Json& partials = levels[4];
  EXPECT_EQ(partials["level"], "partials");
  EXPECT_EQ(partials["leaf_count"], element["terms"].get<std::uint64_t>() + 1);
  EXPECT_EQ(partials["agreed"], true) << "the liar's partial sums are the honest ones";
  EXPECT_EQ(partials["posts"].size(), 2u);

  BrowserRun done = browser.DumpDom(base + "#/game/0");
  ASSERT_TRUE(done.exited);
  const std::string verdict = TextOfId(done.out, "verdict");
  EXPECT_TRUE(Contains(verdict, "the challenger won by element-epilogue")) << verdict;
  EXPECT_TRUE(Contains(verdict, "output 1 value " + std::to_string(kValue))) << verdict;
  for (const char* level : {"checkpoint", "step", "node", "chunk", "partials"})
    EXPECT_TRUE(Contains(done.out, std::string("data-level=\"") + level + "\"")) << level;
  const std::string chunk_text = TextOfId(done.out, "disputed-chunk");
  EXPECT_TRUE(Contains(chunk_text, "disputed chunk " + std::to_string(kValue / 256))) << chunk_text;
  EXPECT_TRUE(Contains(chunk_text, "value " + std::to_string(kValue) + " of output 1")) << chunk_text;
  EXPECT_TRUE(Contains(done.out, "chunks of 256 values"));
  EXPECT_TRUE(Contains(TextOfId(done.out, "agreed-partials"), "roots are equal"));
  EXPECT_TRUE(Contains(done.out, "reveal-chunk") && Contains(done.out, "post-partials-root"))
      << "the element moves are listed";
  BrowserRun shot = browser.Screenshot(base + "#/game/0", out_dir / "explorer-element.png", 1280, 2600);
  EXPECT_TRUE(shot.exited && std::filesystem::exists(out_dir / "explorer-element.png")) << shot.err;
}

}  // namespace
}  // namespace vt::test
