// Frame codec: round trips, golden bytes, and every rejection of the decoder.

#include "net/frame.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "crypto/sha256.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

constexpr std::uint32_t kMagic = 0xa065e352;  // ChainMagic("veritrain-testnet")

Bytes RandomBytes(std::mt19937_64& rng, std::size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  return b;
}

Bytes Header(std::uint32_t magic, std::uint16_t type, std::uint32_t length, Checksum checksum = {}) {
  Bytes h;
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<std::uint8_t>(magic >> (8 * i)));
  h.push_back(static_cast<std::uint8_t>(type));
  h.push_back(static_cast<std::uint8_t>(type >> 8));
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<std::uint8_t>(length >> (8 * i)));
  h.insert(h.end(), checksum.begin(), checksum.end());
  return h;
}

// Feeds all of `bytes` in chunks of the given sizes (cycled); collects frames
// until an error.
Status FeedAll(FrameDecoder& dec, ByteSpan bytes, const std::vector<std::size_t>& chunks,
               std::vector<Frame>* out) {
  std::size_t pos = 0;
  std::size_t ci = 0;
  while (pos < bytes.size()) {
    const std::size_t n = std::min(chunks[ci++ % chunks.size()], bytes.size() - pos);
    ByteSpan piece = bytes.subspan(pos, n);
    pos += n;
    while (!piece.empty()) {
      Result<std::size_t> used = dec.Feed(piece);
      if (!used.ok()) return used.status();
      piece = piece.subspan(*used);
      if (auto f = dec.TakeFrame()) out->push_back(std::move(*f));
    }
  }
  return Status::Ok();
}

TEST(NetFrame, ChainMagicGolden) {
  EXPECT_EQ(ChainMagic("veritrain-testnet"), kMagic);
  EXPECT_NE(ChainMagic("veritrain-testnet"), ChainMagic("veritrain-testnet2"));
}

TEST(NetFrame, GoldenEncoding) {
  const Bytes payload = {1, 2, 3, 4, 5, 6, 7, 8};
  const Bytes frame = EncodeFrame(kMagic, MsgType::kPing, payload);
  EXPECT_EQ(ToHex(frame), "52e365a0" "0300" "08000000" "66840dda" "0102030405060708");
  // An empty payload carries SHA-256("")[0..4] = e3b0c442.
  EXPECT_EQ(ToHex(EncodeFrame(kMagic, MsgType::kTx, {})), "52e365a0" "1000" "00000000" "e3b0c442");
}

TEST(NetFrame, RoundTripInAnyChunking) {
  std::mt19937_64 rng(vt::test::TestSeed());
  const std::vector<MsgType> types = {MsgType::kHello, MsgType::kPing, MsgType::kTx,
                                      MsgType::kBlock, MsgType::kBlobChunk, MsgType::kGetBlob};
  std::vector<Frame> sent;
  Bytes stream;
  for (int i = 0; i < 60; ++i) {
    const MsgType type = types[rng() % types.size()];
    const std::size_t cap = std::min<std::size_t>(MaxPayload(type), 100'000);
    std::size_t len = rng() % (cap + 1);
    if (i % 10 == 0) len = 0;
    if (i == 7) len = cap;  // exactly at the cap (for small caps)
    Frame f;
    f.type = type;
    f.payload = RandomBytes(rng, len);
    const Bytes enc = EncodeFrame(kMagic, f.type, f.payload);
    ASSERT_EQ(enc.size(), kFrameHeaderSize + len);
    stream.insert(stream.end(), enc.begin(), enc.end());
    sent.push_back(std::move(f));
  }
  for (const std::vector<std::size_t>& chunks :
       std::vector<std::vector<std::size_t>>{{1}, {3, 7, 1}, {13, 14, 15}, {4096}, {stream.size()}}) {
    FrameDecoder dec(kMagic);
    std::vector<Frame> got;
    ASSERT_TRUE(FeedAll(dec, stream, chunks, &got).ok());
    EXPECT_TRUE(dec.Finish().ok());
    ASSERT_EQ(got.size(), sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(got[i].type, sent[i].type) << i;
      EXPECT_EQ(got[i].payload, sent[i].payload) << i;
      EXPECT_EQ(got[i].payload_sha256, crypto::Sha256Digest(sent[i].payload)) << i;
    }
  }
}

TEST(NetFrame, DecodeFrameOneShot) {
  const Bytes payload = {9, 9, 9};
  const Bytes enc = EncodeFrame(kMagic, MsgType::kTx, payload);
  Result<Frame> f = DecodeFrame(kMagic, enc);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->type, MsgType::kTx);
  EXPECT_EQ(f->payload, payload);
}

