#include "kernels/certified.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>

#include "kernels/certified_dot.h"
#include "kernels/device.h"
#include "kernels/parallel.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {

// ---- statistics ----------------------------------------------------------------------

namespace {

// Each thread counts into its own counters (one certified reduction counts
// one output: a shared atomic would be a contended write per output); a
// reader sums every live thread's and those of threads that have exited.
struct ThreadCounts;
struct CountRegistry {
  std::mutex mu;
  std::vector<const ThreadCounts*> live;
  std::uint64_t retired_outputs[kCertKinds] = {};
  std::uint64_t retired_slow[kCertKinds] = {};
  std::uint64_t retired_exact[kCertKinds] = {};
};
CountRegistry& Registry() {
  static CountRegistry* registry = new CountRegistry;  // outlives every thread's counters
  return *registry;
}

struct ThreadCounts {
  // Written by the owning thread only (a relaxed load and store, no
  // read-modify-write); read by any thread.
  std::atomic<std::uint64_t> outputs[kCertKinds] = {};
  std::atomic<std::uint64_t> slow[kCertKinds] = {};
  std::atomic<std::uint64_t> exact[kCertKinds] = {};

  ThreadCounts() {
    CountRegistry& r = Registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.live.push_back(this);
  }
  ~ThreadCounts() {
    CountRegistry& r = Registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (int k = 0; k < kCertKinds; ++k) {
      r.retired_outputs[k] += outputs[k].load(std::memory_order_relaxed);
      r.retired_slow[k] += slow[k].load(std::memory_order_relaxed);
      r.retired_exact[k] += exact[k].load(std::memory_order_relaxed);
    }
    r.live.erase(std::find(r.live.begin(), r.live.end(), this));
  }
};

ThreadCounts& MyCounts() {
  thread_local ThreadCounts counts;
  return counts;
}

float CanonicalNaN() { return std::bit_cast<float>(std::uint32_t{0x7fc00000u}); }

}  // namespace

std::string_view CertKindName(CertKind kind) {
  switch (kind) {
    case CertKind::kGemm: return "gemm";
    case CertKind::kSum: return "sum";
    case CertKind::kMean: return "mean";
    case CertKind::kDot: return "dot";
    case CertKind::kNorm: return "norm";
  }
  return "unknown";
}

CertCounts CertifiedCounts() {
  CountRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  CertCounts c;
  for (int k = 0; k < kCertKinds; ++k) {
    c.outputs[k] = r.retired_outputs[k];
    c.slow[k] = r.retired_slow[k];
    c.exact[k] = r.retired_exact[k];
    for (const ThreadCounts* t : r.live) {
      c.outputs[k] += t->outputs[k].load(std::memory_order_relaxed);
      c.slow[k] += t->slow[k].load(std::memory_order_relaxed);
      c.exact[k] += t->exact[k].load(std::memory_order_relaxed);
    }
  }
  return c;
}

void CountCertified(CertKind kind, std::uint64_t outputs, std::uint64_t slow, std::int64_t exact) {
  const int k = static_cast<int>(kind);
  ThreadCounts& mine = MyCounts();
  const auto add = [](std::atomic<std::uint64_t>& counter, std::uint64_t n) {
    if (n != 0) counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  };
  add(mine.outputs[k], outputs);
  add(mine.slow[k], slow);
  add(mine.exact[k], exact < 0 ? slow : static_cast<std::uint64_t>(exact));
}

// ---- the certificate ---------------------------------------------------------------------

double CertSumBound(std::int64_t terms, double abs_sum) {
  // GemmSlackFactor = 2γ(1 + 2^-16) bounds two parties; one evaluation's
  // distance from the exact value needs half of it (an exact division).
  return 0.5 * GemmSlackFactor(terms) * abs_sum;
}

// ---- the exact accumulator ------------------------------------------------------------

namespace {

// x = mantissa · 2^exponent (mantissa < 2^24), or a special.
struct Decoded {
  std::uint64_t mantissa = 0;
  int exponent = 0;
  bool negative = false;
  bool inf = false, nan = false;
};

Decoded Decode(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  Decoded d;
  d.negative = (bits >> 31) != 0;
  const std::uint32_t e = (bits >> 23) & 0xffu;
  const std::uint32_t f = bits & 0x7fffffu;
  if (e == 0xffu) {
    d.nan = f != 0;
    d.inf = f == 0;
    return d;
  }
  d.mantissa = e == 0 ? f : (f | 0x800000u);
  d.exponent = e == 0 ? -149 : static_cast<int>(e) - 150;
  return d;
}

// An unsigned magnitude in 32-bit digits, least significant first (fixed
// capacity: the slow path allocates nothing, it runs inside pool workers).
struct Digits {
  std::uint32_t d[ExactAccumulator::kDigits] = {};
  int count = 0;
  std::size_t size() const { return static_cast<std::size_t>(count); }
  std::uint32_t& operator[](std::size_t k) { return d[k]; }
  const std::uint32_t& operator[](std::size_t k) const { return d[k]; }
};

int TopBit(const Digits& u) {
  for (int k = static_cast<int>(u.size()) - 1; k >= 0; --k) {
    if (u[static_cast<std::size_t>(k)] != 0) return k * 32 + (31 - std::countl_zero(u[static_cast<std::size_t>(k)]));
  }
  return -1;
}

bool BitAt(const Digits& u, int i) {
  if (i < 0) return false;
  const std::size_t k = static_cast<std::size_t>(i / 32);
  return k < u.size() && ((u[k] >> (i % 32)) & 1u) != 0;
}

bool AnyBelow(const Digits& u, int i) {  // any set bit at index < i
  for (int k = 0; k * 32 < i && k < static_cast<int>(u.size()); ++k) {
    std::uint32_t w = u[static_cast<std::size_t>(k)];
    const int top = i - k * 32;  // bits [0, top) of this digit count
    if (top < 32) w &= (std::uint32_t{1} << top) - 1u;
    if (w != 0) return true;
  }
  return false;
}

// Round (magnitude · 2^lsb_exponent, plus something in (0, 2^lsb_exponent) if
// `sticky`) to fp32, nearest-even, IEEE overflow and subnormals; sign applied
// last (an exact zero is +0).
float RoundMagnitude(const Digits& u, int lsb_exponent, bool sticky, bool negative) {
  const int top = TopBit(u);
  if (top < 0) {
    if (!sticky) return 0.0f;
    return negative ? -0.0f : 0.0f;  // a nonzero value below every subnormal's half
  }
  const int q_min = -149 - lsb_exponent;  // bit index of 2^-149, the subnormal lsb
  const int q = std::max(top - 23, q_min);
  std::uint64_t mant = 0;
  bool round_bit = false, rest = sticky;
  if (q <= 0) {
    for (int i = top; i >= 0; --i) mant = (mant << 1) | (BitAt(u, i) ? 1u : 0u);
    mant <<= -q;
  } else {
    for (int i = top; i >= q; --i) mant = (mant << 1) | (BitAt(u, i) ? 1u : 0u);
    round_bit = BitAt(u, q - 1);
    rest = rest || AnyBelow(u, q - 1);
  }
  if (round_bit && (rest || (mant & 1u) != 0)) ++mant;
  // mant ≤ 2^24; the product is exact in double (exponent within ±600) and
  // either an fp32 value or ≥ 2^128, which the conversion turns into inf.
  const double v = std::ldexp(static_cast<double>(mant), q + lsb_exponent);
  const float f = static_cast<float>(v);
  return negative ? -f : f;
}

}  // namespace

