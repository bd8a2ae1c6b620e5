#include "worker/checkpoint_store.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <system_error>

#include "common/encoding.h"
#include "kernels/simd_clones.h"
#include "kernels/tensor_codec.h"
#include "worker/file_io.h"

namespace vt::worker {

namespace {

constexpr std::uint8_t kMagic[6] = {'V', 'T', 'C', 'K', 'P', 'T'};
constexpr std::uint16_t kFormatVersion = 1;
constexpr std::uint8_t kFlagByteShuffle = 0x01;
// A payload this large is a damaged header, not a state (1 TiB).
constexpr std::uint64_t kMaxPayloadBytes = std::uint64_t{1} << 40;
constexpr std::string_view kSuffix = ".ckpt";
constexpr std::uint64_t kMaxZstdExpansion = 32768;

Status Corrupt(const std::string& detail) { return Status::Invalid("checkpoint-corrupt", detail); }
Status Truncated(const std::string& detail) { return Status::Invalid("checkpoint-truncated", detail); }

// n values' little-endian encodings into `out` from their four byte planes
// (CutBytePlane's inverse; a vector loop for the same reasons).
VT_SIMD_CLONES void JoinBytePlanes(const std::uint8_t* __restrict planes, std::size_t n,
                                   std::uint8_t* __restrict out) {
  const std::uint8_t *p0 = planes, *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t v =
        p0[i] | std::uint32_t{p1[i]} << 8 | std::uint32_t{p2[i]} << 16 | std::uint32_t{p3[i]} << 24;
    std::memcpy(out + 4 * i, &v, 4);  // little-endian, as the planes were cut
  }
}

// Each tensor's values in a shuffled payload back from byte planes to
// values, in place. The payload's structure is checked while walking it.
Status UnshufflePayload(Bytes& payload) {
  Reader r(payload);
  VT_ASSIGN_OR_RETURN(protocol::StateHeader header, protocol::Decode(r, DecodeAs<protocol::StateHeader>{}));
  Bytes planes;
  for (std::size_t t = 0; t < header.tensor_names.size(); ++t) {
    VT_ASSIGN_OR_RETURN(kernels::TensorHeader th, kernels::ReadTensorHeader(r));
    const std::size_t pos = r.position();
    const auto n = static_cast<std::size_t>(th.numel);
    VT_TRY(r.GetFixed(n * 4).status());
    std::uint8_t* data = payload.data() + pos;
    planes.assign(data, data + n * 4);
    JoinBytePlanes(planes.data(), n, data);
  }
  return Status::Ok();
}

void PutLe(Bytes& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t GetLe(ByteSpan in, std::size_t pos, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(in[pos + static_cast<std::size_t>(i)]) << (8 * i);
  return v;
}

struct FileHeader {
  Hash256 state_hash;
  std::uint64_t step = 0;
  std::uint64_t payload_size = 0;
  std::uint8_t flags = 0;
};

Result<FileHeader> ParseHeader(ByteSpan file) {
  if (file.size() < kCheckpointHeaderSize)
    return Truncated("file of " + std::to_string(file.size()) + " bytes is shorter than the 57-byte header");
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return Corrupt("bad magic");
  if (GetLe(file, 6, 2) != kFormatVersion)
    return Corrupt("format version " + std::to_string(GetLe(file, 6, 2)) + " is not 1");
  FileHeader h;
  std::memcpy(h.state_hash.bytes.data(), file.data() + 8, 32);
  h.step = GetLe(file, 40, 8);
  h.payload_size = GetLe(file, 48, 8);
  h.flags = file[56];
  if ((h.flags & ~kFlagByteShuffle) != 0) return Corrupt("unknown flags");
  if (h.payload_size > kMaxPayloadBytes) return Corrupt("payload size above 1 TiB");
  return h;
}

std::string ZstdText(std::size_t code) { return ZSTD_getErrorName(code); }

// "<64 lower-case hex>.ckpt" → the hash; anything else is not ours.
Result<Hash256> HashFromFileName(const std::string& name) {
  if (name.size() != 64 + kSuffix.size() || name.compare(64, kSuffix.size(), kSuffix) != 0)
    return Status::Invalid("not-a-checkpoint");
  VT_ASSIGN_OR_RETURN(Hash256 h, Hash256::FromHex(std::string_view(name).substr(0, 64)));
  if (h.Hex() != name.substr(0, 64)) return Status::Invalid("not-a-checkpoint");
  return h;
}

// The directory's entries (without throwing on iteration errors).
Result<std::vector<std::filesystem::directory_entry>> ListDir(const std::filesystem::path& dir) {
  std::vector<std::filesystem::directory_entry> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) out.push_back(*it);
  if (ec) return Status::Error("file-read-failed", dir.string() + ": " + ec.message());
  return out;
}

// One zstd frame, with its content size and checksum, appended to `out` from
// pieces fed in order: the payload is never gathered in one buffer. Encoding
// a checkpoint used to copy the state into a payload, copy that again to cut
// its byte planes, and zero-fill an output buffer of the payload's size
// before compressing: three passes over the state besides the compressor's,
// most of the time a small state's checkpoint took.
class FrameWriter {
 public:
  FrameWriter(Bytes& out, std::uint64_t content_size, int level) : m_out(out), m_ctx(Context()) {
    ZSTD_CCtx_reset(m_ctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(m_ctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(m_ctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setPledgedSrcSize(m_ctx, content_size);
  }
  void Put(ByteSpan in) { Drive(in, ZSTD_e_continue); }
  void Finish() { Drive({}, ZSTD_e_end); }

 private:
  // One compression context per thread, kept between checkpoints: a new one
  // allocates and clears its tables every time.
  static ZSTD_CCtx* Context() {
    thread_local const std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(),
                                                                                &ZSTD_freeCCtx);
    assert(ctx != nullptr);
    return ctx.get();
  }

  // Through a scratch buffer, not out's spare capacity: resizing `out` to
  // give the compressor room would zero-fill that room on every call.
  void Drive(ByteSpan in, ZSTD_EndDirective mode) {
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    for (;;) {
      ZSTD_outBuffer dst{m_scratch.get(), kScratch, 0};
      const std::size_t left = ZSTD_compressStream2(m_ctx, &dst, &src, mode);
      // Compression cannot fail short of a bug (the sizes were pledged).
      assert(!ZSTD_isError(left));
      m_out.insert(m_out.end(), m_scratch.get(), m_scratch.get() + dst.pos);
      if (mode == ZSTD_e_end ? left == 0 : src.pos == src.size) return;
    }
  }

  static constexpr std::size_t kScratch = std::size_t{1} << 17;
  Bytes& m_out;
  ZSTD_CCtx* m_ctx;
  std::unique_ptr<std::uint8_t[]> m_scratch{new std::uint8_t[kScratch]};  // not value-initialised
};

// Byte `plane` of each of n values' little-endian encoding (bit_cast: the
// format's byte order is the host's, as in EncodeTensor). A vector loop
// (restrict: `out` is bytes, which may alias anything; SIMD clones; GCC's
// dynamic cost model, worker/CMakeLists.txt): the scalar loop reloaded the
// shift every value and took 17 % of the background writer's time.
VT_SIMD_CLONES void CutBytePlane(const float* __restrict values, std::size_t n, unsigned plane,
                                 std::uint8_t* __restrict out) {
  const unsigned shift = 8 * plane;
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(std::bit_cast<std::uint32_t>(values[i]) >> shift);
}

}  // namespace

Bytes EncodeCheckpointFile(const TrainingState& state, const Hash256& state_hash, const CheckpointOptions& options) {
  std::uint64_t payload_size = 0;
  StreamState(
      state, [&](ByteSpan b) { payload_size += b.size(); },
      [&](std::span<const float> v) { payload_size += v.size_bytes(); });
  Bytes out;
  out.reserve(kCheckpointHeaderSize + ZSTD_compressBound(payload_size));  // no reallocation
  out.insert(out.end(), std::begin(kMagic), std::end(kMagic));
  PutLe(out, kFormatVersion, 2);
  out.insert(out.end(), state_hash.bytes.begin(), state_hash.bytes.end());
  PutLe(out, state.step, 8);
  PutLe(out, payload_size, 8);
  out.push_back(options.byte_shuffle ? kFlagByteShuffle : 0);

  FrameWriter frame(out, payload_size, options.zstd_level);
  std::vector<std::uint8_t> plane;
  const auto put_values = [&](std::span<const float> v) {
    if (!options.byte_shuffle) {
      frame.Put(ByteSpan(reinterpret_cast<const std::uint8_t*>(v.data()), v.size_bytes()));
      return;
    }
    // The tensor's planes one after another, each cut in pieces of 64 Ki
    // values (the compressor copies its input into its window anyway).
    constexpr std::size_t kPiece = std::size_t{1} << 16;
    plane.resize(std::min(kPiece, v.size()));
    for (int k = 0; k < 4; ++k) {
      for (std::size_t at = 0; at < v.size(); at += kPiece) {
        const std::span<const float> piece = v.subspan(at, std::min(kPiece, v.size() - at));
        CutBytePlane(piece.data(), piece.size(), static_cast<unsigned>(k), plane.data());
        frame.Put(ByteSpan(plane.data(), piece.size()));
      }
    }
  };
  StreamState(
      state, [&](ByteSpan b) { frame.Put(b); }, put_values);
  frame.Finish();
  return out;
}

Result<TrainingState> DecodeCheckpointFile(ByteSpan file, const Hash256& expected_hash,
                                           std::uint64_t max_payload_bytes) {
  VT_ASSIGN_OR_RETURN(FileHeader h, ParseHeader(file));
  if (h.payload_size > max_payload_bytes)
    return Corrupt("payload of " + std::to_string(h.payload_size) + " bytes is above the " +
                   std::to_string(max_payload_bytes) + " allowed");
  if (h.state_hash != expected_hash)
    return Corrupt("header names state " + h.state_hash.Hex() + ", expected " + expected_hash.Hex());

  const ByteSpan frame = file.subspan(kCheckpointHeaderSize);
  const std::size_t frame_size = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_size)) {
    if (ZSTD_getErrorCode(frame_size) == ZSTD_error_srcSize_wrong)
      return Truncated("the zstd frame is cut short after " + std::to_string(frame.size()) + " bytes");
    return Corrupt("zstd frame: " + ZstdText(frame_size));
  }
  if (frame_size != frame.size())
    return Corrupt(std::to_string(frame.size() - frame_size) + " bytes after the zstd frame");
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content != h.payload_size) return Corrupt("zstd content size disagrees with the header");
  // No zstd frame expands more than 32768-fold (a 4-byte RLE block per 128 KiB):
  // a larger claim is damage, and must not turn into a huge allocation.
  if (h.payload_size / kMaxZstdExpansion > frame.size()) return Corrupt("payload size impossible for the frame size");

  Bytes payload(static_cast<std::size_t>(h.payload_size));
  const std::size_t got = ZSTD_decompress(payload.data(), payload.size(), frame.data(), frame.size());
  if (ZSTD_isError(got)) return Corrupt("zstd: " + ZstdText(got));
  if (got != payload.size()) return Corrupt("zstd frame decompressed to the wrong size");

  if ((h.flags & kFlagByteShuffle) != 0) {
    const Status st = UnshufflePayload(payload);
    if (!st.ok()) return Corrupt("payload: " + st.ToString());
  }
  auto state = DecodeState(payload);
  if (!state.ok()) return Corrupt("payload: " + state.status().ToString());
  if (state->step != h.step) return Corrupt("header step disagrees with the state");
  const Hash256 actual = StateHash(*state);
  if (actual != expected_hash) return Corrupt("state hashes to " + actual.Hex() + ", expected " + expected_hash.Hex());
  return state;
}

