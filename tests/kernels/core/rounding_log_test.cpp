// NodeRounding record → replay, forged entries, and the log codec.

#include <gtest/gtest.h>
#include <zstd.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/rounding.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

std::uint32_t Bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// Values of which a good fraction sit near b-bit boundaries: fp32 midpoints
// (b = 32) nudged by a few fp64 ulps, mixed with ordinary values.
std::vector<double> NearBoundaryValues(std::mt19937_64& rng, std::size_t n) {
  std::vector<double> v(n);
  std::normal_distribution<double> normal;
  for (auto& x : v) {
    x = normal(rng);
    if (rng() % 3 == 0) {
      const float f = static_cast<float>(x);
      const double mid = (static_cast<double>(f) + static_cast<double>(std::nextafterf(f, INFINITY))) / 2;
      x = mid + static_cast<double>(static_cast<int>(rng() % 2001) - 1000) * std::ldexp(std::fabs(mid), -52);
    }
  }
  return v;
}

TEST(NodeRoundingTest, RecordThenReplayIsExactUnderPerturbation) {
  std::mt19937_64 rng(test::TestSeed());
  const RoundingSpec spec{32, 4096};  // τ = 1/16
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<double> x = NearBoundaryValues(rng, 5000);
    NodeRounding rec = NodeRounding::Record(spec);
    std::vector<float> out1(x.size());
    // Two chunks: the position counter continues across Round calls.
    ASSERT_TRUE(rec.Round(std::span(x).first(1234), std::span(out1).first(1234)).ok());
    ASSERT_TRUE(rec.Round(std::span(x).subspan(1234), std::span(out1).subspan(1234)).ok());
    ASSERT_TRUE(rec.Finish().ok());
    ASSERT_FALSE(rec.log().entries.empty());
    EXPECT_EQ(rec.values_rounded(), x.size());

    // Another machine's fp64 values: within τ·u/2 of the trainer's (here a
    // relative perturbation of up to 2^-30, far below 1/32 of an fp32 ulp).
    std::vector<double> y = x;
    for (auto& v : y) v += v * std::ldexp(static_cast<double>(static_cast<int>(rng() % 129) - 64), -36);
    NodeRounding rep = NodeRounding::Replay(spec, rec.log());
    std::vector<float> out2(y.size());
    ASSERT_TRUE(rep.Round(y, out2).ok());
    ASSERT_TRUE(rep.Finish().ok());
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(Bits(out1[i]), Bits(out2[i])) << i;

    // Without the log, to-nearest rounding of y differs somewhere (the
    // problem the log solves).
    NodeRounding plain = NodeRounding::Replay(spec, {});
    std::vector<float> out3(y.size());
    ASSERT_TRUE(plain.Round(y, out3).ok());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < x.size(); ++i) differ += Bits(out1[i]) != Bits(out3[i]);
    EXPECT_GT(differ, 0u);
  }
}

TEST(NodeRoundingTest, LoggedEntriesAreExactlyTheNearValues) {
  std::mt19937_64 rng(test::TestSeed() ^ 7);
  const RoundingSpec spec{27, 2000};
  const std::vector<double> x = NearBoundaryValues(rng, 20000);
  NodeRounding rec = NodeRounding::Record(spec);
  std::vector<float> out(x.size());
  ASSERT_TRUE(rec.Round(x, out).ok());
  std::size_t e = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const RoundingRegion r = ClassifyRounding(x[i], spec);
    ASSERT_EQ(Bits(out[i]), Bits(r.nearest));
    if (r.near_boundary) {
      ASSERT_LT(e, rec.log().entries.size());
      ASSERT_EQ(rec.log().entries[e].position, i);
      ASSERT_EQ(rec.log().entries[e].up, r.nearest_is_up);
      ++e;
    }
  }
  EXPECT_EQ(e, rec.log().entries.size());
}

