#pragma once
// Many consecutive blocks of one Philox stream at once (host code): the
// blocks of PhiloxStreamBlock (common/philox.h), bit for bit, eight at a time
// in the lanes of AVX2 registers where the CPU has AVX2. A block's ten
// rounds are a chain of dependent 32 × 32 → 64-bit multiplies; one block at
// a time, dropout's mask took 7 % of gpt-tiny's native step.

#include <cstddef>
#include <cstdint>

#include "common/philox.h"

namespace vt {

// out[i] = PhiloxStreamBlock(key, step, tensor, first + i) for i < count.
void PhiloxStreamBlocks(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t first,
                        std::size_t count, PhiloxBlock* out);

namespace detail {
// TEST ONLY: the same without the vector path.
void PhiloxStreamBlocksScalar(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t first,
                              std::size_t count, PhiloxBlock* out);
}  // namespace detail

}  // namespace vt
