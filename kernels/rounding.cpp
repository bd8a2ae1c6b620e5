// Rounded mode: b-bit rounding, logging region, node logs and their codec.
//
// ---- The b-bit grid and RoundToBits -------------------------------------------
// s = 32 − b (0 ≤ s ≤ 9). The grid G_b is the set of fp32 values whose bit
// pattern has its s lowest bits zero. It contains ±0, the fp32 subnormals
// with that property (uniform spacing 2^(−149+s)), the normal values with
// 23−s explicit mantissa bits (spacing 2^(e−23+s) in binade [2^e, 2^(e+1))),
// and ±inf. For finite x, RoundToBits(x, b) is the element of G_b nearest to
// x, ties to the one with an even kept LSB — exactly IEEE-754 round-to-
// nearest-even into a format with fp32's exponent range and 24−s significand
// bits, including gradual underflow:
//   * ±0 stays ±0; a non-zero value that rounds to zero keeps its sign (−0.0);
//   * values at or above max_b + u_max/2 (ties go to the even "2^128") become
//     ±inf, where max_b is the largest finite grid value; |x| ≥ 2^128 → ±inf;
//   * ±inf stay ±inf; every NaN becomes the canonical quiet NaN 0x7FC00000.
// The implementation (kernels/arith_hd.h, Locate) is O(1) integer arithmetic
// on the fp64 bit pattern: in the fp32-normal range the fp64 pattern shifted
// right by 29+s is the grid index (the exponent is rebiased by 896), and the
// carry of a round-up propagates into the exponent naturally; in the
// subnormal range the significand is shifted by a value-dependent amount.
//
// ---- The logging region (error-bounded) -----------------------------------------
// For finite |x| < 2^128 let [lo, hi] be the grid interval containing |x|
// (lo ≤ |x| < hi, consecutive grid values; hi = "2^128" above max_b), u = hi −
// lo the true b-bit ulp of that interval (so just below a power of two u is
// the smaller spacing, at and above it the larger one; in the subnormal range
// u = 2^(−149+s)), and m = (lo + hi)/2 the rounding boundary. x is logged iff
//   |x − m| < w,   w = max(τ·u, min(β, u/4))   (τ = tau_q16 / 65536, 0 ≤ τ ≤ 1/4)
// where β ≥ 0 is the operator's a-priori bound on the difference between two
// honest fp64 evaluations of x (0 for our own fixed-order loops). The τ part
// is compared exactly in integers (|x| − lo is an exact integer number of
// fp64 units of that binade); the β part as doubles after an exact ldexp
// into those units (hd::WithinRegion). NaN, ±inf and |x| ≥ 2^128 have no
// boundary and are never logged. With β < u/2, grid values are never logged.
//
// ---- Replay and its check ------------------------------------------------------------
// Every replay evaluates the canonical fp64 reference ref of each value
// (OpContext turns on ExecConfig::f64_reference for a replaying
// NodeRounding: no vendor BLAS, no libm), so the arbiter and every challenger
// hold the same bits. A logged entry is judged at ref by the one rule
// hd::AcceptsEntry: accepted iff |ref − m| < 2w and (the entry names ref's
// nearest neighbour, or |ref − m| < w). An accepted entry takes that
// neighbour of ref; a rejected one is Status::Invalid
// "log-entry-outside-region". Unlogged values round ref to nearest.
// Honest trainer values x satisfy |x − ref| < w wherever β < u/4, so: its
// entries are accepted (|ref − m| < 2w, and a non-nearest direction for ref
// means m lies between x and ref, |ref − m| < w); the values it does not log
// (|x − m| ≥ w) lie on ref's side; and a cheater's only freedom is the
// non-nearest neighbour of values within w of the boundary — one b-bit ulp,
// where honest parties genuinely disagree (docs/kernels.md "The acceptance
// rule", docs/referee.md "Residual freedom").

#include "kernels/rounding.h"

#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstdio>
#include <new>
#include <string>

#include "common/encoding.h"
#include "kernels/arith_hd.h"
#include "kernels/parallel.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {

float RoundToBits(double x, int bits) {
  assert(bits >= kMinRoundingBits && bits <= kMaxRoundingBits);
  return hd::FloatFromBits(hd::RoundToBitsPattern(x, bits));
}

