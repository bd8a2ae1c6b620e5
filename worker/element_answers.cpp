#include "worker/element_answers.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "kernels/tensor_codec.h"
#include "protocol/state.h"
#include "verify/batch_opening.h"
#include "verify/element.h"
#include "verify/graph_source.h"
#include "worker/dispute.h"

namespace vt::worker {
namespace {

std::vector<kernels::Shape> InputShapes(const ElementSide& side) {
  std::vector<kernels::Shape> shapes;
  shapes.reserve(side.inputs.size());
  for (const kernels::Tensor& t : side.inputs) shapes.push_back(t.shape());
  return shapes;
}

// The K factors of one side of a dot element (a padding tap, index −1, is +0).
template <class IndexOf>
std::vector<float> Factors(const kernels::Tensor& t, std::int64_t k, const IndexOf& index) {
  std::vector<float> v;
  v.reserve(static_cast<std::size_t>(k));
  for (std::int64_t m = 0; m < k; ++m) {
    const std::int64_t i = index(m);
    v.push_back(i < 0 ? +0.0f : t[i]);
  }
  return v;
}

// A dot factor's or a reduction read's tensor: a node input, or the node's own (agreed) output slot.
const kernels::Tensor& FactorTensor(const ElementSide& side, std::uint32_t index) {
  return index >= verify::kOwnOutput ? side.outputs.at(index - verify::kOwnOutput) : side.inputs.at(index);
}

}  // namespace

Result<ElementSide> ElementSideOf(const NodeCase& c) {
  const NodeInputs& n = c.inputs;
  if (n.inputs.size() != n.record.inputs.size())
    return Status::Invalid("elem-no-input-tensor", "the export does not match its record's inputs");
  ElementSide side;
  side.op_kind = n.record.op_kind;
  side.attrs = n.record.attrs;
  side.refs = n.record.inputs;
  side.outputs = c.outputs;
  side.header = n.header;
  side.header_proof = n.header_proof;
  side.examples = n.examples;
  if (!n.log.empty()) {
    auto log = kernels::DecodeRoundingLog(n.log);
    if (!log.ok()) return Status::Invalid("elem-bad-log", log.status().ToString());
    side.log = std::move(log).value();
  }
  for (std::uint32_t i = 0; i < n.inputs.size(); ++i) {
    const verify::InputOpening& in = n.inputs[i];
    if (const protocol::InputRef& ref = n.record.inputs[i]; ref.source == protocol::InputSource::kBatch) {
      if (ref.index >= c.batch.size())
        return Status::Invalid("elem-no-input-tensor", "the export has no batch");
      side.inputs.push_back(c.batch[ref.index]);
      side.openings.emplace_back();
      continue;
    }
    if (in.tensor.empty()) return Status::Invalid("elem-no-input-tensor", "input " + std::to_string(i));
    if (!in.proof) return Status::Invalid("elem-no-input-tensor", "input " + std::to_string(i) + " has no proof");
    VT_ASSIGN_OR_RETURN(kernels::Tensor t, kernels::DecodeTensorBytes(in.tensor));
    side.openings.push_back(verify::InputHashOpening{i, t.Hash(), *in.proof, in.producer});
    side.inputs.push_back(std::move(t));
  }
  return side;
}

Result<crypto::MerkleTree> OutputChunkTree(const ElementSide& side, std::uint32_t slot) {
  if (slot >= side.outputs.size()) return Status::Invalid("elem-bad-slot");
  return crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(side.outputs[slot].values(), 1));
}

Result<kernels::ChunkOpening> AnswerChunk(const ElementSide& side, std::uint32_t slot, std::int64_t chunk) {
  if (slot >= side.outputs.size()) return Status::Invalid("elem-bad-slot");
  const kernels::Tensor& out = side.outputs[slot];
  if (chunk < 0 || chunk * kernels::kChunkValues >= std::max<std::int64_t>(out.numel(), 1))
    return Status::Invalid("elem-bad-chunk", "chunk " + std::to_string(chunk));
  return kernels::OpenChunk(out, chunk, 1);
}

