#pragma once
// 2-D convolution and pooling on NCHW tensors (conventions: kernels/ops/linear.h).

#include <cstdint>

#include "common/result.h"
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

struct Pool2dParams {
  std::int64_t kernel_h = 2, kernel_w = 2;  // 1 ≤ kernel ≤ 2^20
  std::int64_t stride_h = 2, stride_w = 2;  // 1 ≤ stride ≤ 2^20
  std::int64_t pad_h = 0, pad_w = 0;        // 0 ≤ pad ≤ kernel / 2
};

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

}  // namespace vt::kernels