RoundingRegion ClassifyRounding(double x, const RoundingSpec& spec, double slack) {
  const hd::GridPos g = hd::Locate(x, spec.bits);
  RoundingRegion r;
  if (g.special != 0) {
    r.nearest = r.down = r.up = hd::FloatFromBits(hd::SpecialBits(g));
    return r;
  }
  const bool away = hd::NearestIsAway(g);
  r.nearest = hd::FloatFromBits(hd::NeighbourBits(g, away));
  r.down = hd::FloatFromBits(hd::NeighbourBits(g, hd::UpToAway(g, false)));
  r.up = hd::FloatFromBits(hd::NeighbourBits(g, hd::UpToAway(g, true)));
  r.has_boundary = true;
  r.nearest_is_up = hd::AwayToUp(g, away);
  r.near_boundary = hd::WithinRegion(g, spec.tau_q16, slack, 0);
  r.within_replay_window = hd::WithinRegion(g, spec.tau_q16, slack, 1);
  return r;
}

NodeRounding NodeRounding::Record(const RoundingSpec& spec) { return NodeRounding(spec, true, {}); }

NodeRounding NodeRounding::RecordReplayWindow(const RoundingSpec& spec) {
  return NodeRounding(spec, true, {}, 2);
}

NodeRounding NodeRounding::RecordSteered(const RoundingSpec& spec) {
  NodeRounding r(spec, true, {});
  r.m_steer = true;
  return r;
}

NodeRounding NodeRounding::Replay(const RoundingSpec& spec, RoundingLog log) {
  return NodeRounding(spec, false, std::move(log));
}

NodeRounding NodeRounding::ReplaySkippingInvalid(const RoundingSpec& spec, RoundingLog log) {
  NodeRounding r(spec, false, std::move(log));
  r.m_skip_invalid = true;
  return r;
}

namespace {

// ---- the rounding loops ----------------------------------------------------------------
// One value at a time through hd::Locate is the definition; the loops below
// take a branch-free path for values in the fp32-normal range (Locate's first
// case: 2^-126 ≤ |x| < 2^128, i.e. every ordinary activation, gradient and
// weight) and the definition for everything else (zero, subnormals, NaN, ±inf,
// overflow). The fast path is the same integer arithmetic: grid index
// q = |x|_bits >> shift, remainder rem, round-to-nearest-even as
// (|x|_bits + half − 1 + (q & 1)) >> shift (the carry walks into the
// exponent as in NeighbourBits), distance |rem − half|, and β in units by an
// exact power-of-two multiplication (hd::ScaleByPow2).
// RoundingFastPath.RecordMatchesTheDefinitionValueByValue checks it value
// by value against the definition (hd::Locate) over every range.

constexpr std::uint64_t kAbsMask = 0x7FFFFFFFFFFFFFFFull;
// Biased fp64 exponents of Locate's fp32-normal case: [1023−126, 1023+128).
constexpr std::uint64_t kNormalExpLo = 1023 - 126;
constexpr std::uint64_t kNormalExpCount = 254;

inline bool InNormalRange(std::uint64_t abs_bits) { return (abs_bits >> 52) - kNormalExpLo < kNormalExpCount; }

// Per-call constants of the fast path.
struct FastGrid {
  int s;                       // 32 − bits
  int shift;                   // 29 + s
  std::uint64_t mask;          // 2^shift − 1
  std::uint64_t half;          // 2^(shift−1)
  std::uint64_t tau_threshold; // τ·u·factor in units (WithinTau)
  double cap;                  // u/4 in units
  double factor;               // 2^factor_log2
  explicit FastGrid(int bits, std::uint32_t tau, int factor_log2)
      : s(32 - bits),
        shift(29 + s),
        mask((std::uint64_t{1} << shift) - 1),
        half(std::uint64_t{1} << (shift - 1)),
        tau_threshold(std::uint64_t{tau} << (shift - 16 + factor_log2)),
        cap(static_cast<double>(std::uint64_t{1} << (shift - 2))),
        factor(static_cast<double>(1 << factor_log2)) {}
  // fp32 bits of the grid neighbour: q + away, rebiased, with the sign.
  std::uint32_t Bits(std::uint64_t u, std::uint64_t q, bool away) const {
    const auto sign = static_cast<std::uint32_t>(u >> 32) & 0x80000000u;
    return sign | static_cast<std::uint32_t>(((q + (away ? 1u : 0u)) << s) - (std::uint64_t{896} << 23));
  }
};

// The nearest b-bit value of every input (replay's first pass, and records
// at τ = 0 without β: exact operators, which can log nothing). Blocks of
// values are converted without branches (zero included: ReLU outputs); a
// block holding anything else (subnormal magnitudes, NaN, ±inf, |x| ≥ 2^128)
// is then redone value by value through the definition. At b = 32 the
// fp32-normal range converts with the hardware's fp64 → fp32 conversion,
// which is IEEE round-to-nearest-even there (the mode every fp64 operation
// of rounded mode already assumes; subnormal results, the only ones FTZ
// would change, take the definition).
// One block's nearest values, branch-free so it vectorises (AVX2 / AVX-512
// where the CPU has them: 64-bit compares); true when some value needs the
// definition (its bits here are then arbitrary).
VT_SIMD_CLONES bool NearestBlock(const FastGrid& grid, const double* exact, float* out, std::size_t n,
                                 bool bits32) {
  const FastGrid fg = grid;
  // 64-bit like the compares: a narrower flag costs a lane shuffle per vector.
  std::uint64_t other = 0;
  if (bits32) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t a = hd::DoubleBits(exact[i]) & kAbsMask;
      other |= static_cast<std::uint64_t>(!InNormalRange(a) & (a != 0));
      out[i] = static_cast<float>(exact[i]);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t u = hd::DoubleBits(exact[i]);
      const std::uint64_t a = u & kAbsMask;
      other |= static_cast<std::uint64_t>(!InNormalRange(a) & (a != 0));
      const std::uint64_t q = a >> fg.shift;
      const std::uint64_t r = (a + (fg.half - 1) + (q & 1)) >> fg.shift;
      const std::uint32_t bits_out = fg.Bits(u, q, r != q);
      out[i] = hd::FloatFromBits(a == 0 ? static_cast<std::uint32_t>(u >> 32) : bits_out);
    }
  }
  return other != 0;
}

