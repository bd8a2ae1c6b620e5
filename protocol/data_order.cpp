#include "protocol/data_order.h"

#include <algorithm>
#include <limits>

#include "common/random.h"

namespace vt::protocol {

std::uint64_t BatchIndicesWork(std::uint64_t dataset_size, std::uint64_t offset, std::uint32_t batch_size) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (dataset_size == 0) return batch_size;
  const std::uint64_t first = offset < dataset_size ? dataset_size - offset : 0;
  const std::uint64_t rest = batch_size > first ? batch_size - first : 0;
  const std::uint64_t epochs = 1 + rest / dataset_size + (rest % dataset_size != 0 ? 1 : 0);
  if (epochs > (kMax - batch_size) / dataset_size) return kMax;
  return epochs * dataset_size + batch_size;
}

Result<std::vector<std::uint64_t>> BatchIndices(std::uint64_t seed, std::uint64_t dataset_size, std::uint64_t epoch,
                                                std::uint64_t offset, std::uint32_t batch_size) {
  if (dataset_size == 0 || offset >= dataset_size)
    return Status::Invalid("data-bad-cursor", "cursor offset " + std::to_string(offset) + " outside a dataset of " +
                                                  std::to_string(dataset_size));
  std::vector<std::uint64_t> out;
  out.reserve(batch_size);
  while (out.size() < batch_size) {
    if (epoch > std::numeric_limits<std::uint32_t>::max())
      return Status::Invalid("data-epoch-overflow", "epoch " + std::to_string(epoch) + " does not fit 32 bits");
    const auto perm = Permutation(seed, static_cast<std::uint32_t>(epoch), kDataOrderStream, dataset_size);
    const std::uint64_t take = std::min<std::uint64_t>(batch_size - out.size(), dataset_size - offset);
    out.insert(out.end(), perm.begin() + static_cast<std::ptrdiff_t>(offset),
               perm.begin() + static_cast<std::ptrdiff_t>(offset + take));
    offset = 0;
    ++epoch;
  }
  return out;
}

}  // namespace vt::protocol
