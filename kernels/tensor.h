#pragma once
// Dense fp32 tensors, row-major and contiguous. Every operator in every mode
// stores fp32 (rounded mode stores values already rounded to b bits); fp64
// appears only inside rounded-mode operators as their working precision.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::kernels {

using Shape = std::vector<std::int64_t>;

std::int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[2, 3, 4]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);  // zero-filled
  Tensor(Shape shape, std::vector<float> values);  // values.size() must match (asserted)

  // Validating constructor for shapes and data that come from outside.
  static Result<Tensor> FromValues(Shape shape, std::vector<float> values);

  const Shape& shape() const { return m_shape; }
  int rank() const { return static_cast<int>(m_shape.size()); }
  std::int64_t dim(int i) const { return m_shape[i < 0 ? i + rank() : i]; }
  std::int64_t numel() const { return static_cast<std::int64_t>(m_values.size()); }

  float* data() { return m_values.data(); }
  const float* data() const { return m_values.data(); }
  std::span<float> values() { return m_values; }
  std::span<const float> values() const { return m_values; }
  float& operator[](std::int64_t i) { return m_values[static_cast<std::size_t>(i)]; }
  float operator[](std::int64_t i) const { return m_values[static_cast<std::size_t>(i)]; }

  // Same values, new shape with the same element count.
  Result<Tensor> Reshaped(Shape shape) const;
  // Re-shape and zero-fill in place when the shape differs (output buffers).
  void Resize(const Shape& shape);

  // Content hash: TaggedHash("veritrain/tensor/v2", dtype ‖ shape ‖ root of
  // the chunk tree over the raw little-endian IEEE bytes, 256 values a leaf;
  // kernels/chunk_tree.h). Bit-exact: -0.0 and 0.0 hash differently, as do
  // NaN payloads. Format in docs/formats.md.
  Hash256 Hash() const;

  bool BitwiseEqual(const Tensor& other) const;

 private:
  Shape m_shape;
  std::vector<float> m_values;
};

}  // namespace vt::kernels
