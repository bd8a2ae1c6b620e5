#include "node/bin/vt/vt_cli.h"

#include <cstdlib>
#include <iostream>
#include <string_view>
#include <utility>

#include "crypto/keyfile.h"
#include "node/passphrase.h"
#include "node/testnet.h"

namespace vt::cli {

namespace fs = std::filesystem;

std::function<void()> Runs(Globals& g, std::function<int()> f) {
  return [&g, f] { g.rc = f(); };
}

namespace {

// What to do about a failure whose reason does not already say it: reasons
// that come back bare from a node or a receipt (which carries no detail).
constexpr std::pair<std::string_view, std::string_view> kFixes[] = {
    {"rpc-transport",
     "no node answers there: start a local testnet with `vt testnet up`, or name a node with --rpc HOST:PORT "
     "(or VT_RPC)"},
    {"tx-insufficient-funds",
     "the sender cannot pay the amount (reward, bond) plus gas: fund it (`vt account transfer`) or ask for less"},
    {"bounty-bond-below-minimum",
     "raise --solver-bond / --challenger-bond, or leave them out to post the job's minimum bond"},
    {"bounty-bad-window", "--solve-window, --challenge-window and --clock-budget must each be 1 .. the chain's "
                          "max_window blocks"},
    {"bounty-job-too-large",
     "arbitrating one operator of this job needs a larger transaction than the chain carries: use a smaller model "
     "or batch"},
    {"file-not-found", "check the path; a job file's relative dataset path is relative to the job file's folder"},
};

std::string_view FixFor(std::string_view reason) {
  for (const auto& [r, fix] : kFixes)
    if (r == reason) return fix;
  return {};
}

}  // namespace

int Fail(const Globals& g, const Status& s) {
  const std::string_view fix = FixFor(s.reason());
  if (g.json) {
    Json err{{"reason", s.reason()}, {"detail", s.detail()}};
    if (!fix.empty()) err["fix"] = std::string(fix);
    std::cout << Json{{"error", err}}.dump() << "\n";
  } else {
    std::cerr << "vt: " << s.ToString() << "\n";
    if (!fix.empty()) std::cerr << "  fix: " << fix << "\n";
  }
  return 1;
}

void Print(const Globals& g, const Json& j, const std::string& human) {
  if (g.json)
    std::cout << j.dump() << "\n";
  else
    std::cout << human;
}

fs::path Home(const Globals& g) {
  if (!g.home.empty()) return g.home;
  if (const char* h = std::getenv("VT_HOME")) return h;
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".veritrain";
  return ".veritrain";
}

fs::path TestnetDir(const Globals& g) { return Home(g) / "testnet"; }

fs::path SelfBinDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

Result<net::Endpoint> RpcEndpoint(const Globals& g) {
  std::string text = g.rpc;
  if (text.empty())
    if (const char* e = std::getenv("VT_RPC")) text = e;
  if (text.empty()) {
    auto t = node::Testnet::Load(TestnetDir(g));
    if (t.ok() && !t->processes().empty()) return net::Endpoint{"127.0.0.1", t->processes().front().rpc_port};
    text = "127.0.0.1:8545";
  }
  return net::Endpoint::Parse(text);
}

Result<node::ChainClient> Client(const Globals& g) {
  VT_ASSIGN_OR_RETURN(net::Endpoint ep, RpcEndpoint(g));
  return node::ChainClient(ep.host, ep.port, std::chrono::seconds(30));
}

Result<crypto::SecretKey> LoadKey(const Globals& g, const std::string& name) {
  fs::path path = name;
  std::string pass_file = g.passphrase_file;
  if (!fs::exists(path)) path = Home(g) / "keys" / (name + ".key");
  if (!fs::exists(path)) {
    path = TestnetDir(g) / "keys" / (name + ".key");
    if (pass_file.empty()) pass_file = (TestnetDir(g) / "passphrase").string();
  }
  if (!fs::exists(path))
    return Status::Invalid("key-unknown", "no key named " + name + " in " + (Home(g) / "keys").string() + " or " +
                                              (TestnetDir(g) / "keys").string() +
                                              "; create one with `vt keys new " + name +
                                              "` or start a testnet with `vt testnet up`");
  VT_ASSIGN_OR_RETURN(std::string pass, node::ReadPassphrase(pass_file));
  return crypto::ReadKeyFile(path, pass);
}

Result<crypto::Address> ResolveAddress(const Globals& g, const std::string& text) {
  if (auto a = crypto::Address::FromHex(text); a.ok()) return *a;
  for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
    const fs::path p = dir / (text + ".key");
    if (fs::exists(p)) {
      VT_ASSIGN_OR_RETURN(crypto::KeyFileInfo info, crypto::ReadKeyFileInfo(p));
      return info.address;
    }
  }
  return Status::Invalid("address-unknown", text + " is neither an address (40 hex digits) nor a key name (`vt keys list`)");
}

}  // namespace vt::cli