TEST(NodeRoundingTest, ReplayFollowsTheLoggedDirection) {
  const RoundingSpec spec{32, 4096};
  const float f = 1.0f;
  const double mid = (1.0 + static_cast<double>(std::nextafterf(f, 2.0f))) / 2;
  const double x = mid - std::ldexp(1.0, -40);  // just below the midpoint: nearest is 1.0f
  ASSERT_EQ(RoundToBits(x, 32), 1.0f);
  for (bool up : {false, true}) {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{0, up}}});
    float out = 0;
    ASSERT_TRUE(rep.Round(std::span(&x, 1), std::span(&out, 1)).ok());
    EXPECT_EQ(out, up ? std::nextafterf(1.0f, 2.0f) : 1.0f);
    EXPECT_TRUE(rep.Finish().ok());
  }
  // Negative values: up is toward +inf, i.e. the smaller magnitude.
  const double nx = -x;
  NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{0, true}}});
  float out = 0;
  ASSERT_TRUE(rep.Round(std::span(&nx, 1), std::span(&out, 1)).ok());
  EXPECT_EQ(out, -1.0f);
}

TEST(NodeRoundingTest, ForgedEntriesAreRejected) {
  const RoundingSpec spec{32, 16384};  // w = τ·u = 1/4 ulp
  // 1.0 + 0.3 ulp: the midpoint is 0.2 ulp away (< w): either direction is
  // accepted, here the non-nearest "up".
  // 1.0 + 0.2 ulp: 0.3 ulp away (≥ w): "up" is not its nearest: forged.
  const double ulp = std::ldexp(1.0, -23);
  const double inside = 1.0 + 0.3 * ulp, outside = 1.0 + 0.2 * ulp;
  {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{0, true}}});
    float out = 0;
    ASSERT_TRUE(rep.Round(std::span(&inside, 1), std::span(&out, 1)).ok());
    EXPECT_EQ(out, std::nextafterf(1.0f, 2.0f));
  }
  for (double bad : {outside, 1.0, std::nan(""), HUGE_VAL, 1e300}) {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{0, true}}});
    float out = 0;
    const Status s = rep.Round(std::span(&bad, 1), std::span(&out, 1));
    EXPECT_TRUE(s.is_invalid());
    EXPECT_EQ(s.reason(), "log-entry-outside-region") << bad;
  }
  // τ = 0 (no logging): every entry is forged.
  {
    NodeRounding rep = NodeRounding::Replay({32, 0}, RoundingLog{{LogEntry{0, true}}});
    float out = 0;
    EXPECT_EQ(rep.Round(std::span(&inside, 1), std::span(&out, 1)).reason(), "log-entry-outside-region");
  }
}

TEST(NodeRoundingTest, LeftoverUnsortedAndDuplicateEntriesAreRejected) {
  const RoundingSpec spec{32, 16384};
  const double ulp = std::ldexp(1.0, -23);
  const std::vector<double> x(4, 1.0 + 0.5 * ulp);  // exactly on the midpoint
  std::vector<float> out(4);
  {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{1, true}, LogEntry{4, true}}});
    ASSERT_TRUE(rep.Round(x, out).ok());
    const Status s = rep.Finish();
    EXPECT_TRUE(s.is_invalid());
    EXPECT_EQ(s.reason(), "log-entry-out-of-range");
  }
  {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{2, true}, LogEntry{1, true}}});
    EXPECT_EQ(rep.Round(x, out).reason(), "log-entries-unsorted");
  }
  {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{2, true}, LogEntry{2, false}}});
    EXPECT_EQ(rep.Round(x, out).reason(), "log-entries-unsorted");
  }
  {
    // Unsorted across two Round calls.
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{3, true}, LogEntry{1, true}}});
    ASSERT_TRUE(rep.Round(std::span(x).first(2), std::span(out).first(2)).ok());
    EXPECT_EQ(rep.Round(std::span(x).subspan(2), std::span(out).subspan(2)).reason(), "log-entries-unsorted");
  }
}

// ---- codec --------------------------------------------------------------------------

RoundingLog RandomLog(std::mt19937_64& rng, std::size_t n) {
  RoundingLog log;
  std::uint64_t pos = rng() % 3;
  for (std::size_t i = 0; i < n; ++i) {
    log.entries.push_back({pos, (rng() & 1) != 0});
    const int kind = static_cast<int>(rng() % 10);
    pos += kind < 8 ? 1 + rng() % 50 : 1 + rng() % (std::uint64_t{1} << 40);
  }
  return log;
}

