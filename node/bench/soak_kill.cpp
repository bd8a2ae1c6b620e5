// vt-soak-kill: kill -9 a random validator of a loopback testnet at random
// points, restart it, and check after every trial that
//   * no committed block was lost: every block recorded as committed before a
//     kill is, on every node, still the block at its height; and
//   * every node converges to one chain: at the lowest tip of all nodes, all
//     nodes hold the same block.
// "Committed" is read from the node's public RPC only (chain_status,
// get_block), so the tool works with any fork choice: a node that reports
// `finalized_height` (BFT finality) defines it; otherwise it is the highest
// block kDepth below the lowest tip that all running nodes hold with the same
// hash (longest-chain fork choice may still swap the tip for a better-ranked
// sibling, so the tip itself is not taken as committed; below it no validator
// builds a branch beside a block every node already has).
// A background client keeps sending transfers so that kills land in the
// middle of block writes with transactions, not only empty blocks.
//
//   vt-soak-kill [--trials 50] [--validators 4] [--interval-ms 200] [--seed S] [--keep]
//
// Exit status 0 only when every trial converged, no committed block was lost
// and no fork was seen (counts, never timings). CTest runs 3 trials (label testnet).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "node/client.h"
#include "node/stop_signal_guard.h"
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

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr std::uint64_t kDepth = 2;

struct Tip {
  std::uint64_t height = 0;
  std::optional<std::uint64_t> finalized;  // when the node reports one
};

class Soak {
 public:
  Soak(node::Testnet& net, std::vector<std::string> validators, std::uint64_t seed)
      : m_net(net), m_validators(std::move(validators)), m_rng(seed) {}

  // One client per node, short timeouts: a killed node answers nothing.
  node::ChainClient& Client(const std::string& name) {
    auto it = m_clients.find(name);
    if (it == m_clients.end())
      it = m_clients.emplace(name, node::ChainClient("127.0.0.1", m_net.rpc_port(name), std::chrono::seconds(3)))
               .first;
    return it->second;
  }

  std::optional<Tip> TipOf(const std::string& name) {
    auto s = Client(name).ChainStatus();
    if (!s.ok()) return std::nullopt;
    Tip t;
    t.height = (*s)["height"].get<std::uint64_t>();
    if (s->contains("finalized_height") && (*s)["finalized_height"].is_number_unsigned())
      t.finalized = (*s)["finalized_height"].get<std::uint64_t>();
    return t;
  }

  std::optional<std::string> HashAt(const std::string& name, std::uint64_t height) {
    auto b = Client(name).Call("get_block", nlohmann::json::array({height}));
    if (!b.ok() || !b->contains("hash")) return std::nullopt;
    return (*b)["hash"].get<std::string>();
  }

  std::vector<std::string> Running() const {
    std::vector<std::string> out;
    for (const std::string& v : m_validators)
      if (m_net.Running(v)) out.push_back(v);
    return out;
  }

  // The highest committed block as the running nodes see it now: (height, hash).
  std::optional<std::pair<std::uint64_t, std::string>> Committed() {
    const std::vector<std::string> nodes = Running();
    std::uint64_t low = ~std::uint64_t{0};
    std::optional<std::uint64_t> finalized;
    for (const std::string& n : nodes) {
      const auto t = TipOf(n);
      if (!t) return std::nullopt;
      low = std::min(low, t->height);
      if (t->finalized) finalized = std::max(finalized.value_or(0), *t->finalized);
    }
    std::uint64_t h = finalized ? std::min(*finalized, low) : (low > kDepth ? low - kDepth : 0);
    // Step down to a height where every running node holds the same block.
    for (int tries = 0; tries < 64 && h > 0; ++tries, --h) {
      std::optional<std::string> first;
      bool same = true;
      for (const std::string& n : nodes) {
        const auto hash = HashAt(n, h);
        if (!hash) return std::nullopt;
        if (!first) first = hash;
        same = same && *first == *hash;
      }
      if (same) return std::make_pair(h, *first);
    }
    return std::nullopt;
  }