namespace {

// A posting's tree and end proofs from its partials (dot and reduction answers alike).
template <class Answer>
void CommitPartials(Answer& a) {
  a.first = a.partials.tree().Prove(0);
  a.last = a.partials.tree().Prove(a.partials.size() - 1);
}

// The value's element, its two factor sequences and its bias.
struct DotTerms {
  verify::DotElement element;
  std::vector<float> a, b;
  std::optional<float> bias;
};
Result<DotTerms> TermsOf(const ElementSide& side, std::uint32_t slot, std::int64_t e) {
  const std::vector<kernels::Shape> shapes = InputShapes(side);
  VT_ASSIGN_OR_RETURN(verify::DotElement el, verify::DotElementAt(side.op_kind, side.attrs, slot, e, shapes));
  std::optional<float> bias;
  if (el.bias_input) bias = side.inputs[*el.bias_input][el.bias_index];
  const auto a_index = [&](std::int64_t m) { return el.AIndex(m); };
  const auto b_index = [&](std::int64_t m) { return el.BIndex(m); };
  std::vector<float> a = Factors(FactorTensor(side, el.a_input), el.k, a_index);
  std::vector<float> b = Factors(FactorTensor(side, el.b_input), el.k, b_index);
  return DotTerms{el, std::move(a), std::move(b), bias};
}

// Leaves m and m+1 of a posting with their proofs (dot and reduction answers alike).
template <class Answer>
auto RevealOf(const Answer& mine, std::uint64_t m) {
  using Leaf = decltype(mine.partials.back());
  return StepRevealOf<Leaf>{mine.partials[m], mine.partials[m + 1], mine.partials.tree().Prove(m),
                            mine.partials.tree().Prove(m + 1)};
}

}  // namespace

template <class Leaf>
PartialsAnswerFor<Leaf> PartialsAnswerOf(const verify::DotElement& element, std::vector<Leaf> partials,
                                         std::optional<float> bias) {
  PartialsAnswerFor<Leaf> a;
  a.element = element;
  a.partials = verify::Partials<Leaf>(std::move(partials));
  CommitPartials(a);
  a.bias = bias;
  return a;
}

template <class Leaf>
Result<PartialsAnswerFor<Leaf>> AnswerPartials(const ElementSide& side, std::uint32_t slot, std::int64_t e) {
  VT_ASSIGN_OR_RETURN(DotTerms t, TermsOf(side, slot, e));
  if constexpr (std::is_same_v<Leaf, float>) {
    return PartialsAnswerOf(t.element, verify::RepopsDotPartials(t.a, t.b), t.bias);
  } else if constexpr (std::is_same_v<Leaf, verify::ExactPartial>) {
    return PartialsAnswerOf(t.element, verify::CertifiedDotPartials(t.a, t.b), t.bias);
  } else {
    return PartialsAnswerOf(t.element, verify::RoundedDotPartials(t.a, t.b), t.bias);
  }
}

Result<DotPartialsAnswer> AnswerDotPartials(std::uint8_t job_mode, const ElementSide& side,
                                            std::uint32_t slot, std::int64_t e) {
  VT_TRY(verify::CheckRuleInMode(job_mode, verify::ElementKind::kDot, side.op_kind));
  // The mode's leaf is the variant's alternative (verify::PartialLeaf's order).
  const auto answer = [&]<class Leaf>() -> Result<DotPartialsAnswer> {
    VT_ASSIGN_OR_RETURN(PartialsAnswerFor<Leaf> p, AnswerPartials<Leaf>(side, slot, e));
    return DotPartialsAnswer{std::move(p)};
  };
  switch (static_cast<kernels::Mode>(job_mode)) {
    case kernels::Mode::kCertified:
      return answer.template operator()<verify::ExactPartial>();
    case kernels::Mode::kRounded:
      return answer.template operator()<verify::RoundedPartial>();
    default:
      return answer.template operator()<float>();
  }
}

