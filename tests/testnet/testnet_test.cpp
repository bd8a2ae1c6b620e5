// Multi-process testnet: four validator processes and a late full node on
// loopback. Transactions submitted to one node are visible on all; the chain
// continues with a validator killed (kill -9) and the restarted one catches
// up; a late joiner syncs; a peer sending garbage is cut off while the chain
// goes on; SIGTERM shuts every process down cleanly; a manifest's kill,
// restart and disconnect perturbations run on schedule; a tool interrupted
// mid-run takes its testnet down.
#include <fstream>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>

#include "crypto/keyfile.h"
#include "tests/support/test_seed.h"
#include "tests/testnet/testnet_util.h"

namespace vt::test {
namespace {

using namespace std::chrono_literals;

node::TestnetSpec SmallSpec() {
  node::TestnetSpec s;
  s.validators = 4;
  s.full_nodes = 1;
  s.block_interval_ms = 150;
  s.proposer_timeout_ms = 450;
  return s;
}

// Every node in `names` has the same block as `ref` at each height up to
// min(heights) - 2 (the last two may still be settling).
void ExpectSameChain(ScopedTestnet& t, const std::vector<std::string>& names) {
  std::vector<node::ChainClient> clients;
  std::uint64_t low = ~std::uint64_t{0};
  for (const std::string& n : names) {
    clients.push_back(t.Client(n));
    auto h = HeightOf(clients.back());
    ASSERT_TRUE(h) << n << " does not answer";
    low = std::min(low, *h);
  }
  ASSERT_GE(low, 3u);
  for (std::uint64_t h : {std::uint64_t{1}, low / 2, low - 2}) {
    auto ref = BlockHashAt(clients[0], h);
    ASSERT_TRUE(ref);
    for (std::size_t i = 1; i < clients.size(); ++i)
      EXPECT_EQ(BlockHashAt(clients[i], h), ref) << names[i] << " differs from " << names[0] << " at height " << h;
  }
}

TEST(Testnet, TxsVisibleEverywhereSurvivesKillRestartLateJoinerAndGarbage) {
  ScopedTestnet t("basic", SmallSpec());
  ASSERT_TRUE(t.ok());
  for (const char* v : {"v0", "v1", "v2", "v3"}) ASSERT_TRUE(t.net().Start(v).ok()) << v;
  auto c0 = t.Client("v0");
  ASSERT_TRUE(c0.WaitHeight(3, 20s).ok());

  // Transactions submitted to v0 are included and visible on every validator.
  auto client = t.net().Key("client");
  ASSERT_TRUE(client.ok());
  const auto to = crypto::Address::FromHex("00000000000000000000000000000000000000aa");
  ASSERT_TRUE(to.ok());
  const std::uint64_t amount = 1 + TestSeed() % 1000;
  std::vector<Hash256> ids;
  for (int i = 0; i < 10; ++i) {
    auto id = c0.Send(*client, vm::TransferPayload{*to, amount});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    ids.push_back(*id);
  }
  for (const Hash256& id : ids) {
    auto r = c0.WaitReceipt(id, 20s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)["success"].get<bool>());
  }
  for (const char* v : {"v1", "v2", "v3"}) {
    auto c = t.Client(v);
    EXPECT_TRUE(WaitFor([&] {
      auto a = c.Account(*to);
      return a.ok() && a->balance == 10 * amount;
    }, 10s)) << v << " does not see the transfers";
  }

  // kill -9 one validator: the chain continues past its turns.
  ASSERT_TRUE(t.net().Kill("v1").ok());
  const std::uint64_t at_kill = *HeightOf(c0);
  EXPECT_TRUE(c0.WaitHeight(at_kill + 8, 30s).ok()) << "the chain stopped without v1";
  auto c2 = t.Client("v2");
  EXPECT_TRUE(c2.WaitHeight(at_kill + 8, 10s).ok());

  // Restarted, it recovers its store and catches up.
  ASSERT_TRUE(t.net().Start("v1").ok());
  auto c1 = t.Client("v1");
  const std::uint64_t target = *HeightOf(c0);
  EXPECT_TRUE(c1.WaitHeight(target, 30s).ok()) << "v1 did not catch up";

  // A late joiner (full node, empty store) syncs from genesis.
  ASSERT_TRUE(t.net().Start("f0").ok());
  auto f0 = t.Client("f0");
  EXPECT_TRUE(f0.WaitHeight(*HeightOf(c0), 30s).ok()) << "late joiner did not sync";
  EXPECT_TRUE(WaitFor([&] {
    auto a = f0.Account(*to);
    return a.ok() && a->balance == 10 * amount;
  }, 10s));

