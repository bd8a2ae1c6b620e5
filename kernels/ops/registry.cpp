// The operator registry: OpKind → (arity, adapter, flop estimate).
// Adapters decode OpAttrs into the typed parameters of each operator; the
// operators themselves validate shapes and values.

#include "kernels/ops/registry.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "kernels/matmul.h"
#include "kernels/ops/attention.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/embedding.h"
#include "kernels/ops/linear.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/shape.h"
#include "kernels/ops/softmax.h"

namespace vt::kernels {

// ---- attributes ----------------------------------------------------------------

std::uint32_t OpAttrs::Bits(float value) { return std::bit_cast<std::uint32_t>(value); }

float OpAttrs::Float(std::size_t i) const { return std::bit_cast<float>(floats.at(i)); }

void Encode(Writer& w, const OpAttrs& attrs) {
  w.PutVector(attrs.ints, &Writer::PutI64);
  w.PutVector(attrs.floats, &Writer::PutU32);
}

Result<OpAttrs> Decode(Reader& r, DecodeAs<OpAttrs>) {
  OpAttrs attrs;
  VT_ASSIGN_OR_RETURN(attrs.ints, r.GetVector<std::int64_t>(&Reader::GetI64, kMaxAttrInts));
  VT_ASSIGN_OR_RETURN(attrs.floats, r.GetVector<std::uint32_t>(&Reader::GetU32, kMaxAttrFloats));
  return attrs;
}

namespace {

using Inputs = std::span<const Tensor* const>;
using OutputSpan = std::span<Tensor>;

Status Arity(const OpAttrs& a, std::size_t ints, std::size_t floats, std::string_view op) {
  if (a.ints.size() != ints || a.floats.size() != floats) {
    return Status::Invalid("bad-attribute", std::string(op) + " expects " + std::to_string(ints) + " integer and " +
                                                std::to_string(floats) + " float attributes");
  }
  return Status::Ok();
}

Status Flag(std::int64_t v, bool* out) {
  if (v != 0 && v != 1) return Status::Invalid("bad-attribute", "flag attribute must be 0 or 1");
  *out = v == 1;
  return Status::Ok();
}

Status MatMulOptionsFrom(const OpAttrs& a, MatMulOptions* o) {
  VT_TRY(Arity(a, 2, 0, "matmul"));
  VT_TRY(Flag(a.ints[0], &o->trans_a));
  return Flag(a.ints[1], &o->trans_b);
}

Status ConvParamsFrom(const OpAttrs& a, Conv2dParams* p) {
  VT_TRY(Arity(a, 4, 0, "conv2d"));
  p->stride_h = a.ints[0];
  p->stride_w = a.ints[1];
  p->pad_h = a.ints[2];
  p->pad_w = a.ints[3];
  return Status::Ok();
}

Status PoolParamsFrom(const OpAttrs& a, Pool2dParams* p) {
  VT_TRY(Arity(a, 6, 0, "pool2d"));
  p->kernel_h = a.ints[0];
  p->kernel_w = a.ints[1];
  p->stride_h = a.ints[2];
  p->stride_w = a.ints[3];
  p->pad_h = a.ints[4];
  p->pad_w = a.ints[5];
  return Status::Ok();
}

Status BatchNormParamsFrom(const OpAttrs& a, BatchNormParams* p) {
  VT_TRY(Arity(a, 0, 2, "batchnorm"));
  p->eps = a.Float(0);
  p->momentum = a.Float(1);
  return Status::Ok();
}

const Tensor* OptionalInput(Inputs in, std::size_t i) { return in.size() > i ? in[i] : nullptr; }

// ---- flop estimates (saturating, from shapes that may be hostile) ---------------

constexpr std::uint64_t kSat = std::numeric_limits<std::uint64_t>::max();

std::uint64_t Mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kSat : r;
}
std::uint64_t Add(std::uint64_t a, std::uint64_t b) { return a > kSat - b ? kSat : a + b; }
std::uint64_t Mul(std::initializer_list<std::uint64_t> xs) {
  std::uint64_t r = 1;
  for (std::uint64_t x : xs) r = Mul(r, x);
  return r;
}
std::uint64_t DimOf(std::span<const Shape> s, std::size_t t, int i) {
  if (t >= s.size()) return 0;
  const Shape& sh = s[t];
  const int rank = static_cast<int>(sh.size());
  const int j = i < 0 ? i + rank : i;
  if (j < 0 || j >= rank || sh[static_cast<std::size_t>(j)] < 0) return 0;
  return static_cast<std::uint64_t>(sh[static_cast<std::size_t>(j)]);
}
std::uint64_t NumelOf(std::span<const Shape> s, std::size_t t) {
  if (t >= s.size()) return 0;
  std::uint64_t n = 1;
  for (std::int64_t d : s[t]) n = Mul(n, d < 0 ? 0 : static_cast<std::uint64_t>(d));
  return n;
}
std::uint64_t LeadingOf(std::span<const Shape> s, std::size_t t, std::size_t trailing) {
  if (t >= s.size()) return 0;
  std::uint64_t n = 1;
  const Shape& sh = s[t];
  for (std::size_t i = 0; i + trailing < sh.size(); ++i) n = Mul(n, sh[i] < 0 ? 0 : static_cast<std::uint64_t>(sh[i]));
  return n;
}
std::uint64_t AttrOr(const OpAttrs& a, std::size_t i, std::uint64_t fallback) {
  return i < a.ints.size() && a.ints[i] > 0 ? static_cast<std::uint64_t>(a.ints[i]) : fallback;
}
// Output extent of a window over `in` (padding attribute at pad_i, stride at stride_i).
std::uint64_t Extent(std::uint64_t in, std::uint64_t kernel, std::uint64_t stride, std::uint64_t pad) {
  const std::uint64_t padded = Add(in, Mul(2, pad));
  if (padded < kernel || stride == 0) return 0;
  return (padded - kernel) / stride + 1;
}

std::uint64_t FlopsMatMul(const OpAttrs& a, std::span<const Shape> s, std::size_t a_index) {
  const bool ta = !a.ints.empty() && a.ints[0] == 1;
  const bool tb = a.ints.size() > 1 && a.ints[1] == 1;
  const std::uint64_t m = DimOf(s, a_index, ta ? -1 : -2), k = DimOf(s, a_index, ta ? -2 : -1);
  const std::uint64_t n = DimOf(s, a_index + 1, tb ? -2 : -1);
  return Mul({2, LeadingOf(s, a_index, 2), m, n, k});
}

std::uint64_t FlopsConv(const OpAttrs& a, std::span<const Shape> s, std::size_t x_index) {
  const std::uint64_t oh = Extent(DimOf(s, x_index, 2), DimOf(s, x_index + 1, 2), AttrOr(a, 0, 1), AttrOr(a, 2, 0));
  const std::uint64_t ow = Extent(DimOf(s, x_index, 3), DimOf(s, x_index + 1, 3), AttrOr(a, 1, 1), AttrOr(a, 3, 0));
  return Mul({2, DimOf(s, x_index, 0), DimOf(s, x_index + 1, 0), oh, ow, DimOf(s, x_index + 1, 1),
              DimOf(s, x_index + 1, 2), DimOf(s, x_index + 1, 3)});
}

std::uint64_t FlopsPool(const OpAttrs& a, std::span<const Shape> s, std::size_t x_index) {
  const std::uint64_t kh = AttrOr(a, 0, 1), kw = AttrOr(a, 1, 1);
  const std::uint64_t oh = Extent(DimOf(s, x_index, 2), kh, AttrOr(a, 2, 1), AttrOr(a, 4, 0));
  const std::uint64_t ow = Extent(DimOf(s, x_index, 3), kw, AttrOr(a, 3, 1), AttrOr(a, 5, 0));
  return Mul({DimOf(s, x_index, 0), DimOf(s, x_index, 1), oh, ow, kh, kw});
}

std::uint64_t FlopsAttention(std::span<const Shape> s, std::size_t qkv_index, std::uint64_t heads, std::uint64_t factor) {
  const std::uint64_t b = DimOf(s, qkv_index, 0), t = DimOf(s, qkv_index, 1), c = DimOf(s, qkv_index, 2) / 3;
  return Add(Mul({factor, 2, b, t, t, c}), Mul({5, b, heads, t, t}));
}

// Per-element cost c·numel(input t).
template <std::uint64_t kCost, std::size_t kInput = 0>
std::uint64_t FlopsElementwise(const OpAttrs&, std::span<const Shape> s) {
  return Mul(kCost, NumelOf(s, kInput));
}

// ---- the table --------------------------------------------------------------------

constexpr int kMaxClipInputs = 4096;

const OpInfo kOps[] = {
    {OpKind::kMatMul, "matmul", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       MatMulOptions o;
       VT_TRY(MatMulOptionsFrom(a, &o));
       VT_TRY(ValidateMatMul(*in[0], *in[1], o, nullptr));
       return MatMul(ctx, *in[0], *in[1], out[0], o);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsMatMul(a, s, 0); }},
    {OpKind::kMatMulBackward, "matmul_backward", 3, 3, 2, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       MatMulOptions o;
       VT_TRY(MatMulOptionsFrom(a, &o));
       return MatMulBackward(ctx, *in[0], *in[1], *in[2], out[0], out[1], o);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return Mul(2, FlopsMatMul(a, s, 1)); }},
    {OpKind::kLinear, "linear", 2, 3, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "linear"));
       return LinearForward(ctx, *in[0], *in[1], OptionalInput(in, 2), out[0]);
     },
     [](const OpAttrs&, std::span<const Shape> s) { return Mul({2, NumelOf(s, 0), DimOf(s, 1, 0)}); }},
    {OpKind::kLinearBackward, "linear_backward", 3, 3, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "linear_backward"));
       return LinearBackward(ctx, *in[0], *in[1], *in[2], out[0], out[1], out[2]);
     },
     [](const OpAttrs&, std::span<const Shape> s) { return Add(Mul({4, NumelOf(s, 1), DimOf(s, 2, 0)}), NumelOf(s, 0)); }},
    {OpKind::kConv2d, "conv2d", 2, 3, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Conv2dParams p;
       VT_TRY(ConvParamsFrom(a, &p));
       return Conv2dForward(ctx, *in[0], *in[1], OptionalInput(in, 2), out[0], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsConv(a, s, 0); }},
    {OpKind::kConv2dBackward, "conv2d_backward", 3, 3, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Conv2dParams p;
       VT_TRY(ConvParamsFrom(a, &p));
       return Conv2dBackward(ctx, *in[0], *in[1], *in[2], out[0], out[1], out[2], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return Mul(2, FlopsConv(a, s, 1)); }},
    {OpKind::kMaxPool2d, "maxpool2d", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Pool2dParams p;
       VT_TRY(PoolParamsFrom(a, &p));
       return MaxPool2dForward(ctx, *in[0], out[0], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsPool(a, s, 0); }},
    {OpKind::kMaxPool2dBackward, "maxpool2d_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Pool2dParams p;
       VT_TRY(PoolParamsFrom(a, &p));
       return MaxPool2dBackward(ctx, *in[0], *in[1], out[0], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsPool(a, s, 1); }},
    {OpKind::kAvgPool2d, "avgpool2d", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Pool2dParams p;
       VT_TRY(PoolParamsFrom(a, &p));
       return AvgPool2dForward(ctx, *in[0], out[0], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsPool(a, s, 0); }},
    {OpKind::kAvgPool2dBackward, "avgpool2d_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       Pool2dParams p;
       VT_TRY(PoolParamsFrom(a, &p));
       return AvgPool2dBackward(ctx, *in[0], *in[1], out[0], p);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsPool(a, s, 1); }},
    {OpKind::kBatchNorm2dTrain, "batchnorm2d_train", 5, 5, 5, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       BatchNormParams p;
       VT_TRY(BatchNormParamsFrom(a, &p));
       return BatchNorm2dTrain(ctx, *in[0], *in[1], *in[2], *in[3], *in[4], out[0], out[1], out[2], out[3], out[4],
                               p);
     },
     &FlopsElementwise<8>},
    {OpKind::kBatchNorm2dEval, "batchnorm2d_eval", 5, 5, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       BatchNormParams p;
       VT_TRY(BatchNormParamsFrom(a, &p));
       return BatchNorm2dEval(ctx, *in[0], *in[1], *in[2], *in[3], *in[4], out[0], p);
     },
     &FlopsElementwise<4>},
    {OpKind::kBatchNorm2dBackward, "batchnorm2d_backward", 5, 5, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "batchnorm2d_backward"));
       return BatchNorm2dBackward(ctx, *in[0], *in[1], *in[2], *in[3], *in[4], out[0], out[1], out[2]);
     },
     &FlopsElementwise<10>},
    {OpKind::kLayerNorm, "layernorm", 3, 3, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 1, "layernorm"));
       return LayerNormForward(ctx, *in[0], *in[1], *in[2], out[0], out[1], out[2], a.Float(0));
     },
     &FlopsElementwise<8>},
    {OpKind::kLayerNormBackward, "layernorm_backward", 5, 5, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "layernorm_backward"));
       return LayerNormBackward(ctx, *in[0], *in[1], *in[2], *in[3], *in[4], out[0], out[1], out[2]);
     },
     &FlopsElementwise<12>},
    {OpKind::kEmbedding, "embedding", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "embedding"));
       return EmbeddingForward(ctx, *in[0], *in[1], out[0]);
     },
     [](const OpAttrs&, std::span<const Shape> s) { return Mul(NumelOf(s, 0), DimOf(s, 1, 1)); }},
    {OpKind::kEmbeddingBackward, "embedding_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "embedding_backward"));
       return EmbeddingBackward(ctx, *in[0], *in[1], a.ints[0], out[0]);
     },
     [](const OpAttrs& a, std::span<const Shape> s) {
       return Add(NumelOf(s, 0), Mul(AttrOr(a, 0, 0), DimOf(s, 0, -1)));
     }},
    {OpKind::kRelu, "relu", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "relu"));
       return ReluForward(ctx, *in[0], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kReluBackward, "relu_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "relu_backward"));
       return ReluBackward(ctx, *in[0], *in[1], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kGelu, "gelu", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "gelu"));
       return GeluForward(ctx, *in[0], out[0]);
     },
     &FlopsElementwise<20>},
    {OpKind::kGeluBackward, "gelu_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "gelu_backward"));
       return GeluBackward(ctx, *in[0], *in[1], out[0]);
     },
     &FlopsElementwise<28>},
    {OpKind::kDropout, "dropout", 1, 1, 2, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 1, "dropout"));
       return DropoutForward(ctx, *in[0], a.Float(0), out[0], out[1]);
     },
     &FlopsElementwise<12>},
    {OpKind::kDropoutBackward, "dropout_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 1, "dropout_backward"));
       return DropoutBackward(ctx, *in[0], *in[1], a.Float(0), out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kAdd, "add", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "add"));
       return AddForward(ctx, *in[0], *in[1], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kAddBackward, "add_backward", 1, 1, 2, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "add_backward"));
       return AddBackward(ctx, *in[0], out[0], out[1]);
     },
     &FlopsElementwise<2>},
    {OpKind::kSoftmax, "softmax", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "softmax"));
       return SoftmaxForward(ctx, *in[0], out[0]);
     },
     &FlopsElementwise<16>},
    {OpKind::kSoftmaxBackward, "softmax_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "softmax_backward"));
       return SoftmaxBackward(ctx, *in[0], *in[1], out[0]);
     },
     &FlopsElementwise<4>},
    {OpKind::kCrossEntropy, "cross_entropy", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "cross_entropy"));
       return CrossEntropyForward(ctx, *in[0], *in[1], out[0]);
     },
     &FlopsElementwise<16>},
    {OpKind::kCrossEntropyBackward, "cross_entropy_backward", 3, 3, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 0, "cross_entropy_backward"));
       return CrossEntropyBackward(ctx, *in[0], *in[1], *in[2], out[0]);
     },
     &FlopsElementwise<18, 1>},
    {OpKind::kAttention, "attention", 1, 1, 2, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "attention"));
       return AttentionForward(ctx, *in[0], a.ints[0], out[0], out[1]);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsAttention(s, 0, AttrOr(a, 0, 1), 2); }},
    {OpKind::kAttentionBackward, "attention_backward", 3, 3, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "attention_backward"));
       return AttentionBackward(ctx, *in[0], *in[1], *in[2], a.ints[0], out[0]);
     },
     [](const OpAttrs& a, std::span<const Shape> s) { return FlopsAttention(s, 1, AttrOr(a, 0, 1), 4); }},
    {OpKind::kReshape, "reshape", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       if (!a.floats.empty()) return Status::Invalid("bad-attribute", "reshape takes no float attributes");
       return ReshapeOp(ctx, *in[0], a.ints, out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kTranspose, "transpose", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 2, 0, "transpose"));
       return TransposeOp(ctx, *in[0], a.ints[0], a.ints[1], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kSum, "sum", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "sum"));
       return SumForward(ctx, *in[0], a.ints[0], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kSumBackward, "sum_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "sum_backward"));
       return SumBackward(ctx, *in[0], *in[1], a.ints[0], out[0]);
     },
     &FlopsElementwise<1, 1>},
    {OpKind::kMean, "mean", 1, 1, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "mean"));
       return MeanForward(ctx, *in[0], a.ints[0], out[0]);
     },
     &FlopsElementwise<1>},
    {OpKind::kMeanBackward, "mean_backward", 2, 2, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 0, "mean_backward"));
       return MeanBackward(ctx, *in[0], *in[1], a.ints[0], out[0]);
     },
     &FlopsElementwise<1, 1>},
    {OpKind::kSgd, "sgd", 4, 4, 2, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 2, "sgd"));
       SgdParams p;
       VT_TRY(Flag(a.ints[0], &p.nesterov));
       p.momentum = a.Float(0);
       p.weight_decay = a.Float(1);
       return SgdStep(ctx, *in[0], *in[1], *in[2], *in[3], p, out[0], out[1]);
     },
     &FlopsElementwise<6>},
    {OpKind::kAdamW, "adamw", 5, 5, 3, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 1, 4, "adamw"));
       AdamWParams p;
       p.step = a.ints[0];
       p.beta1 = a.Float(0);
       p.beta2 = a.Float(1);
       p.eps = a.Float(2);
       p.weight_decay = a.Float(3);
       return AdamWStep(ctx, *in[0], *in[1], *in[2], *in[3], *in[4], p, out[0], out[1], out[2]);
     },
     &FlopsElementwise<16>},
    {OpKind::kClipGradNorm, "clip_grad_norm", 1, kMaxClipInputs, 1, true,
     [](const OpContext& ctx, const OpAttrs& a, Inputs in, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 0, 1, "clip_grad_norm"));
       return ClipGradNorm(ctx, in, a.Float(0), out);
     },
     [](const OpAttrs&, std::span<const Shape> s) {
       std::uint64_t total = 0;
       for (std::size_t i = 0; i < s.size(); ++i) total = Add(total, Mul(3, NumelOf(s, i)));
       return total;
     }},
    {OpKind::kLrSchedule, "lr_schedule", 0, 0, 1, false,
     [](const OpContext& ctx, const OpAttrs& a, Inputs, OutputSpan out) -> Status {
       VT_TRY(Arity(a, 4, 2, "lr_schedule"));
       if (a.ints[0] < 0 || a.ints[0] > 2) return Status::Invalid("bad-attribute", "unknown learning-rate schedule");
       LrScheduleParams p;
       p.kind = static_cast<LrScheduleKind>(a.ints[0]);
       p.warmup_steps = a.ints[2];
       p.total_steps = a.ints[3];
       p.base_lr = a.Float(0);
       p.min_lr = a.Float(1);
       return LrSchedule(ctx, p, a.ints[1], out[0]);
     },
     [](const OpAttrs&, std::span<const Shape>) -> std::uint64_t { return 32; }},
};

}  // namespace

