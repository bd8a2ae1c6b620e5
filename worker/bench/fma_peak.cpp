#include "worker/bench/fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace vt::worker::bench {
namespace {

// 12 independent accumulators: FMA latency 4–5 cycles × 2 ports (+ slack),
// so the loop is bound by FMA throughput alone. acc·a + b with a < 1 stays
// bounded; the sum is returned so the loop is not removed. The chain loop is
// unrolled so the accumulators live in registers: left as a loop over the
// array, GCC keeps them in memory and the loop measures load/store
// throughput (25 GFLOP/s on a 2-core Zen, where a GPT-2 step reaches 55).
constexpr int kChains = 12;
constexpr std::int64_t kIters = 20'000'000;

__attribute__((target("avx512f"))) float Chains512() {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-6f);
  for (std::int64_t i = 0; i < kIters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  alignas(64) float lanes[16];  // (not _mm512_reduce_add_ps: GCC 12 warns inside it)
  _mm512_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

__attribute__((target("avx2,fma"))) float Chains256() {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-6f);
  for (std::int64_t i = 0; i < kIters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float s = 0;
  for (float v : lanes) s += v;
  return s;
}

}  // namespace

FmaPeak MeasureFmaPeak(int threads, int repeats) {
  FmaPeak peak;
  int lanes = 0;
  float (*chains)() = nullptr;
  if (__builtin_cpu_supports("avx512f")) {
    peak.isa = "avx512f";
    lanes = 16;
    chains = Chains512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    peak.isa = "avx2+fma";
    lanes = 8;
    chains = Chains256;
  } else {
    peak.isa = "scalar";
    return peak;
  }
  threads = std::max(1, threads);
  const double flops = 2.0 * lanes * kChains * static_cast<double>(kIters) * threads;
  std::vector<float> sink(static_cast<std::size_t>(threads));
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sink[static_cast<std::size_t>(t)] = chains(); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    peak.flops_per_second = std::max(peak.flops_per_second, flops / s);
  }
  volatile float keep = sink[0];
  (void)keep;
  return peak;
}

}  // namespace vt::worker::bench