TEST(RoundingLogCodecTest, RoundTrip) {
  std::mt19937_64 rng(test::TestSeed() ^ 11);
  for (std::size_t n : {0, 1, 2, 100, 10000}) {
    const RoundingLog log = RandomLog(rng, n);
    const Bytes bytes = EncodeRoundingLog(log);
    auto back = DecodeRoundingLog(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, log);
    auto parsed = ParseRoundingLogPayload(RoundingLogPayload(log));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, log);
  }
  // Extreme positions.
  const RoundingLog edge{{LogEntry{0, false}, LogEntry{kMaxLogPosition, true}}};
  auto back = DecodeRoundingLog(EncodeRoundingLog(edge));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, edge);
}

// Golden payload bytes: count 3; (5<<1|1) = 11; (3<<1|0) = 6; (200<<1|1) =
// 401 = 0x91 0x03.
TEST(RoundingLogCodecTest, GoldenPayloadAndHash) {
  const RoundingLog log{{LogEntry{5, true}, LogEntry{8, false}, LogEntry{208, true}}};
  EXPECT_EQ(ToHex(RoundingLogPayload(log)), "030b069103");
  // Computed once with this implementation (the entry tree's root under tag
  // "veritrain/rounding-log/v2"; v1, the flat payload's hash, was e4e02fee…).
  EXPECT_EQ(HashRoundingLog(log).Hex(), "0b3ea491828556cf927f57dff27ad18901b5c3d28c1bb2b4dfc2f59f63262ae3");
  EXPECT_NE(HashRoundingLog(log), HashRoundingLog(RoundingLog{}));
}

Bytes Compress(const Bytes& payload) {
  Bytes out(ZSTD_compressBound(payload.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), payload.data(), payload.size(), 3));
  return out;
}

TEST(RoundingLogCodecTest, Rejections) {
  const auto reason = [](const Bytes& b) { return DecodeRoundingLog(b).status().reason(); };
  const RoundingLog log{{LogEntry{5, true}, LogEntry{8, false}}};
  Bytes good = EncodeRoundingLog(log);
  ASSERT_TRUE(DecodeRoundingLog(good).ok());

  EXPECT_EQ(reason({}), "rounding-log-bad-compression");
  EXPECT_EQ(reason({1, 2, 3, 4, 5, 6, 7, 8}), "rounding-log-bad-compression");
  Bytes truncated(good.begin(), good.end() - 1);
  EXPECT_EQ(reason(truncated), "rounding-log-bad-compression");
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_EQ(reason(trailing), "rounding-log-trailing-bytes");
  Bytes two_frames = good;
  two_frames.insert(two_frames.end(), good.begin(), good.end());
  EXPECT_EQ(reason(two_frames), "rounding-log-trailing-bytes");
  Bytes corrupt = good;
  corrupt[corrupt.size() / 2] ^= 0xFF;
  EXPECT_FALSE(DecodeRoundingLog(corrupt).ok());

  // Payload-level errors, wrapped in valid zstd frames.
  EXPECT_EQ(reason(Compress({})), "enc-truncated");
  EXPECT_EQ(reason(Compress({0x02, 0x0b})), "enc-truncated");             // count 2, one entry
  EXPECT_EQ(reason(Compress({0x05, 0x0b})), "enc-truncated");             // count past the end
  EXPECT_EQ(reason(Compress({0x01, 0x0b, 0x00})), "enc-trailing-bytes");  // extra byte
  EXPECT_EQ(reason(Compress({0x02, 0x0b, 0x00})), "rounding-log-not-increasing");  // delta 0
  EXPECT_EQ(reason(Compress({0x02, 0x0b, 0x01})), "rounding-log-not-increasing");  // delta 0, up
  EXPECT_EQ(reason(Compress({0x01, 0x8b, 0x00})), "enc-non-minimal-varint");
  EXPECT_EQ(reason(Compress({0x81, 0x00})), "enc-non-minimal-varint");
  // Position 2^62 (varint of 2^63): above the cap.
  EXPECT_EQ(reason(Compress({0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})),
            "rounding-log-position-overflow");
  // Two deltas that sum past the cap.
  Bytes big = {0x02, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x04};
  EXPECT_EQ(reason(Compress(big)), "rounding-log-position-overflow");
  Bytes eleven = {0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  EXPECT_EQ(reason(Compress(eleven)), "enc-varint-overflow");
}

}  // namespace
}  // namespace vt::kernels
