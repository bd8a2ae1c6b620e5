// The mempool under attack (issue 15 items 2-4 and 6): unfunded floods,
// same-nonce spam, far-future nonces, oversized transactions, and a
// randomized adversary against the pool's invariants. In-process: a Chain
// on a temporary LevelDB and the Mempool the node uses.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "common/limits.h"
#include "node/chain.h"
#include "node/mempool.h"
#include "tests/node/node_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

constexpr std::uint64_t kT0 = 1'700'000'000'000;

vm::Transaction Priced(const crypto::SecretKey& from, std::uint64_t nonce, vm::Amount price, vm::Amount amount = 1) {
  vm::Transaction tx;
  tx.chain_id = 7;
  tx.nonce = nonce;
  tx.gas_limit = 100'000;
  tx.gas_price = price;
  tx.payload = vm::TransferPayload{NodeTestKey(999).address(), amount};
  EXPECT_TRUE(vm::SignTransaction(tx, from).ok());
  return tx;
}

std::size_t Size(const vm::Transaction& tx) { return vm::EncodeTransaction(tx).size(); }

// The node's door: Chain::CheckTransaction, then the pool.
Status Admit(node::Chain& chain, node::Mempool& pool, const vm::Transaction& tx) {
  auto account = chain.CheckTransaction(tx);
  if (!account.ok()) return account.status();
  return pool.Add(tx, Size(tx), *account).status();
}

std::uint64_t NonceAt(node::Chain& chain, const crypto::Address& a) { return vm::ReadAccount(chain.db(), a)->nonce; }

TEST(MempoolAttack, ZeroBalanceFloodDoesNotDelayFundedTx) {
  TempDir dir("mempool-flood");
  auto chain = node::Chain::Open(dir.path(), MakeTestGenesis(1, 2, 100, 300, kT0));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  node::Mempool pool;
  // 4,200 fresh keys, each sending nonce 1 (queued) and nonce 0 (next): the
  // issue's reproduction filled every mempool with these.
  std::map<std::string, int> reasons;
  for (std::uint32_t k = 0; k < 4200; ++k) {
    const auto key = NodeTestKey(10'000 + k);
    for (std::uint64_t nonce : {1, 0}) {
      Status s = Admit(**chain, pool, Priced(key, nonce, 1 + k % 50));
      EXPECT_FALSE(s.ok()) << "an unfunded key queued nonce " << nonce;
      ++reasons[s.reason()];
    }
  }
  EXPECT_EQ(pool.size(), 0u);
  EXPECT_EQ(reasons["mempool-insufficient-funds"], 4200) << "queued nonces: the pending-funds rule";
  EXPECT_EQ(reasons["tx-insufficient-funds"], 4200) << "next nonces: the executor's check";
  // A funded transfer goes straight into the next block.
  const auto funded = NodeTestKey(100);
  const vm::Transaction tx = Priced(funded, 0, 1);
  ASSERT_TRUE(Admit(**chain, pool, tx).ok());
  auto nonce_of = [&](const crypto::Address& a) { return NonceAt(**chain, a); };
  std::vector<vm::RejectedTx> rejected;
  auto block = (*chain)->Produce(pool.Candidates(4096, nonce_of), kT0 + 100, NodeTestKey(1), &rejected);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  ASSERT_EQ(block->block.txs.size(), 1u);
  EXPECT_EQ(block->block.txs[0], tx);
}

TEST(MempoolAttack, FundedLowFeeFloodIsEvictedForABetterPayingTx) {
  node::Mempool pool(node::MempoolLimits{.max_txs = 40, .max_bytes = std::size_t{1} << 20});
  const vm::Account rich{1'000'000'000'000, 0};
  // Ten spammers fill the pool at gas price 1, four nonces each.
  for (std::uint32_t k = 0; k < 10; ++k)
    for (std::uint64_t n = 0; n < 4; ++n) {
      const auto tx = Priced(NodeTestKey(200 + k), n, 1);
      ASSERT_TRUE(pool.Add(tx, Size(tx), rich).ok());
    }
  ASSERT_EQ(pool.size(), 40u);
  // Paying the same is refused; paying more evicts the furthest-future spam tx.
  const auto same = Priced(NodeTestKey(300), 0, 1);
  EXPECT_EQ(pool.Add(same, Size(same), rich).status().reason(), "mempool-full");
  const auto better = Priced(NodeTestKey(300), 0, 2);
  auto r = pool.Add(better, Size(better), rich);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(r->front().reason, "mempool-evicted");
  EXPECT_EQ(pool.size(), 40u);
  EXPECT_TRUE(pool.Contains(vm::TxId(better)));
  // The evicted one was a sender's last nonce (no gap left behind).
  for (std::uint32_t k = 0; k < 10; ++k) {
    const auto nonces = pool.PendingNonces(NodeTestKey(200 + k).address());
    for (std::size_t i = 0; i < nonces.size(); ++i) EXPECT_EQ(nonces[i], i);
  }
  // And it is proposed first.
  const auto c = pool.Candidates(1, [](const crypto::Address&) { return std::uint64_t{0}; });
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], better);
}

