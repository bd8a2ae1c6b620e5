// A node's rounding log as a tree of entries (kernels/rounding_log_tree.h):
// every position opens to what the log says there, and no opening built
// from the log's own entries, their proofs or another log's says anything
// else.

#include "kernels/rounding_log_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

// Strictly increasing positions with short and long gaps, from 0 or a little after.
RoundingLog RandomLog(std::mt19937_64& rng, std::size_t n) {
  RoundingLog log;
  std::uint64_t pos = rng() % 3;
  for (std::size_t i = 0; i < n; ++i) {
    log.entries.push_back({pos, (rng() & 1) != 0});
    pos += rng() % 4 == 0 ? 1 + rng() % 1000 : 1 + rng() % 3;
  }
  return log;
}

std::optional<bool> Truth(const RoundingLog& log, std::uint64_t position) {
  for (const LogEntry& e : log.entries) {
    if (e.position == position) return e.up;
  }
  return std::nullopt;
}

std::uint64_t End(const RoundingLog& log) {
  return log.entries.empty() ? 4 : log.entries.back().position + 4;
}

TEST(RoundingLogTree, EveryPositionOpensToWhatTheLogSays) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x109);
  // (RandomLog's first position is 0 to 2: position − 1 wraps to 2^64 − 1 at 0, which opens as "none".)
  std::size_t opened = 0, entries_opened = 0, largest = 0;
  for (std::size_t n : {0, 1, 2, 3, 5, 17, 100, 513}) {
    const RoundingLog log = RandomLog(rng, n);
    const RoundingLogTree tree(log);
    ASSERT_EQ(tree.hash(), HashRoundingLog(log));
    // Each entry's position and its two neighbours, and random others.
    std::vector<std::uint64_t> positions;
    for (const LogEntry& e : log.entries)
      positions.insert(positions.end(), {e.position - 1, e.position, e.position + 1});
    for (int i = 0; i < 64; ++i) positions.push_back(rng() % End(log));
    for (const std::uint64_t p : positions) {
      const LogOpening opening = tree.Open(p);
      const Bytes wire = EncodeToBytes(opening);
      auto decoded = DecodeExact<LogOpening>(wire);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      ASSERT_EQ(*decoded, opening);
      auto said = OpenLogAt(HashRoundingLog(log), p, *decoded);
      ASSERT_TRUE(said.ok()) << "n " << n << " p " << p << ": " << said.status().ToString();
      ASSERT_EQ(*said, Truth(log, p)) << "n " << n << " p " << p;
      // Two entries with proofs of a 513-entry tree: well under a KiB.
      EXPECT_LE(wire.size(), 32u + 3u + 2u * (9u + 16u + 32u * 10u));
      largest = std::max(largest, wire.size());
      ++opened;
      entries_opened += said->has_value();
    }
  }
  std::cout << "openings: " << opened << ", largest " << largest << " B\n";
  EXPECT_GT(entries_opened, 100u);
  EXPECT_GT(opened, 2 * entries_opened);
}

// A randomized liar assembles openings from the log's entries (any index,
// direction flipped or not, in any of the three places) or from another
// log's: whatever is accepted says what the log says.
TEST(RoundingLogTree, NoOpeningOfTheLogSaysAnythingElse) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x10a);
  std::map<std::string, std::size_t> refused;
  std::size_t accepted = 0, trials = 0;
  for (int round = 0; round < 40; ++round) {
    const RoundingLog log = RandomLog(rng, rng() % 40);
    const RoundingLogTree tree(log), other(RandomLog(rng, 1 + rng() % 40));
    const Hash256 hash = tree.hash();
    const std::size_t n = log.entries.size();
    for (int t = 0; t < 200; ++t) {
      const std::uint64_t p = rng() % End(log);
      LogOpening lie = tree.Open(p);
      const auto entry_of = [&](const RoundingLogTree& from) -> std::optional<LogEntryProof> {
        const std::size_t m = from.log().entries.size();
        if (m == 0 || rng() % 4 == 0) return std::nullopt;
        const std::size_t i = rng() % m;
        LogEntryProof e{from.log().entries[i], from.Open(from.log().entries[i].position).at->proof};
        if (rng() % 3 == 0) e.entry.up = !e.entry.up;
        if (rng() % 5 == 0) e.entry.position = p;
        return e;
      };
      switch (rng() % 5) {
        case 0:
          lie.at = entry_of(tree);
          break;
        case 1:
          lie.before = entry_of(tree);
          break;
        case 2:
          lie.after = entry_of(tree);
          break;
        case 3:
          lie = other.Open(p);
          break;
        default:  // claim nothing is logged here
          lie.at.reset();
          if (rng() % 2 == 0) lie.before = entry_of(tree), lie.after = entry_of(tree);
      }
      if (rng() % 8 == 0 && n > 0) lie.root = other.root();
      ++trials;
      auto said = OpenLogAt(hash, p, lie);
      if (!said.ok()) {
        ++refused[said.status().reason()];
        continue;
      }
      ++accepted;
      ASSERT_EQ(*said, Truth(log, p)) << "round " << round << " p " << p;
    }
  }
  // Each check refused something (so none of them is dead code), and some
  // lies were true after all.
  for (const char* reason : {"log-opening-bad-root", "log-opening-bad-proof", "log-opening-wrong-entry",
                             "log-opening-not-adjacent"})
    EXPECT_GT(refused[reason], 0u) << reason;
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(trials, accepted);
}

TEST(RoundingLogTree, AnOpeningOnTheWireIsStrict) {
  const RoundingLogTree tree(RoundingLog{{LogEntry{5, true}, LogEntry{8, false}, LogEntry{208, true}}});
  Bytes wire = EncodeToBytes(tree.Open(7));
  EXPECT_TRUE(DecodeExact<LogOpening>(wire).ok());
  Bytes longer = wire;
  longer.push_back(0);
  EXPECT_EQ(DecodeExact<LogOpening>(longer).status().reason(), "enc-trailing-bytes");
  wire.pop_back();
  EXPECT_EQ(DecodeExact<LogOpening>(wire).status().reason(), "enc-truncated");
  Bytes bad_tag = EncodeToBytes(tree.Open(7));
  bad_tag[32] = 2;  // the optional tag of `at`
  EXPECT_EQ(DecodeExact<LogOpening>(bad_tag).status().reason(), "enc-bad-bool");
}

}  // namespace
}  // namespace vt::kernels
