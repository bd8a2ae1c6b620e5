// The element level played through the chain (docs/referee.md, "Element-level
// descent"): a one-ulp cheat in one value of a node output is caught at that
// value — chunk walk, chunk reveal, then the dot or reduction rule's
// partial-sum walk and final step (or epilogue), or the pointwise rule's
// re-execution — and its
// author slashed; a lying challenger loses; silence loses by timeout;
// malformed moves are refused and cost nothing but their fee; every game
// transaction is at most 64 KiB.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string>

#include "kernels/ops/registry.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/scenario.h"
#include "verify/element_game.h"
#include "verify/graph_source.h"
#include "verify/reduce_rule.h"

namespace vt::test {
namespace {

using referee::GamePhase;
using referee::GameResult;
using referee::Method;

constexpr std::uint64_t kMaxElementTx = 64 * 1024;
constexpr std::uint64_t kLieStep = 4;
// Hidden width of the tiny MLP: its hidden activations (4 × 320 values) are
// five 256-value chunks, so level 4 walks for real.
constexpr std::int64_t kHidden = 320;

constexpr kernels::Mode kRepops = kernels::Mode::kRepops;
constexpr kernels::Mode kCertified = kernels::Mode::kCertified;

TinyJob WideJob(kernels::Mode mode = kRepops) { return MakeTinyJob(10, 3, mode, 42, kHidden); }

// A game's config on the wide job, both bonds at twice its minimum.
ScenarioConfig WideConfig(kernels::Mode mode = kRepops) {
  ScenarioConfig c;
  c.hidden = kHidden;
  c.mode = mode;
  c.solver_bond = c.challenger_bond = 2 * MinimumBond(WideJob(mode).job);
  return c;
}

// A cheat target: the first node of the tiny step with this op kind that
// reads the batch or not, as `reads_batch` says, and an output slot of it.
struct Target {
  const char* name;
  kernels::OpKind op;
  std::uint32_t slot;
  const char* reason_if_honest_sums;  // the verdict's reason when the liar's sums are the true ones
  bool reads_batch = false;
};
const Target kTargets[] = {
    {"linear.y", kernels::OpKind::kLinear, 0, "element-epilogue"},
    {"linear_backward.dx", kernels::OpKind::kLinearBackward, 0, "element-epilogue"},
    {"linear_backward.dW", kernels::OpKind::kLinearBackward, 1, "element-epilogue"},
    {"relu", kernels::OpKind::kRelu, 0, "element-reexecuted"},
    {"sgd", kernels::OpKind::kSgd, 0, "element-reexecuted"},
    // The reduction rule (a TreeSum over the batch rows).
    {"linear_backward.db", kernels::OpKind::kLinearBackward, 2, "element-epilogue"},
    // The reduction rule with a running max and a final step that reads the label (the batch).
    {"cross_entropy_backward", kernels::OpKind::kCrossEntropyBackward, 0, "element-epilogue", true},
    // The first layer: the dot rule's factor x read from one example a step (the batch).
    {"fc.0.y", kernels::OpKind::kLinear, 0, "element-epilogue", true},
    {"fc.0.backward.dW", kernels::OpKind::kLinearBackward, 1, "element-epilogue", true},
};

const History& HonestHistory(kernels::Mode mode = kRepops) {
  static std::map<kernels::Mode, History> trained;
  auto it = trained.find(mode);
  if (it == trained.end()) {
    auto r = Train(WideJob(mode), {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    it = trained.emplace(mode, std::move(r).value()).first;
  }
  return it->second;
}

std::uint32_t NodeOf(const Target& t) {
  const History& h = HonestHistory();
  const auto& records = h.records[kLieStep];
  for (std::uint32_t n = 0; n + 1 < records.size(); ++n) {
    if (records[n].op_kind != static_cast<std::uint16_t>(t.op)) continue;
    bool batch = false;
    for (const auto& ref : records[n].inputs) batch = batch || ref.source == protocol::InputSource::kBatch;
    if (batch == t.reads_batch) return n;
  }
  ADD_FAILURE() << "no node for " << t.name;
  return 0;
}

std::int64_t NumelOf(const Target& t) { return HonestHistory().outputs[kLieStep][NodeOf(t)][t.slot].numel(); }

struct Game {
  ScenarioReport report;
  bool played = false;  // the lie reached a checkpoint (else no game was opened)
};

// A liar (solver or challenger) plants one ulp in value `value` of the
// target; both sides descend to the element level.
Game PlayLies(std::vector<Lie> lies, bool liar_is_solver, SumsPlan sums,
              std::optional<GamePhase> liar_silent = std::nullopt,
              std::optional<GamePhase> honest_silent = std::nullopt, bool element_level = true,
              kernels::Mode mode = kRepops) {
  ScenarioConfig c = WideConfig(mode);
  AgentPlan liar;
  liar.lies = std::move(lies);
  liar.element_level = element_level;
  liar.sums = sums;
  liar.silent_from = liar_silent;
  AgentPlan honest;
  honest.element_level = element_level;
  honest.silent_from = honest_silent;
  c.solver = liar_is_solver ? liar : honest;
  c.challengers = {liar_is_solver ? honest : liar};
  Game g;
  g.report = RunScenario(c);
  g.played = !g.report.games.empty();
  return g;
}
Game Play(const Target& t, std::int64_t value, bool liar_is_solver, SumsPlan sums,
          std::optional<GamePhase> liar_silent = std::nullopt,
          std::optional<GamePhase> honest_silent = std::nullopt, bool element_level = true,
          kernels::Mode mode = kRepops) {
  return PlayLies({Lie{LieKind::kOneValue, kLieStep, NodeOf(t), t.slot, value}}, liar_is_solver, sums,
                  liar_silent, honest_silent, element_level, mode);
}

// One game over `lies` in `c`, told by the solver or by the (one)
// challenger, both playing the element level; the liar's sums as `sums`.
ScenarioReport RunLiar(ScenarioConfig c, std::vector<Lie> lies, bool liar_is_solver, SumsPlan sums = {}) {
  AgentPlan liar, honest;
  liar.lies = std::move(lies);
  liar.sums = sums;
  liar.element_level = honest.element_level = true;
  c.solver = liar_is_solver ? liar : honest;
  c.challengers = {liar_is_solver ? honest : liar};
  return RunScenario(c);
}

// The first value of the target from `from` whose one-ulp lie changes a
// checkpoint (some are absorbed downstream, e.g. behind a relu or rounded
// away in an update).
std::int64_t ReachingValue(const Target& t, std::int64_t from, kernels::Mode mode = kRepops) {
  const std::int64_t n = NumelOf(t);
  for (std::int64_t k = 0; k < std::min<std::int64_t>(n, 64); ++k) {
    const std::int64_t v = (from + k) % n;
    auto h = Train(WideJob(mode), {Lie{LieKind::kOneValue, kLieStep, NodeOf(t), t.slot, v}});
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (h.ok() && h->checkpoint_tree.root() != HonestHistory(mode).checkpoint_tree.root()) return v;
  }
  ADD_FAILURE() << "no value of " << t.name << " reaches a checkpoint";
  return 0;
}

void ExpectCaughtAt(const Game& g, const Target& t, std::int64_t value, bool liar_is_solver) {
  ASSERT_TRUE(g.played);
  const GameReport& gr = g.report.games.at(0);
  EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon)
      << t.name << " value " << value << ": " << gr.game.reason;
  ASSERT_TRUE(gr.element.has_value()) << t.name << ": the element level was not played";
  EXPECT_EQ(gr.element->slot, t.slot);
  EXPECT_EQ(gr.element->value, value) << t.name << ": caught at another value";
  EXPECT_EQ(gr.game.node_index, NodeOf(t));
  EXPECT_LE(gr.max_tx_bytes, kMaxElementTx) << t.name;
  // Level 4 ends at the value's chunk, walking when the output has more than one.
  bool chunk_done = false;
  for (const referee::WalkDoneEvent& w : gr.walks)
    if (w.level == referee::Level::kChunk) chunk_done = w.index == static_cast<std::uint64_t>(value / 256);
  EXPECT_TRUE(chunk_done) << t.name;
  EXPECT_EQ(gr.element_walk_reveals[0] > 0, kernels::ChunkCount(NumelOf(t)) > 1) << t.name;
  EXPECT_TRUE(g.report.failed_calls.empty()) << t.name << ": " << g.report.failed_calls.front();
  if (liar_is_solver) {
    EXPECT_EQ(g.report.bounty.state, referee::BountyState::kFailed);
  } else {
    EXPECT_EQ(g.report.bounty.state, referee::BountyState::kFinalized);
  }
}

// How a game of a mode's table of cheats ends: a re-executed value, else
// the epilogue when the liar's partial results are the true ones, else a
// step of them — which the walk over them reached.
void ExpectDecidedBy(const GameReport& gr, bool reexecuted, SumsLie sums) {
  const char* want = reexecuted                 ? "element-reexecuted"
                     : sums == SumsLie::kHonest ? "element-epilogue"
                                                : "element-step";
  EXPECT_EQ(gr.game.reason, want);
  if (sums != SumsLie::kHonest) {
    EXPECT_GT(gr.element_walk_reveals[1], 0u) << "the partial results were walked";
  }
}

TEST(ElementGame, OneUlpCheatIsCaughtAtItsValueAndSlashed) {
  for (const Target& t : kTargets) {
    const std::int64_t v = ReachingValue(t, NumelOf(t) / 3);
    const Game g = Play(t, v, /*liar_is_solver=*/true, SumsPlan{SumsLie::kHonest, 1});
    ExpectCaughtAt(g, t, v, true);
    const GameReport& gr = g.report.games.at(0);
    EXPECT_EQ(gr.game.reason, t.reason_if_honest_sums) << t.name;
    // The cheater's bond is gone: it got nothing back, the challenger profited.
    EXPECT_LT(g.report.net.at("solver"), 0) << t.name;
    EXPECT_GT(g.report.net.at("challenger0"), 0) << t.name;
    std::printf(
        "[element-game] %-20s value %4lld: %llu txs (%llu at the element level, %llu chunk-walk reveals), "
        "largest %llu B, final move %llu gas, %s\n",
        t.name, static_cast<long long>(v), static_cast<unsigned long long>(gr.txs),
        static_cast<unsigned long long>(gr.element_txs),
        static_cast<unsigned long long>(gr.element_walk_reveals[0]),
        static_cast<unsigned long long>(gr.max_tx_bytes), static_cast<unsigned long long>(gr.resolving_gas),
        gr.game.reason.c_str());
    // The same cheat arbitrated at node level, for comparison.
    const Game whole = Play(t, v, true, {}, std::nullopt, std::nullopt, /*element_level=*/false);
    ASSERT_TRUE(whole.played);
    EXPECT_EQ(whole.report.games[0].game.reason, "arbitration");
    std::printf("[element-game] %-20s node-level: %llu txs, largest %llu B, arbitration %llu gas\n", t.name,
                static_cast<unsigned long long>(whole.report.games[0].txs),
                static_cast<unsigned long long>(whole.report.games[0].max_tx_bytes),
                static_cast<unsigned long long>(whole.report.games[0].resolving_gas));
  }
}

TEST(ElementGame, SumsThatLeaveTheRuleAreCaughtAtTheirStep) {
  for (const Target& t : kTargets) {
    if (t.op != kernels::OpKind::kLinear && t.op != kernels::OpKind::kLinearBackward) continue;
    const std::int64_t v = ReachingValue(t, 1);
    for (SumsLie kind : {SumsLie::kDiverge, SumsLie::kMadeUp}) {
      const Game g = Play(t, v, true, SumsPlan{kind, 2});
      ExpectCaughtAt(g, t, v, true);
      EXPECT_EQ(g.report.games.at(0).game.reason, "element-step") << t.name;
      EXPECT_GT(g.report.games[0].element_walk_reveals[1], 0u) << t.name << ": the partial sums were walked";
      std::printf(
          "[element-game] %-20s sums %d: %llu element txs (%llu partial-walk reveals), largest %llu B, "
          "final move %llu gas\n",
          t.name, static_cast<int>(kind), static_cast<unsigned long long>(g.report.games[0].element_txs),
          static_cast<unsigned long long>(g.report.games[0].element_walk_reveals[1]),
          static_cast<unsigned long long>(g.report.games[0].max_tx_bytes),
          static_cast<unsigned long long>(g.report.games[0].resolving_gas));
    }
  }
}

// ---- The tiny CNN and GPT: norms, convolutions, poolings, attention ----

TinyJob JobOf(TinyModel m, kernels::Mode mode = kRepops) { return MakeTinyModelJob(m, 10, 3, mode); }

const History& HistoryOf(TinyModel m, kernels::Mode mode = kRepops) {
  static std::map<std::pair<TinyModel, kernels::Mode>, History> trained;
  auto it = trained.find({m, mode});
  if (it == trained.end()) {
    auto r = Train(JobOf(m, mode), {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    it = trained.emplace(std::make_pair(m, mode), std::move(r).value_or(History{})).first;
  }
  return it->second;
}

// The first node of the model's step with this op kind that reads the batch or not, as `reads_batch` says.
std::uint32_t NodeOf(TinyModel m, kernels::OpKind op, bool reads_batch = false) {
  const auto& records = HistoryOf(m).records[kLieStep];
  for (std::uint32_t n = 0; n + 1 < records.size(); ++n) {
    if (records[n].op_kind != static_cast<std::uint16_t>(op)) continue;
    bool batch = false;
    for (const auto& ref : records[n].inputs) batch = batch || ref.source == protocol::InputSource::kBatch;
    if (batch == reads_batch) return n;
  }
  ADD_FAILURE() << "no node of op kind " << static_cast<int>(op);
  return 0;
}

// The first value of output `slot` of `node` from `from` whose one-ulp lie
// changes a checkpoint of `job` (whose honest run is `honest`), if any of
// the first 64 does.
std::optional<std::int64_t> FirstReachingValue(const TinyJob& job, const History& honest, std::uint32_t node,
                                               std::uint32_t slot, std::int64_t from) {
  const std::int64_t n = honest.outputs[kLieStep][node][slot].numel();
  // (A max pool's gradient is +0 off its windows' maxima: a lie there is lost in later sums.)
  for (std::int64_t k = 0; k < std::min<std::int64_t>(n, 64); ++k) {
    const std::int64_t v = (from + k) % n;
    auto h = Train(job, {Lie{LieKind::kOneValue, kLieStep, node, slot, v}});
    if (h.ok() && h->checkpoint_tree.root() != honest.checkpoint_tree.root()) return v;
  }
  return std::nullopt;
}
std::int64_t ReachingValue(TinyModel m, std::uint32_t node, std::uint32_t slot, std::int64_t from,
                           kernels::Mode mode = kRepops) {
  const std::optional<std::int64_t> v =
      FirstReachingValue(JobOf(m, mode), HistoryOf(m, mode), node, slot, from);
  if (!v) ADD_FAILURE() << "no value of node " << node << " slot " << slot << " reaches a checkpoint";
  return v.value_or(0);
}

// A value of one output of the model's first node of an op kind, and how its rule ends a game.
struct ValueTarget {
  const char* name;
  kernels::OpKind op;
  std::uint32_t slot;
  bool reduction;     // a partial-result walk and one step (else one re-execution)
  std::int64_t from;  // the first value tried (ReachingValue)
  bool reads_batch = false;
  // A rounded value with a slack (verify::ReduceSlack): a liar's sums also
  // leave the rule at their last leaf, the slack's fold.
  bool slack = false;
};
struct TargetsPlayed {
  std::uint64_t games = 0, max_tx = 0, required = 0;
};

// A one-ulp lie at value v of target t (the model's node `node`), its sums
// by `plan`, told by the solver or the challenger: caught at its value, the
// honest party wins, and no transaction exceeds 64 KiB or what posting
// required of the job (`required`). Returns the game's largest transaction
// (0: no game was played, a failure already).
std::uint64_t PlayValueLie(TinyModel m, kernels::Mode mode, const ValueTarget& t, std::uint32_t node,
                           std::int64_t v, const SumsPlan& plan, bool liar_is_solver, vm::Amount bond,
                           std::uint64_t required) {
  const SumsLie kind = plan.kind;
  SCOPED_TRACE(std::string(t.name) + " value " + std::to_string(v) + " sums " +
               std::to_string(static_cast<int>(kind)) + " from " + std::to_string(plan.from) +
               (liar_is_solver ? " solver lies" : " challenger lies"));
  ScenarioConfig c;
  c.model = m;
  c.mode = mode;
  c.solver_bond = c.challenger_bond = bond;
  const ScenarioReport rep =
      RunLiar(c, {Lie{LieKind::kOneValue, kLieStep, node, t.slot, v}}, liar_is_solver, plan);
  EXPECT_EQ(rep.games.size(), 1u);
  if (rep.games.size() != 1) return 0;
  const GameReport& gr = rep.games[0];
  EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon)
      << gr.game.reason;
  EXPECT_TRUE(gr.element.has_value()) << "the element level was not played: " << gr.game.reason;
  if (gr.element) {
    EXPECT_EQ(gr.element->slot, t.slot);
    EXPECT_EQ(gr.element->value, v);
  }
  EXPECT_EQ(gr.game.node_index, node);
  EXPECT_EQ(gr.game.reason, !t.reduction               ? "element-reexecuted"
                            : kind == SumsLie::kHonest ? "element-epilogue"
                                                       : "element-step");
  EXPECT_LE(gr.max_tx_bytes, kMaxElementTx);
  EXPECT_LE(gr.max_tx_bytes, required);
  EXPECT_TRUE(rep.failed_calls.empty()) << rep.failed_calls.front();
  return gr.max_tx_bytes;
}

// PlayValueLie at each target's value, its sums honest or (reductions)
// leaving the rule — diverging at a step or made up — so that the referee
// judges one step; told by the solver and by the challenger in turn. Prints
// one line, `tag`'s.
TargetsPlayed PlayValueLies(TinyModel m, const char* tag, std::span<const ValueTarget> targets,
                            kernels::Mode mode = kRepops) {
  TargetsPlayed out;
  const vm::Amount bond = 2 * MinimumBond(JobOf(m, mode).job);
  out.required = BondTermsOf(JobOf(m, mode).job).required_tx_bytes;
  for (const ValueTarget& t : targets) {
    const std::uint32_t node = NodeOf(m, t.op, t.reads_batch);
    const std::int64_t v = ReachingValue(m, node, t.slot, t.from, mode);
    // Honest sums; a reduction's also leaving the rule or made up; a slack's
    // also leaving it at the last leaf (a `from` past it is clamped there).
    const SumsPlan all[] = {{SumsLie::kHonest, 2},
                            {SumsLie::kDiverge, 2},
                            {SumsLie::kMadeUp, 2},
                            {SumsLie::kDiverge, ~std::uint64_t{0}}};
    const std::size_t plans = !t.reduction ? 1 : t.slack ? 4 : 3;
    for (const SumsPlan& plan : std::span(all).first(plans)) {
      const bool liar_is_solver = out.games % 2 == 0;
      out.max_tx =
          std::max(out.max_tx, PlayValueLie(m, mode, t, node, v, plan, liar_is_solver, bond, out.required));
      ++out.games;
    }
  }
  std::printf("[element-game] %s: %llu games over %zu outputs, largest tx %llu B (posting required %llu B)\n",
              tag, static_cast<unsigned long long>(out.games), targets.size(),
              static_cast<unsigned long long>(out.max_tx), static_cast<unsigned long long>(out.required));
  return out;
}

// The rules that read the node's own agreed outputs, through the chain: a
// batch norm's rstd and running variance (reduction steps reading the
// node's own mean), its running mean and its backward's dx (re-executions
// reading the node's own statistics or dγ, dβ), and a convolution's dx
// (col2im over its taps' dot products), the poolings (the global average
// pool and the stem's max pool: a scan over the window) and their
// backwards (the dy and x rows of the covering windows).
constexpr ValueTarget kCnnTargets[] = {
    {"batchnorm.rstd", kernels::OpKind::kBatchNorm2dTrain, 4, true, 1},
    {"batchnorm.running_var", kernels::OpKind::kBatchNorm2dTrain, 2, true, 1},
    {"batchnorm.running_mean", kernels::OpKind::kBatchNorm2dTrain, 1, false, 1},
    {"batchnorm_backward.dx", kernels::OpKind::kBatchNorm2dBackward, 0, false, 1},
    {"conv2d_backward.dx", kernels::OpKind::kConv2dBackward, 0, true, 1},
    {"avg_pool2d.y", kernels::OpKind::kAvgPool2d, 0, true, 1},
    {"avg_pool2d_backward.dx", kernels::OpKind::kAvgPool2dBackward, 0, false, 1},
    {"max_pool2d.y", kernels::OpKind::kMaxPool2d, 0, true, 1},
    {"max_pool2d_backward.dx", kernels::OpKind::kMaxPool2dBackward, 0, false, 1}};

TEST(ElementGame, CnnBatchNormConvolutionAndPoolLiesAreCaughtAtTheirValue) {
  EXPECT_EQ(PlayValueLies(TinyModel::kCnn, "cnn", kCnnTargets).games, 19u);
}

// The GPT's row operators and attention, through the chain: layer-norm's y
// (re-executed from x, γ, β and the node's own agreed mean and rstd), its
// mean and rstd (TreeSums over the row, rstd reading the own mean),
// layernorm_backward's dx (two separate TreeSums over the row, then the
// final step), attention's probabilities (per key a dot scan, then the
// softmax) and its backward's dqkv, and embedding_backward's dW (a masked
// scan over the positions, each step reading its token id from an
// example). Values past the first row, so that a row's offset is exercised.
constexpr ValueTarget kGptTargets[] = {
    {"layernorm.y", kernels::OpKind::kLayerNorm, 0, false, 37},
    {"layernorm.mean", kernels::OpKind::kLayerNorm, 1, true, 3},
    {"layernorm.rstd", kernels::OpKind::kLayerNorm, 2, true, 5},
    {"layernorm_backward.dx", kernels::OpKind::kLayerNormBackward, 0, true, 37},
    {"attention.att", kernels::OpKind::kAttention, 1, true, 8 + 3},
    {"attention_backward.dqkv", kernels::OpKind::kAttentionBackward, 0, true, 48 + 5},
    {"embedding_backward.dW", kernels::OpKind::kEmbeddingBackward, 0, true, 16 + 2, true}};

TEST(ElementGame, GptLayerNormAttentionAndEmbeddingLiesAreCaughtAtTheirValue) {
  EXPECT_EQ(PlayValueLies(TinyModel::kGpt, "gpt", kGptTargets).games, 19u);
}

// Rounded mode, the CNN: a convolution's y by the rounded dot rule (fp64
// partial results over its taps, padding ones +0, the epilogue opening the
// log), a batch norm's y, running mean, running variance and rstd by its
// channel's fp64 sums (Σx, and Σ(x − Σx/n)² about that unrounded mean) and a
// final step, its backward's dx by the channel's two fp64 sums and a final
// step, the poolings' backwards — per-value fp64 sums over the covering
// windows, rounded once (exact in fp64: no log entry can move them) — and
// a convolution's dx: its taps' fp64 dots in col2im's order with the
// kernel's β as leaves (the taps' GEMM slacks summed), the epilogue opening
// the value's leaf beside the log; a liar's sums also leave the rule at the
// slack's last leaf.
constexpr ValueTarget kCnnRoundedTargets[] = {
    {"conv2d.y", kernels::OpKind::kConv2d, 0, true, 1},
    {"batchnorm.y", kernels::OpKind::kBatchNorm2dTrain, 0, true, 1},
    {"batchnorm.running_mean", kernels::OpKind::kBatchNorm2dTrain, 1, true, 1},
    {"batchnorm.running_var", kernels::OpKind::kBatchNorm2dTrain, 2, true, 1},
    {"batchnorm.rstd", kernels::OpKind::kBatchNorm2dTrain, 4, true, 1},
    {"batchnorm_backward.dx", kernels::OpKind::kBatchNorm2dBackward, 0, true, 1},
    {"avg_pool2d_backward.dx", kernels::OpKind::kAvgPool2dBackward, 0, false, 1},
    {"max_pool2d_backward.dx", kernels::OpKind::kMaxPool2dBackward, 0, false, 1},
    {"conv2d_backward.dx", kernels::OpKind::kConv2dBackward, 0, true, 1, false, true}};

TEST(ElementGame, CnnRoundedLiesAreCaughtAtTheirValue) {
  EXPECT_EQ(PlayValueLies(TinyModel::kCnn, "cnn rounded", kCnnRoundedTargets, kernels::Mode::kRounded).games,
            24u);
}

// Rounded mode: a layer norm's y and rstd normalise with the kernel's own
// unrounded fp64 mean and rstd, so each is the reduction of its row's Σx and
// Σ(x − Σx/C)² and a final step (verify::RoundedElementAt), with
// no committed statistic read; its mean is a fp64 sum too. Attention's
// probabilities: the scores' fp64 dots and softmax, then the kernel's β
// from the scores' GEMM slacks (their largest, as SoftmaxSlack folds them);
// its y: the same softmax, the att·V element over the unrounded att, and
// the kernel's perturbed GEMM slack; its backward's dqkv: AttentionGrad's
// fp64 leaves, then the kernel's β_dP, β_dS and perturbed GEMM slack. And
// the fp64 sums of layernorm_backward's dx and embedding_backward's dW (its
// steps reading token ids from the batch's examples).
// The tiny GPT's outputs rounded mode plays, one of each rule kind.
constexpr ValueTarget kGptRoundedTargets[] = {
    {"layernorm.y", kernels::OpKind::kLayerNorm, 0, true, 37},
    {"layernorm.mean", kernels::OpKind::kLayerNorm, 1, true, 3},
    {"layernorm.rstd", kernels::OpKind::kLayerNorm, 2, true, 5},
    {"attention.att", kernels::OpKind::kAttention, 1, true, 8 + 3, false, true},
    {"attention.y", kernels::OpKind::kAttention, 0, true, 16 + 5, false, true},
    {"attention_backward.dqkv", kernels::OpKind::kAttentionBackward, 0, true, 48 + 5, false, true},
    {"layernorm_backward.dx", kernels::OpKind::kLayerNormBackward, 0, true, 37},
    {"embedding_backward.dW", kernels::OpKind::kEmbeddingBackward, 0, true, 16 + 2, true}};

TEST(ElementGame, GptRoundedLiesAreCaughtAtTheirValue) {
  EXPECT_EQ(PlayValueLies(TinyModel::kGpt, "gpt rounded", kGptRoundedTargets, kernels::Mode::kRounded).games,
            27u);
}

// The walk's property over the tiny GPT and CNN, in repops, rounded and
// certified mode (kGptTargets, kGptRoundedTargets, kCnnTargets,
// kCnnRoundedTargets; certified plays the repops targets' rules, its sums exact):
// random target, value, liar's side and — for a reduction — sums honest,
// made up, or leaving the rule at a random leaf (in rounded mode the
// value's or its β's; past the last, the last). The honest party always
// wins at the planted value, every transaction ≤ 64 KiB. CI plays 6 games
// a model and mode; a longer campaign: VT_RANDOM_VALUE_GAMES=200. (Such a
// campaign found steps reading five values whose move the chain refused:
// AStepReadingFiveValuesIsSettledAtIt.)
TEST(ElementGame, HonestPartyAlwaysWinsOverRandomValueCheats) {
  struct Campaign {
    TinyModel model;
    kernels::Mode mode;
    std::span<const ValueTarget> targets;
  };
  const Campaign campaigns[] = {{TinyModel::kGpt, kRepops, kGptTargets},
                                {TinyModel::kGpt, kernels::Mode::kRounded, kGptRoundedTargets},
                                {TinyModel::kCnn, kRepops, kCnnTargets},
                                {TinyModel::kCnn, kernels::Mode::kRounded, kCnnRoundedTargets},
                                {TinyModel::kGpt, kCertified, kGptTargets},
                                {TinyModel::kCnn, kCertified, kCnnTargets}};
  std::mt19937_64 rng(20261130);
  const int rounds =
      std::getenv("VT_RANDOM_VALUE_GAMES") ? std::atoi(std::getenv("VT_RANDOM_VALUE_GAMES")) : 6;
  for (const Campaign& c : campaigns) {
    const vm::Amount bond = 2 * MinimumBond(JobOf(c.model, c.mode).job);
    const std::uint64_t required = BondTermsOf(JobOf(c.model, c.mode).job).required_tx_bytes;
    std::uint64_t games = 0, steps = 0, max_tx = 0, unreached = 0;
    // Draws whose 64 values from a random start all vanish before the next
    // checkpoint (a max pool's gradient off its windows' maxima) play no game.
    for (int draw = 0; games < static_cast<std::uint64_t>(rounds) && draw < 4 * rounds; ++draw) {
      ValueTarget t = c.targets[rng() % c.targets.size()];
      const std::uint32_t node = NodeOf(c.model, t.op, t.reads_batch);
      const kernels::Tensor& out = HistoryOf(c.model, c.mode).outputs[kLieStep][node][t.slot];
      const std::optional<std::int64_t> reaching =
          FirstReachingValue(JobOf(c.model, c.mode), HistoryOf(c.model, c.mode), node, t.slot,
                             static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(out.numel())));
      if (!reaching) {
        ++unreached;
        continue;
      }
      const std::int64_t v = *reaching;
      if (t.op == kernels::OpKind::kAttention && t.slot == 1) {
        // att [B, H, T, T] above the diagonal: the mask's +0, re-executed.
        const std::int64_t tt = out.shape().back();
        if (v % tt > (v / tt) % tt) t.reduction = t.slack = false;
      }
      SumsPlan plan{SumsLie::kHonest, 2};
      if (t.reduction) {
        plan.kind = static_cast<SumsLie>(rng() % 3);
        plan.from = rng() % 4 == 0 ? ~std::uint64_t{0} : 1 + rng() % 4096;
      }
      const std::uint64_t tx =
          PlayValueLie(c.model, c.mode, t, node, v, plan, rng() % 2 == 0, bond, required);
      if (tx == 0) continue;
      max_tx = std::max(max_tx, tx);
      steps += t.reduction && plan.kind != SumsLie::kHonest ? 1 : 0;
      ++games;
    }
    EXPECT_EQ(games, static_cast<std::uint64_t>(rounds));
    std::printf(
        "[element-game] %llu random %s %s games (%llu at a step; %llu draws reached no checkpoint): "
        "largest tx %llu B\n",
        static_cast<unsigned long long>(games), c.model == TinyModel::kGpt ? "gpt" : "cnn",
        std::string(kernels::ModeName(c.mode)).c_str(), static_cast<unsigned long long>(steps),
        static_cast<unsigned long long>(unreached), static_cast<unsigned long long>(max_tx));
  }
}

// The widest reduction steps read five values: layernorm_backward's g·x̂
// terms and its final step (dy, γ, x, mean, rstd, from five inputs). A
// liar's sums leaving the rule at such a step end the walk there, and the
// move that settles it carries five value openings and five input-hash
// openings — on the chain, within the bond's pricing. Told by the solver
// and by the challenger, in repops and rounded mode.
TEST(ElementGame, AStepReadingFiveValuesIsSettledAtIt) {
  std::uint64_t games = 0;
  for (const kernels::Mode mode : {kRepops, kernels::Mode::kRounded}) {
    const ValueTarget t{"layernorm_backward.dx", kernels::OpKind::kLayerNormBackward, 0, true, 37};
    const std::uint32_t node = NodeOf(TinyModel::kGpt, t.op);
    const std::int64_t v = ReachingValue(TinyModel::kGpt, node, t.slot, t.from, mode);
    const worker::ElementSide side = SideOf(HistoryOf(TinyModel::kGpt, mode), kLieStep, node);
    std::vector<kernels::Shape> shapes;
    for (const kernels::Tensor& in : side.inputs) shapes.push_back(in.shape());
    const verify::ReduceElement el =
        verify::ReduceRuleAt(static_cast<std::uint8_t>(mode), side.op_kind, side.attrs, t.slot, v, shapes)
            .value();
    // The first g·x̂ term step and the final step.
    std::vector<std::uint64_t> wide;
    for (std::uint64_t leaf = 1; leaf <= el.Steps(); ++leaf) {
      const verify::ReduceStep st = verify::ReduceStepAt(el, leaf).value();
      if (verify::StepReads(el, st).size() == verify::kMaxStepReads && (wide.empty() || leaf == el.Steps()))
        wide.push_back(leaf);
    }
    ASSERT_EQ(wide.size(), 2u) << "a g·x̂ term and the final step";
    const vm::Amount bond = 2 * MinimumBond(JobOf(TinyModel::kGpt, mode).job);
    const std::uint64_t required = BondTermsOf(JobOf(TinyModel::kGpt, mode).job).required_tx_bytes;
    for (const std::uint64_t leaf : wide) {
      for (const bool liar_is_solver : {true, false}) {
        PlayValueLie(TinyModel::kGpt, mode, t, node, v, SumsPlan{SumsLie::kDiverge, leaf}, liar_is_solver,
                     bond, required);
        ++games;
      }
    }
  }
  EXPECT_EQ(games, 8u);
}

// A convolution's dW whose partial sums leave the rule right after a
// padding tap (a +0 factor, nothing opened): the walk ends at that step and
// the final move carries no opening for it — it must still reach the chain
// (it once could not be decoded) and the honest party win.
TEST(ElementGame, AStepAtAPaddingTapIsJudgedWithNothingOpened) {
  const std::uint32_t node = NodeOf(TinyModel::kCnn, kernels::OpKind::kConv2dBackward);
  const std::int64_t v = ReachingValue(TinyModel::kCnn, node, 1, 0);
  const worker::ElementSide side = SideOf(HistoryOf(TinyModel::kCnn), kLieStep, node);
  std::vector<kernels::Shape> shapes;
  for (const kernels::Tensor& t : side.inputs) shapes.push_back(t.shape());
  const verify::DotElement el = verify::DotElementAt(side.op_kind, side.attrs, 1, v, shapes).value();
  std::int64_t pad = 0;
  while (pad < el.k && el.BIndex(pad) >= 0) ++pad;
  ASSERT_LT(pad, el.k) << "dW[" << v << "] reads no padding tap";
  for (bool liar_is_solver : {true, false}) {
    SCOPED_TRACE(liar_is_solver ? "solver lies" : "challenger lies");
    ScenarioConfig c;
    c.model = TinyModel::kCnn;
    c.solver_bond = c.challenger_bond = 2 * MinimumBond(JobOf(TinyModel::kCnn).job);
    const ScenarioReport rep = RunLiar(c, {Lie{LieKind::kOneValue, kLieStep, node, 1, v}}, liar_is_solver,
                                       SumsPlan{SumsLie::kDiverge, static_cast<std::uint64_t>(pad) + 1});
    ASSERT_EQ(rep.games.size(), 1u);
    EXPECT_EQ(rep.games[0].game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon);
    EXPECT_EQ(rep.games[0].game.reason, "element-step");
    EXPECT_TRUE(rep.failed_calls.empty()) << rep.failed_calls.front();
  }
}

// Rounded mode settles a convolution's dW at its value (conv2d_backward's
// slot 1: one fp64 sum over image and position, padding taps +0): at the
// epilogue with the log opened, or at a step of sums that leave the rule.
// Rounding absorbs many one-ulp lies downstream, so the liar also plants
// one value of the step's last update, which reaches a checkpoint.
TEST(ElementGame, RoundedConvolutionDWLiesAreCaughtAtTheirValue) {
  const ScenarioConfig base = [] {
    ScenarioConfig c;
    c.model = TinyModel::kCnn;
    c.mode = kernels::Mode::kRounded;
    return c;
  }();
  const TinyJob job = MakeTinyModelJob(base.model, base.steps, base.interval, base.mode, 42, base.hidden);
  auto honest = Train(job, {});
  ASSERT_TRUE(honest.ok()) << honest.status().ToString();
  const auto& records = honest->records[kLieStep];
  std::optional<std::uint32_t> conv;
  std::uint32_t update = 0;
  for (std::uint32_t n = 0; n + 1 < records.size(); ++n) {
    const auto op = static_cast<kernels::OpKind>(records[n].op_kind);
    if (op == kernels::OpKind::kConv2dBackward && !conv) conv = n;
    if (op == kernels::OpKind::kSgd || op == kernels::OpKind::kAdamW) update = n;
  }
  ASSERT_TRUE(conv.has_value());
  ASSERT_LT(*conv, update);
  const std::optional<std::int64_t> update_value = FirstReachingValue(job, *honest, update, 0, 0);
  ASSERT_TRUE(update_value.has_value()) << "no update value reaches a checkpoint";
  const Lie reaching{LieKind::kOneValue, kLieStep, update, 0, *update_value};
  constexpr std::int64_t kValue = 1;
  std::uint64_t games = 0, max_tx = 0;
  for (SumsLie kind : {SumsLie::kHonest, SumsLie::kDiverge, SumsLie::kMadeUp}) {
    const bool liar_is_solver = games % 2 == 0;
    SCOPED_TRACE(std::string("sums ") + std::to_string(static_cast<int>(kind)) +
                 (liar_is_solver ? ", solver lies" : ", challenger lies"));
    ScenarioConfig c = base;
    c.solver_bond = c.challenger_bond = 2 * MinimumBond(job.job);
    const ScenarioReport rep = RunLiar(c, {Lie{LieKind::kOneValue, kLieStep, *conv, 1, kValue}, reaching},
                                       liar_is_solver, SumsPlan{kind, 2});
    ASSERT_EQ(rep.games.size(), 1u);
    const GameReport& gr = rep.games[0];
    EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon)
        << gr.game.reason;
    EXPECT_EQ(gr.game.node_index, *conv);
    ASSERT_TRUE(gr.element.has_value()) << gr.game.reason;
    EXPECT_EQ(gr.element->slot, 1u);
    EXPECT_EQ(gr.element->value, kValue);
    ExpectDecidedBy(gr, false, kind);
    EXPECT_TRUE(rep.failed_calls.empty()) << rep.failed_calls.front();
    max_tx = std::max(max_tx, gr.max_tx_bytes);
    ++games;
  }
  EXPECT_EQ(games, 3u);
  EXPECT_LE(max_tx, kMaxElementTx);
  std::printf("[element-game] rounded conv2d_backward.dW: %llu games, largest tx %llu B\n",
              static_cast<unsigned long long>(games), static_cast<unsigned long long>(max_tx));
}

TEST(ElementGame, LyingChallengerLosesToAnHonestSolver) {
  const Target& dw = kTargets[2];
  const std::int64_t v = ReachingValue(dw, 5);
  for (SumsLie kind : {SumsLie::kHonest, SumsLie::kDiverge}) {
    const Game g = Play(dw, v, /*liar_is_solver=*/false, SumsPlan{kind, 3});
    ExpectCaughtAt(g, dw, v, false);
    EXPECT_LT(g.report.net.at("challenger0"), 0);
  }
  const Target& relu = kTargets[3];
  const std::int64_t r = ReachingValue(relu, 0);
  ExpectCaughtAt(Play(relu, r, false, {}), relu, r, false);
  // The reduction rule: a challenger lying about a bias gradient, with the
  // true sums (epilogue) or made-up ones (one addition), loses.
  const Target& db = kTargets[5];
  const std::int64_t b = ReachingValue(db, 0);
  for (SumsLie kind : {SumsLie::kHonest, SumsLie::kMadeUp}) {
    const Game g = Play(db, b, /*liar_is_solver=*/false, SumsPlan{kind, 2});
    ExpectCaughtAt(g, db, b, false);
    EXPECT_EQ(g.report.games.at(0).game.reason,
              kind == SumsLie::kHonest ? "element-epilogue" : "element-step");
    EXPECT_LT(g.report.net.at("challenger0"), 0);
  }
}

TEST(ElementGame, SilenceInTheChunkWalkOrThePartialWalkLosesByTimeout) {
  const Target& dx = kTargets[1];
  const std::int64_t v = ReachingValue(dx, 3);
  // The cheating solver stops in level 4.
  Game g = Play(dx, v, true, SumsPlan{SumsLie::kDiverge, 1}, GamePhase::kChunkWalk);
  ASSERT_TRUE(g.played);
  EXPECT_EQ(g.report.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(g.report.games[0].game.reason, "timeout");
  // The cheating solver stops in level 5b.
  g = Play(dx, v, true, SumsPlan{SumsLie::kDiverge, 1}, GamePhase::kPartialsWalk);
  ASSERT_TRUE(g.played);
  EXPECT_EQ(g.report.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(g.report.games[0].game.reason, "timeout");
  ASSERT_TRUE(g.report.games[0].element.has_value());
  // An honest solver that stops answering in level 5b loses too: the clock
  // does not care who is right.
  g = Play(dx, v, false, SumsPlan{SumsLie::kDiverge, 1}, std::nullopt, GamePhase::kPartialsWalk);
  ASSERT_TRUE(g.played);
  EXPECT_EQ(g.report.games[0].game.result, GameResult::kChallengerWon);
  EXPECT_EQ(g.report.games[0].game.reason, "timeout");
}

// Drives a game to `phase` and returns the driver there.
struct Poker {
  ScenarioDriver d;
  explicit Poker(const ScenarioConfig& c) : d(c) { d.Start(); }
  referee::Game Game() {
    auto g = referee::ReadGame(d.chain().store(), d.game_ids().at(0));
    EXPECT_TRUE(g.ok());
    return *g;
  }
  bool StepTo(GamePhase phase) {
    for (int i = 0; i < 200; ++i) {
      if (Game().phase == phase) return true;
      if (!d.Step()) return false;
    }
    return false;
  }
  vm::Receipt Send(std::size_t agent, Method m, const Bytes& args) {
    return d.chain().Run(
        d.chain().Call(d.key(agent), referee::kRefereeContractId, static_cast<std::uint16_t>(m), args));
  }
};

// A game a test pokes moves into: the solver lies at value v of t and
// descends with `sums`; the honest challenger answers the element level
// (never arbitrating whole); clocks long enough for the refused moves.
ScenarioConfig PokedGame(const Target& t, std::int64_t v, SumsPlan sums, kernels::Mode mode = kRepops) {
  ScenarioConfig c = WideConfig(mode);
  c.clock_budget = 20;  // the refused moves take blocks
  c.solver.lies = {Lie{LieKind::kOneValue, kLieStep, NodeOf(t), t.slot, v}};
  c.solver.element_level = true;
  c.solver.sums = sums;
  AgentPlan honest;
  honest.arbitrates = false;
  c.challengers = {honest};
  return c;
}

TEST(ElementGame, MalformedMovesAreRefusedAndCostOnlyTheirFee) {
  const Target& dx = kTargets[1];
  const ScenarioConfig c = PokedGame(dx, ReachingValue(dx, 7), {SumsLie::kDiverge, 2});
  Poker p(c);
  ASSERT_TRUE(p.StepTo(GamePhase::kChunkRoots));
  const std::uint64_t id = p.d.game_ids().at(0);
  const worker::ElementSide side = SideOf(p.d.history(2), kLieStep, NodeOf(dx));
  auto root = node::ChunkRootMove(ChunkTreeFor(side, dx.slot), id);
  // A root that is not the record's output hash.
  auto bad_root = root;
  bad_root.root.bytes[0] ^= 1;
  const auto before = p.Game();
  vm::Receipt r = p.Send(2, Method::kPostChunkRoot, EncodeToBytes(bad_root));
  EXPECT_EQ(r.reason, "elem-bad-top");
  // Another output's root (slot 1: dW) under a top that matches it.
  auto other = node::ChunkRootMove(ChunkTreeFor(side, 1), id);
  r = p.Send(2, Method::kPostChunkRoot, EncodeToBytes(other));
  EXPECT_FALSE(r.success);
  EXPECT_TRUE(r.reason == "elem-bad-top" || r.reason == "elem-bad-chunk-root") << r.reason;
  EXPECT_EQ(p.Game().phase, before.phase) << "a refused move changes nothing";
  // A truncated argument.
  Bytes cut = EncodeToBytes(root);
  cut.resize(cut.size() - 3);
  EXPECT_EQ(p.Send(2, Method::kPostChunkRoot, cut).reason, "referee-malformed-args");
  // A chunk of more than 256 values is refused by the decoder.
  referee::RevealChunkArgs huge{id, kernels::OpenChunk(side.outputs[0], 0, 1)};
  huge.chunk.values.resize(300, 1.0f);
  EXPECT_EQ(p.Send(2, Method::kRevealChunk, EncodeToBytes(huge)).reason, "referee-malformed-args");
  // Out of phase.
  EXPECT_EQ(
      p.Send(2, Method::kPostPartialsRoot,
             EncodeToBytes(node::PartialsRootMove(PartialsFor(c.mode, side, dx.slot, 0, std::nullopt), id)))
          .reason,
      "game-wrong-phase");

  // The chunk reveal: a chunk of the wrong position.
  ASSERT_TRUE(p.StepTo(GamePhase::kChunkReveal));
  auto e = referee::ReadElementGame(p.d.chain().store(), id);
  ASSERT_TRUE(e.ok() && e->has_value());
  const std::uint64_t wrong = (*e)->chunk == 0 ? 1 : 0;
  if (static_cast<std::int64_t>(wrong) < kernels::ChunkCount(side.outputs[0].numel())) {
    r = p.Send(2, Method::kRevealChunk, EncodeToBytes(Must(node::RevealChunkMove(side, id, dx.slot, wrong))));
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.reason.rfind("chunk-bad", 0), 0u) << r.reason;
  }
  // Partial sums whose first leaf is not +0.
  ASSERT_TRUE(p.StepTo(GamePhase::kPartialsRoots));
  e = referee::ReadElementGame(p.d.chain().store(), id);
  std::vector<float> sums = worker::AnswerPartials<float>(side, dx.slot, (*e)->value).value().partials.All();
  sums[0] = 1.0f;
  const worker::DotPartialsAnswer bad = worker::PartialsAnswerOf(verify::DotElement{}, sums, std::nullopt);
  EXPECT_EQ(p.Send(2, Method::kPostPartialsRoot, EncodeToBytes(node::PartialsRootMove(bad, id))).reason,
            "elem-bad-partials");

  // The final step: a forged factor.
  ASSERT_TRUE(p.StepTo(GamePhase::kStepReveal));
  e = referee::ReadElementGame(p.d.chain().store(), id);
  const worker::DotPartialsAnswer mine = PartialsFor(c.mode, side, dx.slot, (*e)->value, std::nullopt);
  auto step = Must(node::RevealStepMove(side, mine, **e, id, 1));
  step.a.chunk.values[0] += 1.0f;
  r = p.Send(2, Method::kRevealStep, EncodeToBytes(step));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason.rfind("chunk-bad", 0), 0u) << r.reason;
  // The factors' inputs, one missing or one named wrong.
  ASSERT_FALSE(step.inputs.empty());
  auto missing = step;
  missing.inputs.pop_back();
  EXPECT_EQ(p.Send(2, Method::kRevealStep, EncodeToBytes(missing)).reason, "elem-bad-inputs");
  auto renamed = step;
  renamed.inputs[0].input += 1;
  EXPECT_EQ(p.Send(2, Method::kRevealStep, EncodeToBytes(renamed)).reason, "elem-bad-inputs");
  // The reduction rule's final move in a dot game.
  referee::RevealReduceStepArgs wrong_rule;
  wrong_rule.game_id = id;
  wrong_rule.next_proof = worker::TreeOf(mine).Prove(1);
  wrong_rule.left_proof = worker::TreeOf(mine).Prove(0);
  EXPECT_EQ(p.Send(2, Method::kRevealReduceStep, EncodeToBytes(wrong_rule)).reason, "elem-wrong-rule");
  // A non-party cannot move.
  EXPECT_EQ(p.Send(0, Method::kRevealStep, EncodeToBytes(Must(node::RevealStepMove(side, mine, **e, id, 1))))
                .reason,
            "game-not-a-party");

  // The honest challenger still wins, whatever was refused on the way.
  while (p.d.Step()) {
  }
  const ScenarioReport rep = p.d.Finish();
  ASSERT_EQ(rep.games.size(), 1u);
  EXPECT_EQ(rep.games[0].game.result, GameResult::kChallengerWon) << rep.games[0].game.reason;
  EXPECT_EQ(rep.games[0].game.reason, "element-step");
}

// A game's partial results are the job mode's (verify::CheckLeafKind), for
// the dot rule (dx) and the reduction rule (db) alike: exact sums in a
// repops game and fp32 sums in a certified one are refused at the root and
// at the step, as is a second operand leaf on a certified sum's step; the
// honest party still wins.
TEST(ElementGame, EachModePostsItsOwnKindOfPartialSums) {
  for (const Target* t : {&kTargets[1], &kTargets[5]}) {
    for (kernels::Mode mode : {kRepops, kCertified}) {
      SCOPED_TRACE(std::string(t->name) + " " + std::string(kernels::ModeName(mode)));
      const kernels::Mode other = mode == kRepops ? kCertified : kRepops;
      Poker p(PokedGame(*t, ReachingValue(*t, 7, mode), {SumsLie::kDiverge, 2}, mode));
      ASSERT_TRUE(p.StepTo(GamePhase::kPartialsRoots));
      const std::uint64_t id = p.d.game_ids().at(0);
      const worker::ElementSide side = SideOf(p.d.history(2), kLieStep, NodeOf(*t));
      auto e = referee::ReadElementGame(p.d.chain().store(), id);
      ASSERT_TRUE(e.ok() && e->has_value());
      const bool reduce = (*e)->kind == verify::ElementKind::kReduce;
      ASSERT_EQ(reduce, t == &kTargets[5]);
      const std::int64_t v = (*e)->value;
      const worker::DotPartialsAnswer wrong_dot =
          reduce ? worker::DotPartialsAnswer{} : PartialsFor(other, side, t->slot, v, std::nullopt);
      const worker::ReduceRuleAnswer wrong_sum =
          reduce ? ReducePartialsFor(other, side, t->slot, v, std::nullopt) : worker::ReduceRuleAnswer{};
      const referee::PartialsRootArgs root =
          reduce ? node::PartialsRootMove(wrong_sum, id) : node::PartialsRootMove(wrong_dot, id);
      EXPECT_EQ(p.Send(2, Method::kPostPartialsRoot, EncodeToBytes(root)).reason, "elem-wrong-leaf");
      auto after = referee::ReadElementGame(p.d.chain().store(), id);
      ASSERT_TRUE(after.ok() && after->has_value());
      EXPECT_EQ(**after, **e) << "a refused move changes nothing";
      ASSERT_TRUE(p.StepTo(GamePhase::kStepReveal));
      e = referee::ReadElementGame(p.d.chain().store(), id);
      ASSERT_TRUE(e.ok() && e->has_value());
      if (!reduce) {
        EXPECT_EQ(p.Send(2, Method::kRevealStep,
                         EncodeToBytes(Must(node::RevealStepMove(side, wrong_dot, **e, id, 1))))
                      .reason,
                  "elem-wrong-leaf");
      } else {
        EXPECT_EQ(p.Send(2, Method::kRevealReduceStep,
                         EncodeToBytes(Must(node::RevealReduceStepMove(side, wrong_sum, **e, id, 1))))
                      .reason,
                  "elem-wrong-leaf");
        if (mode == kCertified) {
          const worker::ReduceRuleAnswer mine = ReducePartialsFor(mode, side, t->slot, v, std::nullopt);
          referee::RevealReduceStepArgs two = Must(node::RevealReduceStepMove(side, mine, **e, id, 1));
          ASSERT_FALSE(two.right.has_value());
          two.right = std::make_pair(two.left, two.left_proof);
          EXPECT_EQ(p.Send(2, Method::kRevealReduceStep, EncodeToBytes(two)).reason, "elem-bad-step");
        }
      }
      auto unchanged = referee::ReadElementGame(p.d.chain().store(), id);
      ASSERT_TRUE(unchanged.ok() && unchanged->has_value());
      EXPECT_EQ(**unchanged, **e) << "a refused move changes nothing";
      while (p.d.Step()) {
      }
      const ScenarioReport r = p.d.Finish();
      EXPECT_EQ(r.games.at(0).game.result, GameResult::kChallengerWon);
      EXPECT_EQ(r.games.at(0).game.reason, "element-step");
    }
  }
}

// The assemble node's final move opens exactly what leaf k must be: another
// input, the header where a tensor's hash is disputed, chunks, or a forged
// hash are refused and change nothing; the honest opening then decides.
TEST(ElementGame, MalformedStateLeafOpeningsAreRefused) {
  ScenarioConfig c = WideConfig();
  c.clock_budget = 20;  // the refused moves below take blocks
  constexpr std::int64_t kLeaf = 1;
  c.solver.lies = {Lie{LieKind::kStateLeaf, 2, 0, 0, kLeaf}};
  c.solver.element_level = true;
  AgentPlan honest;
  honest.element_level = true;
  c.challengers = {honest};
  Poker p(c);
  ASSERT_TRUE(p.StepTo(GamePhase::kOpenElement));
  const referee::Game g = p.Game();
  const std::uint64_t id = p.d.game_ids().at(0);
  auto e = referee::ReadElementGame(p.d.chain().store(), id);
  ASSERT_TRUE(e.ok() && e->has_value());
  ASSERT_EQ((*e)->kind, verify::ElementKind::kState);
  ASSERT_EQ((*e)->chunk, static_cast<std::uint64_t>(kLeaf));
  const History& h = p.d.history(2);
  const vm::ArbitrationPayload payload = Must(DecodeExact<vm::ArbitrationPayload>(
      MakeArbitrate(WideJob(), h, h, id, 1, g.step, g.node_index).payload));
  const referee::OpenElementArgs right = Must(node::OpenStateLeafMove(payload, kLeaf, id, 1));
  ASSERT_EQ(right.inputs.size(), 1u);
  const referee::OpenElementArgs wrong_input = Must(node::OpenStateLeafMove(payload, kLeaf + 1, id, 1));
  EXPECT_EQ(p.Send(2, Method::kOpenElement, EncodeToBytes(wrong_input)).reason, "elem-bad-inputs");
  const referee::OpenElementArgs header =
      Must(node::OpenStateLeafMove(payload, payload.inputs.size(), id, 1));
  ASSERT_TRUE(header.batch.has_value());
  referee::OpenElementArgs both = right;
  both.batch = header.batch;
  EXPECT_EQ(p.Send(2, Method::kOpenElement, EncodeToBytes(both)).reason, "elem-bad-inputs");
  referee::OpenElementArgs chunks = right;
  chunks.slices = {{kernels::OpenChunk(h.states[0][0], 0, 1)}};
  EXPECT_EQ(p.Send(2, Method::kOpenElement, EncodeToBytes(chunks)).reason, "elem-bad-inputs");
  referee::OpenElementArgs forged = right;
  forged.inputs[0].tensor_hash.bytes[0] ^= 1;
  const vm::Receipt r = p.Send(2, Method::kOpenElement, EncodeToBytes(forged));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason.rfind("arb-bad-", 0), 0u) << r.reason;
  EXPECT_EQ(p.Game().phase, GamePhase::kOpenElement) << "a refused move changes nothing";

