#pragma once
// Adaptive τ for rounded mode (docs/kernels.md, "Rounded mode: the
// error-bounded logging region").
//
// Replay of a rounded-mode log is exact when, for every value, the fp64
// results of trainer and replayer differ by at most the half-width of its
// logging region, w = max(τ·u, β) (kernels/rounding.h), where β is the
// operator's a-priori error bound (vendor GEMMs) and τ covers the rest. So τ
// must exceed the divergence between execution configurations that β does
// not cover. Calibration measures it: run an operator's fp64 computation under
// several configurations (thread counts in this process; OpenBLAS core types
// in child processes, see kernels/tools/vt_calibrate.cpp), take over all
// elements the largest excess max(0, |x − x'| − β)/u in b-bit ulps (with no
// β: the whole divergence), and set
//   τ = margin × max excess, at least `floor` (2^-12), at most kMaxTauQ16,
// rounded up to the Q16 grid. The result is data — a TauTable from op keys to
// tau_q16 — that a job carries, so every party uses the same τ.
//
// Honest limits: the divergence is measured on synthetic inputs of the
// operator's shape and on the configurations available here; the margin
// stands for what was not measured (other data, other CPUs). Cancellation to
// near zero, which makes divergences large in ulps, is what β bounds
// rigorously; for an operator without β such inputs can give "tau-above-cap"
// rather than a τ that would not hold.

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "kernels/mode.h"
#include "kernels/tensor.h"

namespace vt::kernels {

struct DivergenceStats {
  double max_ulps = 0;          // max |x − y| / u(x), u = b-bit ulp of the interval containing x
  double max_excess_ulps = 0;   // max max(0, |x − y| − β) / u(x); = max_ulps without β
  std::uint64_t beyond_slack = 0;  // pairs with |x − y| > β (only counted when β is given)
  std::uint64_t compared = 0;   // finite pairs compared
  std::uint64_t differing = 0;  // pairs whose fp64 values differ at all
  std::uint64_t mismatched_specials = 0;  // NaN/inf in one and not the same in the other
  void Merge(const DivergenceStats& other);
};

// Element-wise divergence of `other` from `reference` (same size, asserted).
// `slack`: empty, or β per element (same size): the excess is measured beyond it.
DivergenceStats MeasureDivergence(std::span<const double> reference, std::span<const double> other, int bits,
                                  std::span<const double> slack = {});

struct CalibrationOptions {
  int bits = 32;
  std::vector<int> thread_counts = {1, 2, 4};
  double margin = 8.0;
  // Never below 2^-12 ulp: configurations not measured may differ where the
  // measured ones happened to agree.
  std::uint32_t floor_q16 = 16;
};

struct Calibration {
  DivergenceStats divergence;
  std::uint32_t tau_q16 = 0;
};

// τ for a measured divergence: margin × max_excess_ulps, rounded up to Q16,
// at least the floor. Status::Invalid "tau-above-cap" when it exceeds kMaxTauQ16, or
// "calibration-specials-differ" when configurations disagree on NaN/inf.
Result<std::uint32_t> TauFromDivergence(const DivergenceStats& divergence, const CalibrationOptions& options);

// An operator's fp64 outputs (before rounding) under one configuration.
using Fp64Run = std::function<Result<std::vector<double>>(const ExecConfig& config)>;

// Runs `run` under every thread count of `options` in this process and
// compares every result with the first (beyond `slack`, the outputs' β, if given).
Result<Calibration> CalibrateInProcess(const Fp64Run& run, const CalibrationOptions& options,
                                       std::span<const double> slack = {});

// "matmul/512x768x2304": operator kind and one shape.
std::string TauKey(std::string_view op_kind, const Shape& shape);
// The key of a graph node: operator name, '/', the shapes of its inputs in
// order, dims joined by 'x' and inputs by ',' — e.g. a matmul of [512, 768]
// by [768, 2304] is "matmul/512x768,768x2304" (what vt-calibrate writes).
std::string TauKeyForInputs(std::string_view op_name, std::span<const Shape> input_shapes);

// The key of a table's default entry: every node whose own key is absent
// uses it (and kDefaultTauQ16 when the table has no default entry).
inline constexpr std::string_view kTauDefaultKey = "*";

// Op key → tau_q16. Canonical encoding (common/encoding.h): varint count, then
// per entry string key and varint tau_q16, keys strictly increasing
// (bytewise), every tau ≤ kMaxTauQ16. ("*" sorts before every letter.)
class TauTable {
 public:
  void Set(std::string key, std::uint32_t tau_q16);
  std::uint32_t Get(std::string_view key, std::uint32_t fallback) const;
  // The default τ: the "*" entry, else kDefaultTauQ16.
  std::uint32_t DefaultTau() const { return Get(kTauDefaultKey, kDefaultTauQ16); }
  // τ of a node key: its own entry, else DefaultTau().
  std::uint32_t Lookup(std::string_view key) const { return Get(key, DefaultTau()); }
  bool Contains(std::string_view key) const { return m_entries.find(key) != m_entries.end(); }
  const std::map<std::string, std::uint32_t, std::less<>>& entries() const { return m_entries; }
  bool operator==(const TauTable&) const = default;

 private:
  std::map<std::string, std::uint32_t, std::less<>> m_entries;
};

void Encode(Writer& w, const TauTable& table);
// Invalid "tau-table-unsorted" (keys not strictly increasing), "tau-out-of-range",
// or the encoder's enc-* reasons.
Result<TauTable> Decode(Reader& r, DecodeAs<TauTable>);

// A job's tau table (protocol JobSpec::tau_table), one encoding per meaning:
// the empty table is the empty byte string (kDefaultTauQ16 everywhere);
// otherwise the canonical encoding above, with at least one entry and no
// entry equal to the table's default τ (a "*" entry equal to kDefaultTauQ16,
// or a key entry equal to DefaultTau(), says nothing and is rejected).
// Decoding is strict: Invalid "job-bad-tau-table" with the reason in the detail.
Bytes EncodeJobTauTable(const TauTable& table);
Result<TauTable> DecodeJobTauTable(ByteSpan bytes);
// The same rule for a table built in memory (e.g. from a job file).
Status ValidateJobTauTable(const TauTable& table);

}  // namespace vt::kernels
