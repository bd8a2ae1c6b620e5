// Referee benchmark. Three tables:
//
//  1. Complete disputes through the VM (tiny MLP job, repops): a solver lies
//     at one node two thirds into training, an honest challenger catches it.
//     Walk rounds per level, game transactions ("moves"), blocks from opening
//     to resolution and bytes posted, against N (steps) and k (interval).
//  2. Levels 1 and 2 at scale through the VM, with virtual (piecewise
//     constant) histories of up to 2^30 steps: rounds, transactions, blocks
//     and bytes until the disputed step is known; level 3 depends only on
//     the model's graph size (table 3).
//  3. Arbitration against one full training step for tiny-GPT and GPT-2
//     small shapes: flops of the whole step vs the most expensive node (the
//     worst case the referee re-executes), and measured times of a repops
//     step and of the precompile on that node (Merkle proofs, tensor
//     hashing and the operator).
//  4. The element-level descent of docs/referee.md priced on the same step
//     graphs (tests/referee/descent_table.cpp): largest transaction, the referee's work
//     and the moves of a whole game at N = 2^30.
//  5. The element level played through the VM (tiny MLP 6 → 320 → 3): a
//     one-ulp cheat in one value, level-4 and level-5b moves, the largest
//     transaction and the final move's gas against the node-level
//     arbitration of the same cheat.
//  6. A party's answer over the longest reduction walks (tests/referee/long_walks_table.h):
//     what it holds and what a game's moves recompute.
//
//   referee_bench                 tables 1-3; GPT-2 small as flops only
//   referee_bench --gpt2-small    also times GPT-2 small (B=1, T=1024): minutes on 2 cores
//   referee_bench --quick         one small case of each (the CTest smoke run)
//   referee_bench --long-walks    table 6 alone (with --gpt2-small: GPT-2 small's walks, ~1 GB, minutes)
//   referee_bench --threads=N     operator threads for the training step (default: all cores)
// Other flags go to Google Benchmark (the timed parts are registered benchmarks).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/arbitration_workload.h"
#include "tests/referee/descent_table.h"
#include "tests/referee/long_walks_table.h"
#include "tests/referee/scenario.h"
#include "tests/referee/virtual_tree.h"

namespace vt::referee_bench {
namespace {

using test::TestChain;
using test::TestKey;
using test::VirtualTree;

int g_threads = 1;

unsigned CeilLog2(std::uint64_t n) { return n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1)); }

// ---- table 1: complete disputes -------------------------------------------------------

void Table1(bool quick) {
  struct Case {
    std::uint64_t n, k;
  };
  const std::vector<Case> cases = quick ? std::vector<Case>{{8, 2}}
                                        : std::vector<Case>{{16, 1},  {16, 4},   {64, 4},  {64, 16},
                                                            {256, 4}, {256, 16}, {256, 64}, {1024, 32}};
  std::printf("\n1. Complete disputes through the VM: tiny MLP (14 operator nodes + assemble), repops, solver lies at\n"
              "   step 2N/3, node 6; one honest challenger; prompt parties (one block per round)\n");
  std::printf("%6s %5s %6s | %5s %5s %5s | %6s %6s | %9s %10s %10s\n", "N", "k", "ckpts", "r:ckp", "r:stp",
              "r:nod", "moves", "blocks", "bytes", "walk B", "arbit. B");
  for (const Case& c : cases) {
    test::ScenarioConfig config;
    config.steps = c.n;
    config.interval = c.k;
    config.solver.lies = {test::Lie{test::LieKind::kOutput, 2 * c.n / 3, 6}};
    config.challengers = {test::AgentPlan{}};
    config.clock_budget = 8;
    const test::ScenarioReport r = test::RunScenario(config);
    if (r.games.size() != 1 || r.games[0].game.result != referee::GameResult::kChallengerWon) {
      std::printf("%6llu %5llu  dispute did not complete as expected (%zu games%s%s)\n",
                  static_cast<unsigned long long>(c.n), static_cast<unsigned long long>(c.k), r.games.size(),
                  r.failed_calls.empty() ? "" : ", first failed call: ",
                  r.failed_calls.empty() ? "" : r.failed_calls.front().c_str());
      continue;
    }
    const test::GameReport& g = r.games[0];
    std::printf("%6llu %5llu %6llu | %5u %5u %5u | %6llu %6llu | %9llu %10llu %10llu\n",
                static_cast<unsigned long long>(c.n), static_cast<unsigned long long>(c.k),
                static_cast<unsigned long long>(protocol::CheckpointCount(c.n, c.k)), g.game.rounds[0],
                g.game.rounds[1], g.game.rounds[2], static_cast<unsigned long long>(g.txs),
                static_cast<unsigned long long>(g.blocks), static_cast<unsigned long long>(g.bytes),
                static_cast<unsigned long long>(g.bytes - g.arbitration_bytes),
                static_cast<unsigned long long>(g.arbitration_bytes));
  }
  std::printf("moves: game transactions (open, reveals, roots, records, arbitration); blocks: opening to resolution;\n"
              "bytes: encoded transactions of the game (signatures, envelopes and arguments).\n");
}

