#include "kernels/calibration.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/arith_hd.h"
#include "kernels/rounding.h"

namespace vt::kernels {

void DivergenceStats::Merge(const DivergenceStats& other) {
  max_ulps = std::max(max_ulps, other.max_ulps);
  compared += other.compared;
  differing += other.differing;
  mismatched_specials += other.mismatched_specials;
}

namespace {

// The b-bit ulp of the grid interval containing |x| (finite |x| < 2^128).
double UlpAt(double x, int bits) {
  const hd::GridPos g = hd::Locate(x, bits);
  const double lo = static_cast<double>(hd::FloatFromBits(g.lo_bits));
  const std::uint32_t hi_bits = g.lo_bits + (std::uint32_t{1} << g.step_shift);
  // The step past the largest finite value ends at 2^128.
  const double hi = hi_bits == hd::kInfBits ? 0x1p128 : static_cast<double>(hd::FloatFromBits(hi_bits));
  return hi - lo;
}

}  // namespace

DivergenceStats MeasureDivergence(std::span<const double> reference, std::span<const double> other, int bits) {
  assert(reference.size() == other.size());
  DivergenceStats s;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double x = reference[i], y = other[i];
    const bool x_finite = std::isfinite(x) && std::fabs(x) < 0x1p128;
    const bool y_finite = std::isfinite(y) && std::fabs(y) < 0x1p128;
    if (!x_finite || !y_finite) {
      const bool same = (std::isnan(x) && std::isnan(y)) || x == y ||
                        (!x_finite && !y_finite && !std::isnan(x) && !std::isnan(y) &&
                         std::signbit(x) == std::signbit(y));
      if (!same) ++s.mismatched_specials;
      continue;
    }
    ++s.compared;
    if (x == y) continue;
    ++s.differing;
    s.max_ulps = std::max(s.max_ulps, std::fabs(x - y) / UlpAt(x, bits));
  }
  return s;
}

Result<std::uint32_t> TauFromDivergence(const DivergenceStats& divergence, const CalibrationOptions& options) {
  if (divergence.mismatched_specials != 0) {
    return Status::Invalid("calibration-specials-differ", "configurations disagree on NaN/inf outputs");
  }
  const double tau_q16 = std::ceil(options.margin * divergence.max_ulps * 65536.0);
  if (!(tau_q16 <= static_cast<double>(kMaxTauQ16))) {
    return Status::Invalid("tau-above-cap", "margin x divergence (" + std::to_string(tau_q16 / 65536.0) +
                                                " ulp) exceeds the 1/4 ulp cap");
  }
  return std::max(options.floor_q16, static_cast<std::uint32_t>(tau_q16));
}

Result<Calibration> CalibrateInProcess(const Fp64Run& run, const CalibrationOptions& options) {
  if (options.thread_counts.empty()) return Status::Error("calibration-no-configs");
  Calibration out;
  std::vector<double> reference;
  for (std::size_t i = 0; i < options.thread_counts.size(); ++i) {
    ExecConfig config;
    config.mode = Mode::kRounded;
    config.threads = options.thread_counts[i];
    config.rounding.bits = options.bits;
    VT_ASSIGN_OR_RETURN(std::vector<double> values, run(config));
    if (i == 0) {
      reference = std::move(values);
      continue;
    }
    if (values.size() != reference.size()) return Status::Error("calibration-size-changed");
    out.divergence.Merge(MeasureDivergence(reference, values, options.bits));
  }
  VT_ASSIGN_OR_RETURN(out.tau_q16, TauFromDivergence(out.divergence, options));
  return out;
}

std::string TauKey(std::string_view op_kind, const Shape& shape) {
  std::string key(op_kind);
  key += '/';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) key += 'x';
    key += std::to_string(shape[i]);
  }
  return key;
}

void TauTable::Set(std::string key, std::uint32_t tau_q16) {
  assert(tau_q16 <= kMaxTauQ16);
  m_entries[std::move(key)] = tau_q16;
}

std::uint32_t TauTable::Get(std::string_view key, std::uint32_t fallback) const {
  const auto it = m_entries.find(key);
  return it == m_entries.end() ? fallback : it->second;
}

void Encode(Writer& w, const TauTable& table) {
  w.PutVarint(table.entries().size());
  for (const auto& [key, tau] : table.entries()) {
    w.PutString(key);
    w.PutVarint(tau);
  }
}

Result<TauTable> Decode(Reader& r, DecodeAs<TauTable>) {
  constexpr std::size_t kMaxKeyBytes = 256;
  VT_ASSIGN_OR_RETURN(const std::uint64_t count, r.GetVarint());
  if (count > r.remaining()) return Status::Invalid("enc-truncated", "entry count exceeds the input");
  TauTable table;
  std::string prev;
  for (std::uint64_t i = 0; i < count; ++i) {
    VT_ASSIGN_OR_RETURN(std::string key, r.GetString(kMaxKeyBytes));
    VT_ASSIGN_OR_RETURN(const std::uint64_t tau, r.GetVarint());
    if (i > 0 && !(prev < key)) return Status::Invalid("tau-table-unsorted", "keys must strictly increase");
    if (tau > kMaxTauQ16) return Status::Invalid("tau-out-of-range", "tau_q16 above 16384");
    prev = key;
    table.Set(std::move(key), static_cast<std::uint32_t>(tau));
  }
  return table;
}

}  // namespace vt::kernels
