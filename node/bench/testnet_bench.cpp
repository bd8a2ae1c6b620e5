// vt-bench-testnet: the testnet's two tables (docs/node.md).
//
// 1. Throughput of a 4-validator BFT loopback testnet, with all four
//    validators live and with one silent (SIGSTOP): transfers accepted per
//    second over RPC and included per second, blocks per second under load
//    and idle — against the same transfers executed in-process by the VM
//    (signature checks, state, block commit; no network, no consensus) in
//    the same run.
// 2. End to end, per determinism mode: the demo job posted as a bounty with
//    a solver and a challenger daemon — an honest run (training + commit,
//    then the challenge window) and a cheating one (the challenger's replay,
//    then the dispute down to one operator) — against training the same
//    job natively in-process in the same run.
//
//   vt-bench-testnet [--txs N] [--interval-ms MS] [--job NAME] [--throughput-only] [--quick]
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/limits.h"
#include "contract_vm/vm.h"
#include "node/bounty_flow.h"
#include "node/client.h"
#include "node/stop_signal_guard.h"
#include "node/testnet.h"
#include "worker/job.h"
#include "worker/trainer.h"

namespace {
using namespace vt;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

fs::path SelfBinDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

fs::path FreshDir(const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("vt-bench-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

// The baseline of table 1: `n` signed transfers from `senders` applied by
// the VM in blocks of `per_block`, in memory. Transfers per second.
Result<double> InProcessTransfers(std::uint64_t n, std::size_t per_block) {
  std::vector<crypto::SecretKey> senders;
  vm::Genesis genesis;
  for (int i = 0; i < 7; ++i) {
    VT_ASSIGN_OR_RETURN(crypto::SecretKey k, crypto::SecretKey::Generate());
    senders.push_back(std::move(k));
  }
  std::sort(senders.begin(), senders.end(),
            [](const crypto::SecretKey& a, const crypto::SecretKey& b) { return a.address() < b.address(); });
  for (const auto& k : senders) genesis.allocations.push_back({k.address(), std::uint64_t{1} << 50});
  const vm::ContractRegistry contracts;
  const vm::Vm machine(contracts, nullptr);
  vm::MemoryStateStore store;
  VT_ASSIGN_OR_RETURN(vm::ChainTip tip, machine.ApplyGenesis(store, genesis));
  VT_ASSIGN_OR_RETURN(crypto::SecretKey proposer, crypto::SecretKey::Generate());
  const auto sink = crypto::Address::FromHex("00000000000000000000000000000000000000bb").value();
  std::vector<std::uint64_t> nonces(senders.size(), 0);
  // Signing is the client's work in the testnet run too, so it is timed here.
  const auto t0 = Clock::now();
  std::vector<vm::Transaction> batch;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::size_t s = i % senders.size();
    vm::Transaction tx;
    tx.chain_id = genesis.params.chain_id;
    tx.nonce = nonces[s]++;
    tx.gas_limit = 100'000;
    tx.gas_price = 1;
    tx.payload = vm::TransferPayload{sink, 1};
    VT_TRY(vm::SignTransaction(tx, senders[s]));
    batch.push_back(std::move(tx));
    if (batch.size() == per_block || i + 1 == n) {
      VT_ASSIGN_OR_RETURN(vm::BlockResult r,
                          machine.ProduceBlock(store, tip, std::move(batch), tip.time + 1, proposer, nullptr));
      if (r.block.txs.size() != r.receipts.size()) return Status::Error("bench-bad-block");
      tip = r.tip;
      batch.clear();
    }
  }
  return static_cast<double>(n) / Seconds(t0);
}

// One measured condition of table 1.
struct Phase {
  std::string label;
  std::uint64_t accepted = 0;
  double submit_s = 0, total_s = 0;  // submitting; until every accepted transfer is in a block
  std::uint64_t blocks = 0;          // blocks over total_s
  double idle_blocks_per_s = 0;      // blocks/s of the idle chain over the idle window
  bool drained = true;               // every accepted transfer was included in time
};

// Submits `txs` transfers round-robin to the nodes `live` (each sender keeps
// to one node, so its nonces stay in order), waits until all are included,
// then counts blocks of the idle chain for `idle_s` seconds.
Phase RunPhase(std::string label, const node::Testnet& t, const std::vector<std::string>& live, std::uint64_t txs,
               double idle_s) {
  Phase out;
  out.label = std::move(label);
  std::vector<node::ChainClient> clients;
  for (const std::string& v : live) clients.emplace_back("127.0.0.1", t.rpc_port(v));
  std::vector<crypto::SecretKey> keys;
  for (const char* k : {"client", "solver", "challenger", "v0", "v1", "v2", "v3"}) keys.push_back(*t.Key(k));
  const auto sink = crypto::Address::FromHex("00000000000000000000000000000000000000bb").value();
  const std::uint64_t sink_before = clients[0].Account(sink).ok() ? clients[0].Account(sink)->balance : 0;
  const std::uint64_t h_start = *clients[0].Height();
  const auto t0 = Clock::now();
  for (std::uint64_t i = 0; i < txs; ++i) {
    auto& c = clients[(i % keys.size()) % clients.size()];
    auto& k = keys[i % keys.size()];
    if (c.Send(k, vm::TransferPayload{sink, 1}, 100'000).ok()) ++out.accepted;
    // A sender may have at most limits::kMaxPendingPerSender pending (docs/node.md "Mempool").
    constexpr std::uint64_t kBurst = limits::kMaxPendingPerSender / 2;
    if (i % (keys.size() * kBurst) == keys.size() * kBurst - 1) {
      // Let blocks drain so no sender runs ahead of the mempool's nonce window.
      while (clients[0].Call("chain_status")->at("mempool").get<std::uint64_t>() > 100)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  out.submit_s = Seconds(t0);
  while (true) {  // until every accepted transfer is in a block
    auto a = clients[0].Account(sink);
    if (a.ok() && a->balance >= sink_before + out.accepted) break;
    if (Seconds(t0) > 300) {
      out.drained = false;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.total_s = Seconds(t0);
  out.blocks = *clients[0].Height() - h_start;
  const std::uint64_t h_idle = *clients[0].Height();
  const auto t1 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
  out.idle_blocks_per_s = static_cast<double>(*clients[0].Height() - h_idle) / Seconds(t1);
  return out;
}

// Table 1: the BFT testnet with all 4 validators live, then with v3 silent
// (SIGSTOP: its sockets stay open and say nothing, like a hung process or a
// cut link), against the VM alone.
int Throughput(node::StopSignalGuard& guard, std::uint64_t txs, std::uint64_t interval, double idle_s) {
  const fs::path dir = FreshDir("tps");
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = interval;
  spec.proposer_timeout_ms = 3 * interval;
  auto t = node::Testnet::Create(dir, spec, SelfBinDir());
  if (t.ok()) guard.Watch(dir);
  if (!t.ok() || !t->Up().ok()) {
    std::cerr << "vt-bench-testnet: could not start the testnet\n";
    return 1;
  }
  std::vector<Phase> phases;
  phases.push_back(RunPhase("4 of 4 live", *t, {"v0", "v1", "v2", "v3"}, txs, idle_s));
  int rc = 0;
  if (Status s = t->Pause("v3"); !s.ok()) {
    std::cerr << "vt-bench-testnet: pause v3: " << s.ToString() << "\n";
    rc = 1;
  } else {
    phases.push_back(RunPhase("3 of 4 live (v3 SIGSTOPped)", *t, {"v0", "v1", "v2"}, txs, idle_s));
  }
  (void)t->Down();
  fs::remove_all(dir);

  auto baseline = InProcessTransfers(txs, 500);
  if (!baseline.ok()) {
    std::cerr << "vt-bench-testnet: " << baseline.status().ToString() << "\n";
    return 1;
  }
  std::cout << fmt::format(
      "\n1. 4-validator BFT testnet on loopback (vt-node processes), block interval {} ms, proposer timeout {} ms,\n"
      "   {} transfers per row from 7 senders over RPC (1 client thread); VM in-process: {:.0f} tx/s (1.00x)\n",
      interval, spec.proposer_timeout_ms, txs, *baseline);
  std::cout << fmt::format("  {:<28} {:>9} {:>12} {:>12} {:>9} {:>13} {:>13}\n", "validators", "accepted",
                           "submitted/s", "included/s", "vs VM", "blocks/s load", "blocks/s idle");
  for (const Phase& p : phases) {
    const double submitted = p.accepted / p.submit_s, included = p.accepted / p.total_s;
    std::cout << fmt::format("  {:<28} {:>9} {:>12.0f} {:>12.0f} {:>8.2f}x {:>13.2f} {:>13.2f}{}\n", p.label,
                             p.accepted, submitted, included, included / *baseline, p.blocks / p.total_s,
                             p.idle_blocks_per_s, p.drained ? "" : "  (NOT all included within 300 s)");
    if (!p.drained || p.accepted == 0) rc = 1;
  }
  std::cout << fmt::format("  (configured: {:.2f} blocks/s; idle = {:.0f} s of an empty mempool after the row)\n",
                           1000.0 / interval, idle_s);
  return rc;
}

struct E2eRow {
  std::string mode;
  double native_train = 0;  // in-process, native mode
  node::BountyTimeline honest, cheat;
};

// Trains `job` natively in-process: the baseline of table 2.
Result<double> NativeTrainSeconds(const worker::LoadedJob& job) {
  worker::Job native = job.job;
  native.spec.mode = static_cast<std::uint8_t>(kernels::Mode::kNative);
  const fs::path dir = FreshDir("native");
  const auto t0 = Clock::now();
  VT_ASSIGN_OR_RETURN(worker::TrainSummary s, worker::Train(native, job.dataset, dir, worker::TrainOptions{}));
  const double seconds = Seconds(t0);
  fs::remove_all(dir);
  if (!s.manifest.Complete()) return Status::Error("bench-train-incomplete");
  return seconds;
}

int EndToEnd(node::StopSignalGuard& guard, const std::vector<std::string>& job_names,
             const std::string& adversary) {
  std::vector<fs::path> jobs;
  std::vector<worker::LoadedJob> loaded;
  for (const std::string& name : job_names) {
    jobs.push_back(node::FindTestnetJob(name));
    auto l = worker::LoadJobWithDataset(jobs.back());
    if (!l.ok()) {
      std::cerr << "vt-bench-testnet: " << name << ": " << l.status().ToString() << "\n";
      return 1;
    }
    loaded.push_back(std::move(l).value());
  }
  const fs::path dir = FreshDir("e2e");
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = 300;
  spec.proposer_timeout_ms = 900;
  spec.solver = spec.challenger = true;
  spec.jobs = jobs;
  auto t = node::Testnet::Create(dir, spec, SelfBinDir());
  if (t.ok()) guard.Watch(dir);
  if (!t.ok() || !t->Up().ok()) {
    std::cerr << "vt-bench-testnet: could not start the testnet\n";
    return 1;
  }
  auto fail = [&](const std::string& what, const Status& s) {
    std::cerr << "vt-bench-testnet: " << what << ": " << s.ToString() << " (logs in " << (dir / "logs").string()
              << ")\n";
    (void)t->Down();
    return 1;
  };
  node::ChainClient c("127.0.0.1", t->rpc_port("v0"), std::chrono::seconds(30));
  auto client = t->Key("client");
  if (!client.ok()) return fail("keys", client.status());
  std::vector<E2eRow> rows(loaded.size());
  std::uint64_t next_height = 1;
  auto run = [&](const worker::LoadedJob& job, node::BountyTimeline& out) -> Status {
    const auto t0 = Clock::now();
    VT_ASSIGN_OR_RETURN(std::uint64_t id, node::PostBounty(c, *client, job));
    VT_ASSIGN_OR_RETURN(out, node::FollowBounty(c, id, next_height, t0));
    return Status::Ok();
  };
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    rows[i].mode = std::string(kernels::ModeName(loaded[i].job.mode()));
    if (Status s = run(loaded[i], rows[i].honest); !s.ok()) return fail("honest " + rows[i].mode, s);
  }
  t->SetWorkerArgs("solver", {"--adversary", adversary});
  if (Status s = t->Stop("solver"); !s.ok()) return fail("restart", s);
  if (Status s = t->Start("solver"); !s.ok()) return fail("restart", s);
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    if (Status s = run(loaded[i], rows[i].cheat); !s.ok()) return fail("cheating " + rows[i].mode, s);
  }
  (void)t->Down();
  fs::remove_all(dir);
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    auto native = NativeTrainSeconds(loaded[i]);
    if (!native.ok()) {
      std::cerr << "vt-bench-testnet: native baseline: " << native.status().ToString() << "\n";
      return 1;
    }
    rows[i].native_train = *native;
  }

  const worker::Job& j0 = loaded.front().job;
  std::cout << fmt::format(
      "\n2. end to end on the testnet (4 validators, 300 ms blocks, challenge window 25 blocks), {} steps of "
      "batch {}; cheat: {}\n   seconds from posting; x = ratio to training the same job natively in-process\n",
      j0.spec.num_steps, j0.spec.batch_size, adversary);
  std::cout << fmt::format("  {:<8} {:>8} | {:>14} {:>9} {:>8} {:>10} | {:>9} {:>9} {:>8} {:>10}  {}\n", "mode",
                           "native", "train+commit", "waiting", "total", "total x", "replay", "dispute", "total",
                           "total x", "verdict");
  for (const E2eRow& r : rows) {
    const auto& h = r.honest;
    const auto& x = r.cheat;
    const bool disputed = x.opened >= 0 && x.resolved >= 0;
    std::cout << fmt::format(
        "  {:<8} {:>8.2f} | {:>14.2f} {:>9.2f} {:>8.2f} {:>9.1f}x | {:>9} {:>9} {:>8.2f} {:>9.1f}x  {} {}\n", r.mode,
        r.native_train, h.committed - h.posted, h.ended - h.committed, h.ended - h.posted,
        (h.ended - h.posted) / r.native_train, disputed ? fmt::format("{:.2f}", x.opened - x.committed) : "-",
        disputed ? fmt::format("{:.2f}", x.resolved - x.opened) : "-", x.ended - x.posted,
        (x.ended - x.posted) / r.native_train, x.outcome, disputed ? x.game_result + "/" + x.game_reason : "");
  }
  std::cout << "  (train+commit and replay include waiting for blocks: the chain's clock is 300 ms)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  node::StopSignalGuard guard;  // first: interrupted, the tool takes its testnets down
  CLI::App app{"vt-bench-testnet: throughput and end-to-end times of a local testnet"};
  std::uint64_t txs = 2000, interval = 100;
  std::string job = "fashion-mlp";
  bool quick = false;
  app.add_option("--txs", txs, "transfers to submit")->capture_default_str();
  app.add_option("--interval-ms", interval, "block interval of the throughput testnet")->capture_default_str();
  app.add_option("--job", job, "job of the end-to-end table: testnet/jobs/<job>.json and <job>-rounded.json")
      ->capture_default_str();
  bool throughput_only = false;
  app.add_flag("--throughput-only", throughput_only, "table 1 only (no end-to-end bounty runs)");
  app.add_flag("--quick", quick, "smoke run (CTest): few transfers, the synthetic job");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  double idle_s = 10;
  if (quick) {
    txs = 50;
    idle_s = 2;
    job = "synthetic-mlp";
  }
  if (job == "fashion-mlp" && !fs::exists("/usr/share/datasets/fashion-mnist")) job = "synthetic-mlp";
  const int rc = Throughput(guard, txs, interval, idle_s);
  if (throughput_only) return rc;
  const std::string adversary = job == "fashion-mlp" ? "wrong-output:step=9,node=2" : "wrong-output:step=5,node=1";
  return EndToEnd(guard, {job + ".json", job + "-rounded.json"}, adversary) | rc;
}