  // Every node holds one block at the lowest tip of them all.
  bool Converged(std::uint64_t at_least) {
    std::uint64_t low = ~std::uint64_t{0};
    for (const std::string& n : m_validators) {
      const auto t = TipOf(n);
      if (!t) return false;
      low = std::min(low, t->height);
    }
    if (low < at_least) return false;
    std::optional<std::string> first;
    for (const std::string& n : m_validators) {
      const auto hash = HashAt(n, low);
      if (!hash) return false;
      if (!first) first = hash;
      if (*first != *hash) return false;
    }
    return true;
  }

  // Checks every recorded committed block on every node; counts the ones
  // that differ (a fork: a committed block replaced) or are missing (lost).
  void CheckCommitted(std::uint64_t* forks, std::uint64_t* lost) {
    for (const auto& [h, hash] : m_committed) {
      for (const std::string& n : m_validators) {
        const auto got = HashAt(n, h);
        if (!got) {
          ++*lost;
          std::cerr << fmt::format("  LOST: {} has no block at committed height {}\n", n, h);
        } else if (*got != hash) {
          ++*forks;
          std::cerr << fmt::format("  FORK: {} holds {} at committed height {}, not {}\n", n, got->substr(0, 16), h,
                                   hash.substr(0, 16));
        }
      }
    }
  }

  void Record(std::uint64_t h, const std::string& hash) { m_committed[h] = hash; }
  std::mt19937_64& rng() { return m_rng; }

 private:
  node::Testnet& m_net;
  std::vector<std::string> m_validators;
  std::mt19937_64 m_rng;
  std::map<std::string, node::ChainClient> m_clients;
  std::map<std::uint64_t, std::string> m_committed;  // height -> hash, as seen before kills
};

