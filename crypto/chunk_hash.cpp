#include "crypto/chunk_hash.h"

// The low-level SHA-256 API is deprecated in OpenSSL 3 in favour of EVP, but
// it is the same assembly (SHA-NI/AVX2) without EVP's per-call dispatch,
// which is what bulk hashing of small messages needs.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define VT_CHUNK_HASH_SHA_NI 1
#endif

#include "crypto/sha256_x16.h"
#include "crypto/tags.h"

namespace vt::crypto {
namespace {

// SHA-256 with SHA256(tag) ‖ SHA256(tag) already absorbed (tagged hashing,
// crypto/sha256.h): one 64-byte block, so the state is a clean midstate.
SHA256_CTX Primed(std::string_view tag) {
  unsigned char t[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(tag.data()), tag.size(), t);
  SHA256_CTX c;
  SHA256_Init(&c);
  SHA256_Update(&c, t, sizeof t);
  SHA256_Update(&c, t, sizeof t);
  return c;
}

const SHA256_CTX& LeafMidstate() {
  static const SHA256_CTX c = Primed(tags::kMerkleLeaf);
  return c;
}
const SHA256_CTX& NodeMidstate() {
  static const SHA256_CTX c = Primed(tags::kMerkleNode);
  return c;
}

constexpr unsigned char kLeafPrefix = 0x00;
constexpr unsigned char kNodePrefix = 0x01;

// One message of a batch: prefix ‖ body[0, len), hashed on from a midstate
// that has absorbed exactly one 64-byte block (the tag block).
struct Message {
  unsigned char prefix;
  const unsigned char* body;
  std::size_t len;
};

// Blocks of prefix ‖ body[0, len) padded: the 0x80 byte and the 8-byte length
// need 9 bytes after the message.
std::size_t BlockCount(std::size_t len) { return (1 + len + 8) / 64 + 1; }

// Whether block j of prefix ‖ body[0, len) lies inside the body (it is
// body[64j − 1, 64j + 63) then, the same for every message of that length).
bool InBody(std::size_t len, std::size_t j) { return j >= 1 && 64 * j + 64 <= 1 + len; }

// Block j of the padded stream prefix ‖ body ‖ 0x80 ‖ 0… ‖ bit length (the
// length counts the 64 bytes of the midstate too): straight from the body
// where the block lies inside it, else assembled in `buf`.
const unsigned char* BlockOf(const Message& m, std::size_t j, std::size_t blocks, unsigned char* buf) {
  if (InBody(m.len, j)) return m.body + (64 * j - 1);
  const std::size_t first = 64 * j;  // position in prefix ‖ body
  std::memset(buf, 0, 64);
  std::size_t k = 0;  // next byte of buf
  if (first == 0) buf[k++] = m.prefix;
  // body[first + k − 1 …] up to the body's end or the block's.
  const std::size_t from = first + k - 1;
  if (from < m.len) {
    const std::size_t take = std::min<std::size_t>(64 - k, m.len - from);
    std::memcpy(buf + k, m.body + from, take);
    k += take;
  }
  if (k < 64 && first + k == m.len + 1) buf[k] = 0x80;
  if (j + 1 == blocks) {
    const std::uint64_t bits = (64 + 1 + static_cast<std::uint64_t>(m.len)) * 8;
    for (int b = 0; b < 8; ++b) buf[56 + b] = static_cast<unsigned char>(bits >> (56 - 8 * b));
  }
  return buf;
}

// The digest: the final state words, big-endian.
void StoreDigest(const std::uint32_t (&h)[8], Hash256& out) {
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t b = 0; b < 4; ++b) {
      out.bytes[4 * i + b] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * b));
    }
  }
}

bool SameLength(std::span<const Message> run) {
  return std::all_of(run.begin(), run.end(), [&](const Message& m) { return m.len == run.front().len; });
}

