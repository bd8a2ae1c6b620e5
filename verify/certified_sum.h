#pragma once
// Certified mode's reduction rule, its first slice (docs/referee.md,
// "Element-level descent", item 20). A certified reduction is the correctly
// rounded value of its exact sum (kernels/certified.h: SumOf, MeanOf, DotOf,
// ColumnSumOf, ColumnDotOf in kernels/ops/op_util.h), whatever order the
// kernel summed in — so, as for the certified dot rule, its partial results
// are the exact prefix sums p_j = Σ_{i<j} t_i (verify::ExactPartial), one
// term a step, and the value is CR(p_K), or CR(p_K / n) for a mean.
//
// A term is the exact product of two fp32 factors computed by the kernels'
// own fp32 expressions (CertifiedNextLeaf): a value v is v·1; a norm's
// dγ term is dy·x̂ with x̂ = LayerNormXhat(x, mean, rstd) rounded; a norm's
// variance term is d·d with d = x − mean rounded (mean the node's own
// output). The terms and their operands are the repops reduction rule's
// description (ReduceElementAt), read without its fixed tree.
//
// Covered: a value that is one such sum — linear_backward's and
// conv2d_backward's db, sum and mean, layernorm and batchnorm2d_train's
// mean and rstd (NormRstd of CR(Σd²/n)), batchnorm2d_train's running
// variance (one final step after the sum, reading running_var), the norms'
// backward dγ and dβ. Not yet (Invalid "elem-no-certified-rule"): the sums
// behind a scan, any other final step, an outer step or a second segment
// (softmax and cross-entropy rows, the loss, attention, pooling windows,
// col2im, embedding_backward, the clip norm, layernorm_backward's dx).

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

// The value's sum, when it is one this slice covers: ReduceElementAt's
// description (one segment, rows == 1, epilogue none, divide or rstd, no
// final step but batch-norm's running variance; a value, squared-deviation
// or norm-product term). Invalid "elem-no-certified-rule" otherwise, or
// ReduceElementAt's reasons.
Result<ReduceElement> CertifiedSumAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                                     std::int64_t e, std::span<const kernels::Shape> input_shapes);
// The same test on a description ReduceElementAt already gave.
Status CheckCertifiedSum(const ReduceElement& element);

// The sum's terms K.
std::uint64_t CertifiedSumTerms(const ReduceElement& element);
// The walk's steps: the K terms (leaves p_0 = +0 … p_K), then, for a value
// computed from the sum and a value read after it (batch-norm's running
// variance, kRunningVar), one final step whose leaf K+1 is that value,
// held exactly.
std::uint64_t CertifiedSumSteps(const ReduceElement& element);

// The values step m reads (leaf m → m+1): term m's (StepReads of the
// segment's term step, in its operand order), the final step's
// (running_var[c]).
std::vector<StepRead> CertifiedStepReads(const ReduceElement& element, std::uint64_t m);

// Leaf m+1 from leaf m and the values step m reads: term m is the exact
// product of two fp32 factors from the kernels' own expressions (a value v
// is v·1; a norm's dγ term dy·x̂, x̂ = LayerNormXhat rounded; a variance
// term d·d, d = x − mean rounded), added exactly; the final step's leaf is
// BatchNormRunning(running_var, CR(p_K / divisor), momentum), exactly.
// nullopt when p_m is no accumulator state. Precondition: m <
// CertifiedSumSteps and the values CertifiedStepReads names.
std::optional<ExactPartial> CertifiedNextLeaf(const ReduceElement& element, std::uint64_t m,
                                              const ExactPartial& p_m, std::span<const float> values);

// All CertifiedSumSteps + 1 leaves, from the node's input tensors and its
// own outputs (a party computes these for one value, on demand). Invalid
// "elem-bad-index" when an operand lies outside its tensor.
Result<std::vector<ExactPartial>> CertifiedSumPartials(const ReduceElement& element,
                                                       std::span<const kernels::Tensor> inputs,
                                                       std::span<const kernels::Tensor> outputs = {});

// The output value from the last leaf: CR(p_K), CR(p_K / divisor) for a
// mean, NormRstd(CR(p_K / divisor), eps) for a norm's rstd; after a final
// step, the value its leaf holds. nullopt when the leaf is no accumulator
// state.
std::optional<float> CertifiedSumValue(const ReduceElement& element, const ExactPartial& last);

// Level 5b's final move for a certified sum, as one claim: the walk over
// the CertifiedSumSteps + 1 leaves ended at leaf m+1 (leaf m agreed). p_m
// opened against roots[0], each party's p_{m+1} against its own root, and
// step m's reads of hashed inputs (CertifiedStepReads order; a value of the
// batch from the batch opening instead).
struct CertifiedSumStepClaim {
  std::uint64_t m = 0;
  ExactPartial p_m{};
  crypto::MerkleProof p_m_proof;
  std::array<ExactPartial, 2> next{};
  std::array<crypto::MerkleProof, 2> next_proof;
  std::vector<ValueOpening> reads;
  bool operator==(const CertifiedSumStepClaim&) const = default;
};

// The referee's verdict on it, and every worker's prediction: the leaves
// against their roots, the reads (OpenStepReads), then the one step — each
// party's p_{m+1} against CertifiedNextLeaf (for a term, the certified dot
// rule's step). Invalid "elem-bad-step" (m out of range, a proof
// that does not check out, the wrong reads) or VerifyValue's reasons.
Result<StepVerdict> JudgeCertifiedSumStepClaim(const ReduceElement& element,
                                               std::span<const InputTensor> inputs,
                                               const std::array<Hash256, 2>& roots,
                                               const CertifiedSumStepClaim& claim,
                                               const OpenedBatch* batch = nullptr,
                                               std::span<const InputTensor> own = {});

// When both parties' leaves agree to the last, the epilogue is disputed: the
// value is CertifiedSumValue(last) (neither party is right when it is no
// accumulator state).
StepVerdict JudgeCertifiedSumEpilogue(const ReduceElement& element, const ExactPartial& p_k, float y_a,
                                      float y_b);

}  // namespace vt::verify
