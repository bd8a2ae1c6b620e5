#pragma once
// MPFR as the reference of common/crmath.h, shared by vt-crmath-check and the
// unit test: the correctly rounded binary32 value of each function, with the
// special-value conventions of common/crmath.h. Never linked into a library.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vt::crmath::reference {

enum class Fn { kExp, kLog, kSin, kCos, kTanh, kErf, kRsqrt };

struct FnInfo {
  Fn fn;
  const char* name;
  float (*crmath)(float);   // the function under test
  float (*detmath)(float);  // the repops function of the same name (for timing)
};

const std::array<FnInfo, 7>& AllFunctions();
std::optional<FnInfo> FindFunction(std::string_view name);

// fn(x) rounded to nearest-even binary32 by MPFR (precision 24, exponent
// range of binary32, mpfr_subnormalize), NaN as 0x7fc00000. Thread-safe.
float Reference(Fn fn, float x);

}  // namespace vt::crmath::reference
