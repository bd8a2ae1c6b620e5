// Training state: hash determinism and sensitivity, the documented layout,
// tensor openings against h_t, canonical encoding.

#include "worker/state.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "crypto/merkle.h"
#include "crypto/sha256.h"
#include "protocol/state.h"
#include "tests/support/test_seed.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor_codec.h"

namespace vt::worker {
namespace {

TrainingState SmallState() {
  TrainingState s;
  s.tensors.emplace("fc.weight", kernels::Tensor({2, 2}, {1.0f, -1.0f, 0.5f, 0.0f}));
  s.tensors.emplace("fc.bias", kernels::Tensor({2}, {0.25f, -0.0f}));
  s.tensors.emplace("adam.v.fc.bias", kernels::Tensor({2}, {0.0f, 0.0f}));
  s.step = 3;
  s.rng_counter = 9;
  s.cursor = {1, 4};
  return s;
}

TrainingState RandomState(std::mt19937_64& rng, int tensors) {
  TrainingState s;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < tensors; ++i) {
    const std::int64_t rows = 1 + static_cast<std::int64_t>(rng() % 5);
    const std::int64_t cols = 1 + static_cast<std::int64_t>(rng() % 7);
    kernels::Tensor t({rows, cols});
    for (float& v : t.values()) v = normal(rng);
    s.tensors.emplace("t" + std::to_string(rng() % 1000) + "_" + std::to_string(i), std::move(t));
  }
  s.step = rng() % 100;
  s.rng_counter = rng();
  s.cursor = {rng() % 10, rng() % 10};
  return s;
}

TEST(StateTest, HashFollowsTheDocumentedLayout) {
  const TrainingState s = SmallState();
  // Leaves: tensor hashes in bytewise name order, then the header.
  std::vector<Hash256> leaves = {s.tensors.at("adam.v.fc.bias").Hash(), s.tensors.at("fc.bias").Hash(),
                                 s.tensors.at("fc.weight").Hash()};
  protocol::StateHeader h;
  h.step = 3;
  h.rng_counter = 9;
  h.data_epoch = 1;
  h.data_offset = 4;
  h.tensor_names = {"adam.v.fc.bias", "fc.bias", "fc.weight"};
  EXPECT_EQ(s.Header(), h);
  leaves.push_back(protocol::StateHeaderHash(h));
  EXPECT_EQ(StateLeafHashes(s), leaves);
  EXPECT_EQ(StateHash(s), crypto::MerkleRoot(leaves));
  // Tensor leaves are TaggedHash("veritrain/tensor/v2", header ‖ chunk root) (kernels/chunk_tree.h).
  const kernels::Tensor& bias = s.tensors.at("fc.bias");
  EXPECT_EQ(leaves[1], kernels::TensorHashFromRoot(bias.shape(), kernels::ChunkRoot(bias.values(), 1)));
  // Golden value (v1 flat tensor hashes were also computed in Python from
  // docs/formats.md; this v2 value is pinned from the chunk-tree layout
  // checked above).
  EXPECT_EQ(StateHash(s).Hex(), "3b0595dd148b3f707082f4bf7f8a9b52145eecc4634fdecb711ee74972f87d26");
}

TEST(StateTest, HashIsDeterministicAndSensitive) {
  std::mt19937_64 rng(vt::test::TestSeed());
  const TrainingState base = RandomState(rng, 6);
  const Hash256 h = StateHash(base);
  TrainingState copy = base;
  EXPECT_EQ(StateHash(copy), h);

  std::vector<TrainingState> variants;
  {
    TrainingState v = base;  // one bit of one value
    auto& t = v.tensors.begin()->second;
    std::uint32_t bits;
    std::memcpy(&bits, &t[0], 4);
    bits ^= 1;
    std::memcpy(&t[0], &bits, 4);
    variants.push_back(v);
  }
  {
    TrainingState v = SmallState();  // -0.0 vs 0.0
    v.tensors.at("fc.bias")[1] = 0.0f;
    EXPECT_NE(StateHash(v), StateHash(SmallState()));
  }
  {
    TrainingState v = base;  // same values, other shape
    auto& t = v.tensors.begin()->second;
    t = t.Reshaped({t.numel()}).value();
    variants.push_back(v);
  }
  {
    TrainingState v = base;  // renamed
    auto node = v.tensors.extract(v.tensors.begin());
    node.key() += "x";
    v.tensors.insert(std::move(node));
    variants.push_back(v);
  }
  {
    TrainingState v = base;
    v.step += 1;
    variants.push_back(v);
  }
  {
    TrainingState v = base;
    v.rng_counter += 1;
    variants.push_back(v);
  }
  {
    TrainingState v = base;
    v.cursor.offset += 1;
    variants.push_back(v);
  }
  {
    TrainingState v = base;
    v.cursor.epoch += 1;
    variants.push_back(v);
  }
  {
    TrainingState v = base;  // a tensor fewer
    v.tensors.erase(v.tensors.begin());
    variants.push_back(v);
  }
  for (std::size_t i = 0; i < variants.size(); ++i) EXPECT_NE(StateHash(variants[i]), h) << "variant " << i;
}

TEST(StateTest, OpeningsVerifyAgainstTheStateHash) {
  std::mt19937_64 rng(vt::test::TestSeed());
  const TrainingState s = RandomState(rng, 7);
  const Hash256 root = StateHash(s);
  const std::uint64_t n = s.tensors.size();
  const auto all = OpenAllTensors(s);
  ASSERT_EQ(all.size(), n);
  std::uint64_t i = 0;
  for (const auto& [name, t] : s.tensors) {
    auto opening = OpenTensor(s, name);
    ASSERT_TRUE(opening.ok()) << opening.status().ToString();
    EXPECT_EQ(opening->index, i);
    EXPECT_EQ(opening->tensor_hash, t.Hash());
    EXPECT_EQ(opening->proof, all[i].proof);
    EXPECT_TRUE(protocol::VerifyStateTensor(root, n, i, t.Hash(), opening->proof).ok()) << name;
    // A different tensor does not verify at this position.
    kernels::Tensor other = t;
    other[0] += 1.0f;
    EXPECT_EQ(protocol::VerifyStateTensor(root, n, i, other.Hash(), opening->proof).reason(),
              "merkle-proof-mismatch");
    ++i;
  }
  // The header leaf opens too.
  const auto tree = crypto::MerkleTree::FromLeafHashes(StateLeafHashes(s));
  EXPECT_TRUE(protocol::VerifyStateHeader(root, s.Header(), tree.Prove(n)).ok());

  const Status missing = OpenTensor(s, "no.such.tensor").status();
  EXPECT_TRUE(missing.is_invalid());
  EXPECT_EQ(missing.reason(), "state-no-such-tensor");
}

TEST(StateTest, EmptyStateHasAHash) {
  TrainingState s;
  EXPECT_TRUE(ValidateState(s).ok());
  EXPECT_EQ(StateHash(s), crypto::MerkleRoot(std::vector<Hash256>{protocol::StateHeaderHash(s.Header())}));
}

TEST(StateTest, ValidateRejectsBadNames) {
  TrainingState s = SmallState();
  s.tensors.emplace("", kernels::Tensor({1}));
  EXPECT_EQ(ValidateState(s).reason(), "state-bad-names");
  TrainingState long_name = SmallState();
  long_name.tensors.emplace(std::string(protocol::kMaxTensorNameBytes + 1, 'n'), kernels::Tensor({1}));
  EXPECT_EQ(ValidateState(long_name).reason(), "state-bad-names");
}

TEST(StateTest, EncodingRoundTripsBitExactly) {
  std::mt19937_64 rng(vt::test::TestSeed());
  for (int iter = 0; iter < 20; ++iter) {
    TrainingState s = RandomState(rng, static_cast<int>(rng() % 5));
    s.tensors.emplace("zero_sized", kernels::Tensor({0, 3}));
    s.tensors.emplace("scalar", kernels::Tensor({}, {-0.0f}));
    const Bytes enc = EncodeState(s);
    auto back = DecodeState(enc);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->BitwiseEqual(s));
    EXPECT_EQ(StateHash(*back), StateHash(s));
  }
}

