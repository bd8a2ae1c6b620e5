#pragma once
// The operator registry: every training operator (forward, backward,
// optimizer) behind one uniform entry point. The worker builds each training
// step as a sequence of RunOp calls; the referee re-executes one disputed node
// through the same RunOp. A node is therefore fully determined by
// (mode, OpKind, OpAttrs, input tensors, RNG address, rounding log).
//
// OpKind values are PROTOCOL: node records in dispute games name them. Never
// renumber or reuse a value; add new operators with new values. The table of
// values, each operator's inputs, outputs and attribute layout is in
// docs/kernels.md.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/encoding.h"
#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/reduce.h"
#include "kernels/tensor.h"

namespace vt::kernels {

enum class OpKind : std::uint16_t {
  kMatMul = 1,
  kMatMulBackward = 2,
  kLinear = 3,
  kLinearBackward = 4,
  kConv2d = 10,
  kConv2dBackward = 11,
  kMaxPool2d = 12,
  kMaxPool2dBackward = 13,
  kAvgPool2d = 14,
  kAvgPool2dBackward = 15,
  kBatchNorm2dTrain = 20,
  kBatchNorm2dEval = 21,
  kBatchNorm2dBackward = 22,
  kLayerNorm = 23,
  kLayerNormBackward = 24,
  kEmbedding = 30,
  kEmbeddingBackward = 31,
  kRelu = 40,
  kReluBackward = 41,
  kGelu = 42,
  kGeluBackward = 43,
  kDropout = 44,
  kDropoutBackward = 45,
  kAdd = 46,
  kAddBackward = 47,
  kSoftmax = 50,
  kSoftmaxBackward = 51,
  kCrossEntropy = 52,
  kCrossEntropyBackward = 53,
  kAttention = 60,
  kAttentionBackward = 61,
  kReshape = 70,
  kTranspose = 71,
  kSum = 80,
  kSumBackward = 81,
  kMean = 82,
  kMeanBackward = 83,
  kSgd = 90,
  kAdamW = 91,
  kClipGradNorm = 92,
  kLrSchedule = 93,
};

// Attributes of one node: integers, and float hyper-parameters as their
// IEEE-754 binary32 bit patterns (consensus objects carry no floats). The
// meaning and the exact count of each list depend on the OpKind (table in
// docs/kernels.md); a count or value outside it is "bad-attribute".
struct OpAttrs {
  std::vector<std::int64_t> ints;
  std::vector<std::uint32_t> floats;

  static std::uint32_t Bits(float value);
  float Float(std::size_t i) const;  // floats[i] as a float (i must be in range)
  bool operator==(const OpAttrs&) const = default;
};

inline constexpr std::size_t kMaxAttrInts = 16;
inline constexpr std::size_t kMaxAttrFloats = 8;

// Canonical encoding (common/encoding.h): vector<i64> ints, then vector<u32>
// floats; decoding rejects counts above the caps and trailing bytes.
void Encode(Writer& w, const OpAttrs& attrs);
Result<OpAttrs> Decode(Reader& r, DecodeAs<OpAttrs>);

using OpRunFn = Status (*)(const OpContext& ctx, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
                           std::span<Tensor> outputs);
// Estimated floating-point operations from the attributes and input shapes
// alone (before any data is read); saturates at UINT64_MAX, never fails.
using OpFlopsFn = std::uint64_t (*)(const OpAttrs& attrs, std::span<const Shape> input_shapes);

struct OpInfo {
  OpKind kind;
  std::string_view name;  // stable, e.g. "linear_backward"
  int min_inputs;
  int max_inputs;
  int outputs;             // fixed output count …
  bool outputs_per_input;  // … plus one per input (gradient clipping)
  OpRunFn run;
  OpFlopsFn flops;
};

// All registered operators, ordered by OpKind value.
std::span<const OpInfo> AllOps();
// nullptr for a value that names no operator.
const OpInfo* FindOp(OpKind kind);
Result<OpKind> OpKindFromValue(std::uint64_t value);  // "unknown-op"
std::string_view OpKindName(OpKind kind);              // "unknown" when unregistered
// Rounded mode: true when the operator's fp64 result is bit-identical on
// every IEEE-754 machine — our own fixed-order loops with + − × ÷ and sqrt
// only (all correctly rounded; the build has -ffp-contract=off) and the
// fixed-sequence transcendentals of kernels/f64_math.h (rounded mode never
// calls libm), no vendor GEMM. RunOp then rounds its outputs with τ = 0: no
// honest party can disagree, so nothing is logged and no entry is accepted.
// False only for the operators with a vendor dgemm inside — matmul, linear,
// conv2d, attention and their backwards (β and τ).
// docs/kernels.md, "Error-bounded logging region".
bool OpFp64IsExact(OpKind kind);
int NumOutputs(const OpInfo& info, int num_inputs);

// Validates the input count (and null pointers), runs the operator and, on
// success, replaces `outputs` with its outputs in the documented order. On
// failure `outputs` is left unchanged. Allocation failure is Status::Error
// "out-of-memory". Never throws.
// In rounded mode RunOp sets ctx.rounding()->SetTauApplies(!OpFp64IsExact(kind)).
// A recording trainer on its vendor GEMM (config.f64_reference off) whose
// node has a value past what a log entry can repair (catastrophic
// cancellation, β at the u/4 cap) rounds that value from the canonical
// reference: through the operator's reference function where it has one
// (Outputs::SetReference: every operator with a vendor GEMM has them),
// else by recording the whole node again on the reference (f64_reference
// on; unrepaired_capped grew). Every such value and its entry is then the
// one a replay computes: an honest trainer's log is accepted at every value,
// the honest limit included (docs/kernels.md "The honest limit").
Status RunOp(const OpContext& ctx, OpKind kind, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::vector<Tensor>& outputs) noexcept;

// Gas metering: the operator's flop estimate (0 for an unknown kind).
std::uint64_t OpFlops(OpKind kind, const OpAttrs& attrs, std::span<const Shape> input_shapes);

// ---- attribute builders (the layouts of docs/kernels.md) ---------------------

OpAttrs MatMulAttrs(bool trans_a, bool trans_b);
OpAttrs Conv2dAttrs(const Conv2dParams& params);
OpAttrs Pool2dAttrs(const Pool2dParams& params);
// The parameters a pooling node's attributes hold, checked as the kernels
// check them (CheckPool2dParams).
Result<Pool2dParams> Pool2dParamsOf(const OpAttrs& attrs);
OpAttrs BatchNormAttrs(const BatchNormParams& params);
OpAttrs LayerNormAttrs(float eps);
OpAttrs EmbeddingBackwardAttrs(std::int64_t num_embeddings);
OpAttrs DropoutAttrs(float p);
OpAttrs AttentionAttrs(std::int64_t heads);
OpAttrs ReshapeAttrs(const Shape& shape);
OpAttrs TransposeAttrs(std::int64_t d0, std::int64_t d1);
OpAttrs ReduceAttrs(std::int64_t axis);  // kReduceAll (-1) or a dimension
OpAttrs SgdAttrs(const SgdParams& params);
OpAttrs AdamWAttrs(const AdamWParams& params);
OpAttrs ClipGradNormAttrs(float max_norm);
OpAttrs LrScheduleAttrs(const LrScheduleParams& params, std::int64_t step);

}  // namespace vt::kernels
