#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/encoding.h"
#include "kernels/calibration.h"
#include "kernels/matmul.h"

namespace vt::kernels {
namespace {

TEST(CalibrationTest, DivergenceIsMeasuredInTrueBbitUlps) {
  // 1.0: the b = 32 ulp above it is 2^-23; just below 2.0 it is 2^-23 too,
  // just below 1.0 it is 2^-24 (the smaller binade).
  const double x[] = {1.0, std::nextafter(1.0, 0.0), 3.0, 0.0};
  const double y[] = {1.0 + 0x1p-30, std::nextafter(1.0, 0.0) - 0x1p-30, 3.0, 0x1p-160};
  const DivergenceStats s32 = MeasureDivergence(x, y, 32);
  EXPECT_EQ(s32.compared, 4u);
  EXPECT_EQ(s32.differing, 3u);
  // max of 2^-7 (at 1.0), 2^-6 (below 1.0) and 2^-160 / 2^-149 (at 0).
  EXPECT_DOUBLE_EQ(s32.max_ulps, 0x1p-6);
  const DivergenceStats s24 = MeasureDivergence(std::span(x, 1), std::span(y, 1), 24);
  EXPECT_DOUBLE_EQ(s24.max_ulps, 0x1p-15);  // b = 24: ulp at 1.0 is 2^-15
}

TEST(CalibrationTest, SpecialValuesMustAgree) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const double x[] = {inf, nan, 1e300, -inf};
  const double y[] = {inf, nan, 1e301, inf};
  const DivergenceStats s = MeasureDivergence(x, y, 32);
  EXPECT_EQ(s.compared, 0u);
  EXPECT_EQ(s.mismatched_specials, 1u);  // -inf vs inf; 1e300 and 1e301 both round to inf
  EXPECT_EQ(TauFromDivergence(s, {}).status().reason(), "calibration-specials-differ");
}

TEST(CalibrationTest, TauIsMarginTimesDivergenceWithFloorAndCap) {
  CalibrationOptions o;
  o.margin = 4;
  o.floor_q16 = 16;
  DivergenceStats s;
  // τ follows the divergence beyond β (max_excess_ulps; = max_ulps without β).
  s.max_ulps = 1.0;
  s.max_excess_ulps = 0x1p-10;  // 4 · 2^-10 · 65536 = 256
  EXPECT_EQ(*TauFromDivergence(s, o), 256u);
  s.max_excess_ulps = 1e-9;  // below the floor
  EXPECT_EQ(*TauFromDivergence(s, o), 16u);
  s.max_excess_ulps = 0.3 / 65536;  // 1.2 → rounds up to 2 → floor 16
  EXPECT_EQ(*TauFromDivergence(s, o), 16u);
  o.floor_q16 = 0;
  EXPECT_EQ(*TauFromDivergence(s, o), 2u);
  s.max_excess_ulps = 0.0625;  // 4 · 1/16 = 1/4: exactly the cap
  EXPECT_EQ(*TauFromDivergence(s, o), kMaxTauQ16);
  s.max_excess_ulps = 0.07;
  EXPECT_EQ(TauFromDivergence(s, o).status().reason(), "tau-above-cap");
}

TEST(CalibrationTest, InProcessCalibrationOverThreadCounts) {
  // A fake operator whose fp64 result moves by threads · 2^-40 (relative).
  const Fp64Run fake = [](const ExecConfig& config) -> Result<std::vector<double>> {
    std::vector<double> v = {1.0, 1.5, -3.0};
    for (double& x : v) x += x * static_cast<double>(config.threads - 1) * 0x1p-40;
    return v;
  };
  CalibrationOptions o;
  o.thread_counts = {1, 2, 4};
  o.margin = 2;
  o.floor_q16 = 0;
  auto cal = CalibrateInProcess(fake, o);
  ASSERT_TRUE(cal.ok());
  // Largest: x = 1.5 (ulp 2^-23) moved by 3 · 1.5 · 2^-40: 4.5 · 2^-17 ulp; −3.0 the same
  // relative to its ulp 2^-22: 9 · 2^-40 / 2^-22 = 9 · 2^-18 = 4.5 · 2^-17.
  EXPECT_DOUBLE_EQ(cal->divergence.max_ulps, 4.5 * 0x1p-17);
  EXPECT_EQ(cal->tau_q16, static_cast<std::uint32_t>(std::ceil(2 * 4.5 * 0x1p-17 * 65536)));
  EXPECT_EQ(cal->divergence.differing, 6u);

  // The real dgemm path. Thread counts can change OpenBLAS's fp64 bits (for
  // small shapes a single thread may take a different kernel), but only far
  // below an fp32 ulp; τ follows the measurement.
  const Fp64Run gemm = [](const ExecConfig& config) -> Result<std::vector<double>> {
    std::vector<double> a(96 * 200), b(200 * 80), c(96 * 80);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<double>(i));
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<double>(i) * 0.7);
    GemmF64(config, {96, 80, 200, false, false, 200, 80, 80, false}, a.data(), b.data(), c.data());
    return c;
  };
  CalibrationOptions g;
  auto real = CalibrateInProcess(gemm, g);
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(real->divergence.compared, 2u * 96 * 80);
  EXPECT_LT(real->divergence.max_ulps, 1e-3);
  EXPECT_EQ(real->tau_q16, std::max(g.floor_q16, static_cast<std::uint32_t>(std::ceil(
                                                      g.margin * real->divergence.max_ulps * 65536))));
  std::printf("[dgemm 96x200x80, threads 1/2/4] differing %llu of %llu, max %.3g ulp, tau_q16 %u\n",
              static_cast<unsigned long long>(real->divergence.differing),
              static_cast<unsigned long long>(real->divergence.compared), real->divergence.max_ulps, real->tau_q16);

  // With the GEMM's error bound β every divergence is covered: τ = the floor.
  std::vector<double> a(96 * 200), b(200 * 80), beta(96 * 80);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<double>(i));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<double>(i) * 0.7);
  GemmSlackF64({96, 80, 200, false, false, 200, 80, 80, false}, a.data(), b.data(), beta.data());
  auto bounded = CalibrateInProcess(gemm, g, beta);
  ASSERT_TRUE(bounded.ok());
  EXPECT_EQ(bounded->divergence.max_ulps, real->divergence.max_ulps);
  EXPECT_EQ(bounded->divergence.max_excess_ulps, 0.0);
  EXPECT_EQ(bounded->divergence.beyond_slack, 0u);
  EXPECT_EQ(bounded->tau_q16, g.floor_q16);
}