std::span<const OpInfo> AllOps() { return kOps; }

const OpInfo* FindOp(OpKind kind) {
  for (const OpInfo& info : kOps) {
    if (info.kind == kind) return &info;
  }
  return nullptr;
}

Result<OpKind> OpKindFromValue(std::uint64_t value) {
  if (value <= std::numeric_limits<std::uint16_t>::max()) {
    const auto kind = static_cast<OpKind>(static_cast<std::uint16_t>(value));
    if (FindOp(kind) != nullptr) return kind;
  }
  return Status::Invalid("unknown-op", "no operator has kind " + std::to_string(value));
}

std::string_view OpKindName(OpKind kind) {
  const OpInfo* info = FindOp(kind);
  return info == nullptr ? std::string_view("unknown") : info->name;
}

int NumOutputs(const OpInfo& info, int num_inputs) {
  return info.outputs + (info.outputs_per_input ? num_inputs : 0);
}

bool OpFp64IsExact(OpKind kind) {
  switch (kind) {
    case OpKind::kMatMul:
    case OpKind::kMatMulBackward:
    case OpKind::kLinear:
    case OpKind::kLinearBackward:
    case OpKind::kConv2d:
    case OpKind::kConv2dBackward:
    case OpKind::kAttention:
    case OpKind::kAttentionBackward:
      return false;
    default:
      return true;
  }
}

