#pragma once
// Which examples form each batch: a seeded permutation per epoch
// (docs/formats.md, "Data order"). The rule itself is protocol::BatchIndices
// (protocol/data_order.h), shared with the referee: epoch e visits the dataset
// in the order Permutation(seed, e, kDataOrderStream, n), and a batch takes
// the next B positions, running on into the next epoch, so the examples used
// after t steps are positions [0, t·B) of the concatenated epoch orders.
// DataOrder here gives the same indices with the current epoch's permutation
// cached (O(B) per batch instead of O(n)).
//
// The DataCursor (epoch, offset) is part of the training state: the next
// batch starts at position `offset` of epoch `epoch`'s permutation.

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"
#include "kernels/tensor.h"
#include "protocol/data_order.h"
#include "worker/dataset.h"

namespace vt::worker {

struct DataCursor {
  std::uint64_t epoch = 0;
  std::uint64_t offset = 0;  // < dataset size
  bool operator==(const DataCursor&) const = default;
};

// The cursor after `examples_consumed` examples of a dataset of `dataset_size`.
// Precondition: dataset_size > 0.
DataCursor CursorAt(std::uint64_t examples_consumed, std::uint64_t dataset_size);

// Invalid "data-epoch-overflow" for epochs >= 2^32 (the Philox step word).
Result<std::vector<std::uint64_t>> EpochPermutation(std::uint64_t seed, std::uint64_t epoch, std::uint64_t dataset_size);

// Deals out batches; keeps the permutation of the current epoch so that a
// batch costs O(B) and an epoch change O(n).
class DataOrder {
 public:
  // Precondition: dataset_size > 0.
  DataOrder(std::uint64_t seed, std::uint64_t dataset_size) : m_seed(seed), m_size(dataset_size) {}

  std::uint64_t dataset_size() const { return m_size; }

  // The dataset indices of the `batch_size` examples starting at `cursor`,
  // and advances `cursor` past them. Invalid "data-bad-cursor" when
  // cursor.offset >= dataset size; cursor is unchanged on failure.
  Result<std::vector<std::uint64_t>> NextBatch(DataCursor& cursor, std::uint32_t batch_size);

 private:
  Status LoadEpoch(std::uint64_t epoch);

  std::uint64_t m_seed;
  std::uint64_t m_size;
  bool m_have_epoch = false;
  std::uint64_t m_epoch = 0;
  std::vector<std::uint64_t> m_perm;
};

// A step's batch as the two tensors of InputSource::kBatch:
// inputs [B, input_shape…] (index 0) and targets [B, target_shape…] (index 1).
struct Batch {
  kernels::Tensor inputs;
  kernels::Tensor targets;
};

// Precondition: every index < dataset.size().
Batch MakeBatch(const Dataset& dataset, std::span<const std::uint64_t> indices);

}  // namespace vt::worker