  while (p.d.Step()) {
  }
  const ScenarioReport rep = p.d.Finish();
  ASSERT_EQ(rep.games.size(), 1u);
  EXPECT_EQ(rep.games[0].game.result, GameResult::kChallengerWon) << rep.games[0].game.reason;
  EXPECT_EQ(rep.games[0].game.reason, "element-state-leaf");
}

// The reduction rule's final move: a forged term value or a dot move is
// refused and changes nothing; the honest moves then decide.
TEST(ElementGame, ForgedReduceStepsAreRefused) {
  const Target& db = kTargets[5];
  Poker p(PokedGame(db, ReachingValue(db, 0), {SumsLie::kMadeUp, 1}));
  ASSERT_TRUE(p.StepTo(GamePhase::kStepReveal));
  const std::uint64_t id = p.d.game_ids().at(0);
  const worker::ElementSide side = SideOf(p.d.history(2), kLieStep, NodeOf(db));
  auto e = referee::ReadElementGame(p.d.chain().store(), id);
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->kind, verify::ElementKind::kReduce);
  const worker::ReduceRuleAnswer mine =
      ReducePartialsFor(kernels::Mode::kRepops, side, db.slot, (*e)->value, std::nullopt);
  auto step = Must(node::RevealReduceStepMove(side, mine, **e, id, 1));
  ASSERT_FALSE(step.reads.empty()) << "the first differing leaf is a term step";
  auto forged = step;
  forged.reads[0].chunk.values[0] = std::nextafter(forged.reads[0].chunk.values[0], INFINITY);
  vm::Receipt r = p.Send(2, Method::kRevealReduceStep, EncodeToBytes(forged));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason.rfind("chunk-bad", 0), 0u) << r.reason;
  // The term's inputs, one too many or one named wrong.
  forged = step;
  forged.inputs.push_back(forged.inputs.empty() ? verify::InputHashOpening{} : forged.inputs.back());
  EXPECT_EQ(p.Send(2, Method::kRevealReduceStep, EncodeToBytes(forged)).reason, "elem-bad-inputs");
  if (!step.inputs.empty()) {
    forged = step;
    forged.inputs[0].input += 1;
    EXPECT_EQ(p.Send(2, Method::kRevealReduceStep, EncodeToBytes(forged)).reason, "elem-bad-inputs");
  }
  // A leaf m+1 that is not under the poster's root.
  forged = step;
  forged.next = std::nextafter(std::get<float>(forged.next), INFINITY);
  EXPECT_EQ(p.Send(2, Method::kRevealReduceStep, EncodeToBytes(forged)).reason, "elem-bad-step");
  // The dot rule's move in a reduction game.
  referee::RevealStepArgs dot;
  dot.game_id = id;
  dot.p_m_proof = worker::TreeOf(mine).Prove(0);
  dot.next_proof = worker::TreeOf(mine).Prove(1);
  dot.a = dot.b = verify::OpenValue(side.outputs[0], 0);
  EXPECT_EQ(p.Send(2, Method::kRevealStep, EncodeToBytes(dot)).reason, "elem-wrong-rule");
  EXPECT_EQ(p.Game().phase, GamePhase::kStepReveal);
  while (p.d.Step()) {
  }
  const ScenarioReport rep = p.d.Finish();
  EXPECT_EQ(rep.games.at(0).game.reason, "element-step");
  EXPECT_EQ(rep.games.at(0).game.result, GameResult::kChallengerWon);
}

