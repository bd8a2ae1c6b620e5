// Bulk Merkle hashing (crypto/chunk_hash.h) equals the one-at-a-time Merkle
// functions of crypto/merkle.h (EVP, a separate code path) for every chunk
// length class — every position of the 0x80 pad byte and of the length field
// within the last block, bodies shorter and longer than a block, the 1 KiB
// leaves of tensor chunk trees — and for every batch shape: runs of equal
// lengths (interleaved where the CPU has the SHA extensions), a short last
// chunk inside a run, counts that are not a multiple of the interleave width.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "crypto/chunk_hash.h"
#include "crypto/merkle.h"

namespace vt::crypto {
namespace {

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

void ExpectLeavesMatch(std::size_t size, std::size_t chunk) {
  const auto data = Bytes(size, static_cast<std::uint32_t>(size * 131 + chunk));
  std::vector<Hash256> out((size + chunk - 1) / chunk);
  MerkleLeafHashesOfChunks(ByteSpan(data), chunk, out);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t first = i * chunk, len = std::min(chunk, size - first);
    ASSERT_EQ(out[i], MerkleLeafHash(ByteSpan(data.data() + first, len)))
        << size << " bytes, chunks of " << chunk << ", leaf " << i;
  }
}

TEST(ChunkHash, LeavesEqualMerkleLeafHashForEveryLengthClass) {
  // Chunk lengths 1..192 cover every residue of (1 + length) mod 64 three
  // times; 9 chunks plus a short one make two full runs of four and a tail.
  for (std::size_t chunk = 1; chunk <= 192; ++chunk) {
    ExpectLeavesMatch(9 * chunk, chunk);
    ExpectLeavesMatch(9 * chunk + chunk / 2 + 1, chunk);
  }
  // The tensor chunk tree's 1 KiB leaves and its neighbours, with short last
  // chunks of every interesting size, and counts across the 64-message batch.
  for (std::size_t chunk : {1023u, 1024u, 1025u}) {
    for (std::size_t extra : {0u, 1u, 54u, 55u, 56u, 63u, 64u, 119u, 1000u}) {
      ExpectLeavesMatch(7 * chunk + extra, chunk);
    }
    ExpectLeavesMatch(130 * chunk + 3, chunk);
  }
  ExpectLeavesMatch(0, 1024);
  ExpectLeavesMatch(1, 1024);
}

TEST(ChunkHash, PairsEqualMerkleNodeHash) {
  for (std::size_t pairs : {1u, 3u, 4u, 5u, 63u, 64u, 65u, 200u}) {
    std::vector<Hash256> in(2 * pairs);
    const auto bytes = Bytes(in.size() * Hash256::kSize, static_cast<std::uint32_t>(pairs));
    for (std::size_t i = 0; i < in.size(); ++i) {
      std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(i * Hash256::kSize), Hash256::kSize, in[i].bytes.begin());
    }
    std::vector<Hash256> out(pairs);
    MerkleNodeHashesOfPairs(in, out);
    for (std::size_t i = 0; i < pairs; ++i) {
      ASSERT_EQ(out[i], MerkleNodeHash(in[2 * i], in[2 * i + 1])) << pairs << " pairs, pair " << i;
    }
  }
}

// Lanes are independent: changing one bit of one chunk changes that leaf only.
TEST(ChunkHash, OneFlippedBitChangesOnlyItsLeaf) {
  const std::size_t chunk = 1024, count = 8;
  auto data = Bytes(chunk * count, 7);
  std::vector<Hash256> before(count), after(count);
  MerkleLeafHashesOfChunks(ByteSpan(data), chunk, before);
  for (std::size_t victim = 0; victim < count; ++victim) {
    auto changed = data;
    changed[victim * chunk + (victim * 97) % chunk] ^= 0x10;
    MerkleLeafHashesOfChunks(ByteSpan(changed), chunk, after);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(after[i] == before[i], i != victim) << victim << " " << i;
  }
}

}  // namespace
}  // namespace vt::crypto
