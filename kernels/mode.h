#pragma once
// Determinism modes and the per-job execution configuration (docs/kernels.md,
// "Modes").

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace vt::kernels {

enum class Mode : std::uint8_t {
  kNative = 0,   // vendor BLAS fp32 + system libm: fast, not reproducible
  kRepops = 1,   // one fixed floating-point operation order: bitwise reproducible
  kRounded = 2,  // fp64 compute, round to b bits, log near-boundary directions
  // Every GEMM output and reduction is the correctly rounded exact value
  // (kernels/certified.h): any order, no logs. Protocol numbers are append-only.
  kCertified = 3,
};

std::string_view ModeName(Mode mode);
Result<Mode> ParseMode(std::string_view name);  // "native" | "repops" | "rounded" | "certified"

// Which vector instruction set repops kernels use. Results are identical for
// every choice (that is the point); kAuto picks the widest the CPU supports.
enum class Simd : std::uint8_t { kAuto = 0, kScalar = 1, kAvx2 = 2, kAvx512 = 3 };
std::string_view SimdName(Simd simd);
Result<Simd> ParseSimd(std::string_view name);  // "auto" | "scalar" | "avx2" | "avx512"
Simd DetectSimd();  // widest supported by this CPU
// Whether this CPU has FMA3 (every AVX2 CPU in use does; the AVX2 kernels
// that fuse check it all the same).
bool CpuHasFma();
// The path a request actually runs: kAuto → DetectSimd(); a request wider
// than the CPU supports falls back to the widest supported one.
Simd ResolveSimd(Simd requested);
bool SimdSupported(Simd simd);  // kAuto and anything up to DetectSimd()

// Which fp64 GEMM a recording rounded trainer runs (ExecConfig::
// f64_reference): the fastest one here (kVendor, kernels/matmul.h GemmF64:
// our AVX-512 or AVX2 fp64 GEMM, OpenBLAS dgemm, cuBLAS) or the canonical reference
// (kReference: GemmF64Reference, veritrain's own kernel, what every replay
// runs). Both record valid logs; kAuto takes the faster one for this CPU
// and BLAS (kernels/blas_core.h TrainerRecordsOnReference).
enum class F64Gemm : std::uint8_t { kAuto = 0, kVendor = 1, kReference = 2 };
std::string_view F64GemmName(F64Gemm gemm);
Result<F64Gemm> ParseF64Gemm(std::string_view name);  // "auto" | "vendor" | "reference"

// Where the GEMMs run (kernels/device.h). The device never changes a repops
// or certified result (GemmRepopsCuda computes the repops definition; a
// certified output is the correctly rounded value whoever computes the fp64
// fast path); in rounded mode a trainer's fp64 GEMM on a GPU is one more
// honest evaluation, covered by β and the logs, and every replay uses the
// canonical CPU reference. Not part of any hash.
enum class Device : std::uint8_t { kCpu = 0, kCuda = 1 };
std::string_view DeviceName(Device device);
Result<Device> ParseDevice(std::string_view name);  // "cpu" | "cuda"

// Rounded-mode parameters. τ is stored as an integer (no floats in consensus
// objects): tau_q16 / 65536 units of the b-bit ulp. τ = 0 is valid and means
// "round to nearest, log nothing" (rounded mode without logs). τ is capped at
// 1/4 ulp: beyond that a quarter or more of all values would be logged, and
// the cap keeps the replay check's 4τ window inside one grid interval.
inline constexpr int kMinRoundingBits = 23;
inline constexpr int kMaxRoundingBits = 32;
inline constexpr std::uint32_t kMaxTauQ16 = 1u << 14;
// The default τ: 2^-12 ulp. Divergence from vendor reductions (GEMMs) is
// covered per value by the operator's error bound β (kernels/rounding.h), so
// τ only has to cover element-wise fp64 differences (libm). Before β existed
// the default was 1/16 ulp (kLegacyTauQ16), which logged 12.5 % of values.
inline constexpr std::uint32_t kDefaultTauQ16 = 16;
inline constexpr std::uint32_t kLegacyTauQ16 = 1u << 12;

struct RoundingSpec {
  int bits = 32;                    // 23 ≤ bits ≤ 32
  std::uint32_t tau_q16 = kDefaultTauQ16;  // τ = 2^-12 ulp by default; see calibration

  double tau() const { return static_cast<double>(tau_q16) / 65536.0; }
  Status Validate() const;
};

// How a job executes its operators. Not part of any hash except through the
// job spec, which fixes mode and rounding (threads and simd never change
// results in repops/rounded mode).
struct ExecConfig {
  Mode mode = Mode::kRepops;
  int threads = 1;  // worker threads (parallel over independent outputs only)
  Simd simd = Simd::kAuto;
  RoundingSpec rounding;
  // Rounded mode: evaluate the canonical fp64 reference (GemmF64Reference,
  // no vendor BLAS; docs/kernels.md "The canonical reference") instead of
  // OpenBLAS dgemm. Every replay of a log does (OpContext sets it), so the
  // arbiter and every challenger judge log entries against the same bits; a
  // recording trainer may set it to record against the reference itself.
  bool f64_reference = false;
  // Certified mode: decide every GEMM output by the exact path
  // (ExactAccumulator), never calling a vendor BLAS. The results are the same
  // bits either way (both are the correctly rounded value); the referee's
  // arbitration sets it so that its computation is ours alone.
  bool certified_exact_only = false;
  // Where GemmRepops, GemmNative and GemmF64 run (GemmF64Reference and the
  // certified slow path always run on the CPU).
  Device device = Device::kCpu;
};

}  // namespace vt::kernels
