#include "worker/data_order.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

#include "common/random.h"

namespace vt::worker {

DataCursor CursorAt(std::uint64_t examples_consumed, std::uint64_t dataset_size) {
  assert(dataset_size > 0);
  return DataCursor{examples_consumed / dataset_size, examples_consumed % dataset_size};
}

Result<std::vector<std::uint64_t>> EpochPermutation(std::uint64_t seed, std::uint64_t epoch,
                                                    std::uint64_t dataset_size) {
  if (epoch > std::numeric_limits<std::uint32_t>::max())
    return Status::Invalid("data-epoch-overflow", "epoch " + std::to_string(epoch) + " does not fit 32 bits");
  return Permutation(seed, static_cast<std::uint32_t>(epoch), protocol::kDataOrderStream, dataset_size);
}

Status DataOrder::LoadEpoch(std::uint64_t epoch) {
  if (m_have_epoch && m_epoch == epoch) return Status::Ok();
  VT_ASSIGN_OR_RETURN(m_perm, EpochPermutation(m_seed, epoch, m_size));
  m_epoch = epoch;
  m_have_epoch = true;
  return Status::Ok();
}

Result<std::vector<std::uint64_t>> DataOrder::NextBatch(DataCursor& cursor, std::uint32_t batch_size) {
  if (cursor.offset >= m_size) {
    return Status::Invalid("data-bad-cursor", "cursor offset " + std::to_string(cursor.offset) +
                                                  " outside a dataset of " + std::to_string(m_size));
  }
  DataCursor at = cursor;
  std::vector<std::uint64_t> out;
  out.reserve(batch_size);
  while (out.size() < batch_size) {
    VT_TRY(LoadEpoch(at.epoch));
    const std::uint64_t take = std::min<std::uint64_t>(batch_size - out.size(), m_size - at.offset);
    out.insert(out.end(), m_perm.begin() + static_cast<std::ptrdiff_t>(at.offset),
               m_perm.begin() + static_cast<std::ptrdiff_t>(at.offset + take));
    at.offset += take;
    if (at.offset == m_size) {
      at.offset = 0;
      ++at.epoch;
    }
  }
  cursor = at;
  return out;
}

Batch MakeBatch(const Dataset& dataset, std::span<const std::uint64_t> indices) {
  const auto b = static_cast<std::int64_t>(indices.size());
  kernels::Shape in_shape{b};
  in_shape.insert(in_shape.end(), dataset.input_shape().begin(), dataset.input_shape().end());
  kernels::Shape tg_shape{b};
  tg_shape.insert(tg_shape.end(), dataset.target_shape().begin(), dataset.target_shape().end());
  Batch batch{kernels::Tensor(in_shape), kernels::Tensor(tg_shape)};
  float* in = batch.inputs.data();
  float* tg = batch.targets.data();
  for (std::uint64_t idx : indices) {
    const auto x = dataset.input(idx);
    const auto y = dataset.target(idx);
    in = std::copy(x.begin(), x.end(), in);
    tg = std::copy(y.begin(), y.end(), tg);
  }
  return batch;
}

}  // namespace vt::worker