TEST(NetFrame, OversizeRejectedFromTheHeaderAlone) {
  // 4 GiB announced for a tx: rejected after the 14 header bytes, and the
  // decoder allocated nothing for it.
  FrameDecoder dec(kMagic);
  const Bytes header = Header(kMagic, static_cast<std::uint16_t>(MsgType::kTx), 0xffffffffu);
  Result<std::size_t> r = dec.Feed(header);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "frame-oversize");
  EXPECT_EQ(dec.payload_capacity(), 0u);

  // One byte over a type's own (small) cap.
  FrameDecoder dec2(kMagic);
  r = dec2.Feed(Header(kMagic, static_cast<std::uint16_t>(MsgType::kPing), MaxPayload(MsgType::kPing) + 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "frame-oversize");

  // One byte over the global cap for the largest type.
  FrameDecoder dec3(kMagic);
  r = dec3.Feed(Header(kMagic, static_cast<std::uint16_t>(MsgType::kBlobChunk), kMaxFramePayload + 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "frame-oversize");
  EXPECT_EQ(MaxPayload(MsgType::kBlobChunk), kMaxFramePayload);
}

TEST(NetFrame, LegalLargeLengthIsNotAllocatedAhead) {
  // 16 MiB announced (legal for a blob chunk) but only 100 bytes sent: the
  // buffer stays near what arrived, not what was announced.
  FrameDecoder dec(kMagic);
  Bytes bytes = Header(kMagic, static_cast<std::uint16_t>(MsgType::kBlobChunk), kMaxFramePayload);
  bytes.resize(bytes.size() + 100, 0xab);
  Result<std::size_t> r = dec.Feed(bytes);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, bytes.size());
  EXPECT_LE(dec.payload_capacity(), std::size_t{64} << 10);
  EXPECT_EQ(dec.buffered(), kFrameHeaderSize + 100);
  EXPECT_EQ(dec.Finish().reason(), "frame-truncated");
}

TEST(NetFrame, BadMagicRejectedAtTheFourthByte) {
  FrameDecoder dec(kMagic);
  const Bytes garbage = {'G', 'E', 'T', ' ', '/', ' ', 'H'};
  Result<std::size_t> r = dec.Feed(ByteSpan(garbage).first(3));
  ASSERT_TRUE(r.ok());  // three bytes could still be a magic prefix
  EXPECT_EQ(*r, 3u);
  r = dec.Feed(ByteSpan(garbage).subspan(3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "frame-bad-magic");
  // Another chain's magic is garbage too.
  EXPECT_EQ(DecodeFrame(kMagic, EncodeFrame(ChainMagic("other-chain"), MsgType::kPing, Bytes(8))).status().reason(),
            "frame-bad-magic");
}

TEST(NetFrame, UnknownTypeRejected) {
  for (std::uint16_t type : {std::uint16_t{0}, std::uint16_t{6}, std::uint16_t{999}, std::uint16_t{0xffff}}) {
    FrameDecoder dec(kMagic);
    Result<std::size_t> r = dec.Feed(Header(kMagic, type, 0));
    ASSERT_FALSE(r.ok()) << type;
    EXPECT_EQ(r.status().reason(), "frame-unknown-type");
  }
}

// The message table (net/msg_types.h) is what the enum, caps, names and the
// dispatch are made of: pin its wire numbers (append-only) and its answers.
TEST(NetFrame, MessageTablePinsWireNumbersAndAnswersForEveryRow) {
  const std::vector<std::pair<MsgType, std::uint16_t>> pinned = {
      {MsgType::kHello, 1},       {MsgType::kDisconnect, 2}, {MsgType::kPing, 3},     {MsgType::kPong, 4},
      {MsgType::kAuth, 5},        {MsgType::kTx, 16},        {MsgType::kBlock, 17},   {MsgType::kConsensus, 18},
      {MsgType::kGetHeaders, 32},
      {MsgType::kHeaders, 33},    {MsgType::kGetBlocks, 34}, {MsgType::kBlocks, 35},  {MsgType::kGetBlob, 48},
      {MsgType::kBlobChunk, 49},  {MsgType::kBlobNotFound, 50}};
  std::set<std::string_view> names;
  for (const auto& [type, wire] : pinned) {
    EXPECT_EQ(static_cast<std::uint16_t>(type), wire);
    const MsgSpec* spec = FindMsgSpec(wire);
    ASSERT_NE(spec, nullptr) << wire;
    EXPECT_EQ(spec->type, type);
    EXPECT_EQ(MsgTypeName(type), spec->name);
    EXPECT_EQ(MaxPayload(type), spec->max_payload);
    EXPECT_TRUE(names.insert(spec->name).second) << spec->name;
  }
  std::size_t known = 0;
  for (std::uint32_t t = 0; t <= 0xffff; ++t) known += IsKnownType(static_cast<std::uint16_t>(t)) ? 1 : 0;
  EXPECT_EQ(known, pinned.size()) << "a row without a pinned wire number";
  EXPECT_EQ(FindMsgSpec(6), nullptr);
  // Only the handshake and disconnect are read before a peer proved its key.
  EXPECT_EQ(SpecOf(MsgType::kHello).phase, MsgPhase::kHandshake);
  EXPECT_EQ(SpecOf(MsgType::kAuth).phase, MsgPhase::kHandshake);
  EXPECT_EQ(SpecOf(MsgType::kDisconnect).phase, MsgPhase::kAny);
  EXPECT_EQ(SpecOf(MsgType::kTx).phase, MsgPhase::kEstablished);
}

TEST(NetFrame, BadChecksumRejected) {
  const Bytes payload = {1, 2, 3, 4, 5, 6, 7, 8};
  Bytes enc = EncodeFrame(kMagic, MsgType::kPing, payload);
  Bytes flipped_payload = enc;
  flipped_payload.back() ^= 0x01;
  EXPECT_EQ(DecodeFrame(kMagic, flipped_payload).status().reason(), "frame-bad-checksum");
  Bytes flipped_sum = enc;
  flipped_sum[10] ^= 0x80;
  EXPECT_EQ(DecodeFrame(kMagic, flipped_sum).status().reason(), "frame-bad-checksum");
}

TEST(NetFrame, TruncatedAndTrailing) {
  const Bytes enc = EncodeFrame(kMagic, MsgType::kTx, Bytes{1, 2, 3});
  EXPECT_EQ(DecodeFrame(kMagic, ByteSpan(enc).first(enc.size() - 1)).status().reason(), "frame-truncated");
  EXPECT_EQ(DecodeFrame(kMagic, ByteSpan(enc).first(5)).status().reason(), "frame-truncated");  // inside the header
  EXPECT_EQ(DecodeFrame(kMagic, {}).status().reason(), "frame-truncated");
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeFrame(kMagic, longer).status().reason(), "frame-trailing-bytes");

  FrameDecoder dec(kMagic);
  ASSERT_TRUE(dec.Feed(ByteSpan(enc).first(kFrameHeaderSize + 1)).ok());
  EXPECT_FALSE(dec.TakeFrame().has_value());
  EXPECT_EQ(dec.Finish().reason(), "frame-truncated");
}

