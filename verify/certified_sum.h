#pragma once
// Certified mode's reduction rule (docs/referee.md, "Element-level descent",
// item 22). A certified reduction is the correctly rounded value of its
// exact sum (kernels/certified.h: SumOf, MeanOf, DotOf, ColumnSumOf,
// ColumnDotOf in kernels/ops/op_util.h), whatever order the kernel summed
// in — so its walk is the repops rule's description (ReduceElementAt) with
// exact sums (ReduceElement::exact): each sum is its terms' exact prefix
// sums (verify::ExactPartial), one term a step, and a value computed from
// sums rounds them as the kernels do: CR(Σ), CR(Σ / n), CR(sqrt Σ).
//
// A leaf is one of two things, fixed by its step:
//   a sum       — an accumulator state (ExactAccumulator's encoding): term
//                 steps, the adding scans (embedding_backward's masked sum,
//                 attention's and col2im's dots, a pooling window's sum), the
//                 outer sums (cross-entropy's loss, col2im's taps, the
//                 attention softmax's z);
//   a value     — an fp32 value computed by the kernels' own fp32
//                 expression, held bit for bit (HeldValue): the max scans,
//                 the final steps (cross-entropy's gradient and row loss,
//                 softmax, layernorm_backward's dx, an attention score,
//                 batch-norm's running variance), the outer softmax's max,
//                 exponentials and quotient, attention_backward's dS.
// A term is the exact product of two fp32 factors from the kernels' own
// expressions (a value v is v·1; a norm's dγ term dy·x̂; a variance term
// d·d; Exp(x − max)·1; layernorm_backward's g = dy·γ rounded, g·1 and g·x̂).
//
// Covered: every reduction ReduceElementAt describes, attention_backward's
// dq and dk included (AttentionGrad's layout: dP and r_t exact sums, dS a
// held value, the GEMM element an exact sum).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/tensor.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "verify/reduce_rule.h"

namespace vt::verify {

// ReduceElementAt's description with exact sums (exact = true), or
// ReduceElementAt's reasons.
Result<ReduceElement> CertifiedSumAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                     std::int64_t e, std::span<const kernels::Shape> input_shapes);

// A value leaf: flags byte 8 (which no accumulator state has) and the
// value's fp32 bits in the first digit, every other byte 0 — one encoding
// per bit pattern, −0 and NaN payloads included. HeldValueOf is its
// inverse: nullopt for any other byte string.
ExactPartial HeldValue(float v);
std::optional<float> HeldValueOf(const ExactPartial& leaf);

// Leaf m+1 of `step` (ReduceStepAt of the exact element) from its operand
// leaves and the values it reads (StepReads order): a sum leaf adds its term
// (or the row's sum, or e_j) exactly; a value leaf is the kernels' fp32
// expression of its operands (a sum read as a value rounded as the kernel
// rounds it). nullopt when an operand leaf is not the kind its step makes
// (both parties agreed on garbage); Invalid "bad-index" when a label or an
// index is not a row (the operator fails on its inputs, as the kernel
// does), "elem-bad-step" for the wrong number of reads.
Result<std::optional<ExactPartial>> CertifiedStepLeaf(const ReduceElement& element, const ReduceStep& step,
                                                      const ExactPartial& left, const ExactPartial& right,
                                                      std::span<const float> values);

// All Steps() + 1 leaves from the values `value_at` reads (a party
// computes these for one value, on demand), pushed in order. Invalid
// "elem-bad-index" when an operand lies outside its tensor,
// "elem-wrong-leaf" for a tree sum's element, or CertifiedStepLeaf's reasons.
Status ComputeCertifiedSumPartials(const ReduceElement& element, const ValueAt& value_at,
                                   LeafSink<ExactPartial>& out);
// The same from the node's input tensors and its own outputs, held whole.
Result<std::vector<ExactPartial>> CertifiedSumPartials(const ReduceElement& element,
                                                       std::span<const kernels::Tensor> inputs,
                                                       std::span<const kernels::Tensor> outputs = {});

// The output value from the last leaf: a value leaf's value; a sum's
// CR(p), CR(p / divisor) for a mean, CR(sqrt p) for the clip norm,
// NormRstd(CR(p / divisor), eps) for a norm's rstd. nullopt when the leaf is
// not the kind the last step makes.
std::optional<float> CertifiedSumValue(const ReduceElement& element, const ExactPartial& last);

// Level 5b's final move for a certified sum, as one claim: the walk over the
// Steps() + 1 leaves ended at leaf m+1 (leaf m agreed). The step's operand
// leaves opened against roots[0] (`right` exactly for the steps that read
// one), each party's leaf m+1 against its own root, and the step's reads of
// hashed inputs (StepReads order; a value of the batch from the batch
// opening instead).
struct CertifiedSumStepClaim {
  std::uint64_t m = 0;
  ExactPartial left{};
  crypto::MerkleProof left_proof;
  std::optional<std::pair<ExactPartial, crypto::MerkleProof>> right;
  std::array<ExactPartial, 2> next{};
  std::array<crypto::MerkleProof, 2> next_proof;
  std::vector<ValueOpening> reads;
  bool operator==(const CertifiedSumStepClaim&) const = default;
};

// The referee's verdict on it, and every worker's prediction: the step
// (ReduceStepAt), its operand leaves against roots[0], both next leaves
// against their roots, the reads (OpenStepReads), then the one step
// (CertifiedStepLeaf). Invalid "elem-bad-step" (m out of range, a proof
// that does not check out, a `right` the step does not read or lacks, the
// wrong reads), CertifiedStepLeaf's or VerifyValue's reasons.
Result<StepVerdict> JudgeCertifiedSumStepClaim(const ReduceElement& element,
                                               std::span<const InputTensor> inputs,
                                               const std::array<Hash256, 2>& roots,
                                               const CertifiedSumStepClaim& claim,
                                               const OpenedBatch* batch = nullptr,
                                               std::span<const InputTensor> own = {});

// When both parties' leaves agree to the last, the epilogue is disputed: the
// value is CertifiedSumValue(last) (neither party is right when it is none).
StepVerdict JudgeCertifiedSumEpilogue(const ReduceElement& element, const ExactPartial& p_k, float y_a,
                                      float y_b);

}  // namespace vt::verify
