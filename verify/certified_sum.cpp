#include "verify/certified_sum.h"

#include <bit>
#include <string>

#include "kernels/certified.h"
#include "kernels/ops/attention.h"
#include "kernels/ops/embedding.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/op_util.h"
#include "kernels/ops/softmax.h"

namespace vt::verify {
namespace {

using Acc = kernels::ExactAccumulator;
using M = kernels::opsdetail::CertifiedMath;

constexpr std::uint8_t kHeldFlag = 8;

// The term's two fp32 factors from the values it reads (StepReads' order;
// `max` the row's max for an exponential): the term is their product,
// exactly — the certified kernels' terms (kernels/ops: norm.cpp, softmax.cpp,
// optim.cpp's CertifiedNorm).
std::pair<float, float> TermFactors(ReduceTerm term, std::span<const float> v, float max) {
  switch (term) {
    case ReduceTerm::kValue:
      return {v[0], 1.0f};
    case ReduceTerm::kSquare:  // the clip norm's g·g
      return {v[0], v[0]};
    case ReduceTerm::kNormProduct:  // dy · x̂, x̂ rounded as the norm kernels round it
      return {v[0], kernels::LayerNormXhat(v[1], v[2], v[3])};
    case ReduceTerm::kExpShifted:  // the row's ExpShifted value
      return {M::Exp(v[0] - max), 1.0f};
    case ReduceTerm::kSquaredDeviation: {  // d · d, d = x − mean rounded (the norms' variance)
      const float d = v[0] - v[1];
      return {d, d};
    }
    case ReduceTerm::kProduct:  // softmax_backward's dy · y
      return {v[0], v[1]};
    case ReduceTerm::kScaledNormProduct:  // layernorm_backward's g · x̂, g = dy·γ rounded
      return {v[0] * v[1], kernels::LayerNormXhat(v[2], v[3], v[4])};
    case ReduceTerm::kRoundedProduct:  // layernorm_backward's g = dy·γ rounded
      return {v[0] * v[1], 1.0f};
    case ReduceTerm::kSquaredDeviationFromSum:  // rounded jobs' alone: refused by CertifiedStepLeaf
      break;
  }
  return {0.0f, 0.0f};
}

// Whether a step's leaf is a value (else a sum; leaf 0 is +0, a sum): a
// max scan's, a final step's, the outer softmax's, a dS.
bool MakesValue(const ReduceElement& el, const ReduceStep& st) {
  switch (st.kind) {
    case ReduceStepKind::kScan:
      return el.scan == ReduceScan::kMax || el.scan == ReduceScan::kPoolMax;
    case ReduceStepKind::kFinal:
    case ReduceStepKind::kLeafMax:
    case ReduceStepKind::kLeafExp:
    case ReduceStepKind::kLeafDiv:
    case ReduceStepKind::kAttnDs:
      return true;
    default:
      return false;
  }
}

// The leaves a step reads, as what they hold.
struct Operand {
  const ExactPartial& leaf;
  std::optional<float> Value() const { return HeldValueOf(leaf); }
  std::optional<Acc> Sum() const { return Acc::FromEncoding(leaf); }
};

std::optional<ExactPartial> Held(std::optional<float> v) {
  if (!v) return std::nullopt;
  return HeldValue(*v);
}

// A sum leaf plus the exact product a·b (nullopt when the leaf is no sum).
std::optional<ExactPartial> Added(const Operand& left, float a, float b) {
  std::optional<Acc> acc = left.Sum();
  if (!acc) return std::nullopt;
  acc->AddProduct(a, b);
  return acc->Encode();
}

// The final step's value (reduce_rule.h ReduceFinal), the certified kernels'
// expression: left and right are the max (a value) or a sum, v the reads.
Result<std::optional<float>> FinalValue(const ReduceElement& el, const Operand& left, const Operand& right,
                                        std::span<const float> v) {
  const auto divisor = static_cast<std::uint64_t>(el.divisor);
  const std::optional<Acc> sum = right.Sum();
  switch (el.final) {
    case ReduceFinal::kAttentionScale: {  // CR(q·k) · scale
      const std::optional<Acc> dot = left.Sum();
      if (!v.empty()) break;
      if (!dot) return std::optional<float>();
      return std::optional<float>(dot->Round() * kernels::AttentionScale<M>(el.scale_dim));
    }
    case ReduceFinal::kRunningVar:  // (running_var[c]); right: ssq
      if (v.size() != 1) break;
      if (!sum) return std::optional<float>();
      return std::optional<float>(kernels::BatchNormRunning(v[0], sum->RoundDivided(divisor), el.momentum));
    case ReduceFinal::kSoftmaxValue: {  // (x); left: max, right: Σ Exp(x − max)
      if (v.size() != 1) break;
      const std::optional<float> max = left.Value();
      if (!max || !sum) return std::optional<float>();
      return std::optional<float>(M::Exp(v[0] - *max) / sum->Round());
    }
    case ReduceFinal::kSoftmaxGrad:  // (y, dy); right: Σ dy·y
      if (v.size() != 2) break;
      if (!sum) return std::optional<float>();
      return std::optional<float>(v[0] * (v[1] - sum->Round()));
    case ReduceFinal::kLayerNormGrad: {  // (dy, γ, x, mean, rstd); left Σ g, right Σ g·x̂
      if (v.size() != 5) break;
      const std::optional<Acc> a = left.Sum();
      if (!a || !sum) return std::optional<float>();
      return std::optional<float>(
          kernels::LayerNormGradValue(v[0] * v[1], kernels::LayerNormXhat(v[2], v[3], v[4]),
                                      a->RoundDivided(divisor), sum->RoundDivided(divisor), v[4]));
    }
    case ReduceFinal::kCrossEntropyLoss: {  // (label, x[label]); ReadStep checked the label
      if (v.size() != 2) break;
      const std::optional<float> max = left.Value();
      if (!max || !sum) return std::optional<float>();
      return std::optional<float>(kernels::CrossEntropyRowLoss(*max, M::Log(sum->Round()), v[1]));
    }
    case ReduceFinal::kCrossEntropyGrad: {  // (x, label, dloss); the label must be a class
      if (v.size() != 3) break;
      if (!kernels::IsRowIndex(v[1], el.scan_count))
        return Status::Invalid("bad-index", "label " + std::to_string(v[1]) + " is not a class");
      const std::optional<float> max = left.Value();
      if (!max || !sum) return std::optional<float>();
      const float g = v[2] / static_cast<float>(el.divisor);
      return std::optional<float>(kernels::CrossEntropyGradValue(
          M::Exp(v[0] - *max), sum->Round(), v[1] == static_cast<float>(el.final_class), g));
    }
    case ReduceFinal::kClipScaled:  // rounded jobs' alone (RoundedElementAt)
    case ReduceFinal::kBatchNormGrad:
    case ReduceFinal::kNormValue:
    case ReduceFinal::kNone:
      break;
  }
  return Status::Invalid("elem-bad-step", "the final step's reads");
}

// A scan step (reduce_rule.h ReduceScan): the adding ones exactly, the max
// ones as the kernels compare.
Result<std::optional<ExactPartial>> ScanLeaf(const ReduceElement& el, const ReduceStep& st,
                                             const Operand& left, std::span<const float> v) {
  const bool first = st.term == 0;
  switch (el.scan) {
    case ReduceScan::kMax:
    case ReduceScan::kPoolMax: {  // a comparison: the fp32 rule's own step
      const std::optional<float> prev = first ? std::optional<float>(0.0f) : left.Value();
      if (!prev) return std::optional<ExactPartial>();
      VT_ASSIGN_OR_RETURN(const float next, StepValue(el, st, *prev, 0.0f, v));
      return std::optional<ExactPartial>(HeldValue(next));
    }
    case ReduceScan::kMaskedSum:
      if (v.size() != 2) break;
      if (!kernels::IsRowIndex(v[0], el.key_rows))
        return Status::Invalid(
            "bad-index", "index " + std::to_string(v[0]) + " is not a row of " + std::to_string(el.key_rows));
      if (v[0] != static_cast<float>(el.key)) {
        if (!left.Sum()) return std::optional<ExactPartial>();
        return std::optional<ExactPartial>(left.leaf);
      }
      return Added(left, v[1], 1.0f);
    case ReduceScan::kDot:
      if (v.size() != 2) break;
      return Added(left, v[0], v[1]);
    case ReduceScan::kSum:
      if (v.size() != 1) break;
      return Added(left, v[0], 1.0f);
    case ReduceScan::kNone:
      break;
  }
  return Status::Invalid("elem-bad-step", "the scan step's reads");
}

}  // namespace

Result<ReduceElement> CertifiedSumAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                     std::int64_t e, std::span<const kernels::Shape> input_shapes) {
  VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, slot, e, input_shapes));
  el.exact = true;
  return el;
}

