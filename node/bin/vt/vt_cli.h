#pragma once
// What every `vt` command group shares (node/bin/vt/*.cpp): the global
// options, where keys and the testnet live, the RPC client, printing and
// failing. Each group adds its subcommands with one Add*Commands call from
// main.cpp.

#include <filesystem>
#include <functional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"
#include "crypto/keys.h"
#include "net/peer.h"
#include "node/client.h"

namespace vt::cli {

using Json = nlohmann::json;

struct Globals {
  std::string home;
  std::string rpc;
  bool json = false;
  std::string passphrase_file;
  int rc = 0;  // the exit code the command that ran returned
};

// A subcommand callback running `f` and keeping its exit code.
std::function<void()> Runs(Globals& g, std::function<int()> f);

// Prints the status (JSON with --json) and returns exit code 1.
int Fail(const Globals& g, const Status& s);
void Print(const Globals& g, const Json& j, const std::string& human);

std::filesystem::path Home(const Globals& g);
std::filesystem::path TestnetDir(const Globals& g);
std::filesystem::path SelfBinDir();

Result<net::Endpoint> RpcEndpoint(const Globals& g);
Result<node::ChainClient> Client(const Globals& g);
// A key by name: <home>/keys/NAME.key, else the testnet's keys (its passphrase).
Result<crypto::SecretKey> LoadKey(const Globals& g, const std::string& name);
// An address: 40 hex digits or the name of a key.
Result<crypto::Address> ResolveAddress(const Globals& g, const std::string& text);

void AddKeyCommands(CLI::App& app, Globals& g);
void AddAccountCommands(CLI::App& app, Globals& g);
void AddBountyCommands(CLI::App& app, Globals& g);
void AddDisputeCommands(CLI::App& app, Globals& g);
void AddTestnetCommands(CLI::App& app, Globals& g);
void AddDaemonCommands(CLI::App& app, Globals& g);
void AddValidatorCommands(CLI::App& app, Globals& g);
// One validator entry of chain_status / get_account as text (validators.cpp).
std::string ValidatorText(const Json& v);

}  // namespace vt::cli
