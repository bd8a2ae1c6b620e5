#include "node/chain.h"

#include <algorithm>

#include "common/encoding.h"

namespace vt::node {

Chain::Chain(std::unique_ptr<ChainDb> db, GenesisFile genesis)
    : m_db(std::move(db)), m_genesis(std::move(genesis)), m_arbiter(m_graphs), m_vm(m_registry, &m_arbiter) {
  m_registry.Register(referee::kRefereeContractId, &m_referee);
}

Result<std::unique_ptr<Chain>> Chain::Open(const std::filesystem::path& dir, const GenesisFile& genesis) {
  VT_ASSIGN_OR_RETURN(auto db, ChainDb::Open(dir));
  std::unique_ptr<Chain> chain(new Chain(std::move(db), genesis));
  VT_ASSIGN_OR_RETURN(auto stored, chain->m_db->StoredGenesis());
  if (!stored) {
    vm::StateOverlay staged(*chain->m_db);
    VT_ASSIGN_OR_RETURN(vm::ChainTip tip, chain->m_vm.ApplyGenesis(staged, genesis.genesis));
    VT_TRY(chain->m_db->CommitGenesis(staged.batch(), genesis.genesis, tip));
    chain->m_tip = tip;
    return chain;
  }
  if (!(*stored == genesis.genesis))
    return Status::Invalid("db-wrong-genesis", "the data directory holds another chain");
  VT_TRY(chain->m_db->Verify());
  VT_ASSIGN_OR_RETURN(auto tip, chain->m_db->Tip());
  if (!tip) return Status::Invalid("db-corrupt", "genesis without a tip");
  chain->m_tip = *tip;
  return chain;
}

vm::ChainTip Chain::tip() const {
  std::lock_guard lock(m_mu);
  return m_tip;
}

Result<vm::BlockResult> Chain::AddBlock(const vm::Block& block) {
  std::lock_guard lock(m_mu);
  if (block.header.height != m_tip.height + 1 || block.header.parent_hash != m_tip.hash)
    return Status::Invalid("block-not-next", "height " + std::to_string(block.header.height) + " on tip " +
                                                 std::to_string(m_tip.height));
  VT_TRY(m_genesis.CheckProposer(block.header, m_tip.time));
  vm::StateOverlay staged(*m_db);
  VT_ASSIGN_OR_RETURN(vm::BlockResult result, m_vm.ApplyBlock(staged, m_tip, block));
  VT_TRY(m_db->CommitBlock(staged.batch(), result.block, result.receipts, result.tip));
  m_tip = result.tip;
  return result;
}

Result<vm::BlockResult> Chain::Produce(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                       const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected) {
  std::lock_guard lock(m_mu);
  vm::StateOverlay staged(*m_db);
  VT_ASSIGN_OR_RETURN(vm::BlockResult result,
                      m_vm.ProduceBlock(staged, m_tip, std::move(candidates), time, key, rejected));
  VT_TRY(m_genesis.CheckProposer(result.block.header, m_tip.time));
  VT_TRY(m_db->CommitBlock(staged.batch(), result.block, result.receipts, result.tip));
  m_tip = result.tip;
  return result;
}

Result<vm::Block> Chain::Rollback() {
  std::lock_guard lock(m_mu);
  VT_ASSIGN_OR_RETURN(vm::Block block, m_db->RollbackTip());
  VT_ASSIGN_OR_RETURN(auto tip, m_db->Tip());
  if (!tip) return Status::Invalid("db-corrupt", "no tip after rollback");
  m_tip = *tip;
  return block;
}

Status Chain::CheckTransaction(const vm::Transaction& tx) const {
  std::lock_guard lock(m_mu);
  Status s = m_vm.CheckTransaction(*m_db, tx);
  if (s.ok() || s.reason() != vm::reasons::kBadNonce) return s;
  // A nonce ahead of the account's: queue it if the rest checks out.
  auto sender = vm::TxSenderAddress(tx);
  if (!sender.ok()) return sender.status();
  auto account = vm::ReadAccount(*m_db, *sender);
  if (!account.ok()) return account.status();
  if (tx.nonce <= account->nonce || tx.nonce > account->nonce + kMaxNonceGap) return s;
  if (tx.chain_id != m_genesis.genesis.params.chain_id) return Status::Invalid(vm::reasons::kWrongChain);
  if (!vm::VerifyTransactionSignature(tx)) return Status::Invalid(vm::reasons::kBadSignature);
  return Status::Ok();
}

// ---- Mempool ---------------------------------------------------------------------

Status Mempool::Add(const vm::Transaction& tx, std::size_t encoded_size) {
  const Hash256 id = vm::TxId(tx);
  std::lock_guard lock(m_mu);
  if (m_txs.count(id)) return Status::Invalid("mempool-duplicate");
  if (m_txs.size() >= m_max_txs || m_bytes + encoded_size > m_max_bytes) return Status::Invalid("mempool-full");
  m_txs.emplace(id, Entry{tx, encoded_size, m_seq++});
  m_bytes += encoded_size;
  return Status::Ok();
}

bool Mempool::Contains(const Hash256& id) const {
  std::lock_guard lock(m_mu);
  return m_txs.count(id) != 0;
}

std::vector<vm::Transaction> Mempool::Candidates(std::size_t max) const {
  std::lock_guard lock(m_mu);
  std::vector<const Entry*> entries;
  entries.reserve(m_txs.size());
  for (const auto& [id, e] : m_txs) entries.push_back(&e);
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    return a->tx.nonce != b->tx.nonce ? a->tx.nonce < b->tx.nonce : a->seq < b->seq;
  });
  std::vector<vm::Transaction> out;
  for (const Entry* e : entries) {
    if (out.size() >= max) break;
    out.push_back(e->tx);
  }
  return out;
}

void Mempool::Remove(const std::vector<Hash256>& ids) {
  std::lock_guard lock(m_mu);
  for (const Hash256& id : ids) {
    const auto it = m_txs.find(id);
    if (it == m_txs.end()) continue;
    m_bytes -= it->second.size;
    m_txs.erase(it);
  }
}

void Mempool::RemoveIf(const std::function<bool(const vm::Transaction&)>& dead) {
  std::lock_guard lock(m_mu);
  for (auto it = m_txs.begin(); it != m_txs.end();) {
    if (dead(it->second.tx)) {
      m_bytes -= it->second.size;
      it = m_txs.erase(it);
    } else {
      ++it;
    }
  }
}

std::size_t Mempool::size() const {
  std::lock_guard lock(m_mu);
  return m_txs.size();
}

std::size_t Mempool::bytes() const {
  std::lock_guard lock(m_mu);
  return m_bytes;
}

}  // namespace vt::node
