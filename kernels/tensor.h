#pragma once
// Dense fp32 tensors, row-major and contiguous. Every operator in every mode
// stores fp32 (rounded mode stores values already rounded to b bits); fp64
// appears only inside rounded-mode operators as their working precision.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::kernels {

using Shape = std::vector<std::int64_t>;

std::int64_t NumElements(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[2, 3, 4]"

namespace detail {
// std::allocator, except that an element made without a value (resize)
// is left uninitialised rather than zeroed.
template <class T>
struct ForOverwriteAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = ForOverwriteAllocator<U>;
  };
  ForOverwriteAllocator() = default;
  template <class U>
  ForOverwriteAllocator(const ForOverwriteAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);  // zero-filled
  Tensor(Shape shape, std::vector<float> values);  // values.size() must match (asserted)

  // Validating constructors for shapes and data that come from outside:
  // with these values, or with unspecified ones that the caller overwrites
  // whole (a decoder's copy).
  static Result<Tensor> FromValues(Shape shape, std::vector<float> values);
  static Result<Tensor> ForOverwrite(Shape shape);

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
  // Re-shape in place when the shape differs (output buffers); the values
  // are then unspecified, not zeroed: an operator writes every value of its
  // outputs (the zero-fill of every new output was 6 % of mlp-fashion's
  // rounded step in a profile; docs/kernels.md, "Thirteenth pass"). The
  // same shape keeps the values.
  void Resize(const Shape& shape);

  // Content hash: TaggedHash("veritrain/tensor/v2", dtype ‖ shape ‖ root of
  // the chunk tree over the raw little-endian IEEE bytes, 256 values a leaf;
  // kernels/chunk_tree.h). Bit-exact: -0.0 and 0.0 hash differently, as do
  // NaN payloads. Format in docs/formats.md.
  Hash256 Hash() const;

  bool BitwiseEqual(const Tensor& other) const;

 private:
  Shape m_shape;
  std::vector<float, detail::ForOverwriteAllocator<float>> m_values;
};

// TEST ONLY: while on, Resize fills the values of a new shape with
// kUnwrittenFloatBits, a signalling NaN: no IEEE operation or conversion
// returns one (they return quiet NaNs), so a test that finds one in an
// operator's output has found a value the operator never wrote. Set it
// while no operator runs.
inline constexpr std::uint32_t kUnwrittenFloatBits = 0x7F80DEADu;
void SetResizeFillForTesting(bool on);
// Whether `t` holds a value with kUnwrittenFloatBits.
bool HasUnwrittenValue(const Tensor& t);

}  // namespace vt::kernels
