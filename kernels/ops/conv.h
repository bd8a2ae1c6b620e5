#pragma once
// 2-D convolution and pooling on NCHW tensors (conventions: kernels/ops/linear.h).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include "common/result.h"
#include "kernels/certified.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

struct Conv2dParams {
  std::int64_t stride_h = 1, stride_w = 1;  // 1 ≤ stride ≤ 2^20
  std::int64_t pad_h = 0, pad_w = 0;        // 0 ≤ pad ≤ 2^20 (zero padding)
};

// x [N, Ci, H, W], w [Co, Ci, KH, KW], b [Co] or null → y [N, Co, OH, OW],
// OH = (H + 2·pad_h − KH) / stride_h + 1 (≥ 1), likewise OW.
Status Conv2dForward(const OpContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                     const Conv2dParams& params);
// Outputs in order: dx, dw, db (db always produced).
Status Conv2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                      Tensor& dw, Tensor& db, const Conv2dParams& params);
// TEST ONLY: certified conv2d and conv2d_backward, and the fp32 weight
// gradient, run their GEMMs over groups of this many images (0: as many as
// fit the scratch bound), so that tests can split a small batch into
// several groups.
void SetConvImagesPerGroupForTesting(std::int64_t images);

struct Pool2dParams {
  std::int64_t kernel_h = 2, kernel_w = 2;  // 1 ≤ kernel ≤ 2^20
  std::int64_t stride_h = 2, stride_w = 2;  // 1 ≤ stride ≤ 2^20
  std::int64_t pad_h = 0, pad_w = 0;        // 0 ≤ pad ≤ kernel / 2
};

// The pooling parameters the kernels accept: kernel in [1, 2^20], stride
// and padding in range, padding at most half the kernel (so every window
// holds a valid position). Invalid "bad-attribute" otherwise.
Status CheckPool2dParams(const Pool2dParams& p);

// x [N, C, H, W] → y [N, C, OH, OW]. Max pooling ignores padding; average
// pooling divides by the full window area KH·KW (padding counts as zeros,
// PyTorch's count_include_pad=True).
Status MaxPool2dForward(const OpContext& ctx, const Tensor& x, Tensor& y, const Pool2dParams& params);
Status MaxPool2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx,
                         const Pool2dParams& params);
Status AvgPool2dForward(const OpContext& ctx, const Tensor& x, Tensor& y, const Pool2dParams& params);
// `x` supplies only the input shape.
Status AvgPool2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx,
                         const Pool2dParams& params);

// Output extent of one spatial axis of a convolution or pooling: (in +
// 2·pad − kernel) / stride + 1, 0 when the window does not fit.
inline std::int64_t OutExtent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  const std::int64_t span = in + 2 * pad - kernel;  // |terms| ≤ 2^32 + 2^21 for valid attributes: no overflow
  return span < 0 ? 0 : span / stride + 1;
}

// The windows [first, last] along one axis (`count` of them, kernel k,
// stride s, padding pad) whose span o·s − pad … o·s − pad + k − 1 holds
// position i ≥ 0; first > last when none does.
inline std::pair<std::int64_t, std::int64_t> CoveringWindows(std::int64_t i, std::int64_t k, std::int64_t s,
                                                             std::int64_t pad, std::int64_t count) {
  const std::int64_t from = i + pad - k + 1;
  return {from <= 0 ? 0 : (from + s - 1) / s, std::min((i + pad) / s, count - 1)};
}

// f(o_h, o_w) for each window of an oh × ow grid covering input position
// (ih, iw), in row-major order.
template <class F>
void ForCoveringWindows(const Pool2dParams& p, std::int64_t oh, std::int64_t ow, std::int64_t ih,
                        std::int64_t iw, const F& f) {
  const auto [h0, h1] = CoveringWindows(ih, p.kernel_h, p.stride_h, p.pad_h, oh);
  const auto [w0, w1] = CoveringWindows(iw, p.kernel_w, p.stride_w, p.pad_w, ow);
  for (std::int64_t o_h = h0; o_h <= h1; ++o_h)
    for (std::int64_t o_w = w0; o_w <= w1; ++o_w) f(o_h, o_w);
}

// Max pooling's rule: a later value replaces the window's current maximum
// when it is greater or NaN (the first maximum wins; NaN propagates,
// PyTorch's rule).
inline bool PoolMaxReplaces(float best, float v) { return (v > best) | std::isnan(v); }

