#include "node/chain_db.h"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <string>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "node/blob_rules.h"

namespace vt::node {
namespace {

constexpr std::uint8_t kStatePrefix = 's';
constexpr std::uint8_t kBlockPrefix = 'b';
constexpr std::uint8_t kReceiptPrefix = 'r';
constexpr std::uint8_t kTxPrefix = 'x';
constexpr std::uint8_t kUndoPrefix = 'u';
constexpr std::uint8_t kCertificatePrefix = 'c';
constexpr std::string_view kTipKey = "m/tip";
constexpr std::string_view kGenesisKey = "m/genesis";
constexpr std::string_view kBlobPrefix = "m/blobs/";
constexpr std::string_view kPinPrefix = "m/pins/";
constexpr std::string_view kUploadPrefix = "m/uploads/";
constexpr std::size_t kMaxReceipts = vm::kMaxBlockTxs;

leveldb::Slice ToSlice(ByteSpan b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }
ByteSpan FromSlice(const leveldb::Slice& s) { return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}; }

void PutBe64(Bytes& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t GetBe(ByteSpan b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | b[at + static_cast<std::size_t>(i)];
  return v;
}

Bytes PinKey(const Hash256& hash) {
  Bytes key(kPinPrefix.begin(), kPinPrefix.end());
  key.insert(key.end(), hash.bytes.begin(), hash.bytes.end());
  return key;
}

Bytes UploadKey(const Hash256& hash) {
  Bytes key(kUploadPrefix.begin(), kUploadPrefix.end());
  key.insert(key.end(), hash.bytes.begin(), hash.bytes.end());
  return key;
}

Bytes BlobKey(const Hash256& hash) {
  Bytes key(kBlobPrefix.begin(), kBlobPrefix.end());
  key.insert(key.end(), hash.bytes.begin(), hash.bytes.end());
  return key;
}

Bytes PrefixedKey(std::uint8_t prefix, ByteSpan key) {
  Bytes k;
  k.reserve(key.size() + 1);
  k.push_back(prefix);
  k.insert(k.end(), key.begin(), key.end());
  return k;
}
Bytes HeightKey(std::uint8_t prefix, std::uint64_t height) {
  Bytes k{prefix};
  PutBe64(k, height);
  return k;
}

Bytes EncodeTip(const vm::ChainTip& t) {
  Writer w;
  w.PutU64(t.chain_id);
  w.PutU64(t.height);
  w.PutHash(t.hash);
  w.PutU64(t.time);
  return std::move(w).Take();
}
Result<vm::ChainTip> DecodeTip(ByteSpan b) {
  Reader r(b);
  vm::ChainTip t;
  VT_ASSIGN_OR_RETURN(t.chain_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(t.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(t.hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(t.time, r.GetU64());
  VT_TRY(r.Finish());
  return t;
}

void AddState(leveldb::WriteBatch& wb, const vm::WriteBatch& state) {
  for (const auto& [key, value] : state.ops()) {
    const Bytes k = PrefixedKey(kStatePrefix, key);
    if (value)
      wb.Put(ToSlice(k), ToSlice(*value));
    else
      wb.Delete(ToSlice(k));
  }
}

Status Write(leveldb::DB& db, leveldb::WriteBatch& wb) {
  leveldb::WriteOptions opts;
  opts.sync = true;  // a committed block survives power loss, not just kill -9
  const leveldb::Status s = db.Write(opts, &wb);
  if (!s.ok()) return Status::Error("db-write-failed", s.ToString());
  return Status::Ok();
}

}  // namespace

Bytes EncodeReceipts(const std::vector<vm::Receipt>& receipts) {
  Writer w;
  w.PutVector(receipts);
  return std::move(w).Take();
}

Result<std::vector<vm::Receipt>> DecodeReceipts(ByteSpan bytes) {
  Reader r(bytes);
  VT_ASSIGN_OR_RETURN(auto out, r.GetVector<vm::Receipt>(kMaxReceipts));
  VT_TRY(r.Finish());
  return out;
}

Result<std::unique_ptr<ChainDb>> ChainDb::Open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("db-open-failed", dir.string() + ": " + ec.message());
  leveldb::Options opts;
  opts.create_if_missing = true;
  opts.paranoid_checks = true;
  leveldb::DB* db = nullptr;
  const leveldb::Status s = leveldb::DB::Open(opts, dir.string(), &db);
  if (!s.ok()) return Status::Error("db-open-failed", s.ToString());
  return std::unique_ptr<ChainDb>(new ChainDb(db));
}

ChainDb::ChainDb(leveldb::DB* db) : m_db(db) {}
ChainDb::~ChainDb() = default;

Result<std::optional<Bytes>> ChainDb::RawGet(ByteSpan key) const noexcept {
  std::string value;
  const leveldb::Status s = m_db->Get(leveldb::ReadOptions(), ToSlice(key), &value);
  if (s.IsNotFound()) return std::optional<Bytes>();
  if (!s.ok()) return Status::Error("db-read-failed", s.ToString());
  return std::optional<Bytes>(Bytes(value.begin(), value.end()));
}

Result<std::optional<Bytes>> ChainDb::Get(ByteSpan key) const noexcept {
  return RawGet(PrefixedKey(kStatePrefix, key));
}

Status ChainDb::Scan(ByteSpan prefix, const vm::ScanVisitor& visit) const noexcept {
  const Bytes full = PrefixedKey(kStatePrefix, prefix);
  std::unique_ptr<leveldb::Iterator> it(m_db->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(ToSlice(full)); it->Valid(); it->Next()) {
    const ByteSpan k = FromSlice(it->key());
    if (k.size() < full.size() || !std::equal(full.begin(), full.end(), k.begin())) break;
    if (!visit(k.subspan(1), FromSlice(it->value()))) break;
  }
  if (!it->status().ok()) return Status::Error("db-read-failed", it->status().ToString());
  return Status::Ok();
}

Status ChainDb::Commit(const vm::WriteBatch& batch) noexcept {
  leveldb::WriteBatch wb;
  AddState(wb, batch);
  return Write(*m_db, wb);
}

Status ChainDb::CommitGenesis(const vm::WriteBatch& state, const vm::Genesis& genesis,
                              const vm::ChainTip& tip) noexcept {
  leveldb::WriteBatch wb;
  AddState(wb, state);
  const Bytes g = EncodeToBytes(genesis);
  wb.Put(ToSlice(AsBytes(kGenesisKey)), ToSlice(g));
  const Bytes t = EncodeTip(tip);
  wb.Put(ToSlice(AsBytes(kTipKey)), ToSlice(t));
  return Write(*m_db, wb);
}

Status ChainDb::CommitBlock(const vm::WriteBatch& state, const vm::Block& block,
                            const std::vector<vm::Receipt>& receipts, const vm::ChainTip& tip,
                            ByteSpan certificate) noexcept {
  leveldb::WriteBatch wb;
  AddState(wb, state);
  const std::uint64_t h = block.header.height;
  const Bytes bk = HeightKey(kBlockPrefix, h);
  const Bytes bv = EncodeToBytes(block);
  wb.Put(ToSlice(bk), ToSlice(bv));
  const Bytes rk = HeightKey(kReceiptPrefix, h);
  const Bytes rv = EncodeReceipts(receipts);
  wb.Put(ToSlice(rk), ToSlice(rv));
  const Bytes ck = HeightKey(kCertificatePrefix, h);
  if (!certificate.empty()) wb.Put(ToSlice(ck), ToSlice(certificate));
  for (std::size_t i = 0; i < block.txs.size(); ++i) {
    const Hash256 id = vm::TxId(block.txs[i]);
    const Bytes xk = PrefixedKey(kTxPrefix, id.bytes);
    Bytes xv;
    PutBe64(xv, h);
    for (int s = 3; s >= 0; --s) xv.push_back(static_cast<std::uint8_t>(i >> (8 * s)));
    wb.Put(ToSlice(xk), ToSlice(xv));
  }
  // Undo record: the previous value of every state key the block writes.
  Writer undo;
  undo.PutVarint(state.ops().size());
  for (const auto& [key, value] : state.ops()) {
    (void)value;
    VT_ASSIGN_OR_RETURN(auto old, Get(key));
    undo.PutBytes(key);
    undo.PutOptional(old, [](Writer& w, const Bytes& v) { w.PutBytes(v); });
  }
  const Bytes uk = HeightKey(kUndoPrefix, h);
  wb.Put(ToSlice(uk), ToSlice(undo.bytes()));
  // Pins: the blobs this block's transactions name are kept for good (a
  // rollback leaves them pinned), written with the block so a crash cannot
  // separate them; their upload records go (nothing to collect any more).
  for (const referee::BlobRequirement& req : BlockBlobs(block)) {
    const Bytes pk = PinKey(req.hash);
    Bytes pv;
    PutBe64(pv, h);
    wb.Put(ToSlice(pk), ToSlice(pv));
    wb.Delete(ToSlice(UploadKey(req.hash)));
  }
  const Bytes t = EncodeTip(tip);
  wb.Put(ToSlice(AsBytes(kTipKey)), ToSlice(t));
  return Write(*m_db, wb);
}

Result<vm::Block> ChainDb::RollbackTip() noexcept {
  VT_ASSIGN_OR_RETURN(auto tip, Tip());
  if (!tip || tip->height == 0) return Status::Invalid("db-rollback-genesis", "nothing to roll back");
  const std::uint64_t h = tip->height;
  VT_ASSIGN_OR_RETURN(auto block, BlockAt(h));
  if (!block) return Status::Invalid("db-corrupt", "no block at the tip");
  VT_ASSIGN_OR_RETURN(auto undo_raw, RawGet(HeightKey(kUndoPrefix, h)));
  if (!undo_raw) return Status::Invalid("db-corrupt", "no undo record at the tip");
  leveldb::WriteBatch wb;
  Reader r(*undo_raw);
  VT_ASSIGN_OR_RETURN(std::uint64_t n, r.GetVarint());
  for (std::uint64_t i = 0; i < n; ++i) {
    VT_ASSIGN_OR_RETURN(Bytes key, r.GetBytes());
    VT_ASSIGN_OR_RETURN(auto old, r.GetOptional<Bytes>([](Reader& rr) { return rr.GetBytes(); }));
    const Bytes k = PrefixedKey(kStatePrefix, key);
    if (old)
      wb.Put(ToSlice(k), ToSlice(*old));
    else
      wb.Delete(ToSlice(k));
  }
  VT_TRY(r.Finish());
  for (const vm::Transaction& tx : block->txs) {
    const Hash256 id = vm::TxId(tx);
    wb.Delete(ToSlice(PrefixedKey(kTxPrefix, id.bytes)));
  }
  wb.Delete(ToSlice(HeightKey(kBlockPrefix, h)));
  wb.Delete(ToSlice(HeightKey(kReceiptPrefix, h)));
  wb.Delete(ToSlice(HeightKey(kUndoPrefix, h)));
  wb.Delete(ToSlice(HeightKey(kCertificatePrefix, h)));
  vm::ChainTip parent{tip->chain_id, h - 1, block->header.parent_hash, 0};
  if (h - 1 == 0) {
    VT_ASSIGN_OR_RETURN(auto g, StoredGenesis());
    if (!g) return Status::Invalid("db-corrupt", "no genesis");
    parent.time = g->time;
  } else {
    VT_ASSIGN_OR_RETURN(auto pb, BlockAt(h - 1));
    if (!pb) return Status::Invalid("db-corrupt", "no parent block");
    parent.time = pb->header.time;
  }
  const Bytes t = EncodeTip(parent);
  wb.Put(ToSlice(AsBytes(kTipKey)), ToSlice(t));
  VT_TRY(Write(*m_db, wb));
  return std::move(*block);
}

Result<std::optional<vm::ChainTip>> ChainDb::Tip() const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, RawGet(AsBytes(kTipKey)));
  if (!raw) return std::optional<vm::ChainTip>();
  auto tip = DecodeTip(*raw);
  if (!tip.ok()) return Status::Invalid("db-corrupt", "tip: " + tip.status().ToString());
  return std::optional<vm::ChainTip>(*tip);
}

Result<std::optional<vm::Genesis>> ChainDb::StoredGenesis() const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, RawGet(AsBytes(kGenesisKey)));
  if (!raw) return std::optional<vm::Genesis>();
  auto g = DecodeExact<vm::Genesis>(*raw);
  if (!g.ok()) return Status::Invalid("db-corrupt", "genesis: " + g.status().ToString());
  return std::optional<vm::Genesis>(*g);
}

