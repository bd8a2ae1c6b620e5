// vt-bench-testnet: throughput of a 4-validator loopback testnet — transfers
// accepted per second over RPC, transfers included per second, blocks per
// second — and the demo job's end-to-end time split (run `vt-demo` for that
// part: it prints training, replay, dispute and waiting times).
//   vt-bench-testnet [--txs N] [--interval-ms MS] [--quick]
#include <unistd.h>

#include <chrono>
#include <thread>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "node/client.h"
#include "node/testnet.h"

namespace {
using namespace vt;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

fs::path SelfBinDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vt-bench-testnet: tx/s and blocks/s of a 4-validator loopback testnet"};
  std::uint64_t txs = 2000, interval = 100;
  bool quick = false;
  app.add_option("--txs", txs, "transfers to submit")->capture_default_str();
  app.add_option("--interval-ms", interval, "block interval")->capture_default_str();
  app.add_flag("--quick", quick, "smoke run (CTest)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (quick) txs = 50;
  const fs::path dir = fs::temp_directory_path() / ("vt-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = interval;
  spec.proposer_timeout_ms = 3 * interval;
  auto t = node::Testnet::Create(dir, spec, SelfBinDir());
  if (!t.ok() || !t->Up().ok()) {
    std::cerr << "vt-bench-testnet: could not start the testnet\n";
    return 1;
  }
  int rc = 0;
  {
    std::vector<node::ChainClient> clients;
    for (const char* v : {"v0", "v1", "v2", "v3"}) clients.emplace_back("127.0.0.1", t->rpc_port(v));
    std::vector<crypto::SecretKey> keys;
    for (const char* k : {"client", "solver", "challenger", "v0", "v1", "v2", "v3"}) keys.push_back(*t->Key(k));
    const auto sink = crypto::Address::FromHex("00000000000000000000000000000000000000bb").value();
    const std::uint64_t h_start = *clients[0].Height();
    const auto t0 = Clock::now();
    std::uint64_t accepted = 0;
    // Round-robin over senders and nodes; each sender keeps under the nonce gap.
    for (std::uint64_t i = 0; i < txs; ++i) {
      auto& c = clients[(i % keys.size()) % clients.size()];  // one node per sender: its nonces stay in order
      auto& k = keys[i % keys.size()];
      if (c.Send(k, vm::TransferPayload{sink, 1}, 100'000).ok()) ++accepted;
      if (i % (keys.size() * 200) == keys.size() * 200 - 1) {
        // Let blocks drain so no sender runs ahead by more than the mempool's nonce gap.
        while (clients[0].Call("chain_status")->at("mempool").get<std::uint64_t>() > 100)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    const double submit_s = std::chrono::duration<double>(Clock::now() - t0).count();
    // Wait until every accepted transfer is in a block.
    while (true) {
      auto a = clients[0].Account(sink);
      if (a.ok() && a->balance >= accepted) break;
      if (std::chrono::duration<double>(Clock::now() - t0).count() > 300) {
        rc = 1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::uint64_t blocks = *clients[0].Height() - h_start;
    std::cout << fmt::format("4-validator loopback testnet, block interval {} ms\n", interval);
    std::cout << fmt::format("  {:<34} {:>10}\n", "transfers submitted / accepted", fmt::format("{}/{}", txs, accepted));
    std::cout << fmt::format("  {:<34} {:>10.0f}\n", "accepted tx/s (RPC, 1 client)", accepted / submit_s);
    std::cout << fmt::format("  {:<34} {:>10.0f}\n", "included tx/s (end to end)", accepted / total_s);
    std::cout << fmt::format("  {:<34} {:>10.2f}\n", "blocks/s", blocks / total_s);
    std::cout << fmt::format("  {:<34} {:>10.2f}\n", "blocks/s ratio to 1000/interval", blocks / total_s / (1000.0 / interval));
  }
  (void)t->Down();
  fs::remove_all(dir);
  return rc;
}
