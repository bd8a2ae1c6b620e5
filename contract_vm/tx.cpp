#include "contract_vm/tx.h"

#include <algorithm>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::vm {
namespace {

void EncodeUnsigned(Writer& w, const Transaction& tx) {
  w.PutU8(tx.version);
  w.PutU64(tx.chain_id);
  w.PutU64(tx.nonce);
  w.PutU64(tx.gas_limit);
  w.PutU64(tx.gas_price);
  w.PutFixed(tx.sender);
  w.PutEnum(tx.kind());
  if (const auto* t = std::get_if<TransferPayload>(&tx.payload)) {
    crypto::Encode(w, t->to);
    w.PutU64(t->amount);
  } else {
    const auto& c = std::get<CallPayload>(tx.payload);
    w.PutU16(c.contract);
    w.PutU16(c.method);
    w.PutBytes(c.args);
  }
}

template <std::size_t N>
Result<std::array<std::uint8_t, N>> GetArray(Reader& r) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, r.GetFixed(N));
  std::array<std::uint8_t, N> out{};
  std::copy(view.begin(), view.end(), out.begin());
  return out;
}

}  // namespace

void Encode(Writer& w, const Transaction& tx) {
  EncodeUnsigned(w, tx);
  w.PutFixed(tx.signature);
}

Result<Transaction> Decode(Reader& r, DecodeAs<Transaction>) {
  Transaction tx;
  VT_ASSIGN_OR_RETURN(tx.version, r.GetU8());
  // A later version may lay its fields out differently: stop here.
  if (tx.version != kTxVersion) return Status::Invalid(reasons::kBadVersion, "unknown transaction version");
  VT_ASSIGN_OR_RETURN(tx.chain_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(tx.nonce, r.GetU64());
  VT_ASSIGN_OR_RETURN(tx.gas_limit, r.GetU64());
  VT_ASSIGN_OR_RETURN(tx.gas_price, r.GetU64());
  VT_ASSIGN_OR_RETURN(tx.sender, GetArray<32>(r));
  VT_ASSIGN_OR_RETURN(TxKind kind, r.GetEnum(TxKind::kCall));
  if (kind == TxKind::kTransfer) {
    TransferPayload t;
    VT_ASSIGN_OR_RETURN(t.to, crypto::Decode(r, DecodeAs<crypto::Address>{}));
    VT_ASSIGN_OR_RETURN(t.amount, r.GetU64());
    tx.payload = t;
  } else {
    CallPayload c;
    VT_ASSIGN_OR_RETURN(c.contract, r.GetU16());
    VT_ASSIGN_OR_RETURN(c.method, r.GetU16());
    VT_ASSIGN_OR_RETURN(c.args, r.GetBytes(kMaxTxEncodedBytes));
    tx.payload = std::move(c);
  }
  VT_ASSIGN_OR_RETURN(tx.signature, GetArray<64>(r));
  return tx;
}

Bytes EncodeTransaction(const Transaction& tx) { return EncodeToBytes(tx); }

Result<Transaction> DecodeTransaction(ByteSpan bytes) {
  if (bytes.size() > kMaxTxEncodedBytes) return Status::Invalid(reasons::kTooLarge, "over the encoding cap");
  auto tx = DecodeExact<Transaction>(bytes);
  if (!tx.ok()) {
    if (tx.status().reason() == reasons::kBadVersion) return tx.status();
    return Status::Invalid(reasons::kMalformed, tx.status().ToString());
  }
  return tx;
}

Hash256 TxSigningHash(const Transaction& tx) {
  static const crypto::TaggedHasher hasher(crypto::tags::kTx);
  Writer w;
  EncodeUnsigned(w, tx);
  return hasher.Hash(w.bytes());
}

Hash256 TxId(const Transaction& tx) {
  static const crypto::TaggedHasher hasher(crypto::tags::kTxId);
  return hasher.Hash(EncodeTransaction(tx));
}

Status SignTransaction(Transaction& tx, const crypto::SecretKey& key) {
  tx.sender = key.public_key().bytes();
  const Hash256 msg = TxSigningHash(tx);
  const std::array<std::uint8_t, 32> aux{};
  VT_ASSIGN_OR_RETURN(crypto::Signature sig, crypto::SignWithAux(key, msg.span(), aux));
  tx.signature = sig.bytes;
  return Status::Ok();
}

bool VerifyTransactionSignature(const Transaction& tx) {
  const Hash256 msg = TxSigningHash(tx);
  return crypto::VerifyBytes(tx.sender, msg.span(), tx.signature);
}

Result<crypto::Address> TxSenderAddress(const Transaction& tx) {
  auto key = crypto::PublicKey::FromBytes(tx.sender);
  if (!key.ok()) return Status::Invalid(reasons::kBadSignature, "sender is not a valid x-only key");
  return key->address();
}

}  // namespace vt::vm
