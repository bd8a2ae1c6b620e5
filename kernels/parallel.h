#pragma once
// Parallelism only over independent outputs: ParallelFor splits [0, n) into
// contiguous chunks, one per worker. A chunk boundary never changes any
// value's operation order, so results are identical for every thread count.

#include <cstdint>
#include <functional>

namespace vt::kernels {

// Runs fn(begin, end) over disjoint chunks covering [0, n) on up to
// `threads` threads (a persistent pool; threads ≤ 1 runs inline). Chunks are
// contiguous and as equal as possible: min(threads, n) of them, chunk i being
// [n·i/c, n·(i+1)/c). Returns when all chunks are done. Safe to call from
// several threads at once and from inside fn (nested calls never deadlock;
// the caller runs unclaimed chunks itself). fn must not throw.
void ParallelFor(int threads, std::int64_t n,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

}  // namespace vt::kernels