TEST(NetFrame, ErrorPoisonsTheDecoder) {
  FrameDecoder dec(kMagic);
  ASSERT_FALSE(dec.Feed(Header(kMagic, 0xffff, 0)).ok());
  // A valid frame afterwards is not accepted: the stream is unsynchronised.
  Result<std::size_t> r = dec.Feed(EncodeFrame(kMagic, MsgType::kPing, Bytes(8)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "frame-unknown-type");
  EXPECT_EQ(dec.Finish().reason(), "frame-unknown-type");
}

TEST(NetFrame, MutatedStreamsNeverYieldForgedPayloads) {
  // Property: a corrupted stream decodes only into payloads that were sent
  // (at their position) or fails with one of the stable reasons. The
  // checksum covers the payload, not the header: a flip of a type byte to
  // another known type is the one corruption that can pass.
  std::mt19937_64 rng(vt::test::TestSeed() ^ 0x5eed);
  const std::set<std::string> reasons = {"frame-bad-magic", "frame-unknown-type", "frame-oversize",
                                         "frame-bad-checksum"};
  for (int round = 0; round < 300; ++round) {
    std::vector<Bytes> payloads;
    std::vector<std::size_t> starts;
    Bytes stream;
    for (int i = 0; i < 4; ++i) {
      payloads.push_back(RandomBytes(rng, rng() % 200));
      const Bytes enc = EncodeFrame(kMagic, MsgType::kTx, payloads.back());
      starts.push_back(stream.size());
      stream.insert(stream.end(), enc.begin(), enc.end());
    }
    const std::size_t pos = rng() % stream.size();
    stream[pos] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    FrameDecoder dec(kMagic);
    std::vector<Frame> got;
    const Status st = FeedAll(dec, stream, {1 + rng() % 64}, &got);
    ASSERT_LE(got.size(), payloads.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].payload, payloads[i]) << "round " << round;
    }
    if (!st.ok()) {
      EXPECT_TRUE(reasons.count(st.reason())) << st.ToString();
    }
    if (got.size() == payloads.size()) {
      std::size_t frame = 0;
      while (frame + 1 < starts.size() && starts[frame + 1] <= pos) ++frame;
      const std::size_t offset = pos - starts[frame];
      EXPECT_TRUE(offset == 4 || offset == 5) << "corruption at offset " << offset << " passed, round " << round;
      EXPECT_NE(got[frame].type, MsgType::kTx);
    }
  }
}

}  // namespace
}  // namespace vt::net
