#include "node/testnet.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "crypto/keyfile.h"
#include "net/rpc_client.h"
#include "node/genesis.h"
#include "node/node.h"

namespace vt::node {
namespace {

using Json = nlohmann::json;
constexpr const char* kPassphrase = "veritrain-local-testnet";
const crypto::ScryptParams kFastScrypt{12, 8, 1};  // a local testnet: fast to open

Status BadManifest(const std::string& what) { return Status::Invalid("manifest-bad", what); }

Result<std::string> ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return Status::Error("file-not-found", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whole or not at all, even with several writers at once (a tool's main
// thread and its StopSignalGuard both save testnet.json): each writes its
// own temporary file and renames it over `p`, the last rename winning.
Status WriteText(const std::filesystem::path& p, const std::string& text) {
  static std::atomic<std::uint64_t> writes{0};
  const auto tmp = p.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  {
    std::ofstream out(tmp);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return Status::Error("file-write-failed", tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, p, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status::Error("file-write-failed", ec.message());
  }
  return Status::Ok();
}

// Alive and not a zombie. Reaps our own children.
bool PidAlive(int pid) {
  if (pid <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return false;  // it was our child and has exited
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return !(close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z');
}

// The pid still runs one of our binaries (guards against pid reuse).
bool PidIsOurs(int pid, const std::filesystem::path& bin_dir) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmd;
  std::getline(in, cmd, '\0');
  return cmd.rfind(bin_dir.string(), 0) == 0;
}

}  // namespace

Result<std::vector<std::uint16_t>> FreePorts(std::size_t count) {
  boost::asio::io_context io;
  std::vector<boost::asio::ip::tcp::acceptor> held;
  std::vector<std::uint16_t> ports;
  try {
    for (std::size_t i = 0; i < count; ++i) {
      held.emplace_back(io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
      ports.push_back(held.back().local_endpoint().port());
    }
  } catch (const std::exception& e) {
    return Status::Error("ports-unavailable", e.what());
  }
  return ports;
}

Result<TestnetSpec> ParseManifest(const Json& j, const std::filesystem::path& base_dir) {
  if (!j.is_object()) return BadManifest("not an object");
  TestnetSpec s;
  try {
    for (const auto& [k, v] : j.items()) {
      if (k == "validators") s.validators = v.get<std::uint32_t>();
      else if (k == "full_nodes") s.full_nodes = v.get<std::uint32_t>();
      else if (k == "block_interval_ms") s.block_interval_ms = v.get<std::uint64_t>();
      else if (k == "proposer_timeout_ms") s.proposer_timeout_ms = v.get<std::uint64_t>();
      else if (k == "solver") s.solver = v.get<bool>();
      else if (k == "challenger") s.challenger = v.get<bool>();
      else if (k == "solver_adversary") s.solver_adversary = v.get<std::string>();
      else if (k == "prefund") s.prefund = v.get<std::uint64_t>();
      else if (k == "base_port") s.base_port = v.get<std::uint16_t>();
      else if (k == "link_hosts") s.link_hosts = v.get<bool>();
      else if (k == "validator_bond") s.validator_bond = v.get<std::uint64_t>();
      else if (k == "test_adversary") s.test_adversary = v.get<std::map<std::string, std::string>>();
      else if (k == "jobs") {
        for (const auto& p : v) {
          std::filesystem::path path = p.get<std::string>();
          s.jobs.push_back(path.is_absolute() ? path : std::filesystem::absolute(base_dir / path).lexically_normal());
        }
      } else if (k == "perturbations") {
        for (const auto& p : v) {
          Perturbation pt;
          pt.after_ms = p.value("after_ms", std::uint64_t{0});
          pt.node = p.at("node").get<std::string>();
          pt.action = p.at("action").get<std::string>();
          pt.duration_ms = p.value("duration_ms", std::uint64_t{0});
          if (pt.action != "kill" && pt.action != "restart" && pt.action != "stop" && pt.action != "disconnect")
            return BadManifest("unknown action " + pt.action);
          s.perturbations.push_back(pt);
        }
      } else if (k != "comment") {
        return BadManifest("unknown key " + k);
      }
    }
  } catch (const std::exception& e) {
    return BadManifest(e.what());
  }
  if (s.validators == 0 || s.validators > 32) return BadManifest("validators must be 1..32");
  if (s.link_hosts && s.validators + s.full_nodes > 15) return BadManifest("link_hosts allows at most 15 nodes");
  for (const auto& [node, mode] : s.test_adversary)
    if (auto m = ParseTestAdversary(mode); !m.ok()) return BadManifest("test_adversary of " + node + ": " + mode);
  return s;
}

Result<TestnetSpec> LoadManifest(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(std::string text, ReadText(path));
  Json j;
  try {
    j = Json::parse(text);
  } catch (const std::exception& e) {
    return BadManifest(e.what());
  }
  return ParseManifest(j, path.parent_path());
}

Result<Testnet> Testnet::Create(const std::filesystem::path& dir, const TestnetSpec& spec,
                                const std::filesystem::path& bin_dir) {
  if (std::filesystem::exists(dir / "testnet.json"))
    return Status::Invalid("testnet-exists", dir.string() + " already holds a testnet (vt testnet down --purge)");
  for (const char* sub : {"keys", "nodes", "workers", "logs"}) std::filesystem::create_directories(dir / sub);
  Testnet t;
  t.m_dir = std::filesystem::absolute(dir);
  t.m_bin_dir = std::filesystem::absolute(bin_dir);
  t.m_spec = spec;
  VT_TRY(WriteText(t.PassphrasePath(), std::string(kPassphrase) + "\n"));
  std::filesystem::permissions(t.PassphrasePath(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  GenesisFile g;
  g.chain_name = "veritrain-local";
  g.genesis.params.chain_id = 7;
  g.genesis.time = NowMs();
  g.block_interval_ms = spec.block_interval_ms;
  g.proposer_timeout_ms = spec.proposer_timeout_ms;
  auto make_key = [&](const std::string& name) -> Result<crypto::PublicKey> {
    VT_ASSIGN_OR_RETURN(crypto::SecretKey key, crypto::SecretKey::Generate());
    VT_TRY(crypto::WriteKeyFile(t.KeyPath(name), key, kPassphrase, kFastScrypt));
    g.accounts.push_back({name, key.address(), spec.prefund});
    return key.public_key();
  };
  const std::size_t nodes = spec.validators + spec.full_nodes;
  std::vector<std::uint16_t> ports;
  if (spec.base_port != 0) {
    for (std::size_t i = 0; i < 2 * nodes; ++i) ports.push_back(static_cast<std::uint16_t>(spec.base_port + i));
  } else {
    VT_ASSIGN_OR_RETURN(ports, FreePorts(2 * nodes));
  }
  for (std::uint32_t i = 0; i < spec.validators; ++i) {
    const std::string name = "v" + std::to_string(i);
    VT_ASSIGN_OR_RETURN(crypto::PublicKey pk, make_key(name));
    g.validators.push_back({name, pk, spec.validator_bond});
    t.m_procs.push_back({name, "validator", ports[2 * i], ports[2 * i + 1], 0});
  }
  for (std::uint32_t i = 0; i < spec.full_nodes; ++i) {
    const std::string name = "f" + std::to_string(i);
    const std::size_t k = spec.validators + i;
    t.m_procs.push_back({name, "full", ports[2 * k], ports[2 * k + 1], 0});
  }
  for (const char* name : {"client", "solver", "challenger"}) {
    VT_ASSIGN_OR_RETURN(crypto::PublicKey pk, make_key(name));
    (void)pk;
  }
  if (spec.solver) t.m_procs.push_back({"solver", "solver", 0, 0, 0});
  if (spec.challenger) t.m_procs.push_back({"challenger", "challenger", 0, 0, 0});
  VT_ASSIGN_OR_RETURN(GenesisFile normal, ParseGenesis(GenesisToJson(g)));  // validates, sorts
  VT_TRY(WriteText(t.GenesisPath(), GenesisToJson(normal)));
  VT_TRY(t.Save());
  return t;
}

Status Testnet::Save() const {
  Json procs = Json::array();
  for (const ProcessInfo& p : m_procs)
    procs.push_back({{"name", p.name}, {"kind", p.kind}, {"p2p_port", p.p2p_port}, {"rpc_port", p.rpc_port},
                     {"pid", p.pid}});
  Json jobs = Json::array();
  for (const auto& j : m_spec.jobs) jobs.push_back(j.string());
  Json args = Json::object();
  for (const auto& [name, a] : m_worker_args) args[name] = a;
  Json j{{"bin_dir", m_bin_dir.string()},
         {"spec",
          {{"validators", m_spec.validators},
           {"full_nodes", m_spec.full_nodes},
           {"block_interval_ms", m_spec.block_interval_ms},
           {"proposer_timeout_ms", m_spec.proposer_timeout_ms},
           {"solver", m_spec.solver},
           {"challenger", m_spec.challenger},
           {"solver_adversary", m_spec.solver_adversary},
           {"link_hosts", m_spec.link_hosts},
           {"validator_bond", m_spec.validator_bond},
           {"test_adversary", m_spec.test_adversary},
           {"jobs", jobs}}},
         {"worker_args", args},
         {"processes", procs}};
  return WriteText(m_dir / "testnet.json", j.dump(2) + "\n");
}

Result<Testnet> Testnet::Load(const std::filesystem::path& dir) {
  VT_ASSIGN_OR_RETURN(std::string text, ReadText(dir / "testnet.json"));
  Testnet t;
  try {
    const Json j = Json::parse(text);
    t.m_dir = std::filesystem::absolute(dir);
    t.m_bin_dir = j.at("bin_dir").get<std::string>();
    VT_ASSIGN_OR_RETURN(t.m_spec, ParseManifest(j.at("spec"), dir));
    for (const auto& p : j.at("processes"))
      t.m_procs.push_back({p.at("name").get<std::string>(), p.at("kind").get<std::string>(),
                           p.at("p2p_port").get<std::uint16_t>(), p.at("rpc_port").get<std::uint16_t>(),
                           p.at("pid").get<int>()});
    if (j.contains("worker_args"))
      for (const auto& [name, a] : j["worker_args"].items()) t.m_worker_args[name] = a.get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    return Status::Invalid("testnet-corrupt", e.what());
  }
  return t;
}

const ProcessInfo* Testnet::Find(const std::string& name) const {
  for (const ProcessInfo& p : m_procs)
    if (p.name == name) return &p;
  return nullptr;
}

std::filesystem::path Testnet::DataDir(const std::string& name) const {
  const ProcessInfo* p = Find(name);
  const bool worker = p != nullptr && (p->kind == "solver" || p->kind == "challenger");
  return m_dir / (worker ? "workers" : "nodes") / name;
}

std::uint16_t Testnet::rpc_port(const std::string& name) const {
  const ProcessInfo* p = Find(name);
  return p ? p->rpc_port : 0;
}

Result<crypto::SecretKey> Testnet::Key(const std::string& name) const {
  return crypto::ReadKeyFile(KeyPath(name), kPassphrase);
}

void Testnet::SetWorkerArgs(const std::string& name, std::vector<std::string> args) {
  m_worker_args[name] = std::move(args);
  (void)Save();
}

std::string Testnet::LinkHost(const std::string& from, const std::string& to) const {
  const auto index = [&](const std::string& name) -> std::size_t {
    for (std::size_t i = 0; i < m_procs.size(); ++i)
      if (m_procs[i].name == name) return i;
    return 0;
  };
  return "127.0.0." + std::to_string(2 + 16 * index(from) + index(to));  // ≤ 15 nodes (ParseManifest)
}

std::vector<std::string> Testnet::CommandFor(const ProcessInfo& p) const {
  std::vector<std::string> cmd;
  if (p.kind == "validator" || p.kind == "full") {
    cmd = {(m_bin_dir / "vt-node").string(), "--data", DataDir(p.name).string(), "--genesis", GenesisPath().string(),
           "--name", p.name, "--p2p-port", std::to_string(p.p2p_port), "--rpc-port", std::to_string(p.rpc_port),
           "--log-file", LogPath(p.name).string()};
    if (p.kind == "validator") {
      cmd.insert(cmd.end(), {"--key", KeyPath(p.name).string(), "--passphrase-file", PassphrasePath().string()});
      if (const auto adv = m_spec.test_adversary.find(p.name); adv != m_spec.test_adversary.end())
        cmd.insert(cmd.end(), {"--test-adversary", adv->second});
    }
    for (const ProcessInfo& other : m_procs)
      if (other.name != p.name && (other.kind == "validator" || other.kind == "full"))
        cmd.insert(cmd.end(), {"--peer", (m_spec.link_hosts ? LinkHost(p.name, other.name) : std::string("127.0.0.1")) +
                                             ":" + std::to_string(other.p2p_port)});
    return cmd;
  }
  // Daemons talk to a node of their own (the last node for the challenger),
  // so that killing one validator in a test leaves the other's view intact.
  std::vector<const ProcessInfo*> nodes;
  for (const ProcessInfo& other : m_procs)
    if (other.kind == "validator" || other.kind == "full") nodes.push_back(&other);
  const ProcessInfo* node = p.kind == "solver" ? nodes.front() : nodes.back();
  cmd = {(m_bin_dir / "vt").string(), p.kind, "--rpc", "127.0.0.1:" + std::to_string(node->rpc_port), "--key",
         KeyPath(p.name).string(), "--passphrase-file", PassphrasePath().string(), "--data", DataDir(p.name).string(),
         "--log-file", LogPath(p.name).string()};
  for (const auto& j : m_spec.jobs) cmd.insert(cmd.end(), {"--job", j.string()});
  if (p.kind == "solver" && !m_spec.solver_adversary.empty())
    cmd.insert(cmd.end(), {"--adversary", m_spec.solver_adversary});
  if (auto it = m_worker_args.find(p.name); it != m_worker_args.end())
    cmd.insert(cmd.end(), it->second.begin(), it->second.end());
  return cmd;
}

bool Testnet::Running(const std::string& name) const {
  const ProcessInfo* p = Find(name);
  return p != nullptr && PidAlive(p->pid);
}

namespace {

// Spawning is closed once this process is being stopped (CloseSpawning):
// a spawn and the save of its pid happen under the lock, so whoever closes
// it and then reads the testnet's state sees every process started.
std::mutex g_spawn_mu;
bool g_spawning_closed = false;

}  // namespace

void Testnet::CloseSpawning() {
  std::lock_guard<std::mutex> lock(g_spawn_mu);
  g_spawning_closed = true;
}

Status Testnet::Start(const std::string& name, std::chrono::milliseconds timeout) {
  ProcessInfo* p = nullptr;
  for (ProcessInfo& q : m_procs)
    if (q.name == name) p = &q;
  if (p == nullptr) return Status::Invalid("testnet-unknown-process", name);
  if (PidAlive(p->pid) && PidIsOurs(p->pid, m_bin_dir)) return Status::Ok();
  std::filesystem::create_directories(DataDir(name));
  const std::vector<std::string> cmd = CommandFor(*p);
  const std::string log = LogPath(name).string() + ".out";
  std::unique_lock<std::mutex> spawning(g_spawn_mu);
  if (g_spawning_closed)
    return Status::Invalid("testnet-stopping", "this process is stopping: " + name + " not started");
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Error("spawn-failed", "fork");
  if (pid == 0) {
    ::setsid();  // its own session: survives the CLI that started it
    // A daemon takes its stop signals whatever the starter's thread blocked
    // (exec keeps the mask).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    std::vector<char*> argv;
    for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  p->pid = pid;
  VT_TRY(Save());
  spawning.unlock();
  if (p->rpc_port == 0) return Status::Ok();
  net::RpcClient rpc("127.0.0.1", p->rpc_port, std::chrono::milliseconds(1000));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (rpc.Call("chain_status").ok()) return Status::Ok();
    if (!PidAlive(pid)) return Status::Error("node-exited", name + " exited; see " + LogPath(name).string());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Error("node-start-timeout", name);
}

Status Testnet::Up(std::chrono::milliseconds timeout) {
  for (const ProcessInfo& p : std::vector<ProcessInfo>(m_procs)) VT_TRY(Start(p.name, timeout));
  return Status::Ok();
}

Status Testnet::Stop(const std::string& name, std::chrono::milliseconds grace) {
  for (ProcessInfo& p : m_procs) {
    if (p.name != name) continue;
    if (PidAlive(p.pid) && PidIsOurs(p.pid, m_bin_dir)) {
      ::kill(p.pid, SIGCONT);
      ::kill(p.pid, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + grace;
      while (PidAlive(p.pid) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (PidAlive(p.pid)) ::kill(p.pid, SIGKILL);
      while (PidAlive(p.pid)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    p.pid = 0;
    return Save();
  }
  return Status::Invalid("testnet-unknown-process", name);
}

Status Testnet::Kill(const std::string& name) {
  for (ProcessInfo& p : m_procs) {
    if (p.name != name) continue;
    if (PidAlive(p.pid) && PidIsOurs(p.pid, m_bin_dir)) {
      ::kill(p.pid, SIGKILL);
      while (PidAlive(p.pid)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    p.pid = 0;
    return Save();
  }
  return Status::Invalid("testnet-unknown-process", name);
}

Status Testnet::Pause(const std::string& name) {
  const ProcessInfo* p = Find(name);
  if (p == nullptr || !PidAlive(p->pid)) return Status::Invalid("testnet-not-running", name);
  ::kill(p->pid, SIGSTOP);
  return Status::Ok();
}

Status Testnet::Resume(const std::string& name) {
  const ProcessInfo* p = Find(name);
  if (p == nullptr || !PidAlive(p->pid)) return Status::Invalid("testnet-not-running", name);
  ::kill(p->pid, SIGCONT);
  return Status::Ok();
}

Status Testnet::Down() {
  // Workers first (they talk to the nodes), then the nodes.
  for (auto it = m_procs.rbegin(); it != m_procs.rend(); ++it) VT_TRY(Stop(it->name));
  return Status::Ok();
}

Status Testnet::Apply(const Perturbation& p) {
  if (p.action == "kill") return Kill(p.node);
  if (p.action == "stop") return Stop(p.node);
  if (p.action == "restart") {
    if (Running(p.node)) VT_TRY(Stop(p.node));
    return Start(p.node);
  }
  if (p.action == "disconnect") {
    VT_TRY(Pause(p.node));
    std::this_thread::sleep_for(std::chrono::milliseconds(p.duration_ms));
    return Resume(p.node);
  }
  return Status::Invalid("manifest-bad", "unknown action " + p.action);
}

Status Testnet::RunPerturbations(const std::function<void(const std::string&)>& on_event) {
  struct Event {
    std::uint64_t at_ms;
    std::string node;
    std::string action;  // kill | stop | restart | pause | resume
  };
  std::vector<Event> events;
  for (const Perturbation& p : m_spec.perturbations) {
    if (Find(p.node) == nullptr) return Status::Invalid("manifest-bad", "perturbation of unknown node " + p.node);
    if (p.action == "disconnect") {
      events.push_back({p.after_ms, p.node, "pause"});
      events.push_back({p.after_ms + p.duration_ms, p.node, "resume"});
    } else {
      events.push_back({p.after_ms, p.node, p.action});
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.at_ms < b.at_ms; });
  const auto start = std::chrono::steady_clock::now();
  for (const Event& e : events) {
    std::this_thread::sleep_until(start + std::chrono::milliseconds(e.at_ms));
    Status s = e.action == "pause"    ? Pause(e.node)
               : e.action == "resume" ? Resume(e.node)
                                      : Apply(Perturbation{e.at_ms, e.node, e.action, 0});
    if (!s.ok()) return s.WithContext(e.action + " " + e.node);
    if (on_event) {
      on_event(fmt::format("[{:6.2f}s] {} {}", static_cast<double>(e.at_ms) / 1000.0, e.action, e.node));
    }
  }
  return Status::Ok();
}

}  // namespace vt::node
