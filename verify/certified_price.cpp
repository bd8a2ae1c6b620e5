#include "verify/certified_price.h"

#include "kernels/ops/registry.h"

namespace vt::verify {
namespace {

using kernels::OpKind;

// How a node's declared outputs are rounded.
enum class Rounds : std::uint8_t {
  kNone = 0,  // element-wise outputs: Cost::kExactElements each
  kAll = 1,   // every output from an exact accumulator (or, for layernorm-like ops, at most that many reduced values)
  kOne = 2,   // one reduced value (clip_grad_norm's norm); the outputs are element-wise
};

struct Row {
  OpKind kind;
  bool exact_gemm;            // its flops run by the exact GEMM (else at the repops rate)
  std::uint64_t term_div;     // reduction terms ≤ ceil(flops / term_div); 0: none
  std::uint64_t call_div;     // transcendental calls ≤ ceil(flops / call_div); 0: none
  Rounds rounds;
};

// Divisors from kernels/ops/registry.cpp's flop formulas (n = input numel),
// used where the shapes are not given: attention 4·b·t·t·c + 5·b·h·t·t flops
// for b·h·t·t exps summed per row (with shapes: b·h·t·t exactly);
// linear/conv2d backward ≥ 4 flops per bias-gradient term (with shapes:
// numel(dy)); layernorm 8n for
// 2n terms (mean, variance), its backward 12n for 4n; batchnorm 8n / 10n for
// 2n; softmax and cross-entropy 16n (18n backward) for n exps summed per row;
// gelu 20n (28n backward) for n tanh; lr_schedule 32 for one cos; clip 3n
// for an n-term norm.
constexpr Row kTable[] = {
    {OpKind::kMatMul, true, 0, 0, Rounds::kAll},
    {OpKind::kMatMulBackward, true, 0, 0, Rounds::kAll},
    {OpKind::kLinear, true, 0, 0, Rounds::kAll},
    {OpKind::kLinearBackward, true, 4, 0, Rounds::kAll},
    {OpKind::kConv2d, true, 0, 0, Rounds::kAll},
    {OpKind::kConv2dBackward, true, 4, 0, Rounds::kAll},
    {OpKind::kAttention, true, 5, 5, Rounds::kAll},
    {OpKind::kAttentionBackward, true, 5, 5, Rounds::kAll},
    {OpKind::kMaxPool2d, false, 0, 0, Rounds::kNone},
    {OpKind::kMaxPool2dBackward, false, 1, 0, Rounds::kAll},
    {OpKind::kAvgPool2d, false, 1, 0, Rounds::kAll},
    {OpKind::kAvgPool2dBackward, false, 1, 0, Rounds::kAll},
    {OpKind::kBatchNorm2dTrain, false, 4, 0, Rounds::kAll},
    {OpKind::kBatchNorm2dEval, false, 0, 0, Rounds::kNone},
    {OpKind::kBatchNorm2dBackward, false, 5, 0, Rounds::kAll},
    {OpKind::kLayerNorm, false, 4, 0, Rounds::kAll},
    {OpKind::kLayerNormBackward, false, 3, 0, Rounds::kAll},
    {OpKind::kEmbedding, false, 0, 0, Rounds::kNone},
    {OpKind::kEmbeddingBackward, false, 1, 0, Rounds::kAll},
    {OpKind::kRelu, false, 0, 0, Rounds::kNone},
    {OpKind::kReluBackward, false, 0, 0, Rounds::kNone},
    {OpKind::kGelu, false, 0, 20, Rounds::kNone},
    {OpKind::kGeluBackward, false, 0, 28, Rounds::kNone},
    {OpKind::kDropout, false, 0, 0, Rounds::kNone},
    {OpKind::kDropoutBackward, false, 0, 0, Rounds::kNone},
    {OpKind::kAdd, false, 0, 0, Rounds::kNone},
    {OpKind::kAddBackward, false, 0, 0, Rounds::kNone},
    {OpKind::kSoftmax, false, 16, 16, Rounds::kAll},
    {OpKind::kSoftmaxBackward, false, 4, 0, Rounds::kAll},
    {OpKind::kCrossEntropy, false, 16, 16, Rounds::kAll},
    {OpKind::kCrossEntropyBackward, false, 18, 18, Rounds::kAll},
    {OpKind::kReshape, false, 0, 0, Rounds::kNone},
    {OpKind::kTranspose, false, 0, 0, Rounds::kNone},
    {OpKind::kSum, false, 1, 0, Rounds::kAll},
    {OpKind::kSumBackward, false, 0, 0, Rounds::kNone},
    {OpKind::kMean, false, 1, 0, Rounds::kAll},
    {OpKind::kMeanBackward, false, 0, 0, Rounds::kNone},
    {OpKind::kSgd, false, 0, 0, Rounds::kNone},
    {OpKind::kAdamW, false, 0, 0, Rounds::kNone},
    {OpKind::kClipGradNorm, false, 3, 0, Rounds::kOne},
    {OpKind::kLrSchedule, false, 0, 32, Rounds::kNone},
};

std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

std::uint64_t SatMul(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  return (a != 0 && b > kMax / a) ? kMax : a * b;
}

// Attention's softmax: b·heads·t·t exps, each summed once (qkv [b, t, 3c] is
// input `qkv`; heads the first attribute, 1 when absent — as OpFlops reads
// them). 0 when the shape is not there (then flops / 5 stands).
std::uint64_t AttentionExps(std::span<const std::vector<std::int64_t>> shapes, std::size_t qkv,
                            std::span<const std::int64_t> ints) {
  if (shapes.size() <= qkv || shapes[qkv].size() < 2) return 0;
  auto dim = [](std::int64_t d) { return d < 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(d); };
  const std::uint64_t heads = ints.empty() ? 1 : dim(ints[0]);
  const std::uint64_t t = dim(shapes[qkv][1]);
  return SatMul(SatMul(dim(shapes[qkv][0]), heads), SatMul(t, t));
}

}  // namespace

CertifiedWork CertifiedWorkOf(std::uint16_t op_kind, std::uint64_t flops, std::uint64_t outputs,
                              std::span<const std::vector<std::int64_t>> input_shapes,
                              std::span<const std::int64_t> attr_ints) noexcept {
  for (const Row& row : kTable) {
    if (static_cast<std::uint16_t>(row.kind) != op_kind) continue;
    CertifiedWork w;
    (row.exact_gemm ? w.exact_flops : w.plain_flops) = flops;
    if (row.term_div != 0) w.terms = CeilDiv(flops, row.term_div);
    if (row.call_div != 0) w.transcendentals = CeilDiv(flops, row.call_div);
    // The bias gradient sums every element of dy (input 0) once: far fewer
    // terms than flops / 4 (which counts K per element).
    if ((row.kind == OpKind::kLinearBackward || row.kind == OpKind::kConv2dBackward) && !input_shapes.empty()) {
      std::uint64_t numel = 1;
      for (std::int64_t d : input_shapes[0]) numel = SatMul(numel, d < 0 ? 0 : static_cast<std::uint64_t>(d));
      w.terms = numel;
    }
    if (row.kind == OpKind::kAttention || row.kind == OpKind::kAttentionBackward) {
      const std::uint64_t exps =
          AttentionExps(input_shapes, row.kind == OpKind::kAttention ? 0 : 1, attr_ints);
      if (exps != 0) w.terms = w.transcendentals = exps;
    }
    switch (row.rounds) {
      case Rounds::kNone:
        w.elements = outputs;
        break;
      case Rounds::kAll:
        w.rounded_outputs = outputs;
        break;
      case Rounds::kOne:
        w.rounded_outputs = 1;
        w.elements = outputs;
        break;
    }
    return w;
  }
  return CertifiedWork{flops, outputs, flops, outputs, flops, 0};
}

bool HasCertifiedPrice(std::uint16_t op_kind) noexcept {
  for (const Row& row : kTable)
    if (static_cast<std::uint16_t>(row.kind) == op_kind) return true;
  return false;
}

}  // namespace vt::verify