// ---- CheckpointStore ---------------------------------------------------------------

Result<CheckpointStore> CheckpointStore::Open(const std::filesystem::path& dir, CheckpointOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("file-write-failed", dir.string() + ": " + ec.message());
  VT_ASSIGN_OR_RETURN(auto entries, ListDir(dir));
  for (const auto& entry : entries) {
    if (!IsTempFileName(entry.path().filename().string())) continue;
    if (!std::filesystem::remove(entry.path(), ec) && ec)
      return Status::Error("file-write-failed", entry.path().string() + ": " + ec.message());
  }
  return CheckpointStore(dir, options);
}

std::filesystem::path CheckpointStore::PathFor(const Hash256& state_hash) const {
  return m_dir / (state_hash.Hex() + std::string(kSuffix));
}

Result<Hash256> CheckpointStore::Put(const TrainingState& state, DirSync dir_sync) {
  VT_TRY(ValidateState(state));
  const Hash256 hash = StateHash(state);
  VT_TRY(WriteFileAtomic(PathFor(hash), EncodeCheckpointFile(state, hash, m_options), dir_sync));
  return hash;
}

Result<TrainingState> CheckpointStore::Get(const Hash256& state_hash) const {
  const auto path = PathFor(state_hash);
  auto file = ReadFile(path);
  if (!file.ok()) {
    if (file.status().reason() == "file-not-found")
      return Status::Error("checkpoint-not-found", "no checkpoint " + state_hash.Hex() + " in " + m_dir.string());
    return file.status();
  }
  auto state = DecodeCheckpointFile(*file, state_hash);
  if (!state.ok()) return state.status().WithContext(path.string());
  return state;
}