TEST(ElementGame, DisabledOnAChainThatDoesNotPlayIt) {
  const Target& dx = kTargets[1];
  ScenarioConfig c = WideConfig();
  c.element_level_enabled = false;
  c.solver.lies = {Lie{LieKind::kOneValue, kLieStep, NodeOf(dx), dx.slot, ReachingValue(dx, 0)}};
  c.challengers = {AgentPlan{}};
  Poker p(c);
  ASSERT_TRUE(p.StepTo(GamePhase::kArbitration));
  const worker::ElementSide side = SideOf(p.d.history(2), kLieStep, NodeOf(dx));
  EXPECT_EQ(p.Send(2, Method::kPostChunkRoot,
                   EncodeToBytes(node::ChunkRootMove(ChunkTreeFor(side, 0), p.d.game_ids().at(0))))
                .reason,
            "elem-disabled");
  while (p.d.Step()) {
  }
  EXPECT_EQ(p.d.Finish().games.at(0).game.reason, "arbitration");
}

// The rule the job's mode plays for the target's values (the same for all
// of an output); nullopt when it plays none and the node is arbitrated whole.
std::optional<verify::ElementKind> RuleOf(const Target& t, kernels::Mode mode = kRepops) {
  auto graph = verify::KernelsGraphSource().Build(WideJob(mode).job, kLieStep);
  EXPECT_TRUE(graph.ok());
  const verify::NodeSpec& node = graph->nodes.at(NodeOf(t));
  auto shapes = verify::NodeInputShapes(*graph, node);
  EXPECT_TRUE(shapes.ok());
  auto choice = verify::ChooseElementRule(static_cast<std::uint8_t>(mode), node.op_kind, node.attrs, t.slot,
                                          0, node.inputs, *shapes);
  if (!choice.ok()) {
    EXPECT_EQ(choice.status().reason(), "elem-mode-no-rule") << t.name;
    return std::nullopt;
  }
  return choice->kind;
}

