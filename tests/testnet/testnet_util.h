#pragma once
// Helpers for the multi-process testnet tests: a testnet in a temp dir torn
// down at the end (even when an assertion fails), RPC waits bounded in time.
// The testnet's directory (the daemons' logs) is kept after a failure, or
// always when VT_KEEP_TESTNET is set.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "kernels/graph/step_graph.h"
#include "node/client.h"
#include "node/testnet.h"
#include "tests/support/run_command.h"
#include "worker/job.h"

#ifndef VT_BIN_DIR
#error "VT_BIN_DIR must name the directory of vt-node and vt"
#endif

namespace vt::test {

class ScopedTestnet {
 public:
  ScopedTestnet(const std::string& tag, node::TestnetSpec spec) {
    m_dir = std::filesystem::temp_directory_path() / ("vt-testnet-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(m_dir);
    auto t = node::Testnet::Create(m_dir, spec, VT_BIN_DIR);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (t.ok()) m_net.emplace(std::move(*t));
  }
  ~ScopedTestnet() {
    if (m_net) (void)m_net->Down();
    if (!HasFailure() && std::getenv("VT_KEEP_TESTNET") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(m_dir, ec);
    } else {
      std::cerr << "testnet kept for inspection: " << m_dir << "\n";
    }
  }
  static bool HasFailure() { return ::testing::Test::HasFailure(); }
  node::Testnet& net() { return *m_net; }
  bool ok() const { return m_net.has_value(); }
  node::ChainClient Client(const std::string& name) {
    return node::ChainClient("127.0.0.1", m_net->rpc_port(name), std::chrono::seconds(5));
  }

 private:
  std::filesystem::path m_dir;
  std::optional<node::Testnet> m_net;
};

// The testnet up with both daemons polling every 100 ms, the solver
// withholding its blobs (TEST ONLY: it names them in its commit and never
// publishes them, so no block takes the commit and the bounty stays claimed).
inline testing::AssertionResult UpWithAWithholdingSolver(ScopedTestnet& t) {
  if (!t.ok()) return testing::AssertionFailure() << "no testnet";
  t.net().SetWorkerArgs("solver", {"--poll-ms", "100", "--withhold-blobs"});
  t.net().SetWorkerArgs("challenger", {"--poll-ms", "100"});
  if (Status s = t.net().Up(); !s.ok()) return testing::AssertionFailure() << s.ToString();
  return testing::AssertionSuccess();
}

// The index of the node named `name` in the job's step graph at `step`
// (the model's graph: names; the same node order as the referee's).
inline Result<std::uint64_t> NodeNamed(const worker::LoadedJob& job, std::uint64_t step,
                                       const std::string& name) {
  VT_ASSIGN_OR_RETURN(auto shapes, kernels::graph::BatchShapes(
                                       job.job.model, static_cast<std::int64_t>(job.job.spec.batch_size)));
  VT_ASSIGN_OR_RETURN(auto graph,
                      kernels::graph::BuildStepGraph(job.job.model, job.job.optimizer, step, shapes));
  for (std::uint64_t i = 0; i < graph.nodes.size(); ++i)
    if (graph.nodes[i].name == name) return i;
  return Status::Invalid("no-such-node", name);
}

// A testnet of `validators` with a solver and a challenger daemon serving
// `job` (a job file), 200 ms blocks.
inline node::TestnetSpec DaemonSpec(const std::filesystem::path& job, std::uint32_t validators) {
  node::TestnetSpec spec;
  spec.validators = validators;
  spec.block_interval_ms = 200;
  spec.proposer_timeout_ms = 600;
  spec.solver = spec.challenger = true;
  spec.jobs = {job};
  return spec;
}

// A bounty's state name ("open", "claimed", "committed", "finalized", …).
inline Result<std::string> BountyState(node::ChainClient& c, std::uint64_t id) {
  VT_ASSIGN_OR_RETURN(nlohmann::json b, c.Call("get_bounty", nlohmann::json::array({id})));
  return b["state"].get<std::string>();
}

inline std::optional<std::uint64_t> HeightOf(node::ChainClient& c) {
  auto h = c.Height();
  if (!h.ok()) return std::nullopt;
  return *h;
}

inline std::optional<std::string> BlockHashAt(node::ChainClient& c, std::uint64_t height) {
  auto b = c.Call("get_block", nlohmann::json::array({height}));
  if (!b.ok()) return std::nullopt;
  return (*b)["hash"].get<std::string>();
}

// Polls `pred` every 50 ms until it holds or `timeout` passes.
template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

// Runs the vt binary with `args` (stdout captured, stderr passed through).
inline CliRun Vt(const std::string& args) { return RunCommand(std::string(VT_BIN_DIR) + "/vt " + args); }

}  // namespace vt::test
