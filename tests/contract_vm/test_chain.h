#pragma once
// An in-process chain for tests: a MemoryStateStore, a Vm, deterministic
// keys, a mempool and a block clock. After every block it audits the supply
// invariant (balances + escrows + burned = genesis supply) and keeps the
// receipts so tests can look at reasons and events.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <cstdint>
#include <string>
#include <vector>

#include "contract_vm/block.h"
#include "contract_vm/contract.h"
#include "contract_vm/state.h"
#include "contract_vm/tx.h"
#include "contract_vm/vm.h"
#include "crypto/keys.h"

namespace vt::test {

// A valid secret key derived from a small number (never 0).
inline crypto::SecretKey TestKey(std::uint32_t n) {
  std::array<std::uint8_t, 32> bytes{};
  bytes[0] = 0x01;
  bytes[28] = static_cast<std::uint8_t>(n >> 24);
  bytes[29] = static_cast<std::uint8_t>(n >> 16);
  bytes[30] = static_cast<std::uint8_t>(n >> 8);
  bytes[31] = static_cast<std::uint8_t>(n);
  auto key = crypto::SecretKey::FromBytes(bytes);
  EXPECT_TRUE(key.ok());
  return std::move(key).value();
}

class TestChain {
 public:
  static constexpr std::uint64_t kChainId = 7;
  static constexpr std::uint64_t kGasPrice = 1;
  static constexpr std::uint64_t kBlockSeconds = 5;

  // Accounts 1..accounts get `funds` each; key 1000 proposes blocks.
  TestChain(const vm::ContractRegistry& contracts, const vm::Arbiter* arbiter, std::uint32_t accounts,
            vm::Amount funds)
      : m_vm(contracts, arbiter), m_proposer(TestKey(1000)) {
    vm::Genesis g;
    g.params.chain_id = kChainId;
    g.time = 1'700'000'000;
    for (std::uint32_t i = 1; i <= accounts; ++i) g.allocations.push_back({TestKey(i).address(), funds});
    std::sort(g.allocations.begin(), g.allocations.end(),
              [](const vm::Allocation& a, const vm::Allocation& b) { return a.address < b.address; });
    auto tip = m_vm.ApplyGenesis(m_store, g);
    EXPECT_TRUE(tip.ok()) << tip.status().ToString();
    m_tip = *tip;
    EXPECT_TRUE(m_vm.ApplyGenesis(m_replica, g).ok());
    m_genesis = g;
    m_supply = static_cast<vm::Amount>(accounts) * funds;
  }

  const vm::Vm& vm() const { return m_vm; }
  vm::MemoryStateStore& store() { return m_store; }
  const vm::ChainTip& tip() const { return m_tip; }
  std::uint64_t height() const { return m_tip.height; }
  crypto::Address proposer_address() const { return m_proposer.address(); }
  const vm::Genesis& genesis() const { return m_genesis; }

  vm::Account AccountOf(const crypto::Address& a) {
    auto acc = vm::ReadAccount(m_store, a);
    EXPECT_TRUE(acc.ok());
    return acc.value_or(vm::Account{});
  }
  vm::Amount BalanceOf(const crypto::Address& a) { return AccountOf(a).balance; }

  // A signed transaction from `key` with the next nonce that this chain's
  // pending pool assigns (so several txs per block work).
  vm::Transaction MakeTx(const crypto::SecretKey& key, std::variant<vm::TransferPayload, vm::CallPayload> payload,
                         std::uint64_t gas_limit = 0) {
    vm::Transaction tx;
    tx.chain_id = kChainId;
    tx.nonce = NextNonce(key.address());
    tx.gas_price = kGasPrice;
    tx.payload = std::move(payload);
    tx.gas_limit = gas_limit != 0 ? gas_limit : kDefaultGas;
    EXPECT_TRUE(vm::SignTransaction(tx, key).ok());
    return tx;
  }
  vm::Transaction Call(const crypto::SecretKey& key, std::uint16_t contract, std::uint16_t method, Bytes args,
                       std::uint64_t gas_limit = 0) {
    return MakeTx(key, vm::CallPayload{contract, method, std::move(args)}, gas_limit);
  }

  void Submit(vm::Transaction tx) {
    m_nonces[tx.sender] = tx.nonce + 1;
    m_pending.push_back(std::move(tx));
  }

  // Produces a block from the pending pool, replays it on a second store
  // (block validation path), audits supply. Returns the receipts.
  std::vector<vm::Receipt> Mine() {
    std::vector<vm::RejectedTx> rejected;
    auto result = m_vm.ProduceBlock(m_store, m_tip, std::move(m_pending), m_tip.time + kBlockSeconds, m_proposer,
                                    &rejected);
    m_pending.clear();
    m_nonces.clear();
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    if (!result.ok()) return {};
    m_last_rejected = std::move(rejected);
    auto replayed = m_vm.ApplyBlock(m_replica, m_tip, result->block);
    EXPECT_TRUE(replayed.ok()) << "validator rejects block " << result->tip.height << ": "
                               << replayed.status().ToString();
    if (replayed.ok()) {
      EXPECT_EQ(replayed->tip, result->tip);
    }
    m_tip = result->tip;
    m_blocks.push_back(result->block);
    auto audit = vm::AuditSupply(m_store);
    EXPECT_TRUE(audit.ok()) << "after block " << m_tip.height << ": " << audit.status().ToString();
    if (audit.ok()) {
      EXPECT_EQ(audit->supply, m_supply);
    }
    for (const vm::Receipt& r : result->receipts) m_receipts.push_back(r);
    return result->receipts;
  }
  // Mines empty blocks until the chain is at `height`.
  void MineUntil(std::uint64_t height) {
    while (m_tip.height < height) Mine();
  }

  // Submit one transaction, mine, return its receipt (or fail the test).
  vm::Receipt Run(vm::Transaction tx) {
    const Hash256 id = vm::TxId(tx);
    Submit(std::move(tx));
    const auto receipts = Mine();
    for (const vm::Receipt& r : receipts)
      if (r.tx_id == id) return r;
    ADD_FAILURE() << "transaction was not included: "
                  << (m_last_rejected.empty() ? std::string("?") : m_last_rejected.back().status.ToString());
    return {};
  }

  const std::vector<vm::RejectedTx>& last_rejected() const { return m_last_rejected; }
  const std::vector<vm::Block>& blocks() const { return m_blocks; }
  const std::vector<vm::Receipt>& all_receipts() const { return m_receipts; }

  static constexpr std::uint64_t kDefaultGas = 50'000'000;

 private:
  std::uint64_t NextNonce(const crypto::Address& a) {
    for (const auto& [sender, nonce] : m_nonces) {
      auto key = crypto::PublicKey::FromBytes(sender);
      if (key.ok() && key->address() == a) return nonce;
    }
    return AccountOf(a).nonce;
  }

  vm::MemoryStateStore m_store;
  vm::Vm m_vm;
  crypto::SecretKey m_proposer;
  vm::MemoryStateStore m_replica;  // a validator that applies every produced block
  vm::Genesis m_genesis;
  vm::ChainTip m_tip;
  vm::Amount m_supply = 0;
  std::vector<vm::Transaction> m_pending;
  std::map<std::array<std::uint8_t, 32>, std::uint64_t> m_nonces;
  std::vector<vm::RejectedTx> m_last_rejected;
  std::vector<vm::Block> m_blocks;
  std::vector<vm::Receipt> m_receipts;
};

}  // namespace vt::test
