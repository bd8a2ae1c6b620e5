#include "node/blob_rules.h"

#include <string>

#include "crypto/sha256.h"
#include "worker/checkpoint_store.h"
#include "worker/log_bundle.h"

namespace vt::node {
namespace {

Status Bad(const referee::BlobRequirement& req, const Status& why) {
  return Status::Invalid("blob-invalid", std::string(req.field) + " (" + std::string(referee::BlobKindName(req.kind)) +
                                             " " + req.hash.Hex().substr(0, 16) + "): " + why.ToString());
}

}  // namespace

Result<worker::TrainingState> DecodeStateBlob(ByteSpan bytes, const Hash256& state_hash) {
  if (bytes.size() > referee::kMaxBlobBytes) return Status::Invalid("blob-too-large");
  return worker::DecodeCheckpointFile(bytes, state_hash, referee::MaxDecodedBytes(bytes.size()));
}

Status VerifyBlob(const referee::BlobRequirement& req, ByteSpan bytes) {
  if (bytes.size() != req.bytes)
    return Bad(req, Status::Invalid("blob-wrong-size", std::to_string(bytes.size()) + " bytes, the transaction declares " +
                                                           std::to_string(req.bytes)));
  if (crypto::Sha256Digest(bytes) != req.hash) return Bad(req, Status::Invalid("blob-hash-mismatch"));
  switch (req.kind) {
    case referee::BlobKind::kCheckpoint: {
      auto state = DecodeStateBlob(bytes, req.state_hash);
      if (!state.ok()) return Bad(req, state.status());
      return Status::Ok();
    }
    case referee::BlobKind::kLogBundle: {
      auto bundle = worker::DecodeLogBundle(bytes, referee::MaxDecodedBytes(bytes.size()));
      if (!bundle.ok()) return Bad(req, bundle.status());
      if (Status s = worker::CheckBundleCommitment(bundle->manifest, req.commitment); !s.ok()) return Bad(req, s);
      return Status::Ok();
    }
  }
  return Bad(req, Status::Invalid("blob-unknown-kind"));
}

std::vector<referee::BlobRequirement> BlockBlobs(const vm::Block& block) {
  std::vector<referee::BlobRequirement> out;
  for (const vm::Transaction& tx : block.txs) {
    std::vector<referee::BlobRequirement> named = referee::NamedBlobs(tx);
    out.insert(out.end(), named.begin(), named.end());
  }
  return out;
}

}  // namespace vt::node
