#include "contract_vm/tensor_bytes.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/encoding.h"

namespace vt::vm {

static_assert(std::endian::native == std::endian::little, "tensor payloads are raw little-endian floats");

namespace {
constexpr std::uint8_t kDtypeF32 = 0;
}

Bytes EncodeTensorBytes(const kernels::Tensor& t) {
  Writer w;
  w.PutU8(kDtypeF32);
  w.PutVarint(t.shape().size());
  for (std::int64_t d : t.shape()) w.PutVarint(static_cast<std::uint64_t>(d));
  const auto values = t.values();
  w.PutFixed(ByteSpan(reinterpret_cast<const std::uint8_t*>(values.data()), values.size_bytes()));
  return std::move(w).Take();
}

Result<kernels::Tensor> DecodeTensorBytes(ByteSpan bytes) noexcept {
  Reader r(bytes);
  VT_ASSIGN_OR_RETURN(kernels::Tensor t, DecodeTensor(r));
  VT_TRY(r.Finish());
  return t;
}

Result<kernels::Tensor> DecodeTensor(Reader& r) noexcept {
  VT_ASSIGN_OR_RETURN(std::uint8_t dtype, r.GetU8());
  if (dtype != kDtypeF32) return Status::Invalid("tensor-bad-dtype", "dtype " + std::to_string(dtype));
  VT_ASSIGN_OR_RETURN(std::uint64_t rank, r.GetVarint());
  if (rank > kMaxTensorRankBytes) return Status::Invalid("tensor-bad-shape", "rank above 32");
  kernels::Shape shape;
  std::uint64_t numel = 1;
  const std::uint64_t max_values = r.remaining() / sizeof(float);
  for (std::uint64_t i = 0; i < rank; ++i) {
    VT_ASSIGN_OR_RETURN(std::uint64_t d, r.GetVarint());
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return Status::Invalid("tensor-bad-shape", "dimension too large");
    shape.push_back(static_cast<std::int64_t>(d));
    // Bound the product by what the input can hold before it can overflow.
    if (d != 0 && numel > max_values / d) numel = max_values + 1;
    else numel *= d;
  }
  if (numel > r.remaining() / sizeof(float)) return Status::Invalid("enc-truncated", "tensor values exceed the input");
  VT_ASSIGN_OR_RETURN(ByteSpan raw, r.GetFixed(numel * sizeof(float)));
  std::vector<float> values(numel);
  if (numel != 0) std::memcpy(values.data(), raw.data(), raw.size());
  return kernels::Tensor::FromValues(std::move(shape), std::move(values));
}

}  // namespace vt::vm
