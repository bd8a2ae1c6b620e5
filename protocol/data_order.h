#pragma once
// Which dataset examples form the batch of a step — a rule the worker trains
// by and the referee re-derives in arbitration, so it is defined once, here
// (docs/formats.md, "Data order"):
//
//   epoch e visits the examples in the order
//     Permutation(seed, step = e, tensor = kDataOrderStream, n)   (common/random.h)
//   a batch of B takes the next B positions from the cursor (epoch, offset),
//   running on into the next epoch's order when an epoch ends.
//
// worker/data_order.h deals out batches with a cached permutation; this is
// the reference definition it is tested against.

#include <cstdint>
#include <vector>

#include "common/result.h"

namespace vt::protocol {

// The Philox tensor id reserved for data order.
inline constexpr std::uint32_t kDataOrderStream = 0xFFFF0000u;

// Invalid "data-bad-cursor" (dataset_size == 0 or offset >= dataset_size) or
// "data-epoch-overflow" (an epoch >= 2^32 would be needed).
// The elements BatchIndices generates for these arguments: one full
// permutation of the dataset per epoch the batch touches, plus the batch.
// Arbitration charges gas for this before calling BatchIndices (the
// permutation allocates dataset_size words). Saturates at 2^64 - 1.
std::uint64_t BatchIndicesWork(std::uint64_t dataset_size, std::uint64_t offset, std::uint32_t batch_size);

Result<std::vector<std::uint64_t>> BatchIndices(std::uint64_t seed, std::uint64_t dataset_size, std::uint64_t epoch,
                                                std::uint64_t offset, std::uint32_t batch_size);

}  // namespace vt::protocol
