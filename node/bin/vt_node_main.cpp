// vt-node: a veritrain chain node (docs/node.md). Parses options into a
// NodeConfig, runs until SIGINT/SIGTERM, shuts down cleanly.
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "common/log.h"
#include "crypto/keyfile.h"
#include "node/node.h"
#include "node/passphrase.h"

int main(int argc, char** argv) {
  using namespace vt;
  CLI::App app{"vt-node: a veritrain chain node (LevelDB store, P2P, JSON-RPC, block production)"};
  std::string data_dir, genesis_path, key_path, passphrase_file, name = "node", log_file, host = "127.0.0.1";
  std::uint16_t p2p_port = 0, rpc_port = 0;
  std::vector<std::string> peers;
  app.add_option("--data", data_dir, "data directory (chain database, ports.json)")->required();
  app.add_option("--genesis", genesis_path, "genesis file (JSON)")->required();
  app.add_option("--key", key_path, "validator key file (omit for a full node that follows)");
  app.add_option("--passphrase-file", passphrase_file, "file holding the key passphrase (else env VT_PASSPHRASE)");
  app.add_option("--name", name, "name in logs and chain_status")->capture_default_str();
  app.add_option("--host", host, "address to bind (P2P and RPC)")->capture_default_str();
  app.add_option("--p2p-port", p2p_port, "P2P port (0: ephemeral)")->capture_default_str();
  app.add_option("--rpc-port", rpc_port, "JSON-RPC port (0: ephemeral)")->capture_default_str();
  app.add_option("--peer", peers, "peer to dial, host:port (repeatable)");
  app.add_option("--log-file", log_file, "write logs here instead of stderr");
  std::string test_adversary;
  app.add_option("--test-adversary", test_adversary,
                 "TEST-ONLY: misbehave on purpose (equivocate); refused unless the environment has "
                 "VT_TEST_ONLY_ADVERSARY=1, which only the tests set");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!log_file.empty()) log::SetSink(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
  if (const char* lv = std::getenv("VT_LOG")) (void)log::SetLevels(lv);
  auto& lg = log::Get("node");
  spdlog::flush_every(std::chrono::seconds(1));  // a daemon's log is read while it runs

  // Block the signals before any thread starts; the main thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  node::NodeConfig config;
  config.name = name;
  config.data_dir = data_dir;
  config.host = host;
  config.p2p_port = p2p_port;
  config.rpc_port = rpc_port;
  auto genesis = node::LoadGenesis(genesis_path);
  if (!genesis.ok()) {
    std::cerr << "vt-node: genesis: " << genesis.status().ToString() << "\n";
    return 1;
  }
  config.genesis = *genesis;
  if (!test_adversary.empty()) {
    // A Byzantine validator on purpose: only a test may start one.
    const char* allowed = std::getenv("VT_TEST_ONLY_ADVERSARY");
    if (allowed == nullptr || std::string_view(allowed) != "1") {
      std::cerr << "vt-node: --test-adversary is TEST-ONLY (set VT_TEST_ONLY_ADVERSARY=1 in a test)\n";
      return 2;
    }
    auto mode = node::ParseTestAdversary(test_adversary);
    if (!mode.ok()) {
      std::cerr << "vt-node: --test-adversary: " << mode.status().ToString() << "\n";
      return 2;
    }
    config.test_adversary = *mode;
    lg.warn("{} runs the TEST-ONLY adversary '{}'", name, test_adversary);
  }
  for (const std::string& p : peers) {
    auto ep = net::Endpoint::Parse(p);
    if (!ep.ok()) {
      std::cerr << "vt-node: --peer " << p << ": " << ep.status().ToString() << "\n";
      return 2;
    }
    config.peers.push_back(*ep);
  }
  if (!key_path.empty()) {
    auto pass = node::ReadPassphrase(passphrase_file);
    if (!pass.ok()) {
      std::cerr << "vt-node: " << pass.status().ToString() << "\n";
      return 1;
    }
    auto key = crypto::ReadKeyFile(key_path, *pass);
    if (!key.ok()) {
      std::cerr << "vt-node: key " << key_path << ": " << key.status().ToString() << "\n";
      return 1;
    }
    config.validator_key = std::move(*key);
  }
  auto node = node::Node::Create(std::move(config));
  if (!node.ok()) {
    std::cerr << "vt-node: " << node.status().ToString() << "\n";
    return 1;
  }
  if (Status s = (*node)->Start(); !s.ok()) {
    std::cerr << "vt-node: " << s.ToString() << "\n";
    return 1;
  }
  {
    // Where to reach us (ports may have been ephemeral), written atomically.
    nlohmann::json j{{"p2p_port", (*node)->p2p_port()}, {"rpc_port", (*node)->rpc_port()}, {"pid", getpid()}};
    const std::filesystem::path tmp = std::filesystem::path(data_dir) / "ports.json.tmp";
    std::ofstream(tmp) << j.dump() << "\n";
    std::filesystem::rename(tmp, std::filesystem::path(data_dir) / "ports.json");
  }
  lg.info("{} explorer at http://{}:{}/", name, host, (*node)->rpc_port());
  int sig = 0;
  sigwait(&signals, &sig);
  lg.info("{} received {}; shutting down", name, sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*node)->Stop();
  return 0;
}