void RoundNearestRange(const double* exact, float* out, std::size_t begin, std::size_t end, int bits) {
  constexpr std::size_t kBlock = 256;
  const FastGrid fg(bits, 0, 0);
  for (std::size_t b0 = begin; b0 < end; b0 += kBlock) {
    const std::size_t b1 = std::min(end, b0 + kBlock);
    if (NearestBlock(fg, exact + b0, out + b0, b1 - b0, bits == 32)) [[unlikely]] {
      for (std::size_t i = b0; i < b1; ++i) {
        const std::uint64_t a = hd::DoubleBits(exact[i]) & kAbsMask;
        if (!(InNormalRange(a) || a == 0)) out[i] = hd::FloatFromBits(hd::RoundToBitsPattern(exact[i], bits));
      }
    }
  }
}

// What recording a chunk of values produces besides the rounded values.
struct RecordTally {
  std::vector<LogEntry> entries;
  std::uint64_t logged_by_slack = 0;
  std::uint64_t slack_capped = 0;
  std::uint64_t unrepaired = 0;
  std::vector<std::size_t> referred;  // capped values with a reference: Round asks for them
};

struct RecordParams {
  int bits;
  std::uint32_t tau;
  int factor_log2;
  bool steer;
  std::uint64_t base;  // position of value 0
};

// The definition for one value (Locate), used outside the fp32-normal range.
void RecordOne(const RecordParams& p, double x, const double* slack_at, std::size_t i, float* out,
               RecordTally& t) {
  const hd::GridPos g = hd::Locate(x, p.bits);
  const double s = slack_at == nullptr ? 0.0 : *slack_at;
  if (g.special != 0) {
    *out = hd::FloatFromBits(hd::SpecialBits(g));
    return;
  }
  const bool nearest = hd::NearestIsAway(g);
  const int f = p.factor_log2;
  const bool near =
      slack_at == nullptr ? p.tau != 0 && hd::WithinTau(g, p.tau, f) : hd::WithinRegion(g, p.tau, s, f);
  // Steering (test only) takes the other neighbour wherever the rule
  // accepts it at this value: within w of the boundary.
  const bool away = p.steer && near ? !nearest : nearest;
  *out = hd::FloatFromBits(hd::NeighbourBits(g, away));
  if (near) {
    t.entries.push_back(LogEntry{p.base + i, hd::AwayToUp(g, away)});
    if (slack_at != nullptr && !hd::WithinTau(g, p.tau, f)) ++t.logged_by_slack;
  }
}

