#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/parallel.h"

namespace vt::kernels {
namespace {

// Every index exactly once, chunks contiguous and non-empty, for many sizes.
TEST(ParallelForTest, CoversEveryIndexOnce) {
  for (int threads : {0, 1, 2, 3, 8, 64}) {
    for (std::int64_t n : {0, 1, 2, 5, 63, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      std::atomic<int> chunks{0};
      ParallelFor(threads, n, [&](std::int64_t b, std::int64_t e) {
        EXPECT_LT(b, e);
        ++chunks;
        for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      EXPECT_LE(chunks.load(), std::max(1, threads));
      if (n > 0) {
        EXPECT_EQ(chunks.load(), std::min<std::int64_t>(std::max(1, threads), n));
      }
    }
  }
}

// ParallelForChunks numbers ParallelFor's chunks: each number below
// ParallelChunks once, with chunk i = [n·i/c, n·(i+1)/c), every index once.
TEST(ParallelForTest, ChunksAreNumberedOnce) {
  for (int threads : {0, 1, 2, 3, 8}) {
    for (std::int64_t n : {0, 1, 2, 5, 63, 1000}) {
      const std::int64_t c = ParallelChunks(threads, n);
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n)), seen(static_cast<std::size_t>(c));
      ParallelForChunks(threads, n, [&](std::int64_t chunk, std::int64_t b, std::int64_t e) {
        ASSERT_LT(chunk, c);
        EXPECT_EQ(b, n * chunk / c);
        EXPECT_EQ(e, n * (chunk + 1) / c);
        ++seen[static_cast<std::size_t>(chunk)];
        for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
      for (auto& s : seen) ASSERT_EQ(s.load(), 1);
    }
  }
}

// Nested calls (fn itself calls ParallelFor) and several threads calling at
// once both complete with every index covered.
TEST(ParallelForTest, NestedAndConcurrentCallersComplete) {
  std::atomic<std::int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        ParallelFor(3, 10, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t i = b; i < e; ++i) {
            ParallelFor(2, 7, [&](std::int64_t b2, std::int64_t e2) { sum += e2 - b2; });
          }
        });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(sum.load(), 4 * 50 * 10 * 7);
}

// Workers told to park (ParkIdleWorkers, before OpenBLAS runs) while jobs
// come and go, with gaps that let them spin, park or both: every job still
// completes with every index covered once.
TEST(ParallelForTest, JobsCompleteWhileWorkersAreToldToPark) {
  std::atomic<bool> stop{false};
  std::thread parker([&] {
    while (!stop.load()) {
      ParkIdleWorkers();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::int64_t covered = 0;
  for (int rep = 0; rep < 300; ++rep) {
    std::vector<std::atomic<int>> seen(37);
    ParallelFor(3, 37, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) seen[static_cast<std::size_t>(i)]++;
    });
    for (const auto& s : seen) covered += s.load() == 1;
    if (rep % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rep % 7 * 60));
  }
  stop = true;
  parker.join();
  EXPECT_EQ(covered, 300 * 37);
}

}  // namespace
}  // namespace vt::kernels
