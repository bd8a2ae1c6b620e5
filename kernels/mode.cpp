#include "kernels/mode.h"

#include <cstddef>
#include <string>

namespace vt::kernels {

namespace {

// Each enum's names, one table for both directions.
template <class E>
struct Named {
  E value;
  std::string_view name;
};
constexpr Named<Mode> kModes[] = {
    {Mode::kNative, "native"}, {Mode::kRepops, "repops"}, {Mode::kRounded, "rounded"}, {Mode::kCertified, "certified"}};
constexpr Named<Simd> kSimds[] = {
    {Simd::kAuto, "auto"}, {Simd::kScalar, "scalar"}, {Simd::kAvx2, "avx2"}, {Simd::kAvx512, "avx512"}};
constexpr Named<Device> kDevices[] = {{Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}};
constexpr Named<F64Gemm> kF64Gemms[] = {
    {F64Gemm::kAuto, "auto"}, {F64Gemm::kVendor, "vendor"}, {F64Gemm::kReference, "reference"}};

template <class E, std::size_t N>
std::string_view NameOf(const Named<E> (&table)[N], E value) {
  for (const Named<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return "unknown";
}

// The value named `name`, or Invalid(reason, "<what> must be a, b or c").
template <class E, std::size_t N>
Result<E> Parse(const Named<E> (&table)[N], std::string_view name, const char* reason, const char* what) {
  std::string names;
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i].name == name) return table[i].value;
    names += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  }
  return Status::Invalid(reason, std::string(what) + " must be " + names);
}

}  // namespace

std::string_view ModeName(Mode mode) { return NameOf(kModes, mode); }
Result<Mode> ParseMode(std::string_view name) { return Parse(kModes, name, "unknown-mode", "mode"); }
std::string_view SimdName(Simd simd) { return NameOf(kSimds, simd); }
Result<Simd> ParseSimd(std::string_view name) { return Parse(kSimds, name, "unknown-simd", "simd"); }
std::string_view DeviceName(Device device) { return NameOf(kDevices, device); }
Result<Device> ParseDevice(std::string_view name) { return Parse(kDevices, name, "unknown-device", "device"); }
std::string_view F64GemmName(F64Gemm gemm) { return NameOf(kF64Gemms, gemm); }
Result<F64Gemm> ParseF64Gemm(std::string_view name) {
  return Parse(kF64Gemms, name, "unknown-fp64-gemm", "fp64 gemm");
}

Simd DetectSimd() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the wider register
  // state (XGETBV), so a CPU with AVX-512 under an OS without it reports no.
  static const Simd detected = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return Simd::kAvx512;
    if (__builtin_cpu_supports("avx2")) return Simd::kAvx2;
    return Simd::kScalar;
  }();
  return detected;
#else
  return Simd::kScalar;
#endif
}

bool CpuHasFma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool fma = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("fma") != 0;
  }();
  return fma;
#else
  return false;
#endif
}

Simd ResolveSimd(Simd requested) {
  const Simd best = DetectSimd();
  if (requested == Simd::kAuto) return best;
  return static_cast<std::uint8_t>(requested) <= static_cast<std::uint8_t>(best) ? requested : best;
}

bool SimdSupported(Simd simd) {
  return simd == Simd::kAuto ||
         static_cast<std::uint8_t>(simd) <= static_cast<std::uint8_t>(DetectSimd());
}

Status RoundingSpec::Validate() const {
  if (bits < kMinRoundingBits || bits > kMaxRoundingBits) {
    return Status::Invalid("rounding-bits-out-of-range", "rounding bits must be in [23, 32]");
  }
  if (tau_q16 > kMaxTauQ16) {
    return Status::Invalid("rounding-tau-out-of-range", "tau must be at most 1/4 ulp (tau_q16 <= 16384)");
  }
  return Status::Ok();
}

}  // namespace vt::kernels
