#include "kernels/tensor.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstring>

#include "common/encoding.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor_codec.h"

namespace vt::kernels {

static_assert(std::endian::native == std::endian::little,
              "tensor hashing writes raw IEEE bytes and assumes a little-endian host");

std::int64_t NumElements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

Tensor::Tensor(Shape shape) : m_shape(std::move(shape)) {
  m_values.assign(static_cast<std::size_t>(NumElements(m_shape)), 0.0f);
}

Tensor::Tensor(Shape shape, std::vector<float> values)
    : m_shape(std::move(shape)), m_values(values.begin(), values.end()) {
  assert(static_cast<std::int64_t>(m_values.size()) == NumElements(m_shape));
}

namespace {
// Shapes from outside: non-negative dims whose product fits comfortably.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
constexpr std::size_t kMaxRank = 32;

Status CheckShape(const Shape& shape) {
  if (shape.size() > kMaxRank) return Status::Invalid("tensor-bad-shape", "rank above 32");
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) return Status::Invalid("tensor-bad-shape", "negative dimension");
    if (d != 0 && n > kMaxElements / d) return Status::Invalid("tensor-bad-shape", "too many elements");
    n *= d;
  }
  return Status::Ok();
}
}  // namespace

Result<Tensor> Tensor::FromValues(Shape shape, std::vector<float> values) {
  VT_TRY(CheckShape(shape));
  if (static_cast<std::int64_t>(values.size()) != NumElements(shape)) {
    return Status::Invalid("tensor-size-mismatch",
                           "value count " + std::to_string(values.size()) + " does not match shape " +
                               ShapeToString(shape));
  }
  return Tensor(std::move(shape), std::move(values));
}

Result<Tensor> Tensor::ForOverwrite(Shape shape) {
  VT_TRY(CheckShape(shape));
  Tensor t;
  t.m_values.resize(static_cast<std::size_t>(NumElements(shape)));
  t.m_shape = std::move(shape);
  return t;
}

Result<Tensor> Tensor::Reshaped(Shape shape) const {
  VT_TRY(CheckShape(shape));
  if (NumElements(shape) != numel()) {
    return Status::Invalid("shape-mismatch",
                           "cannot reshape " + ShapeToString(m_shape) + " to " + ShapeToString(shape));
  }
  Tensor t;
  t.m_shape = std::move(shape);
  t.m_values = m_values;
  return t;
}

namespace {
std::atomic<bool> g_resize_fill_for_testing{false};
}  // namespace

void SetResizeFillForTesting(bool on) { g_resize_fill_for_testing.store(on); }

bool HasUnwrittenValue(const Tensor& t) {
  return std::any_of(t.values().begin(), t.values().end(),
                     [](float v) { return std::bit_cast<std::uint32_t>(v) == kUnwrittenFloatBits; });
}

void Tensor::Resize(const Shape& shape) {
  // A default Tensor has shape [] but no value yet, hence the size check.
  if (shape == m_shape && m_values.size() == static_cast<std::size_t>(NumElements(shape))) return;
  m_shape = shape;
  // clear() first: resize would copy the old values into a new allocation.
  m_values.clear();
  m_values.resize(static_cast<std::size_t>(NumElements(m_shape)));
  if (g_resize_fill_for_testing.load(std::memory_order_relaxed)) {
    std::fill(m_values.begin(), m_values.end(), std::bit_cast<float>(kUnwrittenFloatBits));
  }
}

Hash256 Tensor::Hash() const {
  // One thread: callers that hash large tensors in bulk pass their thread
  // count to TensorHash (kernels/chunk_tree.h); the result is the same.
  return TensorHash(*this, 1);
}

bool Tensor::BitwiseEqual(const Tensor& other) const {
  return m_shape == other.m_shape &&
         (m_values.empty() ||
          std::memcmp(m_values.data(), other.m_values.data(), m_values.size() * sizeof(float)) == 0);
}

}  // namespace vt::kernels
