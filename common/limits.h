#pragma once
// Protocol size limits that more than one library enforces (docs/formats.md,
// "Limits"). Everything an attacker sizes is bounded by a constant checked
// at validation; a limit that the network and the chain both apply lives
// here, once, so the two can never disagree (a transaction the chain would
// accept but gossip cannot carry is a block nobody else can receive).
//
// Changing a number here is a protocol change (a fork).

#include <cstddef>
#include <cstdint>

namespace vt::limits {

// ---- transactions and blocks (contract_vm rules, net gossip caps) ----------------

// Largest encoded transaction: the chain's ChainParams::max_tx_bytes may be
// lower, never higher (genesis refuses it), and a tx gossip frame carries
// exactly this much (net MaxPayload(kTx)).
inline constexpr std::size_t kMaxTxBytes = std::size_t{1} << 20;
// Largest encoded block: the proposer stops filling a block before it, a
// block above it is invalid, and a block gossip frame carries exactly this
// much (net MaxPayload(kBlock)).
inline constexpr std::size_t kMaxBlockBytes = std::size_t{8} << 20;

// ---- jobs (protocol ValidateJobSpec) -----------------------------------------------

// Examples in a dataset. Arbitration re-derives a batch's indices from the
// epoch's permutation, which holds dataset_size words (2^24 words = 128 MiB)
// and is charged per element before it is built.
inline constexpr std::uint64_t kMaxDatasetSize = std::uint64_t{1} << 24;
// Examples per batch: every arbitration of a batch-reading node opens this
// many dataset leaves in one transaction.
inline constexpr std::uint32_t kMaxBatchSize = std::uint32_t{1} << 16;
// Training steps N of a job (the data cursor's epoch must fit 32 bits).
inline constexpr std::uint64_t kMaxSteps = std::uint64_t{1} << 32;

// ---- mempool (node admission; local policy, not consensus) ------------------------

// Nonces ahead of the account's that a node queues for one sender.
inline constexpr std::uint64_t kMaxNonceAhead = 64;
// Pending transactions per sender (its nonce window).
inline constexpr std::size_t kMaxPendingPerSender = 64;

}  // namespace vt::limits
