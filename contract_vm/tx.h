#pragma once
// Transactions: canonical encoding, BIP-340 signatures over a tagged hash,
// and the stateless half of validation (docs/formats.md, "Transactions and
// blocks"). The stateful half (nonce, funds) is in vm.h.
//
//   Transaction = u8 version ‖ u64 chain_id ‖ u64 nonce ‖ u64 gas_limit ‖
//                 u64 gas_price ‖ fixed32 sender (x-only key) ‖ payload ‖
//                 fixed64 signature
//   payload     = varint kind ‖ (kind 0 transfer: fixed20 to ‖ u64 amount)
//                              (kind 1 call:     u16 contract ‖ u16 method ‖ bytes args)
//   signing hash = TaggedHash("veritrain/tx/v1", encoding without the signature)
//   tx id        = TaggedHash("veritrain/txid/v1", full encoding)

#include <array>
#include <cstdint>
#include <string_view>
#include <variant>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/limits.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "crypto/keys.h"

namespace vt::vm {

inline constexpr std::uint8_t kTxVersion = 1;
// Hard cap of the encoding: limits::kMaxTxBytes (common/limits.h), which
// the chain's own max_tx_bytes (ChainParams) may lower, never raise.
inline constexpr std::size_t kMaxTxEncodedBytes = limits::kMaxTxBytes;

// Stable reject reasons of transaction validation (part of the protocol).
namespace reasons {
inline constexpr std::string_view kMalformed = "tx-malformed";
inline constexpr std::string_view kBadVersion = "tx-bad-version";
inline constexpr std::string_view kWrongChain = "tx-wrong-chain";
inline constexpr std::string_view kBadSignature = "tx-bad-signature";
inline constexpr std::string_view kTooLarge = "tx-too-large";
inline constexpr std::string_view kGasTooLow = "tx-gas-limit-too-low";
inline constexpr std::string_view kGasOverBlock = "tx-gas-limit-over-block";
inline constexpr std::string_view kGasPriceTooLow = "tx-gas-price-too-low";
inline constexpr std::string_view kAmountOverflow = "tx-amount-overflow";
inline constexpr std::string_view kBadNonce = "tx-bad-nonce";
inline constexpr std::string_view kInsufficientFunds = "tx-insufficient-funds";
inline constexpr std::string_view kBalanceOverflow = "tx-balance-overflow";
inline constexpr std::string_view kOutOfGas = "tx-out-of-gas";
inline constexpr std::string_view kUnknownContract = "tx-unknown-contract";
// A call that threw (caught at the VM boundary): its receipt fails with these.
inline constexpr std::string_view kVmOutOfMemory = "vm-out-of-memory";
inline constexpr std::string_view kVmException = "vm-exception";
}  // namespace reasons

struct TransferPayload {
  crypto::Address to;
  Amount amount = 0;
  bool operator==(const TransferPayload&) const = default;
};

struct CallPayload {
  std::uint16_t contract = 0;
  std::uint16_t method = 0;
  Bytes args;  // the contract's canonical argument encoding
  bool operator==(const CallPayload&) const = default;
};

enum class TxKind : std::uint8_t { kTransfer = 0, kCall = 1 };

struct Transaction {
  std::uint8_t version = kTxVersion;
  std::uint64_t chain_id = 0;
  std::uint64_t nonce = 0;
  std::uint64_t gas_limit = 0;
  Amount gas_price = 0;
  std::array<std::uint8_t, 32> sender{};  // x-only public key; checked by validation
  std::variant<TransferPayload, CallPayload> payload;
  std::array<std::uint8_t, 64> signature{};

  TxKind kind() const { return static_cast<TxKind>(payload.index()); }
  bool operator==(const Transaction&) const = default;
};

void Encode(Writer& w, const Transaction& tx);
// Strict; reasons from common/encoding.h (and "enc-unknown-enum" for a kind).
Result<Transaction> Decode(Reader& r, DecodeAs<Transaction>);
Bytes EncodeTransaction(const Transaction& tx);
// Invalid "tx-malformed" (the decoder's reason in the detail).
Result<Transaction> DecodeTransaction(ByteSpan bytes);

Hash256 TxSigningHash(const Transaction& tx);
Hash256 TxId(const Transaction& tx);

// Sets tx.sender from the key and signs (deterministically: zero aux).
Status SignTransaction(Transaction& tx, const crypto::SecretKey& key);
bool VerifyTransactionSignature(const Transaction& tx);

// The address that pays for `tx` (derived from tx.sender); invalid
// "tx-bad-signature" when the sender is not a valid x-only key.
Result<crypto::Address> TxSenderAddress(const Transaction& tx);

}  // namespace vt::vm
