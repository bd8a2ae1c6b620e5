// The chunk tree of a tensor (kernels/chunk_tree.h): the bulk hashing equals
// the one-at-a-time Merkle functions for every size and thread count, and a
// chunk opening proves exactly one chunk of exactly one tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/philox.h"
#include "common/random.h"
#include "crypto/chunk_hash.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor.h"

namespace vt::kernels {
namespace {

std::vector<float> RandomValues(std::size_t n, std::uint64_t seed) {
  PhiloxStream s(seed, 0, 0);
  std::vector<float> v(n);
  for (float& x : v) x = NextNormal(s);
  return v;
}

// The reference: MerkleLeafHash of each chunk, MerkleRoot over them.
Hash256 ReferenceRoot(const std::vector<float>& v) {
  std::vector<Hash256> leaves;
  for (std::size_t at = 0; at < v.size(); at += kChunkValues) {
    const std::size_t len = std::min<std::size_t>(kChunkValues, v.size() - at);
    leaves.push_back(crypto::MerkleLeafHash(
        ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data() + at), len * sizeof(float))));
  }
  return crypto::MerkleRoot(leaves);
}

TEST(ChunkTree, BulkHashingEqualsTheMerkleFunctions) {
  for (std::size_t n : {0u, 1u, 255u, 256u, 257u, 512u, 513u, 256u * 7 + 5, 256u * 1024 + 3, 256u * 3000}) {
    const auto v = RandomValues(n, n + 1);
    const Hash256 want = ReferenceRoot(v);
    for (int threads : {1, 2, 5}) EXPECT_EQ(ChunkRoot(v, threads), want) << n << " values, " << threads << " threads";
    EXPECT_EQ(ChunkLeafHashes(v, 3).size(), static_cast<std::size_t>(ChunkCount(static_cast<std::int64_t>(n))));
  }
  // Pairs, against MerkleNodeHash.
  std::vector<Hash256> in(6);
  for (std::size_t i = 0; i < in.size(); ++i) in[i].bytes[0] = static_cast<std::uint8_t>(i + 1);
  std::vector<Hash256> out(3);
  crypto::MerkleNodeHashesOfPairs(in, out);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], crypto::MerkleNodeHash(in[2 * i], in[2 * i + 1]));
}

TEST(ChunkTree, TensorHashCommitsToShapeAndEveryBit) {
  const Tensor a({3, 300}, RandomValues(900, 9));
  EXPECT_EQ(a.Hash(), TensorHashFromRoot(a.shape(), ReferenceRoot(std::vector<float>(a.values().begin(),
                                                                                      a.values().end()))));
  EXPECT_EQ(a.Hash(), TensorHash(a, 4));
  EXPECT_NE(a.Hash(), Tensor({900}, std::vector<float>(a.values().begin(), a.values().end())).Hash());
  for (std::int64_t i : {0, 255, 256, 899}) {
    Tensor b = a;
    std::uint32_t bits = 0;
    std::memcpy(&bits, &b[i], 4);
    bits ^= 1u;  // one bit of one value
    std::memcpy(&b[i], &bits, 4);
    EXPECT_NE(b.Hash(), a.Hash()) << i;
  }
}

// Every chunk opens against the tensor hash; any change to the value, the
// position, the chunk's length, the root or the shape is refused.
TEST(ChunkTree, OpeningsProveOneChunkOfOneTensor) {
  for (std::int64_t n : {1, 256, 257, 4000, 256 * 33}) {
    const Tensor t({n}, RandomValues(static_cast<std::size_t>(n), static_cast<std::uint64_t>(n)));
    const Hash256 h = t.Hash();
    const std::int64_t count = ChunkCount(n);
    for (std::int64_t c = 0; c < count; ++c) {
      const ChunkOpening o = OpenChunk(t, c, 2);
      ASSERT_TRUE(VerifyChunk(h, t.shape(), c, o).ok()) << n << " chunk " << c;
      EXPECT_EQ(o.proof.siblings.size(), crypto::MerkleShape(static_cast<std::uint64_t>(count)).ProofLength(
                                             static_cast<std::uint64_t>(c)));
      ChunkOpening bad = o;
      bad.values[0] = bad.values[0] + 1.0f;
      EXPECT_EQ(VerifyChunk(h, t.shape(), c, bad).reason(), "chunk-bad-proof");
      if (count > 1) {
        EXPECT_EQ(VerifyChunk(h, t.shape(), (c + 1) % count, o).reason(), "chunk-bad-index");
      }
      bad = o;
      bad.values.push_back(0.0f);
      EXPECT_EQ(VerifyChunk(h, t.shape(), c, bad).reason(), "chunk-bad-size");
      bad = o;
      bad.root.bytes[0] ^= 1;
      EXPECT_EQ(VerifyChunk(h, t.shape(), c, bad).reason(), "chunk-bad-root");
      EXPECT_EQ(VerifyChunk(h, {1, n}, c, o).reason(), "chunk-bad-root");
    }
    EXPECT_EQ(VerifyChunk(h, t.shape(), count, OpenChunk(t, 0, 1)).reason(), "chunk-bad-index");
  }
}

}  // namespace
}  // namespace vt::kernels
