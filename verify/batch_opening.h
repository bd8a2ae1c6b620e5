#pragma once
// Values of a step's batch opened at the element level (docs/referee.md,
// "Batch openings"). The batch has no tensor hash: it is defined by the
// job's dataset commitment and data order. So a value of a batch input is
// opened as whole node arbitration opens the batch (verify/arbitrate.h),
// for the few examples a rule reads instead of all B: the header of h_t
// (opened against h_t) gives the data cursor, protocol::BatchIndices the
// dataset index of each batch position, and each example's leaf is opened
// against job.dataset_root at that index and decoded by the graph source.
//
// Protocol types only besides kernels shapes: referee/ and the worker use it.

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "verify/wire.h"

namespace vt::verify {

class Meter;
class StepGraphSource;

// What a move carries to open batch values: the header of h_t with its
// proof, and the examples at batch positions `positions` (strictly
// increasing, each < B), one ExampleOpening each.
struct BatchOpening {
  protocol::StateHeader header;
  crypto::MerkleProof header_proof;
  std::vector<std::uint64_t> positions;
  std::vector<ExampleOpening> examples;
  bool operator==(const BatchOpening&) const = default;
};

// Where the batch is agreed: the job, the step t and h_t, and the state
// tensor count (the header's position in h_t).
struct BatchCase {
  const protocol::JobSpec* job = nullptr;
  std::uint64_t step = 0;
  Hash256 state_hash;
  std::uint64_t num_state_tensors = 0;
};

// The examples a move opened, checked.
class OpenedBatch {
 public:
  // Value `index` of batch input `which` (0 inputs, 1 targets) of the
  // step's batch of shape `shape` ([B, …]). Invalid "elem-batch-not-opened"
  // when its example is not among the opened ones, "elem-bad-index" outside
  // the tensor.
  Result<float> Value(std::uint32_t which, const kernels::Shape& shape, std::int64_t index) const;

 private:
  friend Result<OpenedBatch> VerifyBatchOpening(const StepGraphSource&, const BatchCase&, const BatchOpening&,
                                                Meter&);
  std::map<std::uint64_t, std::vector<kernels::Tensor>>
      m_examples;  // position → (inputs, targets), [1, …] each
};

// Checks the opening and decodes its examples. Charged before each piece
// is done: the header's proof, the data-order words
// (protocol::BatchIndicesWork), each example's proof and bytes. Invalid
// "elem-bad-batch" (header, positions, an example not at its position or
// not decoding) or the meter's status.
Result<OpenedBatch> VerifyBatchOpening(const StepGraphSource& graphs, const BatchCase& at,
                                       const BatchOpening& opening, Meter& meter);

// The batch positions that hold values [first, first + count) of a batch
// input of shape `shape` ([B, …]): its examples, increasing.
std::vector<std::uint64_t> BatchPositionsOf(const kernels::Shape& shape, std::int64_t first,
                                            std::int64_t count);

// A party's opening of the examples at `positions`, from the header of h_t
// with its proof and the whole batch's example openings (NodeInputs).
BatchOpening OpenBatch(const protocol::StateHeader& header, const crypto::MerkleProof& header_proof,
                       std::span<const ExampleOpening> batch, std::span<const std::uint64_t> positions);

// The pieces node arbitration (verify::ArbitrateNode) and batch openings
// share, one rule each, charged before they are done:
//   the header of h_t opened against it: its proof, the tensor
//   count and the step (Invalid "arb-bad-header", "arb-header-step-mismatch");
//   the batch's dataset indices (protocol::BatchIndicesWork words first;
//   Invalid "arb-bad-examples");
//   example k of the batch opened at dataset index `index` against
//   job.dataset_root (Invalid "arb-bad-examples").
Status CheckStateHeader(const BatchCase& at, const protocol::StateHeader& header,
                        const crypto::MerkleProof& proof, Meter& meter);
Result<std::vector<std::uint64_t>> ChargedBatchIndices(const StepGraphSource& graphs,
                                                       const protocol::JobSpec& job,
                                                       const protocol::StateHeader& header, Meter& meter);
Status CheckExampleAt(const protocol::JobSpec& job, std::uint64_t k, std::uint64_t index,
                      const ExampleOpening& ex, Meter& meter);

void Encode(Writer& w, const BatchOpening& v);
Result<BatchOpening> Decode(Reader& r, DecodeAs<BatchOpening>);

}  // namespace vt::verify
