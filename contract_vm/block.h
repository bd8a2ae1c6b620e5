#pragma once
// Blocks, receipts and events (docs/formats.md, "Transactions and blocks").
//
//   BlockHeader = u8 version ‖ u64 chain_id ‖ u64 height ‖ hash parent ‖
//                 hash state_root ‖ hash tx_root ‖ hash receipt_root ‖
//                 hash evidence_root ‖ u64 time ‖ fixed32 proposer ‖ fixed64 signature
//   Block       = BlockHeader ‖ vector<Transaction> ‖ vector<bytes evidence>
//   block hash  = TaggedHash("veritrain/block/v1", header without signature);
//                 the proposer signs it (BIP-340).
//   tx_root     = Merkle root over the tx ids (used directly as leaf hashes)
//   receipt_root= Merkle root over ReceiptHash of each receipt
//   evidence_root= Merkle root over EvidenceHash of each evidence item (opaque
//                 to the VM: the chain's EvidenceRules read it, contract_vm/evidence.h)
//
// `time` is an input chosen by the proposer (never the wall clock of the
// machine that applies the block); it must not go backwards.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/tx.h"
#include "crypto/keys.h"

namespace vt::vm {

inline constexpr std::uint8_t kBlockVersion = 1;
inline constexpr std::size_t kMaxBlockTxs = 1 << 16;
inline constexpr std::size_t kMaxEventTopicBytes = 64;
inline constexpr std::size_t kMaxEventDataBytes = 1 << 16;
inline constexpr std::size_t kMaxEventsPerTx = 1024;
// Evidence of misbehaviour a block may carry (consensus rule; docs/node.md
// "Evidence and slashing"): at most this many items of at most this many
// bytes each (a DuplicateVote is at most 2 · 118 bytes).
inline constexpr std::size_t kMaxBlockEvidence = 32;
inline constexpr std::size_t kMaxEvidenceBytes = 512;

struct BlockHeader {
  std::uint8_t version = kBlockVersion;
  std::uint64_t chain_id = 0;
  std::uint64_t height = 0;
  Hash256 parent_hash;
  Hash256 state_root;
  Hash256 tx_root;
  Hash256 receipt_root;
  Hash256 evidence_root;
  std::uint64_t time = 0;
  std::array<std::uint8_t, 32> proposer{};
  std::array<std::uint8_t, 64> signature{};
  bool operator==(const BlockHeader&) const = default;
};

struct Block {
  BlockHeader header;
  std::vector<Transaction> txs;
  std::vector<Bytes> evidence;  // at most kMaxBlockEvidence items of kMaxEvidenceBytes
  bool operator==(const Block&) const = default;
};

// Something a contract reports; part of the receipt (and so of the receipt
// root), never read back by contracts.
struct Event {
  std::uint16_t contract = 0;
  std::string topic;
  Bytes data;
  bool operator==(const Event&) const = default;
};

struct Receipt {
  Hash256 tx_id;
  bool success = false;
  std::string reason;      // stable reason code of the failure; empty on success
  std::uint64_t gas_used = 0;
  Amount fee = 0;          // gas_used * gas_price, paid to the proposer
  std::vector<Event> events;  // empty when the call failed
  bool operator==(const Receipt&) const = default;
};

// The chain position a block builds on; kept by the node beside the state.
struct ChainTip {
  std::uint64_t chain_id = 0;
  std::uint64_t height = 0;
  Hash256 hash;
  std::uint64_t time = 0;
  bool operator==(const ChainTip&) const = default;
};

void Encode(Writer& w, const BlockHeader& h);
Result<BlockHeader> Decode(Reader& r, DecodeAs<BlockHeader>);
void Encode(Writer& w, const Block& b);
Result<Block> Decode(Reader& r, DecodeAs<Block>);
void Encode(Writer& w, const Event& e);
Result<Event> Decode(Reader& r, DecodeAs<Event>);
void Encode(Writer& w, const Receipt& rc);
Result<Receipt> Decode(Reader& r, DecodeAs<Receipt>);

// Bytes of EncodeToBytes(b): at most limits::kMaxBlockBytes for a valid block.
std::size_t EncodedBlockSize(const Block& b);

Hash256 BlockHash(const BlockHeader& h);
Status SignBlock(BlockHeader& h, const crypto::SecretKey& key);
bool VerifyBlockSignature(const BlockHeader& h);
Hash256 TxRoot(const std::vector<Transaction>& txs);
Hash256 ReceiptHash(const Receipt& rc);
Hash256 ReceiptRoot(const std::vector<Receipt>& receipts);
// TaggedHash("veritrain/evidence/v1", item) and the Merkle root over them.
Hash256 EvidenceHash(ByteSpan item);
Hash256 EvidenceRoot(const std::vector<Bytes>& evidence);

}  // namespace vt::vm
