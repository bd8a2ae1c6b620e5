#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "crypto/sha256.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor.h"
#include "kernels/tensor_codec.h"

namespace vt::kernels {
namespace {

TEST(TensorTest, ConstructionAndShape) {
  Tensor t({2, 3, 4});
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(ShapeToString(t.shape()), "[2, 3, 4]");
  for (float v : t.values()) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(Tensor(Shape{}).numel(), 1);  // a scalar
  EXPECT_EQ(NumElements({3, 0}), 0);
}

TEST(TensorTest, FromValuesValidates) {
  EXPECT_TRUE(Tensor::FromValues({2, 2}, {1, 2, 3, 4}).ok());
  EXPECT_EQ(Tensor::FromValues({2, 2}, {1, 2, 3}).status().reason(), "tensor-size-mismatch");
  EXPECT_EQ(Tensor::FromValues({-1, 2}, {}).status().reason(), "tensor-bad-shape");
  EXPECT_EQ(Tensor::FromValues({1 << 30, 1 << 30, 1 << 30}, {}).status().reason(), "tensor-bad-shape");
}

TEST(TensorTest, ReshapeAndResize) {
  const Tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = t.Reshaped({3, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[5], 6.0f);
  EXPECT_EQ(t.Reshaped({4, 2}).status().reason(), "shape-mismatch");
  Tensor u({2, 3}, {1, 2, 3, 4, 5, 6});
  u.Resize({2, 3});  // same shape: values kept
  EXPECT_EQ(u[0], 1.0f);
  u.Resize({3, 3});
  EXPECT_EQ(u.numel(), 9);
  EXPECT_EQ(u.shape(), (Shape{3, 3}));
  // New values are unspecified; the test switch marks every one of them.
  SetResizeFillForTesting(true);
  u.Resize({2, 2});
  SetResizeFillForTesting(false);
  EXPECT_TRUE(std::all_of(u.values().begin(), u.values().end(),
                          [](float v) { return std::bit_cast<std::uint32_t>(v) == kUnwrittenFloatBits; }));
  EXPECT_TRUE(HasUnwrittenValue(u));
  u[0] = 1.0f, u[1] = 2.0f, u[2] = 3.0f;
  EXPECT_TRUE(HasUnwrittenValue(u));
  u[3] = std::nanf("");  // a quiet NaN is a written value
  EXPECT_FALSE(HasUnwrittenValue(u));
  // A default tensor has shape [] and no value; resizing it to [] makes one.
  Tensor s;
  s.Resize({});
  EXPECT_EQ(s.numel(), 1);
}

TEST(TensorTest, ForOverwriteValidatesTheShape) {
  auto t = Tensor::ForOverwrite({4, 5});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->numel(), 20);
  auto scalar = Tensor::ForOverwrite({});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->numel(), 1);
  EXPECT_EQ(Tensor::ForOverwrite({-1, 2}).status().reason(), "tensor-bad-shape");
  EXPECT_EQ(Tensor::ForOverwrite({1 << 30, 1 << 30, 1 << 30}).status().reason(), "tensor-bad-shape");
}

TEST(TensorTest, HashIsBitExactAndShapeSensitive) {
  const Tensor a({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(a.Hash(), Tensor({2, 2}, {1, 2, 3, 4}).Hash());
  EXPECT_NE(a.Hash(), Tensor({4}, {1, 2, 3, 4}).Hash());
  EXPECT_NE(a.Hash(), Tensor({2, 2}, {1, 2, 3, 5}).Hash());
  EXPECT_NE(Tensor({1}, {0.0f}).Hash(), Tensor({1}, {-0.0f}).Hash());
  EXPECT_TRUE(a.BitwiseEqual(Tensor({2, 2}, {1, 2, 3, 4})));
  EXPECT_FALSE(Tensor({1}, {0.0f}).BitwiseEqual(Tensor({1}, {-0.0f})));
  EXPECT_FALSE(a.BitwiseEqual(Tensor({4}, {1, 2, 3, 4})));
}

// The documented encoding (docs/formats.md "Tensors"), rebuilt by hand: the
// header, then the root of a Merkle tree whose leaves are 1024-byte chunks of
// the raw values (kernels/chunk_tree.h).
TEST(TensorTest, HashMatchesDocumentedEncoding) {
  const Tensor t({2, 300}, std::vector<float>(600, 1.5f));
  const Bytes header = {0x00, 0x02, 0x02, 0xac, 0x02};  // f32, rank 2, dims 2 and 300 (varint 0xac 0x02)
  Bytes raw;
  for (int i = 0; i < 600; ++i) {
    for (std::uint8_t byte : {0x00, 0x00, 0xc0, 0x3f}) raw.push_back(byte);  // 1.5f little-endian
  }
  std::vector<Bytes> chunks;
  for (std::size_t at = 0; at < raw.size(); at += 1024)
    chunks.emplace_back(raw.begin() + static_cast<std::ptrdiff_t>(at),
                        raw.begin() + static_cast<std::ptrdiff_t>(std::min(raw.size(), at + 1024)));
  ASSERT_EQ(chunks.size(), 3u);  // 2 full chunks of 256 values and one of 88
  const Hash256 root = crypto::MerkleTree::FromLeafBytes(chunks).root();
  Bytes preimage = header;
  preimage.insert(preimage.end(), root.bytes.begin(), root.bytes.end());
  EXPECT_EQ(t.Hash(), crypto::TaggedHash("veritrain/tensor/v2", preimage));
  Bytes enc = header;
  enc.insert(enc.end(), raw.begin(), raw.end());
  EXPECT_EQ(EncodeTensor(t), enc) << "the codec writes the header and the raw values";
  // Golden vector (also in docs/formats.md): the 2x2 tensor [[1, 2], [3, 4]].
  EXPECT_EQ(Tensor({2, 2}, {1, 2, 3, 4}).Hash().Hex(), "2564e229273a0d1ac8a3e32228fd5762237cb0e9a7fde6986c06dce4c6c68dc2");
}

// The one tensor codec (datasets, checkpoints, arbitration inputs): round
// trips bit for bit, and is strict about what it reads.
TEST(TensorCodecTest, RoundTripsAndRejectsBadBytes) {
  for (const Shape& shape : std::vector<Shape>{{}, {0}, {3}, {2, 3}, {1, 2, 3, 4}}) {
    Tensor t(shape);
    for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = -0.0f + static_cast<float>(i) * 0.37f;
    const Bytes bytes = EncodeTensor(t);
    EXPECT_EQ(t.Hash(), TensorHashFromRoot(shape, ChunkRoot(t.values(), 1)));
    auto back = DecodeTensorBytes(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->BitwiseEqual(t));
    Bytes longer = bytes;
    longer.push_back(0);
    EXPECT_EQ(DecodeTensorBytes(longer).status().reason(), "enc-trailing-bytes");
    if (t.numel() > 0) {
      EXPECT_EQ(DecodeTensorBytes(ByteSpan(bytes).first(bytes.size() - 1)).status().reason(), "enc-truncated");
    }
    Bytes bad = bytes;
    bad[0] = 1;
    EXPECT_EQ(DecodeTensorBytes(bad).status().reason(), "tensor-bad-dtype");
  }
  // A shape whose product overflows is refused before anything is allocated.
  Writer w;
  w.PutU8(0);
  w.PutVarint(3);
  for (int i = 0; i < 3; ++i) w.PutVarint(std::uint64_t{1} << 40);
  EXPECT_EQ(DecodeTensorBytes(w.bytes()).status().reason(), "enc-truncated");
}

}  // namespace
}  // namespace vt::kernels
