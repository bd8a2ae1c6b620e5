#pragma once
// Training datasets: examples of (input tensor, target tensor), loaders for the
// usual file formats, a seeded synthetic generator, and the dataset
// commitment a bounty names: a Merkle root over its examples
// (docs/formats.md, "Dataset commitment").
//
// Targets are fp32 tensors too, because a step's batch enters the operator
// graph as two tensors (InputSource::kBatch 0 = inputs, 1 = targets):
//   classification  target shape []   holding the class index (exact in fp32)
//   language model  target shape [T]  holding the next byte of each position
//
// Commitment: leaf i = EncodeExample(i) = EncodeTensor(input_i) ‖
// EncodeTensor(target_i) (kernels/tensor_codec.h), root = crypto::MerkleTree
// root over those leaves (MerkleLeafHash). Format in docs/formats.md.
//
// Loader failures: Status::Error "file-not-found" / "file-read-failed" for the
// file system; Status::Invalid for bad content, with these reasons:
//   dataset-bad-magic              not an IDX file (or an unsupported element type)
//   dataset-truncated              fewer bytes than the header promises / partial record
//   dataset-size-mismatch          more bytes than the header promises, rank wrong
//   dataset-count-mismatch         image and label files disagree on the count
//   dataset-bad-label              a label outside the format's range
//   dataset-empty                  no examples
//   dataset-gzip-truncated         the gzip stream ends early
//   dataset-gzip-corrupt           the gzip stream is damaged (bad data or CRC)
//   dataset-too-large              decompressed size or example count above caps
//   dataset-bad-window             text window length 0
//   dataset-root-mismatch          VerifyDataset: the root is not the expected one

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/tensor.h"

namespace vt::worker {

struct Example {
  kernels::Tensor input;
  kernels::Tensor target;
};

// Examples stored contiguously (one float array for inputs, one for targets),
// so that large datasets are two allocations and batches are memcpy's.
class Dataset {
 public:
  Dataset() = default;
  // `num_classes`: classes of a classification target (256 for byte tokens),
  // 0 for regression targets. Informational: not part of the commitment.
  Dataset(std::string name, kernels::Shape input_shape, kernels::Shape target_shape, std::uint32_t num_classes);

  const std::string& name() const { return m_name; }
  const kernels::Shape& input_shape() const { return m_input_shape; }
  const kernels::Shape& target_shape() const { return m_target_shape; }
  std::uint32_t num_classes() const { return m_num_classes; }
  std::uint64_t size() const { return m_size; }
  std::int64_t input_numel() const { return m_input_numel; }
  std::int64_t target_numel() const { return m_target_numel; }

  // Precondition: input.size() == input_numel(), target.size() == target_numel().
  void Add(std::span<const float> input, std::span<const float> target);
  void Reserve(std::uint64_t n);

  // Precondition: i < size().
  std::span<const float> input(std::uint64_t i) const;
  std::span<const float> target(std::uint64_t i) const;
  Example Get(std::uint64_t i) const;

  // Leaf bytes of example i in the dataset commitment.
  Bytes EncodeExample(std::uint64_t i) const;
  // The Merkle root over all examples (recomputed on each call: O(size)).
  Hash256 Root() const;
  // The whole tree, for inclusion proofs of examples (a dispute opens the
  // examples of one batch against the root the bounty names).
  crypto::MerkleTree Tree() const;

 private:
  std::string m_name;
  kernels::Shape m_input_shape;
  kernels::Shape m_target_shape;
  std::uint32_t m_num_classes = 0;
  std::int64_t m_input_numel = 0;
  std::int64_t m_target_numel = 0;
  std::uint64_t m_size = 0;
  std::vector<float> m_inputs;
  std::vector<float> m_targets;
};

// Ok, or Invalid "dataset-root-mismatch" naming both roots.
Status VerifyDataset(const Dataset& dataset, const Hash256& expected_root);

// ---- loaders -------------------------------------------------------------------

// Reads a file and, when it starts with the gzip magic (1f 8b), inflates it
// (zlib; multi-member streams allowed; at most 4 GiB decompressed).
Result<Bytes> ReadMaybeGzip(const std::filesystem::path& path);
// The same on bytes already in memory; `what` names them in errors.
Result<Bytes> GunzipIfCompressed(Bytes data, std::string_view what);

// IDX (MNIST, Fashion-MNIST): an unsigned-byte image file of rank >= 2
// (count, dims…) and an unsigned-byte label file of rank 1 (count), each
// plain or gzip'd. Inputs are pixel / 255 with the file's shape per example
// (e.g. [28, 28]); targets are the labels (shape []); num_classes is
// max label + 1. `limit` > 0 keeps only the first `limit` examples.
Result<Dataset> LoadIdx(const std::filesystem::path& images, const std::filesystem::path& labels,
                        std::uint64_t limit = 0);
// `split` is "train" or "t10k": {split}-images-idx3-ubyte[.gz], {split}-labels-idx1-ubyte[.gz] in `dir`.
Result<Dataset> LoadMnistLike(const std::filesystem::path& dir, std::string_view split, std::uint64_t limit = 0);
// Parsers on bytes in memory (already decompressed), for tests and fuzzing.
Result<Dataset> ParseIdx(ByteSpan images, ByteSpan labels, std::uint64_t limit = 0);

// CIFAR-10 binary version: records of 1 label byte (0..9) and 3072 pixel
// bytes (1024 R, 1024 G, 1024 B, row-major 32×32). Inputs [3, 32, 32] = pixel / 255.
Result<Dataset> LoadCifar10(std::span<const std::filesystem::path> files, std::uint64_t limit = 0);
Result<Dataset> ParseCifar10(ByteSpan records, std::uint64_t limit = 0);

// Byte-level language modelling on any file: example i has input
// bytes[i·T, i·T + T) and target bytes[i·T + 1, i·T + T + 1) (the next byte
// at each position), both shape [T] holding byte values 0..255; there are
// (size − 1) / T examples (non-overlapping windows). num_classes = 256.
Result<Dataset> LoadTextWindows(const std::filesystem::path& path, std::uint32_t window);
Result<Dataset> TextWindows(ByteSpan text, std::uint32_t window, std::string name = "text");

// ---- synthetic -----------------------------------------------------------------

// A learnable classification task from a seed alone: inputs uniform in
// [-1, 1) (Philox stream (seed, step 0, tensor 0xFFFF0001), element
// i·d + j), labels = argmax_c Σ_j W[c][j]·x[j] of a hidden teacher W whose
// entries are standard normal (stream (seed, 0, 0xFFFF0002)), summed in fp64
// in index order. Bitwise the same on every platform.
Dataset SyntheticClassification(std::uint64_t seed, std::uint64_t count, std::int64_t input_dim,
                                std::uint32_t num_classes);

}  // namespace vt::worker
