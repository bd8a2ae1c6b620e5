#pragma once
// Tensors as they travel in arbitration payloads: the canonical tensor bytes
// of docs/formats.md "Tensors" (u8 dtype 0 = f32 ‖ varint rank ‖ varint dims
// ‖ numel × f32 little-endian), the preimage of kernels Tensor::Hash. The
// same format as worker/tensor_codec.h, which contract_vm may not include;
// tests check that the two agree byte for byte.

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "kernels/tensor.h"

namespace vt::vm {

inline constexpr std::size_t kMaxTensorRankBytes = 32;

Bytes EncodeTensorBytes(const kernels::Tensor& t);
// One tensor from a reader (the rest of the input stays for the caller).
Result<kernels::Tensor> DecodeTensor(Reader& r) noexcept;
// Strict: Invalid "tensor-bad-dtype", "tensor-bad-shape", "enc-truncated",
// "enc-trailing-bytes", or the decoder's enc-* reasons.
Result<kernels::Tensor> DecodeTensorBytes(ByteSpan bytes) noexcept;

}  // namespace vt::vm
