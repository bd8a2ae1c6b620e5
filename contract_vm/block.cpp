#include "contract_vm/block.h"

#include <algorithm>

#include "crypto/merkle.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::vm {
namespace {

template <std::size_t N>
Result<std::array<std::uint8_t, N>> GetArray(Reader& r) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, r.GetFixed(N));
  std::array<std::uint8_t, N> out{};
  std::copy(view.begin(), view.end(), out.begin());
  return out;
}

void EncodeUnsignedHeader(Writer& w, const BlockHeader& h) {
  w.PutU8(h.version);
  w.PutU64(h.chain_id);
  w.PutU64(h.height);
  w.PutHash(h.parent_hash);
  w.PutHash(h.state_root);
  w.PutHash(h.tx_root);
  w.PutHash(h.receipt_root);
  w.PutHash(h.evidence_root);
  w.PutU64(h.time);
  w.PutFixed(h.proposer);
}

}  // namespace

void Encode(Writer& w, const BlockHeader& h) {
  EncodeUnsignedHeader(w, h);
  w.PutFixed(h.signature);
}

Result<BlockHeader> Decode(Reader& r, DecodeAs<BlockHeader>) {
  BlockHeader h;
  VT_ASSIGN_OR_RETURN(h.version, r.GetU8());
  if (h.version != kBlockVersion) return Status::Invalid("block-bad-version", "unknown block version");
  VT_ASSIGN_OR_RETURN(h.chain_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.parent_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(h.state_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(h.tx_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(h.receipt_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(h.evidence_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(h.time, r.GetU64());
  VT_ASSIGN_OR_RETURN(h.proposer, GetArray<32>(r));
  VT_ASSIGN_OR_RETURN(h.signature, GetArray<64>(r));
  return h;
}

void Encode(Writer& w, const Block& b) {
  Encode(w, b.header);
  w.PutVector(b.txs);
  w.PutVector(b.evidence, [](Writer& ww, const Bytes& e) { ww.PutBytes(e); });
}

Result<Block> Decode(Reader& r, DecodeAs<Block>) {
  Block b;
  VT_ASSIGN_OR_RETURN(b.header, Decode(r, DecodeAs<BlockHeader>{}));
  VT_ASSIGN_OR_RETURN(b.txs, r.GetVector<Transaction>(kMaxBlockTxs));
  VT_ASSIGN_OR_RETURN(b.evidence,
                      r.GetVector<Bytes>([](Reader& rr) { return rr.GetBytes(kMaxEvidenceBytes); }, kMaxBlockEvidence));
  return b;
}

std::size_t EncodedBlockSize(const Block& b) {
  Writer w;
  Encode(w, b.header);
  w.PutVarint(b.txs.size());
  std::size_t size = w.bytes().size();
  for (const Transaction& tx : b.txs) size += EncodeTransaction(tx).size();
  Writer ev;
  ev.PutVector(b.evidence, [](Writer& ww, const Bytes& e) { ww.PutBytes(e); });
  return size + ev.bytes().size();
}

void Encode(Writer& w, const Event& e) {
  w.PutU16(e.contract);
  w.PutString(e.topic);
  w.PutBytes(e.data);
}

Result<Event> Decode(Reader& r, DecodeAs<Event>) {
  Event e;
  VT_ASSIGN_OR_RETURN(e.contract, r.GetU16());
  VT_ASSIGN_OR_RETURN(e.topic, r.GetString(kMaxEventTopicBytes));
  VT_ASSIGN_OR_RETURN(e.data, r.GetBytes(kMaxEventDataBytes));
  return e;
}

void Encode(Writer& w, const Receipt& rc) {
  w.PutHash(rc.tx_id);
  w.PutBool(rc.success);
  w.PutString(rc.reason);
  w.PutU64(rc.gas_used);
  w.PutU64(rc.fee);
  w.PutVector(rc.events);
}

Result<Receipt> Decode(Reader& r, DecodeAs<Receipt>) {
  Receipt rc;
  VT_ASSIGN_OR_RETURN(rc.tx_id, r.GetHash());
  VT_ASSIGN_OR_RETURN(rc.success, r.GetBool());
  VT_ASSIGN_OR_RETURN(rc.reason, r.GetString(kMaxEventTopicBytes));
  VT_ASSIGN_OR_RETURN(rc.gas_used, r.GetU64());
  VT_ASSIGN_OR_RETURN(rc.fee, r.GetU64());
  VT_ASSIGN_OR_RETURN(rc.events, r.GetVector<Event>(kMaxEventsPerTx));
  return rc;
}

Hash256 BlockHash(const BlockHeader& h) {
  static const crypto::TaggedHasher hasher(crypto::tags::kBlock);
  Writer w;
  EncodeUnsignedHeader(w, h);
  return hasher.Hash(w.bytes());
}

Status SignBlock(BlockHeader& h, const crypto::SecretKey& key) {
  h.proposer = key.public_key().bytes();
  const Hash256 msg = BlockHash(h);
  const std::array<std::uint8_t, 32> aux{};
  VT_ASSIGN_OR_RETURN(crypto::Signature sig, crypto::SignWithAux(key, msg.span(), aux));
  h.signature = sig.bytes;
  return Status::Ok();
}

bool VerifyBlockSignature(const BlockHeader& h) {
  const Hash256 msg = BlockHash(h);
  return crypto::VerifyBytes(h.proposer, msg.span(), h.signature);
}

Hash256 TxRoot(const std::vector<Transaction>& txs) {
  std::vector<Hash256> ids;
  ids.reserve(txs.size());
  for (const Transaction& tx : txs) ids.push_back(TxId(tx));
  return crypto::MerkleRoot(ids);
}

Hash256 ReceiptHash(const Receipt& rc) {
  static const crypto::TaggedHasher hasher(crypto::tags::kReceipt);
  return hasher.Hash(EncodeToBytes(rc));
}

Hash256 ReceiptRoot(const std::vector<Receipt>& receipts) {
  std::vector<Hash256> leaves;
  leaves.reserve(receipts.size());
  for (const Receipt& rc : receipts) leaves.push_back(ReceiptHash(rc));
  return crypto::MerkleRoot(leaves);
}

Hash256 EvidenceHash(ByteSpan item) {
  static const crypto::TaggedHasher hasher(crypto::tags::kEvidence);
  return hasher.Hash(item);
}

Hash256 EvidenceRoot(const std::vector<Bytes>& evidence) {
  std::vector<Hash256> leaves;
  leaves.reserve(evidence.size());
  for (const Bytes& e : evidence) leaves.push_back(EvidenceHash(e));
  return crypto::MerkleRoot(leaves);
}

}  // namespace vt::vm
