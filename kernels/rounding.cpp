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

#include <cassert>
#include <string>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "kernels/arith_hd.h"

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

Status NodeRounding::Round(std::span<const double> exact, std::span<float> out,
                           std::span<const double> slack) {
  assert(exact.size() == out.size());
  assert(slack.empty() || slack.size() == exact.size());
  assert(m_spec.bits >= kMinRoundingBits && m_spec.bits <= kMaxRoundingBits);
  assert(m_spec.tau_q16 <= kMaxTauQ16);
  const int bits = m_spec.bits;
  const std::uint32_t tau = m_tau_applies ? m_spec.tau_q16 : 0;
  const std::size_t n = exact.size();
  const std::uint64_t base = m_position;

  if (m_recording) {
    for (std::size_t i = 0; i < n; ++i) {
      const hd::GridPos g = hd::Locate(exact[i], bits);
      if (g.special != 0) {
        out[i] = hd::FloatFromBits(hd::SpecialBits(g));
        continue;
      }
      const bool nearest = hd::NearestIsAway(g);
      const int f = m_record_factor_log2;
      const double s = slack.empty() ? 0.0 : slack[i];
      const bool near = slack.empty() ? tau != 0 && hd::WithinTau(g, tau, f) : hd::WithinRegion(g, tau, s, f);
      // Steering (test only) takes the other neighbour wherever the rule
      // accepts it at this value: within w of the boundary.
      const bool away = m_steer && near ? !nearest : nearest;
      out[i] = hd::FloatFromBits(hd::NeighbourBits(g, away));
      if (near) {
        m_log.entries.push_back(LogEntry{base + i, hd::AwayToUp(g, away)});
        if (!slack.empty() && !hd::WithinTau(g, tau, f)) ++m_logged_by_slack;
      }
      if (!slack.empty() && hd::SlackCapped(g, s)) ++m_slack_capped;
    }
    m_position = base + n;
    return Status::Ok();
  }

  // Replay: round everything to nearest, then apply the entries that fall in
  // this chunk of positions.
  for (std::size_t i = 0; i < n; ++i) out[i] = hd::FloatFromBits(hd::RoundToBitsPattern(exact[i], bits));
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
    const hd::GridPos g = hd::Locate(exact[i], bits);
    const double s = slack.empty() ? 0.0 : slack[i];
    if (!hd::AcceptsEntry(g, tau, s, entry.up)) {
      if (m_skip_invalid) {
        ++m_skipped;
        ++m_cursor;
        continue;
      }
      return Status::Invalid("log-entry-outside-region",
                             "logged position " + std::to_string(entry.position) +
                                 ": the acceptance rule rejects its direction at the reference value");
    }
    out[i] = hd::FloatFromBits(hd::NeighbourBits(g, hd::UpToAway(g, entry.up)));
    ++m_cursor;
  }
  m_position = end;
  return Status::Ok();
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

Result<RoundingLog> DecodeRoundingLog(ByteSpan bytes) {
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
  Bytes payload(static_cast<std::size_t>(size));
  const std::size_t n = ZSTD_decompress(payload.data(), payload.size(), bytes.data(), bytes.size());
  if (ZSTD_isError(n) || n != payload.size()) {
    return Status::Invalid("rounding-log-bad-compression", "zstd frame does not decompress");
  }
  return ParseRoundingLogPayload(payload);
}

Hash256 HashRoundingLog(const RoundingLog& log) {
  static const crypto::TaggedHasher hasher(crypto::tags::kRoundingLog);
  return hasher.Hash(ByteSpan(RoundingLogPayload(log)));
}

}  // namespace vt::kernels