Status RunOp(const OpContext& ctx, OpKind kind, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::vector<Tensor>& outputs) noexcept {
  try {
    const OpInfo* info = FindOp(kind);
    if (info == nullptr) {
      return Status::Invalid("unknown-op", "no operator has kind " + std::to_string(static_cast<unsigned>(kind)));
    }
    if (inputs.size() < static_cast<std::size_t>(info->min_inputs) ||
        inputs.size() > static_cast<std::size_t>(info->max_inputs)) {
      return Status::Invalid("bad-input-count", std::string(info->name) + " takes " +
                                                    std::to_string(info->min_inputs) + ".." +
                                                    std::to_string(info->max_inputs) + " inputs, got " +
                                                    std::to_string(inputs.size()));
    }
    for (const Tensor* t : inputs) {
      if (t == nullptr) return Status::Invalid("null-input", std::string(info->name) + ": an input is null");
    }
    if (attrs.ints.size() > kMaxAttrInts || attrs.floats.size() > kMaxAttrFloats) {
      return Status::Invalid("bad-attribute", "too many attributes");
    }
    // Fresh outputs: never aliased with inputs, and `outputs` stays untouched on failure.
    const std::size_t count = static_cast<std::size_t>(NumOutputs(*info, static_cast<int>(inputs.size())));
    std::vector<Tensor> fresh(count);
    NodeRounding* rounding = ctx.mode() == Mode::kRounded ? ctx.rounding() : nullptr;
    if (rounding != nullptr) rounding->SetTauApplies(!OpFp64IsExact(kind));
    const bool on_vendor_gemm = rounding != nullptr && rounding->recording() && !ctx.config().f64_reference;
    const NodeRounding::Mark mark = on_vendor_gemm ? rounding->mark() : NodeRounding::Mark{};
    VT_TRY(info->run(ctx, attrs, inputs, fresh));
    if (on_vendor_gemm && rounding->unrepaired_capped() > mark.unrepaired) {
      // The honest limit: some value's vendor evaluation may round unlike
      // the canonical reference by more than an entry can repair, and the
      // operator gave no reference function for it. Record the node again
      // from the reference (what every replay evaluates).
      rounding->Rollback(mark);
      ExecConfig reference = ctx.config();
      reference.f64_reference = true;
      fresh.assign(count, Tensor());
      VT_TRY(info->run(OpContext(reference, rounding, ctx.rng()), attrs, inputs, fresh));
      rounding->CountReferenceRecord();
    }
    outputs = std::move(fresh);
    return Status::Ok();
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory", "operator allocation failed");
  } catch (const std::length_error&) {
    return Status::Error("out-of-memory", "operator allocation too large");
  }
}

