#pragma once
// Canonical byte encoding of one tensor (docs/formats.md, "Tensors"):
//
//   u8 dtype (0 = f32) | varint rank | varint dim, rank times | numel × 4 bytes
//   of little-endian IEEE-754 binary32
//
// — the header and the values Tensor::Hash commits to as a chunk tree
// (kernels/chunk_tree.h). One codec for every place tensors travel as bytes:
// dataset examples, checkpoint payloads, arbitration inputs.

#include <span>

#include "common/encoding.h"
#include "common/result.h"
#include "kernels/tensor.h"

namespace vt::kernels {

inline constexpr std::size_t kMaxTensorRank = 32;

// The header alone (dtype, rank, dims): Tensor::Hash hashes it with the
// root of the values' chunk tree.
void EncodeTensorHeader(Writer& w, const Shape& shape);
void EncodeTensor(Writer& w, const Tensor& t);
Bytes EncodeTensor(const Tensor& t);
// The same bytes from a shape and values held elsewhere (dataset storage).
// Precondition: values.size() == NumElements(shape).
void EncodeTensor(Writer& w, const Shape& shape, std::span<const float> values);
// Invalid "tensor-bad-dtype", "tensor-bad-shape", or enc-* (enc-truncated
// also when the dims promise more values than the input holds).
Result<Tensor> DecodeTensor(Reader& r);
// Exactly one tensor: DecodeTensor, then "enc-trailing-bytes" for anything left.
Result<Tensor> DecodeTensorBytes(ByteSpan bytes);

// The part before the values, leaving `r` at the first value byte; the same
// checks as DecodeTensor, including that numel × 4 bytes remain. For code
// that processes the raw bytes in place (checkpoint byte shuffling).
struct TensorHeader {
  Shape shape;
  std::uint64_t numel = 0;
};
Result<TensorHeader> ReadTensorHeader(Reader& r);

}  // namespace vt::kernels