template <class Leaf>
StepRevealOf<Leaf> AnswerStepReveal(const PartialsAnswerFor<Leaf>& mine, std::uint64_t m) {
  return RevealOf(mine, m);
}

Result<FactorOpenings> AnswerFactors(const ElementSide& side, const verify::DotElement& element,
                                     std::uint64_t m) {
  const auto mi = static_cast<std::int64_t>(m);
  // −1: a padding tap, +0, nothing opened; a factor of the batch: from its example.
  const auto opening = [&](std::uint32_t f, std::int64_t index) {
    if (index < 0 || verify::IsBatchInput(side.refs, f)) return verify::ValueOpening{};
    return verify::OpenValue(FactorTensor(side, f), index);
  };
  FactorOpenings o{
      opening(element.a_input, element.AIndex(mi)), opening(element.b_input, element.BIndex(mi)), {}};
  const std::vector<std::uint64_t> positions =
      verify::DotStepBatchPositions(element, m, side.refs, InputShapes(side));
  if (!positions.empty()) {
    if (side.examples.empty())
      return Status::Invalid("elem-no-input-opening", "the side has no batch openings");
    o.batch = verify::OpenBatch(side.header, side.header_proof, side.examples, positions);
  }
  return o;
}

std::pair<float, float> FactorValues(const ElementSide& side, const verify::DotElement& element,
                                     std::uint64_t m) {
  const auto mi = static_cast<std::int64_t>(m);
  const std::int64_t bi = element.BIndex(mi);
  return {FactorTensor(side, element.a_input)[element.AIndex(mi)],
          bi < 0 ? +0.0f : FactorTensor(side, element.b_input)[bi]};
}

template <class Leaf>
verify::DotStepClaimOf<Leaf> AssembleDotStepClaim(std::uint64_t m, const StepRevealOf<Leaf>& a,
                                                  const StepRevealOf<Leaf>& b,
                                                  const FactorOpenings& factors) {
  verify::DotStepClaimOf<Leaf> c;
  c.m = m;
  c.p_m = a.p_m;
  c.p_m_proof = a.p_m_proof;
  c.next = {a.next, b.next};
  c.next_proof = {a.next_proof, b.next_proof};
  c.a = factors.a;
  c.b = factors.b;
  return c;
}

verify::DotFactors FactorsOf(const ElementSide& side, const verify::DotElement& element) {
  const kernels::Tensor& a = FactorTensor(side, element.a_input);
  const kernels::Tensor& b = FactorTensor(side, element.b_input);
  const auto batch_of = [&](std::uint32_t f) -> std::optional<std::uint32_t> {
    if (!verify::IsBatchInput(side.refs, f)) return std::nullopt;
    return side.refs[f].index;
  };
  return verify::DotFactors{
      a.Hash(), b.Hash(), a.shape(), b.shape(), batch_of(element.a_input), batch_of(element.b_input)};
}

template <class Leaf>
Result<verify::StepVerdict> PredictDotStep(const ElementSide& side, const verify::DotElement& element,
                                           const std::array<Hash256, 2>& roots,
                                           const verify::DotStepClaimOf<Leaf>& claim,
                                           const verify::OpenedBatch* batch) {
  return verify::JudgeDotStepClaim(element, FactorsOf(side, element), roots, claim, batch);
}

template <class Leaf>
Result<verify::StepVerdict> PredictEpilogue(const PartialsAnswerFor<Leaf>& agreed, float y_a, float y_b,
                                            const verify::RoundedEpilogue* rounded) {
  return verify::JudgeDotEpilogue(verify::PartialLeaf(agreed.partials.back()), agreed.bias, y_a, y_b,
                                  rounded);
}

