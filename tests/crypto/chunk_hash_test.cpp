// Bulk Merkle hashing (crypto/chunk_hash.h) equals the one-at-a-time Merkle
// functions of crypto/merkle.h (EVP, a separate code path) on every path the
// CPU has — portable, SHA-NI (runs of 4), AVX-512 (runs of 16) — for every
// chunk length class (every position of the 0x80 pad byte and of the length
// field within the last block, bodies shorter and longer than a block, the
// 1 KiB leaves of tensor chunk trees) and for every batch shape: runs of
// equal lengths, a short last chunk inside a run, counts that are not a
// multiple of the interleave width, counts across the 64-message batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "crypto/chunk_hash.h"
#include "crypto/merkle.h"

namespace vt::crypto {
namespace {

using detail::ChunkHashPath;

std::vector<std::uint8_t> Bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return v;
}

std::string PathName(ChunkHashPath path) {
  switch (path) {
    case ChunkHashPath::kPortable:
      return "Portable";
    case ChunkHashPath::kShaNi:
      return "ShaNi";
    case ChunkHashPath::kAvx512:
      return "Avx512";
  }
  return "Unknown";
}

// Each test runs on each path; a path this CPU lacks is skipped, saying so.
class ChunkHashPathTest : public ::testing::TestWithParam<ChunkHashPath> {
 protected:
  void SetUp() override {
    if (!detail::ChunkHashPathAvailable(GetParam())) {
      GTEST_SKIP() << "the " << PathName(GetParam()) << " path is not available on this CPU";
    }
  }

  void ExpectLeavesMatch(std::size_t size, std::size_t chunk) const {
    const auto data = Bytes(size, static_cast<std::uint32_t>(size * 131 + chunk));
    std::vector<Hash256> out((size + chunk - 1) / chunk);
    detail::MerkleLeafHashesOfChunks(GetParam(), ByteSpan(data), chunk, out);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::size_t first = i * chunk, len = std::min(chunk, size - first);
      ASSERT_EQ(out[i], MerkleLeafHash(ByteSpan(data.data() + first, len)))
          << size << " bytes, chunks of " << chunk << ", leaf " << i;
    }
  }
};

TEST_P(ChunkHashPathTest, LeavesEqualMerkleLeafHashForEveryLengthClass) {
  // Chunk lengths 1..192 cover every residue of (1 + length) mod 64 three
  // times; 17 chunks plus a short one make a run of 16 (four runs of 4) and
  // a tail.
  for (std::size_t chunk = 1; chunk <= 192; ++chunk) {
    ExpectLeavesMatch(17 * chunk, chunk);
    ExpectLeavesMatch(17 * chunk + chunk / 2 + 1, chunk);
  }
  // The tensor chunk tree's 1 KiB leaves and its neighbours, with short last
  // chunks of every interesting size: the last one of 16 (inside a run of
  // 16) or one past them, and counts across the 64-message batch.
  for (std::size_t chunk : {1023u, 1024u, 1025u}) {
    for (std::size_t extra : {0u, 1u, 54u, 55u, 56u, 63u, 64u, 119u, 1000u}) {
      ExpectLeavesMatch(15 * chunk + extra, chunk);
      ExpectLeavesMatch(16 * chunk + extra, chunk);
    }
    ExpectLeavesMatch(130 * chunk + 3, chunk);
  }
  ExpectLeavesMatch(0, 1024);
  ExpectLeavesMatch(1, 1024);
}

TEST_P(ChunkHashPathTest, LeafCountsAroundRunsOfSixteen) {
  for (std::size_t chunk : {55u, 64u, 1024u}) {
    for (std::size_t count : {1u, 15u, 16u, 17u, 31u, 32u, 33u, 64u + 16u + 3u}) {
      ExpectLeavesMatch(count * chunk, chunk);
      // The last chunk short: inside the last run of 16 where count is a
      // multiple of 16.
      ExpectLeavesMatch(count * chunk - chunk / 2, chunk);
    }
  }
}

TEST_P(ChunkHashPathTest, PairsEqualMerkleNodeHash) {
  for (std::size_t pairs : {1u, 3u, 4u, 5u, 15u, 16u, 17u, 31u, 32u, 33u, 63u, 64u, 65u, 83u, 200u}) {
    std::vector<Hash256> in(2 * pairs);
    const auto bytes = Bytes(in.size() * Hash256::kSize, static_cast<std::uint32_t>(pairs));
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(i * Hash256::kSize), Hash256::kSize,
                  in[i].bytes.begin());
    }
    std::vector<Hash256> out(pairs);
    detail::MerkleNodeHashesOfPairs(GetParam(), in, out);
    for (std::size_t i = 0; i < pairs; ++i) {
      ASSERT_EQ(out[i], MerkleNodeHash(in[2 * i], in[2 * i + 1])) << pairs << " pairs, pair " << i;
    }
  }
}

// Lanes are independent: changing one bit of one chunk changes that leaf
// only (two runs of 16 and a tail of 3).
TEST_P(ChunkHashPathTest, OneFlippedBitChangesOnlyItsLeaf) {
  const std::size_t chunk = 1024, count = 35;
  auto data = Bytes(chunk * count, 7);
  std::vector<Hash256> before(count), after(count);
  detail::MerkleLeafHashesOfChunks(GetParam(), ByteSpan(data), chunk, before);
  for (std::size_t victim = 0; victim < count; ++victim) {
    auto changed = data;
    changed[victim * chunk + (victim * 97) % chunk] ^= 0x10;
    detail::MerkleLeafHashesOfChunks(GetParam(), ByteSpan(changed), chunk, after);
    for (std::size_t i = 0; i < count; ++i)
      EXPECT_EQ(after[i] == before[i], i != victim) << victim << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, ChunkHashPathTest,
                         ::testing::Values(ChunkHashPath::kPortable, ChunkHashPath::kShaNi,
                                           ChunkHashPath::kAvx512),
                         [](const ::testing::TestParamInfo<ChunkHashPath>& param) {
                           return PathName(param.param);
                         });

// The public functions take the default path, which this CPU has.
TEST(ChunkHash, DefaultPathIsAvailableAndTaken) {
  const ChunkHashPath path = detail::DefaultChunkHashPath();
  ASSERT_TRUE(detail::ChunkHashPathAvailable(path));
  std::printf("default chunk hash path on this CPU: %s\n", PathName(path).c_str());
  const std::size_t chunk = 1024, count = 40;
  const auto data = Bytes(chunk * count - 5, 11);
  std::vector<Hash256> ours(count), via(count);
  MerkleLeafHashesOfChunks(ByteSpan(data), chunk, ours);
  detail::MerkleLeafHashesOfChunks(path, ByteSpan(data), chunk, via);
  EXPECT_EQ(ours, via);
  std::vector<Hash256> pairs(count / 2), pairs_via(count / 2);
  MerkleNodeHashesOfPairs(ours, pairs);
  detail::MerkleNodeHashesOfPairs(path, ours, pairs_via);
  EXPECT_EQ(pairs, pairs_via);
  for (std::size_t i = 0; i < pairs.size(); ++i)
    EXPECT_EQ(pairs[i], MerkleNodeHash(ours[2 * i], ours[2 * i + 1]));
}

}  // namespace
}  // namespace vt::crypto
