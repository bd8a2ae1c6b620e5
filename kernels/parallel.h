#pragma once
// Parallelism only over independent outputs: ParallelFor splits [0, n) into
// contiguous chunks, one per worker. A chunk boundary never changes any
// value's operation order, so results are identical for every thread count.

#include <cstdint>
#include <functional>

namespace vt::kernels {

// Runs fn(begin, end) over disjoint chunks covering [0, n) on up to
// `threads` threads (a persistent pool; threads ≤ 1 runs inline).
void ParallelFor(int threads, std::int64_t n,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

}  // namespace vt::kernels
