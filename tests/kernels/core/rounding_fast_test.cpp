// NodeRounding::Round's loops (a branch-free path for the fp32-normal range,
// chunks rounded in parallel) against the definition: one value at a time
// through hd::Locate, NearestIsAway, WithinTau / WithinRegion and
// SlackCapped, exactly as the loop read before the fast path existed.
//
// The inputs are adversarial for the fast path: every exponent range (fp64
// and fp32 subnormals, the last binade below 2^128, NaN, ±inf, zeros), values
// a few fp64 ulps from a rounding boundary and from a grid point, exact ties,
// and β values around the τ threshold and the u/4 cap (0, negative, NaN, inf).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/arith_hd.h"
#include "kernels/rounding.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

struct Expected {
  std::vector<std::uint32_t> bits;
  RoundingLog log;
  std::uint64_t logged_by_slack = 0;
  std::uint64_t slack_capped = 0;
};

// The definition, value by value (factor_log2 = 2 for RecordReplayWindow).
Expected Define(const std::vector<double>& x, const std::vector<double>& slack, int bits, std::uint32_t tau,
                int factor_log2, bool steer) {
  Expected e;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const hd::GridPos g = hd::Locate(x[i], bits);
    const double s = slack.empty() ? 0.0 : slack[i];
    if (!slack.empty() && hd::SlackCapped(g, s)) ++e.slack_capped;
    if (g.special != 0) {
      e.bits.push_back(hd::SpecialBits(g));
      continue;
    }
    const bool nearest = hd::NearestIsAway(g);
    const bool near = slack.empty() ? tau != 0 && hd::WithinTau(g, tau, factor_log2)
                                    : hd::WithinRegion(g, tau, s, factor_log2);
    const bool away = steer && near ? !nearest : nearest;
    e.bits.push_back(hd::NeighbourBits(g, away));
    if (near) {
      e.log.entries.push_back(LogEntry{i, hd::AwayToUp(g, away)});
      if (!slack.empty() && !hd::WithinTau(g, tau, factor_log2)) ++e.logged_by_slack;
    }
  }
  return e;
}

// Values that stress every branch of the rounding.
std::vector<double> Inputs(std::mt19937_64& rng, int bits, std::size_t n) {
  std::vector<double> out;
  out.reserve(n);
  const std::uint32_t step = std::uint32_t{1} << (32 - bits);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<std::int64_t> nudge(-4, 4);
  while (out.size() < n) {
    const std::uint64_t r = rng();
    switch (kind(rng)) {
      case 0:  // any fp64 bit pattern (every exponent, NaN payloads, ±inf)
        out.push_back(std::bit_cast<double>(r));
        break;
      case 1: {  // fp32 subnormal and near-subnormal magnitudes
        const double f = std::ldexp(static_cast<double>(r >> 40), -149 - static_cast<int>(r & 31));
        out.push_back((r & 64) != 0 ? -f : f);
        break;
      }
      case 2: {  // a rounding boundary ± a few fp64 ulps (ties included)
        const std::uint32_t lo = static_cast<std::uint32_t>(r) & 0x7F7FFFFFu & ~(step - 1);
        const double a = std::bit_cast<float>(lo);
        const double b = std::bit_cast<float>(lo + step);
        if (!std::isfinite(b)) break;
        // The midpoint, or an edge of a region: m ± τ·u·2^f for the τ and
        // factors the tests use (exact: u is a power of two).
        static constexpr double kEdges[] = {0, 16, 64, 4096, 16384, 65536};
        const double edge = kEdges[rng() % 6] / 65536.0 * (b - a) * ((r & 128) != 0 ? -1 : 1);
        const double m = a + (b - a) / 2 + edge;
        const std::int64_t k = nudge(rng);
        std::uint64_t mb = std::bit_cast<std::uint64_t>(m);
        mb = static_cast<std::uint64_t>(static_cast<std::int64_t>(mb) + k);
        const double v = std::bit_cast<double>(mb);
        out.push_back((r >> 63) != 0 ? -v : v);
        break;
      }
      case 3: {  // grid points ± a few fp64 ulps
        const std::uint32_t lo = static_cast<std::uint32_t>(r) & 0x7FFFFFFFu & ~(step - 1);
        const double a = std::bit_cast<float>(lo);
        if (!std::isfinite(a)) break;
        std::uint64_t ab = std::bit_cast<std::uint64_t>(a);
        ab = static_cast<std::uint64_t>(static_cast<std::int64_t>(ab) + nudge(rng));
        out.push_back(std::bit_cast<double>(ab));
        break;
      }
      case 4: {  // the last binade and the overflow boundary
        const double top = std::ldexp(1.0, 128);
        std::uint64_t tb = std::bit_cast<std::uint64_t>(top);
        tb -= (r & 0xFFFFFFFFFFull);
        out.push_back((r >> 63) != 0 ? -std::bit_cast<double>(tb) : std::bit_cast<double>(tb));
        break;
      }
      case 5:
        out.push_back((r & 1) != 0 ? -0.0 : 0.0);
        break;
      default: {  // ordinary activations
        std::normal_distribution<double> normal(0.0, std::ldexp(1.0, static_cast<int>(r % 40) - 20));
        out.push_back(normal(rng));
        break;
      }
    }
  }
  return out;
}