Result<std::optional<Bytes>> ChainDb::BlockBytesAt(std::uint64_t height) const noexcept {
  return RawGet(HeightKey(kBlockPrefix, height));
}

Result<std::optional<Bytes>> ChainDb::CertificateAt(std::uint64_t height) const noexcept {
  return RawGet(HeightKey(kCertificatePrefix, height));
}

Result<std::optional<vm::Block>> ChainDb::BlockAt(std::uint64_t height) const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, BlockBytesAt(height));
  if (!raw) return std::optional<vm::Block>();
  auto b = DecodeExact<vm::Block>(*raw);
  if (!b.ok()) return Status::Invalid("db-corrupt", "block: " + b.status().ToString());
  return std::optional<vm::Block>(std::move(*b));
}

Result<std::optional<std::vector<vm::Receipt>>> ChainDb::ReceiptsAt(std::uint64_t height) const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, RawGet(HeightKey(kReceiptPrefix, height)));
  if (!raw) return std::optional<std::vector<vm::Receipt>>();
  auto r = DecodeReceipts(*raw);
  if (!r.ok()) return Status::Invalid("db-corrupt", "receipts: " + r.status().ToString());
  return std::optional<std::vector<vm::Receipt>>(std::move(*r));
}

Result<std::optional<TxLocation>> ChainDb::FindTx(const Hash256& tx_id) const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, RawGet(PrefixedKey(kTxPrefix, tx_id.bytes)));
  if (!raw) return std::optional<TxLocation>();
  if (raw->size() != 12) return Status::Invalid("db-corrupt", "tx index entry");
  return std::optional<TxLocation>(
      TxLocation{GetBe(*raw, 0, 8), static_cast<std::uint32_t>(GetBe(*raw, 8, 4))});
}

