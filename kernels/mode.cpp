#include "kernels/mode.h"

namespace vt::kernels {

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNative: return "native";
    case Mode::kRepops: return "repops";
    case Mode::kRounded: return "rounded";
    case Mode::kCertified: return "certified";
  }
  return "unknown";
}

Result<Mode> ParseMode(std::string_view name) {
  if (name == "native") return Mode::kNative;
  if (name == "repops") return Mode::kRepops;
  if (name == "rounded") return Mode::kRounded;
  if (name == "certified") return Mode::kCertified;
  return Status::Invalid("unknown-mode", "mode must be native, repops, rounded or certified");
}

std::string_view SimdName(Simd simd) {
  switch (simd) {
    case Simd::kAuto: return "auto";
    case Simd::kScalar: return "scalar";
    case Simd::kAvx2: return "avx2";
    case Simd::kAvx512: return "avx512";
  }
  return "unknown";
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

Simd ResolveSimd(Simd requested) {
  const Simd best = DetectSimd();
  if (requested == Simd::kAuto) return best;
  return static_cast<std::uint8_t>(requested) <= static_cast<std::uint8_t>(best) ? requested : best;
}

bool SimdSupported(Simd simd) {
  return simd == Simd::kAuto ||
         static_cast<std::uint8_t>(simd) <= static_cast<std::uint8_t>(DetectSimd());
}

std::string_view DeviceName(Device device) {
  switch (device) {
    case Device::kCpu: return "cpu";
    case Device::kCuda: return "cuda";
  }
  return "unknown";
}

Result<Device> ParseDevice(std::string_view name) {
  if (name == "cpu") return Device::kCpu;
  if (name == "cuda") return Device::kCuda;
  return Status::Invalid("unknown-device", "device must be cpu or cuda");
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
