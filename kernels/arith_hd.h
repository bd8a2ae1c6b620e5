#pragma once
// The per-element arithmetic that defines repops and rounded-mode results,
// written once as VT_HD inline functions and used by the CPU kernels (scalar
// reference, SIMD variants are tested bitwise against it) and by the CUDA
// kernels (kernels/cuda/), so the operation order cannot drift between them.
//
// Everything here is integer bit manipulation or single IEEE fp32 operations
// with round-to-nearest-even; no libm, no fma, no compiler contraction (on the
// device the explicitly rounded intrinsics __fmul_rn/__fadd_rn are used,
// which nvcc never fuses).

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/hd.h"

namespace vt::kernels::hd {

// ---- repops dot product ------------------------------------------------------
// The value of one repops GEMM output element: starting from `acc` (+0.0f, or
// the existing C value when accumulating), for p = 0, 1, …, k−1 in order:
//   prod = a[p·sa] * b[p·sb]   (rounded to fp32)
//   acc  = acc + prod          (rounded to fp32)
VT_HD inline float MulRn(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(x, y);
#else
  return x * y;
#endif
}
VT_HD inline float AddRn(float x, float y) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(x, y);
#else
  return x + y;
#endif
}

// One step of the sum; every repops GEMM path (scalar, SIMD lanes, CUDA
// threads) performs exactly this per output element and p.
VT_HD inline float RepopsStep(float acc, float a, float b) { return AddRn(acc, MulRn(a, b)); }

VT_HD inline float RepopsDot(const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                             std::int64_t k, float acc) {
  for (std::int64_t p = 0; p < k; ++p) acc = RepopsStep(acc, a[p * sa], b[p * sb]);
  return acc;
}

// ---- b-bit rounding --------------------------------------------------------------
// The b-bit grid is the set of fp32 values whose 32−b lowest bits are zero
// (b = 32: every fp32 value). See kernels/rounding.cpp for the full contract.

