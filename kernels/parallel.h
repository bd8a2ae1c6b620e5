#pragma once
// Parallelism only over independent outputs: ParallelFor splits [0, n) into
// contiguous chunks, one per worker. A chunk boundary never changes any
// value's operation order, so results are identical for every thread count.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace vt::kernels {

// Runs fn(begin, end) over disjoint chunks covering [0, n) on up to
// `threads` threads (a persistent pool; threads ≤ 1 runs inline). Chunks are
// contiguous and as equal as possible: min(threads, n) of them, chunk i being
// [n·i/c, n·(i+1)/c). Returns when all chunks are done. Safe to call from
// several threads at once and from inside fn (nested calls never deadlock;
// the caller runs unclaimed chunks itself). fn must not throw.
void ParallelFor(int threads, std::int64_t n,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn);

// Idle pool workers park now instead of spinning until their next job
// (kernels/parallel.cpp: they spin for up to 200 µs after each). For a
// caller about to run another threaded runtime on the same cores: before
// OpenBLAS's threaded GEMMs, native mode's gpt-tiny step on two threads
// took 7.3 ms without it, 5.2 ms with it.
void ParkIdleWorkers();

// ParallelFor's chunks numbered: fn(chunk, begin, end) for chunk <
// ParallelChunks(threads, n), the same chunks as ParallelFor(threads, n).
// For loops that need scratch per chunk: the caller allocates
// ParallelChunks(...) pieces before the call, so no allocation (and no
// std::bad_alloc) happens inside a pool worker.
inline std::int64_t ParallelChunks(int threads, std::int64_t n) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(std::max(threads, 1), n));
}
template <class Fn>
void ParallelForChunks(int threads, std::int64_t n, const Fn& fn) {
  const std::int64_t c = ParallelChunks(threads, n);
  ParallelFor(static_cast<int>(c), c, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t i = c0; i < c1; ++i) fn(i, n * i / c, n * (i + 1) / c);
  });
}

// Scratch for ParallelForChunks' chunks or ForEachItem's slots: `chunks`
// slices of `per_chunk` values, slice i for chunk (slot) i, allocated by the
// caller before the call (no allocation inside a pool worker). Each slice starts on its own 128-byte
// block, so no two threads write one cache line (or the pair a prefetcher
// fetches together): slices of a few values side by side made the threads
// pass their lines back and forth, and cnn-fashion's max pooling ran 6x
// slower on two threads than on one.
template <class T>
class ChunkScratch {
 public:
  ChunkScratch() = default;
  ChunkScratch(std::int64_t chunks, std::int64_t per_chunk)
      : m_stride((per_chunk + kPerBlock - 1) / kPerBlock * kPerBlock),
        m_data(static_cast<std::size_t>(chunks * m_stride + kPerBlock)) {}
  // Slice `chunk`, or null for a default-constructed (unused) scratch.
  T* operator[](std::int64_t chunk) {
    if (m_data.empty()) return nullptr;
    const auto at = reinterpret_cast<std::uintptr_t>(m_data.data());
    return reinterpret_cast<T*>((at + kBlock - 1) / kBlock * kBlock) + chunk * m_stride;
  }

 private:
  static constexpr std::uintptr_t kBlock = 128;
  static constexpr std::int64_t kPerBlock = kBlock / sizeof(T);
  static_assert(sizeof(T) <= kBlock && kBlock % sizeof(T) == 0);

  std::int64_t m_stride = 0;
  std::vector<T> m_data;
};

// How many of `threads` to hand `work` units to when a thread should get at
// least `min_per_thread` of them (a pool round trip costs a few
// microseconds while the workers spin, tens on a VM once they have parked:
// small work runs inline). At least 1.
inline int ThreadsForWork(int threads, std::int64_t work, std::int64_t min_per_thread) {
  return static_cast<int>(
      std::clamp<std::int64_t>(work / std::max<std::int64_t>(min_per_thread, 1), 1, std::max(threads, 1)));
}

}  // namespace vt::kernels
