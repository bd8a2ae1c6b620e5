#include "tests/referee/scenario.h"

#include <gtest/gtest.h>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "referee/bonds.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "verify/graph_source.h"

namespace vt::test {
namespace {

using referee::Game;
using referee::GamePhase;
using referee::Idx;
using referee::Method;
using referee::Party;

template <typename Args>
Bytes Enc(const Args& a) {
  return EncodeToBytes(a);
}

// Did `h` lie at node `node` of step `step` (its record there is not the honest one)?
bool LiedAt(const History& h, std::uint64_t step, std::uint64_t node) {
  if (h.LiedAt(step, node)) return true;
  for (const Lie& l : h.lies) {
    if (l.kind != LieKind::kCheckpoint && l.kind != LieKind::kStateLeaf) continue;
    const std::uint64_t s = protocol::CheckpointStepAt(h.job.num_steps, h.job.checkpoint_interval, l.step);
    if (step + 1 == s && node + 1 == h.records[step].size()) return true;
  }
  return false;
}

}  // namespace

class ScenarioDriver::Impl {
 public:
  static referee::RefereeParams ParamsOf(const ScenarioConfig& config) {
    referee::RefereeParams p;
    p.element_level = config.element_level_enabled;
    return p;
  }
  explicit Impl(const ScenarioConfig& config)
      : m_config(config),
        m_referee(ParamsOf(config)),
        m_arbiter(m_graphs),
        m_chain((m_registry.Register(referee::kRefereeContractId, &m_referee), m_registry), &m_arbiter,
                static_cast<std::uint32_t>(2 + config.challengers.size()), kFunds),
        m_tiny(
            MakeTinyModelJob(config.model, config.steps, config.interval, config.mode, 42, config.hidden)) {}

  void Start();
  bool Step();
  ScenarioReport Finish();

  static constexpr vm::Amount kFunds = 1'000'000'000'000;

  struct Agent {
    std::string name;
    crypto::SecretKey key;
    History history;
    AgentPlan plan;
  };

  std::size_t Send(const Agent& agent, Method method, Bytes args,
                   std::optional<std::uint64_t> game = std::nullopt) {
    vm::Transaction tx = m_chain.Call(agent.key, referee::kRefereeContractId,
                                      static_cast<std::uint16_t>(method), std::move(args));
    const std::size_t size = vm::EncodeTransaction(tx).size();
    if (game) {
      m_game_txs[*game] += 1;
      m_game_bytes[*game] += size;
      m_max_tx[*game] = std::max<std::uint64_t>(m_max_tx[*game], size);
      if (method >= Method::kPostChunkRoot || (method == Method::kRevealChildren && m_in_element))
        m_element_txs[*game] += 1;
      if (method == Method::kRevealChildren && m_phase == GamePhase::kChunkWalk)
        m_walk_reveals[*game][0] += 1;
      if (method == Method::kRevealChildren && m_phase == GamePhase::kPartialsWalk)
        m_walk_reveals[*game][1] += 1;
      if (method == Method::kArbitrate) m_arbitration_bytes[*game] += size;
    }
    m_chain.Submit(std::move(tx));
    return size;
  }
  void Act(const Agent& agent, Party p, const Game& g);
  // The element phases (docs/referee.md, "Element-level descent").
  void ActElement(const Agent& agent, Party p, const Game& g);
  // Whether the referee plays the game's node at the element level
  // (verify::StartDescent), as a daemon asks before it descends.
  bool Descends(const Game& g) const;
  void ActStateWalk(const Agent& agent, Party p, const Game& g);
  const crypto::MerkleTree& WalkTree(const History& h, const Game& g) const;

  ScenarioConfig m_config;
  referee::Referee m_referee;
  vm::KernelsGraphSource m_graphs;
  vm::Arbiter m_arbiter;
  vm::ContractRegistry m_registry;
  TestChain m_chain;
  TinyJob m_tiny;
  std::vector<Agent> m_agents;  // 0 client, 1 solver, 2.. challengers
  std::map<std::uint64_t, std::uint64_t> m_game_txs;
  std::map<std::uint64_t, std::uint64_t> m_game_bytes;
  std::map<std::uint64_t, std::uint64_t> m_arbitration_bytes;
  std::map<std::uint64_t, bool> m_arbitration_sent;
  std::map<std::uint64_t, std::uint64_t> m_max_tx;
  std::map<std::uint64_t, std::uint64_t> m_element_txs;
  bool m_in_element = false;                       // the game being acted on is in an element phase
  GamePhase m_phase = GamePhase::kCheckpointWalk;  // … and its phase
  std::map<std::uint64_t, std::array<std::uint64_t, 2>> m_walk_reveals;
  std::map<std::string, vm::Amount> m_before;
  std::vector<std::uint64_t> m_game_ids;
  std::vector<std::size_t> m_opened;
  std::vector<std::size_t> m_open_bytes;

