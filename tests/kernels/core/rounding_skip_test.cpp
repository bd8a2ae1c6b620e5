// NodeRounding::ReplaySkippingInvalid: how an honest challenger follows a
// solver's log past entries a strict replay rejects. Valid entries are
// applied exactly as in a strict replay; invalid ones (outside the window,
// unsorted, past the outputs) are skipped — that value rounds to nearest —
// and counted; nothing fails.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/rounding.h"

namespace vt::kernels {
namespace {

TEST(NodeRoundingSkip, AppliesValidEntriesSkipsAndCountsTheRest) {
  const RoundingSpec spec{32, 16384};  // w = 1/4 ulp: any direction accepted within it, none at 2w = 1/2 ulp
  const double ulp = std::ldexp(1.0, -23);
  // Positions 0 and 2 sit 0.2 and 0.1 ulp from the midpoint (inside w);
  // 1 and 3 are exactly on the grid (outside every window).
  const std::vector<double> exact = {1.0 + 0.3 * ulp, 1.0, 2.0 + 0.6 * 2 * ulp, 4.0};
  const RoundingLog log{{LogEntry{0, true}, LogEntry{1, true}, LogEntry{2, false}, LogEntry{3, false},
                         LogEntry{3, true} /* unsorted */, LogEntry{9, true} /* past the outputs */}};

  std::vector<float> strict_out(exact.size());
  NodeRounding strict = NodeRounding::Replay(spec, log);
  EXPECT_EQ(strict.Round(exact, strict_out).reason(), "log-entry-outside-region");

  std::vector<float> out(exact.size());
  NodeRounding lenient = NodeRounding::ReplaySkippingInvalid(spec, log);
  ASSERT_TRUE(lenient.Round(exact, out).ok());
  ASSERT_TRUE(lenient.Finish().ok());
  // Positions 1 and 3 (far from their boundaries) and the unsorted repeat of
  // 3; the entry past the outputs is never reached, and Finish accepts it.
  EXPECT_EQ(lenient.skipped_entries(), 3u);
  EXPECT_EQ(out[0], std::nextafterf(1.0f, 2.0f)) << "valid entry applied (up, against nearest)";
  EXPECT_EQ(out[1], 1.0f) << "skipped: round to nearest";
  EXPECT_EQ(out[2], 2.0f) << "valid entry applied (down, against nearest)";
  EXPECT_NE(RoundToBits(exact[2], 32), 2.0f);
  EXPECT_EQ(out[3], 4.0f);

  // Without invalid entries it is exactly a strict replay.
  const RoundingLog good{{LogEntry{0, true}, LogEntry{2, true}}};
  std::vector<float> a(exact.size()), b(exact.size());
  NodeRounding s1 = NodeRounding::Replay(spec, good), s2 = NodeRounding::ReplaySkippingInvalid(spec, good);
  ASSERT_TRUE(s1.Round(exact, a).ok());
  ASSERT_TRUE(s2.Round(exact, b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(s2.skipped_entries(), 0u);
}

TEST(NodeRoundingSkip, EntriesBehindTheCurrentChunkNeverIndexOutOfRange) {
  const RoundingSpec spec{32, 4096};
  // Two chunks of two values; an entry for position 0 arrives after one for 3.
  const RoundingLog log{{LogEntry{3, true}, LogEntry{0, true}}};
  NodeRounding r = NodeRounding::ReplaySkippingInvalid(spec, log);
  const std::vector<double> chunk = {1.0, 1.0};
  std::vector<float> out(2);
  ASSERT_TRUE(r.Round(chunk, out).ok());
  ASSERT_TRUE(r.Round(chunk, out).ok());
  EXPECT_EQ(r.skipped_entries(), 2u);
  EXPECT_TRUE(r.Finish().ok());
}

}  // namespace
}  // namespace vt::kernels
