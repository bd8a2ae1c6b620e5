// vt: the veritrain command line (docs/node.md, "CLI").
//   vt keys new|list|show           key files under <home>/keys
//   vt account balance|transfer
//   vt bounty post|show|list|watch
//   vt dispute show
//   vt testnet up|down|status       a local testnet under <home>/testnet
//   vt solver | vt challenger       the worker daemons
// Readable output by default, --json for scripts. Exit codes: 0 success,
// 1 failure, 2 usage error.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "common/encoding.h"
#include "common/log.h"
#include "crypto/keyfile.h"
#include "net/peer.h"
#include "node/agent.h"
#include "node/bounty_flow.h"
#include "node/client.h"
#include "node/json_view.h"
#include "node/passphrase.h"
#include "node/testnet.h"
#include "worker/trainer.h"

namespace {

using namespace vt;
using Json = nlohmann::json;
namespace fs = std::filesystem;

struct Globals {
  std::string home;
  std::string rpc;
  bool json = false;
  std::string passphrase_file;
};

int Fail(const Globals& g, const Status& s) {
  if (g.json) {
    std::cout << Json{{"error", {{"reason", s.reason()}, {"detail", s.detail()}}}}.dump() << "\n";
  } else {
    std::cerr << "vt: " << s.ToString() << "\n";
  }
  return 1;
}

fs::path Home(const Globals& g) {
  if (!g.home.empty()) return g.home;
  if (const char* h = std::getenv("VT_HOME")) return h;
  if (const char* h = std::getenv("HOME")) return fs::path(h) / ".veritrain";
  return ".veritrain";
}

fs::path TestnetDir(const Globals& g) { return Home(g) / "testnet"; }

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

// A key by name: <home>/keys/NAME.key, else the testnet's keys (its passphrase).
Result<crypto::SecretKey> LoadKey(const Globals& g, const std::string& name) {
  fs::path path = name;
  std::string pass_file = g.passphrase_file;
  if (!fs::exists(path)) path = Home(g) / "keys" / (name + ".key");
  if (!fs::exists(path)) {
    path = TestnetDir(g) / "keys" / (name + ".key");
    if (pass_file.empty()) pass_file = (TestnetDir(g) / "passphrase").string();
  }
  if (!fs::exists(path)) return Status::Invalid("key-unknown", "no key named " + name);
  VT_ASSIGN_OR_RETURN(std::string pass, node::ReadPassphrase(pass_file));
  return crypto::ReadKeyFile(path, pass);
}

// An address: 40 hex digits or the name of a key.
Result<crypto::Address> ResolveAddress(const Globals& g, const std::string& text) {
  if (auto a = crypto::Address::FromHex(text); a.ok()) return *a;
  for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
    const fs::path p = dir / (text + ".key");
    if (fs::exists(p)) {
      VT_ASSIGN_OR_RETURN(crypto::KeyFileInfo info, crypto::ReadKeyFileInfo(p));
      return info.address;
    }
  }
  return Status::Invalid("address-unknown", text + " is neither an address nor a key name");
}

void Print(const Globals& g, const Json& j, const std::string& human) {
  if (g.json)
    std::cout << j.dump() << "\n";
  else
    std::cout << human;
}

std::string BountyLine(const Json& b) {
  return "bounty " + std::to_string(b["id"].get<std::uint64_t>()) + "  " + b["state"].get<std::string>() +
         "  reward " + std::to_string(b["reward"].get<std::uint64_t>()) + "  steps " +
         std::to_string(b["num_steps"].get<std::uint64_t>()) + "  mode " + b["mode"].get<std::string>() +
         "  games " + std::to_string(b["games"].size()) + "\n";
}