// β per value: none, negative, NaN, inf, and magnitudes around τ·u and u/4.
std::vector<double> Slacks(std::mt19937_64& rng, const std::vector<double>& x, int bits) {
  std::vector<double> s(x.size());
  std::uniform_int_distribution<int> kind(0, 7);
  std::uniform_real_distribution<double> frac(0.0, 0.6);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = std::ldexp(std::fabs(x[i]) > 0 && std::isfinite(x[i]) ? 1.0 : 0.0,
                                std::ilogb(x[i] == 0 || !std::isfinite(x[i]) ? 1.0 : x[i]) - (bits - 9));
    switch (kind(rng)) {
      case 0:
        s[i] = 0.0;
        break;
      case 1:
        s[i] = -1.0;
        break;
      case 2:
        s[i] = std::numeric_limits<double>::quiet_NaN();
        break;
      case 3:
        s[i] = std::numeric_limits<double>::infinity();
        break;
      case 4:
        s[i] = u / 4;  // exactly the cap
        break;
      default:
        s[i] = u * frac(rng) * std::ldexp(1.0, -static_cast<int>(rng() % 14));
        break;
    }
  }
  return s;
}

std::vector<std::uint32_t> BitsOf(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

// Every recording variant at `threads` against the definition, the values
// rounded in two calls (positions continue across them).
void ExpectRecordMatchesDefinition(const std::vector<double>& x, const std::vector<double>& slack, int bits,
                                   std::uint32_t tau, int threads) {
  const RoundingSpec spec{bits, tau};
  struct Variant {
    const char* name;
    NodeRounding rounding;
    int factor_log2;
    bool steer;
  };
  Variant variants[] = {{"record", NodeRounding::Record(spec), 0, false},
                        {"window", NodeRounding::RecordReplayWindow(spec), 2, false},
                        {"steered", NodeRounding::RecordSteered(spec), 0, true}};
  const bool with_slack = !slack.empty();
  for (Variant& v : variants) {
    SCOPED_TRACE(::testing::Message() << v.name << " bits=" << bits << " tau=" << tau
                                      << " slack=" << with_slack << " threads=" << threads);
    const Expected e = Define(x, slack, bits, tau, v.factor_log2, v.steer);
    std::vector<float> out(x.size());
    const std::size_t half = x.size() / 2 + 1;
    const auto part = [&](auto span, bool first) { return first ? span.first(half) : span.subspan(half); };
    for (bool first : {true, false}) {
      ASSERT_TRUE(
          v.rounding
              .Round(part(std::span(x), first), part(std::span(out), first),
                     with_slack ? part(std::span<const double>(slack), first) : std::span<const double>{},
                     threads)
              .ok());
    }
    const std::vector<std::uint32_t> got = BitsOf(out);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], e.bits[i]) << "value " << i << " x=" << std::hexfloat << x[i];
    }
    EXPECT_EQ(v.rounding.log(), e.log);
    EXPECT_EQ(v.rounding.logged_by_slack(), e.logged_by_slack);
    EXPECT_EQ(v.rounding.slack_capped(), e.slack_capped);
    EXPECT_EQ(v.rounding.values_rounded(), x.size());
  }
}