// The dot rule's answers for each leaf (worker/element_answers.h).
#define VT_DOT_ANSWERS(Leaf)                                                                         \
  template PartialsAnswerFor<Leaf> PartialsAnswerOf(const verify::DotElement&, std::vector<Leaf>,    \
                                                    std::optional<float>);                           \
  template Result<PartialsAnswerFor<Leaf>> AnswerPartials<Leaf>(const ElementSide&, std::uint32_t,   \
                                                                std::int64_t);                       \
  template StepRevealOf<Leaf> AnswerStepReveal(const PartialsAnswerFor<Leaf>&, std::uint64_t);       \
  template verify::DotStepClaimOf<Leaf> AssembleDotStepClaim(                                        \
      std::uint64_t, const StepRevealOf<Leaf>&, const StepRevealOf<Leaf>&, const FactorOpenings&);   \
  template Result<verify::StepVerdict> PredictDotStep(                                               \
      const ElementSide&, const verify::DotElement&, const std::array<Hash256, 2>&,                  \
      const verify::DotStepClaimOf<Leaf>&, const verify::OpenedBatch*);                              \
  template Result<verify::StepVerdict> PredictEpilogue(const PartialsAnswerFor<Leaf>&, float, float, \
                                                       const verify::RoundedEpilogue*);
VT_DOT_ANSWERS(float)
VT_DOT_ANSWERS(verify::ExactPartial)
VT_DOT_ANSWERS(verify::RoundedPartial)
#undef VT_DOT_ANSWERS

namespace {

template <class Leaf>
ReducePartialsAnswerFor<Leaf> ReduceAnswerOf(const verify::ReduceElement& element,
                                             verify::Partials<Leaf> partials) {
  ReducePartialsAnswerFor<Leaf> a;
  a.element = element;
  a.partials = std::move(partials);
  CommitPartials(a);
  return a;
}

// The honest answer at `el`: its leaves computed from the side's tensors.
template <class Leaf>
Result<ReducePartialsAnswerFor<Leaf>> ReduceAnswerAt(const ElementSide& side, const verify::ReduceElement& el,
                                                     verify::LeafKeeping keeping) {
  VT_ASSIGN_OR_RETURN(
      verify::Partials<Leaf> partials,
      verify::Partials<Leaf>::Compute(el, verify::TensorValues(side.inputs, side.outputs), keeping));
  return ReduceAnswerOf(el, std::move(partials));
}

// The step's reads opened: each value of a hashed input against its tensor
// (the node's own outputs at kOwnOutput + s), the batch's through the
// examples that hold them.
template <class Leaf>
Status OpenReads(const ElementSide& side, ReduceOperandsFor<Leaf>& o) {
  VT_ASSIGN_OR_RETURN(const std::vector<verify::ReadValue> values,
                      verify::ReadStep(o.read_at, verify::TensorValues(side.inputs, side.outputs)));
  for (const verify::ReadValue& r : values) {
    // A value of the batch travels in its example, not as a value opening.
    if (verify::IsBatchInput(side.refs, r.input)) continue;
    o.reads.push_back(verify::OpenValue(FactorTensor(side, r.input), r.index));
  }
  const std::vector<std::uint64_t> positions =
      verify::StepBatchPositions(o.read_at, side.refs, InputShapes(side));
  if (!positions.empty()) {
    if (side.examples.empty())
      return Status::Invalid("elem-no-input-opening", "the side has no batch openings");
    o.batch = verify::OpenBatch(side.header, side.header_proof, side.examples, positions);
  }
  return Status::Ok();
}

std::vector<verify::InputTensor> OwnTensorsOf(const ElementSide& side) {
  std::vector<verify::InputTensor> own;
  for (const kernels::Tensor& t : side.outputs) own.push_back({t.Hash(), t.shape(), std::nullopt});
  return own;
}

}  // namespace

ReducePartialsAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element,
                                            std::vector<float> partials) {
  return ReduceAnswerOf(element, verify::Partials<float>(std::move(partials)));
}
CertifiedSumAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element,
                                          std::vector<verify::ExactPartial> partials) {
  return ReduceAnswerOf(element, verify::Partials<verify::ExactPartial>(std::move(partials)));
}
RoundedSumAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element, std::vector<double> partials) {
  return ReduceAnswerOf(element, verify::Partials<double>(std::move(partials)));
}

