#pragma once
// Rounded mode (Srivastava, Arora, Boneh, NeurIPS 2024), done in O(1) bit
// operations per value.
//
// An operator computes its outputs in fp64, then every value x is rounded to
// the b-bit grid (b = 32: plain fp32; b < 32: fp32 with the low 32−b mantissa
// bits zero) with round-to-nearest, ties to even. Let m be the midpoint
// between the two b-bit neighbours of x (the rounding boundary) and u the
// b-bit ulp there. If |x − m| < w the value is "near the boundary": the
// trainer logs (position, direction) and a replaying party, whose own x' may
// sit on the other side of m, follows the logged direction instead of
// rounding to nearest. The half-width of the region is
//   w = max(τ·u, min(β, u/4)),
// where β ≥ 0 ("slack") is an a-priori bound, supplied by the operator, on
// how far two honest fp64 evaluations of this value can differ (a vendor
// GEMM's summation order; docs/kernels.md "Error-bounded logging region"),
// and τ is a margin on top. Every replay evaluates the canonical fp64
// reference ref (ExecConfig::f64_reference) and judges each entry against it
// by one rule (hd::AcceptsEntry, kernels/rounding.cpp): the replay equals the
// trainer's rounding whenever |x − ref| < w, which β guarantees below u/4.
// Where β reaches u/4 the trainer rounds ref itself (Round's `reference`,
// RunOp's second recording), so its rounding is the replay's there too.

#include <cstddef>
#include <cstdint>
#include <functional>
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
// The payload size an encoded log declares, read from its zstd frame
// without decompressing, so a referee charges the decoding first; Decode's
// frame reasons otherwise.
Result<std::uint64_t> RoundingLogPayloadSize(ByteSpan bytes);
// A node record's log hash: the root of the log's entry tree, so one value's
// entry can be opened alone (kernels/rounding_log_tree.h, which defines it).
Hash256 HashRoundingLog(const RoundingLog& log);
// The canonical uncompressed payload (varint count, then per entry the varint
// (delta << 1 | up)) and its strict parser; Encode/Decode wrap them in zstd.
Bytes RoundingLogPayload(const RoundingLog& log);
Result<RoundingLog> ParseRoundingLogPayload(ByteSpan payload);

// Round one fp64 value to the b-bit grid to nearest (ties to even).
// NaN → canonical quiet NaN; ±inf stay; overflow follows IEEE round-to-nearest.
float RoundToBits(double x, int bits);

// The one rule for a logged value (a replay's, the arbiter's, the element
// level's): the b-bit neighbour that the entry (`up`) names at the canonical
// reference `ref`, where the acceptance rule (hd::AcceptsEntry) accepts it —
// w from `tau_q16` (0 where τ does not apply) and β = `slack`. Invalid
// "log-entry-outside-region" otherwise. An unlogged value is
// RoundToBits(ref, bits).
Result<float> ApplyLogEntry(double ref, int bits, std::uint32_t tau_q16, double slack, bool up);

// Everything rounded mode knows about one value (for tests, calibration and
// tools; NodeRounding uses the same arithmetic inline).
struct RoundingRegion {
  float nearest = 0;               // RoundToBits(x, bits)
  float down = 0, up = 0;          // the grid neighbours toward -inf / +inf
  bool has_boundary = false;       // false for NaN, ±inf, |x| ≥ 2^128
  bool nearest_is_up = false;      // the direction a trainer would log
  bool near_boundary = false;      // |x − m| < w: logged when recording
  // With x the canonical reference: an entry naming `nearest` is accepted
  // iff |x − m| < 2w; one naming the other neighbour iff near_boundary.
  bool within_replay_window = false;  // |x − m| < 2w
};
// w = max(τ·u, min(slack, u/4)); slack = 0: w = τ·u.
RoundingRegion ClassifyRounding(double x, const RoundingSpec& spec, double slack = 0.0);

// The canonical reference values of an operator's outputs at `positions`
// (increasing, within one Round call's span): values[k] is output
// positions[k]'s (NodeRounding::Round). One call per Round, on the calling
// thread, so it may use threads itself and evaluate the values together.
using ReferenceFn = std::function<void(std::span<const std::size_t> positions, std::span<double> values)>;

// The rounding state of one node in rounded mode: records decisions (trainer)
// or follows a given log (replayer, referee).
class NodeRounding {
 public:
  static NodeRounding Record(const RoundingSpec& spec);
  static NodeRounding Replay(const RoundingSpec& spec, RoundingLog log);
  // A replay that never fails on the log: entries a strict replay rejects
  // (refused by the acceptance rule, unsorted, past the node's outputs) are
  // skipped — those values round to nearest — and counted. This is how an
  // honest challenger follows a solver's logs to the end of a run; the
  // referee rejects exactly the same entries when it arbitrates the node
  // (both evaluate the canonical reference and call hd::AcceptsEntry).
  static NodeRounding ReplaySkippingInvalid(const RoundingSpec& spec, RoundingLog log);
  // Records (nearest direction) every value within 4w of its boundary. The
  // arbiter accepts no entry at a reference value 2w or more from it, and
  // an honest evaluation lies within w of the reference: outside these
  // positions every entry is rejected. For tests and adversaries that need
  // a position the arbiter rejects.
  static NodeRounding RecordReplayWindow(const RoundingSpec& spec);
  // TEST ONLY (the steer-log adversary, the residual-freedom measurement):
  // records like Record, but takes and logs the NON-nearest neighbour of
  // every value within w of its boundary — every value where the acceptance
  // rule, judging at this value as the reference, lets a cheater choose.
  static NodeRounding RecordSteered(const RoundingSpec& spec);

