#pragma once
// The chunk tree of a tensor (docs/formats.md, "Tensor hash"; docs/referee.md,
// "Element-level descent"): the tensor's values in row-major order, cut into
// chunks of kChunkValues consecutive fp32 values (raw little-endian bytes;
// the last chunk may be short), each chunk a Merkle leaf (crypto/merkle.h
// H_leaf), and
//
//   Tensor::Hash() = TaggedHash("veritrain/tensor/v2", header ‖ chunk root)
//
// with the header of EncodeTensorHeader (dtype, rank, dims) and the chunk
// root crypto::MerkleRoot over the leaf hashes. So one value of any
// committed tensor — a state tensor in h_t, a node output in a record — is
// opened by its chunk and ⌈log₂ chunks⌉ sibling hashes, never the tensor.
//
// Why 256 values: a 1 KiB leaf costs 17 SHA-256 blocks and its share of the
// inner nodes 2 more, against 16 for a flat hash of the same bytes (1.19×);
// 16-value chunks would cost 4×, 64-value ones 1.75×. Measured on the step
// bench: hashing every node output of a step costs 1.03–1.4× what the flat
// v1 hash did. An opening stays under 2 KiB (1 KiB + 32 bytes per level,
// 18 levels for 2^26 values), far below a transaction's 64 KiB.

#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/tensor.h"

namespace vt::kernels {

inline constexpr std::int64_t kChunkValues = 256;

// ⌈numel / kChunkValues⌉ (0 for an empty tensor).
std::int64_t ChunkCount(std::int64_t numel);

// The leaf hashes of `values`' chunks, computed on up to `threads` threads.
std::vector<Hash256> ChunkLeafHashes(std::span<const float> values, int threads);

// MerkleRoot(ChunkLeafHashes(values)), without keeping the leaves, on up to
// `threads` threads (the result does not depend on the thread count).
Hash256 ChunkRoot(std::span<const float> values, int threads);

// The tensor hash from a shape and its chunk root.
Hash256 TensorHashFromRoot(const Shape& shape, const Hash256& chunk_root);

// Tensor::Hash() on up to `threads` threads.
Hash256 TensorHash(const Tensor& t, int threads);

// One chunk of a committed tensor, opened: its values, the tensor's chunk
// root and the chunk's proof against it (leaf `proof.leaf_index` of
// ChunkCount(numel) leaves).
struct ChunkOpening {
  std::vector<float> values;
  Hash256 root;
  crypto::MerkleProof proof;
  bool operator==(const ChunkOpening&) const = default;
};

// The opening of chunk `chunk` of `t` (builds the tree: a dispute-time cost).
// Precondition: chunk < ChunkCount(t.numel()).
ChunkOpening OpenChunk(const Tensor& t, std::int64_t chunk, int threads);

// Whether `opening` is chunk `chunk` of a tensor of `shape` whose hash is
// `tensor_hash`: the right number of values, the right leaf position, and
// the root, the proof. Invalid "chunk-bad-index", "chunk-bad-size",
// "chunk-bad-root", "chunk-bad-proof". The caller charges ProofLength siblings and the chunk's bytes
// before calling.
Status VerifyChunk(const Hash256& tensor_hash, const Shape& shape, std::int64_t chunk, const ChunkOpening& opening);

}  // namespace vt::kernels
