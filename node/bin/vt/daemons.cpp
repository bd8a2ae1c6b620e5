// vt solver | vt challenger: the worker daemons (node/agent.h), run until
// SIGINT/SIGTERM.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <thread>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "common/cli_number.h"
#include "common/log.h"
#include "node/agent.h"
#include "node/bin/vt/vt_cli.h"

namespace vt::cli {

namespace {

struct DaemonOptions {
  std::string key_file, data_dir, adversary, log_file;
  std::vector<std::string> jobs;
  int threads = 0;  // 0: every core
  std::uint64_t poll_ms = 150;
  bool withhold_blobs = false;  // TEST ONLY
};

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int RunDaemon(Globals& g, const DaemonOptions& o, node::AgentRole role) {
  if (!o.log_file.empty()) log::SetSink(std::make_shared<spdlog::sinks::basic_file_sink_mt>(o.log_file));
  spdlog::flush_every(std::chrono::seconds(1));
  auto key = LoadKey(g, o.key_file);
  if (!key.ok()) return Fail(g, key.status());
  auto ep = RpcEndpoint(g);
  if (!ep.ok()) return Fail(g, ep.status());
  node::AgentConfig cfg;
  cfg.role = role;
  cfg.rpc_host = ep->host;
  cfg.rpc_port = ep->port;
  cfg.data_dir = o.data_dir;
  cfg.threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cfg.poll = std::chrono::milliseconds(o.poll_ms);
  cfg.withhold_blobs = o.withhold_blobs;
  for (const auto& j : o.jobs) cfg.job_files.push_back(j);
  if (!o.adversary.empty()) {
    auto spec = worker::ParseAdversarySpec(o.adversary);
    if (!spec.ok()) return Fail(g, spec.status());
    cfg.adversary = *spec;
  }
  node::Agent agent(cfg, std::move(*key));
  if (Status s = agent.Init(); !s.ok()) return Fail(g, s);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  agent.Run(g_stop);
  return 0;
}

void AddDaemon(CLI::App& app, Globals& g, const char* name, node::AgentRole role) {
  auto o = std::make_shared<DaemonOptions>();
  auto* d = app.add_subcommand(name, std::string("run the ") + name + " daemon until SIGINT/SIGTERM");
  d->add_option("--key", o->key_file, "key file or name")->required();
  d->add_option("--data", o->data_dir, "data directory (runs, checkpoints)")->required();
  d->add_option("--job", o->jobs, "job file it serves (repeatable)")->required();
  AddNumber(d, "--threads", o->threads, "training threads (0 = every core)", 0, 1024)->capture_default_str();
  AddNumber(d, "--poll-ms", o->poll_ms, "poll interval", std::uint64_t{1}, std::uint64_t{3'600'000})
      ->capture_default_str();
  d->add_option("--log-file", o->log_file, "write logs here");
  if (role == node::AgentRole::kSolver) {
    d->add_option("--adversary", o->adversary,
                  "TEST ONLY: cheat like this (worker/adversary.h), e.g. wrong-output:step=3,node=2");
    d->add_flag("--withhold-blobs", o->withhold_blobs, "TEST ONLY: name the commit's blobs but never publish them");
  }
  d->callback(Runs(g, [&g, o, role] { return RunDaemon(g, *o, role); }));
}

}  // namespace

void AddDaemonCommands(CLI::App& app, Globals& g) {
  AddDaemon(app, g, "solver", node::AgentRole::kSolver);
  AddDaemon(app, g, "challenger", node::AgentRole::kChallenger);
}

}  // namespace vt::cli