  // Garbage from a raw TCP peer: disconnected; the chain goes on.
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket sock(io);
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), t.net().Find("v0")->p2p_port});
    std::vector<std::uint8_t> junk(4096);
    std::uint64_t x = TestSeed() | 1;
    for (auto& b : junk) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      b = static_cast<std::uint8_t>(x);
    }
    boost::system::error_code ec;
    boost::asio::write(sock, boost::asio::buffer(junk), ec);
    // The node closes the connection: reads end with EOF or reset within a bound.
    bool closed = false;
    std::array<std::uint8_t, 4096> buf{};
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    sock.non_blocking(true);
    while (std::chrono::steady_clock::now() < deadline) {
      sock.read_some(boost::asio::buffer(buf), ec);
      if (ec == boost::asio::error::would_block) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      if (ec) {
        closed = true;
        break;
      }
    }
    EXPECT_TRUE(closed) << "the node kept a connection that sent garbage";
  }
  const std::uint64_t after_garbage = *HeightOf(c0);
  EXPECT_TRUE(c0.WaitHeight(after_garbage + 3, 20s).ok());

  ExpectSameChain(t, {"v0", "v1", "v2", "v3", "f0"});

  // Clean shutdown: SIGTERM ends every process.
  ASSERT_TRUE(t.net().Down().ok());
  for (const auto& p : t.net().processes()) EXPECT_FALSE(t.net().Running(p.name)) << p.name;
}