// Portable path: OpenSSL's compression function, one message at a time.
void HashOneByOne(const SHA256_CTX& start, std::span<const Message> msgs, Hash256* out) {
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    SHA256_CTX c = start;
    SHA256_Update(&c, &msgs[i].prefix, 1);
    SHA256_Update(&c, msgs[i].body, msgs[i].len);
    SHA256_Final(out[i].bytes.data(), &c);
  }
}

#if VT_CHUNK_HASH_SHA_NI
// Several independent messages through the SHA extensions at once. One
// message's 64 rounds are a chain of dependent SHA256RNDS2 instructions, so a
// single stream runs at the instruction's latency; interleaving kLanes
// streams fills the pipeline (measured on the AMD EPYC development machine,
// 1 KiB leaves, CPU time, loaded: 1.25–1.45× OpenSSL's one-message SHA-NI
// code; 2 lanes 1.4×, 3 lanes 1.15×; 4 lanes need more than the 16 xmm
// registers SHA256RNDS2 can address, so some state is spilled). Same
// compression function, same padding: bit-for-bit the hashes of HashOneByOne
// and of crypto/merkle.h (tests/crypto/chunk_hash_test.cpp, every length
// class).
constexpr int kLanes = 4;

bool HaveShaExtensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool ssse3 = (c & (1u << 9)) != 0, sse41 = (c & (1u << 19)) != 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  return ssse3 && sse41 && (b & (1u << 29)) != 0;
}

// One 64-byte block of each of `n` ≤ kLanes streams; state in the
// instruction's ABEF/CDGH register form. Round group g (4 rounds) uses
// schedule words W[4g..4g+3]; for g ≥ 4
//   W_g = msg2(msg1(W_{g−4}, W_{g−3}) + alignr(W_{g−1}, W_{g−2}, 4), W_{g−1}),
// the standard σ0/σ1 recurrence in four-word groups.
template <int n>
__attribute__((target("sha,sse4.1,ssse3"))) void CompressBlocks(__m128i* abef, __m128i* cdgh,
                                                                const unsigned char* const* block) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  // Local copies: the block bytes are read through char pointers, which may
  // alias anything, so state reached through abef/cdgh would be stored and
  // reloaded around every round — on the dependency chain.
  __m128i s0[n], s1[n], w[n][4];
  for (int l = 0; l < n; ++l) {
    s0[l] = abef[l];
    s1[l] = cdgh[l];
  }
  // Fully unrolled, so the schedule words stay in registers.
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(detail::kSha256Round + 4 * g));
#pragma GCC unroll 8
    for (int l = 0; l < n; ++l) {
      __m128i x;
      if (g < 4) {
        x = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block[l] + 16 * g)), bswap);
      } else {
        x = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[l][g & 3], w[l][(g - 3) & 3]),
                                               _mm_alignr_epi8(w[l][(g - 1) & 3], w[l][(g - 2) & 3], 4)),
                                 w[l][(g - 1) & 3]);
      }
      w[l][g & 3] = x;
      __m128i m = _mm_add_epi32(x, k);
      s1[l] = _mm_sha256rnds2_epu32(s1[l], s0[l], m);
      m = _mm_shuffle_epi32(m, 0x0E);
      s0[l] = _mm_sha256rnds2_epu32(s0[l], s1[l], m);
    }
  }
  for (int l = 0; l < n; ++l) {
    abef[l] = _mm_add_epi32(abef[l], s0[l]);
    cdgh[l] = _mm_add_epi32(cdgh[l], s1[l]);
  }
}

