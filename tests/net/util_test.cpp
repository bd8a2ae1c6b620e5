// Small pieces of the net library: the bounded seen-set, the log rate limit,
// endpoint parsing.

#include <gtest/gtest.h>

#include "crypto/sha256.h"
#include "net/log_limit.h"
#include "net/peer.h"
#include "net/seen_set.h"

namespace vt::net {
namespace {

Hash256 Id(int i) { return crypto::Sha256Digest(std::string_view(std::to_string(i))); }

TEST(NetSeenSet, ForgetsTheOldestBeyondItsCapacity) {
  SeenSet seen(3);
  EXPECT_TRUE(seen.Insert(Id(1)));
  EXPECT_FALSE(seen.Insert(Id(1)));
  EXPECT_TRUE(seen.Insert(Id(2)));
  EXPECT_TRUE(seen.Insert(Id(3)));
  EXPECT_TRUE(seen.Insert(Id(4)));  // evicts 1
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_FALSE(seen.Contains(Id(1)));
  EXPECT_TRUE(seen.Contains(Id(2)));
  EXPECT_TRUE(seen.Contains(Id(4)));
  for (int i = 5; i < 1000; ++i) seen.Insert(Id(i));
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_TRUE(seen.Contains(Id(999)));
  EXPECT_FALSE(seen.Contains(Id(996)));
}

TEST(NetLogLimit, AllowsABurstThenCountsWhatItDrops) {
  LogLimit limit(3, std::chrono::seconds(10));
  const auto t0 = LogLimit::Clock::time_point{} + std::chrono::hours(1);
  std::size_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limit.Allow(t0, &suppressed));
    EXPECT_EQ(suppressed, 0u);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limit.Allow(t0 + std::chrono::seconds(1), &suppressed));
  // The next window reports the 1000 dropped lines once.
  EXPECT_TRUE(limit.Allow(t0 + std::chrono::seconds(11), &suppressed));
  EXPECT_EQ(suppressed, 1000u);
  EXPECT_TRUE(limit.Allow(t0 + std::chrono::seconds(11), &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(NetEndpoint, ParsesIpLiteralsOnly) {
  Result<Endpoint> e = Endpoint::Parse("127.0.0.1:9000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 9000);
  EXPECT_EQ(e->ToString(), "127.0.0.1:9000");
  Result<Endpoint> v6 = Endpoint::Parse("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "[::1]:80");
  for (const char* bad : {"localhost:9000", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:9x", ":9000"}) {
    EXPECT_EQ(Endpoint::Parse(bad).status().reason(), "endpoint-bad") << bad;
  }
}

}  // namespace
}  // namespace vt::net
