// Fuzz target for everything a peer's bytes go through before the node sees
// them: the incremental frame decoder and the payload decoders of
// net/messages.h. Input: byte 0 picks the chunk size the stream is fed in,
// the rest is the stream. Properties: no crash, no unbounded allocation; every
// accepted frame re-encodes to exactly the bytes it came from, and every
// accepted payload re-encodes to exactly its bytes (one value, one encoding).
#include <cstddef>
#include <iterator>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <optional>

#include "common/encoding.h"
#include "net/frame.h"
#include "net/messages.h"

namespace {

constexpr std::uint32_t kMagic = 0xa065e352;  // ChainMagic("veritrain-testnet")

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "wire_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

template <typename T>
void RoundTrip(vt::ByteSpan payload) {
  vt::Result<T> decoded = vt::DecodeExact<T>(payload);
  if (!decoded.ok()) return;
  const vt::Bytes again = vt::EncodeToBytes(*decoded);
  Check(again.size() == payload.size() && std::equal(again.begin(), again.end(), payload.begin()),
        "payload re-encodes differently");
}

void CheckPayload(const vt::net::Frame& frame) {
  using vt::net::MsgType;
  switch (frame.type) {
    case MsgType::kHello: return RoundTrip<vt::net::Hello>(frame.payload);
    case MsgType::kDisconnect: return RoundTrip<vt::net::DisconnectMsg>(frame.payload);
    case MsgType::kAuth: return RoundTrip<vt::net::AuthMsg>(frame.payload);
    case MsgType::kPing:
    case MsgType::kPong: return RoundTrip<vt::net::PingMsg>(frame.payload);
    case MsgType::kGetHeaders:
    case MsgType::kGetBlocks: return RoundTrip<vt::net::GetItems>(frame.payload);
    case MsgType::kHeaders:
    case MsgType::kBlocks: return RoundTrip<vt::net::Items>(frame.payload);
    case MsgType::kGetBlob: return RoundTrip<vt::net::GetBlob>(frame.payload);
    case MsgType::kBlobChunk: return RoundTrip<vt::net::BlobChunk>(frame.payload);
    case MsgType::kBlobNotFound: return RoundTrip<vt::net::BlobNotFound>(frame.payload);
    case MsgType::kTx:
    case MsgType::kBlock:
    case MsgType::kConsensus: return;  // opaque to net (consensus/wire.h decodes it)
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] & 0x80) {
    // Payload decoders directly (a fuzzer rarely forges frame checksums):
    // byte 1 picks the message type.
    static constexpr vt::net::MsgType kTypes[] = {
        vt::net::MsgType::kHello,    vt::net::MsgType::kDisconnect, vt::net::MsgType::kPing,
        vt::net::MsgType::kGetBlocks, vt::net::MsgType::kBlocks,    vt::net::MsgType::kGetBlob,
        vt::net::MsgType::kBlobChunk, vt::net::MsgType::kBlobNotFound, vt::net::MsgType::kAuth};
    if (size < 2) return 0;
    vt::net::Frame frame;
    frame.type = kTypes[data[1] % std::size(kTypes)];
    frame.payload.assign(data + 2, data + size);
    CheckPayload(frame);
    return 0;
  }
  const std::size_t chunk = 1 + data[0] % 64;
  const vt::ByteSpan stream(data + 1, size - 1);
  vt::net::FrameDecoder decoder(kMagic);
  std::size_t pos = 0;        // bytes fed so far
  std::size_t frame_start = 0;
  while (pos < stream.size()) {
    vt::ByteSpan piece = stream.subspan(pos, std::min(chunk, stream.size() - pos));
    while (!piece.empty()) {
      vt::Result<std::size_t> used = decoder.Feed(piece);
      if (!used.ok()) {
        Check(!decoder.Finish().ok(), "an error that Finish forgets");
        return 0;
      }
      piece = piece.subspan(*used);
      pos += *used;
      Check(decoder.payload_capacity() <= std::size_t{16} << 20, "payload buffer over the frame cap");
      if (std::optional<vt::net::Frame> frame = decoder.TakeFrame()) {
        const vt::Bytes again = vt::net::EncodeFrame(kMagic, frame->type, frame->payload);
        const vt::ByteSpan original = stream.subspan(frame_start, pos - frame_start);
        Check(again.size() == original.size() && std::equal(again.begin(), again.end(), original.begin()),
              "frame re-encodes differently");
        CheckPayload(*frame);
        frame_start = pos;
      }
    }
  }
  return 0;
}
