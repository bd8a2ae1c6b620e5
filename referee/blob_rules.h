#pragma once
// Blob availability rules (docs/referee.md, "Data availability"): which
// content-addressed blobs a transaction names, and what each must hold. A
// block is valid only when every blob its transactions name is held by the
// validator and passes its rule — as Ethereum's blob sidecars, availability
// is part of block validity — so a solver that withholds its logs or its
// final state never gets its Commit into a block, its solve window ends,
// and Refund slashes its bond.
//
// This file is pure (no I/O): it lists requirements from the transaction's
// bytes alone. The content checks (node/blob_rules.h VerifyBlob) and the
// node's fetch/park/pin machinery (node/blob_gate.h) act on the list; the
// referee calls BlobsOf on its own arguments to refuse bad declarations and
// to charge gas for every named byte.

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/tx.h"
#include "protocol/types.h"
#include "referee/messages.h"

namespace vt::referee {

// A blob is at most this long (consensus): a peer serves it, every validator
// keeps it forever, and verifying it is bounded work.
inline constexpr std::uint64_t kMaxBlobBytes = std::uint64_t{256} << 20;
// Decompressing a blob may produce at most max(kMinDecodedAllowance,
// kMaxBlobExpansion × its size) bytes, and never more than
// kMaxBlobDecodedBytes: the work a named byte can cause is bounded, so the
// per-byte gas pays for it. Honest checkpoints expand ~3-4× (fresh Adam
// moments are zeros), honest log bundles less.
inline constexpr std::uint64_t kMaxBlobExpansion = 16;
inline constexpr std::uint64_t kMinDecodedAllowance = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kMaxBlobDecodedBytes = std::uint64_t{1} << 30;

std::uint64_t MaxDecodedBytes(std::uint64_t blob_bytes);

enum class BlobKind : std::uint8_t {
  // worker/checkpoint_store.h file bytes whose state hashes to `state_hash`.
  kCheckpoint = 1,
  // worker/log_bundle.h bytes whose manifest reproduces `commitment`'s job
  // hash, checkpoint root, final state hash and log root.
  kLogBundle = 2,
};
std::string_view BlobKindName(BlobKind kind);

struct BlobRequirement {
  std::string_view field;  // the argument that names it: "log_bundle", "state_blob", "initial_blob"
  Hash256 hash;            // SHA-256 of the blob bytes
  std::uint64_t bytes = 0; // its declared length (paid for; must be exact)
  BlobKind kind = BlobKind::kCheckpoint;
  Hash256 state_hash;              // kCheckpoint
  protocol::Commitment commitment; // kLogBundle
  bool operator==(const BlobRequirement&) const = default;
};

// The blobs named by a call's arguments. Invalid "blob-bad-size" when a
// named blob's declared length is 0 or above kMaxBlobBytes, or a zero hash
// declares a length; "commit-no-state-blob" when a Commit names no final
// state. A zero hash (with length 0) names nothing.
Result<std::vector<BlobRequirement>> BlobsOf(const CommitArgs& a);
Result<std::vector<BlobRequirement>> BlobsOf(const PostBountyArgs& a);

// The blobs a transaction names: those of a referee Commit or PostBounty
// whose arguments decode and declare well; none for any other transaction
// (one that names blobs badly fails in the referee, so nothing to hold).
std::vector<BlobRequirement> NamedBlobs(const vm::Transaction& tx);

// Gas for the named bytes (vm::kGas.blob_byte each), saturating.
std::uint64_t BlobGas(const std::vector<BlobRequirement>& blobs);

// A stable id of (blob, rule): a verdict on it never changes, so nodes cache it.
Hash256 RequirementId(const BlobRequirement& r);

}  // namespace vt::referee