TEST(TauTableTest, KeysGetAndCanonicalEncoding) {
  EXPECT_EQ(TauKey("matmul", {512, 768, 2304}), "matmul/512x768x2304");
  TauTable t;
  t.Set("matmul/2x3x4", 100);
  t.Set("linear/8x8", 4096);
  EXPECT_EQ(t.Get("matmul/2x3x4", 7), 100u);
  EXPECT_EQ(t.Get("conv/1", 7), 7u);
  const Bytes bytes = EncodeToBytes(t);
  // count 2; "linear/8x8" (10 bytes) tau 4096 = 0x80 0x20; "matmul/2x3x4" (12 bytes) tau 100 = 0x64.
  EXPECT_EQ(ToHex(bytes), "020a6c696e6561722f3878388020" "0c6d61746d756c2f3278337834" "64");
  auto back = DecodeExact<TauTable>(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, t);
}

TEST(TauTableTest, NodeKeysDefaultEntryAndLookup) {
  const std::vector<Shape> shapes = {{512, 768}, {768, 2304}};
  EXPECT_EQ(TauKeyForInputs("matmul", shapes), "matmul/512x768,768x2304");
  EXPECT_EQ(TauKeyForInputs("lr_schedule", {}), "lr_schedule/");
  TauTable t;
  EXPECT_EQ(t.DefaultTau(), kDefaultTauQ16);
  EXPECT_EQ(t.Lookup("matmul/512x768,768x2304"), kDefaultTauQ16);
  t.Set("matmul/512x768,768x2304", 64);
  EXPECT_EQ(t.Lookup("matmul/512x768,768x2304"), 64u);
  EXPECT_EQ(t.Lookup("relu/4"), kDefaultTauQ16);
  t.Set(std::string(kTauDefaultKey), 32);
  EXPECT_EQ(t.Lookup("relu/4"), 32u);
  EXPECT_EQ(t.Lookup("matmul/512x768,768x2304"), 64u);
  // "*" sorts first in the canonical encoding.
  const Bytes bytes = EncodeToBytes(t);
  EXPECT_EQ(ToHex(bytes).substr(0, 8), "02012a20");
  EXPECT_EQ(DecodeExact<TauTable>(bytes).value_or(TauTable{}), t);
  // The job form: empty table ↔ no bytes; the rest strict (tests/worker/job_test.cpp).
  EXPECT_TRUE(EncodeJobTauTable(TauTable{}).empty());
  EXPECT_EQ(EncodeJobTauTable(t), bytes);
  EXPECT_EQ(DecodeJobTauTable(bytes).value_or(TauTable{}), t);
  // Golden of docs/formats.md: {"*": 4096, "matmul/512x768,768x2304": 64}.
  TauTable job;
  job.Set("*", kLegacyTauQ16);
  job.Set(TauKeyForInputs("matmul", shapes), 64);
  EXPECT_EQ(ToHex(EncodeJobTauTable(job)), "02012a8020176d61746d756c2f353132783736382c373638783233303440");
}

