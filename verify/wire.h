#pragma once
// The dispute's wire types (docs/referee.md, "Arbitration"): what a party
// sends so that anyone — the arbitration precompile, a challenger, the
// `vt-worker audit --locate` tool — can check one node of a step against the
// hashes the game has agreed. One definition and one codec for all of them.
//
// Protocol types only (no kernels types): referee/ and contract_vm/ headers
// include this one.

#include <cstddef>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "protocol/state.h"
#include "protocol/types.h"

namespace vt::verify {

// Decoder bounds: a tensor or log is at most 1 GiB, a batch at most 2^20
// examples (the transaction that carries them is bounded far below).
inline constexpr std::size_t kMaxTensorBytes = std::size_t{1} << 30;
inline constexpr std::size_t kMaxExamples = std::size_t{1} << 20;

// One input of the disputed node, in the order of its spec's inputs.
struct InputOpening {
  Bytes tensor;                // canonical tensor bytes; empty for the assemble node and batch inputs
  Hash256 tensor_hash;         // assemble node only: the tensor hash being opened
  std::optional<crypto::MerkleProof> proof;       // kState: in h_t; kNode: the producer's record in the node tree
  std::optional<protocol::NodeRecord> producer;   // kNode only
  bool operator==(const InputOpening&) const = default;
};

// One example of the batch, as committed by the dataset root.
struct ExampleOpening {
  Bytes leaf;                 // the dataset-commitment leaf bytes
  crypto::MerkleProof proof;  // against job.dataset_root
  bool operator==(const ExampleOpening&) const = default;
};

// The arbitration payload: everything the node's re-execution reads.
struct ArbitrationPayload {
  protocol::StateHeader header;          // the header of h_t …
  crypto::MerkleProof header_proof;      // … opened against h_t
  std::vector<InputOpening> inputs;
  std::vector<ExampleOpening> examples;  // the step's batch, when the node reads it; else empty
  Bytes log;                             // rounded mode: kernels EncodeRoundingLog of the node's committed log
  bool operator==(const ArbitrationPayload&) const = default;
};

// Rounded mode: the chain from the disputed node's log hash to the
// commitment's log_root (docs/referee.md, "Rounding logs").
struct LogChain {
  crypto::MerkleProof node_in_step;      // node log hash in the step's log root
  Hash256 step_log_root;
  crypto::MerkleProof step_in_interval;  // step log root in the interval's log hash
  Hash256 interval_log_hash;
  crypto::MerkleProof interval_in_root;  // interval log hash in commitment.log_root
  bool operator==(const LogChain&) const = default;
};

void Encode(Writer& w, const InputOpening& in);
Result<InputOpening> Decode(Reader& r, DecodeAs<InputOpening>);
void Encode(Writer& w, const ExampleOpening& ex);
Result<ExampleOpening> Decode(Reader& r, DecodeAs<ExampleOpening>);
void Encode(Writer& w, const ArbitrationPayload& p);
Result<ArbitrationPayload> Decode(Reader& r, DecodeAs<ArbitrationPayload>);
void Encode(Writer& w, const LogChain& c);
Result<LogChain> Decode(Reader& r, DecodeAs<LogChain>);

}  // namespace vt::verify
