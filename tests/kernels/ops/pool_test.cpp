// Average pooling's backward computes each dx value by its definition,
// AvgPoolGradAt (kernels/ops/conv.h), which the element rule uses too: the
// kernel's shortcuts (windows that tile the plane, a global pool) must give
// its bits on every geometry, signed zeros and non-finite gradients included.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/tensor.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

std::vector<float> Gradients(std::mt19937_64& rng, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::normal_distribution<float> normal;
  for (float& x : v) {
    switch (rng() % 16) {
      case 0:
        x = -0.0f;
        break;
      case 1:
        x = 0.0f;
        break;
      case 2:
        x = std::numeric_limits<float>::infinity();
        break;
      case 3:
        x = std::numeric_limits<float>::denorm_min();
        break;
      default:
        x = normal(rng);
    }
  }
  return v;
}

struct Geometry {
  std::int64_t h, w;
  Pool2dParams p;
};

TEST(AvgPool2dBackward, EveryValueIsItsDefinition) {
  std::mt19937_64 rng(test::TestSeed());
  const Geometry cases[] = {
      {4, 6, {2, 2, 2, 2, 0, 0}},        // tiles
      {5, 7, {2, 2, 2, 2, 0, 0}},        // tiles, a row and a column past the last window
      {14, 14, {14, 14, 14, 14, 0, 0}},  // global (cnn-fashion's)
      {3, 9, {3, 2, 3, 2, 0, 0}},        // rectangular tiles
      {1, 1, {1, 1, 1, 1, 0, 0}},       {5, 5, {3, 3, 2, 2, 1, 1}},  // overlapping, padded: the general path
      {6, 5, {2, 3, 1, 3, 0, 1}},
  };
  for (const Geometry& geo : cases) {
    const Pool2dParams& p = geo.p;
    const std::int64_t oh = (geo.h + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
    const std::int64_t ow = (geo.w + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
    const std::int64_t planes = 3;
    const Tensor x({1, planes, geo.h, geo.w});
    const Tensor dy = Tensor::FromValues({1, planes, oh, ow}, Gradients(rng, planes * oh * ow)).value();
    for (Mode mode : {Mode::kRepops, Mode::kNative}) {
      ExecConfig config;
      config.mode = mode;
      Tensor dx;
      ASSERT_TRUE(AvgPool2dBackward(OpContext(config), dy, x, dx, p).ok());
      for (std::int64_t pl = 0; pl < planes; ++pl) {
        const auto dy_at = [&](std::int64_t o_h, std::int64_t o_w) { return dy[(pl * oh + o_h) * ow + o_w]; };
        for (std::int64_t ih = 0; ih < geo.h; ++ih) {
          for (std::int64_t iw = 0; iw < geo.w; ++iw) {
            const float want = AvgPoolGradAt<float>(p, oh, ow, ih, iw, dy_at);
            const float got = dx[(pl * geo.h + ih) * geo.w + iw];
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
                << "h=" << geo.h << " w=" << geo.w << " kernel " << p.kernel_h << "x" << p.kernel_w << " at ("
                << ih << ", " << iw << ") plane " << pl;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace vt::kernels
