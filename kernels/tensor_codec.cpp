#include "kernels/tensor_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

namespace vt::kernels {

static_assert(std::endian::native == std::endian::little, "tensor payloads are raw little-endian floats");

namespace {
constexpr std::uint8_t kDtypeF32 = 0;
}

void EncodeTensorHeader(Writer& w, const Shape& shape) {
  w.PutU8(kDtypeF32);
  w.PutVarint(shape.size());
  for (std::int64_t d : shape) w.PutVarint(static_cast<std::uint64_t>(d));
}

void EncodeTensor(Writer& w, const Shape& shape, std::span<const float> values) {
  EncodeTensorHeader(w, shape);
  w.PutFixed(ByteSpan(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()));
}

void EncodeTensor(Writer& w, const Tensor& t) { EncodeTensor(w, t.shape(), t.values()); }

Bytes EncodeTensor(const Tensor& t) {
  Writer w;
  EncodeTensor(w, t);
  return std::move(w).Take();
}

Result<TensorHeader> ReadTensorHeader(Reader& r) {
  VT_ASSIGN_OR_RETURN(std::uint8_t dtype, r.GetU8());
  if (dtype != kDtypeF32) return Status::Invalid("tensor-bad-dtype", "dtype " + std::to_string(dtype) + " is not f32");
  VT_ASSIGN_OR_RETURN(std::uint64_t rank, r.GetVarint());
  if (rank > kMaxTensorRank) return Status::Invalid("tensor-bad-shape", "rank " + std::to_string(rank) + " above 32");
  TensorHeader h;
  for (std::uint64_t i = 0; i < rank; ++i) {
    VT_ASSIGN_OR_RETURN(std::uint64_t d, r.GetVarint());
    if (d > static_cast<std::uint64_t>(INT64_MAX)) return Status::Invalid("tensor-bad-shape", "dimension too large");
    h.shape.push_back(static_cast<std::int64_t>(d));
  }
  // The values must fit in what is left: check before a product can overflow
  // and before anyone allocates.
  const std::uint64_t max_values = r.remaining() / sizeof(float);
  if (std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end()) return h;  // numel 0
  std::uint64_t numel = 1;
  for (std::int64_t d : h.shape) {
    const auto ud = static_cast<std::uint64_t>(d);
    if (numel > max_values / ud)
      return Status::Invalid("enc-truncated", "tensor shape " + ShapeToString(h.shape) + " exceeds the input");
    numel *= ud;
  }
  h.numel = numel;
  return h;
}

Result<Tensor> DecodeTensor(Reader& r) {
  VT_ASSIGN_OR_RETURN(TensorHeader h, ReadTensorHeader(r));
  VT_ASSIGN_OR_RETURN(ByteSpan raw, r.GetFixed(h.numel * sizeof(float)));
  VT_ASSIGN_OR_RETURN(Tensor t, Tensor::ForOverwrite(std::move(h.shape)));
  if (h.numel != 0) std::memcpy(t.data(), raw.data(), raw.size());
  return t;
}

Result<Tensor> DecodeTensorBytes(ByteSpan bytes) {
  Reader r(bytes);
  VT_ASSIGN_OR_RETURN(Tensor t, DecodeTensor(r));
  VT_TRY(r.Finish());
  return t;
}

}  // namespace vt::kernels