  // Round `exact` into `out` (same size), continuing this node's position
  // counter. `slack` is empty (β = 0 for every value: outputs of our own
  // fixed-order fp64 loops) or holds β_i ≥ 0 per value (same size). Replay
  // fails with Status::Invalid
  //   "log-entry-outside-region"  the acceptance rule (hd::AcceptsEntry) rejects
  //                               the entry at this position's value (the
  //                               canonical reference when replaying): NaN/inf,
  //                               2w or more from its boundary, or the
  //                               non-nearest direction w or more from it;
  //   "log-entries-unsorted"      positions not strictly increasing;
  // and Finish() with "log-entry-out-of-range" when entries remain past the
  // node's outputs. Recording never fails. `threads` > 1 rounds large
  // outputs in contiguous chunks in parallel (kernels/parallel.h); the
  // values and the log do not depend on it.
  //
  // `reference` (recording only; may be null): the canonical reference
  // values of this call's outputs — what every replay evaluates there
  // (kernels/ops/op_util.h Outputs::SetReference). The values past what an
  // entry repairs (hd::SlackCapped) are then rounded and logged from the
  // reference instead of `exact`, all asked for in one call after the fast
  // pass; without one they are counted by unrepaired_capped() and RunOp
  // records the node again on the reference.
  Status Round(std::span<const double> exact, std::span<float> out, std::span<const double> slack = {},
               int threads = 1, const ReferenceFn* reference = nullptr);
  // TEST ONLY: where a reference function is given, also round and log
  // from it every value i (its index in the Round call) for which ask(i)
  // holds, capped or not — so a test can check that an operator's
  // reference function is the reference run at any set of positions.
  // nullptr: off.
  static void SetReferenceAskForTesting(bool (*ask)(std::size_t i));
  // TEST ONLY: Round ignores every reference function, as for an operator
  // without one (RunOp then records a node with capped values again).
  static void SetReferencesIgnoredForTesting(bool ignored);
  // TEST ONLY: `observe` is shown every Round call's β (empty: β = 0), on
  // the calling thread, before rounding — so a test can hold β itself to
  // not depend on how an operator split its work: the log shows β only where
  // it widens a region past τ·u, which small cases rarely reach. nullptr: off.
  static void SetSlackObserverForTesting(void (*observe)(std::span<const double> slack));

  // Whether τ applies to the values rounded from now on (default: yes).
  // RunOp turns it off for operators whose fp64 result is bit-identical on
  // every IEEE-754 machine (OpFp64IsExact, kernels/ops/registry.h): there the
  // region is w = β = 0, so exact ties and near-ties are not logged.
  void SetTauApplies(bool applies) { m_tau_applies = applies; }
  Status Finish() const;

  bool recording() const { return m_recording; }
  const RoundingLog& log() const { return m_log; }
  std::uint64_t values_rounded() const { return m_position; }
  std::uint64_t skipped_entries() const { return m_skipped; }  // ReplaySkippingInvalid only
  // Recording: entries logged only because of β (τ·u alone would not have).
  std::uint64_t logged_by_slack() const { return m_logged_by_slack; }
  // Recording: values whose β is past what a direction can repair
  // (hd::SlackCapped: β reached the u/4 cap — catastrophic cancellation —
  // or a NaN/±inf/overflowing value with β > 0; docs/kernels.md "The honest
  // limit, and how the trainer passes it"), counted at the trainer's own
  // value. Such a value is rounded from the reference function where Round
  // has one (reference_values), else left to RunOp (unrepaired_capped).
  std::uint64_t slack_capped() const { return m_slack_capped; }

  // Recording: the capped values rounded from the trainer's own value, no
  // reference function given (RunOp then records the node again).
  std::uint64_t unrepaired_capped() const { return m_unrepaired; }
  // Recording: values rounded from a reference function.
  std::uint64_t reference_values() const { return m_reference_values; }

  // Recording: the state after the values rounded so far, and a return to
  // it (RunOp's second recording of a node discards the first).
  struct Mark {
    std::size_t entries = 0;
    std::uint64_t position = 0, logged_by_slack = 0, slack_capped = 0, unrepaired = 0, reference_values = 0;
  };
  Mark mark() const {
    return {m_log.entries.size(), m_position,   m_logged_by_slack,
            m_slack_capped,       m_unrepaired, m_reference_values};
  }
  void Rollback(const Mark& mark);
  // Recording: how many times RunOp recorded this node again on the
  // canonical reference (0 or 1 per node).
  std::uint64_t reference_records() const { return m_reference_records; }
  void CountReferenceRecord() { ++m_reference_records; }

 private:
  NodeRounding(const RoundingSpec& spec, bool recording, RoundingLog log, int factor_log2 = 0)
      : m_spec(spec), m_recording(recording), m_log(std::move(log)), m_record_factor_log2(factor_log2) {}

  RoundingSpec m_spec;
  bool m_recording = true;
  RoundingLog m_log;
  std::size_t m_cursor = 0;       // next log entry to apply (replay)
  std::uint64_t m_position = 0;   // values rounded so far in this node
  bool m_skip_invalid = false;
  std::uint64_t m_skipped = 0;
  std::uint64_t m_logged_by_slack = 0;
  std::uint64_t m_slack_capped = 0;
  std::uint64_t m_reference_records = 0;
  std::uint64_t m_unrepaired = 0;
  std::uint64_t m_reference_values = 0;
  int m_record_factor_log2 = 0;  // 2: RecordReplayWindow
  bool m_tau_applies = true;
  bool m_steer = false;  // RecordSteered
};

}  // namespace vt::kernels