void ExactAccumulator::AddScaled(std::uint64_t mantissa, int exponent, bool negative) {
  if (mantissa == 0) return;
  const int shift = exponent - kLsbExponent;  // ≥ 0 for every fp32 value or product
  const int k = shift / 32, r = shift % 32;
  const std::uint64_t shifted = mantissa << r;  // low 64 bits of mantissa·2^r
  const std::int64_t c0 = static_cast<std::int64_t>(shifted & 0xffffffffu);
  const std::int64_t c1 = static_cast<std::int64_t>(shifted >> 32);
  const std::int64_t c2 = r == 0 ? 0 : static_cast<std::int64_t>(mantissa >> (64 - r));
  if (negative) {
    m_digit[k] -= c0;
    m_digit[k + 1] -= c1;
    m_digit[k + 2] -= c2;
  } else {
    m_digit[k] += c0;
    m_digit[k + 1] += c1;
    m_digit[k + 2] += c2;
  }
  // Each digit moves by < 2^32 per addition: 2^30 additions stay far inside int64.
  if (++m_adds == (std::uint32_t{1} << 30)) Normalize();
}

void ExactAccumulator::Normalize() {
  for (int k = 0; k + 1 < kDigits; ++k) {
    const std::int64_t carry = m_digit[k] >> 32;  // floor division (C++20: arithmetic shift)
    m_digit[k] -= carry * (std::int64_t{1} << 32);
    m_digit[k + 1] += carry;
  }
  m_adds = 0;
}

void ExactAccumulator::AddInteger(std::int64_t value, int exponent) {
  // |value| as an unsigned number (well defined for INT64_MIN too).
  const std::uint64_t magnitude = value < 0 ? 0u - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  AddScaled(magnitude, exponent, value < 0);
}

namespace {

// digit += Σ bucket[b] · 2^(exponent0 + b·step) over b in [lo, hi] (relative
// to 2^kLsbExponent), without branches: |bucket[b]| into three 32-bit digits,
// the sign reapplied. Each digit moves by < 2^32 per bucket.
void AddBucketsTo(std::int64_t* digit, const std::int64_t* bucket, int lo, int hi, int exponent0, int step) {
  for (int b = lo; b <= hi; ++b) {
    const std::int64_t v = bucket[b];
    const std::uint64_t neg = static_cast<std::uint64_t>(v >> 63);  // all ones if negative
    const std::uint64_t mag = (static_cast<std::uint64_t>(v) ^ neg) - neg;
    const int shift = exponent0 + b * step - ExactAccumulator::kLsbExponent;
    const int k = shift >> 5, r = shift & 31;
    const std::uint64_t shifted = mag << r;
    const std::uint64_t d0 = shifted & 0xffffffffu, d1 = shifted >> 32, d2 = (mag >> 1) >> (63 - r);
    const std::int64_t sign = static_cast<std::int64_t>(neg) | 1;  // −1 or +1
    digit[k] += sign * static_cast<std::int64_t>(d0);
    digit[k + 1] += sign * static_cast<std::int64_t>(d1);
    digit[k + 2] += sign * static_cast<std::int64_t>(d2);
  }
}

}  // namespace

void ExactAccumulator::AddBuckets(std::int64_t* bucket, int lo, int hi, int exponent0, int exponent_step) {
  if (lo > hi) return;
  if (m_adds >= (std::uint32_t{1} << 29)) Normalize();  // room for the ≤ 2^29 additions below
  AddBucketsTo(m_digit, bucket, lo, hi, exponent0, exponent_step);
  for (int b = lo; b <= hi; ++b) bucket[b] = 0;
  m_adds += static_cast<std::uint32_t>(hi - lo + 1);
}

void ExactAccumulator::AddTerm(std::int64_t m, int s) {
  const int b = s >> kBucketShift;
  m_bucket[b] += m * (std::int64_t{1} << (s & ((1 << kBucketShift) - 1)));
  m_bucket_lo = std::min(m_bucket_lo, b);
  m_bucket_hi = std::max(m_bucket_hi, b);
  if (++m_bucket_terms == kBucketFoldEvery) {
    AddBuckets(m_bucket, m_bucket_lo, m_bucket_hi, kLsbExponent, 1 << kBucketShift);
    m_bucket_terms = 0;
    m_bucket_lo = kBuckets;
    m_bucket_hi = -1;
  }
}

void ExactAccumulator::FoldedDigits(std::int64_t* digit) const {
  std::copy(m_digit, m_digit + kDigits, digit);
  // ≤ kBuckets more additions of < 2^32 per digit: m_adds < 2^30 keeps them in int64.
  AddBucketsTo(digit, m_bucket, m_bucket_lo, m_bucket_hi, kLsbExponent, 1 << kBucketShift);
}

namespace {

// A finite fp32 as m·2^(e − 149): signed m (|m| < 2^24) and e ∈ [0, 253]; false for NaN/inf.
inline bool DecodeTerm(float x, std::int64_t* m, int* e) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t biased = (bits >> 23) & 0xffu;
  if (biased == 0xffu) return false;
  const std::int64_t mag = static_cast<std::int64_t>((bits & 0x7fffffu) | (biased == 0 ? 0u : 0x800000u));
  *m = (bits >> 31) != 0 ? -mag : mag;
  *e = biased == 0 ? 0 : static_cast<int>(biased) - 1;
  return true;
}

}  // namespace

void ExactAccumulator::Add(float x) {
  std::int64_t m = 0;
  int e = 0;
  if (DecodeTerm(x, &m, &e)) {
    AddTerm(m, e + 149);
    return;
  }
  const Decoded d = Decode(x);
  if (d.nan) {
    m_nan = true;
  } else {
    (d.negative ? m_neg_inf : m_pos_inf) = true;
  }
}

void ExactAccumulator::Add(const ExactAccumulator& other) {
  std::int64_t d[kDigits];
  other.FoldedDigits(d);
  // Both sides' digits below the top in [0, 2^32) (the top one signed), so
  // each digit of the sum moves by < 2^33 before the carry.
  Normalize();
  for (int k = 0; k + 1 < kDigits; ++k) {
    const std::int64_t carry = d[k] >> 32;
    d[k] -= carry * (std::int64_t{1} << 32);
    d[k + 1] += carry;
  }
  for (int k = 0; k < kDigits; ++k) m_digit[k] += d[k];
  Normalize();
  m_nan = m_nan || other.m_nan;
  m_pos_inf = m_pos_inf || other.m_pos_inf;
  m_neg_inf = m_neg_inf || other.m_neg_inf;
}

void ExactAccumulator::AddProduct(float a, float b) {
  std::int64_t ma = 0, mb = 0;
  int ea = 0, eb = 0;
  if (DecodeTerm(a, &ma, &ea) && DecodeTerm(b, &mb, &eb)) {
    AddTerm(ma * mb, ea + eb);
    return;
  }
  const Decoded x = Decode(a), y = Decode(b);
  if (x.nan || y.nan) {
    m_nan = true;
    return;
  }
  // At least one infinity.
  const bool zero = (!x.inf && x.mantissa == 0) || (!y.inf && y.mantissa == 0);
  if (zero) {
    m_nan = true;  // 0·inf
  } else {
    ((x.negative != y.negative) ? m_neg_inf : m_pos_inf) = true;
  }
}

bool ExactAccumulator::Special(float* out) const {
  if (m_nan || (m_pos_inf && m_neg_inf)) {
    *out = CanonicalNaN();
    return true;
  }
  if (m_pos_inf || m_neg_inf) {
    *out = m_pos_inf ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    return true;
  }
  return false;
}