// Index ih·w + iw of the maximum of window (o_h, o_w) of an h × w plane
// whose value at (ih, iw) is x_at(ih, iw): the first valid position, then
// each later one PoolMaxReplaces admits, in row-major window order; −1 if
// the window holds no valid position (pad ≤ kernel / 2 rules that out).
template <class XAt>
std::int64_t WindowArgmax(const Pool2dParams& p, std::int64_t h, std::int64_t w, std::int64_t o_h,
                          std::int64_t o_w, const XAt& x_at) {
  std::int64_t best_idx = -1;
  float best = 0.0f;
  const std::int64_t h0 = o_h * p.stride_h - p.pad_h, w0 = o_w * p.stride_w - p.pad_w;
  for (std::int64_t ih = std::max<std::int64_t>(h0, 0); ih < std::min(h0 + p.kernel_h, h); ++ih) {
    for (std::int64_t iw = std::max<std::int64_t>(w0, 0); iw < std::min(w0 + p.kernel_w, w); ++iw) {
      // Masks, not a branch (a ?: here compiles back into one): which value
      // wins is data, and a mispredicted branch per window position cost a
      // 2 × 2 pooling most of its time.
      const float v = x_at(ih, iw);
      const std::int64_t take = -static_cast<std::int64_t>((best_idx < 0) | PoolMaxReplaces(best, v));
      const auto take32 = static_cast<std::uint32_t>(take);
      best = std::bit_cast<float>((std::bit_cast<std::uint32_t>(v) & take32) |
                                  (std::bit_cast<std::uint32_t>(best) & ~take32));
      best_idx = ((ih * w + iw) & take) | (best_idx & ~take);
    }
  }
  return best_idx;
}

// MaxPool2d's backward at (ih, iw) of an h × w plane with oh × ow windows:
// from +0, over the windows covering it in row-major order whose maximum
// (WindowArgmax) is at (ih, iw), + dy(o_h, o_w) — the element rule's one
// value. The kernel scatters the windows in row-major order instead, which
// adds to each value in this same order while taking each window's maximum
// once (gathering per value costs a 2 × 2 pooling's backward four maxima a
// window: cnn-fashion's step 17 % slower); verify_element_rules_test checks
// the two agree, ties, NaNs and signed zeros included.
template <class T, class XAt, class DyAt>
T MaxPoolGradAt(const Pool2dParams& p, std::int64_t h, std::int64_t w, std::int64_t oh, std::int64_t ow,
                std::int64_t ih, std::int64_t iw, const XAt& x_at, const DyAt& dy_at) {
  T sum = T(0);
  ForCoveringWindows(p, oh, ow, ih, iw, [&](std::int64_t o_h, std::int64_t o_w) {
    if (WindowArgmax(p, h, w, o_h, o_w, x_at) == ih * w + iw) sum = sum + static_cast<T>(dy_at(o_h, o_w));
  });
  return sum;
}

// AvgPool2d's backward at input position (ih, iw) of one plane with oh × ow
// windows: from +0, over the windows covering it in row-major order, +
// dy(o_h, o_w) / (KH·KW). The kernel computes every dx value so (the order
// its definition gives: kernels/ops/conv.cpp), and the element rule one
// (verify/element_rules.cpp). Math: the mode's arithmetic (T = float in
// repops, fp64 in rounded mode).
template <class T, class DyAt>
T AvgPoolGradAt(const Pool2dParams& p, std::int64_t oh, std::int64_t ow, std::int64_t ih, std::int64_t iw,
                const DyAt& dy_at) {
  const T area = static_cast<T>(p.kernel_h * p.kernel_w);
  T sum = T(0);
  ForCoveringWindows(p, oh, ow, ih, iw, [&](std::int64_t o_h, std::int64_t o_w) {
    sum = sum + static_cast<T>(dy_at(o_h, o_w)) / area;
  });
  return sum;
}

// Certified mode: the same terms — each window's dy where its maximum is
// at (ih, iw); each covering window's dy / (KH·KW) in fp32 — summed exactly
// and rounded once (kernels/certified.h): the value the certified kernels
// compute through their fast path, here by the exact path alone (the
// element rule's).
template <class XAt, class DyAt>
float CertifiedMaxPoolGradAt(const Pool2dParams& p, std::int64_t h, std::int64_t w, std::int64_t oh,
                             std::int64_t ow, std::int64_t ih, std::int64_t iw, const XAt& x_at,
                             const DyAt& dy_at) {
  ExactAccumulator sum;
  ForCoveringWindows(p, oh, ow, ih, iw, [&](std::int64_t o_h, std::int64_t o_w) {
    if (WindowArgmax(p, h, w, o_h, o_w, x_at) == ih * w + iw) sum.Add(dy_at(o_h, o_w));
  });
  return sum.Round();
}
template <class DyAt>
float CertifiedAvgPoolGradAt(const Pool2dParams& p, std::int64_t oh, std::int64_t ow, std::int64_t ih,
                             std::int64_t iw, const DyAt& dy_at) {
  const auto area = static_cast<float>(p.kernel_h * p.kernel_w);
  ExactAccumulator sum;
  ForCoveringWindows(p, oh, ow, ih, iw,
                     [&](std::int64_t o_h, std::int64_t o_w) { sum.Add(dy_at(o_h, o_w) / area); });
  return sum.Round();
}

}  // namespace vt::kernels
