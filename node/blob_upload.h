#pragma once
// Blob uploads (`put_blob`) under rules a stranger cannot abuse (docs/node.md,
// "Blob uploads"):
//
// * Signed. An upload carries an account's public key and its BIP-340
//   signature over UploadMessage(chain id, SHA-256 of the bytes, length); the
//   node refuses any other ("blob-bad-signature"). Replaying someone's signed
//   upload stores the same bytes again under the same account: harmless.
// * Funded and bounded per key. Until a block names it, a blob is *unpinned*
//   and counts against its uploader: the account's balance must cover naming
//   all its unpinned bytes on chain at the minimum gas price
//   (vm::kGas.blob_byte per byte, "blob-insufficient-funds"), and a key holds
//   at most BlobLimits::per_key_bytes / per_key_blobs unpinned
//   ("blob-quota-exceeded"). A key without funds therefore stores nothing.
// * Bounded per node. Uploads are refused once all unpinned blobs together
//   (uploads and blobs fetched from peers for pending transactions or parked
//   blocks) reach total_bytes / total_blobs ("blob-store-full"), since funds
//   moved to a fresh key let it upload too (the balance is checked, not
//   locked). Fetched blobs are never refused: a block must not wait on them.
// * Collected. An unpinned blob older than grace_ms that no pending
//   transaction names is deleted (CollectExpired); a blob a committed block
//   names is pinned (node/chain_db.h) and kept for good.
//
// BlobLedger is the in-memory account of unpinned blobs, rebuilt from the
// store's upload records at start. Thread-safe (one mutex).

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/vm.h"
#include "crypto/keys.h"

namespace vt::node {

struct BlobLimits {
  std::uint64_t per_key_bytes = std::uint64_t{1} << 30;
  std::uint64_t per_key_blobs = 256;
  std::uint64_t total_bytes = std::uint64_t{4} << 30;
  std::uint64_t total_blobs = 65'536;
  std::uint64_t grace_ms = 3'600'000;  // one hour: a commit reaches a block long before
};

// What the uploader signs.
Hash256 UploadMessage(std::uint64_t chain_id, const Hash256& blob_hash, std::uint64_t bytes);
// Ok when `signature` (64 bytes, hex) by `pubkey` (x-only, hex) signs the upload;
// Invalid "blob-bad-signature" otherwise.
Result<crypto::PublicKey> CheckUploadSignature(std::uint64_t chain_id, const Hash256& blob_hash, std::uint64_t bytes,
                                               std::string_view pubkey_hex, std::string_view signature_hex);
// The signature a client sends with its upload.
Result<crypto::Signature> SignUpload(const crypto::SecretKey& key, std::uint64_t chain_id, const Hash256& blob_hash,
                                     std::uint64_t bytes);

// An unpinned blob: who stored it (nullopt: fetched from peers), how long, since when.
struct UploadRecord {
  std::optional<crypto::Address> owner;
  std::uint64_t bytes = 0;
  std::uint64_t stored_ms = 0;
  bool operator==(const UploadRecord&) const = default;
};
Bytes EncodeUploadRecord(const UploadRecord& r);
Result<UploadRecord> DecodeUploadRecord(ByteSpan bytes);

class BlobLedger {
 public:
  explicit BlobLedger(BlobLimits limits = {}) : m_limits(limits) {}
  const BlobLimits& limits() const { return m_limits; }

  // Reserves room for an upload of `bytes` by `owner` whose balance is
  // `balance` at the tip (the checks above). Ok: the caller stores the blob,
  // then calls Forget if storing fails. A blob already accounted is Ok and
  // charged nobody again.
  Status Admit(const Hash256& hash, const crypto::Address& owner, std::uint64_t bytes, vm::Amount balance,
               vm::Amount min_gas_price, std::uint64_t now_ms);
  // A blob fetched from peers for what a transaction or block names: counted
  // in the node's total (so uploads see less room), charged to no key, never
  // refused — a node full of uploads must still fetch what a block needs, and
  // fetched blobs are bounded by what transactions pay to name.
  void AdmitFetched(const Hash256& hash, std::uint64_t bytes, std::uint64_t now_ms);
  // Adds a record read back from the store at start (no checks).
  void Load(const Hash256& hash, const UploadRecord& record);
  // Pinned or deleted: no longer counted.
  void Forget(const Hash256& hash);
  bool Contains(const Hash256& hash) const;
  // Up to `max` blobs stored more than grace_ms before `now_ms`, oldest first.
  std::vector<Hash256> Expired(std::uint64_t now_ms, std::size_t max) const;

  struct Usage {
    std::uint64_t bytes = 0;
    std::uint64_t blobs = 0;
  };
  Usage OfKey(const crypto::Address& owner) const;
  Usage Total() const;

 private:
  Status AdmitLocked(const Hash256& hash, const UploadRecord& record);  // checks the node's total
  void AddLocked(const Hash256& hash, const UploadRecord& record);

  BlobLimits m_limits;
  mutable std::mutex m_mu;
  std::map<Hash256, UploadRecord> m_blobs;
  std::map<crypto::Address, Usage> m_by_key;
  Usage m_total;
};

}  // namespace vt::node