namespace {

// The accumulator's value as sign and magnitude digits (value · 2^-298).
Digits Magnitude(const std::int64_t* digit, int count, bool* negative) {
  std::int64_t d[ExactAccumulator::kDigits];
  std::copy(digit, digit + count, d);
  auto normalize = [&] {
    for (int k = 0; k + 1 < count; ++k) {
      const std::int64_t carry = d[static_cast<std::size_t>(k)] >> 32;
      d[static_cast<std::size_t>(k)] -= carry * (std::int64_t{1} << 32);
      d[static_cast<std::size_t>(k + 1)] += carry;
    }
  };
  normalize();
  *negative = d[count - 1] < 0;
  if (*negative) {
    for (int k = 0; k < count; ++k) d[k] = -d[k];
    normalize();
  }
  Digits u;
  u.count = count;
  for (int k = 0; k < count; ++k) u[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(d[static_cast<std::size_t>(k)]);
  return u;
}

}  // namespace

static_assert(ExactAccumulator::kEncodedBytes == 1 + 4 * ExactAccumulator::kDigits);

ExactAccumulator::Encoded ExactAccumulator::Encode() const {
  std::int64_t d[kDigits];
  FoldedDigits(d);
  for (int k = 0; k + 1 < kDigits; ++k) {  // digits below the top into [0, 2^32)
    const std::int64_t carry = d[k] >> 32;
    d[k] -= carry * (std::int64_t{1} << 32);
    d[k + 1] += carry;
  }
  Encoded out{};
  out[0] = static_cast<std::uint8_t>((m_nan ? 1 : 0) | (m_pos_inf ? 2 : 0) | (m_neg_inf ? 4 : 0));
  for (int k = 0; k < kDigits; ++k) {
    // The top digit is the sign-carrying one: its low 32 bits (the value
    // fits 640 bits: |Σ| < 2^31 · 2^256 · 2^298).
    const auto digit = static_cast<std::uint32_t>(static_cast<std::uint64_t>(d[k]));
    for (int j = 0; j < 4; ++j)
      out[1 + 4 * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)] =
          static_cast<std::uint8_t>(digit >> (8 * j));
  }
  return out;
}

std::optional<ExactAccumulator> ExactAccumulator::FromEncoding(const Encoded& bytes) {
  if (bytes[0] >= 8) return std::nullopt;
  ExactAccumulator acc;
  acc.m_nan = (bytes[0] & 1) != 0;
  acc.m_pos_inf = (bytes[0] & 2) != 0;
  acc.m_neg_inf = (bytes[0] & 4) != 0;
  for (int k = 0; k < kDigits; ++k) {
    std::uint32_t digit = 0;
    for (int j = 0; j < 4; ++j)
      digit |= std::uint32_t{bytes[1 + 4 * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)]}
               << (8 * j);
    acc.m_digit[k] = k + 1 < kDigits ? std::int64_t{digit} : std::int64_t{static_cast<std::int32_t>(digit)};
  }
  return acc;
}

float ExactAccumulator::Round() const {
  float special = 0.0f;
  if (Special(&special)) return special;
  bool negative = false;
  std::int64_t digit[kDigits];
  FoldedDigits(digit);
  const Digits u = Magnitude(digit, kDigits, &negative);
  return RoundMagnitude(u, kLsbExponent, false, negative);
}

