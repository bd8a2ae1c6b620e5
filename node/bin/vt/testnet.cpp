// vt testnet up|down|status: a local testnet under <home>/testnet.
#include <iostream>

#include "common/cli_number.h"
#include "node/bin/vt/vt_cli.h"
#include "node/testnet.h"

namespace vt::cli {

namespace fs = std::filesystem;

namespace {
struct TestnetOptions {
  std::string manifest, dir;
  std::uint32_t validators = 4;
  bool no_workers = false, purge = false, no_perturb = false;
  std::vector<std::string> jobs;
  fs::path Dir(const Globals& g) const { return dir.empty() ? TestnetDir(g) : fs::path(dir); }
};

int Up(Globals& g, const TestnetOptions& o) {
  const fs::path dir = o.Dir(g);
  auto t = node::Testnet::Load(dir);
  if (!t.ok()) {
    node::TestnetSpec spec;
    if (!o.manifest.empty()) {
      auto m = node::LoadManifest(o.manifest);
      if (!m.ok()) return Fail(g, m.status());
      spec = *m;
    } else {
      spec.validators = o.validators;
      spec.solver = spec.challenger = !o.no_workers && !o.jobs.empty();
    }
    for (const auto& j : o.jobs) spec.jobs.push_back(fs::absolute(j));
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
  if (!o.no_perturb && !t->spec().perturbations.empty()) {
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
}

int StatusOf(Globals& g, const TestnetOptions& o) {
  auto t = node::Testnet::Load(o.Dir(g));
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
}

}  // namespace

void AddTestnetCommands(CLI::App& app, Globals& g) {
  auto* testnet = app.add_subcommand("testnet", "a local testnet on loopback")->require_subcommand(1);
  auto o = std::make_shared<TestnetOptions>();

  auto* up = testnet->add_subcommand("up", "create (if needed) and start the testnet");
  up->add_option("--dir", o->dir, "testnet directory (default <home>/testnet)");
  up->add_option("--manifest", o->manifest, "manifest file (testnet/manifests/*.json)");
  AddNumber(up, "--validators", o->validators, "validators (without a manifest)", std::uint32_t{1}, std::uint32_t{32})
      ->capture_default_str();
  up->add_option("--job", o->jobs, "job files the solver and challenger serve");
  up->add_flag("--no-workers", o->no_workers, "no solver and challenger daemons");
  up->add_flag("--no-perturb", o->no_perturb, "do not apply the manifest's perturbations");
  up->callback(Runs(g, [&g, o] { return Up(g, *o); }));

  auto* down = testnet->add_subcommand("down", "stop every process of the testnet");
  down->add_option("--dir", o->dir, "testnet directory");
  down->add_flag("--purge", o->purge, "also delete the directory (chain data, keys)");
  down->callback(Runs(g, [&g, o] {
    const fs::path dir = o->Dir(g);
    auto t = node::Testnet::Load(dir);
    if (!t.ok()) return Fail(g, t.status());
    if (Status s = t->Down(); !s.ok()) return Fail(g, s);
    if (o->purge) fs::remove_all(dir);
    Print(g, {{"dir", dir.string()}, {"stopped", true}, {"purged", o->purge}},
          "testnet stopped" + std::string(o->purge ? " and deleted\n" : "\n"));
    return 0;
  }));

  auto* status = testnet->add_subcommand("status", "processes and chain heights");
  status->add_option("--dir", o->dir, "testnet directory");
  status->callback(Runs(g, [&g, o] { return StatusOf(g, *o); }));
}

}  // namespace vt::cli
