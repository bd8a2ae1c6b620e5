#pragma once
// Chain: the node's view of one chain — the LevelDB store, the VM with the
// referee and the arbitration precompile, the tip — behind one mutex, so the
// P2P/consensus thread and the RPC handlers can share it. The
// mempool is node/mempool.h.

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
#include "node/evidence_pool.h"
#include "node/evidence_rules.h"
#include "node/genesis.h"
#include "node/mempool.h"
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

  // BFT finality (docs/node.md, "BFT finality"): a block is built or checked
  // on a staged StateOverlay without touching the store, and committed only
  // once it is final, with its commit certificate, in the block's one write.
  // The last staged block is kept, so committing the block just built or
  // checked does not execute it a second time.
  //
  // Proposes a block on the tip with `key`; nothing is stored. `evidence`:
  // candidate evidence items (EncodeEvidence); those that apply go in
  // (Vm::ProduceBlock), the others are left out.
  Result<vm::BlockResult> Build(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected,
                                std::vector<Bytes> evidence = {});
  // Whether `block` applies at tip + 1: Invalid "block-not-next" when its
  // height or parent does not fit the tip, "block-bad-proposer" (consensus
  // rule, genesis.h), or the VM's block-* / tx-* reason. Nothing is stored.
  Result<vm::BlockResult> Check(const vm::Block& block);
  // Check, then append the block with its encoded certificate (empty: none,
  // tests and tools only) in one synced write.
  Result<vm::BlockResult> AddBlock(const vm::Block& block, ByteSpan certificate = {});
  // Build + AddBlock without a certificate (tests and tools).
  Result<vm::BlockResult> Produce(std::vector<vm::Transaction> candidates, std::uint64_t time,
                                  const crypto::SecretKey& key, std::vector<vm::RejectedTx>* rejected);
  // Removes the tip block; returns it (tests: the node never reverts a final block).
  Result<vm::Block> Rollback();

  // The mempool's admission check against the tip state (Vm::CheckAdmission):
  // the sender's account when the transaction may be queued; a nonce ahead
  // of the account's passes here, the mempool bounds how far.
  Result<vm::Account> CheckTransaction(const vm::Transaction& tx) const;

  // A validator's bond and recorded offences in the tip state
  // (docs/node.md "Evidence and slashing").
  // Reads a bounded number of entries however often it was slashed.
  struct ValidatorStake {
    vm::Amount bond = 0;
    vm::SlashSummary summary;                                   // every offence
    std::vector<std::pair<vm::Offence, vm::SlashRecord>> latest;  // the last kShownSlashes, oldest first
  };
  static constexpr std::size_t kShownSlashes = 16;
  Result<ValidatorStake> Stake(const crypto::PublicKey& validator) const;
  // Of `held` (a driver's evidence, oldest first), what a block at
  // `height` on the tip may still carry: not recorded yet, not too old,
  // at most vm::kMaxBlockEvidence, encoded. Signatures are checked when
  // the block is built (Build), not here.
  std::vector<Bytes> EvidenceCandidates(const std::vector<HeldEvidence>& held, std::uint64_t height) const;
  // Whether the tip state records `offence` (it is refused from now on).
  bool Recorded(const vm::Offence& offence) const;

 private:
  Chain(std::unique_ptr<ChainDb> db, GenesisFile genesis, VoteEvidenceRules rules);
  // A block applied on a StateOverlay over the tip `parent`, not stored yet.
  struct Staged {
    Hash256 parent;
    Hash256 block;
    vm::WriteBatch writes;
    vm::BlockResult result;
  };
  Result<vm::BlockResult> CheckLocked(const vm::Block& block);

  mutable std::mutex m_mu;
  std::unique_ptr<ChainDb> m_db;
  GenesisFile m_genesis;
  referee::Referee m_referee;
  vm::KernelsGraphSource m_graphs;
  vm::Arbiter m_arbiter;
  vm::ContractRegistry m_registry;
  VoteEvidenceRules m_evidence_rules;
  vm::Vm m_vm;
  vm::ChainTip m_tip;
  std::optional<Staged> m_staged;  // the last block built or checked
};

}  // namespace vt::node
