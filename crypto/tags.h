#pragma once
// Every domain-separation tag of the project, in one place (docs/formats.md,
// "Hashing and Merkle trees": every hash uses a tag). A tag names what is
// hashed and the version of its encoding; changing an encoding means a new
// tag, never a silent change under an old one. Add new tags here, keep them
// unique (the crypto tests check uniqueness of the list below).

#include <array>
#include <string_view>

namespace vt::crypto::tags {

// Merkle trees (crypto/merkle.h). Leaves and nodes also carry a prefix byte
// (0x00 / 0x01) inside their tagged hash.
inline constexpr std::string_view kMerkleLeaf = "veritrain/merkle/leaf/v1";
inline constexpr std::string_view kMerkleNode = "veritrain/merkle/node/v1";
inline constexpr std::string_view kMerkleRoot = "veritrain/merkle/root/v1";

// A tensor: its header and the root of its chunk tree (kernels/chunk_tree.h).
// v1 hashed the raw values flat; v2 commits them as a tree so one value can
// be opened (docs/referee.md, "Element-level descent").
inline constexpr std::string_view kTensor = "veritrain/tensor/v2";
// One node's rounding log: the root of its entry tree (kernels/rounding_log_tree.h).
// v1 hashed the flat payload, which opens no single entry.
inline constexpr std::string_view kRoundingLog = "veritrain/rounding-log/v2";
inline constexpr std::string_view kAddress = "veritrain/address/v1";
inline constexpr std::string_view kTx = "veritrain/tx/v1";
inline constexpr std::string_view kBlock = "veritrain/block/v1";

// Integrity checksum of an encrypted key file (crypto/keyfile.h).
inline constexpr std::string_view kKeyFileChecksum = "veritrain/keyfile/checksum/v1";

// Protocol objects (protocol/types.h, protocol/state.h; docs/formats.md
// "Protocol objects").
inline constexpr std::string_view kJob = "veritrain/job/v1";
inline constexpr std::string_view kCommitment = "veritrain/commitment/v1";
inline constexpr std::string_view kNodeRecord = "veritrain/node-record/v1";
inline constexpr std::string_view kStateHeader = "veritrain/state/header/v1";

// Chain objects (contract_vm/; docs/formats.md "Transactions and blocks").
inline constexpr std::string_view kTxId = "veritrain/txid/v1";
inline constexpr std::string_view kStateEntry = "veritrain/state/entry/v1";
inline constexpr std::string_view kReceipt = "veritrain/receipt/v1";
inline constexpr std::string_view kGenesis = "veritrain/genesis/v1";

// A solver's signed off-chain note on its bounty: progress, served checkpoints (node/solver_note.h).
inline constexpr std::string_view kSolverNote = "veritrain/solver-note/v1";

// P2P frame magic of a chain (net/frame.h ChainMagic; docs/formats.md "P2P wire format").
inline constexpr std::string_view kNetMagic = "veritrain/net/magic/v1";
// What a node signs in the P2P handshake to prove its node key (net/handshake.h).
// Validators sign it with their block-signing key: the tag keeps such a
// signature from ever being valid for a block, a transaction or a vote.
inline constexpr std::string_view kNetHandshake = "veritrain/net/handshake/v1";
// The per-direction session keys of a P2P connection, from the X25519 secret
// and the handshake transcript (net/handshake.h DeriveSessionKeys).
inline constexpr std::string_view kNetSessionKey = "veritrain/net/session-key/v1";

// BFT finality (consensus/messages.h; docs/node.md "Consensus"): what a
// validator signs when it votes or proposes.
inline constexpr std::string_view kConsensusVote = "veritrain/consensus/vote/v1";
inline constexpr std::string_view kConsensusProposal = "veritrain/consensus/proposal/v1";
// An evidence item a block carries (contract_vm/block.h evidence_root).
inline constexpr std::string_view kEvidence = "veritrain/evidence/v1";

// All tags above; tests assert that they are pairwise distinct.
// clang-format off
inline constexpr std::array kAll = {
    kMerkleLeaf, kMerkleNode, kMerkleRoot, kTensor, kRoundingLog, kAddress, kTx, kBlock, kKeyFileChecksum,
    kJob, kCommitment, kNodeRecord, kStateHeader,
    kTxId, kStateEntry, kReceipt, kGenesis,
    kNetMagic, kNetHandshake, kNetSessionKey, kSolverNote,
    kConsensusVote, kConsensusProposal, kEvidence,
};
// clang-format on

}  // namespace vt::crypto::tags