float ExactAccumulator::RoundDivided(std::uint64_t divisor) const {
  float special = 0.0f;
  if (Special(&special)) return special;
  bool negative = false;
  std::int64_t digit[kDigits];
  FoldedDigits(digit);
  Digits u = Magnitude(digit, kDigits, &negative);
  // Long division by a divisor < 2^32 (callers: element counts ≤ 2^31).
  std::uint64_t rem = 0;
  for (int k = kDigits - 1; k >= 0; --k) {
    const std::uint64_t cur = (rem << 32) | u[static_cast<std::size_t>(k)];
    u[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(cur / divisor);
    rem = cur % divisor;
  }
  // The quotient keeps ≥ 149 bits below the subnormal lsb, so the remainder
  // only matters as a sticky bit.
  return RoundMagnitude(u, kLsbExponent, rem != 0, negative);
}

namespace {

// (hi, lo) = y·y for y < 2^61.
void Square(std::uint64_t y, std::uint64_t* hi, std::uint64_t* lo) {
  const std::uint64_t yh = y >> 32, yl = y & 0xffffffffu;
  const std::uint64_t ll = yl * yl, lh = yl * yh, hh = yh * yh;
  const std::uint64_t mid = lh << 1;  // < 2^62: no overflow
  std::uint64_t low = ll + (mid << 32);
  const std::uint64_t carry = low < ll ? 1u : 0u;
  *lo = low;
  *hi = hh + (mid >> 32) + carry;
}

int CompareSquare(std::uint64_t y, std::uint64_t hi, std::uint64_t lo) {  // sign(y² − (hi, lo))
  std::uint64_t sh = 0, sl = 0;
  Square(y, &sh, &sl);
  if (sh != hi) return sh < hi ? -1 : 1;
  if (sl != lo) return sl < lo ? -1 : 1;
  return 0;
}

}  // namespace

float ExactAccumulator::RoundSqrt() const {
  float special = 0.0f;
  if (Special(&special)) return special == -std::numeric_limits<float>::infinity() ? CanonicalNaN() : special;
  bool negative = false;
  std::int64_t digit[kDigits];
  FoldedDigits(digit);
  const Digits u = Magnitude(digit, kDigits, &negative);
  const int top = TopBit(u);
  if (top < 0) return 0.0f;
  if (negative) return CanonicalNaN();
  // value = N·2^-298. Take M = N / 2^sh (sh even, so the exponent halves
  // exactly) with 119–121 bits: y = floor(sqrt(M)) = floor(sqrt(N / 2^sh))
  // has ~60 bits, far more than the 25 rounding needs; sqrt is exact iff
  // y² = M and no bit was dropped.
  int sh = top + 1 - 120;
  if ((sh % 2) != 0) sh -= 1;
  std::uint64_t m_hi = 0, m_lo = 0;
  bool dropped = false;
  for (int i = 0; i < 128; ++i) {
    const bool bit = BitAt(u, i + sh);
    if (!bit) continue;
    if (i < 64) {
      m_lo |= std::uint64_t{1} << i;
    } else {
      m_hi |= std::uint64_t{1} << (i - 64);
    }
  }
  if (sh > 0) dropped = AnyBelow(u, sh);
  const double approx = std::sqrt(std::ldexp(static_cast<double>(m_hi), 64) + static_cast<double>(m_lo));
  std::uint64_t y = static_cast<std::uint64_t>(approx);
  while (y > 0 && CompareSquare(y, m_hi, m_lo) > 0) --y;
  while (CompareSquare(y + 1, m_hi, m_lo) <= 0) ++y;
  const bool inexact = dropped || CompareSquare(y, m_hi, m_lo) != 0;
  Digits yd;
  yd.count = 2;
  yd[0] = static_cast<std::uint32_t>(y);
  yd[1] = static_cast<std::uint32_t>(y >> 32);
  return RoundMagnitude(yd, (sh + kLsbExponent) / 2, inexact, false);
}

// ---- reductions' finish -------------------------------------------------------------------

namespace certdetail {

bool CertifyFinished(double sum, double bound, bool exact, CertFinish finish, std::int64_t n, float* out) {
  if (finish == CertFinish::kNone) return CertifySum(sum, bound, exact, out);
  if (exact && sum == 0.0) {
    *out = 0.0f;  // exact zero; sqrt(0) = 0/n = +0
    return true;
  }
  if (bound == 0.0 && !exact) {
    if (sum != 0.0) return false;
    *out = 0.0f;
    return true;
  }
  if (exact && finish == CertFinish::kDivide) {
    // An exact quotient (q·n = sum exactly, e.g. n a power of two: the
    // residual is a multiple of 2^-403, so fma cannot round it to zero) is
    // the mean itself, and its IEEE conversion its correct rounding — ties
    // to even too, which no interval decides (they were 0.7 % of the
    // presets' means).
    const double d = static_cast<double>(n);
    const double q = sum / d;
    if (std::fma(q, d, -sum) == 0.0) {
      *out = static_cast<float>(q);
      return true;
    }
  }
  const double lo = exact ? sum : NextDown(sum - bound);
  const double hi = exact ? sum : NextUp(sum + bound);
  if (!(lo <= hi)) return false;
  if (finish == CertFinish::kDivide) {
    const double d = static_cast<double>(n);  // exact (n < 2^53); division is monotone
    return CertifyInterval(NextDown(lo / d), NextUp(hi / d), out);
  }
  // kSqrt: sqrt is monotone; an interval reaching below zero is left to the
  // exact path.
  if (!(lo > 0.0)) return false;
  return CertifyInterval(NextDown(std::sqrt(lo)), NextUp(std::sqrt(hi)), out);
}

float FinishExact(const ExactAccumulator& acc, CertFinish finish, std::int64_t n) {
  switch (finish) {
    case CertFinish::kNone: return acc.Round();
    case CertFinish::kDivide: return acc.RoundDivided(static_cast<std::uint64_t>(n));
    case CertFinish::kSqrt: return acc.RoundSqrt();
  }
  return acc.Round();
}

}  // namespace certdetail

// ---- GEMM ----------------------------------------------------------------------------------

namespace {

// Element (r, c) of op(X) for a stored row-major X.
inline float OpAt(const float* x, GemmStrides s, std::int64_t r, std::int64_t c) {
  return x[r * s.row + c * s.col];
}

// out[l] = min(itself, LowBitExponent of every nonzero element of line l)
// for each listed line l: a stored row (per_row) or a stored column of the
// rows×cols matrix x. Branch-free (after a ReLU half the elements are zeros,
// in no pattern a branch predictor learns): a zero contributes INT_MAX.
void MinLowBits(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, bool per_row,
                std::span<const std::int64_t> lines, int* out) {
  const auto low_bit_or_max = [](float v) {
    const int lsb = LowBitExponent(v);  // defined (unused) for ±0 too: computed, then selected away
    // ±0 tested on the bits: a float compare compiles to a branch here.
    return (std::bit_cast<std::uint32_t>(v) & 0x7fffffffu) == 0 ? std::numeric_limits<int>::max() : lsb;
  };
  if (per_row) {
    for (std::int64_t r : lines) {
      const float* row = x + r * ld;
      int lsb = out[r];
      for (std::int64_t q = 0; q < cols; ++q) lsb = std::min(lsb, low_bit_or_max(row[q]));
      out[r] = lsb;
    }
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * ld;
    for (std::int64_t q : lines) out[q] = std::min(out[q], low_bit_or_max(row[q]));
  }
}

// The bound on one output: half·(‖row‖·‖col‖ + |c0|) (CertifyGemmOutput's
// bound, without the exactness test).
inline double GemmOutputBound(double half, double row_norm, double col_norm, float c0) {
  return half * (row_norm * col_norm + std::fabs(static_cast<double>(c0)));
}

// CertifyApproxFast (kernels/certify_hd.h) over one row: out[j] receives
// the decided value and keeps c0 (accumulate) or anything where undecided.
// Returns how many it left undecided — without marking which (no per-output
// flag stores in the common case): CertifyRowByBound finds them again where
// any are left. (Unswitched on accumulate so that the loop vectorises.)
template <bool kAccumulate>
[[gnu::always_inline]] inline std::int64_t CertifyRowFastBody(const double* __restrict c64, double row_norm,
                                                              const double* __restrict col_norm, double half,
                                                              std::int64_t n, float* __restrict out) {
  std::int64_t left = 0;  // (an integer sum: a floating one would not vectorise)
  for (std::int64_t j = 0; j < n; ++j) {
    const float c0 = kAccumulate ? out[j] : 0.0f;
    out[j] = CertifyApproxFast(c64[j], GemmOutputBound(half, row_norm, col_norm[j], c0), c0, left);
  }
  return left;
}

VT_SIMD_CLONES std::int64_t CertifyRowFast(const double* c64, double row_norm, const double* col_norm,
                                           double half, std::int64_t n, bool accumulate, float* out) {
  return accumulate ? CertifyRowFastBody<true>(c64, row_norm, col_norm, half, n, out)
                    : CertifyRowFastBody<false>(c64, row_norm, col_norm, half, n, out);
}

// The bound alone on one row of GEMM outputs: out[j] holds c0 (accumulate)
// or anything, and receives the value CertifyApprox decides with the bound
// half·(row_norm·col_norm[j] + |c0|). Returns whether any output of the row
// is left open; then open[j] flags each of them (and is 0 elsewhere in the
// row) for the exactness test and the exact path. The vectorised
// CertifyApproxFast pass runs first, and only a row it leaves open is walked
// again with CertifyApprox (which decides a superset, with the same values),
// from the row's c0 as it was (`c0_copy`, n floats of scratch, when
// accumulating).
bool CertifyRowByBound(const double* c64, double row_norm, const double* col_norm, double half,
                       std::int64_t n, bool accumulate, float* out, std::uint8_t* open, float* c0_copy) {
  if (accumulate) std::copy(out, out + n, c0_copy);
  if (CertifyRowFast(c64, row_norm, col_norm, half, n, accumulate, out) == 0) return false;
  bool any = false;
  for (std::int64_t j = 0; j < n; ++j) {
    const float c0 = accumulate ? c0_copy[j] : 0.0f;
    float value = 0.0f;
    const bool decided = CertifyApprox(c64[j], GemmOutputBound(half, row_norm, col_norm[j], c0), &value);
    out[j] = decided ? value : c0;
    open[j] = decided ? 0 : 1;
    any = any || !decided;
  }
  return any;
}

// The least work worth handing to a pool thread: values widened or decoded,
// outputs certified, products summed exactly (about 1 ns each; a pool round
// trip costs tens of microseconds on a VM, which made small GEMMs' certified
// overhead 5x larger on two threads than on one).
constexpr std::int64_t kMinValuesPerThread = std::int64_t{1} << 15;

// x (rows × cols, fp32, row stride ld) widened into dst (fp64, compact: row
// stride cols) unless kStore is false, each element's square added to sq of
// its stored row (row_lines) or of its stored column: one pass over the
// operand instead of a copy and a second pass over the copy for the norms.
// The order of each sum is fixed (a row: eight interleaved partial sums,
// combined as a tree; a column: in row order), so the clones give the same
// norms. (Any order would do for the bound: a sum of k non-negative terms in
// any order is within γ_k of its exact value, which CertSumBound's factor
// covers.)
template <bool kStore>
inline __attribute__((always_inline)) void RowsWithSquares(const float* x, std::int64_t r0, std::int64_t r1,
                                                           std::int64_t cols, std::int64_t ld,
                                                           double* __restrict dst, double* __restrict sq) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* src = x + r * ld;
    double* out = kStore ? dst + r * cols : nullptr;
    double s[8] = {};
    std::int64_t q = 0;
    for (; q + 8 <= cols; q += 8) {
      for (int u = 0; u < 8; ++u) {
        const double v = src[q + u];
        if constexpr (kStore) out[q + u] = v;
        s[u] = s[u] + v * v;
      }
    }
    for (; q < cols; ++q) {
      const double v = src[q];
      if constexpr (kStore) out[q] = v;
      s[0] = s[0] + v * v;
    }
    sq[r] = sq[r] + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
  }
}
template <bool kStore>
inline __attribute__((always_inline)) void ColumnsWithSquares(const float* x, std::int64_t rows,
                                                              std::int64_t j0, std::int64_t j1,
                                                              std::int64_t cols, std::int64_t ld,
                                                              double* __restrict dst, double* __restrict sq) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * ld;
    double* out = kStore ? dst + r * cols : nullptr;
    for (std::int64_t j = j0; j < j1; ++j) {
      const double v = src[j];
      if constexpr (kStore) out[j] = v;
      sq[j] = sq[j] + v * v;
    }
  }
}
// The clones, with and without the fp64 copy.
VT_SIMD_CLONES void WidenRowsWithSquares(const float* x, std::int64_t r0, std::int64_t r1, std::int64_t cols,
                                         std::int64_t ld, double* dst, double* sq) {
  RowsWithSquares<true>(x, r0, r1, cols, ld, dst, sq);
}
VT_SIMD_CLONES void RowSquares(const float* x, std::int64_t r0, std::int64_t r1, std::int64_t cols,
                               std::int64_t ld, double* sq) {
  RowsWithSquares<false>(x, r0, r1, cols, ld, nullptr, sq);
}
VT_SIMD_CLONES void WidenColumnsWithSquares(const float* x, std::int64_t rows, std::int64_t j0,
                                            std::int64_t j1, std::int64_t cols, std::int64_t ld, double* dst,
                                            double* sq) {
  ColumnsWithSquares<true>(x, rows, j0, j1, cols, ld, dst, sq);
}
VT_SIMD_CLONES void ColumnSquares(const float* x, std::int64_t rows, std::int64_t j0, std::int64_t j1,
                                  std::int64_t cols, std::int64_t ld, double* sq) {
  ColumnsWithSquares<false>(x, rows, j0, j1, cols, ld, nullptr, sq);
}