constexpr std::size_t kRecordBlock = 256;

// One fp32-normal value as the fast path sees it: straight-line arithmetic
// with no branch and no call, so a loop over it vectorises (AVX2 / AVX-512
// where the CPU has them: 64-bit compares). Outside the fp32-normal range
// (`outside`) every other field is meaningless; the definition decides.
struct FastValue {
  std::uint64_t u, q;  // the value's bits, its grid index
  bool nearest;        // round-to-nearest takes q + 1 (away from zero)
  bool outside;        // not fp32-normal
  bool near;           // within w of the boundary: a log entry
  bool near_tau;       // within τ·u alone
  bool capped;         // β past the u/4 cap
};

template <bool kSlack>
[[gnu::always_inline]] inline FastValue ClassifyFast(const FastGrid& fg, double x, double s) {
  FastValue v;
  v.u = hd::DoubleBits(x);
  const std::uint64_t a = v.u & kAbsMask;
  v.outside = !InNormalRange(a);
  v.q = a >> fg.shift;
  const std::uint64_t rem = a & fg.mask;
  v.nearest = ((a + (fg.half - 1) + (v.q & 1)) >> fg.shift) != v.q;
  // |rem − half| by a sign mask.
  const std::int64_t d = static_cast<std::int64_t>(rem) - static_cast<std::int64_t>(fg.half);
  const std::int64_t sign_mask = d >> 63;
  const auto dist = static_cast<std::uint64_t>((d ^ sign_mask) - sign_mask);
  v.near_tau = dist < fg.tau_threshold;
  v.near = v.near_tau;
  v.capped = false;
  if constexpr (kSlack) {
    // β in units: β·2^(−unit_exp), −unit_exp = 1075 − e ∈ [−75, 178] in the
    // fp32-normal range, so 2^(1075−e) is a normal double and one
    // multiplication is exactly hd::ScaleByPow2 (= ldexp).
    const double scale = std::bit_cast<double>(((std::uint64_t{2098} - (a >> 52)) & 0x7FF) << 52);
    const double units = s * scale;
    const bool positive = s > 0.0;
    v.capped = positive & !(units < fg.cap);
    const double w = v.capped ? fg.cap : units;
    // dist < 2^shift ≤ 2^52 as a double, exactly, by the 2^52 bias (a
    // 64-bit integer → double conversion has no AVX2 instruction).
    const double dist_d = std::bit_cast<double>(dist | 0x4330000000000000ull) - 0x1p52;
    v.near = v.near_tau | (positive & (dist_d < w * fg.factor));
  }
  return v;
}

// The fast pass over one block of at most kRecordBlock values: every
// value's nearest bits, and which sub-blocks of kRecordSubBlock values hold
// a value that needs RecordRange's second pass (near, outside or capped):
// bit j of the result for values [j·kRecordSubBlock, (j + 1)·kRecordSubBlock).
// It keeps nothing per value, so the loop is only the classification and
// the store: near values are a few in ten thousand, and the second pass
// classifies the values of the rare flagged sub-blocks again. At b = 32 the
// nearest bits are the hardware's conversion, as in NearestBlock: the grid's
// bits would be narrowed from 64-bit lanes, a shuffle per vector.
constexpr std::size_t kRecordSubBlock = 16;
static_assert(kRecordBlock / kRecordSubBlock <= 32, "one bit per sub-block in a std::uint32_t");

template <bool kSlack, bool kBits32>
[[gnu::always_inline]] inline std::uint64_t RecordValues(const FastGrid& fg, const double* exact,
                                                         const double* slack, float* out, std::size_t n) {
  // 64-bit like the compares: a narrower flag costs a lane shuffle per vector.
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const FastValue v = ClassifyFast<kSlack>(fg, exact[i], kSlack ? slack[i] : 0.0);
    out[i] = kBits32 ? static_cast<float>(exact[i]) : hd::FloatFromBits(fg.Bits(v.u, v.q, v.nearest));
    any |= static_cast<std::uint64_t>(v.near | v.outside | v.capped);
  }
  return any;
}