// ---- table 2: levels 1-2 at scale with virtual histories --------------------------------

Hash256 H(std::uint64_t seed) {
  Hash256 h;
  std::mt19937_64 rng(seed);
  for (auto& b : h.bytes) b = static_cast<std::uint8_t>(rng());
  return h;
}

struct LevelRow {
  std::uint64_t n = 0, k = 0, checkpoints = 0;
  unsigned rounds[2] = {0, 0};
  std::uint64_t txs = 0, blocks = 0, bytes = 0;
  bool ok = false;
};

LevelRow VirtualDispute(std::uint64_t n, std::uint64_t k, std::uint64_t divergence) {
  LevelRow row{n, k, protocol::CheckpointCount(n, k), {0, 0}, 0, 0, 0, false};
  referee::Referee referee;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  vm::ContractRegistry registry;
  registry.Register(referee::kRefereeContractId, &referee);
  TestChain chain(registry, &arbiter, 3, 1'000'000'000'000);
  const crypto::SecretKey client = TestKey(1), solver = TestKey(2), challenger = TestKey(3);
  const test::TinyJob tiny = test::MakeTinyJob(n, k, kernels::Mode::kRepops);
  const std::uint64_t c = row.checkpoints;
  // The first divergent step d (1 ≤ d ≤ n) lies in interval j; the parties
  // agree on every state before it.
  const std::uint64_t d = divergence;
  const std::uint64_t j = (d - 1) / k + 1;
  const std::uint64_t s0 = protocol::CheckpointStepAt(n, k, j - 1);
  const std::uint64_t s1 = protocol::CheckpointStepAt(n, k, j);
  const Hash256 common = H(1), start = j == 1 ? tiny.initial_state : common;
  auto checkpoints = [&](const Hash256& mine) {
    std::vector<VirtualTree::Segment> s{{0, 1, tiny.initial_state}};
    if (j > 1) s.push_back({1, j, common});
    s.push_back({j, c, mine});
    return VirtualTree(s);
  };
  auto steps = [&](const Hash256& mine) {
    const std::uint64_t leaves = s1 - s0 + 1, u = d - s0;
    std::vector<VirtualTree::Segment> s{{0, 1, start}};
    if (u > 1) s.push_back({1, u, H(2)});
    s.push_back({u, leaves, mine});
    return VirtualTree(s);
  };
  const Hash256 ys = H(10), yc = H(11);
  VirtualTree cs = checkpoints(ys), cc = checkpoints(yc), ss = steps(ys), sc = steps(yc);

  std::uint64_t txs = 0, bytes = 0;
  auto send = [&](const crypto::SecretKey& key, referee::Method m, const Bytes& args, bool count) {
    vm::Transaction tx = chain.Call(key, referee::kRefereeContractId, static_cast<std::uint16_t>(m), args);
    if (count) {
      txs += 1;
      bytes += vm::EncodeTransaction(tx).size();
    }
    chain.Submit(std::move(tx));
  };
  auto mine_ok = [&]() {
    bool ok = true;
    for (const vm::Receipt& r : chain.Mine()) ok &= r.success;
    return ok;
  };
  const vm::Amount bond = test::MinimumBond(tiny.job);
  send(client, referee::Method::kPostBounty,
       EncodeToBytes(referee::PostBountyArgs{tiny.job, tiny.initial_state, 1000, bond, bond, 100, 100, 100, Hash256{}, 0}), false);
  if (!mine_ok()) return row;
  send(solver, referee::Method::kClaim, EncodeToBytes(referee::BountyIdArgs{0}), false);
  referee::CommitArgs commit;
  commit.commitment.job_hash = protocol::JobHash(tiny.job);
  commit.commitment.checkpoint_root = cs.root();
  commit.commitment.final_state_hash = cs.Leaf(c - 1);
  commit.commitment.solver = solver.public_key().bytes();
  const std::array<std::uint8_t, 32> aux{};
  commit.commitment.signature =
      crypto::SignWithAux(solver, protocol::CommitmentSigningHash(commit.commitment).span(), aux)->bytes;
  commit.checkpoint_top = cs.top();
  commit.first_proof = cs.Prove(0);
  commit.last_proof = cs.Prove(c - 1);
  commit.state_blob = commit.commitment.final_state_hash;  // any non-zero name: the referee never reads it
  commit.state_blob_bytes = 1;
  send(solver, referee::Method::kCommit, EncodeToBytes(commit), false);
  if (!mine_ok()) return row;
  const std::uint64_t opened = chain.height() + 1;
  send(challenger, referee::Method::kOpenGame,
       EncodeToBytes(referee::OpenGameArgs{0, cc.root(), cc.top(), cc.Prove(0)}), true);
  if (!mine_ok()) return row;
  auto walk_level = [&](VirtualTree& a, VirtualTree& b, unsigned& rounds) {
    for (int guard = 0; guard < 80; ++guard) {
      auto t = referee::ReadWalk(chain.store(), 0);
      if (!t.ok() || !t->has_value()) return true;  // the level is done
      auto walk = referee::ReplayWalk(**t);
      if (!walk.ok()) return false;
      send(solver, referee::Method::kRevealChildren,
           EncodeToBytes(referee::RevealChildrenArgs{0, a.Children(walk->current())}), true);
      send(challenger, referee::Method::kRevealChildren,
           EncodeToBytes(referee::RevealChildrenArgs{0, b.Children(walk->current())}), true);
      if (!mine_ok()) return false;
      ++rounds;
    }
    return false;
  };
  if (!walk_level(cs, cc, row.rounds[0])) return row;
  auto step_root = [&](VirtualTree& v, VirtualTree& cp) {
    return referee::StepRootArgs{0, v.root(), v.top(), start, cp.Prove(j - 1), v.Prove(0), v.Prove(s1 - s0)};
  };
  send(solver, referee::Method::kPostStepRoot, EncodeToBytes(step_root(ss, cs)), true);
  send(challenger, referee::Method::kPostStepRoot, EncodeToBytes(step_root(sc, cc)), true);
  if (!mine_ok()) return row;
  if (!walk_level(ss, sc, row.rounds[1])) return row;
  auto g = referee::ReadGame(chain.store(), 0);
  row.ok = g.ok() && g->phase == referee::GamePhase::kNodeRoots && g->step == d - 1;
  row.txs = txs;
  row.bytes = bytes;
  row.blocks = chain.height() - opened + 1;
  return row;
}

