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

}  // namespace

Result<ReduceElement> CertifiedSumAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                     std::int64_t e, std::span<const kernels::Shape> input_shapes) {
  VT_ASSIGN_OR_RETURN(ReduceElement el, ReduceElementAt(op_kind, attrs, slot, e, input_shapes));
  const bool one_sum = el.scan == ReduceScan::kNone && el.segments.size() == 1 &&
                       el.final == ReduceFinal::kNone && el.outer == ReduceOuter::kNone && el.rows == 1 &&
                       !el.attention_grad;
  const bool known_epilogue = el.epilogue == ReduceEpilogue::kNone ||
                              el.epilogue == ReduceEpilogue::kDivide || el.epilogue == ReduceEpilogue::kRstd;
  if (!one_sum || !known_epilogue || !KnownTerm(el.segments[0].term))
    return Status::Invalid("elem-no-certified-rule",
                           "not one certified sum of values, deviations or norm products");
  return el;
}

std::uint64_t CertifiedSumTerms(const ReduceElement& element) {
  return static_cast<std::uint64_t>(element.segments.at(0).terms);
}

std::vector<StepRead> CertifiedTermReads(const ReduceElement& element, std::int64_t j) {
  ReduceStep term;
  term.kind = ReduceStepKind::kTerm;
  term.segment = 0;
  term.term = j;
  return StepReads(element, term);
}

std::pair<float, float> CertifiedTermFactors(ReduceTerm term, std::span<const float> v) {
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

Result<std::vector<ExactPartial>> CertifiedSumPartials(const ReduceElement& element,
                                                       std::span<const kernels::Tensor> inputs,
                                                       std::span<const kernels::Tensor> outputs) {
  const ReduceSegment& seg = element.segments.at(0);
  const ValueAt value_at = TensorValues(inputs, outputs);
  std::vector<float> a, b;
  a.reserve(static_cast<std::size_t>(seg.terms));
  b.reserve(static_cast<std::size_t>(seg.terms));
  std::vector<float> values;
  for (std::int64_t j = 0; j < seg.terms; ++j) {
    VT_ASSIGN_OR_RETURN(std::vector<ReadValue> reads, ReadStep(CertifiedTermReads(element, j), value_at));
    values.clear();
    for (const ReadValue& r : reads) values.push_back(r.value);
    const auto [fa, fb] = CertifiedTermFactors(seg.term, values);
    a.push_back(fa);
    b.push_back(fb);
  }
  return CertifiedDotPartials(a, b);
}

Result<StepVerdict> JudgeCertifiedSumStepClaim(const ReduceElement& element,
                                               std::span<const InputTensor> inputs,
                                               const std::array<Hash256, 2>& roots,
                                               const CertifiedSumStepClaim& claim, const OpenedBatch* batch,
                                               std::span<const InputTensor> own) {
  constexpr std::string_view kReason = "elem-bad-step";
  const std::uint64_t k = CertifiedSumTerms(element);
  if (claim.m >= k)
    return Status::Invalid(kReason, "step " + std::to_string(claim.m) + " of " + std::to_string(k));
  VT_TRY(CheckPartialLeaf(kReason, roots[0], claim.p_m, claim.p_m_proof, claim.m, k + 1));
  for (std::size_t side = 0; side < 2; ++side)
    VT_TRY(
        CheckPartialLeaf(kReason, roots[side], claim.next[side], claim.next_proof[side], claim.m + 1, k + 1));
  VT_ASSIGN_OR_RETURN(const std::vector<float> values,
                      OpenStepReads(CertifiedTermReads(element, static_cast<std::int64_t>(claim.m)), inputs,
                                    own, claim.reads, batch));
  const auto [a, b] = CertifiedTermFactors(element.segments[0].term, values);
  return JudgeDotStep(claim.p_m, a, b, claim.next[0], claim.next[1]);
}

StepVerdict JudgeCertifiedSumEpilogue(const ReduceElement& element, const ExactPartial& p_k, float y_a,
                                      float y_b) {
  const std::optional<float> y = CertifiedSumValue(element, p_k);
  if (!y) return StepVerdict{false, false};
  return StepVerdict{SameBits(*y, y_a), SameBits(*y, y_b)};
}

std::optional<float> CertifiedSumValue(const ReduceElement& element, const ExactPartial& p_k) {
  const std::optional<kernels::ExactAccumulator> sum = kernels::ExactAccumulator::FromEncoding(p_k);
  if (!sum) return std::nullopt;
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