Result<ReducePartialsAnswer> AnswerReducePartials(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                                  std::int64_t e, verify::LeafKeeping keeping) {
  VT_ASSIGN_OR_RETURN(const verify::ReduceElement el,
                      verify::ReduceElementAt(side.op_kind, attrs, slot, e, InputShapes(side)));
  return ReduceAnswerAt<float>(side, el, keeping);
}

Result<CertifiedSumAnswer> AnswerCertifiedSum(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                              std::int64_t e, verify::LeafKeeping keeping) {
  VT_ASSIGN_OR_RETURN(const verify::ReduceElement el,
                      verify::CertifiedSumAt(side.op_kind, attrs, slot, e, InputShapes(side)));
  return ReduceAnswerAt<verify::ExactPartial>(side, el, keeping);
}

Result<ReduceRuleAnswer> AnswerReduceRule(std::uint8_t job_mode, const ElementSide& side, ByteSpan attrs,
                                          std::uint32_t slot, std::int64_t e, verify::LeafKeeping keeping) {
  // The mode's rule at this value, as the referee chooses it: its leaves' kind follows.
  VT_ASSIGN_OR_RETURN(const verify::ReduceElement el,
                      verify::ReduceRuleAt(job_mode, side.op_kind, attrs, slot, e, InputShapes(side)));
  if (el.exact) {
    VT_ASSIGN_OR_RETURN(CertifiedSumAnswer a, ReduceAnswerAt<verify::ExactPartial>(side, el, keeping));
    return ReduceRuleAnswer{std::move(a)};
  }
  if (el.fp64) {
    VT_ASSIGN_OR_RETURN(RoundedSumAnswer a, ReduceAnswerAt<double>(side, el, keeping));
    return ReduceRuleAnswer{std::move(a)};
  }
  VT_ASSIGN_OR_RETURN(ReducePartialsAnswer a, ReduceAnswerAt<float>(side, el, keeping));
  return ReduceRuleAnswer{std::move(a)};
}

StepReveal AnswerReduceReveal(const ReducePartialsAnswer& mine, std::uint64_t m) { return RevealOf(mine, m); }
CertifiedStepReveal AnswerReduceReveal(const CertifiedSumAnswer& mine, std::uint64_t m) {
  return RevealOf(mine, m);
}
RoundedSumReveal AnswerReduceReveal(const RoundedSumAnswer& mine, std::uint64_t m) {
  return RevealOf(mine, m);
}

namespace {

template <class Leaf>
Result<ReduceOperandsFor<Leaf>> OperandsOf(const ElementSide& side, const ReducePartialsAnswerFor<Leaf>& mine,
                                           std::uint64_t m) {
  VT_ASSIGN_OR_RETURN(verify::ReduceStep st, verify::ReduceStepAt(mine.element, m + 1));
  ReduceOperandsFor<Leaf> o;
  o.left = mine.partials[st.left];
  o.left_proof = mine.partials.tree().Prove(st.left);
  if (st.reads_right) o.right = std::make_pair(mine.partials[st.right], mine.partials.tree().Prove(st.right));
  o.read_at = verify::StepReads(mine.element, st);
  VT_TRY(OpenReads(side, o));
  return o;
}

}  // namespace

Result<ReduceOperands> AnswerReduceOperands(const ElementSide& side, const ReducePartialsAnswer& mine,
                                            std::uint64_t m) {
  return OperandsOf(side, mine, m);
}
Result<CertifiedSumOperands> AnswerReduceOperands(const ElementSide& side, const CertifiedSumAnswer& mine,
                                                  std::uint64_t m) {
  return OperandsOf(side, mine, m);
}
Result<RoundedSumOperands> AnswerReduceOperands(const ElementSide& side, const RoundedSumAnswer& mine,
                                                std::uint64_t m) {
  return OperandsOf(side, mine, m);
}

