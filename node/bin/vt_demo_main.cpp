// vt-demo: the end-to-end demo (docs/demo.md). Brings up a local testnet (4
// validators, a solver and a challenger daemon), posts a bounty for a small
// MLP on real Fashion-MNIST, shows the honest run finalizing and paying out,
// then restarts the solver as a cheater (TEST-ONLY adversary) and shows it
// caught at the exact step and operator and slashed, as a timeline ending
// with the balances. Tears the testnet down at the end (--keep to leave it).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/encoding.h"
#include "node/bounty_flow.h"
#include "node/client.h"
#include "node/stop_signal_guard.h"
#include "node/testnet.h"
#include "worker/job.h"

namespace {

using namespace vt;
using Json = nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

Clock::time_point g_t0;
double Since() { return std::chrono::duration<double>(Clock::now() - g_t0).count(); }

void Line(const std::string& s) { std::cout << fmt::format("[{:7.2f}s] ", Since()) << s << std::endl; }

void Event(double at, std::uint64_t height, const std::string& what) {
  std::cout << fmt::format("[{:7.2f}s] block {:4}  {}", at, height, what) << std::endl;
}

fs::path SelfBinDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}


}  // namespace

int main(int argc, char** argv) {
  node::StopSignalGuard guard;  // first: interrupted (Ctrl-C), the demo takes its testnet down
  CLI::App app{"vt-demo: the veritrain end-to-end demo on a local testnet"};
  std::string dir, job_name = "fashion-mlp.json", adversary = "wrong-output:step=9,node=2";
  bool keep = false;
  app.add_option("--dir", dir, "testnet directory (default: a fresh temporary one)");
  app.add_option("--job", job_name, "job file (testnet/jobs/<name> or a path)")->capture_default_str();
  app.add_option("--adversary", adversary, "how the cheating solver cheats (TEST ONLY)")->capture_default_str();
  app.add_flag("--keep", keep, "leave the testnet running at the end");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  g_t0 = Clock::now();
  if (job_name == "fashion-mlp.json" && !fs::exists("/usr/share/datasets/fashion-mnist")) {
    std::cout << "Fashion-MNIST not found in /usr/share/datasets/fashion-mnist (./vt setup installs it);"
                 " using the synthetic job instead\n";
    job_name = "synthetic-mlp.json";
    adversary = "wrong-output:step=5,node=1";
  }
  const fs::path job = node::FindTestnetJob(job_name);
  if (!fs::exists(job)) {
    std::cerr << "vt-demo: job file not found: " << job_name << "\n";
    return 1;
  }
  const fs::path tdir = dir.empty() ? fs::temp_directory_path() / ("vt-demo-" + std::to_string(::getpid())) : fs::path(dir);
  fs::remove_all(tdir);
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = 300;
  spec.proposer_timeout_ms = 900;
  spec.solver = spec.challenger = true;
  spec.jobs = {job};
  std::cout << "veritrain demo — verifiable outsourced training on a local testnet\n"
            << "job: " << job.string() << "\n\n";
  auto t = node::Testnet::Create(tdir, spec, SelfBinDir());
  if (!t.ok()) {
    std::cerr << "vt-demo: " << t.status().ToString() << "\n";
    return 1;
  }
  guard.Watch(tdir);
  auto fail = [&](const Status& s) {
    std::cerr << "vt-demo: " << s.ToString() << " (logs in " << (tdir / "logs").string() << ")\n";
    (void)t->Down();
    return 1;
  };
  if (Status s = t->Up(); !s.ok()) return fail(s);
  Line("testnet up: 4 validators (rotating proposers, 300 ms blocks), a solver and a challenger daemon");

  auto loaded = worker::LoadJobWithDataset(job);
  if (!loaded.ok()) return fail(loaded.status());
  Line(fmt::format("job: {} examples of {}, {} steps, checkpoint every {}, mode {}", loaded->dataset.size(),
                   loaded->dataset.name(), loaded->job.spec.num_steps, loaded->job.spec.checkpoint_interval,
                   kernels::ModeName(loaded->job.mode())));

  node::ChainClient c("127.0.0.1", t->rpc_port("v0"), std::chrono::seconds(30));
  auto client = t->Key("client");
  auto solver = t->Key("solver");
  auto challenger = t->Key("challenger");
  if (!client.ok() || !solver.ok() || !challenger.ok()) return fail(Status::Error("demo-keys"));
  std::map<std::string, crypto::Address> who{
      {"client", client->address()}, {"solver", solver->address()}, {"challenger", challenger->address()}};
  std::map<std::string, vm::Amount> start;
  for (const auto& [name, addr] : who) start[name] = c.Account(addr).value_or(node::AccountView{}).balance;

  std::uint64_t next_height = 1;

  std::cout << "\n== 1. an honest solver ==\n";
  Line("client posts a bounty: reward 1000000, both bonds at the job's minimum (" +
       std::to_string(node::MinimumBond(loaded->job.spec).value_or(0)) + ")");
  auto b0 = node::PostBounty(c, *client, *loaded);
  if (!b0.ok()) return fail(b0.status());
  auto p0 = node::FollowBounty(c, *b0, next_height, g_t0, Event);
  if (!p0.ok()) return fail(p0.status());

  std::cout << "\n== 2. a cheating solver (" << adversary << ") ==\n";
  t->SetWorkerArgs("solver", {"--adversary", adversary});
  if (Status s = t->Stop("solver"); !s.ok()) return fail(s);
  if (Status s = t->Start("solver"); !s.ok()) return fail(s);
  Line("solver daemon restarted as a cheater (TEST-ONLY adversary)");
  auto b1 = node::PostBounty(c, *client, *loaded);
  if (!b1.ok()) return fail(b1.status());
  auto p1 = node::FollowBounty(c, *b1, next_height, g_t0, Event);
  if (!p1.ok()) return fail(p1.status());
  auto game = c.Call("get_dispute", Json::array({0}));
  if (game.ok() && game->contains("step")) {
    // Where the element level ended, when a party descended into the node.
    std::string value;
    auto disputed = c.Call("get_events", Json::array({1, 1000, "element-disputed"}));
    if (disputed.ok() && !(*disputed)["events"].empty()) {
      const Json& d = (*disputed)["events"][0]["decoded"];
      value = fmt::format(", output {} value {}", d["slot"].get<std::uint64_t>(), d["value"].get<std::int64_t>());
    }
    Line(fmt::format("caught at step {}, operator node {}{} by {} (the cheat was planted at {})",
                     (*game)["step"].get<std::uint64_t>(), (*game)["node_index"].get<std::uint64_t>(), value,
                     (*game)["reason"].get<std::string>(), adversary));
  }

  std::cout << "\n== balances (change since the start; fees included) ==\n";
  for (const auto& [name, addr] : who) {
    const vm::Amount now = c.Account(addr).value_or(node::AccountView{}).balance;
    std::cout << fmt::format("  {:<11} {:>22}  {:+}\n", name, now,
                             static_cast<std::int64_t>(now) - static_cast<std::int64_t>(start[name]));
  }
  std::cout << "\n== time split (wall clock) ==\n";
  std::cout << fmt::format("  honest run:   training+commit {:.1f}s, challenge window (waiting) {:.1f}s, total {:.1f}s\n",
                           p0->committed - p0->posted, p0->ended - p0->committed, p0->ended - p0->posted);
  if (p1->opened >= 0 && p1->resolved >= 0)
    std::cout << fmt::format("  cheating run: training+commit {:.1f}s, replay {:.1f}s, dispute {:.1f}s, total {:.1f}s\n",
                             p1->committed - p1->posted, p1->opened - p1->committed, p1->resolved - p1->opened,
                             p1->ended - p1->posted);
  if (keep) {
    std::cout << "\ntestnet left running in " << tdir.string() << " (vt --home ... testnet down)\n";
    return 0;
  }
  (void)t->Down();
  fs::remove_all(tdir);
  return 0;
}