// A manifest's perturbations, applied on their schedule: a validator killed
// and restarted, then another cut off (paused) for a while. Four validators
// tolerate one fault (BFT: n = 3f + 1), and at most one is down at any time,
// so the chain goes on throughout and both come back to the same chain.
TEST(Testnet, ManifestPerturbationsRunOnScheduleAndTheChainRecovers) {
  node::TestnetSpec spec = SmallSpec();
  spec.full_nodes = 0;
  spec.validators = 4;
  spec.perturbations = {{300, "v1", "kill", 0}, {1500, "v1", "restart", 0}, {1800, "v2", "disconnect", 1200}};
  ScopedTestnet t("perturb", spec);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.net().Up().ok());
  auto c0 = t.Client("v0");
  ASSERT_TRUE(c0.WaitHeight(2, 20s).ok());
  const std::uint64_t before = *HeightOf(c0);

  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  Status s = t.net().RunPerturbations([&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3000ms) << "events wait for their time";
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("kill v1"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("restart v1"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("pause v2"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("resume v2"), std::string::npos) << lines[3];
  for (const char* v : {"v0", "v1", "v2", "v3"}) EXPECT_TRUE(t.net().Running(v)) << v;

  // The chain kept finalising with one validator down at a time.
  EXPECT_GT(*HeightOf(c0), before + 2);
  const std::uint64_t target = *HeightOf(c0) + 2;
  for (const char* v : {"v1", "v2"}) {
    auto c = t.Client(v);
    EXPECT_TRUE(c.WaitHeight(target, 30s).ok()) << v << " did not catch up";
  }
  ExpectSameChain(t, {"v0", "v1", "v2", "v3"});

  // A perturbation naming a node the testnet does not have is refused.
  nlohmann::json m = {{"validators", 2}, {"perturbations", {{{"after_ms", 10}, {"node", "v1"}, {"action", "explode"}}}}};
  auto parsed = node::ParseManifest(m, ".");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().reason(), "manifest-bad");
}

// testnet.json is written whole even by several writers at once (a tool's
// main thread and its StopSignalGuard): while two Testnet objects on one
// directory save it 300 times each, a third loads it 300 times and always
// reads a whole file. (With one shared temporary file, CI once read a torn
// one and the guard could not stop that testnet.) No process is started.
TEST(Testnet, ConcurrentSavesNeverTearTheStateFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("vt-testnet-saves-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(node::Testnet::Create(dir, SmallSpec(), VT_BIN_DIR).ok());
  auto a = node::Testnet::Load(dir), b = node::Testnet::Load(dir);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto save = [](node::Testnet& t, const std::string& who) {
    for (int i = 0; i < 300; ++i)
      t.SetWorkerArgs("solver", {who, std::string(static_cast<std::size_t>(i % 97), 'x')});
  };
  std::thread ta(save, std::ref(*a), "a"), tb(save, std::ref(*b), "b");
  int torn = 0;
  for (int i = 0; i < 300; ++i) torn += node::Testnet::Load(dir).ok() ? 0 : 1;
  ta.join();
  tb.join();
  EXPECT_EQ(torn, 0) << "loads of a torn testnet.json";
  EXPECT_TRUE(node::Testnet::Load(dir).ok());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

// Live processes (zombies aside) whose command line names `dir`: every
// daemon of a testnet there, recorded in its testnet.json or not.
std::vector<int> ProcessesUsing(const std::filesystem::path& dir) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(entry.path() / "cmdline", std::ios::binary);
    const std::string line((std::istreambuf_iterator<char>(cmd)), {});
    if (line.find(dir.string()) == std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string st;
    std::getline(stat, st);
    const auto close = st.rfind(')');
    if (close != std::string::npos && close + 2 < st.size() && st[close + 2] == 'Z') continue;
    pids.push_back(std::stoi(name));
  }
  return pids;
}

// A tool that starts its own testnet and is told to stop with SIGTERM or
// SIGINT takes the testnet down before it exits (node/stop_signal_guard.h):
// no daemon it started is left running, and it exits 128 + the signal.
// Its daemons run in their own sessions, so without the guard they would
// outlive it. Two tools: the kill -9 soak, mid-run (it kills and restarts
// validators all the time), and the demo, with its solver and challenger
// daemons.
TEST(Testnet, AnInterruptedToolLeavesNoDaemonBehind) {
  struct Case {
    const char* tool;
    int sig;
  };
  for (const Case& c :
       {Case{"vt-soak-kill", SIGTERM}, Case{"vt-soak-kill", SIGINT}, Case{"vt-demo", SIGTERM}}) {
    SCOPED_TRACE(std::string(c.tool) + " signal " + std::to_string(c.sig));
    const std::filesystem::path tmp = std::filesystem::temp_directory_path();
    const std::string out = (tmp / ("vt-interrupted-" + std::to_string(::getpid()) + ".out")).string();
    const std::filesystem::path demo_dir = tmp / ("vt-interrupted-demo-" + std::to_string(::getpid()));
    std::filesystem::remove_all(demo_dir);
    const bool demo = std::string_view(c.tool) == "vt-demo";
    const pid_t tool = ::fork();
    ASSERT_GE(tool, 0);
    if (tool == 0) {
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      const std::string bin = std::string(VT_BIN_DIR) + "/" + c.tool;
      if (demo) {
        ::execl(bin.c_str(), bin.c_str(), "--job", "synthetic-mlp.json", "--dir", demo_dir.c_str(),
                static_cast<char*>(nullptr));
      } else {
        ::execl(bin.c_str(), bin.c_str(), "--trials", "100000", "--validators", "3", "--interval-ms", "100",
                static_cast<char*>(nullptr));
      }
      ::_exit(127);
    }
    const std::filesystem::path dir = demo ? demo_dir : tmp / ("vt-soak-kill-" + std::to_string(tool));
    // Up, and past its first moves (kills and restarts; the demo's bounty).
    const bool running = WaitFor(
        [&] {
          auto t = node::Testnet::Load(dir);
          if (!t.ok()) return false;
          for (const auto& p : t->processes())
            if (!t->Running(p.name)) return false;
          return true;
        },
        60s);
    if (running) std::this_thread::sleep_for(2s);
    ASSERT_EQ(::kill(tool, c.sig), 0);
    int status = 0;
    const bool exited = WaitFor([&] { return ::waitpid(tool, &status, WNOHANG) == tool; }, 60s);
    if (!exited) {
      ::kill(tool, SIGKILL);
      ::waitpid(tool, &status, 0);
    }
    auto t = node::Testnet::Load(dir);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    std::vector<std::string> left;
    for (const auto& p : t->processes())
      if (t->Running(p.name)) left.push_back(p.name);
    // Nor any process it started, recorded in testnet.json or not yet.
    const std::vector<int> strays = ProcessesUsing(dir);
    (void)t->Down();  // whatever the outcome, nothing stays up
    for (int pid : strays) ::kill(pid, SIGKILL);
    EXPECT_TRUE(running) << "the tool's testnet never came up";
    EXPECT_TRUE(exited) << "the tool did not exit on the signal";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + c.sig) << "status " << status;
    EXPECT_TRUE(left.empty()) << left.size() << " daemons left running, the first "
                              << (left.empty() ? std::string() : left.front());
    EXPECT_TRUE(strays.empty()) << strays.size() << " processes still use " << dir << ", the first "
                                << (strays.empty() ? 0 : strays.front());
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::remove(out, ec);
  }
}

}  // namespace
}  // namespace vt::test
