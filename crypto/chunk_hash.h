#pragma once
// Bulk Merkle hashing for chunk trees (docs/formats.md, "Tensor hash"): the
// leaf hashes of consecutive fixed-size chunks of a buffer and the node
// hashes of a level's pairs, bit-for-bit equal to MerkleLeafHash /
// MerkleNodeHash (crypto/merkle.h) but without a per-hash EVP dispatch and
// context copy, which costs more than hashing a 257-byte leaf. Every message
// is hashed on from its tag's precomputed midstate.
//
// The messages are independent, so they are hashed several at a time
// (multi-buffer), by the fastest path the CPU has (DefaultChunkHashPath):
//   kAvx512   runs of 16 equal-length messages, one per 32-bit lane of
//             AVX-512 registers (crypto/sha256_x16.h); the rest as kShaNi,
//             or as kPortable without the SHA extensions;
//   kShaNi    runs of 4 interleaved through the SHA extensions, the rest
//             one at a time through them;
//   kPortable OpenSSL's compression function, one message at a time.
// Measured on the development machine (AMD EPYC, Zen 5; one thread, CPU
// time, 16 MiB of 1 KiB leaves, crypto_bench, three runs beside a build):
// kAvx512 3.7–4.0 GB/s, kShaNi 2.1–2.2 GB/s (so 1.75–1.9×), kPortable
// 1.3–1.5 GB/s; node pairs 1.5–1.6, 1.0–1.1 and 0.55–0.6 GB/s. There
// SHA256RNDS2 issues once per 2 cycles, one round pair of one message,
// while 16 lanes of plain vector instructions need about 38 cycles per
// message block against its 64. Where a CPU has AVX-512 F and BW the 16
// lanes are taken without measuring that CPU.
//
// Pure functions of their inputs, safe to call from several threads at once
// on disjoint outputs.

#include <cstddef>
#include <span>

#include "common/bytes.h"

namespace vt::crypto {

// out[i] = MerkleLeafHash(data[i·chunk_bytes, min((i+1)·chunk_bytes, size))).
// Precondition: chunk_bytes > 0, out.size() == ⌈data.size() / chunk_bytes⌉.
void MerkleLeafHashesOfChunks(ByteSpan data, std::size_t chunk_bytes, std::span<Hash256> out);

// out[i] = MerkleNodeHash(in[2i], in[2i+1]). Precondition: in.size() == 2·out.size().
void MerkleNodeHashesOfPairs(std::span<const Hash256> in, std::span<Hash256> out);

namespace detail {

// The paths above, chosen explicitly, so that tests check every path this CPU
// has (not only the dispatched one) and benchmarks compare them.
enum class ChunkHashPath { kPortable, kShaNi, kAvx512 };

// Whether this CPU (and OS) can run `path`; kPortable always can.
bool ChunkHashPathAvailable(ChunkHashPath path);

// The path the functions above take: the fastest available.
ChunkHashPath DefaultChunkHashPath();

// The functions above through `path`. Precondition: ChunkHashPathAvailable(path).
void MerkleLeafHashesOfChunks(ChunkHashPath path, ByteSpan data, std::size_t chunk_bytes,
                              std::span<Hash256> out);
void MerkleNodeHashesOfPairs(ChunkHashPath path, std::span<const Hash256> in, std::span<Hash256> out);

}  // namespace detail
}  // namespace vt::crypto