template <bool kSlack, bool kBits32>
[[gnu::always_inline]] inline std::uint32_t RecordBlockBody(const FastGrid& grid, const double* exact,
                                                            const double* slack, float* out, std::size_t n) {
  const FastGrid fg = grid;
  std::uint32_t flagged = 0;
  std::size_t i = 0;
  // Whole sub-blocks with a constant trip count (unrolled vectors), then the rest.
  for (; i + kRecordSubBlock <= n; i += kRecordSubBlock) {
    const std::uint64_t any =
        RecordValues<kSlack, kBits32>(fg, exact + i, kSlack ? slack + i : nullptr, out + i, kRecordSubBlock);
    flagged |= static_cast<std::uint32_t>(any != 0) << (i / kRecordSubBlock);
  }
  if (i < n) {
    const std::uint64_t any =
        RecordValues<kSlack, kBits32>(fg, exact + i, kSlack ? slack + i : nullptr, out + i, n - i);
    flagged |= static_cast<std::uint32_t>(any != 0) << (i / kRecordSubBlock);
  }
  return flagged;
}

// RecordBlockBody without and with β as plain functions, each compiled
// once per ISA and chosen at load time (kernels/simd_clones.h).
VT_SIMD_CLONES std::uint32_t RecordBlockTau(const FastGrid& grid, const double* exact, const double* slack,
                                            float* out, std::size_t n) {
  return grid.s == 0 ? RecordBlockBody<false, true>(grid, exact, slack, out, n)
                     : RecordBlockBody<false, false>(grid, exact, slack, out, n);
}

VT_SIMD_CLONES std::uint32_t RecordBlockSlack(const FastGrid& grid, const double* exact, const double* slack,
                                              float* out, std::size_t n) {
  return grid.s == 0 ? RecordBlockBody<true, true>(grid, exact, slack, out, n)
                     : RecordBlockBody<true, false>(grid, exact, slack, out, n);
}

std::atomic<bool (*)(std::size_t)> g_reference_ask{nullptr};
std::atomic<bool> g_references_ignored{false};
std::atomic<void (*)(std::span<const double>)> g_slack_observer{nullptr};

// The value-by-value pass over [i0, i1) (RecordRange): the counters,
// entries in position order (steered ones re-rounded), the definition
// (RecordOne) for values outside the fp32-normal range, and the positions
// of capped values that have a reference (Round rounds those afterwards).
template <bool kSlack>
void RecordValueByValue(const RecordParams& p, const FastGrid& fg, const double* exact, const double* slack,
                        float* out, std::size_t i0, std::size_t i1, bool has_reference,
                        bool (*ask)(std::size_t), RecordTally& t) {
  for (std::size_t i = i0; i < i1; ++i) {
    const FastValue v = ClassifyFast<kSlack>(fg, exact[i], kSlack ? slack[i] : 0.0);
    // (The definition decides a value outside the fp32-normal range.)
    const bool capped =
        v.outside ? kSlack && hd::SlackCapped(hd::Locate(exact[i], p.bits), slack[i]) : v.capped;
    t.slack_capped += capped ? 1 : 0;
    t.logged_by_slack += (v.near & !v.near_tau & !v.outside) ? 1 : 0;
    if (has_reference && (capped || (ask != nullptr && ask(i)))) {
      t.referred.push_back(i);
      continue;
    }
    t.unrepaired += capped ? 1 : 0;
    if (v.outside) {
      RecordOne(p, exact[i], kSlack ? slack + i : nullptr, i, out + i, t);
    } else if (v.near) {
      // Steering (test only) takes the other neighbour.
      const bool away = v.nearest ^ p.steer;
      if (p.steer) out[i] = hd::FloatFromBits(fg.Bits(v.u, v.q, away));
      t.entries.push_back(LogEntry{p.base + i, away != ((v.u >> 63) != 0)});
    }
  }
}