constexpr kernels::Mode kRounded = kernels::Mode::kRounded;

// One line per game of a mode's table of cheats.
void PrintElementGame(const char* mode, const Target& t, SumsLie sums, const GameReport& gr) {
  std::printf("[element-game] %s %-20s sums %d: %llu element txs, largest %llu B, final move %llu gas, %s\n",
              mode, t.name, static_cast<int>(sums), static_cast<unsigned long long>(gr.element_txs),
              static_cast<unsigned long long>(gr.max_tx_bytes),
              static_cast<unsigned long long>(gr.resolving_gas), gr.game.reason.c_str());
}

// Rounded mode plays the pointwise rule of the element-wise operators, which
// are exact in fp64 (no log entry can change their values), the dot rule
// of linear and matmul — fp64 partial results (the dot product and both
// squared norms), the epilogue rounding p_K by the log's entry at the value,
// opened against the node's log hash that the descent fixed — and the
// reduction rule over fp64 sums (db, the cross-entropy gradient), whose
// epilogue opens the log too (τ applies to db: linear_backward is not exact
// in fp64). Each target's one-ulp lie, told by the solver and the
// challenger in turn, with honest sums (the epilogue decides), sums one
// fp64 ulp off at a step and following the rule after, or made-up sums (a
// step decides).
// Rounding every node's fp64 result absorbs many one-ulp lies downstream (a
// logit's, in the softmax), so the liar also plants one SGD value that does
// reach a checkpoint; the node walk stops at the target first.
// A rounded liar's lies: one ulp at value v of t, and (unless t is the SGD
// update itself, then at a reaching value of it) one SGD value that reaches
// a checkpoint. The first lie's value is where the game must end.
std::vector<Lie> RoundedLies(const Target& t, std::int64_t v) {
  const Target& sgd = kTargets[4];
  static const Lie reaching{LieKind::kOneValue, kLieStep, NodeOf(sgd), sgd.slot,
                            ReachingValue(sgd, 0, kRounded)};
  if (&t == &sgd) return {reaching};
  EXPECT_LT(NodeOf(t), NodeOf(sgd)) << t.name;
  return {Lie{LieKind::kOneValue, kLieStep, NodeOf(t), t.slot, v}, reaching};
}