// dst null: the squares alone (the GEMM widens the operands itself).
void WidenWithSquares(int threads, const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                      bool row_lines, double* dst, double* sq) {
  threads = ThreadsForWork(threads, rows * cols, kMinValuesPerThread);
  if (row_lines) {
    ParallelFor(threads, rows, [&](std::int64_t r0, std::int64_t r1) {
      if (dst != nullptr) {
        WidenRowsWithSquares(x, r0, r1, cols, ld, dst, sq);
      } else {
        RowSquares(x, r0, r1, cols, ld, sq);
      }
    });
    return;
  }
  // Column blocks side by side: each column's sum stays on one thread.
  constexpr std::int64_t kBlock = 512;
  ParallelFor(threads, (cols + kBlock - 1) / kBlock, [&](std::int64_t b0, std::int64_t b1) {
    const std::int64_t j0 = b0 * kBlock, j1 = std::min(cols, b1 * kBlock);
    if (dst != nullptr) {
      WidenColumnsWithSquares(x, rows, j0, j1, cols, ld, dst, sq);
    } else {
      ColumnSquares(x, rows, j0, j1, cols, ld, sq);
    }
  });
}

// ---- the exact GEMM: exponent buckets ------------------------------------------
//
// ExactAccumulator's exponent buckets (certified.h) on operands decoded once
// per row of op(A) and column of op(B): per product one integer multiply,
// shift and add, the buckets folded into the output's accumulator every
// kFlushEvery products and at the end. NaN and ±inf lines take the
// accumulator's own special-value rules.

constexpr int kBucketShift = ExactAccumulator::kBucketShift;
constexpr int kBucketCount = ExactAccumulator::kBuckets;
constexpr std::int64_t kFlushEvery = ExactAccumulator::kBucketFoldEvery;
constexpr int kBucketLsbExponent = ExactAccumulator::kLsbExponent;  // exponent of bucket 0's unit

// The selected rows (or columns) of op(X), decoded: m and e per element, k
// per line, stored compactly (the slow path reads a few lines of a large
// operand), plus each selected line's smallest and largest e over its
// nonzero elements and whether it holds a NaN or an infinity. The element
// storage only grows and is never zero-filled (every element of a decoded
// line is written): a large GEMM's slow outputs select most of its lines,
// and fresh zeroed megabytes per call cost more in page faults and memset
// than the decoding itself.
struct DecodedLines {
  std::int64_t k = 0;
  std::vector<std::int64_t> slot;  // line → its place in m and e (−1: not decoded)
  std::unique_ptr<std::int32_t[]> m;
  std::unique_ptr<std::uint8_t[]> e;
  std::int64_t capacity = 0;               // elements m and e hold
  std::vector<std::int16_t> e_min, e_max;  // per line; e_min > e_max: no nonzero element
  std::vector<std::uint8_t> special;

  const std::int32_t* M(std::int64_t line) const {
    return m.get() + slot[static_cast<std::size_t>(line)] * k;
  }
  const std::uint8_t* E(std::int64_t line) const {
    return e.get() + slot[static_cast<std::size_t>(line)] * k;
  }
};

// Decodes into d line l of `lines` (selected[l] set, or all) with element
// (l, p) at x[l·line_stride + p·elem_stride].
void DecodeLines(int threads, const float* x, std::int64_t lines, std::int64_t k, std::int64_t line_stride,
                 std::int64_t elem_stride, const std::vector<std::uint8_t>* selected, DecodedLines& d) {
  d.k = k;
  d.slot.assign(static_cast<std::size_t>(lines), -1);
  std::int64_t decoded = 0;
  for (std::int64_t l = 0; l < lines; ++l) {
    if (selected == nullptr || (*selected)[static_cast<std::size_t>(l)] != 0)
      d.slot[static_cast<std::size_t>(l)] = decoded++;
  }
  if (d.capacity < decoded * k) {
    d.capacity = decoded * k;
    d.m = std::make_unique_for_overwrite<std::int32_t[]>(static_cast<std::size_t>(d.capacity));
    d.e = std::make_unique_for_overwrite<std::uint8_t[]>(static_cast<std::size_t>(d.capacity));
  }
  d.e_min.assign(static_cast<std::size_t>(lines), 1000);
  d.e_max.assign(static_cast<std::size_t>(lines), -1);
  d.special.assign(static_cast<std::size_t>(lines), 0);
  // (In parallel: slow outputs spread over a large GEMM select most lines.)
  const int decode_threads = ThreadsForWork(threads, decoded * k, kMinValuesPerThread);
  ParallelFor(decode_threads, lines, [&](std::int64_t l0, std::int64_t l1) {
    for (std::int64_t l = l0; l < l1; ++l) {
      if (d.slot[static_cast<std::size_t>(l)] < 0) continue;
      std::int32_t* m = d.m.get() + d.slot[static_cast<std::size_t>(l)] * k;
      std::uint8_t* e = d.e.get() + d.slot[static_cast<std::size_t>(l)] * k;
      int lo = 1000, hi = -1;
      bool special = false;
      for (std::int64_t p = 0; p < k; ++p) {
        const std::uint32_t bits = std::bit_cast<std::uint32_t>(x[l * line_stride + p * elem_stride]);
        const std::uint32_t biased = (bits >> 23) & 0xffu;
        if (biased == 0xffu) {
          special = true;  // the line is summed by ExactAccumulator instead
          m[p] = 0;
          e[p] = 0;
          continue;
        }
        const std::int32_t mag =
            static_cast<std::int32_t>((bits & 0x7fffffu) | (biased == 0 ? 0u : 0x800000u));
        m[p] = (bits >> 31) != 0 ? -mag : mag;
        const int ex = biased == 0 ? 0 : static_cast<int>(biased) - 1;
        e[p] = static_cast<std::uint8_t>(ex);
        if (mag != 0) {
          lo = std::min(lo, ex);
          hi = std::max(hi, ex);
        }
      }
      d.e_min[static_cast<std::size_t>(l)] = static_cast<std::int16_t>(lo);
      d.e_max[static_cast<std::size_t>(l)] = static_cast<std::int16_t>(hi);
      d.special[static_cast<std::size_t>(l)] = special ? 1 : 0;
    }
  });
}

