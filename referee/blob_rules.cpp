#include "referee/blob_rules.h"

#include <algorithm>

#include "contract_vm/gas.h"
#include "crypto/sha256.h"

namespace vt::referee {
namespace {

// A named blob's declaration: a zero hash names nothing (and declares no
// length); otherwise the length is exact, non-zero and within the bound.
Status CheckDeclared(std::string_view field, const Hash256& hash, std::uint64_t bytes) {
  if (hash.IsZero()) {
    if (bytes != 0) return Status::Invalid("blob-bad-size", std::string(field) + ": a length without a blob");
    return Status::Ok();
  }
  if (bytes == 0 || bytes > kMaxBlobBytes)
    return Status::Invalid("blob-bad-size", std::string(field) + ": " + std::to_string(bytes) + " bytes (limit " +
                                                std::to_string(kMaxBlobBytes) + ")");
  return Status::Ok();
}

BlobRequirement Checkpoint(std::string_view field, const Hash256& hash, std::uint64_t bytes, const Hash256& state) {
  BlobRequirement r;
  r.field = field;
  r.hash = hash;
  r.bytes = bytes;
  r.kind = BlobKind::kCheckpoint;
  r.state_hash = state;
  return r;
}

}  // namespace

std::uint64_t MaxDecodedBytes(std::uint64_t blob_bytes) {
  const std::uint64_t scaled = vm::GasMeter::Mul(kMaxBlobExpansion, blob_bytes);
  return std::min(kMaxBlobDecodedBytes, std::max(kMinDecodedAllowance, scaled));
}

std::string_view BlobKindName(BlobKind kind) {
  switch (kind) {
    case BlobKind::kCheckpoint: return "checkpoint";
    case BlobKind::kLogBundle: return "log-bundle";
  }
  return "unknown";
}

Result<std::vector<BlobRequirement>> BlobsOf(const CommitArgs& a) {
  VT_TRY(CheckDeclared("state_blob", a.state_blob, a.state_blob_bytes));
  VT_TRY(CheckDeclared("log_bundle", a.log_bundle, a.log_bundle_bytes));
  // The client paid for the model: the final state must reach it.
  if (a.state_blob.IsZero()) return Status::Invalid("commit-no-state-blob", "the commit names no final-state blob");
  std::vector<BlobRequirement> out;
  out.push_back(Checkpoint("state_blob", a.state_blob, a.state_blob_bytes, a.commitment.final_state_hash));
  if (!a.log_bundle.IsZero()) {
    BlobRequirement r;
    r.field = "log_bundle";
    r.hash = a.log_bundle;
    r.bytes = a.log_bundle_bytes;
    r.kind = BlobKind::kLogBundle;
    r.commitment = a.commitment;
    out.push_back(r);
  }
  return out;
}

Result<std::vector<BlobRequirement>> BlobsOf(const PostBountyArgs& a) {
  VT_TRY(CheckDeclared("initial_blob", a.initial_blob, a.initial_blob_bytes));
  std::vector<BlobRequirement> out;
  if (!a.initial_blob.IsZero())
    out.push_back(Checkpoint("initial_blob", a.initial_blob, a.initial_blob_bytes, a.initial_state));
  return out;
}

std::vector<BlobRequirement> NamedBlobs(const vm::Transaction& tx) {
  const auto* call = std::get_if<vm::CallPayload>(&tx.payload);
  if (call == nullptr || call->contract != kRefereeContractId) return {};
  Result<std::vector<BlobRequirement>> blobs = std::vector<BlobRequirement>{};
  switch (static_cast<Method>(call->method)) {
    case Method::kCommit: {
      auto a = DecodeExact<CommitArgs>(call->args);
      if (a.ok()) blobs = BlobsOf(*a);
      break;
    }
    case Method::kPostBounty: {
      auto a = DecodeExact<PostBountyArgs>(call->args);
      if (a.ok()) blobs = BlobsOf(*a);
      break;
    }
    default:
      break;
  }
  if (!blobs.ok()) return {};
  return std::move(*blobs);
}

std::uint64_t BlobGas(const std::vector<BlobRequirement>& blobs) {
  std::uint64_t gas = 0;
  for (const BlobRequirement& r : blobs) gas = vm::GasMeter::Add(gas, vm::GasMeter::Mul(vm::kGas.blob_byte, r.bytes));
  return gas;
}

Hash256 RequirementId(const BlobRequirement& r) {
  static const crypto::TaggedHasher kTag("veritrain/blob-requirement/v1");
  Writer w;
  w.PutHash(r.hash);
  w.PutU64(r.bytes);
  w.PutEnum(r.kind);
  w.PutHash(r.state_hash);
  protocol::Encode(w, r.commitment);
  return kTag.Hash(w.bytes());
}

}  // namespace vt::referee
