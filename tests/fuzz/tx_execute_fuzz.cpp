// Fuzz target for the transaction executor: a block of transactions (format
// in tx_execute_fuzz.h) signed by the agents of a live dispute — a bounty
// posted, claimed and committed by a lying solver, a game opened by an
// honest challenger and walked a few moves — is produced by one VM and
// replayed by a second, independent one. Properties: no crash, no exception
// past the VM, production never fails because of a transaction, both VMs
// reach the same state root and receipts, the supply invariant holds.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "referee/messages.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tx_execute_fuzz.h"
#include "tests/referee/scenario.h"

namespace {

using namespace vt;

// One VM: a registry with the referee and the arbitration precompile.
struct Machine {
  referee::Referee referee;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter{graphs};
  vm::ContractRegistry registry;
  vm::Vm vm{registry, &arbiter};
  Machine() { registry.Register(referee::kRefereeContractId, &referee); }
};

struct World {
  std::unique_ptr<test::ScenarioDriver> driver;
  vm::MemoryStateStore base;
  vm::ChainTip tip;
  std::vector<crypto::SecretKey> keys;
  crypto::SecretKey proposer = test::TestKey(1000);
  vm::Amount supply = 0;
  Machine producer, validator;

  World() {
    test::ScenarioConfig config;
    config.solver.lies = {test::Lie{test::LieKind::kOutput, 4, 2}};
    config.challengers = {test::AgentPlan{}};
    driver = std::make_unique<test::ScenarioDriver>(config);
    driver->Start();
    for (int i = 0; i < 3; ++i) driver->Step();
    base = driver->chain().store();
    tip = driver->chain().tip();
    for (std::size_t a = 0; a < 3; ++a) keys.push_back(test::TestKey(static_cast<std::uint32_t>(1 + a)));  // the agents' keys
    keys.push_back(test::TestKey(4242));  // never funded
    supply = vm::AuditSupply(base).value().supply;
  }
};

World& TheWorld() {
  static World* world = new World();
  return *world;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = TheWorld();
  const auto records = fuzz::ParseExecInput(data, size);
  std::vector<vm::Transaction> txs;
  std::map<crypto::Address, std::uint64_t> nonces;
  for (const fuzz::ExecRecord& r : records) {
    const crypto::SecretKey& key = w.keys[r.agent % w.keys.size()];
    vm::Transaction tx;
    tx.chain_id = test::TestChain::kChainId;
    auto [it, fresh] = nonces.try_emplace(key.address(), 0);
    if (fresh) it->second = vm::ReadAccount(w.base, key.address()).value().nonce;
    tx.nonce = it->second++;
    tx.gas_limit = 200'000'000;
    tx.gas_price = 1;
    if (r.kind == 0) {
      vm::Amount amount = 0;
      for (std::size_t i = 0; i < 8 && i < r.args.size(); ++i) amount |= vm::Amount{r.args[i]} << (8 * i);
      const std::size_t to = r.args.size() > 8 ? r.args[8] % w.keys.size() : 0;
      tx.payload = vm::TransferPayload{w.keys[to].address(), amount};
    } else {
      tx.payload = vm::CallPayload{referee::kRefereeContractId, r.kind, r.args};
    }
    fuzz::Check(vm::SignTransaction(tx, key).ok(), "signing failed");
    txs.push_back(std::move(tx));
  }

  vm::MemoryStateStore produced = w.base;
  std::vector<vm::RejectedTx> rejected;
  auto block = w.producer.vm.ProduceBlock(produced, w.tip, txs, w.tip.time + 5, w.proposer, &rejected);
  fuzz::Check(block.ok(), "block production failed because of a transaction");
  fuzz::Check(block->block.txs.size() + rejected.size() == txs.size(), "a transaction is neither in nor out");

  vm::MemoryStateStore replayed = w.base;
  auto applied = w.validator.vm.ApplyBlock(replayed, w.tip, block->block);
  fuzz::Check(applied.ok(), "a validator rejects the produced block");
  fuzz::Check(applied->tip == block->tip, "validator reaches another state");
  fuzz::Check(applied->receipts == block->receipts, "validator computes other receipts");

  auto audit = vm::AuditSupply(produced);
  fuzz::Check(audit.ok() && audit->supply == w.supply, "supply invariant broken");
  return 0;
}