  friend class ScenarioDriver;
};

const crypto::MerkleTree& ScenarioDriver::Impl::WalkTree(const History& h, const Game& g) const {
  switch (g.phase) {
    case GamePhase::kCheckpointWalk:
      return h.checkpoint_tree;
    case GamePhase::kStepWalk:
      return h.step_trees[g.checkpoint_index - 1];
    default:
      return h.node_trees[g.step];
  }
}

void ScenarioDriver::Impl::Act(const Agent& agent, Party p, const Game& g) {
  if (g.phase == GamePhase::kResolved) return;
  if (agent.plan.silent_from && g.phase >= *agent.plan.silent_from) return;
  const std::uint64_t next_height = m_chain.height() + 1;
  // Anyone may claim a timeout; a party claims the other side's.
  const referee::Clock& theirs = g.clocks[Idx(p == Party::kSolver ? Party::kChallenger : Party::kSolver)];
  if (theirs.owes && next_height > theirs.owes_since + theirs.left + 1) {
    Send(agent, Method::kClaimTimeout, Enc(referee::GameIdArgs{g.id}), g.id);
    return;
  }
  m_in_element = g.phase >= GamePhase::kChunkRoots;
  m_phase = g.phase;
  if (m_in_element || (g.phase == GamePhase::kArbitration && agent.plan.element_level && Descends(g))) {
    auto e = referee::ReadElementGame(m_chain.store(), g.id);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    if (m_in_element || !e->has_value()) return ActElement(agent, p, g);
  }
  if (g.phase == GamePhase::kArbitration) {
    // The solver owes the inputs, but whoever is right at this node sends them.
    if (agent.plan.arbitrates && !LiedAt(agent.history, g.step, g.node_index) && !m_arbitration_sent[g.id]) {
      m_arbitration_sent[g.id] = true;
      Send(agent, Method::kArbitrate,
           Enc(MakeArbitrate(m_tiny, agent.history, m_agents[1].history, g.id, static_cast<std::uint8_t>(p),
                             g.step, g.node_index)),
           g.id);
    }
    return;
  }
  if (!g.clocks[Idx(p)].owes) return;
  const History& h = agent.history;
  switch (g.phase) {
    case GamePhase::kCheckpointWalk:
    case GamePhase::kStepWalk:
    case GamePhase::kNodeWalk: {
      auto t = referee::ReadWalk(m_chain.store(), g.id);
      ASSERT_TRUE(t.ok() && t->has_value());
      auto walk = referee::ReplayWalk(**t);
      ASSERT_TRUE(walk.ok()) << walk.status().ToString();
      const auto wp = p == Party::kSolver ? crypto::MerkleWalk::Party::kA : crypto::MerkleWalk::Party::kB;
      if (walk->HasRevealed(wp)) return;
      Send(agent, Method::kRevealChildren,
           Enc(referee::RevealChildrenArgs{g.id, WalkTree(h, g).Children(walk->current())}), g.id);
      return;
    }
    case GamePhase::kStepRoots:
      if (!g.step_posted[Idx(p)])
        Send(agent, Method::kPostStepRoot, Enc(MakeStepRoot(h, g.id, g.checkpoint_index)), g.id);
      return;
    case GamePhase::kNodeRoots:
      if (!g.node_posted[Idx(p)])
        Send(agent, Method::kPostNodeRoot, Enc(MakeNodeRoot(h, g.id, g.checkpoint_index, g.step)), g.id);
      return;
    case GamePhase::kRevealRecords:
      if (!g.records[Idx(p)])
        Send(agent, Method::kRevealRecord,
             Enc(referee::RevealRecordArgs{g.id, h.records[g.step][g.node_index]}), g.id);
      return;
    default:
      return;
  }
}

void ScenarioDriver::Impl::ActStateWalk(const Agent& agent, Party p, const Game& g) {
  const History& h = agent.history;
  // The walked tree is the party's claimed h_{t+1}.
  const crypto::MerkleTree tree = StateTreeOf(h, g.step + 1);
  const auto node_root_of = static_cast<std::uint8_t>(p);
  auto payload = [&] {
    const referee::ArbitrateArgs a = MakeArbitrate(m_tiny, h, h, g.id, node_root_of, g.step, g.node_index);
    return Must(DecodeExact<vm::ArbitrationPayload>(a.payload));
  };
  const bool lied = LiedAt(h, g.step, g.node_index);
  if (g.phase == GamePhase::kArbitration) {
    m_in_element = true;
    Send(agent, Method::kPostChunkRoot, Enc(node::ChunkRootMove(tree, g.id)), g.id);
    return;
  }
  auto loaded = referee::ReadElementGame(m_chain.store(), g.id);
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  const referee::ElementGame& e = **loaded;
  if (g.phase == GamePhase::kOpenElement) {
    if (!lied && !m_arbitration_sent[g.id]) {
      m_arbitration_sent[g.id] = true;
      Send(agent, Method::kOpenElement,
           Enc(Must(node::OpenStateLeafMove(payload(), e.chunk, g.id, node_root_of))), g.id);
    }
    return;
  }
  if (!g.clocks[Idx(p)].owes) return;
  if (g.phase == GamePhase::kChunkRoots && !e.chunk_posted[Idx(p)])
    Send(agent, Method::kPostChunkRoot, Enc(node::ChunkRootMove(tree, g.id)), g.id);
  if (g.phase != GamePhase::kChunkWalk) return;
  auto t = referee::ReadWalk(m_chain.store(), g.id);
  ASSERT_TRUE(t.ok() && t->has_value());
  auto walk = referee::ReplayWalk(**t);
  ASSERT_TRUE(walk.ok()) << walk.status().ToString();
  if (walk->HasRevealed(p == Party::kSolver ? crypto::MerkleWalk::Party::kA : crypto::MerkleWalk::Party::kB))
    return;
  Send(agent, Method::kRevealChildren, Enc(referee::RevealChildrenArgs{g.id, tree.Children(walk->current())}),
       g.id);
}

bool ScenarioDriver::Impl::Descends(const Game& g) const {
  if (!g.records[0] || !g.records[1]) return false;
  auto graph = verify::KernelsGraphSource().Build(m_tiny.job, g.step);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() &&
         node::PlanDescent(m_tiny.job.mode, *graph, g.node_index, *g.records[0], *g.records[1]).ok();
}

void ScenarioDriver::Impl::ActElement(const Agent& agent, Party p, const Game& g) {
  const History& h = agent.history;
  if (g.node_index + 1 == h.records[g.step].size()) return ActStateWalk(agent, p, g);
  worker::ElementSide side = SideOf(h, g.step, g.node_index);
  const History& solver = m_agents[1].history;
  const bool rounded = m_config.mode == kernels::Mode::kRounded;
  // The committed log is the solver's (a challenger follows it).
  if (rounded) side.log = solver.logs[g.step][g.node_index];
  const auto node_root_of = static_cast<std::uint8_t>(p);
  if (g.phase == GamePhase::kArbitration) {
    // Descend where the daemons do (node::PlanDescent): the chunk root of
    // the first differing output, or slot 0's when the records differ in
    // their log hash alone (rounded mode: with the node's committed log).
    auto graph = verify::KernelsGraphSource().Build(m_tiny.job, g.step);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    auto descent = node::PlanDescent(m_tiny.job.mode, *graph, g.node_index, *g.records[0], *g.records[1]);
    ASSERT_TRUE(descent.ok()) << descent.status().ToString();
    std::optional<referee::NodeLogProof> log;
    if (rounded) log = NodeLogProofOf(solver, g.step, g.node_index);
    m_in_element = true;
    Send(agent, Method::kPostChunkRoot,
         Enc(node::ChunkRootMove(ChunkTreeFor(side, descent->slot), g.id, std::move(log))), g.id);
    return;
  }
  auto loaded = referee::ReadElementGame(m_chain.store(), g.id);
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  const referee::ElementGame& e = **loaded;
  const bool lied = LiedAt(h, g.step, g.node_index);
  if (g.phase == GamePhase::kOpenElement) {
    // Like the arbitration: the solver owes it, whoever is right sends it.
    if (!lied && !m_arbitration_sent[g.id]) {
      m_arbitration_sent[g.id] = true;
      std::optional<worker::ReduceRuleAnswer> mine;  // a sum's epilogue opens from the party's sums
      if (e.kind == verify::ElementKind::kReduce)
        mine = ReducePartialsFor(m_config.mode, side, e.slot, e.value, std::nullopt);
      Send(agent, Method::kOpenElement,
           Enc(Must(node::OpenElementMove(side, e, g.id, node_root_of, mine ? &*mine : nullptr))), g.id);
    }
    return;
  }
  if (!g.clocks[Idx(p)].owes) return;
  const std::optional<SumsPlan> sums = lied ? std::optional<SumsPlan>(agent.plan.sums) : std::nullopt;
  const std::size_t me = Idx(p);
  switch (g.phase) {
    case GamePhase::kChunkRoots:
      if (!e.chunk_posted[me])
        Send(agent, Method::kPostChunkRoot, Enc(node::ChunkRootMove(ChunkTreeFor(side, e.slot), g.id)), g.id);
      return;
    case GamePhase::kChunkWalk:
    case GamePhase::kPartialsWalk: {
      auto t = referee::ReadWalk(m_chain.store(), g.id);
      ASSERT_TRUE(t.ok() && t->has_value());
      auto walk = referee::ReplayWalk(**t);
      ASSERT_TRUE(walk.ok()) << walk.status().ToString();
      const auto wp = p == Party::kSolver ? crypto::MerkleWalk::Party::kA : crypto::MerkleWalk::Party::kB;
      if (walk->HasRevealed(wp)) return;
      const crypto::NodeReveal reveal =
          g.phase == GamePhase::kChunkWalk ? ChunkTreeFor(side, e.slot).Children(walk->current())
          : e.kind == verify::ElementKind::kReduce
              ? worker::TreeOf(ReducePartialsFor(m_config.mode, side, e.slot, e.value, sums))
                    .Children(walk->current())
              : worker::TreeOf(PartialsFor(m_config.mode, side, e.slot, e.value, sums))
                    .Children(walk->current());
      Send(agent, Method::kRevealChildren, Enc(referee::RevealChildrenArgs{g.id, reveal}), g.id);
      return;
    }
    case GamePhase::kChunkReveal:
      if (!e.chunk_opening[me])
        Send(agent, Method::kRevealChunk, Enc(Must(node::RevealChunkMove(side, g.id, e.slot, e.chunk))),
             g.id);
      return;
    case GamePhase::kPartialsRoots:
      if (e.partials_posted[me]) return;
      if (e.kind == verify::ElementKind::kReduce) {
        Send(agent, Method::kPostPartialsRoot,
             Enc(node::PartialsRootMove(ReducePartialsFor(m_config.mode, side, e.slot, e.value, sums), g.id)),
             g.id);
      } else {
        Send(agent, Method::kPostPartialsRoot,
             Enc(node::PartialsRootMove(PartialsFor(m_config.mode, side, e.slot, e.value, sums), g.id)),
             g.id);
      }
      return;
    case GamePhase::kStepReveal:
      if (e.step_revealed[me]) return;
      if (e.kind == verify::ElementKind::kReduce) {
        Send(
            agent, Method::kRevealReduceStep,
            Enc(Must(node::RevealReduceStepMove(
                side, ReducePartialsFor(m_config.mode, side, e.slot, e.value, sums), e, g.id, node_root_of))),
            g.id);
      } else {
        Send(agent, Method::kRevealStep,
             Enc(Must(node::RevealStepMove(side, PartialsFor(m_config.mode, side, e.slot, e.value, sums), e,
                                           g.id, node_root_of))),
             g.id);
      }
      return;
    default:
      return;
  }
}

void ScenarioDriver::Impl::Start() {
  const ScenarioConfig& c = m_config;
  auto solver_history = Train(m_tiny, c.solver.lies);
  EXPECT_TRUE(solver_history.ok()) << solver_history.status().ToString();
  m_agents.push_back({"client", TestKey(1), {}, {}});
  m_agents.push_back({"solver", TestKey(2), *solver_history, c.solver});
  for (std::size_t i = 0; i < c.challengers.size(); ++i) {
    auto h = Train(m_tiny, c.challengers[i].lies, &m_agents[1].history);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    m_agents.push_back(
        {"challenger" + std::to_string(i), TestKey(static_cast<std::uint32_t>(3 + i)), *h, c.challengers[i]});
  }
  for (const Agent& a : m_agents) m_before[a.name] = m_chain.BalanceOf(a.key.address());

  const Agent& client = m_agents[0];
  const Agent& solver = m_agents[1];
  referee::PostBountyArgs post{
      m_tiny.job,     m_tiny.initial_state, c.reward,       c.solver_bond, c.challenger_bond,
      c.solve_window, c.challenge_window,   c.clock_budget, Hash256{},     0};
  Send(client, Method::kPostBounty, Enc(post));
  m_chain.Mine();
  const std::uint64_t bounty_id = 0;
  if (c.solver_claims) {
    Send(solver, Method::kClaim, Enc(referee::BountyIdArgs{bounty_id}));
    m_chain.Mine();
  }
  if (c.solver_claims && c.solver_commits) {
    Send(solver, Method::kCommit, Enc(MakeCommit(solver.history, bounty_id, solver.key)));
    m_chain.Mine();
  }
  // Challengers whose history differs open games, in one block.
  std::vector<std::size_t> opened;
  for (std::size_t i = 2; i < m_agents.size(); ++i) {
    if (m_agents[i].history.checkpoint_tree.root() == solver.history.checkpoint_tree.root()) continue;
    m_open_bytes.push_back(
        Send(m_agents[i], Method::kOpenGame, Enc(MakeOpenGame(m_agents[i].history, bounty_id))));
    opened.push_back(i);
  }
  std::vector<std::uint64_t>& game_ids = m_game_ids;
  m_opened = opened;
  if (!opened.empty()) {
    const auto receipts = m_chain.Mine();
    for (const vm::Receipt& r : receipts) {
      for (const vm::Event& e : r.events) {
        if (e.topic != referee::topics::kGameOpened) continue;
        auto ev = DecodeExact<referee::GameOpenedEvent>(e.data);
        EXPECT_TRUE(ev.ok());
        game_ids.push_back(ev->game_id);
      }
    }
    EXPECT_EQ(game_ids.size(), opened.size()) << "every opening challenger gets a game";
    for (std::size_t k = 0; k < game_ids.size() && k < m_open_bytes.size(); ++k) {
      m_game_txs[game_ids[k]] += 1;  // the opening transaction
      m_game_bytes[game_ids[k]] += m_open_bytes[k];
    }
  }
}

bool ScenarioDriver::Impl::Step() {
  bool any_open = false;
  auto bounty = referee::ReadBounty(m_chain.store(), 0);
  EXPECT_TRUE(bounty.ok());
  const bool solver_lost = bounty.ok() && bounty->state == referee::BountyState::kFailed;
  for (std::size_t k = 0; k < m_game_ids.size(); ++k) {
    auto g = referee::ReadGame(m_chain.store(), m_game_ids[k]);
    EXPECT_TRUE(g.ok());
    if (g->phase == GamePhase::kResolved) continue;
    any_open = true;
    if (solver_lost) {
      // The game is moot: anyone closes it (here the client), bond refunded.
      Send(m_agents[0], Method::kCloseGame, Enc(referee::GameIdArgs{g->id}), g->id);
      continue;
    }
    m_arbitration_sent[g->id] = false;
    Act(m_agents[1], Party::kSolver, *g);
    Act(m_agents[m_opened[k]], Party::kChallenger, *g);
  }
  if (any_open) m_chain.Mine();
  return any_open;
}

ScenarioReport ScenarioDriver::Impl::Finish() {
  ScenarioReport report;
  const std::uint64_t bounty_id = 0;
  const Agent& client = m_agents[0];
  const Agent& solver = m_agents[1];
  const std::vector<std::uint64_t>& game_ids = m_game_ids;
  const std::vector<std::size_t>& opened = m_opened;

  // Close the bounty: finalize after the challenge window, or refund.
  auto bounty = referee::ReadBounty(m_chain.store(), bounty_id);
  EXPECT_TRUE(bounty.ok());
  if (bounty->state == referee::BountyState::kCommitted) {
    m_chain.MineUntil(bounty->challenge_deadline);
    Send(solver, Method::kFinalize, Enc(referee::BountyIdArgs{bounty_id}));
    m_chain.Mine();
  } else if (bounty->state == referee::BountyState::kOpen ||
             bounty->state == referee::BountyState::kClaimed) {
    m_chain.MineUntil(bounty->solve_deadline);
    Send(client, Method::kRefund, Enc(referee::BountyIdArgs{bounty_id}));
    m_chain.Mine();
  }

  // Report.
  report.bounty = *referee::ReadBounty(m_chain.store(), bounty_id);
  for (std::size_t k = 0; k < game_ids.size(); ++k) {
    GameReport gr;
    gr.challenger = opened[k] - 2;
    gr.game = *referee::ReadGame(m_chain.store(), game_ids[k]);
    gr.txs = m_game_txs[game_ids[k]];
    gr.bytes = m_game_bytes[game_ids[k]];
    gr.arbitration_bytes = m_arbitration_bytes[game_ids[k]];
    gr.max_tx_bytes = m_max_tx[game_ids[k]];
    gr.element_txs = m_element_txs[game_ids[k]];
    gr.element_walk_reveals = m_walk_reveals[game_ids[k]];
    gr.blocks = gr.game.resolved_height >= gr.game.opened_height
                    ? gr.game.resolved_height - gr.game.opened_height + 1
                    : 0;
    for (const vm::Receipt& r : m_chain.all_receipts()) {
      for (const vm::Event& e : r.events) {
        if (e.topic != referee::topics::kWalkDone) continue;
        auto ev = DecodeExact<referee::WalkDoneEvent>(e.data);
        if (ev.ok() && ev->game_id == game_ids[k]) gr.walks.push_back(*ev);
      }
      for (const vm::Event& e : r.events) {
        if (e.topic == referee::topics::kElementDisputed) {
          auto ev = DecodeExact<referee::ElementDisputedEvent>(e.data);
          if (ev.ok() && ev->game_id == game_ids[k]) gr.element = *ev;
        }
        if (e.topic == referee::topics::kGameResolved) {
          auto ev = DecodeExact<referee::GameResolvedEvent>(e.data);
          if (ev.ok() && ev->game_id == game_ids[k]) gr.resolving_gas = r.gas_used;
        }
      }
    }
    report.games.push_back(std::move(gr));
  }
  // Fees per sender, to report balance changes net of fees.
  std::map<std::array<std::uint8_t, 32>, vm::Amount> fees;
  std::size_t r = 0;
  const auto& receipts = m_chain.all_receipts();
  for (const vm::Block& blk : m_chain.blocks()) {
    for (const vm::Transaction& tx : blk.txs) {
      const vm::Receipt& rc = receipts[r++];
      fees[tx.sender] += rc.fee;
      if (!rc.success) {
        for (const Agent& a : m_agents)
          if (a.key.public_key().bytes() == tx.sender)
            report.failed_calls.push_back(a.name + ": " + rc.reason);
      }
    }
  }
  for (const Agent& a : m_agents) {
    const vm::Amount now = m_chain.BalanceOf(a.key.address());
    report.net[a.name] = static_cast<std::int64_t>(now) - static_cast<std::int64_t>(m_before[a.name]) +
                         static_cast<std::int64_t>(fees[a.key.public_key().bytes()]);
  }
  auto audit = vm::AuditSupply(m_chain.store());
  EXPECT_TRUE(audit.ok());
  report.burned = audit.ok() ? audit->burned : 0;
  report.blocks = m_chain.height();
  report.solver_history = m_agents[1].history;
  return report;
}

ScenarioDriver::ScenarioDriver(const ScenarioConfig& config) : m_impl(std::make_unique<Impl>(config)) {}
ScenarioDriver::~ScenarioDriver() = default;
void ScenarioDriver::Start() { m_impl->Start(); }
bool ScenarioDriver::Step() { return m_impl->Step(); }
ScenarioReport ScenarioDriver::Finish() { return m_impl->Finish(); }
ScenarioReport ScenarioDriver::Run() {
  Start();
  for (std::uint64_t n = 0; n < m_impl->m_config.max_blocks && Step(); ++n) {
  }
  return Finish();
}
TestChain& ScenarioDriver::chain() { return m_impl->m_chain; }
const TinyJob& ScenarioDriver::tiny() const { return m_impl->m_tiny; }
const History& ScenarioDriver::history(std::size_t agent) const { return m_impl->m_agents[agent].history; }
const crypto::SecretKey& ScenarioDriver::key(std::size_t agent) const { return m_impl->m_agents[agent].key; }
const std::vector<std::uint64_t>& ScenarioDriver::game_ids() const { return m_impl->m_game_ids; }

referee::BondTerms BondTermsOf(const protocol::JobSpec& job, const vm::ChainParams& params,
                               const referee::RefereeParams& referee) {
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter(graphs);
  vm::GasMeter meter(std::uint64_t{1} << 40);
  auto t = referee::ComputeBondTerms(arbiter, job, params, referee, meter);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.value_or(referee::BondTerms{});
}

vm::Amount MinimumBond(const protocol::JobSpec& job, const referee::RefereeParams& referee) {
  return BondTermsOf(job, vm::ChainParams{}, referee).minimum;
}

ScenarioReport RunScenario(const ScenarioConfig& config) {
  ScenarioDriver driver(config);
  return driver.Run();
}

}  // namespace vt::test
