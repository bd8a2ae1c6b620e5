// Payload codecs of the P2P messages: round trips, a golden Hello, rejections.

#include "net/messages.h"

#include <gtest/gtest.h>

#include <string>

#include "common/encoding.h"

namespace vt::net {
namespace {

Hash256 Filled(std::uint8_t v) {
  Hash256 h;
  h.bytes.fill(v);
  return h;
}

template <typename T>
void ExpectRoundTrip(const T& v) {
  const Bytes enc = EncodeToBytes(v);
  Result<T> dec = DecodeExact<T>(enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, v);
  // Every strict prefix is truncated, one more byte is trailing.
  for (std::size_t n = 0; n < enc.size(); ++n) {
    EXPECT_FALSE(DecodeExact<T>(ByteSpan(enc).first(n)).ok()) << n;
  }
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeExact<T>(longer).status().reason(), "enc-trailing-bytes");
}

TEST(NetMessages, HelloGolden) {
  Hello h;
  h.protocol_version = 1;
  h.chain_id = "vt";
  h.genesis_hash = Filled(0xaa);
  h.node_id = Filled(0xbb);
  h.challenge = Filled(0xcc);
  h.ephemeral = Filled(0xdd);
  h.listen_port = 0x1234;
  h.best_height = 5;
  h.user_agent = "u";
  const std::string expected = std::string("01000000") + "02" + "7674" + std::string(64, 'a') + std::string(64, 'b') +
                               std::string(64, 'c') + std::string(64, 'd') + "3412" + "0500000000000000" + "01" + "75";
  EXPECT_EQ(ToHex(EncodeToBytes(h)), expected);
}

TEST(NetMessages, RoundTrips) {
  Hello h;
  h.chain_id = "veritrain-testnet";
  h.genesis_hash = Filled(1);
  h.node_id = Filled(2);
  h.challenge = Filled(5);
  h.ephemeral = Filled(6);
  h.listen_port = 9000;
  h.best_height = 1234567;
  h.user_agent = "veritrain/0.1";
  ExpectRoundTrip(h);
  ExpectRoundTrip(DisconnectMsg{"handshake-wrong-chain"});
  AuthMsg auth;
  for (std::size_t i = 0; i < auth.signature.bytes.size(); ++i) auth.signature.bytes[i] = static_cast<std::uint8_t>(i);
  ExpectRoundTrip(auth);
  ExpectRoundTrip(PingMsg{0x0123456789abcdefULL});
  ExpectRoundTrip(GetItems{7, 100, 128});
  ExpectRoundTrip(Items{7, 100, {Bytes{1, 2, 3}, Bytes{}, Bytes(300, 9)}});
  ExpectRoundTrip(Items{8, 0, {}});
  ExpectRoundTrip(GetBlob{9, Filled(3), 1 << 20, 1 << 20});
  ExpectRoundTrip(BlobChunk{9, Filled(3), 5 << 20, 1 << 20, Bytes(1000, 4)});
  ExpectRoundTrip(BlobNotFound{9, Filled(3)});
}

TEST(NetMessages, CapsAreEnforced) {
  Hello h;
  h.chain_id = std::string(kMaxChainIdBytes + 1, 'x');
  EXPECT_EQ(DecodeExact<Hello>(EncodeToBytes(h)).status().reason(), "enc-length-over-cap");
  h.chain_id = "ok";
  h.user_agent = std::string(kMaxUserAgentBytes + 1, 'x');
  EXPECT_EQ(DecodeExact<Hello>(EncodeToBytes(h)).status().reason(), "enc-length-over-cap");

  EXPECT_EQ(DecodeExact<GetItems>(EncodeToBytes(GetItems{1, 0, 0})).status().reason(), "msg-bad-count");
  EXPECT_EQ(DecodeExact<GetItems>(EncodeToBytes(GetItems{1, 0, kMaxItemsPerResponse + 1})).status().reason(),
            "msg-bad-count");
  EXPECT_TRUE(DecodeExact<GetItems>(EncodeToBytes(GetItems{1, 0, kMaxItemsPerResponse})).ok());

  EXPECT_EQ(DecodeExact<GetBlob>(EncodeToBytes(GetBlob{1, Filled(0), 0, 0})).status().reason(), "msg-bad-count");
  EXPECT_EQ(DecodeExact<GetBlob>(EncodeToBytes(GetBlob{1, Filled(0), 0, kMaxBlobChunk + 1})).status().reason(),
            "msg-bad-count");

  // An item count above the cap is refused before any item is read.
  Writer w;
  w.PutU64(1);
  w.PutU64(0);
  w.PutVarint(kMaxItemsPerResponse + 1);
  EXPECT_EQ(DecodeExact<Items>(w.bytes()).status().reason(), "enc-length-over-cap");

  DisconnectMsg d{std::string(kMaxReasonBytes + 1, 'r')};
  EXPECT_EQ(DecodeExact<DisconnectMsg>(EncodeToBytes(d)).status().reason(), "enc-length-over-cap");
}

}  // namespace
}  // namespace vt::net