void Table2(bool quick) {
  struct Case {
    std::uint64_t n, k;
  };
  const std::vector<Case> cases =
      quick ? std::vector<Case>{{1u << 10, 1u << 5}}
            : std::vector<Case>{{1u << 10, 1},        {1u << 10, 1u << 5},  {1u << 20, 1u << 5}, {1u << 20, 1u << 10},
                                {1u << 30, 1u << 10}, {1u << 30, 1u << 15}, {1u << 30, 1u << 20}, {1u << 30, 1u << 30}};
  std::printf("\n2. Levels 1-2 at scale through the VM (virtual histories, first divergence at step 2N/3+1):\n"
              "   until the disputed step is known\n");
  std::printf("%12s %10s %10s | %5s %5s %10s | %5s %6s %8s\n", "N", "k", "ckpts", "r:ckp", "r:stp", "ceil-log2",
              "moves", "blocks", "bytes");
  for (const Case& c : cases) {
    const LevelRow r = VirtualDispute(c.n, c.k, 2 * c.n / 3 + 1);
    if (!r.ok) {
      std::printf("%12llu %10llu  failed\n", static_cast<unsigned long long>(c.n), static_cast<unsigned long long>(c.k));
      continue;
    }
    const std::uint64_t interval_leaves = std::min(c.k, c.n) + 1;
    std::printf("%12llu %10llu %10llu | %5u %5u %4u + %-4u | %5llu %6llu %8llu\n", static_cast<unsigned long long>(c.n),
                static_cast<unsigned long long>(c.k), static_cast<unsigned long long>(r.checkpoints), r.rounds[0],
                r.rounds[1], CeilLog2(r.checkpoints), CeilLog2(interval_leaves),
                static_cast<unsigned long long>(r.txs), static_cast<unsigned long long>(r.blocks),
                static_cast<unsigned long long>(r.bytes));
  }
  std::printf("ceil-log2: bounds ceil(log2 checkpoints) + ceil(log2(k+1)); moves: open + reveals + step roots.\n");
}

// ---- table 3: arbitration vs one training step ------------------------------------------

std::map<std::string, std::unique_ptr<test::ArbitrationWorkload>> g_workloads;
std::map<std::string, double> g_step_seconds, g_arb_seconds;