TEST(MempoolAttack, SameNonceNeedsAStrictlyHigherFee) {
  node::Mempool pool;
  const auto a = NodeTestKey(100);
  const vm::Account acct{1'000'000'000, 0};
  const auto first = Priced(a, 0, 5, 1);
  ASSERT_TRUE(pool.Add(first, Size(first), acct).ok());
  const auto again = Priced(a, 0, 5, 2);  // another tx, same nonce, same price
  auto refused = pool.Add(again, Size(again), acct);
  EXPECT_EQ(refused.status().reason(), "mempool-replacement-underpriced");
  EXPECT_NE(refused.status().ToString().find("must pay more"), std::string::npos) << "refused with a reason";
  const auto cheaper = Priced(a, 0, 4, 3);
  EXPECT_EQ(pool.Add(cheaper, Size(cheaper), acct).status().reason(), "mempool-replacement-underpriced");
  const auto higher = Priced(a, 0, 6, 4);
  auto replaced = pool.Add(higher, Size(higher), acct);
  ASSERT_TRUE(replaced.ok());
  ASSERT_EQ(replaced->size(), 1u);
  EXPECT_EQ(replaced->front().tx_id, vm::TxId(first));
  EXPECT_EQ(replaced->front().reason, "mempool-replaced");
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_FALSE(pool.Contains(vm::TxId(first)));
  EXPECT_EQ(pool.bytes(), Size(higher));
  EXPECT_EQ(pool.Add(higher, Size(higher), acct).status().reason(), "mempool-duplicate");
}

TEST(MempoolAttack, NonceWindowPerSenderBoundAndPendingFunds) {
  node::Mempool pool;
  const auto a = NodeTestKey(100);
  const vm::Account acct{1'000'000'000, 10};
  const auto stale = Priced(a, 9, 1);
  EXPECT_EQ(pool.Add(stale, Size(stale), acct).status().reason(), vm::reasons::kBadNonce);
  const auto far = Priced(a, 10 + limits::kMaxNonceAhead + 1, 1);
  EXPECT_EQ(pool.Add(far, Size(far), acct).status().reason(), "mempool-nonce-too-far");
  const auto edge = Priced(a, 10 + limits::kMaxNonceAhead, 1);
  EXPECT_TRUE(pool.Add(edge, Size(edge), acct).ok());
  for (std::uint64_t n = 10; n < 10 + limits::kMaxPendingPerSender - 1; ++n) {
    const auto tx = Priced(a, n, 1);
    ASSERT_TRUE(pool.Add(tx, Size(tx), acct).ok()) << n;
  }
  const auto one_more = Priced(a, 10 + limits::kMaxPendingPerSender - 1, 1);
  EXPECT_EQ(pool.Add(one_more, Size(one_more), acct).status().reason(), "mempool-sender-full");

  // Funds: each transfer costs 100'000 gas + its amount; the balance covers three.
  node::Mempool fresh;
  const auto b = NodeTestKey(101);
  const vm::Account poor{3 * 100'001 + 50, 0};
  for (std::uint64_t n = 0; n < 3; ++n) {
    const auto tx = Priced(b, n, 1, 1);
    ASSERT_TRUE(fresh.Add(tx, Size(tx), poor).ok()) << n;
  }
  const auto fourth = Priced(b, 3, 1, 1);
  EXPECT_EQ(fresh.Add(fourth, Size(fourth), poor).status().reason(), "mempool-insufficient-funds");
  // A replacement is judged without the tx it replaces.
  const auto bump = Priced(b, 2, 2, 1);
  EXPECT_EQ(fresh.Add(bump, Size(bump), poor).status().reason(), "mempool-insufficient-funds")
      << "price 2 doubles the fee";
}

TEST(MempoolAttack, OversizedTxRefusedAtTheDoor) {
  TempDir dir("mempool-big");
  auto chain = node::Chain::Open(dir.path(), MakeTestGenesis(1, 2, 100, 300, kT0));
  ASSERT_TRUE(chain.ok());
  node::Mempool pool;
  vm::Transaction big;
  big.chain_id = 7;
  big.gas_limit = 20'000'000;
  big.gas_price = 1;
  big.payload = vm::CallPayload{1, 1, Bytes(limits::kMaxTxBytes, 0)};
  ASSERT_TRUE(vm::SignTransaction(big, NodeTestKey(100)).ok());
  EXPECT_EQ((*chain)->CheckTransaction(big).status().reason(), vm::reasons::kTooLarge);
  EXPECT_EQ(pool.Add(big, Size(big), vm::Account{1'000'000'000'000, 0}).status().reason(), vm::reasons::kTooLarge);
  EXPECT_EQ(vm::DecodeTransaction(vm::EncodeTransaction(big)).status().reason(), vm::reasons::kTooLarge);
  EXPECT_EQ(pool.size(), 0u);
}

// A randomized adversary: many senders, random nonces, prices, balances,
// replacements, blocks that advance nonces. After every operation the pool
// keeps its bounds, one tx per (sender, nonce), and what it proposes applies
// in order.
TEST(MempoolProperty, RandomAdversaryNeverBreaksTheBounds) {
  const node::MempoolLimits lim{.max_txs = 60, .max_bytes = 60 * 160, .per_sender = 8, .nonce_ahead = 10};
  node::Mempool pool(lim);
  std::mt19937_64 rng(TestSeed());
  std::vector<crypto::SecretKey> keys;
  for (std::uint32_t k = 0; k < 24; ++k) keys.push_back(NodeTestKey(500 + k));
  std::map<crypto::Address, vm::Account> accounts;
  for (const auto& k : keys) accounts[k.address()] = vm::Account{(rng() % 4) * 300'000, rng() % 3};
  auto nonce_of = [&](const crypto::Address& a) { return accounts[a].nonce; };
  std::size_t admitted = 0;
  for (int op = 0; op < 3000; ++op) {
    const auto& key = keys[rng() % keys.size()];
    vm::Account& acct = accounts[key.address()];
    if (rng() % 10 == 0) {
      // A block: some senders advance.
      for (auto& [a, acc] : accounts)
        if (rng() % 3 == 0) acc.nonce += 1 + rng() % 2;
      pool.DropStale(nonce_of);
    } else {
      const std::uint64_t nonce = acct.nonce + rng() % 14 - (rng() % 5 == 0 ? 1 : 0);
      const auto tx = Priced(key, nonce, 1 + rng() % 4, rng() % 1000);
      admitted += pool.Add(tx, Size(tx), acct).ok();
    }
    ASSERT_LE(pool.size(), lim.max_txs);
    ASSERT_LE(pool.bytes(), lim.max_bytes);
    std::size_t total = 0;
    for (const auto& k : keys) {
      const auto nonces = pool.PendingNonces(k.address());
      total += nonces.size();
      ASSERT_LE(nonces.size(), lim.per_sender);
      ASSERT_EQ(std::set<std::uint64_t>(nonces.begin(), nonces.end()).size(), nonces.size());
      for (std::uint64_t n : nonces) {
        ASSERT_GE(n, accounts[k.address()].nonce);
        ASSERT_LE(n, accounts[k.address()].nonce + lim.nonce_ahead);
      }
    }
    ASSERT_EQ(total, pool.size());
    // Candidates: per sender, consecutive nonces from the account's.
    std::map<crypto::Address, std::uint64_t> next;
    for (const vm::Transaction& tx : pool.Candidates(1000, nonce_of)) {
      const crypto::Address from = *vm::TxSenderAddress(tx);
      auto [it, fresh] = next.try_emplace(from, accounts[from].nonce);
      ASSERT_EQ(tx.nonce, it->second);
      ++it->second;
    }
  }
  EXPECT_GT(admitted, 100u) << "the adversary should get some transactions in";
}

}  // namespace
}  // namespace vt::test