std::uint64_t OpFlops(OpKind kind, const OpAttrs& attrs, std::span<const Shape> input_shapes) {
  const OpInfo* info = FindOp(kind);
  return info == nullptr ? 0 : info->flops(attrs, input_shapes);
}

// ---- attribute builders -------------------------------------------------------------

OpAttrs MatMulAttrs(bool trans_a, bool trans_b) { return {{trans_a ? 1 : 0, trans_b ? 1 : 0}, {}}; }
OpAttrs Conv2dAttrs(const Conv2dParams& p) { return {{p.stride_h, p.stride_w, p.pad_h, p.pad_w}, {}}; }
Result<Pool2dParams> Pool2dParamsOf(const OpAttrs& attrs) {
  Pool2dParams p;
  VT_TRY(PoolParamsFrom(attrs, &p));
  VT_TRY(CheckPool2dParams(p));
  return p;
}

OpAttrs Pool2dAttrs(const Pool2dParams& p) {
  return {{p.kernel_h, p.kernel_w, p.stride_h, p.stride_w, p.pad_h, p.pad_w}, {}};
}
OpAttrs BatchNormAttrs(const BatchNormParams& p) { return {{}, {OpAttrs::Bits(p.eps), OpAttrs::Bits(p.momentum)}}; }
OpAttrs LayerNormAttrs(float eps) { return {{}, {OpAttrs::Bits(eps)}}; }
OpAttrs EmbeddingBackwardAttrs(std::int64_t num_embeddings) { return {{num_embeddings}, {}}; }
OpAttrs DropoutAttrs(float p) { return {{}, {OpAttrs::Bits(p)}}; }
OpAttrs AttentionAttrs(std::int64_t heads) { return {{heads}, {}}; }
OpAttrs ReshapeAttrs(const Shape& shape) { return {shape, {}}; }
OpAttrs TransposeAttrs(std::int64_t d0, std::int64_t d1) { return {{d0, d1}, {}}; }
OpAttrs ReduceAttrs(std::int64_t axis) { return {{axis}, {}}; }
OpAttrs SgdAttrs(const SgdParams& p) {
  return {{p.nesterov ? 1 : 0}, {OpAttrs::Bits(p.momentum), OpAttrs::Bits(p.weight_decay)}};
}
OpAttrs AdamWAttrs(const AdamWParams& p) {
  return {{p.step},
          {OpAttrs::Bits(p.beta1), OpAttrs::Bits(p.beta2), OpAttrs::Bits(p.eps), OpAttrs::Bits(p.weight_decay)}};
}
OpAttrs ClipGradNormAttrs(float max_norm) { return {{}, {OpAttrs::Bits(max_norm)}}; }
OpAttrs LrScheduleAttrs(const LrScheduleParams& p, std::int64_t step) {
  return {{static_cast<std::int64_t>(p.kind), step, p.warmup_steps, p.total_steps},
          {OpAttrs::Bits(p.base_lr), OpAttrs::Bits(p.min_lr)}};
}

}  // namespace vt::kernels