// One thread's buckets; every bucket is zero between outputs. (One array:
// splitting the adds over several arrays measured slower, and the fold
// scans each.)
struct Buckets {
  std::int64_t bucket[kBucketCount] = {};
  std::int64_t pending = 0;  // products since the last fold
  int lo = kBucketCount, hi = -1;  // the buckets products may have reached since the last fold

  // Σ_p a_m[p]·b_m[p] at exponents a_e[p] + b_e[p] ∈ [run_lo, run_hi], p < k.
  void AddRun(const std::int32_t* am, const std::uint8_t* ae, const std::int32_t* bm, const std::uint8_t* be,
              std::int64_t k, int run_lo, int run_hi, ExactAccumulator& acc) {
    if (run_lo > run_hi) return;  // a zero row or column: every product is zero
    std::int64_t p = 0;
    while (p < k) {
      lo = std::min(lo, run_lo >> kBucketShift);  // (again after each fold)
      hi = std::max(hi, run_hi >> kBucketShift);
      const std::int64_t end = p + std::min(k - p, kFlushEvery - pending);
      pending += end - p;
      for (; p < end; ++p) {
        const int s = ae[p] + be[p];
        bucket[s >> kBucketShift] += (static_cast<std::int64_t>(am[p]) * bm[p]) * (std::int64_t{1} << (s & ((1 << kBucketShift) - 1)));
      }
      if (pending == kFlushEvery) Fold(acc);
    }
  }
  // Adds every bucket in [lo, hi] to acc exactly and zeroes it.
  void Fold(ExactAccumulator& acc) {
    acc.AddBuckets(bucket, lo, hi, kBucketLsbExponent, 1 << kBucketShift);
    pending = 0;
    lo = kBucketCount;
    hi = -1;
  }
};

// The outputs (i·n + j) flagged in `only` (every output when only is null),
// and which rows and columns they read. Where `rows` is given (and only is
// not null), only those rows hold set flags: the rest are not scanned.
struct FlaggedOutputs {
  std::vector<std::int64_t> index;
  std::vector<std::uint8_t> row_read, col_read;
};
FlaggedOutputs ScanFlagged(std::int64_t m, std::int64_t n, const std::vector<std::uint8_t>* only,
                           std::span<const std::int64_t> rows) {
  FlaggedOutputs f;
  f.row_read.assign(static_cast<std::size_t>(m), 0);
  f.col_read.assign(static_cast<std::size_t>(n), 0);
  const auto scan_row = [&](std::int64_t i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t e = i * n + j;
      if (only == nullptr || (*only)[static_cast<std::size_t>(e)] != 0) {
        f.index.push_back(e);
        f.row_read[static_cast<std::size_t>(i)] = 1;
        f.col_read[static_cast<std::size_t>(j)] = 1;
      }
    }
  };
  if (only != nullptr && !rows.empty()) {
    for (std::int64_t i : rows) scan_row(i);
  } else {
    for (std::int64_t i = 0; i < m; ++i) scan_row(i);
  }
  return f;
}

// The slow path: c_ij = CR(c0 + Σ exact products) for every (i, j) with
// only[i·n + j] set (all of them when only is null). Where `rows` is given,
// only those rows hold set flags (the rest are not scanned). Returns how many.
std::uint64_t ExactGemm(int threads, std::int64_t m, std::int64_t n, std::span<const CertGemmPiece> pieces,
                        float* c, std::int64_t ldc, bool accumulate, const std::vector<std::uint8_t>* only,
                        std::span<const std::int64_t> rows = {}) {
  const FlaggedOutputs flagged = ScanFlagged(m, n, only, rows);
  const std::vector<std::int64_t>& index = flagged.index;
  const std::vector<std::uint8_t>& row_read = flagged.row_read;
  const std::vector<std::uint8_t>& col_read = flagged.col_read;
  const std::int64_t count = static_cast<std::int64_t>(index.size());
  if (count == 0) return 0;
  // Decode the rows of op(A) and columns of op(B) that some output reads
  // (O(k) per line: never more than the products themselves).
  // (Reused across calls on this thread, like CertifiedGemmPieces' scratch.)
  thread_local std::vector<DecodedLines> tl_a_lines, tl_b_lines;
  std::vector<DecodedLines>& a_lines = tl_a_lines;
  std::vector<DecodedLines>& b_lines = tl_b_lines;
  if (a_lines.size() < pieces.size()) a_lines.resize(pieces.size());
  if (b_lines.size() < pieces.size()) b_lines.resize(pieces.size());
  for (std::size_t q = 0; q < pieces.size(); ++q) {
    const GemmArgs& g = pieces[q].g;
    // A line of op(A) is a row (its terms a column apart), of op(B) a column.
    const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
    DecodeLines(threads, pieces[q].a, m, g.k, sa.row, sa.col, &row_read, a_lines[q]);
    DecodeLines(threads, pieces[q].b, n, g.k, sb.col, sb.row, &col_read, b_lines[q]);
  }
  std::int64_t terms = 0;
  for (const CertGemmPiece& piece : pieces) terms += std::max<std::int64_t>(piece.g.k, 0);
  const int sum_threads =
      ThreadsForWork(threads, count * std::max<std::int64_t>(terms, 1), kMinValuesPerThread);
  ParallelFor(sum_threads, count, [&](std::int64_t s0, std::int64_t s1) {
    Buckets buckets;
    for (std::int64_t s = s0; s < s1; ++s) {
      const std::int64_t i = index[static_cast<std::size_t>(s)] / n,
                         j = index[static_cast<std::size_t>(s)] % n;
      ExactAccumulator acc;
      if (accumulate) acc.Add(c[i * ldc + j]);
      for (std::size_t q = 0; q < pieces.size(); ++q) {
        const CertGemmPiece& piece = pieces[q];
        const GemmArgs& g = piece.g;
        const DecodedLines& da = a_lines[q];
        const DecodedLines& db = b_lines[q];
        const std::size_t iu = static_cast<std::size_t>(i), ju = static_cast<std::size_t>(j);
        if (da.special[iu] != 0 || db.special[ju] != 0) {
          // NaN/inf: the accumulator's flags decide (0·inf, inf − inf, …).
          for (std::int64_t p = 0; p < g.k; ++p) {
            acc.AddProduct(OpAt(piece.a, OperandStrides(g.trans_a, g.lda), i, p),
                           OpAt(piece.b, OperandStrides(g.trans_b, g.ldb), p, j));
          }
          continue;
        }
        buckets.AddRun(da.M(i), da.E(i), db.M(j), db.E(j), g.k, da.e_min[iu] + db.e_min[ju],
                       da.e_max[iu] + db.e_max[ju], acc);
      }
      buckets.Fold(acc);
      c[i * ldc + j] = acc.Round();
    }
  });
  return static_cast<std::uint64_t>(count);
}