// n messages of one common length from the midstate `start`.
template <int n>
__attribute__((target("sha,sse4.1,ssse3"))) void HashLanes(const SHA256_CTX& start, const Message* msgs,
                                                           Hash256* out) {
  const std::size_t blocks = BlockCount(msgs[0].len);
  __m128i abef[n], cdgh[n];
  {
    // a..h → ABEF / CDGH (the register order SHA256RNDS2 expects).
    __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&start.h[0]));
    __m128i s1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&start.h[4]));
    t = _mm_shuffle_epi32(t, 0xB1);
    s1 = _mm_shuffle_epi32(s1, 0x1B);
    const __m128i s0 = _mm_alignr_epi8(t, s1, 8);
    s1 = _mm_blend_epi16(s1, t, 0xF0);
    for (int l = 0; l < n; ++l) {
      abef[l] = s0;
      cdgh[l] = s1;
    }
  }
  alignas(16) unsigned char buf[n][64];
  const unsigned char* block[n];
  for (std::size_t j = 0; j < blocks; ++j) {
    for (int l = 0; l < n; ++l) block[l] = BlockOf(msgs[l], j, blocks, buf[l]);
    CompressBlocks<n>(abef, cdgh, block);
  }
  for (int l = 0; l < n; ++l) {
    const __m128i t = _mm_shuffle_epi32(abef[l], 0x1B);
    const __m128i s1 = _mm_shuffle_epi32(cdgh[l], 0xB1);
    alignas(16) std::uint32_t h[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(t, s1, 0xF0));
    _mm_store_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(s1, t, 8));
    StoreDigest(h, out[l]);
  }
}

// Every message of `msgs` through the SHA extensions: runs of kLanes
// equal-length messages interleaved, the rest one by one.
void HashShaNi(const SHA256_CTX& start, std::span<const Message> msgs, Hash256* out) {
  std::size_t i = 0;
  for (; i + kLanes <= msgs.size(); i += kLanes) {
    if (SameLength(msgs.subspan(i, kLanes))) {
      HashLanes<kLanes>(start, &msgs[i], out + i);
    } else {
      for (std::size_t k = i; k < i + kLanes; ++k) HashLanes<1>(start, &msgs[k], out + k);
    }
  }
  for (; i < msgs.size(); ++i) HashLanes<1>(start, &msgs[i], out + i);
}
#endif  // VT_CHUNK_HASH_SHA_NI

// 16 messages of one common length from the midstate `start`, one per lane
// of the AVX-512 kernel. Blocks inside the bodies are read in place (the
// same test for every lane: one length); the first and the last block are
// assembled per lane by BlockOf.
void HashLanes16(const SHA256_CTX& start, const Message* msgs, Hash256* out) {
  constexpr int n = detail::kX16Lanes;
  const std::size_t blocks = BlockCount(msgs[0].len);
  detail::Sha256x16State state;
  for (int i = 0; i < 8; ++i) std::fill_n(state.h[i], n, start.h[i]);
  alignas(64) unsigned char buf[n][64];
  const unsigned char* block[n];
  for (std::size_t j = 0; j < blocks; ++j) {
    if (InBody(msgs[0].len, j)) {
      for (int l = 0; l < n; ++l) {
        block[l] = msgs[l].body + (64 * j - 1);
        // 16 streams a message length apart are more than the hardware
        // prefetchers follow: the cache line after the next block's, asked
        // for now, arrives in time (measured, 1 KiB leaves from a 16 MiB
        // buffer: 1.5× the throughput without).
        if (64 * (j + 2) < msgs[l].len) __builtin_prefetch(msgs[l].body + 64 * (j + 2));
      }
    } else {
      for (int l = 0; l < n; ++l) block[l] = BlockOf(msgs[l], j, blocks, buf[l]);
    }
    detail::Sha256x16Compress(state, block);
  }
  for (int l = 0; l < n; ++l) {
    std::uint32_t h[8];
    for (int i = 0; i < 8; ++i) h[i] = state.h[i][l];
    StoreDigest(h, out[l]);
  }
}

bool ShaNiAvailable() {
#if VT_CHUNK_HASH_SHA_NI
  static const bool ok = HaveShaExtensions();
  return ok;
#else
  return false;
#endif
}

using detail::ChunkHashPath;

