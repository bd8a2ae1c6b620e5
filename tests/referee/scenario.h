#pragma once
// The in-process scenario harness: a chain with the referee and the
// arbitration precompile, a client, a solver and challengers as agents that
// read the chain state after every block and send the moves their history
// dictates (honest, lying, or falling silent at a chosen phase). Block
// heights are the simulated clock. TestChain audits the supply invariant
// after every block and replays every block on a validator replica.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "contract_vm/amount.h"
#include "kernels/mode.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "referee/bonds.h"
#include "referee/referee.h"
#include "tests/referee/element_agent.h"
#include "tests/referee/history.h"

namespace vt::test {
class TestChain;
}

namespace vt::test {

struct AgentPlan {
  std::vector<Lie> lies;                          // empty: honest
  std::optional<referee::GamePhase> silent_from;  // withholds every move from this phase on
  bool arbitrates = true;                         // sends the arbitration inputs when right at the node
  // Descends to the element level (a chunk-root post) instead of sending a
  // node's inputs; every agent answers the element phases once there.
  bool element_level = false;
  SumsPlan sums{};  // a liar's partial sums of the value it planted
};

struct ScenarioConfig {
  kernels::Mode mode = kernels::Mode::kRepops;
  std::uint64_t steps = 10;
  std::uint64_t interval = 3;
  AgentPlan solver;
  std::vector<AgentPlan> challengers;
  bool solver_claims = true;
  bool solver_commits = true;
  vm::Amount reward = 1'000'000;
  // Above the tiny job's minimum bond (referee/bonds.h; about 1.2 M with
  // the element level's moves).
  vm::Amount solver_bond = 3'000'000;
  vm::Amount challenger_bond = 2'000'000;
  std::uint64_t solve_window = 20;
  std::uint64_t challenge_window = 8;
  std::uint64_t clock_budget = 6;
  std::uint64_t max_blocks = 400;
  std::int64_t hidden = 8;  // the tiny MLP's hidden width (MakeTinyJob)
  TinyModel model = TinyModel::kMlp;  // which tiny job (history.h MakeTinyModelJob)
  bool element_level_enabled = true;  // referee::RefereeParams::element_level
};

struct GameReport {
  std::size_t challenger = 0;
  referee::Game game;
  std::vector<referee::WalkDoneEvent> walks;
  std::uint64_t txs = 0;    // game transactions (open, moves, arbitration, timeout)
  std::uint64_t bytes = 0;  // their encoded size
  std::uint64_t arbitration_bytes = 0;  // of which the arbitration transaction(s)
  std::uint64_t blocks = 0; // from the opening block to the resolving block
  std::uint64_t max_tx_bytes = 0;       // the largest game transaction
  std::uint64_t element_txs = 0;        // transactions of the element level (from the descent on)
  std::array<std::uint64_t, 2> element_walk_reveals{};  // reveals in the chunk walk, the partial-sum walk
  std::uint64_t resolving_gas = 0;      // gas of the transaction that resolved the game
  std::optional<referee::ElementDisputedEvent> element;  // where level 4 ended, when played
};

struct ScenarioReport {
  referee::Bounty bounty;
  std::vector<GameReport> games;
  // Balance change of each party, fees added back (so bonds, rewards and
  // payouts only): "client", "solver", "challenger0", …
  std::map<std::string, std::int64_t> net;
  std::vector<std::string> failed_calls;  // "sender: reason" of failed receipts
  std::uint64_t blocks = 0;
  vm::Amount burned = 0;
  History solver_history;
};

ScenarioReport RunScenario(const ScenarioConfig& config);

// The smallest bond PostBounty accepts for `job` on a chain with default
// parameters (referee/bonds.h), for tests that post their own bounties.
// The job's bond terms (referee::ComputeBondTerms, unmetered) on a chain
// with these parameters, and its minimum bond.
referee::BondTerms BondTermsOf(const protocol::JobSpec& job, const vm::ChainParams& params = {},
                               const referee::RefereeParams& referee = {});
vm::Amount MinimumBond(const protocol::JobSpec& job, const referee::RefereeParams& referee = {});

// The driver behind RunScenario, for tests that stop a game at a chosen
// phase and poke at it.
class ScenarioDriver {
 public:
  explicit ScenarioDriver(const ScenarioConfig& config);
  ~ScenarioDriver();
  ScenarioDriver(const ScenarioDriver&) = delete;
  ScenarioDriver& operator=(const ScenarioDriver&) = delete;

  // Trains the histories, posts, claims, commits and opens the games.
  void Start();
  // One block of agent actions; false when no game is open.
  bool Step();
  // Settles the bounty (finalize after the challenge window, or refund) and reports.
  ScenarioReport Finish();
  // Start, Step until no game is open, Finish.
  ScenarioReport Run();

  TestChain& chain();
  const TinyJob& tiny() const;
  const History& history(std::size_t agent) const;  // 0 client, 1 solver, 2.. challengers
  const crypto::SecretKey& key(std::size_t agent) const;
  const std::vector<std::uint64_t>& game_ids() const;

 private:
  class Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace vt::test
