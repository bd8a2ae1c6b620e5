#pragma once
// Adaptive τ for rounded mode (DESIGN.md "Determinism modes").
//
// Replay of a rounded-mode log is exact when, for every value, the fp64
// results of trainer and replayer differ by less than τ b-bit ulps. So τ must
// exceed the divergence between execution configurations that honest parties
// may use. Calibration measures it: run an operator's fp64 computation under
// several configurations (thread counts in this process; OpenBLAS core types
// in child processes, see kernels/tools/vt_calibrate.cpp), take the largest
// divergence in b-bit ulps over all elements, and set
//   τ = margin × max divergence, at least `floor`, at most kMaxTauQ16,
// rounded up to the Q16 grid. The result is data — a TauTable from op keys to
// tau_q16 — that a job carries, so every party uses the same τ.
//
// Honest limits: the divergence is measured on synthetic inputs of the
// operator's shape and on the configurations available here; the margin
// stands for what was not measured (other data, other CPUs). Where inputs make
// fp64 results cancel to near zero, divergences in ulps can be large; the
// calibration then reports "tau-above-cap" rather than a τ that would not
// hold.

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
  std::uint64_t compared = 0;   // finite pairs compared
  std::uint64_t differing = 0;  // pairs whose fp64 values differ at all
  std::uint64_t mismatched_specials = 0;  // NaN/inf in one and not the same in the other
  void Merge(const DivergenceStats& other);
};

// Element-wise divergence of `other` from `reference` (same size, asserted).
DivergenceStats MeasureDivergence(std::span<const double> reference, std::span<const double> other, int bits);

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

// τ for a measured divergence: margin × max_ulps, rounded up to Q16, at least
// the floor. Status::Invalid "tau-above-cap" when it exceeds kMaxTauQ16, or
// "calibration-specials-differ" when configurations disagree on NaN/inf.
Result<std::uint32_t> TauFromDivergence(const DivergenceStats& divergence, const CalibrationOptions& options);

// An operator's fp64 outputs (before rounding) under one configuration.
using Fp64Run = std::function<Result<std::vector<double>>(const ExecConfig& config)>;

// Runs `run` under every thread count of `options` in this process and
// compares every result with the first.
Result<Calibration> CalibrateInProcess(const Fp64Run& run, const CalibrationOptions& options);

// "matmul/512x768x2304": operator kind and the shape it was calibrated for.
std::string TauKey(std::string_view op_kind, const Shape& shape);

// Op key → tau_q16. Canonical encoding (common/encoding.h): varint count, then
// per entry string key and varint tau_q16, keys strictly increasing
// (bytewise), every tau ≤ kMaxTauQ16.
class TauTable {
 public:
  void Set(std::string key, std::uint32_t tau_q16);
  std::uint32_t Get(std::string_view key, std::uint32_t fallback) const;
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

}  // namespace vt::kernels