// The lines (rows of op(A) or columns of op(B)) that open outputs read,
// each as k contiguous fp32 values: the operand itself where a line's
// elements are adjacent, else a compact copy of just the selected lines,
// gathered in memory order (a strided line read per output — thousands of
// outputs on GPT-2 small's large GEMMs — misses the cache on every term).
// Element (l, p) of the operand is x[l·line_stride + p·elem_stride].
class OpenLines {
 public:
  OpenLines(int threads, const float* x, std::int64_t lines, std::int64_t k, std::int64_t line_stride,
            std::int64_t elem_stride, const std::vector<std::uint8_t>& selected)
      : x_(x), k_(k), line_stride_(line_stride) {
    if (elem_stride == 1) return;
    slot_.assign(static_cast<std::size_t>(lines), -1);
    std::vector<std::int64_t> chosen;
    for (std::int64_t l = 0; l < lines; ++l) {
      if (selected[static_cast<std::size_t>(l)] != 0) {
        slot_[static_cast<std::size_t>(l)] = static_cast<std::int64_t>(chosen.size());
        chosen.push_back(l);
      }
    }
    const std::int64_t count = static_cast<std::int64_t>(chosen.size());
    copy_.resize(static_cast<std::size_t>(count * k));
    ParallelFor(ThreadsForWork(threads, count * k, kMinValuesPerThread), k,
                [&](std::int64_t p0, std::int64_t p1) {
                  for (std::int64_t p = p0; p < p1; ++p) {
                    const float* row = x + p * elem_stride;
                    for (std::int64_t c = 0; c < count; ++c)
                      copy_[static_cast<std::size_t>(c * k + p)] =
                          row[chosen[static_cast<std::size_t>(c)] * line_stride];
                  }
                });
  }
  const float* Line(std::int64_t l) const {
    return slot_.empty() ? x_ + l * line_stride_ : copy_.data() + slot_[static_cast<std::size_t>(l)] * k_;
  }

 private:
  const float* x_;
  std::int64_t k_, line_stride_;
  std::vector<std::int64_t> slot_;  // empty: lines are read in place
  std::vector<float> copy_;
};

// The outputs flagged in `open` (on `rows` alone where given, else
// anywhere) after the fast path's bound: each is evaluated again, alone, by
// the compensated dot (kernels/certified_dot.h), which decides all but those
// within about 2^-53 of an fp32 rounding boundary (exact ties, mostly).
// Decided outputs are written to c and unflagged. Returns how many were open
// (the slow path's count: every one of them was evaluated a second time).
std::uint64_t CompensatedLook(int threads, std::int64_t m, std::int64_t n,
                              std::span<const CertGemmPiece> pieces, float* c, std::int64_t ldc,
                              bool accumulate, std::vector<std::uint8_t>& open,
                              std::span<const std::int64_t> rows = {}) {
  const FlaggedOutputs flagged = ScanFlagged(m, n, &open, rows);
  const std::vector<std::int64_t>& index = flagged.index;
  const std::int64_t count = static_cast<std::int64_t>(index.size());
  if (count == 0) return 0;
  std::int64_t terms = 0;
  std::vector<OpenLines> a_lines, b_lines;
  for (const CertGemmPiece& piece : pieces) {
    const GemmArgs& g = piece.g;
    const std::int64_t k = std::max<std::int64_t>(g.k, 0);
    terms += k;
    // A line of op(A) is a row (its terms a column apart), of op(B) a column.
    const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
    a_lines.emplace_back(threads, piece.a, m, k, sa.row, sa.col, flagged.row_read);
    b_lines.emplace_back(threads, piece.b, n, k, sb.col, sb.row, flagged.col_read);
  }
  const int dot_threads =
      ThreadsForWork(threads, count * std::max<std::int64_t>(terms, 1), kMinValuesPerThread);
  ParallelFor(dot_threads, count, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      const std::int64_t e = index[static_cast<std::size_t>(s)], i = e / n, j = e % n;
      CompensatedDot dot(accumulate ? c[i * ldc + j] : 0.0f);
      for (std::size_t q = 0; q < pieces.size(); ++q) {
        const std::int64_t k = pieces[q].g.k;
        if (k > 0) dot.Add(a_lines[q].Line(i), 1, b_lines[q].Line(j), 1, k);
      }
      const CompensatedDot::Result r = dot.Finish();
      float out = 0.0f;
      if (CertifyApprox(r.value, r.bound, &out)) {
        c[i * ldc + j] = out;
        open[static_cast<std::size_t>(e)] = 0;
      }
    }
  });
  return static_cast<std::uint64_t>(count);
}

}  // namespace

