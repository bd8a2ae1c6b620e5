#pragma once
// A party's answers at the element level of a dispute (docs/referee.md,
// "Element-level descent"), for a node whose output has the repops dot rule
// (linear's y, linear_backward's dx and dW: verify::DotElementAt):
//
//  level 4   the chunk tree of the disputed output (its leaves walk with
//            crypto::MerkleWalk) and the opening of the chunk where the walk
//            ends (AnswerChunk; verify::DisputedValue names the value);
//  level 5b  the K+1 partial sums of that one value and their tree, with the
//            two end proofs a post must carry (AnswerPartials), then the final
//            move where the walk over the two partials trees ends
//            (AnswerDotStep).
//
// Each verdict a party predicts is the referee's own rule: PredictDotStep
// calls verify::JudgeDotStepClaim, PredictEpilogue verify::JudgeDotEpilogue.
// The reduction rule's answers (TreeSum outputs) follow the same shape
// (AnswerReducePartials … PredictReduceStep, verify/reduce_rule.h).
// A party computes partial sums only here, for one value, on demand — never
// during training. The inputs of the disputed node are agreed (every earlier
// node's record is), so both parties answer from the same input tensors.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "verify/batch_opening.h"
#include "verify/certified_sum.h"
#include "verify/descent.h"
#include "verify/element_game.h"
#include "verify/partials.h"
#include "verify/reduce_rule.h"
#include "verify/wire.h"