ExactPartial HeldValue(float v) {
  ExactPartial leaf{};
  leaf[0] = kHeldFlag;
  const auto bits = std::bit_cast<std::uint32_t>(v);
  for (std::size_t j = 0; j < 4; ++j) leaf[1 + j] = static_cast<std::uint8_t>(bits >> (8 * j));
  return leaf;
}

std::optional<float> HeldValueOf(const ExactPartial& leaf) {
  if (leaf[0] != kHeldFlag) return std::nullopt;
  for (std::size_t i = 5; i < leaf.size(); ++i)
    if (leaf[i] != 0) return std::nullopt;
  std::uint32_t bits = 0;
  for (std::size_t j = 0; j < 4; ++j) bits |= std::uint32_t{leaf[1 + j]} << (8 * j);
  return std::bit_cast<float>(bits);
}

Result<std::optional<ExactPartial>> CertifiedStepLeaf(const ReduceElement& el, const ReduceStep& st,
                                                      const ExactPartial& left_leaf,
                                                      const ExactPartial& right_leaf,
                                                      std::span<const float> v) {
  using Leaf = std::optional<ExactPartial>;
  const Operand left{left_leaf}, right{right_leaf};
  switch (st.kind) {
    case ReduceStepKind::kTerm: {
      if (st.segment >= el.segments.size() || v.size() != el.segments[st.segment].operands.size())
        return Status::Invalid("elem-bad-step", "the term's reads");
      const ReduceTerm term = el.segments[st.segment].term;
      if (term == ReduceTerm::kSquaredDeviationFromSum)
        return Status::Invalid("elem-bad-step", "a rounded job's term");
      float max = 0.0f;
      if (term == ReduceTerm::kExpShifted) {
        const std::optional<float> m = right.Value();
        if (!m) return Leaf();
        max = *m;
      }
      const auto [a, b] = TermFactors(term, v, max);
      return Added(left, a, b);
    }
    case ReduceStepKind::kCombine: {  // the outer sum: a row's final value or e_j, else the row's sum
      std::optional<Acc> acc = left.Sum();
      if (!acc) return Leaf();
      if (el.final != ReduceFinal::kNone || el.outer == ReduceOuter::kSoftmax) {
        const std::optional<float> x = right.Value();
        if (!x) return Leaf();
        acc->Add(*x);
      } else {
        const std::optional<Acc> row = right.Sum();
        if (!row) return Leaf();
        acc->Add(*row);
      }
      return Leaf(acc->Encode());
    }
    case ReduceStepKind::kScan:
      return ScanLeaf(el, st, left, v);
    case ReduceStepKind::kFinal: {
      VT_ASSIGN_OR_RETURN(const std::optional<float> y, FinalValue(el, left, right, v));
      return Held(y);
    }
    case ReduceStepKind::kLeafMax: {  // a comparison: the fp32 rule's own step
      const std::optional<float> x = right.Value();
      const std::optional<float> max = st.term == 0 ? std::optional<float>(0.0f) : left.Value();
      if (!x || !max) return Leaf();
      VT_ASSIGN_OR_RETURN(const float next, StepValue(el, st, *max, *x, v));
      return Leaf(HeldValue(next));
    }
    case ReduceStepKind::kLeafExp: {  // Exp(x_j − max)
      const std::optional<float> max = left.Value(), x = right.Value();
      if (!x || !max) return Leaf();
      return Leaf(HeldValue(M::Exp(*x - *max)));
    }
    case ReduceStepKind::kLeafDiv: {  // e_pick / CR(z)
      const std::optional<float> e = left.Value();
      const std::optional<Acc> z = right.Sum();
      if (!e || !z) return Leaf();
      return Leaf(HeldValue(*e / z->Round()));
    }
    // attention_backward's dq and dk (AttentionGrad): the kernel's dP and
    // r_t are CR of exact dots, dS its fp32 expression of them, dq and dk
    // CR of the exact GEMM element over every u (or t), masked +0 included.
    case ReduceStepKind::kDotStep:  // dP_tj's exact dot: + dy·v
      if (v.size() != 2) break;
      return Added(left, v[0], v[1]);
    case ReduceStepKind::kWeightedTerm: {  // r_t's exact sum: + att·CR(dP)
      const std::optional<Acc> dp = right.Sum();
      if (v.size() != 1) break;
      if (!dp) return Leaf();
      return Added(left, v[0], dp->Round());
    }
    case ReduceStepKind::kAttnDs: {  // dS = AttentionDsValue(att, CR(dP), CR(r), scale)
      const std::optional<Acc> dp = left.Sum(), r = right.Sum();
      if (v.size() != 1 || !el.attention_grad) break;
      if (!dp || !r) return Leaf();
      return Leaf(HeldValue(kernels::AttentionDsValue(v[0], dp->Round(), r->Round(),
                                                      kernels::AttentionScale<M>(el.attention_grad->d))));
    }
    case ReduceStepKind::kGemmStep: {  // + dS·x, +0·x where masked
      if (v.size() != 1) break;
      const std::optional<float> ds = st.reads_right ? right.Value() : std::optional<float>(+0.0f);
      if (!ds) return Leaf();
      return Added(left, *ds, v[0]);
    }
    case ReduceStepKind::kNormStep:  // a rounded value's slack (ReduceSlack): no exact sum has one
    case ReduceStepKind::kRowSlack:
    case ReduceStepKind::kSlackFold:
    case ReduceStepKind::kSlackFactor:
    case ReduceStepKind::kLeafProduct:
    case ReduceStepKind::kSquareAdd:
    case ReduceStepKind::kPerturbedSlack:
    case ReduceStepKind::kAttnDsSlack:
      return Status::Invalid("elem-bad-step", "a rounded job's slack step");
  }
  return Status::Invalid("elem-bad-step", "the step's reads");
}