TEST(ElementGame, RoundedLiesAreCaughtAtTheirValue) {
  std::size_t round = 0;
  std::uint64_t max_tx = 0;
  for (const Target& t : kTargets) {
    const std::optional<verify::ElementKind> rule = RuleOf(t, kRounded);
    const bool element_wise = t.op == kernels::OpKind::kRelu || t.op == kernels::OpKind::kSgd;
    const bool dot =
        t.op == kernels::OpKind::kLinear || (t.op == kernels::OpKind::kLinearBackward && t.slot < 2);
    ASSERT_TRUE(rule.has_value()) << t.name << ": every value of the MLP has a rounded rule";
    EXPECT_EQ(*rule, element_wise ? verify::ElementKind::kPlan
                     : dot        ? verify::ElementKind::kDot
                                  : verify::ElementKind::kReduce)
        << t.name;
    const std::vector<Lie> lies = RoundedLies(t, NumelOf(t) / 2);
    const std::int64_t at = lies[0].value;
    std::vector<SumsLie> kinds = {SumsLie::kHonest};
    if (!element_wise) kinds = {SumsLie::kHonest, SumsLie::kDiverge, SumsLie::kMadeUp};
    for (SumsLie sums : kinds) {
      const bool liar_is_solver = round++ % 2 == 0;
      SCOPED_TRACE(std::string(t.name) + " value " + std::to_string(at) + " sums " +
                   std::to_string(static_cast<int>(sums)) +
                   (liar_is_solver ? ", solver lies" : ", challenger lies"));
      const Game g =
          PlayLies(lies, liar_is_solver, SumsPlan{sums, 2}, std::nullopt, std::nullopt, true, kRounded);
      ExpectCaughtAt(g, t, at, liar_is_solver);
      if (!g.played) continue;
      const GameReport& gr = g.report.games.at(0);
      ExpectDecidedBy(gr, element_wise, sums);
      max_tx = std::max(max_tx, gr.max_tx_bytes);
      PrintElementGame("rounded", t, sums, gr);
    }
  }
  EXPECT_EQ(round, 23u);
  EXPECT_LE(max_tx, kMaxElementTx);
}

