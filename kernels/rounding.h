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
Hash256 HashRoundingLog(const RoundingLog& log);

// Round one fp64 value to the b-bit grid to nearest (ties to even).
// NaN → canonical quiet NaN; ±inf stay; overflow follows IEEE round-to-nearest.
float RoundToBits(double x, int bits);

// The rounding state of one node in rounded mode: records decisions (trainer)
// or follows a given log (replayer, referee).
class NodeRounding {
 public:
  static NodeRounding Record(const RoundingSpec& spec);
  static NodeRounding Replay(const RoundingSpec& spec, RoundingLog log);

  // Round `exact` into `out` (same size), continuing this node's position
  // counter. Replay fails (Status::Invalid "log-entry-outside-region") when a
  // logged position's value lies far outside the logging region, and
  // ("log-entry-out-of-range") when entries remain past the node's outputs
  // at Finish().
  Status Round(std::span<const double> exact, std::span<float> out);
  Status Finish() const;

  bool recording() const { return m_recording; }
  const RoundingLog& log() const { return m_log; }
  std::uint64_t values_rounded() const { return m_position; }

 private:
  NodeRounding(const RoundingSpec& spec, bool recording, RoundingLog log)
      : m_spec(spec), m_recording(recording), m_log(std::move(log)) {}

  RoundingSpec m_spec;
  bool m_recording = true;
  RoundingLog m_log;
  std::size_t m_cursor = 0;       // next log entry to apply (replay)
  std::uint64_t m_position = 0;   // values rounded so far in this node
};

}  // namespace vt::kernels