TEST(StateTest, DecodingRejectsDamage) {
  const Bytes enc = EncodeState(SmallState());
  for (std::size_t n = 0; n < enc.size(); ++n) {
    const Status st = DecodeState(ByteSpan(enc.data(), n)).status();
    EXPECT_TRUE(st.is_invalid()) << n;
    EXPECT_EQ(st.reason(), "enc-truncated") << n << ": " << st.ToString();
  }
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeState(longer).status().reason(), "enc-trailing-bytes");
  // The first tensor's dtype byte comes right after the header.
  const std::size_t header = protocol::EncodeStateHeader(SmallState().Header()).size();
  Bytes bad_dtype = enc;
  bad_dtype[header] = 1;
  EXPECT_EQ(DecodeState(bad_dtype).status().reason(), "tensor-bad-dtype");
  Bytes bad_rank = enc;
  bad_rank[header + 1] = 33;
  EXPECT_EQ(DecodeState(bad_rank).status().reason(), "tensor-bad-shape");
}

TEST(StateTest, TensorCodecRejectsShapesBeyondTheInput) {
  Writer w;
  w.PutU8(0);
  w.PutVarint(2);
  w.PutVarint(std::uint64_t{1} << 40);
  w.PutVarint(std::uint64_t{1} << 40);  // 2^80 elements: must not overflow or allocate
  Reader r(w.bytes());
  EXPECT_EQ(kernels::DecodeTensor(r).status().reason(), "enc-truncated");
}

}  // namespace
}  // namespace vt::worker
