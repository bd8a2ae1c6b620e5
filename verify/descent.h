#pragma once
// The element-level descent inside a disputed node (docs/referee.md,
// "Element-level descent"): the rules of level 4 (a walk over one output's
// chunk tree, kernels/chunk_tree.h, to the first differing value) and level
// 5b (a walk over the committed partial results of that value's fixed-order
// computation to one arithmetic step), and the checks where they end. One
// implementation for the referee and for every worker predicting it; each
// function says what its caller charges before calling it.
//
// Implemented for the dot rule (repops, and certified with exact partial
// sums) of linear, linear_backward's dx and
// dW, matmul, conv2d's y and conv2d_backward's dW (DotElementAt); the
// pointwise and row rules are in verify/element_rules.h, the reduction rule
// (TreeSum) in verify/reduce_rule.h.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor.h"
#include "protocol/types.h"
#include "verify/element.h"

namespace vt::verify {

class OpenedBatch;  // verify/batch_opening.h

// One value of a committed tensor: the chunk that holds it, opened.
struct ValueOpening {
  kernels::ChunkOpening chunk;
  bool operator==(const ValueOpening&) const = default;
};

// The opening of value `index` of `t` (builds the chunk tree).
ValueOpening OpenValue(const kernels::Tensor& t, std::int64_t index);

// Value `index` of the tensor of `shape` committed by `tensor_hash`.
// Charge: ProofLength siblings and the chunk's bytes. Invalid "elem-bad-index"
// or VerifyChunk's reasons.
Result<float> VerifyValue(const Hash256& tensor_hash, const kernels::Shape& shape, std::int64_t index,
                          const ValueOpening& opening);

// Level 4's end: the walk over both parties' chunk trees of one output (each
// root checked against the party's output hash) ended at chunk `chunk`; both
// reveal it. Returns the disputed value's flat index: the first value of the
// chunk whose bits differ. Invalid "elem-bad-chunk" (an opening that does
// not check out against its party's hash) or "elem-same-chunk".
Result<std::int64_t> DisputedValue(const kernels::Shape& shape, std::int64_t chunk, const Hash256& hash_a,
                                   const kernels::ChunkOpening& a, const Hash256& hash_b,
                                   const kernels::ChunkOpening& b);

// Level 5b: a party's commitment to the K+1 partial results p_0 … p_K of a
// dot product or a reduction, one leaf each: MerkleLeafHash of the leaf's
// bytes (verify::PartialLeafKind: repops its fp32 bits, certified its exact
// prefix sum, rounded its fp64 sums). Each function below has one
// implementation for every kind of leaf.
template <class Leaf>
Hash256 PartialLeafHash(const Leaf& p);
// The tree over them, every level kept. A party keeps the leaves and tree
// of a long walk as runs (verify/partials.h): past kPartialsKeptWhole
// leaves, the tree's levels from kPartialsKeptFrom up, and a run of
// 2^kPartialsKeptFrom leaves recomputed when a move asks for one.
inline constexpr std::size_t kPartialsKeptWhole = std::size_t{1} << 16;
inline constexpr unsigned kPartialsKeptFrom = 8;
template <class Leaf>
crypto::MerkleTree PartialsTree(std::span<const Leaf> partials);
template <class Leaf>
crypto::MerkleTree PartialsTree(const std::vector<Leaf>& partials) {
  return PartialsTree(std::span<const Leaf>(partials));
}

// Leaf `index` of a partials tree of `count` leaves under `root` is `value`
// (the proof's position and count, then the path). Invalid `reason`.
template <class Leaf>
Status CheckPartialLeaf(std::string_view reason, const Hash256& root, const Leaf& value,
                        const crypto::MerkleProof& proof, std::uint64_t index, std::uint64_t count);

// Posting a partials root: its first leaf must be the rule's start (+0, or
// the exact zero) and its last the party's p_K. Charge: two proofs. Invalid
// "elem-bad-partials".
template <class Leaf>
Status CheckPartialsEnds(const Hash256& root, std::uint64_t k, const Leaf& p_k,
                         const crypto::MerkleProof& first, const crypto::MerkleProof& last);

// Where a dot product's factors lie for one output value of a repops GEMM
// element (sequential over its K terms from +0, docs/kernels.md): the m-th
// factors are a = input a_input at AIndex(m), b = input b_input at BIndex(m),
// and the value is p_K, plus input bias_input at bias_index when present.
//
// Beyond a first + m·stride walk: a factor may step over two dimensions
// (period: m = outer·period + inner reads first + outer·outer_stride +
// inner·stride — conv2d_backward's dW over (image, position)), and b may be
// read through im2col (conv2d), where BIndex(m) is −1 for a tap that falls
// in the zero padding: the factor is +0 and nothing is opened.
struct Im2ColIndex {
  std::int64_t channels = 0, h = 0, w = 0;           // x [N, channels, h, w]
  std::int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t out_w = 1, out_hw = 1;                // OW, OH·OW
  bool over_taps = true;  // m = tap q (forward: fixed image, position) or m = image·OH·OW + position (dW: fixed q)
  std::int64_t image = 0, position = 0, tap = 0;    // the fixed part
  std::int64_t Index(std::int64_t m) const;          // x's flat index, or −1 (padding)
  bool operator==(const Im2ColIndex&) const = default;
};

// A factor input at kOwnOutput + s is the disputed node's own output slot s
// (agreed: the level-4 walk visits it first, verify::SlotWalkOrder), opened
// against the records' common output hash of that slot.
inline constexpr std::uint32_t kOwnOutput = 1u << 16;

struct DotElement {
  std::uint32_t a_input = 0, b_input = 0;  // node inputs, or kOwnOutput + slot
  std::int64_t a_first = 0, a_stride = 1, b_first = 0, b_stride = 1, k = 0;
  std::optional<std::uint32_t> bias_input;
  std::int64_t bias_index = 0;
  std::int64_t a_period = 0, a_outer_stride = 0;  // 0: a plain stride
  std::optional<Im2ColIndex> b_im2col;
  std::int64_t AIndex(std::int64_t m) const {
    return a_period == 0 ? a_first + m * a_stride : a_first + (m / a_period) * a_outer_stride + (m % a_period) * a_stride;
  }
  std::int64_t BIndex(std::int64_t m) const { return b_im2col ? b_im2col->Index(m) : b_first + m * b_stride; }
  bool operator==(const DotElement&) const = default;
};

// The dot rule of output `slot`, value `e`, from the node's input shapes:
//   linear (x [..., K], w [N, K], b [N]) slot 0: y[r, j] = Σ_m x[r, m]·w[j, m] + b[j]
//   linear_backward (dy [..., N], x [..., K], w [N, K]) slot 0: dx[r, k] = Σ_n dy[r, n]·w[n, k]
//                                                     slot 1: dw[n, k] = Σ_r dy[r, n]·x[r, k]
// (kernels/ops/linear.cpp). Invalid "elem-no-dot-rule" for any other output.
Result<DotElement> DotElementAt(std::uint16_t op_kind, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes);
// The same with the node's canonical attributes, which these also need:
//   matmul (a, b; trans_a, trans_b) slot 0: c[.., i, j] = Σ_p op(a)[.., i, p]·op(b)[.., p, j]
//   conv2d (x, w[, b]; stride, pad) slot 0: y[n, co, p] = Σ_q w[co, q]·col_n[q][p] (+ b[co])
//   conv2d_backward (dy, x, w) slot 1:      dw[co, q] = Σ_(n, p) dy[n, co, p]·col_n[q][p]
//   attention (qkv; heads) slot 0:          y[b, t, h·D + i] = Σ_u att[b, h, t, u]·v[b, u, h·D + i]
//                                           (a = kOwnOutput + 1: the node's own att)
// (kernels/matmul.h, kernels/ops/conv.cpp: im2col order q = (ci·KH + kh)·KW + kw).
Result<DotElement> DotElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes);