Status ComputeCertifiedSumPartials(const ReduceElement& el, const ValueAt& value_at,
                                   LeafSink<ExactPartial>& p) {
  if (!el.exact) return Status::Invalid("elem-wrong-leaf", "a tree sum's leaves are ReducePartials'");
  const std::uint64_t steps = el.Steps();
  p.Push(ExactPartial{});  // +0
  std::vector<float> values;
  for (std::uint64_t leaf = 1; leaf <= steps; ++leaf) {
    VT_ASSIGN_OR_RETURN(const ReduceStep st, ReduceStepAt(el, leaf));
    VT_ASSIGN_OR_RETURN(std::vector<ReadValue> reads, ReadStep(StepReads(el, st), value_at));
    values.clear();
    for (const ReadValue& r : reads) values.push_back(r.value);
    VT_ASSIGN_OR_RETURN(
        const std::optional<ExactPartial> next,
        CertifiedStepLeaf(el, st, p.At(st.left), st.reads_right ? p.At(st.right) : ExactPartial{}, values));
    p.Push(next.value());  // the rule's own leaves are of their kinds
  }
  return Status::Ok();
}

Result<std::vector<ExactPartial>> CertifiedSumPartials(const ReduceElement& el,
                                                       std::span<const kernels::Tensor> inputs,
                                                       std::span<const kernels::Tensor> outputs) {
  HeldLeaves<ExactPartial> p;
  VT_TRY(ComputeCertifiedSumPartials(el, TensorValues(inputs, outputs), p));
  return std::move(p.leaves);
}