// Records [begin, end): RecordBlockBody's fast path block by block, then
// RecordValueByValue over the rare sub-blocks it flags (over every value
// where the test's ask is set). A value the fast pass did not flag adds to
// no counter and has no entry, so skipping it changes nothing.
template <bool kSlack>
void RecordRange(const RecordParams& p, const double* exact, const double* slack, float* out,
                 std::size_t begin, std::size_t end, bool has_reference, RecordTally& t) {
  bool (*const ask)(std::size_t) = has_reference ? g_reference_ask.load(std::memory_order_relaxed) : nullptr;
  const FastGrid fg(p.bits, p.tau, p.factor_log2);
  const auto block = kSlack ? RecordBlockSlack : RecordBlockTau;
  for (std::size_t b0 = begin; b0 < end; b0 += kRecordBlock) {
    const std::size_t b1 = std::min(end, b0 + kRecordBlock);
    std::uint32_t flagged = block(fg, exact + b0, kSlack ? slack + b0 : nullptr, out + b0, b1 - b0);
    if (ask != nullptr) flagged = ~std::uint32_t{0} >> (32 - kRecordBlock / kRecordSubBlock);
    for (; flagged != 0; flagged &= flagged - 1) {
      const std::size_t s0 = b0 + static_cast<std::size_t>(std::countr_zero(flagged)) * kRecordSubBlock;
      if (s0 >= b1) break;
      RecordValueByValue<kSlack>(p, fg, exact, slack, out, s0, std::min(b1, s0 + kRecordSubBlock),
                                 has_reference, ask, t);
    }
  }
}

// Below this many values a node's outputs are rounded on the calling thread.
constexpr std::size_t kParallelRoundMin = std::size_t{1} << 15;

int RoundChunks(int threads, std::size_t n) {
  if (threads <= 1 || n < kParallelRoundMin) return 1;
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), n / (kParallelRoundMin / 2)));
}

}  // namespace

void NodeRounding::Rollback(const Mark& mark) {
  assert(m_recording && mark.entries <= m_log.entries.size() && mark.position <= m_position);
  m_log.entries.resize(mark.entries);
  m_position = mark.position;
  m_logged_by_slack = mark.logged_by_slack;
  m_slack_capped = mark.slack_capped;
  m_unrepaired = mark.unrepaired;
  m_reference_values = mark.reference_values;
}

void NodeRounding::SetReferenceAskForTesting(bool (*ask)(std::size_t)) { g_reference_ask.store(ask); }
void NodeRounding::SetReferencesIgnoredForTesting(bool ignored) { g_references_ignored.store(ignored); }
void NodeRounding::SetSlackObserverForTesting(void (*observe)(std::span<const double>)) {
  g_slack_observer.store(observe);
}