Result<Hash256> ChainDb::PutBlob(ByteSpan bytes, const UploadRecord& record) noexcept {
  const Hash256 h = crypto::Sha256Digest(bytes);
  leveldb::WriteBatch wb;
  wb.Put(ToSlice(BlobKey(h)), ToSlice(bytes));
  // A blob a block already pinned needs no record (nothing will collect it).
  VT_ASSIGN_OR_RETURN(bool pinned, IsPinned(h));
  if (!pinned) wb.Put(ToSlice(UploadKey(h)), ToSlice(EncodeUploadRecord(record)));
  VT_TRY(Write(*m_db, wb));
  return h;
}

Result<std::optional<Bytes>> ChainDb::GetBlob(const Hash256& hash) const noexcept { return RawGet(BlobKey(hash)); }

Status ChainDb::ScanUploads(const std::function<bool(const Hash256&, const UploadRecord&)>& visit) const noexcept {
  std::unique_ptr<leveldb::Iterator> it(m_db->NewIterator(leveldb::ReadOptions()));
  const leveldb::Slice prefix(kUploadPrefix.data(), kUploadPrefix.size());
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const ByteSpan k = FromSlice(it->key());
    auto record = DecodeUploadRecord(FromSlice(it->value()));
    if (k.size() != kUploadPrefix.size() + Hash256::kSize || !record.ok())
      return Status::Invalid("db-corrupt", "upload record");
    Hash256 hash;
    std::copy(k.begin() + static_cast<std::ptrdiff_t>(kUploadPrefix.size()), k.end(), hash.bytes.begin());
    if (!visit(hash, *record)) break;
  }
  if (!it->status().ok()) return Status::Error("db-read-failed", it->status().ToString());
  return Status::Ok();
}

