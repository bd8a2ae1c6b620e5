#pragma once
// The independent reference of certified mode's tests: exact sums of fp32
// values and fp32·fp32 products in MPFR, rounded to fp32 by MPFR's own
// binary32 emulation (precision 24, binary32 exponent range,
// mpfr_subnormalize). Shares no code with kernels/certified.*.

#include <mpfr.h>

#include <bit>
#include <cstdint>
#include <vector>

namespace vt::kernels::certref {

// Σ of fp32 products is exact at 1200 bits (the terms span 2^-298 … 2^287).
constexpr mpfr_prec_t kExactPrec = 1200;

class Big {
 public:
  Big() { mpfr_init2(m_v, kExactPrec), mpfr_set_zero(m_v, 1); }
  ~Big() { mpfr_clear(m_v); }
  Big(const Big&) = delete;
  Big& operator=(const Big&) = delete;
  mpfr_t& v() { return m_v; }
  void AddProduct(float a, float b) {
    mpfr_t p;
    mpfr_init2(p, 64);
    mpfr_set_flt(p, a, MPFR_RNDN);
    mpfr_mul_d(p, p, static_cast<double>(b), MPFR_RNDN);  // 48 bits: exact at 64
    mpfr_add(m_v, m_v, p, MPFR_RNDN);                       // exact at 1200 bits
    mpfr_clear(p);
  }
  void Add(float x) { mpfr_add_d(m_v, m_v, static_cast<double>(x), MPFR_RNDN); }

 private:
  mpfr_t m_v;
};

// Round an (exact or 1200-bit) MPFR value to fp32, nearest-even, with IEEE
// subnormals and overflow: MPFR's documented emulation (precision 24,
// exponent range of binary32, mpfr_subnormalize).
inline float ToFloat(mpfr_t x) {
  if (mpfr_nan_p(x)) return std::bit_cast<float>(std::uint32_t{0x7fc00000u});
  if (mpfr_zero_p(x)) return 0.0f;  // an exact zero is +0 (the definition)
  const mpfr_exp_t old_min = mpfr_get_emin(), old_max = mpfr_get_emax();
  mpfr_t r;
  mpfr_init2(r, 24);
  mpfr_set_emin(-148);
  mpfr_set_emax(128);
  int t = mpfr_set(r, x, MPFR_RNDN);
  t = mpfr_check_range(r, t, MPFR_RNDN);
  mpfr_subnormalize(r, t, MPFR_RNDN);
  const double d = mpfr_get_d(r, MPFR_RNDN);  // exact: 24 bits, binary32 range
  mpfr_set_emin(old_min);
  mpfr_set_emax(old_max);
  mpfr_clear(r);
  return static_cast<float>(d);
}

inline float RefDot(const std::vector<float>& a, const std::vector<float>& b, float c0 = 0.0f) {
  Big s;
  s.Add(c0);
  for (std::size_t i = 0; i < a.size(); ++i) s.AddProduct(a[i], b[i]);
  return ToFloat(s.v());
}

}  // namespace vt::kernels::certref
