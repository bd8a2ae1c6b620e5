#include "verify/certified_sum.h"

#include "kernels/certified.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/op_util.h"

namespace vt::verify {
namespace {

// The terms this slice knows the certified kernels' factors of.
bool KnownTerm(ReduceTerm term) {
  return term == ReduceTerm::kValue || term == ReduceTerm::kNormProduct ||
         term == ReduceTerm::kSquaredDeviation;
}

// The term's two fp32 factors from the values it reads (CertifiedStepReads'
// order): the term is their product, exactly.
std::pair<float, float> TermFactors(ReduceTerm term, std::span<const float> v) {
  switch (term) {
    case ReduceTerm::kNormProduct:  // dy · x̂, x̂ rounded as the norm kernels round it
      return {v[0], kernels::LayerNormXhat(v[1], v[2], v[3])};
    case ReduceTerm::kSquaredDeviation: {  // d · d, d = x − mean rounded (the norms' variance)
      const float d = v[0] - v[1];
      return {d, d};
    }
    default:  // kValue (CertifiedSumAt admits no other)
      return {v[0], 1.0f};
  }
}

}  // namespace

Result<ReduceElement> CertifiedSumAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                     std::int64_t e, std::span<const kernels::Shape> input_shapes) {
  VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, slot, e, input_shapes));
  VT_TRY(CheckCertifiedSum(el));
  return el;
}

Status CheckCertifiedSum(const ReduceElement& el) {
  const bool known_final =
      el.final == ReduceFinal::kNone || (el.final == ReduceFinal::kRunningVar && el.final_reads.size() == 1);
  const bool one_sum = el.scan == ReduceScan::kNone && el.segments.size() == 1 && known_final &&
                       el.outer == ReduceOuter::kNone && el.rows == 1 && !el.attention_grad;
  const bool known_epilogue = el.epilogue == ReduceEpilogue::kNone ||
                              el.epilogue == ReduceEpilogue::kDivide || el.epilogue == ReduceEpilogue::kRstd;
  if (!one_sum || !known_epilogue || !KnownTerm(el.segments[0].term))
    return Status::Invalid("elem-no-certified-rule",
                           "not one certified sum of values, deviations or norm products");
  return Status::Ok();
}

std::uint64_t CertifiedSumTerms(const ReduceElement& element) {
  return static_cast<std::uint64_t>(element.segments.at(0).terms);
}

std::uint64_t CertifiedSumSteps(const ReduceElement& element) {
  return CertifiedSumTerms(element) + (element.final == ReduceFinal::kNone ? 0 : 1);
}

std::vector<StepRead> CertifiedStepReads(const ReduceElement& element, std::uint64_t m) {
  ReduceStep step;
  if (m < CertifiedSumTerms(element)) {
    step.kind = ReduceStepKind::kTerm;
    step.segment = 0;
    step.term = static_cast<std::int64_t>(m);
  } else {
    step.kind = ReduceStepKind::kFinal;
  }
  return StepReads(element, step);
}

std::optional<ExactPartial> CertifiedNextLeaf(const ReduceElement& element, std::uint64_t m,
                                              const ExactPartial& p_m, std::span<const float> values) {
  std::optional<kernels::ExactAccumulator> acc = kernels::ExactAccumulator::FromEncoding(p_m);
  if (!acc) return std::nullopt;
  if (m < CertifiedSumTerms(element)) {
    const auto [a, b] = TermFactors(element.segments[0].term, values);
    acc->AddProduct(a, b);
    return acc->Encode();
  }
  // kRunningVar (CertifiedSumAt admits no other final step): the kernel's
  // fp32 update of running_var by the unbiased variance CR(Σd²/(n−1)).
  const float running = kernels::BatchNormRunning(
      values[0], acc->RoundDivided(static_cast<std::uint64_t>(element.divisor)), element.momentum);
  kernels::ExactAccumulator value;
  value.Add(running);
  return value.Encode();
}

Result<std::vector<ExactPartial>> CertifiedSumPartials(const ReduceElement& element,
                                                       std::span<const kernels::Tensor> inputs,
                                                       std::span<const kernels::Tensor> outputs) {
  const ValueAt value_at = TensorValues(inputs, outputs);
  const std::uint64_t steps = CertifiedSumSteps(element);
  std::vector<ExactPartial> p;
  p.reserve(static_cast<std::size_t>(steps) + 1);
  p.emplace_back();  // +0
  std::vector<float> values;
  for (std::uint64_t m = 0; m < steps; ++m) {
    VT_ASSIGN_OR_RETURN(std::vector<ReadValue> reads, ReadStep(CertifiedStepReads(element, m), value_at));
    values.clear();
    for (const ReadValue& r : reads) values.push_back(r.value);
    p.push_back(CertifiedNextLeaf(element, m, p.back(), values).value());  // the rule's own leaves: states
  }
  return p;
}

Result<StepVerdict> JudgeCertifiedSumStepClaim(const ReduceElement& element,
                                               std::span<const InputTensor> inputs,
                                               const std::array<Hash256, 2>& roots,
                                               const CertifiedSumStepClaim& claim, const OpenedBatch* batch,
                                               std::span<const InputTensor> own) {
  constexpr std::string_view kReason = "elem-bad-step";
  const std::uint64_t k = CertifiedSumSteps(element);
  if (claim.m >= k)
    return Status::Invalid(kReason, "step " + std::to_string(claim.m) + " of " + std::to_string(k));
  VT_TRY(CheckPartialLeaf(kReason, roots[0], claim.p_m, claim.p_m_proof, claim.m, k + 1));
  for (std::size_t side = 0; side < 2; ++side)
    VT_TRY(
        CheckPartialLeaf(kReason, roots[side], claim.next[side], claim.next_proof[side], claim.m + 1, k + 1));
  VT_ASSIGN_OR_RETURN(const std::vector<float> values,
                      OpenStepReads(CertifiedStepReads(element, claim.m), inputs, own, claim.reads, batch));
  const std::optional<ExactPartial> next = CertifiedNextLeaf(element, claim.m, claim.p_m, values);
  if (!next) return StepVerdict{false, false};  // an agreed leaf that is no state: both committed garbage
  return StepVerdict{claim.next[0] == *next, claim.next[1] == *next};
}

StepVerdict JudgeCertifiedSumEpilogue(const ReduceElement& element, const ExactPartial& last, float y_a,
                                      float y_b) {
  const std::optional<float> y = CertifiedSumValue(element, last);
  if (!y) return StepVerdict{false, false};
  return StepVerdict{SameBits(*y, y_a), SameBits(*y, y_b)};
}

std::optional<float> CertifiedSumValue(const ReduceElement& element, const ExactPartial& last) {
  const std::optional<kernels::ExactAccumulator> sum = kernels::ExactAccumulator::FromEncoding(last);
  if (!sum) return std::nullopt;
  if (element.final != ReduceFinal::kNone) return sum->Round();  // the final leaf holds the value exactly
  switch (element.epilogue) {
    case ReduceEpilogue::kDivide:
      return sum->RoundDivided(static_cast<std::uint64_t>(element.divisor));
    case ReduceEpilogue::kRstd:  // the norm kernels' rstd from the rounded variance
      return kernels::NormRstd<kernels::opsdetail::CertifiedMath>(
          sum->RoundDivided(static_cast<std::uint64_t>(element.divisor)), element.eps);
    default:  // kNone (CertifiedSumAt admits no other)
      return sum->Round();
  }
}

}  // namespace vt::verify