VT_HD inline std::uint64_t DoubleBits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
VT_HD inline double DoubleFromBits(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
VT_HD inline std::uint32_t FloatBits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
VT_HD inline float FloatFromBits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline constexpr std::uint32_t kCanonicalNan = 0x7FC00000u;
inline constexpr std::uint32_t kInfBits = 0x7F800000u;

// Where |x| lies relative to the b-bit grid. For finite |x| < 2^128 the grid
// interval [lo, hi) containing |x| has width u = 2^shift units, and |x| =
// lo + rem units exactly (a unit is the fp64 ulp of x's binade, or for fp32
// subnormal magnitudes a unit of the shifted significand). hi may be +inf's
// pattern: the interval above the largest finite grid value ends at 2^128,
// which IEEE round-to-nearest treats as the next (even) grid point.
struct GridPos {
  std::uint32_t sign = 0;     // 0x80000000 or 0
  std::uint32_t lo_bits = 0;  // fp32 pattern of lo (sign cleared)
  std::uint64_t rem = 0;      // 0 ≤ rem < 2^shift
  int shift = 0;              // 29+s ≤ shift ≤ 63 (s = 32−b)
  int step_shift = 0;         // s: hi_bits = lo_bits + 2^s
  int unit_exp = 0;           // a unit is 2^unit_exp (absolute value)
  // 0: finite with a rounding boundary; 1: NaN; 2: ±inf or |x| ≥ 2^128.
  int special = 0;
};

VT_HD inline GridPos Locate(double x, int bits) {
  const std::uint64_t u = DoubleBits(x);
  GridPos g;
  g.sign = static_cast<std::uint32_t>(u >> 32) & 0x80000000u;
  const std::uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
  const int s = 32 - bits;
  g.step_shift = s;
  const int e = static_cast<int>(a >> 52);
  if (e == 0x7FF) {
    g.special = (a & 0x000FFFFFFFFFFFFFull) != 0 ? 1 : 2;
    return g;
  }
  if (e >= 1023 + 128) {  // |x| ≥ 2^128: past the last interval
    g.special = 2;
    return g;
  }
  if (e >= 1023 - 126) {
    // fp32-normal magnitudes: fp32 binades coincide with fp64 binades, so the
    // fp64 bit pattern, shifted, is the fp32 pattern (rebias 1023 → 127).
    const int shift = 29 + s;
    g.shift = shift;
    g.unit_exp = e - 1023 - 52;
    g.rem = a & ((std::uint64_t{1} << shift) - 1);
    g.lo_bits = static_cast<std::uint32_t>(((a >> shift) << s) - (std::uint64_t{896} << 23));
    return g;
  }
  // fp32-subnormal magnitudes (and fp64 subnormals): the grid is uniform with
  // spacing 2^(−149+s); |x| = sig · 2^(E−52).
  const std::uint64_t mant = a & 0x000FFFFFFFFFFFFFull;
  const std::uint64_t sig = e != 0 ? (mant | (std::uint64_t{1} << 52)) : mant;
  const int big_e = e != 0 ? e - 1023 : -1022;
  g.unit_exp = big_e - 52;
  int shift = s - 97 - big_e;  // ≥ s + 30
  // Past 63 the value is below 2^-10 of the spacing: it rounds to zero and is
  // never near the boundary (τ ≤ 1/4), which the capped shift still yields.
  if (shift > 63) shift = 63;
  g.shift = shift;
  g.rem = sig & ((std::uint64_t{1} << shift) - 1);
  g.lo_bits = static_cast<std::uint32_t>((sig >> shift) << s);
  return g;
}

// fp32 bits of the grid neighbour of g: the one farther from zero when
// `away` (hi), else lo, with the sign of x.
VT_HD inline std::uint32_t NeighbourBits(const GridPos& g, bool away) {
  return g.sign | (g.lo_bits + (away ? (std::uint32_t{1} << g.step_shift) : 0u));
}

// Round to nearest, ties to even (on the b-bit grid, i.e. the kept LSB).
VT_HD inline bool NearestIsAway(const GridPos& g) {
  const std::uint64_t half = std::uint64_t{1} << (g.shift - 1);
  return g.rem > half || (g.rem == half && ((g.lo_bits >> g.step_shift) & 1u) != 0);
}

VT_HD inline std::uint32_t SpecialBits(const GridPos& g) {
  return g.special == 1 ? kCanonicalNan : (g.sign | kInfBits);
}

VT_HD inline std::uint32_t RoundToBitsPattern(double x, int bits) {
  const GridPos g = Locate(x, bits);
  if (g.special != 0) return SpecialBits(g);
  return NeighbourBits(g, NearestIsAway(g));
}

// |x − m| in units, where m is the interval's midpoint.
VT_HD inline std::uint64_t DistanceToMidpoint(const GridPos& g) {
  const std::uint64_t half = std::uint64_t{1} << (g.shift - 1);
  return g.rem >= half ? g.rem - half : half - g.rem;
}

// |x − m| < (tau_q16 · factor / 65536) · u, exactly, for factor ∈ {1, 4}
// and tau_q16 ≤ 2^14 (so the threshold fits: ≤ 2^shift ≤ 2^63).
VT_HD inline bool WithinTau(const GridPos& g, std::uint32_t tau_q16, int factor_log2) {
  const std::uint64_t threshold = std::uint64_t{tau_q16} << (g.shift - 16 + factor_log2);
  return DistanceToMidpoint(g) < threshold;
}

// x·2^k exactly as std::ldexp(x, k) (a correctly rounded scaling): a single
// multiplication by the exact power 2^k wherever 2^k is a normal double —
// every value Locate finds in the fp32-normal range (|k| ≤ 178) — and
// std::ldexp itself elsewhere. The multiplication is what ldexp computes,
// without the libm call in the rounding loops.
inline double ScaleByPow2(double x, int k) {
  if (k >= -1022 && k <= 1023) {
    const std::uint64_t bits = static_cast<std::uint64_t>(k + 1023) << 52;
    double p;
    std::memcpy(&p, &bits, sizeof p);
    return x * p;
  }
  return std::ldexp(x, k);
}

// The error-bounded region (docs/kernels.md, "Rounded mode: the logging
// region"): |x − m| < max(τ·u, min(slack, u/4)) · factor, factor = 2^factor_log2,
// where slack ≥ 0 is an absolute fp64 bound (β) on how far another honest
// evaluation of x may lie. slack ≤ 0 or NaN means none. The slack is
// converted into units by an exact power-of-two scaling (ldexp), capped at u/4
// (beyond that a direction no longer names the same grid value for both
// parties), and compared with the integer distance as a double (exact for
// distances below 2^53; above, the conversion rounds deterministically).
// Host only (std::ldexp).
inline bool WithinRegion(const GridPos& g, std::uint32_t tau_q16, double slack, int factor_log2) {
  if (WithinTau(g, tau_q16, factor_log2)) return true;
  if (!(slack > 0.0)) return false;
  const double cap = static_cast<double>(std::uint64_t{1} << (g.shift - 2));
  double units = ScaleByPow2(slack, -g.unit_exp);
  if (!(units < cap)) units = cap;
  return static_cast<double>(DistanceToMidpoint(g)) < units * static_cast<double>(1 << factor_log2);
}

// Whether slack (β > 0) is past what a direction log can cover: it reaches
// the u/4 cap, or the value has no rounding boundary (NaN, ±inf, overflow),
// so another honest evaluation may round to another value (or be finite)
// and no entry repairs it. A recording trainer then rounds the canonical
// reference instead (RunOp, kernels/ops/registry.h). Host only.
inline bool SlackCapped(const GridPos& g, double slack) {
  if (!(slack > 0.0)) return false;
  if (g.special != 0) return true;
  return !(ScaleByPow2(slack, -g.unit_exp) < static_cast<double>(std::uint64_t{1} << (g.shift - 2)));
}

// Direction bit of a log entry: true = the neighbour toward +inf.
VT_HD inline bool AwayToUp(const GridPos& g, bool away) { return away != (g.sign != 0); }
VT_HD inline bool UpToAway(const GridPos& g, bool up) { return up != (g.sign != 0); }

// THE acceptance rule of a log entry (docs/kernels.md, "The acceptance
// rule"; the one implementation — arbiter and every replayer call it through
// NodeRounding::Round). `g` locates the canonical reference value ref of the
// logged position (every replay evaluates the reference), w = max(τ·u,
// min(β, u/4)) its region. The entry (position, up) is accepted iff ref has
// a rounding boundary m, |ref − m| < 2w, and either `up` names ref's nearest
// neighbour or |ref − m| < w. An honest trainer logs only values x with
// |x − m| < w, and |x − ref| < w whenever β < u/4 (β bounds any two fp64
// evaluations; τ covers the rest), so its entries are always accepted; the
// non-nearest outcome is open only within w of the boundary. Host only.
inline bool AcceptsEntry(const GridPos& g, std::uint32_t tau_q16, double slack, bool up) {
  if (g.special != 0) return false;
  if (!WithinRegion(g, tau_q16, slack, 1)) return false;
  return UpToAway(g, up) == NearestIsAway(g) || WithinRegion(g, tau_q16, slack, 0);
}

}  // namespace vt::kernels::hd