int Run(node::StopSignalGuard& guard, std::uint32_t trials, std::uint32_t validators,
        std::uint64_t interval_ms, std::uint64_t seed, bool keep) {
  const fs::path dir = fs::temp_directory_path() / ("vt-soak-kill-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  node::TestnetSpec spec;
  spec.validators = validators;
  spec.block_interval_ms = interval_ms;
  spec.proposer_timeout_ms = 3 * interval_ms;
  auto t = node::Testnet::Create(dir, spec, SelfBinDir());
  if (!t.ok()) {
    std::cerr << "vt-soak-kill: " << t.status().ToString() << "\n";
    return 1;
  }
  guard.Watch(dir);
  node::Testnet& net = *t;
  struct Cleanup {
    node::Testnet& net;
    fs::path dir;
    bool keep;
    ~Cleanup() {
      (void)net.Down();
      if (!keep) {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    }
  } cleanup{net, dir, keep};
  if (Status s = net.Up(); !s.ok()) {
    std::cerr << "vt-soak-kill: up: " << s.ToString() << "\n";
    return 1;
  }
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < validators; ++i) names.push_back("v" + std::to_string(i));
  Soak soak(net, names, seed);

  // Background transfers (to the first running node), so blocks carry transactions.
  auto client_key = net.Key("client");
  if (!client_key.ok()) {
    std::cerr << "vt-soak-kill: " << client_key.status().ToString() << "\n";
    return 1;
  }
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0};
  std::thread load([&] {
    const crypto::Address sink = crypto::Address::FromHex("00000000000000000000000000000000000000cc").value();
    std::map<std::string, node::ChainClient> clients;
    while (!stop) {
      for (const std::string& n : names) {
        if (stop || !net.Running(n)) continue;
        auto it = clients.find(n);
        if (it == clients.end())
          it = clients.emplace(n, node::ChainClient("127.0.0.1", net.rpc_port(n), std::chrono::seconds(2))).first;
        if (it->second.Send(*client_key, vm::TransferPayload{sink, 1}, 100'000).ok()) ++sent;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  std::cout << fmt::format("vt-soak-kill: {} validators, {} ms blocks, {} trials, seed {}\n", validators,
                           interval_ms, trials, seed);
  std::uint64_t forks = 0, lost = 0, failed = 0;
  double worst_converge = 0;
  const auto t0 = Clock::now();
  std::uint64_t start_height = 0;
  if (auto tip = soak.TipOf(names[0])) start_height = tip->height;
  for (std::uint32_t trial = 1; trial <= trials; ++trial) {
    std::uniform_int_distribution<std::size_t> pick(0, names.size() - 1);
    std::uniform_int_distribution<int> before(0, 1500), down(0, 2000);
    const std::string victim = names[pick(soak.rng())];
    std::this_thread::sleep_for(std::chrono::milliseconds(before(soak.rng())));
    const auto committed = soak.Committed();
    if (committed) soak.Record(committed->first, committed->second);
    if (Status s = net.Kill(victim); !s.ok()) {
      std::cerr << "  kill " << victim << ": " << s.ToString() << "\n";
      ++failed;
      continue;
    }
    const int down_ms = down(soak.rng());
    std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));
    if (Status s = net.Start(victim); !s.ok()) {
      std::cerr << "  restart " << victim << ": " << s.ToString() << "\n";
      ++failed;
      continue;
    }
    const auto c0 = Clock::now();
    // Converged: the restarted node caught up with where the others were when
    // it came back, and all nodes hold one block at the lowest tip.
    std::uint64_t need = committed ? committed->first : 0;
    for (const std::string& n : names)
      if (n != victim)
        if (const auto tip = soak.TipOf(n)) need = std::max(need, tip->height);
    bool converged = false;
    while (!converged && Seconds(c0) < 60) {
      converged = soak.Converged(need);
      if (!converged) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double took = Seconds(c0);
    worst_converge = std::max(worst_converge, took);
    std::uint64_t trial_forks = 0, trial_lost = 0;
    soak.CheckCommitted(&trial_forks, &trial_lost);
    forks += trial_forks;
    lost += trial_lost;
    if (!converged) ++failed;
    std::cout << fmt::format("  trial {:3}: kill -9 {} (down {:4} ms), committed {:5}, caught up to {:5}, {} in {:.1f} s{}\n",
                             trial, victim, down_ms, committed ? committed->first : 0, need, converged ? "converged" : "NOT CONVERGED", took,
                             trial_forks + trial_lost > 0 ? "  COMMITTED BLOCK CHANGED" : "")
              << std::flush;  // progress is visible while a long campaign runs
  }
  stop = true;
  load.join();
  std::uint64_t end_height = 0;
  if (auto tip = soak.TipOf(names[0])) end_height = tip->height;
  const double secs = Seconds(t0);
  std::cout << fmt::format(
      "trials {}, not converged {}, forks {}, committed blocks lost {}; {} blocks in {:.0f} s ({:.2f}/s), "
      "{} transfers accepted, slowest convergence {:.1f} s\n",
      trials, failed, forks, lost, end_height - start_height, secs,
      static_cast<double>(end_height - start_height) / secs, sent.load(), worst_converge);
  return failed == 0 && forks == 0 && lost == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  node::StopSignalGuard guard;  // first: interrupted, the soak takes its testnet down
  CLI::App app{"vt-soak-kill: kill -9 random validators of a loopback testnet; no committed block lost, one chain"};
  std::uint32_t trials = 50, validators = 4;
  std::uint64_t interval = 200;
  std::uint64_t seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  bool keep = false;
  app.add_option("--trials", trials, "kill/restart trials")->capture_default_str()->check(CLI::Range(1u, 100000u));
  app.add_option("--validators", validators, "validators")->capture_default_str()->check(CLI::Range(2u, 16u));
  app.add_option("--interval-ms", interval, "block interval")->capture_default_str()->check(CLI::Range(50u, 10000u));
  app.add_option("--seed", seed, "random seed (printed; reruns the same kill schedule)");
  app.add_flag("--keep", keep, "keep the testnet directory (logs) afterwards");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return Run(guard, trials, validators, interval, seed, keep);
}