// A descent into a rounded job's logged node carries the node's committed
// log hash, proven up to the commitment's log root; without it, or with a
// hash the chain does not prove, the move is refused and changes nothing.
// With it the descent starts (db: the reduction rule) and the daemons play
// the game to its epilogue.
TEST(ElementGame, ARoundedDescentCarriesTheNodesCommittedLog) {
  const Target& db = kTargets[5];
  ScenarioConfig c = WideConfig(kRounded);
  c.solver.lies = {Lie{LieKind::kOneValue, kLieStep, NodeOf(db), db.slot, ReachingValue(db, 0, kRounded)}};
  c.challengers = {AgentPlan{}};
  Poker p(c);
  ASSERT_TRUE(p.StepTo(GamePhase::kArbitration));
  const std::uint64_t id = p.d.game_ids().at(0);
  const worker::ElementSide side = SideOf(p.d.history(2), kLieStep, NodeOf(db));
  const referee::NodeLogProof log = NodeLogProofOf(p.d.history(1), kLieStep, NodeOf(db));
  const auto descend = [&](std::optional<referee::NodeLogProof> with) {
    return p
        .Send(2, Method::kPostChunkRoot,
              EncodeToBytes(node::ChunkRootMove(ChunkTreeFor(side, db.slot), id, with)))
        .reason;
  };
  EXPECT_EQ(descend(std::nullopt), "elem-bad-log");
  referee::NodeLogProof forged = log;
  forged.log_hash.bytes[0] ^= 1;
  EXPECT_EQ(descend(forged), "arb-bad-log-proof");
  forged = log;
  forged.chain.step_log_root.bytes[0] ^= 1;
  EXPECT_EQ(descend(forged), "arb-bad-log-proof");
  EXPECT_EQ(p.Game().phase, GamePhase::kArbitration);
  EXPECT_EQ(descend(log), "");
  EXPECT_EQ(p.Game().phase, GamePhase::kChunkRoots);
  while (p.d.Step()) {
  }
  const GameReport gr = p.d.Finish().games.at(0);
  EXPECT_EQ(gr.game.reason, "element-epilogue");
  EXPECT_EQ(gr.game.result, GameResult::kChallengerWon);
}

// The second chunk root of a rounded descent may carry the node's log too
// (both parties may descend in one block), but only the log that was fixed.
TEST(ElementGame, ASecondRoundedChunkRootCarriesOnlyTheFixedLog) {
  const Target& dx = kTargets[1];
  ScenarioConfig c = WideConfig(kRounded);
  c.clock_budget = 20;
  c.solver.lies = RoundedLies(dx, 5);
  c.challengers = {AgentPlan{}};  // arbitrates whole unless poked: the test descends for it
  Poker p(c);
  ASSERT_TRUE(p.StepTo(GamePhase::kArbitration));
  const std::uint64_t id = p.d.game_ids().at(0);
  const referee::NodeLogProof log = NodeLogProofOf(p.d.history(1), kLieStep, NodeOf(dx));
  const auto descend = [&](std::size_t agent, std::optional<referee::NodeLogProof> with) {
    const worker::ElementSide side = SideOf(p.d.history(agent), kLieStep, NodeOf(dx));
    return p.Send(agent, Method::kPostChunkRoot,
                  EncodeToBytes(node::ChunkRootMove(ChunkTreeFor(side, dx.slot), id, std::move(with))));
  };
  const vm::Receipt first = descend(2, log);
  ASSERT_TRUE(first.success) << first.reason;
  EXPECT_EQ(p.Game().phase, GamePhase::kChunkRoots);
  referee::NodeLogProof other = log;
  other.log_hash.bytes[0] ^= 1;
  EXPECT_EQ(descend(1, other).reason, "elem-bad-log");
  const vm::Receipt second = descend(1, log);
  EXPECT_TRUE(second.success) << second.reason;
  EXPECT_NE(p.Game().phase, GamePhase::kChunkRoots) << "both roots posted: the chunk walk began";
}

// A rounded game whose liar's record of the relu names another log hash
// (the outputs agree); the liar also plants one SGD value so a checkpoint
// differs, and the node walk stops at the relu first.
ScenarioConfig LogHashLie(bool liar_is_solver) {
  const Target& relu = kTargets[3];
  const Target& sgd = kTargets[4];
  ScenarioConfig c = WideConfig(kRounded);
  AgentPlan liar, honest;
  liar.lies = {Lie{LieKind::kLogHash, kLieStep, NodeOf(relu)},
               Lie{LieKind::kOneValue, kLieStep, NodeOf(sgd), sgd.slot, ReachingValue(sgd, 0, kRounded)}};
  liar.element_level = honest.element_level = true;
  c.solver = liar_is_solver ? liar : honest;
  c.challengers = {liar_is_solver ? honest : liar};
  return c;
}

// Records that differ in their log hash alone are settled by the descent's
// log: the record that names another log hash loses at once, whoever wrote
// it.
TEST(ElementGame, ARecordNamingAnotherLogHashLosesWhenTheDescentFixesTheLog) {
  const Target& relu = kTargets[3];
  for (const bool liar_is_solver : {true, false}) {
    SCOPED_TRACE(liar_is_solver ? "solver lies" : "challenger lies");
    const ScenarioConfig c = LogHashLie(liar_is_solver);
    Poker p(c);
    ASSERT_TRUE(p.StepTo(GamePhase::kArbitration));
    ASSERT_EQ(p.Game().node_index, NodeOf(relu));
    const std::size_t sender = liar_is_solver ? 2 : 1;  // the honest party descends
    const worker::ElementSide side = SideOf(p.d.history(sender), kLieStep, NodeOf(relu));
    const referee::NodeLogProof log = NodeLogProofOf(p.d.history(1), kLieStep, NodeOf(relu));
    const vm::Receipt r =
        p.Send(sender, Method::kPostChunkRoot,
               EncodeToBytes(node::ChunkRootMove(ChunkTreeFor(side, 0), p.d.game_ids().at(0), log)));
    EXPECT_TRUE(r.success) << r.reason;
    const referee::Game g = p.Game();
    EXPECT_EQ(g.phase, GamePhase::kResolved);
    EXPECT_EQ(g.reason, "element-log-hash");
    EXPECT_EQ(g.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon);
  }
}

// Left to themselves, the parties descend where the daemons do
// (node::PlanDescent): records that differ in their log hash alone are
// settled by the descent's log, never sent whole — a large node's inputs
// may not fit one transaction. The plan itself: slot 0 with the log in a
// rounded job; in another mode the records cannot differ so, and
// StartDescent's "elem-same-outputs" stands.
TEST(ElementGame, TheHonestPartyDescendsWhenRecordsDifferInTheirLogHashAlone) {
  const Target& relu = kTargets[3];
  for (const bool liar_is_solver : {true, false}) {
    SCOPED_TRACE(liar_is_solver ? "solver lies" : "challenger lies");
    const ScenarioConfig c = LogHashLie(liar_is_solver);
    const ScenarioReport r = RunScenario(c);
    ASSERT_EQ(r.games.size(), 1u);
    const GameReport& gr = r.games[0];
    EXPECT_EQ(gr.game.reason, "element-log-hash");
    EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon);
    EXPECT_EQ(gr.game.node_index, NodeOf(relu));
    EXPECT_EQ(gr.arbitration_bytes, 0u) << "nothing was sent whole";
  }
  protocol::NodeRecord a;
  a.op_kind = static_cast<std::uint16_t>(kernels::OpKind::kRelu);
  a.output_hashes = {Hash256{}};
  a.log_hash.bytes[0] = 1;
  protocol::NodeRecord b = a;
  b.log_hash.bytes[0] = 2;
  auto graph = verify::KernelsGraphSource().Build(WideJob(kRounded).job, kLieStep);
  ASSERT_TRUE(graph.ok());
  const auto plan = node::PlanDescent(static_cast<std::uint8_t>(kRounded), *graph, NodeOf(relu), a, b);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->log_alone);
  EXPECT_EQ(plan->slot, 0u);
  EXPECT_EQ(
      node::PlanDescent(static_cast<std::uint8_t>(kRepops), *graph, NodeOf(relu), a, b).status().reason(),
      "elem-same-outputs");
}