// The one-step verdict where the walk over partial results ended: leaf m is
// agreed (p_m, opened against either root), the parties' leaves m+1 differ.
// `a_m`, `b_m` are the m-th factors, opened from the agreed inputs. Returns
// which of the two next values is the repops step (at most one is). A
// padding factor (BIndex(m) = −1) is +0.
struct StepVerdict {
  bool a_right = false;
  bool b_right = false;
};
StepVerdict JudgeDotStep(float p_m, float a_m, float b_m, float next_a, float next_b);
// The verdict on a disputed value whose true value is `truth`: which
// party's value has its bits (neither where there is none — both parties
// agreed on operands that give no value). Every rule's epilogue ends here.
StepVerdict ValueVerdict(std::optional<float> truth, float y_a, float y_b);
StepVerdict JudgeDotStep(const ExactPartial& p_m, float a_m, float b_m, const ExactPartial& next_a,
                         const ExactPartial& next_b);
StepVerdict JudgeDotStep(const RoundedPartial& p_m, float a_m, float b_m, const RoundedPartial& next_a,
                         const RoundedPartial& next_b);

// One input of the disputed node opened by its tensor hash alone: a state
// tensor's entry in h_t, or an earlier node's output through that node's
// record in the node tree (leaves before the disputed node are agreed). The
// one rule for node-level arbitration (verify::ArbitrateNode, after it
// hashed the whole tensor) and for the element level, whose final moves
// open single values of an input against the hash this fixes. Unmetered:
// the caller charges the proof's siblings first. Invalid
// "arb-bad-input-proof", "arb-bad-producer" or "arb-bad-input-tensor" (also
// for the batch, which has no tensor hash to open).
struct InputHashContext {
  Hash256 state_hash;  // h_t
  std::uint64_t num_state_tensors = 0;
  Hash256 node_root;   // the node tree the producers are opened in
  std::uint64_t node_count = 0;
  std::uint64_t node_index = 0;  // the disputed node
};
Status VerifyInputHash(const InputHashContext& at, const protocol::InputRef& ref, const Hash256& tensor_hash,
                       const crypto::MerkleProof& proof, const std::optional<protocol::NodeRecord>& producer,
                       const std::string& which);

