// The state-hash layout shared by worker and referee (protocol/state.h).

#include "protocol/state.h"

#include <gtest/gtest.h>

#include <string>

#include "crypto/merkle.h"
#include "crypto/sha256.h"

namespace vt::protocol {
namespace {

StateHeader SampleHeader() {
  StateHeader h;
  h.step = 5;
  h.rng_counter = 0x100;
  h.data_epoch = 2;
  h.data_offset = 17;
  h.tensor_names = {"fc1.bias", "fc1.weight", "opt.m.fc1.bias"};
  return h;
}

std::vector<Hash256> SampleTensorHashes(std::size_t n) {
  std::vector<Hash256> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(crypto::Sha256Digest("tensor " + std::to_string(i)));
  return out;
}

TEST(StateHeaderTest, RoundTripAndGoldenBytes) {
  const StateHeader h = SampleHeader();
  const Bytes enc = EncodeStateHeader(h);
  auto dec = DecodeStateHeader(enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, h);
  const std::string expected = std::string("0500000000000000") + "0001000000000000" + "0200000000000000" +
                               "1100000000000000" + "03" + "08" + ToHex(AsBytes("fc1.bias")) + "0a" +
                               ToHex(AsBytes("fc1.weight")) + "0e" + ToHex(AsBytes("opt.m.fc1.bias"));
  EXPECT_EQ(ToHex(enc), expected);
  EXPECT_EQ(StateHeaderHash(h), crypto::TaggedHash("veritrain/state/header/v1", enc));
}

TEST(StateHeaderTest, RejectsBadNames) {
  const std::vector<std::vector<std::string>> bad = {
      {"b", "a"},                                  // unsorted
      {"a", "a"},                                  // duplicate
      {"a", ""},                                   // empty
      {std::string(kMaxTensorNameBytes + 1, 'x')}, // too long (rejected by the length cap)
  };
  for (const auto& names : bad) {
    StateHeader h = SampleHeader();
    h.tensor_names = names;
    const Status st = DecodeStateHeader(EncodeStateHeader(h)).status();
    EXPECT_TRUE(st.is_invalid()) << names.size();
    EXPECT_TRUE(st.reason() == "state-bad-names" || st.reason() == "enc-length-over-cap") << st.ToString();
    EXPECT_TRUE(ValidateStateHeader(h).is_invalid());
  }
  // Bytewise order: "B" (0x42) < "a" (0x61) < "\xc3" (0xc3, a UTF-8 lead byte).
  StateHeader ok = SampleHeader();
  ok.tensor_names = {"B", "a", "\xc3\xa9"};
  EXPECT_TRUE(DecodeStateHeader(EncodeStateHeader(ok)).ok());
}

TEST(StateHeaderTest, RejectsTruncationAndTrailingBytes) {
  const Bytes enc = EncodeStateHeader(SampleHeader());
  for (std::size_t n = 0; n < enc.size(); ++n)
    EXPECT_EQ(DecodeStateHeader(ByteSpan(enc.data(), n)).status().reason(), "enc-truncated") << n;
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeStateHeader(longer).status().reason(), "enc-trailing-bytes");
}

TEST(StateHashTest, IsMerkleRootOverTensorsThenHeader) {
  const StateHeader h = SampleHeader();
  const auto tensors = SampleTensorHashes(3);
  std::vector<Hash256> leaves = tensors;
  leaves.push_back(StateHeaderHash(h));
  EXPECT_EQ(StateHashFromLeaves(tensors, h), crypto::MerkleRoot(leaves));

  StateHeader moved = h;
  moved.data_offset += 1;
  EXPECT_NE(StateHashFromLeaves(tensors, moved), StateHashFromLeaves(tensors, h));
  StateHeader renamed = h;
  renamed.tensor_names[0] = "fc0.bias";
  EXPECT_NE(StateHashFromLeaves(tensors, renamed), StateHashFromLeaves(tensors, h));
}

TEST(StateHashTest, TensorAndHeaderOpenings) {
  const StateHeader h = SampleHeader();
  const auto tensors = SampleTensorHashes(3);
  std::vector<Hash256> leaves = tensors;
  leaves.push_back(StateHeaderHash(h));
  const auto tree = crypto::MerkleTree::FromLeafHashes(leaves);
  const Hash256 root = StateHashFromLeaves(tensors, h);
  ASSERT_EQ(tree.root(), root);

  for (std::uint64_t i = 0; i < tensors.size(); ++i) {
    const crypto::MerkleProof proof = tree.Prove(i);
    EXPECT_TRUE(VerifyStateTensor(root, 3, i, tensors[i], proof).ok()) << i;
    // Wrong tensor at the right place.
    EXPECT_EQ(VerifyStateTensor(root, 3, i, tensors[(i + 1) % 3], proof).reason(), "merkle-proof-mismatch");
    // The right proof claimed for another index, or another tensor count.
    EXPECT_EQ(VerifyStateTensor(root, 3, (i + 1) % 3, tensors[i], proof).reason(), "state-proof-bad-position");
    EXPECT_EQ(VerifyStateTensor(root, 4, i, tensors[i], proof).reason(), "state-proof-bad-position");
  }
  // The header leaf cannot be passed off as a tensor.
  EXPECT_EQ(VerifyStateTensor(root, 3, 3, leaves[3], tree.Prove(3)).reason(), "state-proof-bad-position");
  EXPECT_TRUE(VerifyStateHeader(root, h, tree.Prove(3)).ok());
  StateHeader lie = h;
  lie.step += 1;
  EXPECT_EQ(VerifyStateHeader(root, lie, tree.Prove(3)).reason(), "merkle-proof-mismatch");
  EXPECT_EQ(VerifyStateHeader(root, h, tree.Prove(2)).reason(), "state-proof-bad-position");
}

}  // namespace
}  // namespace vt::protocol
