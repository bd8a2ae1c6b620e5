// ParallelFor's round trip: what one parallel region costs on top of its
// work, against the same region run inline (one thread) and under OpenMP
// (libgomp, the runtime PyTorch's CPU kernels use) measured in the same run.
//
// A training step is a sequence of regions separated by serial work (an
// operator's setup, a small operator run inline). Each row runs regions of
// `work` µs of arithmetic split over the threads, with `gap` µs of serial
// work on the calling thread before each: the gap is what lets a pool's
// workers fall asleep between regions, as they do between a step's operators.
//
//   parallel_bench            the table (a few seconds)
//   parallel_bench --quick    a short pass (the CTest smoke run)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kernels/parallel.h"

namespace vt::kernels {
namespace {

// `units` of dependent arithmetic (≈ 1 ns each), not optimised away.
double Spin(std::int64_t units, double seed) {
  double x = seed;
  for (std::int64_t i = 0; i < units; ++i) x = x * 0.999999 + 1e-9;
  return x;
}

volatile double g_sink = 0;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Units of Spin per microsecond on this machine, measured once.
double UnitsPerMicrosecond() {
  const std::int64_t units = 20'000'000;
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const double t0 = Now();
    g_sink = Spin(units, 1.0);
    best = std::min(best, Now() - t0);
  }
  return static_cast<double>(units) / (best * 1e6);
}

enum class Runner { kInline, kPool, kOpenMp };

// Seconds per region (best of `reps` batches of `regions` regions).
double TimeRegions(Runner runner, int threads, std::int64_t work_units, std::int64_t gap_units, int regions,
                   int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = Now();
    for (int i = 0; i < regions; ++i) {
      g_sink = Spin(gap_units, g_sink);
      switch (runner) {
        case Runner::kInline:
          g_sink = Spin(work_units, g_sink);
          break;
        case Runner::kPool:
          ParallelFor(threads, threads, [&](std::int64_t b, std::int64_t e) {
            g_sink = Spin(work_units * (e - b) / threads, 1.0);
          });
          break;
        case Runner::kOpenMp:
#if defined(_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static)
          for (int c = 0; c < threads; ++c) g_sink = Spin(work_units / threads, 1.0);
#endif
          break;
      }
    }
    best = std::min(best, (Now() - t0) / regions);
  }
  return best;
}

int Main(int argc, char** argv) {
  bool quick = false;
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::max(2, std::atoi(argv[i] + 10));
    } else {
      std::fprintf(stderr, "usage: parallel_bench [--quick] [--threads=N]\n");
      return 2;
    }
  }
  const double per_us = UnitsPerMicrosecond();
  const int regions = quick ? 50 : 2000, reps = quick ? 1 : 5;
  std::printf("== one parallel region, %d threads: µs per region (serial gap not counted) ==\n", threads);
#if defined(_OPENMP)
  std::printf("baseline: OpenMP (libgomp, default wait policy)\n");
#else
  std::printf("baseline: OpenMP not available in this build\n");
#endif
  std::printf("%8s %8s %10s %10s %10s %10s %10s\n", "work", "gap", "inline", "pool", "openmp", "pool/inl",
              "pool/omp");
  const double works[] = {0, 2, 10, 50, 200};
  const double gaps[] = {0, 20, 200};
  for (const double gap : gaps) {
    for (const double work : works) {
      const auto w = static_cast<std::int64_t>(work * per_us), g = static_cast<std::int64_t>(gap * per_us);
      const double gap_s = TimeRegions(Runner::kInline, 1, 0, g, regions, reps);
      const auto net = [&](Runner r) {
        return std::max(0.0, TimeRegions(r, threads, w, g, regions, reps) - gap_s) * 1e6;
      };
      const double inl = net(Runner::kInline), pool = net(Runner::kPool);
#if defined(_OPENMP)
      const double omp = net(Runner::kOpenMp);
      std::printf("%6.0fµs %6.0fµs %10.2f %10.2f %10.2f %10s %9.2fx\n", work, gap, inl, pool, omp,
                  work > 0 ? (std::to_string(pool / inl).substr(0, 4) + "x").c_str() : "-", pool / omp);
#else
      std::printf("%6.0fµs %6.0fµs %10.2f %10.2f %10s %10s %10s\n", work, gap, inl, pool, "-",
                  work > 0 ? (std::to_string(pool / inl).substr(0, 4) + "x").c_str() : "-", "-");
#endif
    }
  }
  std::printf("(ideal pool/inline with %d threads: %.2fx once the work dwarfs the round trip)\n", threads,
              1.0 / threads);
  return 0;
}

}  // namespace
}  // namespace vt::kernels

int main(int argc, char** argv) { return vt::kernels::Main(argc, argv); }