verify::ReduceStepClaim AssembleReduceStepClaim(std::uint64_t m, const ReduceOperands& from_a,
                                                const StepReveal& a, const StepReveal& b) {
  verify::ReduceStepClaim c;
  c.m = m;
  c.left = from_a.left;
  c.left_proof = from_a.left_proof;
  if (from_a.right) std::tie(c.right, c.right_proof) = *from_a.right;
  c.next = {a.next, b.next};
  c.next_proof = {a.next_proof, b.next_proof};
  c.reads = from_a.reads;
  return c;
}

verify::CertifiedSumStepClaim AssembleReduceStepClaim(std::uint64_t m, const CertifiedSumOperands& from_a,
                                                      const CertifiedStepReveal& a,
                                                      const CertifiedStepReveal& b) {
  return verify::CertifiedSumStepClaim{m,
                                       from_a.left,
                                       from_a.left_proof,
                                       from_a.right,
                                       {a.next, b.next},
                                       {a.next_proof, b.next_proof},
                                       from_a.reads};
}

std::vector<verify::InputTensor> InputTensorsOf(const ElementSide& side) {
  std::vector<verify::InputTensor> in;
  in.reserve(side.inputs.size());
  for (std::size_t i = 0; i < side.inputs.size(); ++i) {
    const kernels::Tensor& t = side.inputs[i];
    if (verify::IsBatchInput(side.refs, static_cast<std::uint32_t>(i))) {
      in.push_back({Hash256{}, t.shape(), side.refs[i].index});
    } else {
      in.push_back({t.Hash(), t.shape(), std::nullopt});
    }
  }
  return in;
}

Result<verify::StepVerdict> PredictReduceStep(const ElementSide& side, const verify::ReduceElement& element,
                                              const std::array<Hash256, 2>& roots,
                                              const verify::ReduceStepClaim& claim,
                                              const verify::OpenedBatch* batch) {
  return verify::JudgeReduceStepClaim(element, InputTensorsOf(side), roots, claim, batch, OwnTensorsOf(side));
}
Result<verify::StepVerdict> PredictReduceStep(const ElementSide& side, const verify::ReduceElement& element,
                                              const std::array<Hash256, 2>& roots,
                                              const verify::CertifiedSumStepClaim& claim,
                                              const verify::OpenedBatch* batch) {
  return verify::JudgeCertifiedSumStepClaim(element, InputTensorsOf(side), roots, claim, batch,
                                            OwnTensorsOf(side));
}

verify::StepVerdict PredictReduceEpilogue(const ReducePartialsAnswer& agreed, float y_a, float y_b) {
  return verify::JudgeReduceEpilogue(agreed.element, agreed.partials.back(), y_a, y_b);
}
verify::StepVerdict PredictReduceEpilogue(const CertifiedSumAnswer& agreed, float y_a, float y_b) {
  return verify::JudgeCertifiedSumEpilogue(agreed.element, agreed.partials.back(), y_a, y_b);
}

Result<StateLeafAnswer> AnswerStateLeaf(const verify::ArbitrationPayload& assemble, std::uint64_t leaf) {
  StateLeafAnswer answer;
  if (leaf == assemble.inputs.size()) {
    answer.header = verify::BatchOpening{assemble.header, assemble.header_proof, {}, {}};
    return answer;
  }
  if (leaf > assemble.inputs.size()) return Status::Invalid("elem-bad-leaf", "past h_{t+1}'s last leaf");
  const verify::InputOpening& in = assemble.inputs[leaf];
  if (!in.proof)
    return Status::Invalid("elem-no-input-opening", "input " + std::to_string(leaf) + " has no proof");
  answer.inputs.push_back(
      verify::InputHashOpening{static_cast<std::uint32_t>(leaf), in.tensor_hash, *in.proof, in.producer});
  return answer;
}

}  // namespace vt::worker