void BenchStep(benchmark::State& state, std::string preset) {
  test::ArbitrationWorkload& w = *g_workloads.at(preset);
  if (Status s = w.Prepare(); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    if (Status s = w.RunStep(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
}

void BenchArbitrate(benchmark::State& state, std::string preset) {
  test::ArbitrationWorkload& w = *g_workloads.at(preset);
  if (Status s = w.Prepare(); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto gas = w.RunArbitration();
    if (!gas.ok()) {
      state.SkipWithError(gas.status().ToString().c_str());
      return;
    }
    state.counters["gas"] = static_cast<double>(*gas);
  }
}

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const std::string name = run.benchmark_name();
      const double s = run.real_accumulated_time / static_cast<double>(run.iterations);
      const auto slash = name.find('/');
      if (slash == std::string::npos) continue;
      std::string preset = name.substr(slash + 1);
      if (const auto next = preset.find('/'); next != std::string::npos) preset.resize(next);
      if (name.rfind("step/", 0) == 0) g_step_seconds[preset] = s;
      if (name.rfind("arbitrate/", 0) == 0) g_arb_seconds[preset] = s;
    }
  }
};

void Table3(const std::vector<std::string>& presets) {
  std::printf("\n3. Arbitration (one node, repops, in the precompile) vs one full training step (AdamW, clip), %d thread(s)\n",
              g_threads);
  std::printf("%-11s %7s %6s %11s | %-22s %10s %8s %8s | %10s %10s %8s %10s\n", "model", "BxT", "nodes",
              "step GFLOP", "max node", "GFLOP", "of step", "median", "step ms", "arbit. ms", "of step", "payload");
  for (const std::string& preset : presets) {
    const auto it = g_workloads.find(preset);
    if (it == g_workloads.end()) continue;
    const test::WorkloadInfo& w = it->second->info();
    const double step_g = static_cast<double>(w.step_flops) * 1e-9;
    const double max_g = static_cast<double>(w.max_node_flops) * 1e-9;
    char shape[32];
    std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(w.batch), static_cast<long long>(w.context));
    std::printf("%-11s %7s %6zu %11.3f | %-22s %10.3f %7.2f%% %7.4f%% |", preset.c_str(), shape, w.nodes, step_g,
                w.max_node.substr(0, 22).c_str(), max_g, 100.0 * max_g / step_g,
                100.0 * static_cast<double>(w.median_node_flops) / static_cast<double>(w.step_flops));
    const auto st = g_step_seconds.find(preset);
    const auto ar = g_arb_seconds.find(preset);
    if (st != g_step_seconds.end() && ar != g_arb_seconds.end()) {
      std::printf(" %10.1f %10.1f %7.2f%% %7.2f MB\n", st->second * 1e3, ar->second * 1e3,
                  100.0 * ar->second / st->second, static_cast<double>(w.payload_bytes) / 1e6);
    } else {
      std::printf(" %10s %10s %8s %10s\n", "-", "-", "-", "-");
    }
  }
  std::printf("GFLOP from kernels OpFlops over the declared shapes; max node: the costliest node that does not read the\n"
              "batch (the worst case the referee re-executes); median: the median node's share. Times (wall clock): one\n"
              "repops step on all threads vs the precompile (one thread) on the max node: payload decode, Merkle proofs,\n"
              "tensor hashing, the operator. payload: the encoded inputs posted for it. GPT-2 small is timed only with\n"
              "--gpt2-small.\n");
}

}  // namespace
}  // namespace vt::referee_bench

