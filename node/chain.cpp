#include "node/chain.h"

#include <algorithm>

#include "common/encoding.h"

namespace vt::node {

Chain::Chain(std::unique_ptr<ChainDb> db, GenesisFile genesis, VoteEvidenceRules rules)
    : m_db(std::move(db)),
      m_genesis(std::move(genesis)),
      m_arbiter(m_graphs),
      m_evidence_rules(std::move(rules)),
      m_vm(m_registry, &m_arbiter, &m_evidence_rules) {
  m_registry.Register(referee::kRefereeContractId, &m_referee);
}

Result<std::unique_ptr<Chain>> Chain::Open(const std::filesystem::path& dir, const GenesisFile& genesis) {
  std::vector<crypto::PublicKey> keys;
  for (const Validator& v : genesis.validators) keys.push_back(v.pubkey);
  VT_ASSIGN_OR_RETURN(consensus::ValidatorSet set, consensus::ValidatorSet::Create(std::move(keys)));
  VT_ASSIGN_OR_RETURN(auto db, ChainDb::Open(dir));
  std::unique_ptr<Chain> chain(
      new Chain(std::move(db), genesis, VoteEvidenceRules(genesis.genesis.params.chain_id, std::move(set))));
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

Result<vm::BlockResult> Chain::CheckLocked(const vm::Block& block) {
  if (block.header.height != m_tip.height + 1 || block.header.parent_hash != m_tip.hash)
    return Status::Invalid("block-not-next", "height " + std::to_string(block.header.height) + " on tip " +
                                                 std::to_string(m_tip.height));
  const Hash256 hash = vm::BlockHash(block.header);
  if (m_staged && m_staged->parent == m_tip.hash && m_staged->block == hash) return m_staged->result;
  VT_TRY(m_genesis.CheckProposer(block.header, m_tip.time));
  vm::StateOverlay staged(*m_db);
  VT_ASSIGN_OR_RETURN(vm::BlockResult result, m_vm.ApplyBlock(staged, m_tip, block));
  m_staged = Staged{m_tip.hash, hash, staged.batch(), result};
  return result;
}

Result<vm::BlockResult> Chain::Check(const vm::Block& block) {
  std::lock_guard lock(m_mu);
  return CheckLocked(block);
}

Result<vm::BlockResult> Chain::AddBlock(const vm::Block& block, ByteSpan certificate) {
  std::lock_guard lock(m_mu);
  VT_ASSIGN_OR_RETURN(vm::BlockResult result, CheckLocked(block));
  VT_TRY(m_db->CommitBlock(m_staged->writes, result.block, result.receipts, result.tip, certificate));
  m_tip = result.tip;
  m_staged.reset();
  return result;
}

Result<vm::BlockResult> Chain::Build(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                     const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected,
                                     std::vector<Bytes> evidence) {
  std::lock_guard lock(m_mu);
  vm::StateOverlay staged(*m_db);
  VT_ASSIGN_OR_RETURN(vm::BlockResult result, m_vm.ProduceBlock(staged, m_tip, std::move(candidates), time, key,
                                                                rejected, std::move(evidence)));
  VT_TRY(m_genesis.CheckProposer(result.block.header, m_tip.time));
  m_staged = Staged{m_tip.hash, vm::BlockHash(result.block.header), staged.batch(), result};
  return result;
}

Result<vm::BlockResult> Chain::Produce(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                       const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected) {
  VT_ASSIGN_OR_RETURN(vm::BlockResult built, Build(std::move(candidates), time, key, rejected));
  return AddBlock(built.block);
}

Result<vm::Block> Chain::Rollback() {
  std::lock_guard lock(m_mu);
  m_staged.reset();
  VT_ASSIGN_OR_RETURN(vm::Block block, m_db->RollbackTip());
  VT_ASSIGN_OR_RETURN(auto tip, m_db->Tip());
  if (!tip) return Status::Invalid("db-corrupt", "no tip after rollback");
  m_tip = *tip;
  return block;
}

Result<vm::Account> Chain::CheckTransaction(const vm::Transaction& tx) const {
  std::lock_guard lock(m_mu);
  return m_vm.CheckAdmission(*m_db, tx);
}

std::vector<Bytes> Chain::EvidenceCandidates(const std::vector<HeldEvidence>& held, std::uint64_t height) const {
  std::lock_guard lock(m_mu);
  std::vector<Bytes> out;
  for (const HeldEvidence& ev : held) {
    if (out.size() >= vm::kMaxBlockEvidence) break;
    const vm::Offence& o = ev.offence;
    if (o.height > height || height - o.height > vm::kEvidenceMaxAge) continue;
    auto recorded = vm::ReadSlash(*m_db, o);
    if (!recorded.ok() || *recorded) continue;
    out.push_back(ev.item);
  }
  return out;
}

bool Chain::Recorded(const vm::Offence& offence) const {
  std::lock_guard lock(m_mu);
  auto recorded = vm::ReadSlash(*m_db, offence);
  return recorded.ok() && recorded->has_value();
}

Result<Chain::ValidatorStake> Chain::Stake(const crypto::PublicKey& validator) const {
  std::lock_guard lock(m_mu);
  ValidatorStake out;
  VT_ASSIGN_OR_RETURN(out.bond, vm::ReadBond(*m_db, validator.bytes()));
  VT_ASSIGN_OR_RETURN(out.summary, vm::ReadSlashSummary(*m_db, validator.bytes()));
  VT_ASSIGN_OR_RETURN(out.latest, vm::LatestSlashes(*m_db, validator.bytes(), kShownSlashes));
  return out;
}

}  // namespace vt::node