namespace vt::worker {

struct NodeCase;

// What a party holds of the disputed node.
struct ElementSide {
  std::uint16_t op_kind = 0;
  std::vector<protocol::InputRef> refs;  // the record's inputs (where each comes from)
  std::vector<kernels::Tensor> inputs;  // the node's input tensors, in its input order (the batch's included)
  std::vector<kernels::Tensor> outputs;  // the party's outputs (an honest party's: the op's)
  Bytes attrs;  // the node's canonical attributes (conv2d's stride and padding, matmul's transposes)
  // Each input opened by its tensor hash (verify::VerifyInputHash: a state
  // tensor in h_t, an earlier node's output through its record), in input
  // order; nullopt for the batch, which has no tensor hash.
  std::vector<std::optional<verify::InputHashOpening>> openings;
  // The step's batch, when the node reads it: the header of h_t with its
  // proof and every example's opening, from which a final move opens the
  // examples a value reads (verify::OpenBatch).
  protocol::StateHeader header;
  crypto::MerkleProof header_proof;
  std::vector<verify::ExampleOpening> examples;
  // Rounded mode: the node's committed log (the solver's: a challenger
  // follows it), which a rounded dot epilogue opens at the value.
  std::optional<kernels::RoundingLog> log;
};

// A party's side of node `node` from its export (AnswerNodeCase): the input
// tensors and their hash openings, and its own outputs. Invalid
// "elem-no-input-tensor" when the export lacks an input's bytes.
Result<ElementSide> ElementSideOf(const NodeCase& c);

// Level 4. The output's chunk tree (leaves: kernels::ChunkLeafHashes), and
// chunk `chunk` of it opened. Invalid "elem-bad-slot" / "elem-bad-chunk".
Result<crypto::MerkleTree> OutputChunkTree(const ElementSide& side, std::uint32_t slot);
Result<kernels::ChunkOpening> AnswerChunk(const ElementSide& side, std::uint32_t slot, std::int64_t chunk);

// Level 5b, posting: the value's dot element, the party's K+1 partial sums,
// their tree and the proofs of leaves 0 and K (verify::CheckPartialsEnds
// holds for an honest party). Repops: fp32 sums (verify::RepopsDotPartials;
// the value is RepopsLinearValue(p_K, bias)); certified: the exact sums
// (verify::CertifiedDotPartials; the value CR(p_K + bias)). A party answers
// with its job's mode.
template <class Leaf>
struct PartialsAnswerFor {
  verify::DotElement element;
  verify::Partials<Leaf> partials;  // held whole, with their tree
  crypto::MerkleProof first, last;
  std::optional<float> bias;  // the epilogue's bias value, when the output has one
};
using PartialsAnswer = PartialsAnswerFor<float>;
using CertifiedPartialsAnswer = PartialsAnswerFor<verify::ExactPartial>;
// Rounded mode: the fp64 partial results (verify::RoundedDotPartials; the
// value RoundedLinearValue(p_K, bias, K, spec, the log's entry)).
using RoundedPartialsAnswer = PartialsAnswerFor<verify::RoundedPartial>;
// Every function templated on Leaf below is instantiated for the three
// leaves (float, verify::ExactPartial, verify::RoundedPartial).
//
// A posting from given partial sums (the tree and the end proofs). An honest
// party gets its sums from AnswerDotPartials; a test's cheater plants its own.
template <class Leaf>
PartialsAnswerFor<Leaf> PartialsAnswerOf(const verify::DotElement& element, std::vector<Leaf> partials,
                                         std::optional<float> bias);
// The honest answer in Leaf's rule (the side's factors, verify::DotElementAt's reasons).
template <class Leaf>
Result<PartialsAnswerFor<Leaf>> AnswerPartials(const ElementSide& side, std::uint32_t slot, std::int64_t e);
// The answer over the job mode's leaves (verify::PartialLeaf), the one a party
// posts: Invalid "elem-mode-no-rule" in a mode without the dot rule
// (verify::CheckRuleInMode).
using DotPartialsAnswer = std::variant<PartialsAnswer, CertifiedPartialsAnswer, RoundedPartialsAnswer>;
Result<DotPartialsAnswer> AnswerDotPartials(std::uint8_t job_mode, const ElementSide& side,
                                            std::uint32_t slot, std::int64_t e);
// The tree of any answer's partial results (a DotPartialsAnswer's, a ReduceRuleAnswer's).
template <class... Answer>
const crypto::MerkleTree& TreeOf(const std::variant<Answer...>& answer) {
  return std::visit([](const auto& a) -> const crypto::MerkleTree& { return a.partials.tree(); }, answer);
}

// Level 5b, the final move: the walk over the two partials trees ended at
// leaf m+1 (leaf m agreed). Each party reveals its leaves m and m+1 with
// proofs against its own root; anyone opens the m-th factors against the
// agreed inputs; the referee's claim is the two reveals and the factors.
template <class Leaf>
struct StepRevealOf {
  Leaf p_m{}, next{};
  crypto::MerkleProof p_m_proof, next_proof;
};
using StepReveal = StepRevealOf<float>;
using CertifiedStepReveal = StepRevealOf<verify::ExactPartial>;
template <class Leaf>
StepRevealOf<Leaf> AnswerStepReveal(const PartialsAnswerFor<Leaf>& mine, std::uint64_t m);
// Step m's factors as the final move opens them: by value against their
// tensors, or — a factor of the batch (the first layer's x) — empty, its
// example opened in `batch` (verify::DotStepBatchPositions); a padding tap:
// empty, +0.
struct FactorOpenings {
  verify::ValueOpening a, b;
  std::optional<verify::BatchOpening> batch;
};
Result<FactorOpenings> AnswerFactors(const ElementSide& side, const verify::DotElement& element,
                                     std::uint64_t m);
// The two values step m multiplies (a padding tap's b: +0).
std::pair<float, float> FactorValues(const ElementSide& side, const verify::DotElement& element,
                                     std::uint64_t m);
template <class Leaf>
verify::DotStepClaimOf<Leaf> AssembleDotStepClaim(std::uint64_t m, const StepRevealOf<Leaf>& a,
                                                  const StepRevealOf<Leaf>& b, const FactorOpenings& factors);

// The factors' tensors of a dot element (hashes and shapes of the agreed
// inputs; a factor of the batch by which batch tensor it is).
verify::DotFactors FactorsOf(const ElementSide& side, const verify::DotElement& element);

// The verdicts, by the referee's own functions.
template <class Leaf>
Result<verify::StepVerdict> PredictDotStep(const ElementSide& side, const verify::DotElement& element,
                                           const std::array<Hash256, 2>& roots,
                                           const verify::DotStepClaimOf<Leaf>& claim,
                                           const verify::OpenedBatch* batch = nullptr);
// The epilogue over the agreed p_K (verify::JudgeDotEpilogue); a rounded
// answer's needs `rounded` (the job's rounding, the log's entry at the value).
template <class Leaf>
Result<verify::StepVerdict> PredictEpilogue(const PartialsAnswerFor<Leaf>& agreed, float y_a, float y_b,
                                            const verify::RoundedEpilogue* rounded = nullptr);

// ---- the reduction rule (verify/reduce_rule.h: TreeSum outputs, clip_grad_norm's norm;
//      verify/certified_sum.h: a certified job's exact sums) ----
//
// The same moves over the partial results of a sum in the job mode's
// leaves: posting (AnswerReducePartials, AnswerCertifiedSum; their ends
// verify::CheckPartialsEnds checks with k = ReduceElement::Steps), the
// reveal of leaf m+1 (AnswerReduceReveal), and the final claim: party A
// opens the step's operand leaves from its tree (they precede m+1: agreed)
// and the values the step reads
// (AnswerReduceOperands). A long walk's leaves are kept as runs and
// recomputed from the side's tensors when a move asks for them
// (verify/partials.h): the side must outlive the answer.
template <class Leaf>
struct ReducePartialsAnswerFor {
  verify::ReduceElement element;
  verify::Partials<Leaf> partials;  // with their tree
  crypto::MerkleProof first, last;
};
using ReducePartialsAnswer = ReducePartialsAnswerFor<float>;
using CertifiedSumAnswer = ReducePartialsAnswerFor<verify::ExactPartial>;
// A rounded job's: fp64 sums (verify::ReduceElement::fp64).
using RoundedSumAnswer = ReducePartialsAnswerFor<double>;
ReducePartialsAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element, std::vector<float> partials);
CertifiedSumAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element,
                                          std::vector<verify::ExactPartial> partials);
