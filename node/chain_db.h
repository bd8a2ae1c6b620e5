#pragma once
// The node's persistent store: one LevelDB database holding the chain state
// (the VM's StateStore), the blocks, their receipts, a transaction index and
// the tip. Every block is committed in ONE synced LevelDB write batch — its
// state changes, the block, its receipts, its index entries and the new tip —
// so a crash (kill -9, power loss) leaves either the whole block or none of
// it. On open the tip is reloaded and checked against the stored block.
//
// Key layout (all inside the one database):
//   "s" ‖ state key              → state value (vm/state.h layout)
//   "b" ‖ u64be height           → encoded vm::Block
//   "r" ‖ u64be height           → receipts: varint count ‖ vm::Receipt…
//   "x" ‖ tx id(32)              → u64be height ‖ u32be index
//   "c" ‖ u64be height           → the block's commit certificate
//                                  (consensus/commit.h), written with the block
//   "u" ‖ u64be height           → undo record: the previous value of every
//                                  state key the block wrote (for RollbackTip)
//   "m/tip"                      → ChainTip (u64 chain_id ‖ u64 height ‖ hash ‖ u64 time)
//   "m/genesis"                  → encoded vm::Genesis the database was created with
//   "m/blobs/" ‖ sha256          → blob bytes (content-addressed, for peers)
//   "m/pins/" ‖ sha256           → u64be height of the first block naming the blob
//                                  (node/blob_rules.h BlockBlobs): kept for good
//   "m/uploads/" ‖ sha256        → UploadRecord (node/blob_upload.h) of a blob no
//                                  block names yet: who stored it, when; written
//                                  with the blob, removed when a block pins it
//                                  (same batch) or the blob is collected

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/block.h"
#include "contract_vm/state.h"
#include "contract_vm/vm.h"
#include "node/blob_upload.h"

namespace leveldb {
class DB;
}

namespace vt::node {

struct TxLocation {
  std::uint64_t height = 0;
  std::uint32_t index = 0;
};

class ChainDb final : public vm::StateStore {
 public:
  // Opens (creating when absent) the database in `dir`. Error "db-open-failed".
  static Result<std::unique_ptr<ChainDb>> Open(const std::filesystem::path& dir);
  ~ChainDb() override;
  ChainDb(const ChainDb&) = delete;
  ChainDb& operator=(const ChainDb&) = delete;

  // vm::StateStore over the "s" prefix. Commit writes a state-only batch
  // (used by genesis); blocks go through CommitBlock.
  Result<std::optional<Bytes>> Get(ByteSpan key) const noexcept override;
  Status Scan(ByteSpan prefix, const vm::ScanVisitor& visit) const noexcept override;
  Status Commit(const vm::WriteBatch& batch) noexcept override;

  // Genesis: the state batch, the genesis record and tip 0 in one write.
  Status CommitGenesis(const vm::WriteBatch& state, const vm::Genesis& genesis, const vm::ChainTip& tip) noexcept;
  // One block: state changes, block, receipts, tx index, tip and (when not
  // empty) its encoded commit certificate, atomically (synced).
  Status CommitBlock(const vm::WriteBatch& state, const vm::Block& block, const std::vector<vm::Receipt>& receipts,
                     const vm::ChainTip& tip, ByteSpan certificate = {}) noexcept;

  // Undoes the tip block (state, block, receipts, index, tip) in one write
  // and returns it (recovery and tests; final blocks are never rolled back
  // by the node).
  Result<vm::Block> RollbackTip() noexcept;

  // nullopt before genesis.
  Result<std::optional<vm::ChainTip>> Tip() const noexcept;
  Result<std::optional<vm::Genesis>> StoredGenesis() const noexcept;
  Result<std::optional<vm::Block>> BlockAt(std::uint64_t height) const noexcept;
  Result<std::optional<Bytes>> BlockBytesAt(std::uint64_t height) const noexcept;
  // The encoded CommitCertificate stored with the block at `height`.
  Result<std::optional<Bytes>> CertificateAt(std::uint64_t height) const noexcept;
  Result<std::optional<std::vector<vm::Receipt>>> ReceiptsAt(std::uint64_t height) const noexcept;
  Result<std::optional<TxLocation>> FindTx(const Hash256& tx_id) const noexcept;

  // Content-addressed blobs (SHA-256), stored with their upload record in one write.
  Result<Hash256> PutBlob(ByteSpan bytes, const UploadRecord& record) noexcept;
  Result<std::optional<Bytes>> GetBlob(const Hash256& hash) const noexcept;
  // Every upload record (blobs not pinned yet); stops when `visit` returns false.
  Status ScanUploads(const std::function<bool(const Hash256&, const UploadRecord&)>& visit) const noexcept;
  // Garbage collection: deletes an unpinned blob and its record ("pinned"
  // blobs only lose their record). The caller holds the lock that orders
  // block commits, so no block pins the blob between the check and the delete.
  Status CollectBlob(const Hash256& hash) noexcept;
  // Whether a committed block named the blob (written by CommitBlock; never
  // removed, not even by RollbackTip): such blobs are never to be dropped.
  Result<bool> IsPinned(const Hash256& hash) const noexcept;

  // Recovery check: the tip names the stored block at its height and every
  // block up to it is present. Invalid "db-corrupt" otherwise.
  Status Verify() const noexcept;

 private:
  explicit ChainDb(leveldb::DB* db);
  Result<std::optional<Bytes>> RawGet(ByteSpan key) const noexcept;

  std::unique_ptr<leveldb::DB> m_db;
};

Bytes EncodeReceipts(const std::vector<vm::Receipt>& receipts);
Result<std::vector<vm::Receipt>> DecodeReceipts(ByteSpan bytes);

}  // namespace vt::node
