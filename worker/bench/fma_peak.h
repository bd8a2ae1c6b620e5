#pragma once
// The machine's fp32 FMA peak, measured: the figure train_bench divides a
// step's achieved FLOP/s by (issue 14's "achieved ÷ peak").

#include <string>

namespace vt::worker::bench {

struct FmaPeak {
  double flops_per_second = 0;  // 2 FLOPs per lane per FMA, all threads together
  std::string isa;              // "avx512f" (16 lanes), "avx2+fma" (8) or "scalar"
};

// Runs independent FMA chains (enough to cover the FMA latency on two ports)
// on `threads` threads at once, best of `repeats` rounds of wall time.
FmaPeak MeasureFmaPeak(int threads, int repeats = 5);

}  // namespace vt::worker::bench