RoundedSumAnswer ReducePartialsAnswerOf(const verify::ReduceElement& element, std::vector<double> partials);
// `attrs`: the node's canonical attributes (the sum/mean axis); `keeping`:
// how many leaves are held whole (tests play short walks as runs too).
Result<ReducePartialsAnswer> AnswerReducePartials(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                                  std::int64_t e, verify::LeafKeeping keeping = {});
Result<CertifiedSumAnswer> AnswerCertifiedSum(const ElementSide& side, ByteSpan attrs, std::uint32_t slot,
                                              std::int64_t e, verify::LeafKeeping keeping = {});
// The answer in the job mode's leaves, the one a party posts
// (verify::ReduceRuleAt's reasons in a mode or at a value without it).
using ReduceRuleAnswer = std::variant<ReducePartialsAnswer, CertifiedSumAnswer, RoundedSumAnswer>;
Result<ReduceRuleAnswer> AnswerReduceRule(std::uint8_t job_mode, const ElementSide& side, ByteSpan attrs,
                                          std::uint32_t slot, std::int64_t e,
                                          verify::LeafKeeping keeping = {});

StepReveal AnswerReduceReveal(const ReducePartialsAnswer& mine, std::uint64_t m);
CertifiedStepReveal AnswerReduceReveal(const CertifiedSumAnswer& mine, std::uint64_t m);
using RoundedSumReveal = StepRevealOf<double>;
RoundedSumReveal AnswerReduceReveal(const RoundedSumAnswer& mine, std::uint64_t m);
template <class Leaf>
struct ReduceOperandsFor {
  Leaf left{};
  crypto::MerkleProof left_proof;
  std::optional<std::pair<Leaf, crypto::MerkleProof>> right;  // the steps that read a second leaf
  std::vector<verify::StepRead> read_at;                      // what the step reads (verify::StepReads)
  std::vector<verify::ValueOpening> reads;    // the hashed inputs' (a batch value travels in `batch`)
  std::optional<verify::BatchOpening> batch;  // the examples the step's batch values come from
};
using ReduceOperands = ReduceOperandsFor<float>;
using CertifiedSumOperands = ReduceOperandsFor<verify::ExactPartial>;
using RoundedSumOperands = ReduceOperandsFor<double>;
Result<ReduceOperands> AnswerReduceOperands(const ElementSide& side, const ReducePartialsAnswer& mine,
                                            std::uint64_t m);
Result<CertifiedSumOperands> AnswerReduceOperands(const ElementSide& side, const CertifiedSumAnswer& mine,
                                                  std::uint64_t m);
Result<RoundedSumOperands> AnswerReduceOperands(const ElementSide& side, const RoundedSumAnswer& mine,
                                                std::uint64_t m);
verify::ReduceStepClaim AssembleReduceStepClaim(std::uint64_t m, const ReduceOperands& from_a, const StepReveal& a,
                                                const StepReveal& b);
verify::CertifiedSumStepClaim AssembleReduceStepClaim(std::uint64_t m, const CertifiedSumOperands& from_a,
                                                      const CertifiedStepReveal& a,
                                                      const CertifiedStepReveal& b);
// The node's inputs by hash and shape, as the referee opens them.
std::vector<verify::InputTensor> InputTensorsOf(const ElementSide& side);
// The verdicts, by the referee's own functions.
Result<verify::StepVerdict> PredictReduceStep(const ElementSide& side, const verify::ReduceElement& element,
                                              const std::array<Hash256, 2>& roots,
                                              const verify::ReduceStepClaim& claim,
                                              const verify::OpenedBatch* batch = nullptr);
Result<verify::StepVerdict> PredictReduceStep(const ElementSide& side, const verify::ReduceElement& element,
                                              const std::array<Hash256, 2>& roots,
                                              const verify::CertifiedSumStepClaim& claim,
                                              const verify::OpenedBatch* batch = nullptr);
verify::StepVerdict PredictReduceEpilogue(const ReducePartialsAnswer& agreed, float y_a, float y_b);
verify::StepVerdict PredictReduceEpilogue(const CertifiedSumAnswer& agreed, float y_a, float y_b);

// ---- the assemble node's walk (verify/state_walk.h) ----
//
// The walked tree is the party's own h_{t+1} (worker::AnswerStateTree). The
// final move's pieces for leaf k, from the party's arbitration payload of
// the assemble node (the header of h_t and every next-state input opened by
// its hash): input k's hash opening, or the header of h_t alone (k = N).
// Invalid "elem-no-input-opening" when the payload lacks an opening's proof,
// "elem-bad-leaf" past the last leaf.
struct StateLeafAnswer {
  std::vector<verify::InputHashOpening> inputs;
  std::optional<verify::BatchOpening> header;
};
Result<StateLeafAnswer> AnswerStateLeaf(const verify::ArbitrationPayload& assemble, std::uint64_t leaf);

}  // namespace vt::worker
