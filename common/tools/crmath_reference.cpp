#include "common/tools/crmath_reference.h"

#include <mpfr.h>


#include "common/crmath.h"
#include "common/detmath.h"

namespace vt::crmath::reference {
namespace {

float DetExp(float x) { return detmath::Exp(x); }
float DetLog(float x) { return detmath::Log(x); }
float DetSin(float x) { return detmath::Sin(x); }
float DetCos(float x) { return detmath::Cos(x); }
float DetTanh(float x) { return detmath::Tanh(x); }
float DetErf(float x) { return detmath::Erf(x); }
float DetRsqrt(float x) { return detmath::Rsqrt(x); }

int MpfrRecSqrt(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd) { return mpfr_rec_sqrt(y, x, rnd); }

using MpfrFn = int (*)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t);

MpfrFn MpfrOf(Fn fn) {
  switch (fn) {
    case Fn::kExp:
      return mpfr_exp;
    case Fn::kLog:
      return mpfr_log;
    case Fn::kSin:
      return mpfr_sin;
    case Fn::kCos:
      return mpfr_cos;
    case Fn::kTanh:
      return mpfr_tanh;
    case Fn::kErf:
      return mpfr_erf;
    case Fn::kRsqrt:
      return MpfrRecSqrt;
  }
  return mpfr_exp;
}

// Per-thread MPFR state: two binary32-sized variables and the binary32
// exponent range (MPFR's emin/emax are per thread).
struct State {
  mpfr_t in;
  mpfr_t out;
  State() {
    mpfr_set_emin(-148);  // 2^-149 = 0.1b * 2^-148, the least subnormal
    mpfr_set_emax(128);
    mpfr_init2(in, 24);
    mpfr_init2(out, 24);
  }
  ~State() {
    mpfr_clear(in);
    mpfr_clear(out);
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
};

}  // namespace

const std::array<FnInfo, 7>& AllFunctions() {
  static const std::array<FnInfo, 7> table = {{
      {Fn::kExp, "exp", crmath::Exp, DetExp},
      {Fn::kLog, "log", crmath::Log, DetLog},
      {Fn::kSin, "sin", crmath::Sin, DetSin},
      {Fn::kCos, "cos", crmath::Cos, DetCos},
      {Fn::kTanh, "tanh", crmath::Tanh, DetTanh},
      {Fn::kErf, "erf", crmath::Erf, DetErf},
      {Fn::kRsqrt, "rsqrt", crmath::Rsqrt, DetRsqrt},
  }};
  return table;
}

std::optional<FnInfo> FindFunction(std::string_view name) {
  for (const FnInfo& info : AllFunctions())
    if (name == info.name) return info;
  return std::nullopt;
}

float Reference(Fn fn, float x) {
  thread_local State state;
  if (detmath::IsNaN(x)) return detmath::CanonicalNaN();
  // IEEE 754 rSqrt(-0) = -inf (crmath.h); MPFR's rec_sqrt returns +inf.
  if (fn == Fn::kRsqrt && detmath::FloatBits(x) == 0x80000000u) return -detmath::Infinity();
  mpfr_set_flt(state.in, x, MPFR_RNDN);  // exact: 24 bits
  int t = MpfrOf(fn)(state.out, state.in, MPFR_RNDN);
  t = mpfr_check_range(state.out, t, MPFR_RNDN);
  mpfr_subnormalize(state.out, t, MPFR_RNDN);
  if (mpfr_nan_p(state.out)) return detmath::CanonicalNaN();
  return mpfr_get_flt(state.out, MPFR_RNDN);
}

}  // namespace vt::crmath::reference