// A solver whose log has an entry the acceptance rule refuses (the value
// there rounded the other way) loses at that value's epilogue: the final
// move opens the entry against the committed log, and the rule rejects it.
TEST(ElementGame, ARejectedLogEntryLosesTheSolverAtItsValue) {
  const Target& y = kTargets[0];
  const Target& sgd = kTargets[4];
  ScenarioConfig c = WideConfig(kRounded);
  // The logits' flipped value is absorbed downstream: an SGD value reaches a checkpoint.
  c.solver.lies = {Lie{LieKind::kLog, kLieStep, NodeOf(y)},
                   Lie{LieKind::kOneValue, kLieStep, NodeOf(sgd), sgd.slot, ReachingValue(sgd, 0, kRounded)}};
  c.solver.element_level = true;
  c.challengers = {AgentPlan{}};
  c.challengers[0].element_level = true;
  const ScenarioReport r = RunScenario(c);
  ASSERT_EQ(r.games.size(), 1u);
  const GameReport& gr = r.games[0];
  EXPECT_TRUE(r.failed_calls.empty()) << r.failed_calls.front();
  EXPECT_EQ(gr.game.node_index, NodeOf(y));
  ASSERT_TRUE(gr.element.has_value()) << "the element level was played";
  EXPECT_EQ(gr.game.reason, "element-log-rejected");
  EXPECT_EQ(gr.game.result, GameResult::kChallengerWon);
  EXPECT_EQ(r.bounty.state, referee::BountyState::kFailed);
  EXPECT_LE(gr.max_tx_bytes, kMaxElementTx);
}

// Certified mode: the dot rule and the sums (db; the cross-entropy
// gradient's rows: a max, an exact sum, a final step) bisect exact partial
// sums (82-byte leaves, verify::PartialLeaf), the pointwise rule re-executes
// the certified kernels. Every target's one-ulp lie,
// told by either side in turn, with honest sums (the epilogue decides), sums
// nudged by an exact 2^-140 and following the rule after, or made-up sums
// (a step decides).
TEST(ElementGame, CertifiedLiesAreCaughtAtTheirValueOverExactSums) {
  std::size_t round = 0, element_games = 0;
  std::uint64_t max_tx = 0;
  for (const Target& t : kTargets) {
    const std::optional<verify::ElementKind> rule = RuleOf(t, kCertified);
    ASSERT_TRUE(rule.has_value()) << t.name << ": every target is played at the element level";
    const std::int64_t v = ReachingValue(t, NumelOf(t) / 2, kCertified);
    std::vector<SumsLie> kinds = {SumsLie::kHonest};
    if (rule == verify::ElementKind::kDot || rule == verify::ElementKind::kReduce)
      kinds = {SumsLie::kHonest, SumsLie::kDiverge, SumsLie::kMadeUp};
    for (SumsLie sums : kinds) {
      const bool liar_is_solver = round++ % 2 == 0;
      SCOPED_TRACE(std::string(t.name) + " value " + std::to_string(v) + " sums " +
                   std::to_string(static_cast<int>(sums)) +
                   (liar_is_solver ? ", solver lies" : ", challenger lies"));
      const Game g =
          Play(t, v, liar_is_solver, SumsPlan{sums, 2}, std::nullopt, std::nullopt, true, kCertified);
      ASSERT_TRUE(g.played);
      const GameReport& gr = g.report.games.at(0);
      ExpectCaughtAt(g, t, v, liar_is_solver);
      ExpectDecidedBy(gr, rule == verify::ElementKind::kPlan, sums);
      max_tx = std::max(max_tx, gr.max_tx_bytes);
      ++element_games;
      PrintElementGame("certified", t, sums, gr);
    }
  }
  EXPECT_EQ(element_games, 23u);
  EXPECT_LE(max_tx, kMaxElementTx);
}

// The loss: consumed by nothing (the backward starts from dloss = 1), so a
// lie in it alone changes no checkpoint. A liar whose step also differs
// later (one value of the SGD update) is walked to the loss first.
const Target kLoss{"cross_entropy", kernels::OpKind::kCrossEntropy, 0, "element-epilogue", true};
std::vector<Lie> LossLies(kernels::Mode mode = kRepops) {
  const Target& sgd = kTargets[4];
  EXPECT_LT(NodeOf(kLoss), NodeOf(sgd));
  return {Lie{LieKind::kOneValue, kLieStep, NodeOf(kLoss), 0, 0},
          Lie{LieKind::kOneValue, kLieStep, NodeOf(sgd), sgd.slot, ReachingValue(sgd, 0, mode)}};
}

// The bond minimum covers the element level (referee/bonds.h): in the
// longest games of every rule (sums made up from the first step, so both
// walks run to the end) every move of the honest party but the deciding one
// costs at most V, the deciding one at most A (it is reimbursed up to the
// allowance), and the honest party makes at most R moves besides it.
// Certified mode: the same, over the rules it plays (the dot rule's and the
// reductions' exact partial sums, the pointwise rule), the loss included.
void CheckBondCoversElementLevel(kernels::Mode mode) {
  const referee::BondTerms terms = BondTermsOf(WideJob(mode).job);
  std::uint64_t max_moves = 0, max_move_gas = 0, max_final_gas = 0;
  // Each target's one-value lie, and the loss's (which needs a later lie to reach a checkpoint).
  std::vector<std::pair<std::string, std::vector<Lie>>> cheats;
  for (const Target& t : kTargets) {
    if (!RuleOf(t, mode)) continue;
    cheats.emplace_back(t.name, std::vector<Lie>{Lie{LieKind::kOneValue, kLieStep, NodeOf(t), t.slot,
                                                     ReachingValue(t, 0, mode)}});
  }
  cheats.emplace_back("cross_entropy", LossLies(mode));
  for (const auto& [name, lies] : cheats) {
    for (SumsLie sums : {SumsLie::kHonest, SumsLie::kMadeUp}) {
      SCOPED_TRACE(name + (sums == SumsLie::kHonest ? " honest sums" : " made-up sums"));
      ScenarioConfig c = WideConfig(mode);
      c.solver.lies = lies;
      c.solver.element_level = true;
      c.solver.sums = {sums, 1};
      AgentPlan honest;
      honest.element_level = true;
      c.challengers = {honest};
      ScenarioDriver d(c);
      const ScenarioReport r = d.Run();
      ASSERT_EQ(r.games.size(), 1u);
      ASSERT_TRUE(r.games[0].element.has_value()) << r.games[0].game.reason;
      EXPECT_EQ(r.games[0].game.result, GameResult::kChallengerWon) << r.games[0].game.reason;
      const crypto::Address honest_address = d.key(2).address();
      std::uint64_t moves = 0;
      std::size_t k = 0;
      for (const vm::Block& b : d.chain().blocks()) {
        for (const vm::Transaction& tx : b.txs) {
          const vm::Receipt& rc = d.chain().all_receipts()[k++];
          auto from = vm::TxSenderAddress(tx);
          if (!from.ok() || *from != honest_address || !rc.success) continue;
          const bool resolving = std::any_of(rc.events.begin(), rc.events.end(), [](const vm::Event& e) {
            return e.topic == referee::topics::kGameResolved;
          });
          if (resolving) {
            EXPECT_LE(rc.gas_used, terms.arbitration_gas) << "the deciding move";
            max_final_gas = std::max(max_final_gas, rc.gas_used);
            continue;
          }
          const auto method = static_cast<Method>(std::get<vm::CallPayload>(tx.payload).method);
          EXPECT_LE(rc.gas_used, terms.move_gas) << referee::MethodName(method);
          max_move_gas = std::max(max_move_gas, rc.gas_used);
          ++moves;
        }
      }
      EXPECT_LE(moves, terms.moves);
      max_moves = std::max(max_moves, moves);
    }
  }
  std::printf(
      "[element-game] %s bond terms: R = %llu moves (the honest party made at most %llu), V = %llu gas "
      "(largest move %llu), A = %llu gas (largest deciding move %llu)\n",
      std::string(kernels::ModeName(mode)).c_str(), static_cast<unsigned long long>(terms.moves),
      static_cast<unsigned long long>(max_moves), static_cast<unsigned long long>(terms.move_gas),
      static_cast<unsigned long long>(max_move_gas), static_cast<unsigned long long>(terms.arbitration_gas),
      static_cast<unsigned long long>(max_final_gas));
}

TEST(ElementGame, TheBondMinimumCoversTheElementLevel) { CheckBondCoversElementLevel(kRepops); }
TEST(ElementGame, TheBondMinimumCoversTheCertifiedElementLevel) { CheckBondCoversElementLevel(kCertified); }

// The cross-entropy gradient's final step reads the row's label, a value
// of the batch: a liar whose partial results differ only in the last leaf
// (the output) is refuted at that step, the move carrying the label's
// example (verify/batch_opening.h) instead of a chunk.
TEST(ElementGame, TheFinalStepReadsItsLabelFromItsExample) {
  const Target& t = *std::find_if(std::begin(kTargets), std::end(kTargets), [](const Target& x) {
    return x.op == kernels::OpKind::kCrossEntropyBackward;
  });
  ASSERT_TRUE(t.reads_batch);
  const std::int64_t v = ReachingValue(t, 5);
  for (bool liar_is_solver : {true, false}) {
    const Game g = Play(t, v, liar_is_solver, SumsPlan{SumsLie::kMadeUp, ~std::uint64_t{0}});
    SCOPED_TRACE(liar_is_solver ? "solver lies" : "challenger lies");
    ExpectCaughtAt(g, t, v, liar_is_solver);
    ASSERT_FALSE(g.report.games.empty());
    EXPECT_EQ(g.report.games[0].game.reason, "element-step");
  }
}

// A lie in the loss (with a later one that reaches the checkpoint: LossLies)
// is walked to the loss, the first node that differs. Its one value is the
// mean over the batch rows of each row's (max + Log(TreeSum Exp(x − max)))
// − x[label] (verify/reduce_rule.h): the walk over its partial results —
// every row's block, then the outer sum — ends at one step, a row's loss
// step reading its label from its example and the logit it names; with the
// true partial results, at the mean.
TEST(ElementGame, ALieInTheLossIsSettledAtOneStepOfItsRows) {
  const Target loss = kLoss;
  const std::vector<Lie> lies = LossLies();
  // Partial results made up from row 1's loss step (its label from its
  // example), or only the last (the outer sum's root).
  const worker::ElementSide side = SideOf(HonestHistory(), kLieStep, NodeOf(loss));
  const std::vector<kernels::Shape> shapes = {side.inputs.at(0).shape(), side.inputs.at(1).shape()};
  auto el = verify::ReduceElementAt(static_cast<std::uint16_t>(loss.op), {}, 0, 0, shapes);
  ASSERT_TRUE(el.ok()) << el.status().ToString();
  ASSERT_GE(el->rows, 2);
  std::set<std::string> reasons;
  for (bool liar_is_solver : {true, false}) {
    for (SumsPlan sums : {SumsPlan{SumsLie::kHonest, 1}, SumsPlan{SumsLie::kMadeUp, 2 * el->BlockSteps()},
                          SumsPlan{SumsLie::kMadeUp, ~std::uint64_t{0}}}) {
      SCOPED_TRACE(std::string(liar_is_solver ? "solver lies" : "challenger lies") + ", sums " +
                   std::to_string(static_cast<int>(sums.kind)));
      const Game g = PlayLies(lies, liar_is_solver, sums);
      ExpectCaughtAt(g, loss, 0, liar_is_solver);
      ASSERT_FALSE(g.report.games.empty());
      const std::string& reason = g.report.games[0].game.reason;
      EXPECT_EQ(reason, sums.kind == SumsLie::kHonest ? "element-epilogue" : "element-step");
      reasons.insert(reason);
    }
  }
  EXPECT_EQ(reasons.size(), 2u);
}