// Every message of `msgs` hashed from `start` through `path`.
void HashMessages(ChunkHashPath path, const SHA256_CTX& start, std::span<const Message> msgs, Hash256* out) {
  if (path == ChunkHashPath::kAvx512) {
    // A chunk tree's messages have one length but for a short last chunk,
    // so the runs of 16 stop at the first run with two lengths; what is left
    // (fewer than 16, or the run with the last chunk) takes the next path.
    std::size_t i = 0;
    for (; i + detail::kX16Lanes <= msgs.size() && SameLength(msgs.subspan(i, detail::kX16Lanes));
         i += detail::kX16Lanes) {
      HashLanes16(start, &msgs[i], out + i);
    }
    msgs = msgs.subspan(i);
    out += i;
    path = ShaNiAvailable() ? ChunkHashPath::kShaNi : ChunkHashPath::kPortable;
  }
#if VT_CHUNK_HASH_SHA_NI
  if (path == ChunkHashPath::kShaNi) return HashShaNi(start, msgs, out);
#endif
  HashOneByOne(start, msgs, out);
}

// Messages are described in batches of this many (stack space, no allocation).
constexpr std::size_t kBatch = 64;

}  // namespace

namespace detail {

bool ChunkHashPathAvailable(ChunkHashPath path) {
  switch (path) {
    case ChunkHashPath::kPortable:
      return true;
    case ChunkHashPath::kShaNi:
      return ShaNiAvailable();
    case ChunkHashPath::kAvx512:
      return Sha256x16Available();
  }
  return false;
}

// The 16 AVX-512 lanes first: 1.75–1.9× the SHA extensions' 4 lanes on the
// development machine (crypto/chunk_hash.h).
ChunkHashPath DefaultChunkHashPath() {
  static const ChunkHashPath path = [] {
    for (ChunkHashPath p : {ChunkHashPath::kAvx512, ChunkHashPath::kShaNi}) {
      if (ChunkHashPathAvailable(p)) return p;
    }
    return ChunkHashPath::kPortable;
  }();
  return path;
}

void MerkleLeafHashesOfChunks(ChunkHashPath path, ByteSpan data, std::size_t chunk_bytes,
                              std::span<Hash256> out) {
  assert(chunk_bytes > 0 && out.size() == (data.size() + chunk_bytes - 1) / chunk_bytes);
  assert(ChunkHashPathAvailable(path));
  std::array<Message, kBatch> msgs;
  for (std::size_t at = 0; at < out.size(); at += kBatch) {
    const std::size_t count = std::min(kBatch, out.size() - at);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t first = (at + k) * chunk_bytes;
      msgs[k] = {kLeafPrefix, data.data() + first, std::min(chunk_bytes, data.size() - first)};
    }
    HashMessages(path, LeafMidstate(), std::span<const Message>(msgs.data(), count), out.data() + at);
  }
}

void MerkleNodeHashesOfPairs(ChunkHashPath path, std::span<const Hash256> in, std::span<Hash256> out) {
  assert(in.size() == 2 * out.size());
  assert(ChunkHashPathAvailable(path));
  // A pair's two hashes are adjacent in `in`: the body is 64 contiguous bytes.
  static_assert(sizeof(Hash256) == Hash256::kSize);
  std::array<Message, kBatch> msgs;
  for (std::size_t at = 0; at < out.size(); at += kBatch) {
    const std::size_t count = std::min(kBatch, out.size() - at);
    for (std::size_t k = 0; k < count; ++k)
      msgs[k] = {kNodePrefix, in[2 * (at + k)].bytes.data(), 2 * Hash256::kSize};
    HashMessages(path, NodeMidstate(), std::span<const Message>(msgs.data(), count), out.data() + at);
  }
}

}  // namespace detail

void MerkleLeafHashesOfChunks(ByteSpan data, std::size_t chunk_bytes, std::span<Hash256> out) {
  detail::MerkleLeafHashesOfChunks(detail::DefaultChunkHashPath(), data, chunk_bytes, out);
}

void MerkleNodeHashesOfPairs(std::span<const Hash256> in, std::span<Hash256> out) {
  detail::MerkleNodeHashesOfPairs(detail::DefaultChunkHashPath(), in, out);
}

}  // namespace vt::crypto
