#include "kernels/chunk_tree.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/encoding.h"
#include "crypto/chunk_hash.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "kernels/parallel.h"
#include "kernels/tensor_codec.h"

namespace vt::kernels {
namespace {

constexpr std::size_t kChunkBytes = kChunkValues * sizeof(float);
// Work below this many leaves or pairs per thread is not worth a hand-off:
// 64 leaves are 64 KiB, ≈ 17 µs of hashing, several pool round trips. (At
// 1024, a step's activations — 50 000 to 200 000 values in cnn-fashion —
// hashed on one thread: its repops+hash step on two threads took 9.5 ms,
// 7.0 ms at 64.)
constexpr std::int64_t kMinPerThread = 64;

int ThreadsFor(int threads, std::int64_t items) { return ThreadsForWork(threads, items, kMinPerThread); }

ByteSpan RawBytes(std::span<const float> values) {
  return {reinterpret_cast<const std::uint8_t*>(values.data()), values.size() * sizeof(float)};
}

// Level by level up to the top, in place: pairs hashed in parallel, an odd
// last node promoted unchanged (crypto/merkle.h's shape).
Hash256 TopOf(std::vector<Hash256> level, int threads) {
  std::vector<Hash256> next;
  while (level.size() > 1) {
    const std::int64_t pairs = static_cast<std::int64_t>(level.size() / 2);
    next.resize(static_cast<std::size_t>(pairs) + level.size() % 2);
    ParallelFor(ThreadsFor(threads, pairs), pairs, [&](std::int64_t b, std::int64_t e) {
      crypto::MerkleNodeHashesOfPairs(std::span<const Hash256>(level).subspan(2 * b, 2 * (e - b)),
                                      std::span<Hash256>(next).subspan(b, e - b));
    });
    if (level.size() % 2 == 1) next.back() = level.back();
    std::swap(level, next);
  }
  return level.empty() ? Hash256{} : level[0];
}

}  // namespace

std::int64_t ChunkCount(std::int64_t numel) { return (numel + kChunkValues - 1) / kChunkValues; }

std::vector<Hash256> ChunkLeafHashes(std::span<const float> values, int threads) {
  const std::int64_t n = ChunkCount(static_cast<std::int64_t>(values.size()));
  std::vector<Hash256> leaves(static_cast<std::size_t>(n));
  ParallelFor(ThreadsFor(threads, n), n, [&](std::int64_t b, std::int64_t e) {
    const std::size_t first = static_cast<std::size_t>(b * kChunkValues);
    const std::size_t last = std::min(values.size(), static_cast<std::size_t>(e * kChunkValues));
    crypto::MerkleLeafHashesOfChunks(RawBytes(values.subspan(first, last - first)), kChunkBytes,
                                     std::span<Hash256>(leaves).subspan(b, e - b));
  });
  return leaves;
}

Hash256 ChunkRoot(std::span<const float> values, int threads) {
  const std::int64_t n = ChunkCount(static_cast<std::int64_t>(values.size()));
  return crypto::MerkleRootFromTop(static_cast<std::uint64_t>(n), TopOf(ChunkLeafHashes(values, threads), threads));
}

Hash256 TensorHashFromRoot(const Shape& shape, const Hash256& chunk_root) {
  static const crypto::TaggedHasher hasher(crypto::tags::kTensor);
  Writer header;
  EncodeTensorHeader(header, shape);
  return hasher.Hash({ByteSpan(header.bytes()), chunk_root.span()});
}

Hash256 TensorHash(const Tensor& t, int threads) {
  return TensorHashFromRoot(t.shape(), ChunkRoot(t.values(), threads));
}

ChunkOpening OpenChunk(const Tensor& t, std::int64_t chunk, int threads) {
  const crypto::MerkleTree tree = crypto::MerkleTree::FromLeafHashes(ChunkLeafHashes(t.values(), threads));
  ChunkOpening out;
  const std::int64_t first = chunk * kChunkValues;
  const std::int64_t last = std::min(t.numel(), first + kChunkValues);
  out.values.assign(t.values().begin() + first, t.values().begin() + last);
  out.root = tree.root();
  out.proof = tree.Prove(static_cast<std::uint64_t>(chunk));
  return out;
}

Status VerifyChunk(const Hash256& tensor_hash, const Shape& shape, std::int64_t chunk, const ChunkOpening& opening) {
  const std::int64_t numel = NumElements(shape);
  const std::int64_t count = ChunkCount(numel);
  if (chunk < 0 || chunk >= count || opening.proof.leaf_index != static_cast<std::uint64_t>(chunk) ||
      opening.proof.leaf_count != static_cast<std::uint64_t>(count))
    return Status::Invalid("chunk-bad-index", "chunk " + std::to_string(chunk) + " of " + std::to_string(count));
  const std::int64_t expect = std::min(kChunkValues, numel - chunk * kChunkValues);
  if (static_cast<std::int64_t>(opening.values.size()) != expect)
    return Status::Invalid("chunk-bad-size", std::to_string(opening.values.size()) + " values, expected " +
                                                 std::to_string(expect));
  if (TensorHashFromRoot(shape, opening.root) != tensor_hash)
    return Status::Invalid("chunk-bad-root", "the root is not the tensor hash's");
  const Hash256 leaf = crypto::MerkleLeafHash(RawBytes(opening.values));
  if (Status s = crypto::VerifyMerkleProof(opening.root, leaf, opening.proof); !s.ok())
    return Status::Invalid("chunk-bad-proof", s.ToString());
  return Status::Ok();
}

}  // namespace vt::kernels
