#pragma once
// The local testnet launcher (docs/node.md, "Local testnet"): generates keys
// and a genesis under one directory, starts N validators (plus full nodes
// and, optionally, a solver and a challenger daemon) as separate processes
// on loopback, records their pids, and stops, kills, pauses and restarts
// them (the perturbations of a manifest). `vt testnet up|down|status` and the
// multi-process tests drive it.
//
// Directory layout:
//   testnet.json          the spec, ports and pids (rewritten on every change)
//   genesis.json          generated genesis (validators, prefunded accounts)
//   passphrase            passphrase of every key file here (a local testnet only)
//   keys/<name>.key       v0…, client, solver, challenger
//   nodes/<name>/         data directory of a node (chain/, ports.json)
//   workers/<name>/       data directory of a daemon
//   logs/<name>.log       every process's log
//
// Manifest (JSON, testnet/manifests/*.json):
//   {"validators": 4, "full_nodes": 0, "block_interval_ms": 300,
//    "proposer_timeout_ms": 900, "solver": true, "challenger": true,
//    "solver_adversary": "wrong-output:step=3,node=2",   optional, TEST-ONLY
//    "jobs": ["path/to/job.json"],                        jobs the daemons serve
//    "perturbations": [{"after_ms": 2000, "node": "v1", "action": "kill"},
//                      {"after_ms": 5000, "node": "v1", "action": "restart"},
//                      {"after_ms": 3000, "node": "v2", "action": "disconnect", "duration_ms": 2000}],
//    "link_hosts": false,                                 TEST-ONLY, see TestnetSpec
//    "validator_bond": 1000000,                           each validator's genesis bond
//    "test_adversary": {"v3": "equivocate"}}              TEST-ONLY, see TestnetSpec
// "disconnect" pauses the process (SIGSTOP … SIGCONT): its peers see a silent
// node, exactly as across a cut link.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "crypto/keys.h"

namespace vt::node {

struct Perturbation {
  std::uint64_t after_ms = 0;
  std::string node;
  std::string action;  // kill | restart | stop | disconnect
  std::uint64_t duration_ms = 0;
};

struct TestnetSpec {
  std::uint32_t validators = 4;
  std::uint32_t full_nodes = 0;
  std::uint64_t block_interval_ms = 300;
  std::uint64_t proposer_timeout_ms = 900;
  bool solver = false;
  bool challenger = false;
  std::string solver_adversary;  // TEST-ONLY
  std::vector<std::filesystem::path> jobs;
  std::vector<Perturbation> perturbations;
  std::uint64_t prefund = 1'000'000'000'000'000;  // per account
  std::uint16_t base_port = 0;  // 0: free ports picked at creation
  // TEST-ONLY: node A dials node B at LinkHost(A, B):<B's P2P port> instead
  // of 127.0.0.1, so that a test can put a fault proxy (tests/support) on
  // each directed link (the P2P handshake binds the port, so the proxy
  // listens on B's own port number at its own loopback address).
  bool link_hosts = false;
  // Each validator's bond at genesis (docs/node.md "Evidence and slashing").
  std::uint64_t validator_bond = 1'000'000;
  // TEST-ONLY: validator name → a misbehaviour (node/consensus_driver.h
  // TestAdversary), passed as vt-node --test-adversary, which the node
  // honours only with VT_TEST_ONLY_ADVERSARY=1 in its environment (set by
  // the test that starts the testnet, never by `vt testnet`).
  std::map<std::string, std::string> test_adversary;
};

// Invalid "manifest-bad" with a detail.
Result<TestnetSpec> ParseManifest(const nlohmann::json& j, const std::filesystem::path& base_dir);
Result<TestnetSpec> LoadManifest(const std::filesystem::path& path);

struct ProcessInfo {
  std::string name;
  std::string kind;  // validator | full | solver | challenger
  std::uint16_t p2p_port = 0;
  std::uint16_t rpc_port = 0;
  int pid = 0;       // 0: not running
};

class Testnet {
 public:
  // Creates the directory (it must not hold a testnet yet: "testnet-exists").
  static Result<Testnet> Create(const std::filesystem::path& dir, const TestnetSpec& spec,
                                const std::filesystem::path& bin_dir);
  static Result<Testnet> Load(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return m_dir; }
  const TestnetSpec& spec() const { return m_spec; }
  const std::vector<ProcessInfo>& processes() const { return m_procs; }
  const ProcessInfo* Find(const std::string& name) const;
  // The loopback address node `from` dials node `to` at (spec.link_hosts):
  // 127.0.0.<2 + 16·i + j> for their indices i, j (at most 15 nodes).
  std::string LinkHost(const std::string& from, const std::string& to) const;
  std::filesystem::path KeyPath(const std::string& name) const { return m_dir / "keys" / (name + ".key"); }
  std::filesystem::path PassphrasePath() const { return m_dir / "passphrase"; }
  std::filesystem::path GenesisPath() const { return m_dir / "genesis.json"; }
  std::filesystem::path LogPath(const std::string& name) const { return m_dir / "logs" / (name + ".log"); }
  std::filesystem::path DataDir(const std::string& name) const;
  std::uint16_t rpc_port(const std::string& name) const;
  // A key of the testnet, decrypted with the testnet passphrase.
  Result<crypto::SecretKey> Key(const std::string& name) const;

  // From now on no Testnet in this process starts a process
  // ("testnet-stopping"): what a StopSignalGuard calls before it stops the
  // testnets it watches, so none gains a process behind its back.
  static void CloseSpawning();
  // Starts every process that is not running; waits until each node answers RPC.
  Status Up(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Status Start(const std::string& name, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // SIGTERM, wait (then SIGKILL after `grace`).
  Status Stop(const std::string& name, std::chrono::milliseconds grace = std::chrono::seconds(10));
  Status Kill(const std::string& name);  // SIGKILL, no grace
  Status Pause(const std::string& name);
  Status Resume(const std::string& name);
  Status Down();
  bool Running(const std::string& name) const;
  // Applies one perturbation now ("disconnect" blocks for its duration).
  Status Apply(const Perturbation& p);
  // Applies the spec's perturbations on their schedule, measured from now: a
  // "disconnect" becomes a pause at after_ms and a resume at after_ms +
  // duration_ms, so it does not hold up later events. `on_event` gets one
  // line per applied event. Stops at the first failure.
  Status RunPerturbations(const std::function<void(const std::string&)>& on_event = {});
  // Extra daemon arguments (tests: --adversary, poll interval).
  void SetWorkerArgs(const std::string& name, std::vector<std::string> args);

 private:
  Status Save() const;
  std::vector<std::string> CommandFor(const ProcessInfo& p) const;

  std::filesystem::path m_dir;
  std::filesystem::path m_bin_dir;
  TestnetSpec m_spec;
  std::vector<ProcessInfo> m_procs;
  std::map<std::string, std::vector<std::string>> m_worker_args;
};

// Free loopback TCP ports (bound once to port 0 and released).
Result<std::vector<std::uint16_t>> FreePorts(std::size_t count);

}  // namespace vt::node