Status NodeRounding::Round(std::span<const double> exact, std::span<float> out, std::span<const double> slack,
                           int threads, const ReferenceFn* reference) {
  assert(exact.size() == out.size());
  assert(slack.empty() || slack.size() == exact.size());
  assert(m_spec.bits >= kMinRoundingBits && m_spec.bits <= kMaxRoundingBits);
  assert(m_spec.tau_q16 <= kMaxTauQ16);
  const int bits = m_spec.bits;
  const std::uint32_t tau = m_tau_applies ? m_spec.tau_q16 : 0;
  const std::size_t n = exact.size();
  const std::uint64_t base = m_position;
  if (g_references_ignored.load(std::memory_order_relaxed)) reference = nullptr;
  if (auto* observe = g_slack_observer.load(std::memory_order_relaxed)) observe(slack);
  // Chunks are contiguous and run in order of position, so concatenating
  // their entries keeps the log sorted; values never depend on the split.
  const int chunks = RoundChunks(threads, n);
  const auto chunk_begin = [&](std::int64_t c) { return n * static_cast<std::size_t>(c) / static_cast<std::size_t>(chunks); };

  if (m_recording) {
    if (tau == 0 && slack.empty()) {
      // w = 0: nothing is near a boundary, nothing is logged or steered.
      ParallelFor(chunks, chunks, [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t c = c0; c < c1; ++c) RoundNearestRange(exact.data(), out.data(), chunk_begin(c), chunk_begin(c + 1), bits);
      });
      m_position = base + n;
      return Status::Ok();
    }
    const RecordParams p{bits, tau, m_record_factor_log2, m_steer, base};
    // Tallies are allocated here; an entry vector growing inside a pool
    // worker may still fail, which is caught there and rethrown here
    // (RunOp turns it into "out-of-memory").
    std::vector<RecordTally> tallies(static_cast<std::size_t>(chunks));
    std::vector<char> failed(static_cast<std::size_t>(chunks), 0);
    ParallelFor(chunks, chunks, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) {
        try {
          if (slack.empty()) {
            RecordRange<false>(p, exact.data(), nullptr, out.data(), chunk_begin(c), chunk_begin(c + 1),
                               reference != nullptr, tallies[c]);
          } else {
            RecordRange<true>(p, exact.data(), slack.data(), out.data(), chunk_begin(c), chunk_begin(c + 1),
                              reference != nullptr, tallies[c]);
          }
        } catch (...) {
          failed[static_cast<std::size_t>(c)] = 1;
        }
      }
    });
    for (char f : failed) {
      if (f != 0) throw std::bad_alloc();
    }
    const std::size_t first_entry = m_log.entries.size();
    std::vector<std::size_t> referred;
    for (RecordTally& t : tallies) {
      m_log.entries.insert(m_log.entries.end(), t.entries.begin(), t.entries.end());
      referred.insert(referred.end(), t.referred.begin(), t.referred.end());
      m_logged_by_slack += t.logged_by_slack;
      m_slack_capped += t.slack_capped;
      m_unrepaired += t.unrepaired;
    }
    if (!referred.empty()) {
      // The capped values, rounded and logged from their reference values;
      // their entries merged into position order.
      std::vector<double> ref(referred.size());
      (*reference)(referred, ref);
      RecordTally late;
      for (std::size_t k = 0; k < referred.size(); ++k) {
        const std::size_t i = referred[k];
        RecordOne(p, ref[k], slack.empty() ? nullptr : slack.data() + i, i, out.data() + i, late);
      }
      const std::size_t middle = m_log.entries.size();
      m_log.entries.insert(m_log.entries.end(), late.entries.begin(), late.entries.end());
      std::inplace_merge(m_log.entries.begin() + static_cast<std::ptrdiff_t>(first_entry),
                         m_log.entries.begin() + static_cast<std::ptrdiff_t>(middle), m_log.entries.end(),
                         [](const LogEntry& x, const LogEntry& y) { return x.position < y.position; });
      m_logged_by_slack += late.logged_by_slack;
      m_reference_values += referred.size();
    }
    m_position = base + n;
    return Status::Ok();
  }

  // Replay: round everything to nearest, then apply the entries that fall in
  // this chunk of positions.
  ParallelFor(chunks, chunks, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) RoundNearestRange(exact.data(), out.data(), chunk_begin(c), chunk_begin(c + 1), bits);
  });
  const std::uint64_t end = base + n;
  const auto& entries = m_log.entries;
  while (m_cursor < entries.size() && entries[m_cursor].position < end) {
    const LogEntry& entry = entries[m_cursor];
    // (A position below this chunk can only follow an unsorted entry that
    // ReplaySkippingInvalid skipped.)
    if ((m_cursor > 0 && entry.position <= entries[m_cursor - 1].position) || entry.position < base) {
      if (m_skip_invalid) {
        ++m_skipped;
        ++m_cursor;
        continue;
      }
      return Status::Invalid("log-entries-unsorted",
                             "log positions must strictly increase (at entry " + std::to_string(m_cursor) + ")");
    }
    const std::size_t i = static_cast<std::size_t>(entry.position - base);
    const Result<float> logged = ApplyLogEntry(exact[i], bits, tau, slack.empty() ? 0.0 : slack[i], entry.up);
    if (!logged.ok()) {
      if (m_skip_invalid) {
        ++m_skipped;
        ++m_cursor;
        continue;
      }
      return logged.status().WithContext("logged position " + std::to_string(entry.position));
    }
    out[i] = *logged;
    ++m_cursor;
  }
  m_position = end;
  return Status::Ok();
}

Result<float> ApplyLogEntry(double ref, int bits, std::uint32_t tau_q16, double slack, bool up) {
  const hd::GridPos g = hd::Locate(ref, bits);
  if (!hd::AcceptsEntry(g, tau_q16, slack, up)) {
    // The numbers that decide it, so a rejected honest entry (the "honest
    // limit" at the u/4 cap, docs/kernels.md) can be told from a forged one.
    char detail[160];
    std::snprintf(detail, sizeof detail, " (reference %.17g, beta %.3g%s, direction %s)", ref, slack,
                  hd::SlackCapped(g, slack) ? " at the u/4 cap" : "", up ? "up" : "down");
    return Status::Invalid(
        "log-entry-outside-region",
        std::string("the acceptance rule rejects its direction at the reference value") + detail);
  }
  return hd::FloatFromBits(hd::NeighbourBits(g, hd::UpToAway(g, up)));
}

