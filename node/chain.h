#pragma once
// Chain: the node's view of one chain — the LevelDB store, the VM with the
// referee and the arbitration precompile, the tip — behind one mutex, so the
// P2P thread, the RPC handlers and the block producer can share it. And the
// Mempool: pending transactions, checked, deduplicated and bounded.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/result.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "node/chain_db.h"
#include "node/genesis.h"
#include "referee/messages.h"
#include "referee/referee.h"

namespace vt::node {

class Chain {
 public:
  // Opens the store in `dir`; writes the genesis state into an empty store,
  // otherwise checks that the store was made from this genesis ("db-wrong-genesis")
  // and verifies it (recovery after a crash: the tip names a complete block).
  static Result<std::unique_ptr<Chain>> Open(const std::filesystem::path& dir, const GenesisFile& genesis);

  const GenesisFile& genesis() const { return m_genesis; }
  vm::ChainTip tip() const;
  // The store (thread-safe for reads: LevelDB snapshots each Get).
  const ChainDb& db() const { return *m_db; }
  ChainDb& db() { return *m_db; }

  // Validates and appends a block at tip + 1: Invalid "block-not-next" when
  // its height or parent does not fit the tip (an orphan, not the sender's
  // fault), "block-bad-proposer" (consensus rule, genesis.h), or the VM's
  // block-* / tx-* reason.
  Result<vm::BlockResult> AddBlock(const vm::Block& block);
  // Proposes a block on the tip with `key`.
  Result<vm::BlockResult> Produce(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                  const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected);
  // Removes the tip block (fork choice); returns it.
  Result<vm::Block> Rollback();

  // The mempool's admission check against the tip state. A nonce ahead of
  // the account's (up to kMaxNonceGap) passes, so a client can queue.
  Status CheckTransaction(const vm::Transaction& tx) const;

  static constexpr std::uint64_t kMaxNonceGap = 256;

 private:
  Chain(std::unique_ptr<ChainDb> db, GenesisFile genesis);

  mutable std::mutex m_mu;
  std::unique_ptr<ChainDb> m_db;
  GenesisFile m_genesis;
  referee::Referee m_referee;
  vm::KernelsGraphSource m_graphs;
  vm::Arbiter m_arbiter;
  vm::ContractRegistry m_registry;
  vm::Vm m_vm;
  vm::ChainTip m_tip;
};

// Pending transactions: deduplicated by id, bounded in count and bytes,
// handed to the producer in nonce order (per sender that is the only order
// that can apply; across senders it does not matter).
class Mempool {
 public:
  Mempool(std::size_t max_txs = 20'000, std::size_t max_bytes = std::size_t{512} << 20)
      : m_max_txs(max_txs), m_max_bytes(max_bytes) {}

  // Invalid "mempool-duplicate", "mempool-full".
  Status Add(const vm::Transaction& tx, std::size_t encoded_size);
  bool Contains(const Hash256& id) const;
  // Up to `max` transactions, lowest nonce first, oldest first among equals.
  std::vector<vm::Transaction> Candidates(std::size_t max) const;
  // After a block: drop the included ones and those `keep` says are dead.
  void Remove(const std::vector<Hash256>& ids);
  void RemoveIf(const std::function<bool(const vm::Transaction&)>& dead);
  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Entry {
    vm::Transaction tx;
    std::size_t size = 0;
    std::uint64_t seq = 0;
  };
  mutable std::mutex m_mu;
  std::map<Hash256, Entry> m_txs;
  std::size_t m_bytes = 0;
  std::uint64_t m_seq = 0;
  std::size_t m_max_txs;
  std::size_t m_max_bytes;
};

}  // namespace vt::node
