// The chain property fuzzer (issue 10, "Tests and measurements"): random
// transaction sequences from honest, cheating and random actors against the
// VM and the referee. Each sequence is a real dispute of the scenario
// harness — a solver that may lie, challengers that may lie or fall silent —
// with random actors around it that transfer, post bounties at the
// protocol's limits, open junk games, replay and garble other parties'
// moves and call every method with random bytes. After every block:
//   * no crash and no halt: the block is produced (height + 1);
//   * balances + escrows + burned = supply (vm::AuditSupply, on both VMs);
//   * a second, independent VM instance (its own referee, arbiter and store)
//     applies the block and reaches the same tip and state root.
// CI runs a few sequences (seconds); VT_CHAIN_FUZZ_SEQUENCES=N runs N.

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "common/limits.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/state_root.h"
#include "contract_vm/vm.h"
#include "referee/messages.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/scenario.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

using referee::Method;

// An independent VM: its own referee, graph source, arbiter and registry.
struct Machine {
  referee::Referee referee;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter{graphs};
  vm::ContractRegistry registry;
  vm::Vm vm{registry, &arbiter};
  Machine() { registry.Register(referee::kRefereeContractId, &referee); }
};

std::uint64_t Sequences() {
  const char* env = std::getenv("VT_CHAIN_FUZZ_SEQUENCES");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 4;
}