Status NodeRounding::Finish() const {
  if (!m_recording && !m_skip_invalid && m_cursor < m_log.entries.size()) {
    return Status::Invalid("log-entry-out-of-range",
                           std::to_string(m_log.entries.size() - m_cursor) +
                               " log entries lie past the node's " + std::to_string(m_position) + " outputs");
  }
  return Status::Ok();
}

// ---- codec ---------------------------------------------------------------------------
namespace {

// A decoded payload larger than this is refused before decompressing.
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 30;

}  // namespace

Bytes RoundingLogPayload(const RoundingLog& log) {
  Writer w;
  w.PutVarint(log.entries.size());
  std::uint64_t prev = 0;
  for (std::size_t i = 0; i < log.entries.size(); ++i) {
    const LogEntry& e = log.entries[i];
    assert(e.position <= kMaxLogPosition);
    assert(i == 0 || e.position > prev);
    const std::uint64_t delta = i == 0 ? e.position : e.position - prev;
    w.PutVarint((delta << 1) | (e.up ? 1u : 0u));
    prev = e.position;
  }
  return std::move(w).Take();
}

Result<RoundingLog> ParseRoundingLogPayload(ByteSpan payload) {
  Reader r(payload);
  VT_ASSIGN_OR_RETURN(const std::uint64_t count, r.GetVarint());
  // Every entry takes at least one byte.
  if (count > r.remaining()) {
    return Status::Invalid("enc-truncated", "entry count exceeds the remaining bytes");
  }
  RoundingLog log;
  log.entries.reserve(static_cast<std::size_t>(count));
  std::uint64_t prev = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    VT_ASSIGN_OR_RETURN(const std::uint64_t v, r.GetVarint());
    const std::uint64_t delta = v >> 1;
    if (i > 0 && delta == 0) {
      return Status::Invalid("rounding-log-not-increasing", "log positions must strictly increase");
    }
    if (delta > kMaxLogPosition || (i > 0 && prev > kMaxLogPosition - delta)) {
      return Status::Invalid("rounding-log-position-overflow", "log position above 2^62 - 1");
    }
    const std::uint64_t position = i == 0 ? delta : prev + delta;
    log.entries.push_back(LogEntry{position, (v & 1) != 0});
    prev = position;
  }
  VT_TRY(r.Finish());
  return log;
}

Bytes EncodeRoundingLog(const RoundingLog& log) {
  const Bytes payload = RoundingLogPayload(log);
  Bytes out(ZSTD_compressBound(payload.size()));
  // Level 3 (zstd's default); the compressed bytes are transport only — the
  // hash and the meaning are those of the payload.
  const std::size_t n = ZSTD_compress(out.data(), out.size(), payload.data(), payload.size(), 3);
  assert(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

Result<std::uint64_t> RoundingLogPayloadSize(ByteSpan bytes) {
  const std::size_t frame = ZSTD_findFrameCompressedSize(bytes.data(), bytes.size());
  if (ZSTD_isError(frame)) return Status::Invalid("rounding-log-bad-compression", "not a zstd frame");
  if (frame != bytes.size()) {
    return Status::Invalid("rounding-log-trailing-bytes", "bytes after the zstd frame");
  }
  const unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::Invalid("rounding-log-bad-compression", "zstd frame without a content size");
  }
  if (size > kMaxPayloadBytes) return Status::Invalid("rounding-log-too-large", "payload above 1 GiB");
  return static_cast<std::uint64_t>(size);
}

Result<RoundingLog> DecodeRoundingLog(ByteSpan bytes) {
  VT_ASSIGN_OR_RETURN(const std::uint64_t size, RoundingLogPayloadSize(bytes));
  Bytes payload(static_cast<std::size_t>(size));
  const std::size_t n = ZSTD_decompress(payload.data(), payload.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n) || n != payload.size()) {
    return Status::Invalid("rounding-log-bad-compression", "zstd frame does not decompress");
  }
  return ParseRoundingLogPayload(payload);
}

}  // namespace vt::kernels
