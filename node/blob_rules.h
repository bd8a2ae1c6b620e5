#pragma once
// The content checks of blob availability (docs/referee.md, "Data
// availability"): referee/blob_rules.h lists what a transaction's blobs must
// hold; VerifyBlob is the one implementation of "does it", used by proposers,
// validators, the challenger and the client alike. Pure (no I/O) and bounded:
// nothing decodes to more than referee::MaxDecodedBytes(size).

#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/block.h"
#include "referee/blob_rules.h"
#include "worker/state.h"

namespace vt::node {

// Ok when `bytes` are the blob `req` names and satisfy its rule; otherwise
// Invalid "blob-invalid" with the field and the decoder's reason in the
// detail (wrong length or hash, a checkpoint that does not decode or hashes
// to another state, a log bundle that does not unpack or reproduce the
// commitment's roots, anything decoding beyond the bound).
Status VerifyBlob(const referee::BlobRequirement& req, ByteSpan bytes);

// A checkpoint blob decoded under the same bound as VerifyBlob: the training
// state whose hash is `state_hash` (e.g. the client's model from
// Bounty::state_blob, whose hash is commitment.final_state_hash).
Result<worker::TrainingState> DecodeStateBlob(ByteSpan bytes, const Hash256& state_hash);

// Every blob the block's transactions name, in transaction order.
std::vector<referee::BlobRequirement> BlockBlobs(const vm::Block& block);

}  // namespace vt::node