namespace vt::referee_bench {
namespace {

// ---- table 5: the element level through the VM ------------------------------------

void Table5() {
  std::printf("\n5. The element level through the VM: tiny MLP 6 -> 320 -> 3, B = 4, repops, the solver plants one ulp\n"
              "   in one value at step 4; both parties descend (level 4 over the output's chunks, then level 5b or\n"
              "   the value's slices); the same cheat arbitrated whole for comparison\n\n");
  std::printf("| cheat in | sums | element txs | chunk / partial walk reveals | verdict | final move gas | largest tx | "
              "node-level arbitration gas / tx |\n|---|---|---|---|---|---|---|---|\n");
  const test::TinyJob wide = test::MakeTinyJob(10, 3, kernels::Mode::kRepops, 42, 320);
  auto honest = test::Train(wide, {});
  if (!honest.ok()) return;
  struct Case {
    const char* name;
    std::uint16_t op;
    std::uint32_t slot;
    test::SumsLie sums;
  };
  const Case cases[] = {{"linear_backward dx", 4, 0, test::SumsLie::kHonest},
                        {"linear_backward dx", 4, 0, test::SumsLie::kDiverge},
                        {"linear_backward dW", 4, 1, test::SumsLie::kDiverge},
                        {"relu", 40, 0, test::SumsLie::kHonest},
                        {"sgd", 90, 0, test::SumsLie::kHonest}};
  for (const Case& k : cases) {
    std::uint32_t node = 0;
    while (node + 1 < honest->records[4].size() && honest->records[4][node].op_kind != k.op) ++node;
    const std::int64_t numel = honest->outputs[4][node][k.slot].numel();
    std::int64_t value = numel / 3;
    auto play = [&](bool element) {
      test::ScenarioConfig c;
      c.hidden = 320;
      c.solver_bond = c.challenger_bond = 2 * test::MinimumBond(wide.job);
      c.solver.lies = {test::Lie{test::LieKind::kOneValue, 4, node, k.slot, value}};
      c.solver.element_level = element;
      c.solver.sums = {k.sums, 2};
      test::AgentPlan challenger;
      challenger.element_level = element;
      c.challengers = {challenger};
      return test::RunScenario(c);
    };
    // The first value from numel/3 whose lie reaches a checkpoint (some are
    // absorbed downstream: behind a relu, or rounded away in an update).
    test::ScenarioReport e = play(true);
    for (int tries = 1; e.games.empty() && tries < 16; ++tries) {
      value = (value + 1) % numel;
      e = play(true);
    }
    const test::ScenarioReport n = play(false);
    if (e.games.empty() || n.games.empty()) {
      std::printf("| %s | (the lie did not reach a checkpoint) |\n", k.name);
      continue;
    }
    const test::GameReport& g = e.games[0];
    std::printf("| %s | %s | %llu | %llu / %llu | %s | %llu | %llu B | %llu / %llu B |\n", k.name,
                k.sums == test::SumsLie::kHonest ? "true" : "leave the rule", static_cast<unsigned long long>(g.element_txs),
                static_cast<unsigned long long>(g.element_walk_reveals[0]),
                static_cast<unsigned long long>(g.element_walk_reveals[1]), g.game.reason.c_str(),
                static_cast<unsigned long long>(g.resolving_gas), static_cast<unsigned long long>(g.max_tx_bytes),
                static_cast<unsigned long long>(n.games[0].resolving_gas),
                static_cast<unsigned long long>(n.games[0].max_tx_bytes));
  }
}

}  // namespace
}  // namespace vt::referee_bench

int main(int argc, char** argv) {
  using namespace vt::referee_bench;
  bool quick = false, gpt2 = false, long_walks = false;
  g_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--gpt2-small") == 0) {
      gpt2 = true;
    } else if (std::strcmp(argv[i], "--long-walks") == 0) {
      long_walks = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      g_threads = std::max(1, std::atoi(argv[i] + 10));
    } else {
      args.push_back(argv[i]);
    }
  }
  if (long_walks) {
    LongWalksTable(quick, gpt2);
    return 0;
  }
  Table1(quick);
  Table2(quick);
  Table5();

  const std::vector<std::string> presets = {"gpt-tiny", "gpt2-small"};
  for (const std::string& p : presets) {
    auto w = vt::test::ArbitrationWorkload::Describe(p, p == "gpt-tiny" && !quick ? 8 : 1, g_threads);
    if (!w.ok()) {
      std::fprintf(stderr, "%s: %s\n", p.c_str(), w.status().ToString().c_str());
      return 1;
    }
    g_workloads[p] = std::move(w).value();
  }
  std::vector<std::string> timed = {"gpt-tiny"};
  if (gpt2) timed.push_back("gpt2-small");
  for (const std::string& p : timed) {
    for (auto* b : {benchmark::RegisterBenchmark(("step/" + p).c_str(), BenchStep, p),
                    benchmark::RegisterBenchmark(("arbitrate/" + p).c_str(), BenchArbitrate, p)}) {
      b->Unit(benchmark::kMillisecond)->UseRealTime();
      // One iteration: the smoke run; and a GPT-2 small step takes minutes.
      if (quick || p == "gpt2-small") b->Iterations(1);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  Collector reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  Table3(presets);
  // Table 2's transactions until the disputed step is known at N = 2^30.
  constexpr std::uint64_t kLevel12MovesAt2Pow30 = 67;
  const std::vector<std::pair<std::string, std::int64_t>> descent = {
      {"gpt-tiny", 8}, {"mlp-fashion", 16}, {"cnn-fashion", 8}, {"gpt2-small", 1}};
  DescentTable(descent, kLevel12MovesAt2Pow30);
  ImplementedRulesTable(descent);
  LongWalksTable(quick, gpt2);
  return 0;
}