Bytes RandomBytes(std::mt19937_64& rng, std::size_t max) {
  Bytes b(rng() % (max + 1));
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

template <typename T>
Bytes Enc(const T& v) {
  return EncodeToBytes(v);
}

ScenarioConfig RandomConfig(std::mt19937_64& rng) {
  ScenarioConfig c;
  c.mode = rng() % 4 == 0 ? kernels::Mode::kRounded : kernels::Mode::kRepops;
  c.steps = 6 + rng() % 6;
  c.interval = 2 + rng() % 3;
  auto lie = [&](bool allow_none) -> std::vector<Lie> {
    const int kind = static_cast<int>(rng() % (allow_none ? 4 : 3));
    const std::uint64_t step = 1 + rng() % (c.steps - 1);
    const std::uint32_t node = static_cast<std::uint32_t>(rng() % 6);
    switch (kind) {
      case 0: return {Lie{LieKind::kOutput, step, node}};
      case 1: return {Lie{LieKind::kSpec, step, node}};
      case 2: return {Lie{LieKind::kCheckpoint, 1 + rng() % (protocol::CheckpointCount(c.steps, c.interval) - 1), 0}};
      default: return {};
    }
  };
  c.solver.lies = lie(true);
  const std::size_t challengers = 1 + rng() % 2;
  for (std::size_t i = 0; i < challengers; ++i) {
    AgentPlan p;
    if (rng() % 3 == 0) p.lies = lie(false);
    if (rng() % 5 == 0) p.silent_from = static_cast<referee::GamePhase>(rng() % 7);
    c.challengers.push_back(p);
  }
  return c;
}

// One random actor's transaction.
vm::Transaction RandomMove(std::mt19937_64& rng, TestChain& chain, const crypto::SecretKey& actor,
                           const std::vector<crypto::Address>& everyone, const TinyJob& tiny) {
  auto call = [&](Method m, Bytes args) {
    return chain.Call(actor, referee::kRefereeContractId, static_cast<std::uint16_t>(m), std::move(args));
  };
  switch (rng() % 8) {
    case 0:
      return chain.MakeTx(actor, vm::TransferPayload{everyone[rng() % everyone.size()], rng() % 2'000'000'000});
    case 1:  // any method, random bytes
      return chain.Call(actor, referee::kRefereeContractId, static_cast<std::uint16_t>(rng() % 18), RandomBytes(rng, 300));
    case 2:
    case 3: {  // someone else's real move, replayed or garbled
      std::vector<const vm::CallPayload*> moves;
      for (const vm::Block& b : chain.blocks())
        for (const vm::Transaction& tx : b.txs)
          if (const auto* c = std::get_if<vm::CallPayload>(&tx.payload)) moves.push_back(c);
      if (moves.empty()) break;
      vm::CallPayload p = *moves[rng() % moves.size()];
      if (rng() % 2 == 0 && !p.args.empty())
        for (int f = 0; f < 3; ++f) p.args[rng() % p.args.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      return chain.Call(actor, p.contract, p.method, p.args);
    }
    case 4: {  // a bounty at (or past) the protocol's limits
      referee::PostBountyArgs post;
      post.job = tiny.job;
      const std::uint64_t sizes[] = {1, tiny.job.dataset_size, limits::kMaxDatasetSize, limits::kMaxDatasetSize + 1,
                                     std::uint64_t{1} << 63};
      post.job.dataset_size = sizes[rng() % std::size(sizes)];
      const std::uint32_t batches[] = {1, 4, limits::kMaxBatchSize, limits::kMaxBatchSize + 1, 0xffffffffu};
      post.job.batch_size = batches[rng() % std::size(batches)];
      post.initial_state = tiny.initial_state;
      post.reward = rng() % 3'000'000;
      post.solver_bond = rng() % 1'000'000;
      post.challenger_bond = rng() % 1'000'000;
      post.solve_window = rng() % 30;
      post.challenge_window = rng() % 30;
      post.clock_budget = rng() % 10;
      return call(Method::kPostBounty, Enc(post));
    }
    case 5: {  // a junk game on the dispute's bounty
      referee::OpenGameArgs open;
      open.bounty_id = rng() % 2;
      for (auto& b : open.checkpoint_root.bytes) b = static_cast<std::uint8_t>(rng());
      return call(Method::kOpenGame, Enc(open));
    }
    case 6:
      return call(Method::kClaimTimeout, Enc(referee::GameIdArgs{rng() % 6}));
    default:
      return call(static_cast<Method>(1 + rng() % 5), Enc(referee::BountyIdArgs{rng() % 3}));
  }
  return chain.MakeTx(actor, vm::TransferPayload{everyone[0], 1});
}

TEST(ChainProperty, RandomActorsNeverBreakTheChain) {
  std::mt19937_64 rng(TestSeed());
  const std::uint64_t sequences = Sequences();
  std::uint64_t blocks = 0, txs = 0, failed = 0, games = 0;
  for (std::uint64_t seq = 0; seq < sequences; ++seq) {
    SCOPED_TRACE("sequence " + std::to_string(seq));
    const ScenarioConfig config = RandomConfig(rng);
    ScenarioDriver d(config);
    TestChain& chain = d.chain();
    // Random actors, funded by the client before the dispute starts, and a
    // stranger who never is.
    std::vector<crypto::SecretKey> actors;
    for (std::uint32_t a = 50; a < 54; ++a) actors.push_back(TestKey(a));
    for (std::size_t a = 0; a + 1 < actors.size(); ++a)
      chain.Submit(chain.MakeTx(TestKey(1), vm::TransferPayload{actors[a].address(), 1'000'000'000}));
    chain.Mine();

    Machine second;
    vm::MemoryStateStore replica;
    auto genesis_tip = second.vm.ApplyGenesis(replica, chain.genesis());
    ASSERT_TRUE(genesis_tip.ok());
    vm::ChainTip tip2 = *genesis_tip;
    std::size_t applied = 0;
    auto agree = [&] {
      const auto& all = chain.blocks();
      for (; applied < all.size(); ++applied) {
        auto r = second.vm.ApplyBlock(replica, tip2, all[applied]);
        ASSERT_TRUE(r.ok()) << "second VM rejects block " << all[applied].header.height << ": "
                            << r.status().ToString();
        tip2 = r->tip;
        for (const vm::Receipt& rc : r->receipts) {
          ++txs;
          failed += !rc.success;
        }
      }
      ASSERT_EQ(tip2, chain.tip());
      ASSERT_EQ(*vm::ComputeStateRoot(replica), *vm::ComputeStateRoot(chain.store()));
      auto audit = vm::AuditSupply(replica);
      ASSERT_TRUE(audit.ok()) << audit.status().ToString();
    };
    agree();
    d.Start();
    agree();
    games += d.game_ids().size();

    std::vector<crypto::Address> everyone;
    for (std::size_t a = 0; a < 2 + config.challengers.size(); ++a) everyone.push_back(d.key(a).address());
    for (const auto& a : actors) everyone.push_back(a.address());
    int idle = 0;
    for (int b = 0; b < 150 && idle < 8; ++b) {
      const std::size_t n = rng() % 5;
      for (std::size_t i = 0; i < n; ++i)
        chain.Submit(RandomMove(rng, chain, actors[rng() % actors.size()], everyone, d.tiny()));
      const std::size_t before = chain.blocks().size();
      if (!d.Step()) {
        chain.Mine();
        ++idle;
      }
      ASSERT_EQ(chain.blocks().size(), before + 1) << "the chain halted";
      agree();
      if (HasFatalFailure()) return;
    }
    blocks += chain.blocks().size();
  }
  std::printf("chain property: %llu sequences, %llu blocks, %llu transactions (%llu failed receipts), %llu games\n",
              static_cast<unsigned long long>(sequences), static_cast<unsigned long long>(blocks),
              static_cast<unsigned long long>(txs), static_cast<unsigned long long>(failed),
              static_cast<unsigned long long>(games));
  EXPECT_GT(txs, 0u);
  EXPECT_GT(failed, 0u) << "random actors should make some calls fail";
}

}  // namespace
}  // namespace vt::test
