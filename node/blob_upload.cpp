#include "node/blob_upload.h"

#include <algorithm>

#include "common/encoding.h"
#include "contract_vm/gas.h"
#include "crypto/sha256.h"

namespace vt::node {

Hash256 UploadMessage(std::uint64_t chain_id, const Hash256& blob_hash, std::uint64_t bytes) {
  static const crypto::TaggedHasher kTag("veritrain/put-blob/v1");
  Writer w;
  w.PutU64(chain_id);
  w.PutHash(blob_hash);
  w.PutU64(bytes);
  return kTag.Hash(w.bytes());
}

Result<crypto::PublicKey> CheckUploadSignature(std::uint64_t chain_id, const Hash256& blob_hash, std::uint64_t bytes,
                                               std::string_view pubkey_hex, std::string_view signature_hex) {
  auto key = crypto::PublicKey::FromHex(pubkey_hex);
  if (!key.ok()) return Status::Invalid("blob-bad-signature", "uploader is not an x-only public key (64 hex digits)");
  auto sig = crypto::Signature::FromHex(signature_hex);
  if (!sig.ok()) return Status::Invalid("blob-bad-signature", "signature is not 128 hex digits");
  const Hash256 message = UploadMessage(chain_id, blob_hash, bytes);
  if (!crypto::Verify(*key, message.bytes, *sig))
    return Status::Invalid("blob-bad-signature", "the signature does not sign this blob for this chain");
  return *key;
}

Result<crypto::Signature> SignUpload(const crypto::SecretKey& key, std::uint64_t chain_id, const Hash256& blob_hash,
                                     std::uint64_t bytes) {
  return crypto::Sign(key, UploadMessage(chain_id, blob_hash, bytes).bytes);
}

Bytes EncodeUploadRecord(const UploadRecord& r) {
  Writer w;
  w.PutOptional(r.owner, [](Writer& ww, const crypto::Address& a) { crypto::Encode(ww, a); });
  w.PutU64(r.bytes);
  w.PutU64(r.stored_ms);
  return std::move(w).Take();
}

Result<UploadRecord> DecodeUploadRecord(ByteSpan bytes) {
  Reader r(bytes);
  UploadRecord out;
  VT_ASSIGN_OR_RETURN(out.owner, r.GetOptional<crypto::Address>(
                                     [](Reader& rr) { return crypto::Decode(rr, DecodeAs<crypto::Address>{}); }));
  VT_ASSIGN_OR_RETURN(out.bytes, r.GetU64());
  VT_ASSIGN_OR_RETURN(out.stored_ms, r.GetU64());
  VT_TRY(r.Finish());
  return out;
}

Status BlobLedger::Admit(const Hash256& hash, const crypto::Address& owner, std::uint64_t bytes, vm::Amount balance,
                         vm::Amount min_gas_price, std::uint64_t now_ms) {
  std::lock_guard lock(m_mu);
  if (m_blobs.count(hash)) return Status::Ok();
  const Usage mine = m_by_key.count(owner) ? m_by_key.at(owner) : Usage{};
  // Naming these bytes on chain costs blob_byte gas each at the minimum price
  // at least: the balance must cover that for every unpinned byte of the key.
  const std::uint64_t need = vm::GasMeter::Mul(vm::GasMeter::Mul(mine.bytes + bytes, vm::kGas.blob_byte),
                                               std::max<vm::Amount>(min_gas_price, 1));  // saturating
  if (need > balance)
    return Status::Invalid("blob-insufficient-funds",
                           "the uploader's balance " + std::to_string(balance) + " does not cover naming its " +
                               std::to_string(mine.bytes + bytes) + " unpinned bytes on chain");
  if (mine.bytes + bytes > m_limits.per_key_bytes || mine.blobs + 1 > m_limits.per_key_blobs)
    return Status::Invalid("blob-quota-exceeded",
                           "this key holds " + std::to_string(mine.blobs) + " unpinned blob(s) of " +
                               std::to_string(mine.bytes) + " bytes; the limit is " +
                               std::to_string(m_limits.per_key_blobs) + " blobs, " +
                               std::to_string(m_limits.per_key_bytes) + " bytes until a block names them");
  return AdmitLocked(hash, UploadRecord{owner, bytes, now_ms});
}

void BlobLedger::AdmitFetched(const Hash256& hash, std::uint64_t bytes, std::uint64_t now_ms) {
  Load(hash, UploadRecord{std::nullopt, bytes, now_ms});
}

Status BlobLedger::AdmitLocked(const Hash256& hash, const UploadRecord& record) {
  if (m_total.bytes + record.bytes > m_limits.total_bytes || m_total.blobs + 1 > m_limits.total_blobs)
    return Status::Invalid("blob-store-full", "this node holds " + std::to_string(m_total.blobs) +
                                                  " unpinned blob(s) of " + std::to_string(m_total.bytes) +
                                                  " bytes, its limit; retry after they are named or collected");
  AddLocked(hash, record);
  return Status::Ok();
}

void BlobLedger::Load(const Hash256& hash, const UploadRecord& record) {
  std::lock_guard lock(m_mu);
  AddLocked(hash, record);
}

void BlobLedger::AddLocked(const Hash256& hash, const UploadRecord& record) {
  if (m_blobs.count(hash)) return;
  m_blobs.emplace(hash, record);
  if (record.owner) {
    Usage& u = m_by_key[*record.owner];
    u.bytes += record.bytes;
    u.blobs += 1;
  }
  m_total.bytes += record.bytes;
  m_total.blobs += 1;
}

void BlobLedger::Forget(const Hash256& hash) {
  std::lock_guard lock(m_mu);
  const auto it = m_blobs.find(hash);
  if (it == m_blobs.end()) return;
  const UploadRecord& r = it->second;
  if (r.owner) {
    Usage& u = m_by_key[*r.owner];
    u.bytes -= std::min(u.bytes, r.bytes);
    u.blobs -= std::min<std::uint64_t>(u.blobs, 1);
    if (u.blobs == 0) m_by_key.erase(*r.owner);
  }
  m_total.bytes -= std::min(m_total.bytes, r.bytes);
  m_total.blobs -= std::min<std::uint64_t>(m_total.blobs, 1);
  m_blobs.erase(it);
}

bool BlobLedger::Contains(const Hash256& hash) const {
  std::lock_guard lock(m_mu);
  return m_blobs.count(hash) != 0;
}

std::vector<Hash256> BlobLedger::Expired(std::uint64_t now_ms, std::size_t max) const {
  std::vector<std::pair<std::uint64_t, Hash256>> old;
  {
    std::lock_guard lock(m_mu);
    for (const auto& [hash, r] : m_blobs)
      if (now_ms > r.stored_ms + m_limits.grace_ms) old.emplace_back(r.stored_ms, hash);
  }
  std::sort(old.begin(), old.end());
  std::vector<Hash256> out;
  for (std::size_t i = 0; i < old.size() && i < max; ++i) out.push_back(old[i].second);
  return out;
}

BlobLedger::Usage BlobLedger::OfKey(const crypto::Address& owner) const {
  std::lock_guard lock(m_mu);
  const auto it = m_by_key.find(owner);
  return it == m_by_key.end() ? Usage{} : it->second;
}

BlobLedger::Usage BlobLedger::Total() const {
  std::lock_guard lock(m_mu);
  return m_total;
}

}  // namespace vt::node