Result<StepVerdict> JudgeCertifiedSumStepClaim(const ReduceElement& el, std::span<const InputTensor> inputs,
                                               const std::array<Hash256, 2>& roots,
                                               const CertifiedSumStepClaim& claim, const OpenedBatch* batch,
                                               std::span<const InputTensor> own) {
  constexpr std::string_view kReason = "elem-bad-step";
  if (!el.exact) return Status::Invalid("elem-wrong-leaf", "exact leaves for a tree sum");
  const std::uint64_t k = el.Steps();
  if (claim.m >= k)
    return Status::Invalid(kReason, "step " + std::to_string(claim.m) + " of " + std::to_string(k));
  VT_ASSIGN_OR_RETURN(const ReduceStep st, ReduceStepAt(el, claim.m + 1));
  if (claim.right.has_value() != st.reads_right)
    return Status::Invalid(kReason,
                           st.reads_right ? "the step reads a second leaf" : "the step reads one leaf");
  // Operand leaves precede m + 1: agreed, opened against root A. Leaf 0 is +0 by the posting's end check.
  VT_TRY(CheckPartialLeaf(kReason, roots[0], claim.left, claim.left_proof, st.left, k + 1));
  if (claim.right)
    VT_TRY(CheckPartialLeaf(kReason, roots[0], claim.right->first, claim.right->second, st.right, k + 1));
  for (std::size_t side = 0; side < 2; ++side)
    VT_TRY(
        CheckPartialLeaf(kReason, roots[side], claim.next[side], claim.next_proof[side], claim.m + 1, k + 1));
  VT_ASSIGN_OR_RETURN(const std::vector<float> values,
                      OpenStepReads(StepReads(el, st), inputs, own, claim.reads, batch));
  VT_ASSIGN_OR_RETURN(
      const std::optional<ExactPartial> next,
      CertifiedStepLeaf(el, st, claim.left, claim.right ? claim.right->first : ExactPartial{}, values));
  if (!next) return StepVerdict{false, false};  // an agreed leaf that is not its kind: both committed garbage
  return StepVerdict{claim.next[0] == *next, claim.next[1] == *next};
}

std::optional<float> CertifiedSumValue(const ReduceElement& el, const ExactPartial& last) {
  const std::uint64_t steps = el.Steps();
  const Result<ReduceStep> st = ReduceStepAt(el, steps);
  if (st.ok() && MakesValue(el, *st)) return HeldValueOf(last);
  const std::optional<Acc> sum = Acc::FromEncoding(last);
  if (!sum) return std::nullopt;
  const auto divisor = static_cast<std::uint64_t>(el.divisor);
  switch (el.epilogue) {
    case ReduceEpilogue::kDivide:
      return sum->RoundDivided(divisor);
    case ReduceEpilogue::kSqrt:
      return sum->RoundSqrt();
    case ReduceEpilogue::kRstd:  // the norm kernels' rstd from the rounded variance
      return kernels::NormRstd<M>(sum->RoundDivided(divisor), el.eps);
    case ReduceEpilogue::kNone:
      break;
  }
  return sum->Round();
}

StepVerdict JudgeCertifiedSumEpilogue(const ReduceElement& element, const ExactPartial& last, float y_a,
                                      float y_b) {
  return ValueVerdict(CertifiedSumValue(element, last), y_a, y_b);
}

}  // namespace vt::verify
