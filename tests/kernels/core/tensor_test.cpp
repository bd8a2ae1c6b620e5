#include <gtest/gtest.h>

#include <cmath>

#include "common/encoding.h"
#include "crypto/sha256.h"
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
  EXPECT_EQ(u[0], 0.0f);
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

// The documented encoding (docs/formats.md "Tensors"), rebuilt by hand.
TEST(TensorTest, HashMatchesDocumentedEncoding) {
  const Tensor t({2, 300}, std::vector<float>(600, 1.5f));
  Bytes enc = {0x00, 0x02, 0x02, 0xac, 0x02};  // f32, rank 2, dims 2 and 300 (varint 0xac 0x02)
  for (int i = 0; i < 600; ++i) {
    for (std::uint8_t byte : {0x00, 0x00, 0xc0, 0x3f}) enc.push_back(byte);  // 1.5f little-endian
  }
  EXPECT_EQ(t.Hash(), crypto::TaggedHash("veritrain/tensor/v1", enc));
  EXPECT_EQ(EncodeTensor(t), enc) << "the codec writes exactly the hash preimage";
  // Golden vector (also in docs/formats.md): the 2x2 tensor [[1, 2], [3, 4]].
  EXPECT_EQ(Tensor({2, 2}, {1, 2, 3, 4}).Hash().Hex(), "e6729242878d9d48b3b2acec96be16c3f3c3a50d216a0799176337bc6e7d7bd2");
}

// The one tensor codec (datasets, checkpoints, arbitration inputs): round
// trips bit for bit, and is strict about what it reads.
TEST(TensorCodecTest, RoundTripsAndRejectsBadBytes) {
  for (const Shape& shape : std::vector<Shape>{{}, {0}, {3}, {2, 3}, {1, 2, 3, 4}}) {
    Tensor t(shape);
    for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = -0.0f + static_cast<float>(i) * 0.37f;
    const Bytes bytes = EncodeTensor(t);
    EXPECT_EQ(t.Hash(), crypto::TaggedHash("veritrain/tensor/v1", bytes));
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
