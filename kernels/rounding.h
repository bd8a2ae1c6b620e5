#pragma once
// Rounded mode (Srivastava, Arora, Boneh, NeurIPS 2024), done in O(1) bit
// operations per value.
//
// An operator computes its outputs in fp64, then every value x is rounded to
// the b-bit grid (b = 32: plain fp32; b < 32: fp32 with the low 32−b mantissa
// bits zero) with round-to-nearest, ties to even. Let m be the midpoint
// between the two b-bit neighbours of x (the rounding boundary) and u the
// b-bit ulp there. If |x − m| < τ·u the value is "near the boundary": the
// trainer logs (position, direction) and a replaying party, whose own x' may
// sit on the other side of m, follows the logged direction instead of
// rounding to nearest. Replay is exact whenever |x − x'| < τ·u.

#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/mode.h"

namespace vt::kernels {

// Positions are below 2^62 (a node never has more outputs).
inline constexpr std::uint64_t kMaxLogPosition = (std::uint64_t{1} << 62) - 1;

// One logged rounding decision. `position` indexes the node's outputs
// concatenated in order; `up` = took the upper (toward +inf) neighbour.
struct LogEntry {
  std::uint64_t position = 0;
  bool up = false;
  bool operator==(const LogEntry&) const = default;
};

// The log of one node (operator invocation): entries by increasing position.
struct RoundingLog {
  std::vector<LogEntry> entries;
  bool operator==(const RoundingLog&) const = default;
};

// Compact byte form: delta-encoded varints, zstd-compressed (docs/formats.md).
Bytes EncodeRoundingLog(const RoundingLog& log);
Result<RoundingLog> DecodeRoundingLog(ByteSpan bytes);
// Hash over the canonical (uncompressed) payload, so it does not depend on
// the zstd version: TaggedHash("veritrain/rounding-log/v1", payload).
Hash256 HashRoundingLog(const RoundingLog& log);
// The canonical uncompressed payload (varint count, then per entry the varint
// (delta << 1 | up)) and its strict parser; Encode/Decode wrap them in zstd.
Bytes RoundingLogPayload(const RoundingLog& log);
Result<RoundingLog> ParseRoundingLogPayload(ByteSpan payload);

// Round one fp64 value to the b-bit grid to nearest (ties to even).
// NaN → canonical quiet NaN; ±inf stay; overflow follows IEEE round-to-nearest.
float RoundToBits(double x, int bits);

// Everything rounded mode knows about one value (for tests, calibration and
// tools; NodeRounding uses the same arithmetic inline).
struct RoundingRegion {
  float nearest = 0;               // RoundToBits(x, bits)
  float down = 0, up = 0;          // the grid neighbours toward -inf / +inf
  bool has_boundary = false;       // false for NaN, ±inf, |x| ≥ 2^128
  bool nearest_is_up = false;      // the direction a trainer would log
  bool near_boundary = false;      // |x − m| < τ·u: logged when recording
  bool within_replay_window = false;  // |x − m| < 4τ·u: a logged entry is accepted
};
RoundingRegion ClassifyRounding(double x, const RoundingSpec& spec);

// The rounding state of one node in rounded mode: records decisions (trainer)
// or follows a given log (replayer, referee).
class NodeRounding {
 public:
  static NodeRounding Record(const RoundingSpec& spec);
  static NodeRounding Replay(const RoundingSpec& spec, RoundingLog log);
  // A replay that never fails on the log: entries a strict replay rejects
  // (outside the window, unsorted, past the node's outputs) are skipped —
  // those values round to nearest — and counted. This is how an honest
  // challenger follows a solver's logs to the end of a run; the referee
  // rejects the same entries when it arbitrates the node.
  static NodeRounding ReplaySkippingInvalid(const RoundingSpec& spec, RoundingLog log);

  // Round `exact` into `out` (same size), continuing this node's position
  // counter. Replay fails with Status::Invalid
  //   "log-entry-outside-region"  a logged position's own value is not within
  //                               4τ·u of its rounding boundary (or is NaN/inf):
  //                               "far" = outside that window (rounding.cpp);
  //   "log-entries-unsorted"      positions not strictly increasing;
  // and Finish() with "log-entry-out-of-range" when entries remain past the
  // node's outputs. Recording never fails.
  Status Round(std::span<const double> exact, std::span<float> out);
  Status Finish() const;

  bool recording() const { return m_recording; }
  const RoundingLog& log() const { return m_log; }
  std::uint64_t values_rounded() const { return m_position; }
  std::uint64_t skipped_entries() const { return m_skipped; }  // ReplaySkippingInvalid only

 private:
  NodeRounding(const RoundingSpec& spec, bool recording, RoundingLog log)
      : m_spec(spec), m_recording(recording), m_log(std::move(log)) {}

  RoundingSpec m_spec;
  bool m_recording = true;
  RoundingLog m_log;
  std::size_t m_cursor = 0;       // next log entry to apply (replay)
  std::uint64_t m_position = 0;   // values rounded so far in this node
  bool m_skip_invalid = false;
  std::uint64_t m_skipped = 0;
};

}  // namespace vt::kernels