bool CheckpointStore::Contains(const Hash256& state_hash) const {
  std::error_code ec;
  return std::filesystem::is_regular_file(PathFor(state_hash), ec);
}

Result<std::vector<CheckpointInfo>> CheckpointStore::List() const {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  VT_ASSIGN_OR_RETURN(auto entries, ListDir(m_dir));
  for (const auto& entry : entries) {
    auto hash = HashFromFileName(entry.path().filename().string());
    if (!hash.ok() || !entry.is_regular_file(ec)) continue;
    auto prefix = ReadFilePrefix(entry.path(), kCheckpointHeaderSize);
    if (!prefix.ok()) {
      if (prefix.status().reason() == "file-not-found") continue;  // removed meanwhile
      return prefix.status();
    }
    auto header = ParseHeader(*prefix);
    if (!header.ok() || header->state_hash != *hash) continue;  // Get reports what is wrong with it
    out.push_back({*hash, header->step, static_cast<std::uint64_t>(entry.file_size(ec))});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) {
    return a.step != b.step ? a.step < b.step : a.state_hash < b.state_hash;
  });
  return out;
}

Status CheckpointStore::Remove(const Hash256& state_hash) {
  std::error_code ec;
  if (!std::filesystem::remove(PathFor(state_hash), ec)) {
    if (ec) return Status::Error("file-write-failed", PathFor(state_hash).string() + ": " + ec.message());
    return Status::Error("checkpoint-not-found", "no checkpoint " + state_hash.Hex());
  }
  return Status::Ok();
}

Result<std::size_t> CheckpointStore::Gc(const std::set<Hash256>& keep) {
  std::size_t removed = 0;
  std::error_code ec;
  VT_ASSIGN_OR_RETURN(auto entries, ListDir(m_dir));
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    auto hash = HashFromFileName(name);
    if (!(hash.ok() && keep.count(*hash) == 0) && !IsTempFileName(name)) continue;
    if (std::filesystem::remove(entry.path(), ec)) ++removed;
    if (ec) return Status::Error("file-write-failed", entry.path().string() + ": " + ec.message());
  }
  return removed;
}

}  // namespace vt::worker