Status ChainDb::CollectBlob(const Hash256& hash) noexcept {
  VT_ASSIGN_OR_RETURN(bool pinned, IsPinned(hash));
  leveldb::WriteBatch wb;
  wb.Delete(ToSlice(UploadKey(hash)));
  if (!pinned) wb.Delete(ToSlice(BlobKey(hash)));
  return Write(*m_db, wb);
}

Result<bool> ChainDb::IsPinned(const Hash256& hash) const noexcept {
  VT_ASSIGN_OR_RETURN(auto raw, RawGet(PinKey(hash)));
  return raw.has_value();
}

Status ChainDb::Verify() const noexcept {
  VT_ASSIGN_OR_RETURN(auto tip, Tip());
  if (!tip) return Status::Ok();
  VT_ASSIGN_OR_RETURN(auto genesis, StoredGenesis());
  if (!genesis) return Status::Invalid("db-corrupt", "tip without genesis");
  if (tip->height == 0) {
    if (tip->hash != vm::GenesisHash(*genesis)) return Status::Invalid("db-corrupt", "tip 0 is not the genesis");
    return Status::Ok();
  }
  VT_ASSIGN_OR_RETURN(auto block, BlockAt(tip->height));
  if (!block) return Status::Invalid("db-corrupt", "no block at the tip height");
  if (vm::BlockHash(block->header) != tip->hash) return Status::Invalid("db-corrupt", "tip hash != block hash");
  VT_ASSIGN_OR_RETURN(auto next, BlockBytesAt(tip->height + 1));
  if (next) return Status::Invalid("db-corrupt", "a block above the tip");
  // Every block below is present and links to its parent.
  Hash256 expect_parent = tip->hash;
  for (std::uint64_t h = tip->height; h >= 1; --h) {
    VT_ASSIGN_OR_RETURN(auto b, BlockAt(h));
    if (!b) return Status::Invalid("db-corrupt", "missing block " + std::to_string(h));
    if (vm::BlockHash(b->header) != expect_parent)
      return Status::Invalid("db-corrupt", "broken link at " + std::to_string(h));
    expect_parent = b->header.parent_hash;
  }
  if (expect_parent != vm::GenesisHash(*genesis)) return Status::Invalid("db-corrupt", "block 1 parent != genesis");
  return Status::Ok();
}

}  // namespace vt::node