TEST(CalibrationTest, ExcessIsMeasuredBeyondTheErrorBound) {
  // Two values 1 ulp apart at 1.0 (u = 2^-23) with β = 0.75 ulp: excess 0.25 ulp.
  const std::vector<double> x = {1.0, 2.0}, y = {1.0 + 0x1p-23, 2.0};
  const std::vector<double> beta = {0.75 * 0x1p-23, 0.0};
  const DivergenceStats with = MeasureDivergence(x, y, 32, beta);
  EXPECT_DOUBLE_EQ(with.max_ulps, 1.0);
  EXPECT_DOUBLE_EQ(with.max_excess_ulps, 0.25);
  EXPECT_EQ(with.beyond_slack, 1u);
  const DivergenceStats without = MeasureDivergence(x, y, 32);
  EXPECT_DOUBLE_EQ(without.max_excess_ulps, 1.0);
  EXPECT_EQ(without.beyond_slack, 0u);
  // Covered entirely by β: τ falls to the floor.
  const std::vector<double> wide = {2 * 0x1p-23, 0.0};
  const DivergenceStats covered = MeasureDivergence(x, y, 32, wide);
  EXPECT_EQ(covered.max_excess_ulps, 0.0);
  CalibrationOptions o;
  EXPECT_EQ(TauFromDivergence(covered, o).value_or(0), o.floor_q16);
  EXPECT_EQ(o.floor_q16, kDefaultTauQ16);
}

TEST(TauTableTest, StrictDecoding) {
  const auto reason = [](const std::string& hex) { return DecodeExact<TauTable>(*FromHex(hex)).status().reason(); };
  EXPECT_EQ(reason("02" "0162" "01" "0161" "01"), "tau-table-unsorted");   // "b" then "a"
  EXPECT_EQ(reason("02" "0161" "01" "0161" "02"), "tau-table-unsorted");   // duplicate
  EXPECT_EQ(reason("01" "0161" "818001"), "tau-out-of-range");              // 16385
  EXPECT_EQ(reason("01" "0161" "01" "00"), "enc-trailing-bytes");
  EXPECT_EQ(reason("01" "0561"), "enc-truncated");
  EXPECT_EQ(reason("05" "0161"), "enc-truncated");
  EXPECT_TRUE(DecodeExact<TauTable>(*FromHex("00")).ok());
  EXPECT_TRUE(DecodeExact<TauTable>(*FromHex("01" "0161" "808001")).ok());  // 16384 = cap
}

}  // namespace
}  // namespace vt::kernels