// The assemble node's walk (verify/state_walk.h): a liar whose h_{t+1} is a
// real tree over the honest leaves with one made up — the first tensor's
// hash, a middle one's, the last one's, the header's — is walked to that
// leaf of h_{t+1} and loses to its opening (the producer's record or the
// tensor in h_t by its hash, or the header of h_t advanced), as solver and as
// challenger, in repops and in rounded mode; no move carries more than one
// record and a proof (the whole arbitration opens every leaf). A made-up
// h_{t+1} that is no tree cannot even post its top, and loses by timeout.
TEST(ElementGame, ALieInTheNextStateIsSettledAtItsLeaf) {
  std::uint64_t games = 0, max_tx = 0;
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded}) {
    ScenarioConfig base = WideConfig();
    base.mode = mode;
    const TinyJob tiny = MakeTinyJob(base.steps, base.interval, mode, 42, kHidden);
    base.solver_bond = base.challenger_bond = 2 * MinimumBond(tiny.job);
    auto honest_history = Train(tiny, {});
    ASSERT_TRUE(honest_history.ok()) << honest_history.status().ToString();
    const auto n = static_cast<std::int64_t>(honest_history->states[0].size());
    const std::uint64_t assemble = honest_history->records[0].size() - 1;
    for (std::int64_t leaf : {std::int64_t{0}, n / 2, n - 1, n, std::int64_t{-1}}) {
      for (bool liar_is_solver : {true, false}) {
        SCOPED_TRACE(std::string(kernels::ModeName(mode)) + " leaf " + std::to_string(leaf) +
                     (liar_is_solver ? ", solver lies" : ", challenger lies"));
        // leaf −1: a made-up hash (LieKind::kCheckpoint).
        const Lie lie = leaf < 0 ? Lie{LieKind::kCheckpoint, 2, 0} : Lie{LieKind::kStateLeaf, 2, 0, 0, leaf};
        const ScenarioReport report = RunLiar(base, {lie}, liar_is_solver);
        ASSERT_EQ(report.games.size(), 1u);
        const GameReport& gr = report.games[0];
        EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon)
            << gr.game.reason;
        EXPECT_EQ(gr.game.node_index, assemble);
        EXPECT_EQ(report.bounty.state,
                  liar_is_solver ? referee::BountyState::kFailed : referee::BountyState::kFinalized);
        if (leaf < 0) {
          EXPECT_EQ(gr.game.reason, "timeout");
          EXPECT_FALSE(gr.element.has_value());
          continue;
        }
        EXPECT_EQ(gr.game.reason, "element-state-leaf");
        ASSERT_TRUE(gr.element.has_value());
        EXPECT_EQ(gr.element->value, leaf);
        bool walked_to_leaf = false;
        for (const referee::WalkDoneEvent& w : gr.walks)
          if (w.level == referee::Level::kChunk) walked_to_leaf = w.index == static_cast<std::uint64_t>(leaf);
        EXPECT_TRUE(walked_to_leaf);
        EXPECT_TRUE(report.failed_calls.empty()) << report.failed_calls.front();
        EXPECT_LE(gr.max_tx_bytes, 2048u);
        max_tx = std::max(max_tx, gr.max_tx_bytes);
        ++games;
      }
    }
  }
  EXPECT_EQ(games, 16u);
  std::printf("assemble walks: %llu games settled at their leaf, largest transaction %llu B\n",
              static_cast<unsigned long long>(games), static_cast<unsigned long long>(max_tx));
}

// The walk's property at the assemble node: whatever leaves of h_{t+1} a
// liar makes up (one to three, random), on either side, in either mode, the
// walk ends at the leftmost of them and the honest party wins there.
TEST(ElementGame, TheAssembleWalkEndsAtTheLeftmostMadeUpLeaf) {
  std::mt19937_64 rng(20261127);
  std::uint64_t games = 0, several = 0, rounded = 0;
  for (int round = 0; round < 8; ++round) {
    const kernels::Mode mode = rng() % 2 == 0 ? kernels::Mode::kRepops : kernels::Mode::kRounded;
    ScenarioConfig c = WideConfig();
    c.mode = mode;
    const TinyJob tiny = MakeTinyJob(c.steps, c.interval, mode, 42, kHidden);
    c.solver_bond = c.challenger_bond = 2 * MinimumBond(tiny.job);
    const std::uint64_t leaves = HonestHistory().states[0].size() + 1;
    const std::uint64_t checkpoint = 1 + rng() % 3;
    std::set<std::int64_t> made_up;
    const std::size_t count = 1 + rng() % 3;
    while (made_up.size() < count) made_up.insert(static_cast<std::int64_t>(rng() % leaves));
    AgentPlan liar, honest;
    for (std::int64_t leaf : made_up) liar.lies.push_back(Lie{LieKind::kStateLeaf, checkpoint, 0, 0, leaf});
    liar.element_level = honest.element_level = true;
    const bool liar_is_solver = rng() % 2 == 0;
    c.solver = liar_is_solver ? liar : honest;
    c.challengers = {liar_is_solver ? honest : liar};
    SCOPED_TRACE(std::string(kernels::ModeName(mode)) + " checkpoint " + std::to_string(checkpoint) + ", " +
                 std::to_string(count) + " leaves from " + std::to_string(*made_up.begin()) +
                 (liar_is_solver ? ", solver lies" : ", challenger lies"));
    const ScenarioReport report = RunScenario(c);
    ASSERT_EQ(report.games.size(), 1u);
    const GameReport& gr = report.games[0];
    EXPECT_EQ(gr.game.result, liar_is_solver ? GameResult::kChallengerWon : GameResult::kSolverWon)
        << gr.game.reason;
    EXPECT_EQ(gr.game.reason, "element-state-leaf");
    ASSERT_TRUE(gr.element.has_value());
    EXPECT_EQ(gr.element->value, *made_up.begin()) << "not the leftmost made-up leaf";
    EXPECT_TRUE(report.failed_calls.empty()) << report.failed_calls.front();
    ++games;
    several += count > 1 ? 1 : 0;
    rounded += mode == kernels::Mode::kRounded ? 1 : 0;
  }
  EXPECT_EQ(games, 8u);
  EXPECT_GT(several, 0u);
  EXPECT_GT(rounded, 0u);
  std::printf(
      "assemble walks: %llu random games (%llu with several leaves made up, %llu rounded), each at its "
      "leftmost\n",
      static_cast<unsigned long long>(games), static_cast<unsigned long long>(several),
      static_cast<unsigned long long>(rounded));
}

// Random cheats (target — the loss among them —, value, liar's side, sums):
// the honest party always wins, at the planted value, every transaction
// ≤ 64 KiB.
TEST(ElementGame, HonestPartyAlwaysWinsOverRandomCheats) {
  std::mt19937_64 rng(20261124);
  std::uint64_t max_tx = 0, games = 0, max_element_txs = 0, loss_games = 0;
  // The loss's partial results: sums made up from anywhere in its rows.
  const worker::ElementSide loss_side = SideOf(HonestHistory(), kLieStep, NodeOf(kLoss));
  const std::vector<kernels::Shape> loss_shapes = {loss_side.inputs.at(0).shape(),
                                                   loss_side.inputs.at(1).shape()};
  const std::uint64_t loss_steps =
      verify::ReduceElementAt(static_cast<std::uint16_t>(kLoss.op), {}, 0, 0, loss_shapes).value().Steps();
  for (int round = 0; round < 12; ++round) {
    const std::size_t pick = rng() % (std::size(kTargets) + 1);  // the last: the loss
    const bool loss = pick == std::size(kTargets);
    const Target& t = loss ? kLoss : kTargets[pick];
    const std::int64_t v =
        loss ? 0
             : ReachingValue(t, static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(NumelOf(t))));
    const bool liar_is_solver = rng() % 2 == 0;
    const SumsPlan sums{static_cast<SumsLie>(rng() % 3), 1 + rng() % (loss ? loss_steps : 8)};
    const Game g = loss ? PlayLies(LossLies(), liar_is_solver, sums) : Play(t, v, liar_is_solver, sums);
    loss_games += loss ? 1 : 0;
    SCOPED_TRACE(std::string(t.name) + " value " + std::to_string(v) +
                 (liar_is_solver ? " solver lies" : " challenger lies") + " sums " +
                 std::to_string(static_cast<int>(sums.kind)));
    ExpectCaughtAt(g, t, v, liar_is_solver);
    max_tx = std::max(max_tx, g.report.games.at(0).max_tx_bytes);
    max_element_txs = std::max(max_element_txs, g.report.games.at(0).element_txs);
    ++games;
  }
  EXPECT_EQ(games, 12u);
  EXPECT_GT(loss_games, 0u);
  EXPECT_LE(max_tx, kMaxElementTx);
  std::printf("[element-game] %llu random games: largest tx %llu B, at most %llu element-level txs\n",
              static_cast<unsigned long long>(games), static_cast<unsigned long long>(max_tx),
              static_cast<unsigned long long>(max_element_txs));
}

// The same property in rounded mode, over the targets it plays (every one:
// the dot rule's and the reductions' fp64 sums, the element-wise values):
// random target, value, liar's side, sums and the step they leave the rule
// at — the honest party always wins at the planted value, every
// transaction ≤ 64 KiB.
TEST(ElementGame, HonestPartyAlwaysWinsOverRandomRoundedCheats) {
  std::mt19937_64 rng(20261129);
  std::vector<const Target*> played;
  for (const Target& t : kTargets)
    if (RuleOf(t, kRounded)) played.push_back(&t);
  ASSERT_EQ(played.size(), std::size(kTargets));
  std::uint64_t max_tx = 0, games = 0, steps = 0;
  // CI plays 12; a longer campaign: VT_ROUNDED_GAMES=300.
  const int rounds = std::getenv("VT_ROUNDED_GAMES") ? std::atoi(std::getenv("VT_ROUNDED_GAMES")) : 12;
  for (int round = 0; round < rounds; ++round) {
    const Target& t = *played[rng() % played.size()];
    const std::vector<Lie> lies =
        RoundedLies(t, static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(NumelOf(t))));
    const std::int64_t v = lies[0].value;
    const bool liar_is_solver = rng() % 2 == 0;
    const SumsPlan sums{static_cast<SumsLie>(rng() % 3), 1 + rng() % 8};
    SCOPED_TRACE(std::string(t.name) + " value " + std::to_string(v) +
                 (liar_is_solver ? " solver lies" : " challenger lies") + " sums " +
                 std::to_string(static_cast<int>(sums.kind)) + " from " + std::to_string(sums.from));
    const Game g = PlayLies(lies, liar_is_solver, sums, std::nullopt, std::nullopt, true, kRounded);
    ExpectCaughtAt(g, t, v, liar_is_solver);
    if (!g.played) continue;
    max_tx = std::max(max_tx, g.report.games.at(0).max_tx_bytes);
    steps += g.report.games.at(0).game.reason == "element-step" ? 1 : 0;
    ++games;
  }
  EXPECT_EQ(games, static_cast<std::uint64_t>(rounds));
  EXPECT_GT(steps, 0u) << "some games end at a step of the fp64 sums";
  EXPECT_LE(max_tx, kMaxElementTx);
  std::printf("[element-game] %llu random rounded games (%llu at a step): largest tx %llu B\n",
              static_cast<unsigned long long>(games), static_cast<unsigned long long>(steps),
              static_cast<unsigned long long>(max_tx));
}

}  // namespace
}  // namespace vt::test