// Level 5b's final move for the dot rule, as one claim: the walk over the
// two partials roots ended at leaf m+1 (leaf m agreed). It carries p_m
// opened against root A (the same leaf under root B: the walk agreed on
// it), each party's p_{m+1} opened against its own root, and the m-th
// factors opened against the node's agreed input tensors.
template <class Leaf>
struct DotStepClaimOf {
  std::uint64_t m = 0;
  Leaf p_m{};
  crypto::MerkleProof p_m_proof;              // leaf m of roots[0]
  std::array<Leaf, 2> next{};                 // p_{m+1} of party A, of party B
  std::array<crypto::MerkleProof, 2> next_proof;  // leaf m+1 of roots[0], roots[1]
  ValueOpening a, b;                          // the m-th factors (DotElement's AIndex(m), BIndex(m));
                                              // b empty when BIndex(m) is −1 (padding: +0)
  bool operator==(const DotStepClaimOf&) const = default;
};
using DotStepClaim = DotStepClaimOf<float>;
using CertifiedDotStepClaim = DotStepClaimOf<ExactPartial>;
using RoundedDotStepClaim = DotStepClaimOf<RoundedPartial>;

// The agreed input tensors a dot element reads, by their hashes (from the
// node's agreed inputs: h_t's state tensors or producers' output hashes).
// A factor of the batch (`a_batch`/`b_batch`: 0 inputs, 1 targets — the
// first layer's x) has no tensor hash: its value comes from the example the
// move opens (verify/batch_opening.h), and its ValueOpening is empty.
struct DotFactors {
  Hash256 a_hash, b_hash;
  kernels::Shape a_shape, b_shape;
  std::optional<std::uint32_t> a_batch, b_batch;
};

// The referee's verdict on a DotStepClaim, and every worker's prediction of
// it: each proof checked (index m < K, count K+1), the factors opened (a
// factor of the batch read from `batch`), then JudgeDotStep. Charge: three
// proofs of ⌈log₂(K+1)⌉ siblings and two value openings (VerifyValue).
// Invalid "elem-bad-step" (a proof that does not check out, m out of range,
// an opening for a factor of the batch or none for its example) or
// VerifyValue's reasons.
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const DotStepClaim& claim,
                                      const OpenedBatch* batch = nullptr);
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const CertifiedDotStepClaim& claim,
                                      const OpenedBatch* batch = nullptr);
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const RoundedDotStepClaim& claim,
                                      const OpenedBatch* batch = nullptr);

// When both parties' partial sums agree to p_K (their roots are equal) the
// disputed step is the epilogue: y = p_K + bias (linear), or p_K; certified
// y = CR(p_K + bias), or CR(p_K).
StepVerdict JudgeDotEpilogue(float p_k, std::optional<float> bias, float y_a, float y_b);
StepVerdict JudgeDotEpilogue(const ExactPartial& p_k, std::optional<float> bias, float y_a, float y_b);
// Rounded mode: y = RoundedLinearValue(p_K, bias, K, spec, logged), the log
// entry at the value opened from the solver's log (kernels::OpenLogAt). An
// entry the acceptance rule rejects is Invalid "log-entry-outside-region":
// the solver loses (its log is wrong), whichever value it committed.
Result<StepVerdict> JudgeRoundedDotEpilogue(const RoundedPartial& p_k, std::optional<float> bias,
                                            std::int64_t k, const kernels::RoundingSpec& spec,
                                            std::optional<bool> logged, float y_a, float y_b);

}  // namespace vt::verify
