#pragma once
// Bulk Merkle hashing for chunk trees (docs/formats.md, "Tensor hash"): the
// leaf hashes of consecutive fixed-size chunks of a buffer and the node
// hashes of a level's pairs, bit-for-bit equal to MerkleLeafHash /
// MerkleNodeHash (crypto/merkle.h) but without a per-hash EVP dispatch and
// context copy, which costs more than hashing a 257-byte leaf. The
// compression function is OpenSSL's (SHA extensions where the CPU has them),
// started from the tag's precomputed midstate.
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

}  // namespace vt::crypto