fs::path SelfBinDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path(".") : exe.parent_path();
}

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  Globals g;
  CLI::App app{"vt: the veritrain command line"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  app.add_option("--home", g.home, "state directory (keys, testnet); default $VT_HOME or ~/.veritrain");
  app.add_option("--rpc", g.rpc, "node JSON-RPC host:port; default $VT_RPC, the local testnet, 127.0.0.1:8545");
  app.add_flag("--json", g.json, "machine-readable output");
  app.add_option("--passphrase-file", g.passphrase_file, "key passphrase file (else env VT_PASSPHRASE)");

  int rc = 0;
  auto run = [&](std::function<int()> f) { return [&rc, f] { rc = f(); }; };

  // ---- keys ----
  auto* keys = app.add_subcommand("keys", "key files")->require_subcommand(1);
  std::string key_name;
  auto* keys_new = keys->add_subcommand("new", "generate a key");
  keys_new->add_option("name", key_name, "key name")->required();
  keys_new->callback(run([&] {
    auto pass = node::ReadPassphrase(g.passphrase_file);
    if (!pass.ok()) return Fail(g, pass.status());
    auto key = crypto::SecretKey::Generate();
    if (!key.ok()) return Fail(g, key.status());
    const fs::path path = Home(g) / "keys" / (key_name + ".key");
    fs::create_directories(path.parent_path());
    if (Status s = crypto::WriteKeyFile(path, *key, *pass); !s.ok()) return Fail(g, s);
    Print(g, {{"name", key_name}, {"address", key->address().Hex()}, {"pubkey", key->public_key().Hex()},
              {"path", path.string()}},
          "created " + key_name + "  address " + key->address().Hex() + "\n");
    return 0;
  }));
  auto* keys_list = keys->add_subcommand("list", "list keys (no passphrase needed)");
  keys_list->callback(run([&] {
    Json out = Json::array();
    std::string human;
    for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
      if (!fs::exists(dir)) continue;
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".key") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const fs::path& p : files) {
        auto info = crypto::ReadKeyFileInfo(p);
        if (!info.ok()) continue;
        out.push_back({{"name", p.stem().string()}, {"address", info->address.Hex()}, {"path", p.string()}});
        human += p.stem().string() + std::string(12 - std::min<std::size_t>(11, p.stem().string().size()), ' ') +
                 info->address.Hex() + "  " + p.parent_path().string() + "\n";
      }
    }
    Print(g, out, human.empty() ? "no keys\n" : human);
    return 0;
  }));
  auto* keys_show = keys->add_subcommand("show", "show a key's address and public key");
  keys_show->add_option("name", key_name, "key name")->required();
  keys_show->callback(run([&] {
    for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
      const fs::path p = dir / (key_name + ".key");
      if (!fs::exists(p)) continue;
      auto info = crypto::ReadKeyFileInfo(p);
      if (!info.ok()) return Fail(g, info.status());
      Print(g, {{"name", key_name}, {"address", info->address.Hex()}, {"pubkey", info->public_key.Hex()},
                {"path", p.string()}},
            key_name + "\n  address " + info->address.Hex() + "\n  pubkey  " + info->public_key.Hex() + "\n  file    " +
                p.string() + "\n");
      return 0;
    }
    return Fail(g, Status::Invalid("key-unknown", key_name));
  }));

  // ---- account ----
  auto* account = app.add_subcommand("account", "balances and transfers")->require_subcommand(1);
  std::string who, from, to;
  std::uint64_t amount = 0;
  auto* balance = account->add_subcommand("balance", "balance and nonce of an address or key name");
  balance->add_option("who", who, "address or key name")->required();
  balance->callback(run([&] {
    auto addr = ResolveAddress(g, who);
    if (!addr.ok()) return Fail(g, addr.status());
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto a = c->Account(*addr);
    if (!a.ok()) return Fail(g, a.status());
    Print(g, {{"address", addr->Hex()}, {"balance", a->balance}, {"nonce", a->nonce}},
          who + "  " + std::to_string(a->balance) + "  (nonce " + std::to_string(a->nonce) + ")\n");
    return 0;
  }));
  auto* transfer = account->add_subcommand("transfer", "send funds");
  transfer->add_option("--from", from, "sender key name or key file")->required();
  transfer->add_option("--to", to, "recipient address or key name")->required();
  transfer->add_option("--amount", amount, "amount")->required();
  transfer->callback(run([&] {
    auto key = LoadKey(g, from);
    if (!key.ok()) return Fail(g, key.status());
    auto addr = ResolveAddress(g, to);
    if (!addr.ok()) return Fail(g, addr.status());
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto id = c->Send(*key, vm::TransferPayload{*addr, amount}, 100'000);
    if (!id.ok()) return Fail(g, id.status());
    auto r = c->WaitReceipt(*id);
    if (!r.ok()) return Fail(g, r.status());
    Print(g, *r, std::string((*r)["success"].get<bool>() ? "sent " : "FAILED ") + std::to_string(amount) + " to " +
                     addr->Hex() + " in block " + std::to_string((*r)["height"].get<std::uint64_t>()) + "\n");
    return (*r)["success"].get<bool>() ? 0 : 1;
  }));

  // ---- bounty ----
  auto* bounty = app.add_subcommand("bounty", "training bounties")->require_subcommand(1);
  std::string job_file;
  std::uint64_t bounty_id = 0, reward = 1'000'000, solver_bond = 0, challenger_bond = 0,
                solve_window = 400, challenge_window = 40, clock_budget = 40;
  auto* post = bounty->add_subcommand("post", "post a bounty for a job file");
  post->add_option("--from", from, "client key")->required();
  post->add_option("--job", job_file, "job file (JSON)")->required();
  post->add_option("--reward", reward, "reward")->capture_default_str();
  post->add_option("--solver-bond", solver_bond, "solver bond (0: the job's minimum)")->capture_default_str();
  post->add_option("--challenger-bond", challenger_bond, "challenger bond (0: the job's minimum)")
      ->capture_default_str();
  post->add_option("--solve-window", solve_window, "blocks to claim and commit")->capture_default_str();
  post->add_option("--challenge-window", challenge_window, "blocks to open disputes")->capture_default_str();
  post->add_option("--clock-budget", clock_budget, "blocks on each chess clock")->capture_default_str();
  post->callback(run([&] {
    auto key = LoadKey(g, from);
    if (!key.ok()) return Fail(g, key.status());
    auto loaded = worker::LoadJobWithDataset(job_file);
    if (!loaded.ok()) return Fail(g, loaded.status());
    worker::StepEngine engine(loaded->job, loaded->dataset, worker::ExecConfigFor(loaded->job));
    auto h0 = engine.InitialState();
    if (!h0.ok()) return Fail(g, h0.status());
    auto minimum = node::MinimumBond(loaded->job.spec);
    if (!minimum.ok()) return Fail(g, minimum.status());
    if (solver_bond == 0) solver_bond = *minimum;
    if (challenger_bond == 0) challenger_bond = *minimum;
    referee::PostBountyArgs a{loaded->job.spec, worker::StateHash(*h0), reward, solver_bond, challenger_bond,
                              solve_window, challenge_window, clock_budget};
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto id = c->CallReferee(*key, referee::Method::kPostBounty, EncodeToBytes(a));
    if (!id.ok()) return Fail(g, id.status());
    auto r = c->WaitReceipt(*id);
    if (!r.ok()) return Fail(g, r.status());
    if (!(*r)["success"].get<bool>())
      return Fail(g, Status::Invalid((*r)["reason"].get<std::string>(), "post-bounty failed"));
    std::uint64_t posted = 0;
    for (const auto& e : (*r)["events"])
      if (e["topic"] == "bounty-posted") posted = e["decoded"]["bounty_id"].get<std::uint64_t>();
    Print(g, {{"bounty_id", posted}, {"tx_id", id->Hex()}, {"job_hash", loaded->job.Hash().Hex()}},
          "posted bounty " + std::to_string(posted) + " (job " + loaded->job.Hash().Hex().substr(0, 16) + ")\n");
    return 0;
  }));
  auto* show = bounty->add_subcommand("show", "show a bounty");
  show->add_option("id", bounty_id)->required();
  show->callback(run([&] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto b = c->Call("get_bounty", Json::array({bounty_id}));
    if (!b.ok()) return Fail(g, b.status());
    b->erase("encoded");
    Print(g, *b, BountyLine(*b) + b->dump(2) + "\n");
    return 0;
  }));
  auto* list = bounty->add_subcommand("list", "list bounties");
  list->callback(run([&] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto r = c->Call("list_bounties", Json::object());
    if (!r.ok()) return Fail(g, r.status());
    std::string human;
    for (const auto& b : (*r)["bounties"]) human += BountyLine(b);
    Print(g, *r, human.empty() ? "no bounties\n" : human);
    return 0;
  }));
  std::uint64_t watch_timeout_s = 600;
  auto* watch = bounty->add_subcommand("watch", "follow a bounty's events until it ends");
  watch->add_option("id", bounty_id)->required();
  watch->add_option("--timeout", watch_timeout_s, "seconds")->capture_default_str();
  watch->callback(run([&] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    std::uint64_t next = 1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(watch_timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
      auto ev = c->Call("get_events", Json{{"from_height", next}});
      if (ev.ok()) {
        for (const auto& e : (*ev)["events"]) {
          if (!e.contains("decoded")) continue;
          const auto& d = e["decoded"];
          if (d.contains("bounty_id") && d["bounty_id"].get<std::uint64_t>() != bounty_id) continue;
          if (g.json)
            std::cout << e.dump() << "\n";
          else
            std::cout << "block " << e["height"] << "  " << e["topic"].get<std::string>() << "  " << d.dump() << "\n";
        }
        next = (*ev)["next_height"].get<std::uint64_t>();
      }
      auto b = c->Call("get_bounty", Json::array({bounty_id}));
      if (b.ok()) {
        const std::string st = (*b)["state"];
        if (st == "finalized" || st == "failed" || st == "refunded") {
          if (!g.json) std::cout << "bounty " << bounty_id << " " << st << "\n";
          return 0;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return Fail(g, Status::Error("watch-timeout"));
  }));

  // ---- dispute ----
  auto* dispute = app.add_subcommand("dispute", "dispute games")->require_subcommand(1);
  std::uint64_t game_id = 0;
  auto* dshow = dispute->add_subcommand("show", "show a dispute game");
  dshow->add_option("id", game_id)->required();
  dshow->callback(run([&] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto d = c->Call("get_dispute", Json::array({game_id}));
    if (!d.ok()) return Fail(g, d.status());
    d->erase("encoded");
    d->erase("walk");
    std::string human = "game " + std::to_string(game_id) + " on bounty " +
                        std::to_string((*d)["bounty_id"].get<std::uint64_t>()) + ": " +
                        (*d)["phase"].get<std::string>() + ", " + (*d)["result"].get<std::string>();
    if (d->contains("step")) human += ", step " + std::to_string((*d)["step"].get<std::uint64_t>());
    if (d->contains("node_index")) human += ", node " + std::to_string((*d)["node_index"].get<std::uint64_t>());
    Print(g, *d, human + "\n" + d->dump(2) + "\n");
    return 0;
  }));

  // ---- testnet ----
  auto* testnet = app.add_subcommand("testnet", "a local testnet on loopback")->require_subcommand(1);
  std::string manifest, tdir;
  std::uint32_t validators = 4;
  bool no_workers = false, purge = false, no_perturb = false;
  std::vector<std::string> jobs;
  auto* up = testnet->add_subcommand("up", "create (if needed) and start the testnet");
  up->add_option("--dir", tdir, "testnet directory (default <home>/testnet)");
  up->add_option("--manifest", manifest, "manifest file (testnet/manifests/*.json)");
  up->add_option("--validators", validators, "validators (without a manifest)")->capture_default_str();
  up->add_option("--job", jobs, "job files the solver and challenger serve");
  up->add_flag("--no-workers", no_workers, "no solver and challenger daemons");
  up->add_flag("--no-perturb", no_perturb, "do not apply the manifest's perturbations");
  up->callback(run([&] {
    const fs::path dir = tdir.empty() ? TestnetDir(g) : fs::path(tdir);
    auto t = node::Testnet::Load(dir);
    if (!t.ok()) {
      node::TestnetSpec spec;
      if (!manifest.empty()) {
        auto m = node::LoadManifest(manifest);
        if (!m.ok()) return Fail(g, m.status());
        spec = *m;
      } else {
        spec.validators = validators;
        spec.solver = spec.challenger = !no_workers && !jobs.empty();
      }
      for (const auto& j : jobs) spec.jobs.push_back(fs::absolute(j));
      if (spec.jobs.empty()) spec.solver = spec.challenger = false;
      t = node::Testnet::Create(dir, spec, SelfBinDir());
      if (!t.ok()) return Fail(g, t.status());
    }
    if (Status s = t->Up(); !s.ok()) return Fail(g, s);
    Json out = Json::array();
    std::string human = "testnet up in " + dir.string() + "\n";
    for (const auto& p : t->processes()) {
      out.push_back({{"name", p.name}, {"kind", p.kind}, {"pid", p.pid}, {"rpc_port", p.rpc_port},
                     {"p2p_port", p.p2p_port}});
      human += "  " + p.name + "  " + p.kind + "  pid " + std::to_string(p.pid) +
               (p.rpc_port ? "  rpc 127.0.0.1:" + std::to_string(p.rpc_port) : "") + "\n";
    }
    Json applied = Json::array();
    if (!no_perturb && !t->spec().perturbations.empty()) {
      // Applied in the foreground, one line each, so the user sees them happen.
      if (!g.json)
        std::cout << human << "applying " << t->spec().perturbations.size() << " perturbation(s) of the manifest\n"
                  << std::flush;
      human.clear();
      Status s = t->RunPerturbations([&](const std::string& line) {
        applied.push_back(line);
        if (!g.json) std::cout << "  " << line << "\n" << std::flush;
      });
      if (!s.ok()) return Fail(g, s);
    }
    Print(g, {{"dir", dir.string()}, {"processes", out}, {"perturbations", applied}}, human);
    return 0;
  }));
  auto* down = testnet->add_subcommand("down", "stop every process of the testnet");
  down->add_option("--dir", tdir, "testnet directory");
  down->add_flag("--purge", purge, "also delete the directory (chain data, keys)");
  down->callback(run([&] {
    const fs::path dir = tdir.empty() ? TestnetDir(g) : fs::path(tdir);
    auto t = node::Testnet::Load(dir);
    if (!t.ok()) return Fail(g, t.status());
    if (Status s = t->Down(); !s.ok()) return Fail(g, s);
    if (purge) fs::remove_all(dir);
    Print(g, {{"dir", dir.string()}, {"stopped", true}, {"purged", purge}},
          "testnet stopped" + std::string(purge ? " and deleted\n" : "\n"));
    return 0;
  }));
  auto* tstatus = testnet->add_subcommand("status", "processes and chain heights");
  tstatus->add_option("--dir", tdir, "testnet directory");
  tstatus->callback(run([&] {
    const fs::path dir = tdir.empty() ? TestnetDir(g) : fs::path(tdir);
    auto t = node::Testnet::Load(dir);
    if (!t.ok()) return Fail(g, t.status());
    Json out = Json::array();
    std::string human;
    for (const auto& p : t->processes()) {
      Json j{{"name", p.name}, {"kind", p.kind}, {"running", t->Running(p.name)}, {"pid", p.pid}};
      std::string line = p.name + "  " + p.kind + "  " + (t->Running(p.name) ? "running" : "stopped");
      if (p.rpc_port != 0 && t->Running(p.name)) {
        node::ChainClient c("127.0.0.1", p.rpc_port, std::chrono::seconds(2));
        if (auto s = c.ChainStatus(); s.ok()) {
          j["height"] = (*s)["height"];
          j["peers"] = (*s)["peers"];
          line += "  height " + std::to_string((*s)["height"].get<std::uint64_t>()) + "  peers " +
                  std::to_string((*s)["peers"].get<std::uint64_t>());
        }
      }
      out.push_back(j);
      human += line + "\n";
    }
    Print(g, out, human);
    return 0;
  }));

  // ---- daemons ----
  std::string key_file, data_dir, adversary, log_file;
  std::vector<std::string> daemon_jobs;
  int threads = 1;
  std::uint64_t poll_ms = 150;
  auto add_daemon = [&](const char* name, node::AgentRole role) {
    auto* d = app.add_subcommand(name, std::string("run the ") + name + " daemon until SIGINT/SIGTERM");
    d->add_option("--key", key_file, "key file or name")->required();
    d->add_option("--data", data_dir, "data directory (runs, checkpoints)")->required();
    d->add_option("--job", daemon_jobs, "job file it serves (repeatable)")->required();
    d->add_option("--threads", threads, "training threads")->capture_default_str();
    d->add_option("--poll-ms", poll_ms, "poll interval")->capture_default_str();
    d->add_option("--log-file", log_file, "write logs here");
    if (role == node::AgentRole::kSolver)
      d->add_option("--adversary", adversary, "TEST ONLY: cheat like this (worker/adversary.h), e.g. wrong-output:step=3,node=2");
    d->callback(run([&, role] {
      if (!log_file.empty()) log::SetSink(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file));
      spdlog::flush_every(std::chrono::seconds(1));
      auto key = LoadKey(g, key_file);
      if (!key.ok()) return Fail(g, key.status());
      auto ep = RpcEndpoint(g);
      if (!ep.ok()) return Fail(g, ep.status());
      node::AgentConfig cfg;
      cfg.role = role;
      cfg.rpc_host = ep->host;
      cfg.rpc_port = ep->port;
      cfg.data_dir = data_dir;
      cfg.threads = threads;
      cfg.poll = std::chrono::milliseconds(poll_ms);
      for (const auto& j : daemon_jobs) cfg.job_files.push_back(j);
      if (!adversary.empty()) {
        auto spec = worker::ParseAdversarySpec(adversary);
        if (!spec.ok()) return Fail(g, spec.status());
        cfg.adversary = *spec;
      }
      node::Agent agent(cfg, std::move(*key));
      if (Status s = agent.Init(); !s.ok()) return Fail(g, s);
      std::signal(SIGINT, OnSignal);
      std::signal(SIGTERM, OnSignal);
      agent.Run(g_stop);
      return 0;
    }));
  };
  add_daemon("solver", node::AgentRole::kSolver);
  add_daemon("challenger", node::AgentRole::kChallenger);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return rc;
}