TEST(RoundingFastPath, RecordMatchesTheDefinitionValueByValue) {
  std::mt19937_64 rng(test::TestSeed());
  for (int bits : {32, 29, 24, 23}) {
    for (std::uint32_t tau : {0u, 16u, 4096u, 16384u}) {
      for (bool with_slack : {false, true}) {
        // 70000 values: above the parallel threshold, so 3 threads split them.
        const std::vector<double> x = Inputs(rng, bits, 70000);
        const std::vector<double> slack = with_slack ? Slacks(rng, x, bits) : std::vector<double>{};
        for (int threads : {1, 3}) ExpectRecordMatchesDefinition(x, slack, bits, tau, threads);
      }
    }
  }
}

// The fast pass flags sub-blocks of values for the value-by-value pass,
// which skips the rest. Where nearly every value is ordinary, a flag on
// the wrong sub-block (or a value near a boundary never flagged) loses an
// entry or a counter: a few stress values among ordinary ones, at random
// positions, against the definition.
TEST(RoundingFastPath, RecordOfSparseStressValuesMatchesTheDefinition) {
  std::mt19937_64 rng(test::TestSeed());
  std::normal_distribution<double> ordinary(0.0, 1.0);
  for (int bits : {32, 24}) {
    for (std::uint32_t tau : {0u, 16u}) {
      for (bool with_slack : {false, true}) {
        const std::vector<double> stress = Inputs(rng, bits, 70000);
        std::vector<double> x(stress.size());
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = rng() % 97 == 0 ? stress[i] : ordinary(rng);
        std::vector<double> slack = with_slack ? Slacks(rng, x, bits) : std::vector<double>{};
        // Ordinary values mostly carry a small β (a GEMM's): far from the cap.
        for (std::size_t i = 0; i < slack.size(); ++i) {
          if (x[i] != stress[i] && rng() % 5 != 0) slack[i] = std::ldexp(std::fabs(x[i]), -45);
        }
        for (int threads : {1, 3}) ExpectRecordMatchesDefinition(x, slack, bits, tau, threads);
      }
    }
  }
}

// The inputs log something in every configuration above (else the test
// would not see entries): a sanity check of the generator itself.
TEST(RoundingFastPath, InputsReachTheLoggingRegion) {
  std::mt19937_64 rng(test::TestSeed());
  const std::vector<double> x = Inputs(rng, 32, 70000);
  const Expected e = Define(x, {}, 32, 16, 0, false);
  EXPECT_GT(e.log.entries.size(), 100u);
  const std::vector<double> slack = Slacks(rng, x, 32);
  const Expected es = Define(x, slack, 32, 16, 0, false);
  EXPECT_GT(es.logged_by_slack, 100u);
  EXPECT_GT(es.slack_capped, 100u);
}

TEST(RoundingFastPath, ReplayMatchesTheDefinitionAcrossThreads) {
  std::mt19937_64 rng(test::TestSeed());
  for (int bits : {32, 26}) {
    const std::vector<double> x = Inputs(rng, bits, 70000);
    const std::vector<double> slack = Slacks(rng, x, bits);
    const RoundingSpec spec{bits, 4096};
    NodeRounding rec = NodeRounding::Record(spec);
    std::vector<float> recorded(x.size());
    ASSERT_TRUE(rec.Round(x, recorded, slack).ok());
    ASSERT_FALSE(rec.log().entries.empty());
    for (int threads : {1, 2, 5}) {
      NodeRounding rep = NodeRounding::Replay(spec, rec.log());
      std::vector<float> replayed(x.size());
      ASSERT_TRUE(rep.Round(x, replayed, slack, threads).ok());
      ASSERT_TRUE(rep.Finish().ok());
      EXPECT_EQ(BitsOf(replayed), BitsOf(recorded)) << "threads=" << threads;
      // Unlogged positions are the definition's nearest value.
      std::vector<bool> logged(x.size(), false);
      for (const LogEntry& le : rec.log().entries) logged[le.position] = true;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!logged[i]) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(replayed[i]), hd::RoundToBitsPattern(x[i], bits)) << i;
        }
      }
    }
  }
}

TEST(RoundingFastPath, ScaleByPow2IsLdexp) {
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 200000; ++i) {
    const double x = std::bit_cast<double>(rng());
    const int k = static_cast<int>(rng() % 2400) - 1200;
    const double want = std::ldexp(x, k), got = hd::ScaleByPow2(x, k);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got));
    } else {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want)) << std::hexfloat << x << " " << k;
    }
  }
}

}  // namespace
}  // namespace vt::kernels