void CertifiedGemmPieces(const ExecConfig& config, std::int64_t m, std::int64_t n,
                         std::span<const CertGemmPiece> pieces, float* c, std::int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  const std::size_t mn = static_cast<std::size_t>(m * n);
  if (config.certified_exact_only) {
    ExactGemm(config.threads, m, n, pieces, c, ldc, accumulate, nullptr);
    CountCertified(CertKind::kGemm, mn, mn);
    return;
  }
  // Scratch reused across calls on this thread (CertifiedGemm runs on the
  // calling thread): fresh multi-megabyte buffers per GEMM cost more in page
  // faults than the arithmetic on small steps.
  // (Bound to references: a lambda run by a pool worker would otherwise name
  // the worker's own thread_local instances.)
  thread_local std::vector<double> tl_c64, tl_a64, tl_b64;
  thread_local std::vector<std::uint8_t> tl_slow;
  std::vector<double>& c64 = tl_c64;
  std::vector<double>& a64 = tl_a64;
  std::vector<double>& b64 = tl_b64;
  std::vector<std::uint8_t>& slow = tl_slow;
  // On a device, a single GEMM's whole fast path runs there (widening, norms,
  // low bits, dgemm, the certificate: kernels/certify_hd.h, this file's own
  // rule); only the fp32 results and the slow flags come back. Several pieces
  // and the shuffled test order take the path below (its dgemm offloaded).
  if (config.device != Device::kCpu && pieces.size() == 1 && pieces[0].g.k > 0 && F64ShuffleSeed() == 0) {
    GemmArgs g = pieces[0].g;
    g.m = m;
    g.n = n;
    g.ldc = ldc;
    g.accumulate = accumulate;
    slow.assign(mn, 0);
    if (device::OffloadCertifiedFast(g, pieces[0].a, pieces[0].b, c, CertSumBound(g.k + (accumulate ? 1 : 0), 1.0),
                                     slow.data())) {
      const std::uint64_t looked = CompensatedLook(config.threads, m, n, pieces, c, ldc, accumulate, slow);
      CountCertified(
          CertKind::kGemm, mn, looked,
          static_cast<std::int64_t>(ExactGemm(config.threads, m, n, pieces, c, ldc, accumulate, &slow)));
      return;
    }
  }
  c64.resize(mn);
  // The first dgemm overwrites c64 (beta = 0) unless c0 was loaded into it.
  bool c64_holds_sum = accumulate;
  if (accumulate) {
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) c64[static_cast<std::size_t>(i * n + j)] = c[i * ldc + j];
    }
  }
  std::vector<double> row_sq(static_cast<std::size_t>(m), 0.0), col_sq(static_cast<std::size_t>(n), 0.0);
  std::int64_t terms = accumulate ? 1 : 0;
  // Our widening fp64 GEMM where the CPU runs it; the test-only shuffled
  // orders and GPU offloads need GemmF64 on fp64 copies.
  const bool widening =
      F64ShuffleSeed() == 0 && config.device == Device::kCpu && WidenedF64GemmAvailable(config.simd);
  for (const CertGemmPiece& piece : pieces) {
    const GemmArgs& g = piece.g;
    if (g.k <= 0) continue;
    const std::int64_t a_rows = g.trans_a ? g.k : m, a_cols = g.trans_a ? m : g.k;
    const std::int64_t b_rows = g.trans_b ? n : g.k, b_cols = g.trans_b ? g.k : n;
    GemmArgs g64 = g;
    g64.m = m;
    g64.n = n;
    g64.ldc = n;
    g64.accumulate = c64_holds_sum;
    c64_holds_sum = true;
    terms += g.k;
    // op(A)'s rows are stored rows unless trans_a; op(B)'s columns are
    // stored columns unless trans_b.
    if (widening) {  // our kernel widens as it packs: only the norms here
      WidenWithSquares(config.threads, piece.a, a_rows, a_cols, g.lda, !g.trans_a, nullptr, row_sq.data());
      WidenWithSquares(config.threads, piece.b, b_rows, b_cols, g.ldb, g.trans_b, nullptr, col_sq.data());
      GemmWidenedF64(config.simd, config.threads, g64, piece.a, piece.b, c64.data());
      continue;
    }
    // fp64 copies, compact (products of two fp32 values are exact in fp64).
    a64.resize(static_cast<std::size_t>(a_rows * a_cols));
    b64.resize(static_cast<std::size_t>(b_rows * b_cols));
    WidenWithSquares(config.threads, piece.a, a_rows, a_cols, g.lda, !g.trans_a, a64.data(), row_sq.data());
    WidenWithSquares(config.threads, piece.b, b_rows, b_cols, g.ldb, g.trans_b, b64.data(), col_sq.data());
    g64.lda = a_cols;
    g64.ldb = b_cols;
    GemmF64(config, g64, a64.data(), b64.data(), c64.data());
  }
  // |ĉ − c| ≤ γ_terms (Σ_p |a_p b_p| + |c0|) ≤ γ_terms (‖a‖₂‖b‖₂ + |c0|)
  // (Cauchy–Schwarz over the concatenation of all pieces).
  const double half = CertSumBound(terms, 1.0);
  std::vector<double> row_norm(static_cast<std::size_t>(m)), col_norm(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < m; ++i)
    row_norm[static_cast<std::size_t>(i)] = std::sqrt(row_sq[static_cast<std::size_t>(i)]);
  for (std::int64_t j = 0; j < n; ++j) col_norm[static_cast<std::size_t>(j)] = std::sqrt(col_sq[static_cast<std::size_t>(j)]);
  if (!c64_holds_sum) std::fill(c64.begin(), c64.end(), 0.0);  // every piece had k = 0
  // First the bound alone; what it leaves open goes on below. Every stage
  // that decides an output gives the same value — the correctly rounded
  // one — so their order changes no result, only the work.
  slow.resize(mn);  // flags are written for the rows left open, the only ones read below
  std::vector<std::uint8_t> row_open(static_cast<std::size_t>(m), 0);
  // One row of c0 scratch per thread (allocated here: none inside a worker).
  const int chunks = static_cast<int>(std::min<std::int64_t>(
      ThreadsForWork(config.threads, static_cast<std::int64_t>(mn), kMinValuesPerThread), m));
  std::vector<float> c0_copies(accumulate ? static_cast<std::size_t>(chunks * n) : 0);
  ParallelFor(chunks, chunks, [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t chunk = k0; chunk < k1; ++chunk) {
      float* const c0_copy = accumulate ? c0_copies.data() + chunk * n : nullptr;
      for (std::int64_t i = m * chunk / chunks; i < m * (chunk + 1) / chunks; ++i) {
        row_open[static_cast<std::size_t>(i)] =
            CertifyRowByBound(c64.data() + i * n, row_norm[static_cast<std::size_t>(i)], col_norm.data(),
                              half, n, accumulate, c + i * ldc, slow.data() + i * n, c0_copy)
                ? 1
                : 0;
      }
    }
  });
  std::vector<std::int64_t> open_rows, open_cols;
  for (std::int64_t i = 0; i < m; ++i) {
    if (row_open[static_cast<std::size_t>(i)] != 0) open_rows.push_back(i);
  }
  if (open_rows.empty()) {  // the common case: the bound decided every output
    CountCertified(CertKind::kGemm, mn, 0);
    return;
  }
  // Then the compensated second look; the exactness test (CertifyGemmOutput)
  // and the exact sum only for what it leaves open, with the low bits of
  // just those rows and columns (a scan of whole lines of every piece: it
  // cost more than the second look when it came first).
  const std::uint64_t looked =
      CompensatedLook(config.threads, m, n, pieces, c, ldc, accumulate, slow, open_rows);
  // What it left open, and the rows and columns that holds.
  const FlaggedOutputs left = ScanFlagged(m, n, &slow, open_rows);
  if (left.index.empty()) {
    CountCertified(CertKind::kGemm, mn, looked, 0);
    return;
  }
  open_rows.clear();
  for (std::int64_t i = 0; i < m; ++i) {
    if (left.row_read[static_cast<std::size_t>(i)] != 0) open_rows.push_back(i);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    if (left.col_read[static_cast<std::size_t>(j)] != 0) open_cols.push_back(j);
  }
  {
    // The smallest LowBitExponent of a nonzero entry of each open row of
    // op(A) and column of op(B): every product a_ip·b_pj is a multiple of
    // 2^(row + col).
    constexpr int kNoBits = 1 << 20;
    std::vector<int> row_lsb(static_cast<std::size_t>(m), kNoBits),
        col_lsb(static_cast<std::size_t>(n), kNoBits);
    for (const CertGemmPiece& piece : pieces) {
      const GemmArgs& g = piece.g;
      if (g.k <= 0) continue;
      const std::int64_t a_rows = g.trans_a ? g.k : m, a_cols = g.trans_a ? m : g.k;
      const std::int64_t b_rows = g.trans_b ? n : g.k, b_cols = g.trans_b ? g.k : n;
      // Over the stored matrices in memory order (op(A)'s rows are stored
      // rows unless trans_a; op(B)'s columns are stored columns unless trans_b).
      MinLowBits(piece.a, a_rows, a_cols, g.lda, !g.trans_a, open_rows, row_lsb.data());
      MinLowBits(piece.b, b_rows, b_cols, g.ldb, g.trans_b, open_cols, col_lsb.data());
    }
    for (std::int64_t i : open_rows) {
      for (std::int64_t j = 0; j < n; ++j) {
        const std::size_t e = static_cast<std::size_t>(i * n + j);
        if (slow[e] == 0) continue;
        float out = 0.0f;
        if (CertifyGemmOutput(c64[e], row_norm[static_cast<std::size_t>(i)],
                              col_norm[static_cast<std::size_t>(j)], accumulate ? c[i * ldc + j] : 0.0f,
                              row_lsb[static_cast<std::size_t>(i)] + col_lsb[static_cast<std::size_t>(j)],
                              half, &out)) {
          c[i * ldc + j] = out;
          slow[e] = 0;
        }
      }
    }
  }
  CountCertified(CertKind::kGemm, mn, looked,
                 static_cast<std::int64_t>(
                     ExactGemm(config.threads, m, n, pieces, c, ldc, accumulate, &slow, open_rows)));
}

void CertifiedGemm(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c) {
  const CertGemmPiece piece{g, a, b};
  CertifiedGemmPieces(config, g.m, g.n, std::span<const CertGemmPiece>(&piece, 1), c, g.ldc, g.accumulate);
}

}  // namespace vt::kernels
