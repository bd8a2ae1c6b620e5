#include "kernels/calibration.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "kernels/arith_hd.h"
#include "kernels/rounding.h"

namespace vt::kernels {

void DivergenceStats::Merge(const DivergenceStats& other) {
  max_ulps = std::max(max_ulps, other.max_ulps);
  max_excess_ulps = std::max(max_excess_ulps, other.max_excess_ulps);
  beyond_slack += other.beyond_slack;
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

DivergenceStats MeasureDivergence(std::span<const double> reference, std::span<const double> other, int bits,
                                  std::span<const double> slack) {
  assert(reference.size() == other.size());
  assert(slack.empty() || slack.size() == reference.size());
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
    const double d = std::fabs(x - y), u = UlpAt(x, bits);
    s.max_ulps = std::max(s.max_ulps, d / u);
    const double beta = slack.empty() ? 0.0 : slack[i];
    if (d > beta) {
      if (!slack.empty()) ++s.beyond_slack;
      s.max_excess_ulps = std::max(s.max_excess_ulps, (d - beta) / u);
    }
  }
  return s;
}

Result<std::uint32_t> TauFromDivergence(const DivergenceStats& divergence, const CalibrationOptions& options) {
  if (divergence.mismatched_specials != 0) {
    return Status::Invalid("calibration-specials-differ", "configurations disagree on NaN/inf outputs");
  }
  const double tau_q16 = std::ceil(options.margin * divergence.max_excess_ulps * 65536.0);
  if (!(tau_q16 <= static_cast<double>(kMaxTauQ16))) {
    return Status::Invalid("tau-above-cap", "margin x divergence (" + std::to_string(tau_q16 / 65536.0) +
                                                " ulp) exceeds the 1/4 ulp cap");
  }
  return std::max(options.floor_q16, static_cast<std::uint32_t>(tau_q16));
}

Result<Calibration> CalibrateInProcess(const Fp64Run& run, const CalibrationOptions& options,
                                       std::span<const double> slack) {
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
    if (!slack.empty() && slack.size() != values.size()) return Status::Error("calibration-size-changed");
    out.divergence.Merge(MeasureDivergence(reference, values, options.bits, slack));
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

std::string TauKeyForInputs(std::string_view op_name, std::span<const Shape> input_shapes) {
  std::string key(op_name);
  key += '/';
  for (std::size_t k = 0; k < input_shapes.size(); ++k) {
    if (k != 0) key += ',';
    for (std::size_t i = 0; i < input_shapes[k].size(); ++i) {
      if (i != 0) key += 'x';
      key += std::to_string(input_shapes[k][i]);
    }
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

Status ValidateJobTauTable(const TauTable& table) {
  const auto bad = [](std::string detail) { return Status::Invalid("job-bad-tau-table", std::move(detail)); };
  const std::uint32_t fallback = table.DefaultTau();
  for (const auto& [key, tau] : table.entries()) {
    if (tau > kMaxTauQ16) return bad("tau-out-of-range: " + key);
    if (key == kTauDefaultKey) {
      if (tau == kDefaultTauQ16) return bad("the \"*\" entry repeats the built-in default tau");
    } else if (tau == fallback) {
      return bad("entry " + key + " repeats the table's default tau");
    }
  }
  return Status::Ok();
}

Bytes EncodeJobTauTable(const TauTable& table) {
  if (table.entries().empty()) return {};
  return EncodeToBytes(table);
}

Result<TauTable> DecodeJobTauTable(ByteSpan bytes) {
  if (bytes.empty()) return TauTable{};
  auto table = DecodeExact<TauTable>(bytes);
  if (!table.ok()) return Status::Invalid("job-bad-tau-table", table.status().ToString());
  if (table->entries().empty())
    return Status::Invalid("job-bad-tau-table", "an empty table is written as no bytes");
  VT_TRY(ValidateJobTauTable(*table));
  return table;
}

}  // namespace vt::kernels
