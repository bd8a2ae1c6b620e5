#include "verify/descent.h"

#include "verify/batch_opening.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "common/encoding.h"
#include "kernels/ops/registry.h"
#include "protocol/state.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

// A dot element whose factors step by a fixed stride, no bias.
DotElement Strided(std::uint32_t a_input, std::uint32_t b_input, std::int64_t a_first, std::int64_t a_stride,
                   std::int64_t b_first, std::int64_t b_stride, std::int64_t k) {
  DotElement d;
  d.a_input = a_input;
  d.b_input = b_input;
  d.a_first = a_first;
  d.a_stride = a_stride;
  d.b_first = b_first;
  d.b_stride = b_stride;
  d.k = k;
  return d;
}

}  // namespace

ValueOpening OpenValue(const kernels::Tensor& t, std::int64_t index) {
  return ValueOpening{kernels::OpenChunk(t, index / kernels::kChunkValues, 1)};
}

Result<float> VerifyValue(const Hash256& tensor_hash, const kernels::Shape& shape, std::int64_t index,
                          const ValueOpening& opening) {
  if (index < 0 || index >= kernels::NumElements(shape)) return Status::Invalid("elem-bad-index");
  const std::int64_t chunk = index / kernels::kChunkValues;
  VT_TRY(kernels::VerifyChunk(tensor_hash, shape, chunk, opening.chunk));
  return opening.chunk.values[static_cast<std::size_t>(index - chunk * kernels::kChunkValues)];
}

Result<std::int64_t> DisputedValue(const kernels::Shape& shape, std::int64_t chunk, const Hash256& hash_a,
                                   const kernels::ChunkOpening& a, const Hash256& hash_b,
                                   const kernels::ChunkOpening& b) {
  for (const auto& [hash, opening] : {std::pair{&hash_a, &a}, std::pair{&hash_b, &b}}) {
    if (Status s = kernels::VerifyChunk(*hash, shape, chunk, *opening); !s.ok())
      return Status::Invalid("elem-bad-chunk", s.ToString());
  }
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (!SameBits(a.values[i], b.values[i])) return chunk * kernels::kChunkValues + static_cast<std::int64_t>(i);
  }
  return Status::Invalid("elem-same-chunk");
}

template <class Leaf>
Hash256 PartialLeafHash(const Leaf& p) {
  return crypto::MerkleLeafHash(PartialLeafKind<Leaf>::Encode(p));
}

template <class Leaf>
crypto::MerkleTree PartialsTree(std::span<const Leaf> partials) {
  std::vector<Hash256> leaves;
  leaves.reserve(partials.size());
  for (const Leaf& p : partials) leaves.push_back(PartialLeafHash(p));
  return crypto::MerkleTree::FromLeafHashes(std::move(leaves));
}

template <class Leaf>
Status CheckPartialLeaf(std::string_view reason, const Hash256& root, const Leaf& value,
                        const crypto::MerkleProof& proof, std::uint64_t index, std::uint64_t count) {
  if (proof.leaf_index != index || proof.leaf_count != count)
    return Status::Invalid(reason, "proof for leaf " + std::to_string(proof.leaf_index) + " of " +
                                       std::to_string(proof.leaf_count));
  if (Status s = crypto::VerifyMerkleProof(root, PartialLeafHash(value), proof); !s.ok())
    return Status::Invalid(reason, s.ToString());
  return Status::Ok();
}

template <class Leaf>
Status CheckPartialsEnds(const Hash256& root, std::uint64_t k, const Leaf& p_k,
                         const crypto::MerkleProof& first, const crypto::MerkleProof& last) {
  constexpr std::string_view kReason = "elem-bad-partials";
  VT_TRY(CheckPartialLeaf(kReason, root, PartialLeafKind<Leaf>::Start(), first, 0, k + 1));
  return CheckPartialLeaf(kReason, root, p_k, last, k, k + 1);
}

// Every kind of leaf (verify::PartialLeafKind).
#define VT_PARTIAL_LEAF(Leaf)                                                                       \
  template Hash256 PartialLeafHash<Leaf>(const Leaf&);                                              \
  template crypto::MerkleTree PartialsTree<Leaf>(std::span<const Leaf>);                            \
  template Status CheckPartialLeaf<Leaf>(std::string_view, const Hash256&, const Leaf&,             \
                                         const crypto::MerkleProof&, std::uint64_t, std::uint64_t); \
  template Status CheckPartialsEnds<Leaf>(const Hash256&, std::uint64_t, const Leaf&,               \
                                          const crypto::MerkleProof&, const crypto::MerkleProof&);
VT_PARTIAL_LEAF(float)
VT_PARTIAL_LEAF(double)
VT_PARTIAL_LEAF(ExactPartial)
VT_PARTIAL_LEAF(RoundedPartial)
#undef VT_PARTIAL_LEAF

namespace {

template <class Leaf>
StepVerdict JudgeStep(const Leaf& p_m, float a_m, float b_m, const Leaf& next_a, const Leaf& next_b) {
  using Rule = DotPartialRule<Leaf>;
  return StepVerdict{Rule::StepHolds(p_m, a_m, b_m, next_a), Rule::StepHolds(p_m, a_m, b_m, next_b)};
}

template <class Leaf>
StepVerdict JudgeEpilogue(const Leaf& p_k, std::optional<float> bias, float y_a, float y_b) {
  return ValueVerdict(DotPartialRule<Leaf>::Value(p_k, bias), y_a, y_b);
}

}  // namespace

std::int64_t Im2ColIndex::Index(std::int64_t m) const {
  const std::int64_t img = over_taps ? image : m / out_hw;
  const std::int64_t pos = over_taps ? position : m % out_hw;
  const std::int64_t q = over_taps ? m : tap;
  const std::int64_t taps = kernel_h * kernel_w;
  const std::int64_t ci = q / taps, kh = (q % taps) / kernel_w, kw = q % kernel_w;
  const std::int64_t ih = (pos / out_w) * stride_h - pad_h + kh, iw = (pos % out_w) * stride_w - pad_w + kw;
  if (ih < 0 || ih >= h || iw < 0 || iw >= w) return -1;
  return ((img * channels + ci) * h + ih) * w + iw;
}

Result<DotElement> DotElementAt(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> in) {
  const bool conv = op_kind == static_cast<std::uint16_t>(kernels::OpKind::kConv2d) && slot == 0;
  const bool conv_dw = op_kind == static_cast<std::uint16_t>(kernels::OpKind::kConv2dBackward) && slot == 1;
  const bool matmul = op_kind == static_cast<std::uint16_t>(kernels::OpKind::kMatMul) && slot == 0;
  const bool attention_y = op_kind == static_cast<std::uint16_t>(kernels::OpKind::kAttention) && slot == 0;
  if (!conv && !conv_dw && !matmul && !attention_y) return DotElementAt(op_kind, slot, e, in);
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok()) return Status::Invalid("elem-no-dot-rule", "attributes");
  const std::vector<std::int64_t>& ints = decoded->ints;
  if (attention_y) {
    // y[b, t, h·D + i] = Σ_{u < T} att[b, h, t, u]·v[b, u, h·D + i] (all T
    // columns, the masked ones +0): a from the node's own att (slot 1, walked
    // first), b from qkv's v columns.
    if (ints.size() != 1 || in.size() != 1 || in[0].size() != 3 || in[0][2] % 3 != 0)
      return Status::Invalid("elem-no-dot-rule", "attention");
    const std::int64_t nb = in[0][0], t_count = in[0][1], c = in[0][2] / 3, heads = ints[0];
    if (heads < 1 || c % heads != 0) return Status::Invalid("elem-no-dot-rule", "attention heads");
    if (e < 0 || e >= nb * t_count * c) return Status::Invalid("elem-bad-index");
    const std::int64_t d = c / heads, b = e / (t_count * c), t = (e / c) % t_count, h = (e % c) / d, i = e % d;
    DotElement el = Strided(kOwnOutput + 1, 0, ((b * heads + h) * t_count + t) * t_count, 1,
                            b * t_count * 3 * c + 2 * c + h * d + i, 3 * c, t_count);
    return el;
  }
  if (matmul) {
    if (ints.size() != 2 || in.size() != 2 || in[0].size() < 2 || in[1].size() < 2)
      return Status::Invalid("elem-no-dot-rule", "matmul");
    const bool ta = ints[0] != 0, tb = ints[1] != 0;
    const kernels::Shape& a = in[0];
    const kernels::Shape& b = in[1];
    const std::int64_t ra = a[a.size() - 2], ca = a.back(), rb = b[b.size() - 2], cb = b.back();
    const std::int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
    const std::int64_t numel = kernels::NumElements(a) / (ra * ca) * m * n;
    if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    const std::int64_t item = e / (m * n), i = (e / n) % m, j = e % n;
    DotElement d;
    d.a_input = 0;
    d.b_input = 1;
    d.k = k;
    d.a_first = item * ra * ca + (ta ? i : i * ca);
    d.a_stride = ta ? ca : 1;
    d.b_first = (b.size() == 2 ? 0 : item * rb * cb) + (tb ? j * cb : j);
    d.b_stride = tb ? 1 : cb;
    return d;
  }
  // conv2d (x, w[, b]) or conv2d_backward (dy, x, w): x and w by position.
  const std::size_t xi = conv ? 0 : 1, wi = conv ? 1 : 2;
  if (ints.size() != 4 || in.size() < 2 || in.size() <= wi || in[xi].size() != 4 || in[wi].size() != 4)
    return Status::Invalid("elem-no-dot-rule", "conv2d");
  const kernels::Shape& x = in[xi];
  const kernels::Shape& w = in[wi];
  Im2ColIndex col;
  col.channels = x[1];
  col.h = x[2];
  col.w = x[3];
  col.kernel_h = w[2];
  col.kernel_w = w[3];
  col.stride_h = ints[0];
  col.stride_w = ints[1];
  col.pad_h = ints[2];
  col.pad_w = ints[3];
  if (col.stride_h < 1 || col.stride_w < 1 || col.pad_h < 0 || col.pad_w < 0)
    return Status::Invalid("elem-no-dot-rule", "conv2d attributes");
  const std::int64_t oh = (col.h + 2 * col.pad_h - col.kernel_h) / col.stride_h + 1;
  const std::int64_t ow = (col.w + 2 * col.pad_w - col.kernel_w) / col.stride_w + 1;
  col.out_w = ow;
  col.out_hw = oh * ow;
  const std::int64_t co = w[0], q_count = w[1] * w[2] * w[3], nb = x[0];
  DotElement d;
  d.b_input = static_cast<std::uint32_t>(xi);
  if (conv) {  // y[n, c, p] = Σ_q w[c, q]·col_n[q][p] (+ b[c])
    if (e < 0 || e >= nb * co * col.out_hw) return Status::Invalid("elem-bad-index");
    const std::int64_t c = (e / col.out_hw) % co;
    col.over_taps = true;
    col.image = e / (co * col.out_hw);
    col.position = e % col.out_hw;
    d.a_input = static_cast<std::uint32_t>(wi);
    d.a_first = c * q_count;
    d.k = q_count;
    if (in.size() == 3) {
      d.bias_input = 2;
      d.bias_index = c;
    }
  } else {  // dw[c, q] = Σ_(n, p) dy[n, c, p]·col_n[q][p]
    if (e < 0 || e >= co * q_count) return Status::Invalid("elem-bad-index");
    const std::int64_t c = e / q_count;
    col.over_taps = false;
    col.tap = e % q_count;
    d.a_input = 0;
    d.a_first = c * col.out_hw;
    d.a_period = col.out_hw;
    d.a_outer_stride = co * col.out_hw;
    d.k = nb * col.out_hw;
  }
  d.b_im2col = col;
  return d;
}

Result<DotElement> DotElementAt(std::uint16_t op_kind, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes) {
  const auto last = [&](std::size_t i) { return input_shapes[i].empty() ? 1 : input_shapes[i].back(); };
  const auto rows = [&](std::size_t i) {
    return kernels::NumElements(input_shapes[i]) / std::max<std::int64_t>(1, last(i));
  };
  DotElement d;
  if (op_kind == static_cast<std::uint16_t>(kernels::OpKind::kLinear) && slot == 0 && input_shapes.size() >= 2) {
    const std::int64_t k = last(0), n = input_shapes[1].front();
    d = Strided(0, 1, (e / n) * k, 1, (e % n) * k, 1, k);
    if (input_shapes.size() == 3) {
      d.bias_input = 2;
      d.bias_index = e % n;
    }
    return d;
  }
  if (op_kind == static_cast<std::uint16_t>(kernels::OpKind::kLinearBackward) && input_shapes.size() == 3) {
    const std::int64_t n = last(0), k = last(1), r = rows(1);
    if (slot == 0) return Strided(0, 2, (e / k) * n, 1, e % k, k, n);  // dx
    if (slot == 1) return Strided(0, 1, e / k, n, e % k, k, r);        // dw
  }
  return Status::Invalid("elem-no-dot-rule");
}

StepVerdict ValueVerdict(std::optional<float> truth, float y_a, float y_b) {
  if (!truth) return StepVerdict{};
  return StepVerdict{SameBits(*truth, y_a), SameBits(*truth, y_b)};
}

StepVerdict JudgeDotStep(float p_m, float a_m, float b_m, float next_a, float next_b) {
  return JudgeStep(p_m, a_m, b_m, next_a, next_b);
}
StepVerdict JudgeDotStep(const ExactPartial& p_m, float a_m, float b_m, const ExactPartial& next_a,
                         const ExactPartial& next_b) {
  return JudgeStep(p_m, a_m, b_m, next_a, next_b);
}
StepVerdict JudgeDotStep(const RoundedPartial& p_m, float a_m, float b_m, const RoundedPartial& next_a,
                         const RoundedPartial& next_b) {
  return JudgeStep(p_m, a_m, b_m, next_a, next_b);
}

Status VerifyInputHash(const InputHashContext& at, const protocol::InputRef& ref, const Hash256& tensor_hash,
                       const crypto::MerkleProof& proof, const std::optional<protocol::NodeRecord>& producer,
                       const std::string& which) {
  const auto bad = [](std::string_view reason, const Status& cause) {
    return Status::Invalid(reason, cause.ToString());
  };
  switch (ref.source) {
    case protocol::InputSource::kState:
      if (producer) return Status::Invalid("arb-bad-producer", which + ": a state input has no producer");
      if (Status s = protocol::VerifyStateTensor(at.state_hash, at.num_state_tensors, ref.index, tensor_hash, proof);
          !s.ok())
        return bad("arb-bad-input-proof", s);
      return Status::Ok();
    case protocol::InputSource::kNode:
      if (!producer) return Status::Invalid("arb-bad-producer", which + ": no producer record");
      if (proof.leaf_index != ref.index || proof.leaf_count != at.node_count || ref.index >= at.node_index)
        return Status::Invalid("arb-bad-producer", which + ": proof is not for the producing node");
      if (Status s = crypto::VerifyMerkleProof(at.node_root, protocol::NodeRecordHash(*producer), proof); !s.ok())
        return bad("arb-bad-producer", s);
      if (ref.slot >= producer->output_hashes.size() || producer->output_hashes[ref.slot] != tensor_hash)
        return Status::Invalid("arb-bad-input-tensor", which + ": does not match the producer's output hash");
      return Status::Ok();
    case protocol::InputSource::kBatch:
      break;
  }
  return Status::Invalid("arb-bad-input-tensor", which + ": the batch (or an unknown source) has no tensor hash");
}

namespace {

template <class Leaf>
Result<StepVerdict> JudgeClaim(const DotElement& element, const DotFactors& factors,
                               const std::array<Hash256, 2>& roots, const DotStepClaimOf<Leaf>& claim,
                               const OpenedBatch* batch) {
  constexpr std::string_view kReason = "elem-bad-step";
  const std::uint64_t k = static_cast<std::uint64_t>(element.k);
  if (claim.m >= k) return Status::Invalid(kReason, "step " + std::to_string(claim.m) + " of " + std::to_string(k));
  VT_TRY(CheckPartialLeaf(kReason, roots[0], claim.p_m, claim.p_m_proof, claim.m, k + 1));
  for (std::size_t side = 0; side < 2; ++side)
    VT_TRY(
        CheckPartialLeaf(kReason, roots[side], claim.next[side], claim.next_proof[side], claim.m + 1, k + 1));
  const auto m = static_cast<std::int64_t>(claim.m);
  // A factor by its tensor hash, or from the batch's opened example.
  const auto factor = [&](const Hash256& hash, const kernels::Shape& shape,
                          const std::optional<std::uint32_t>& of, std::int64_t index,
                          const ValueOpening& opening) -> Result<float> {
    if (!of) return VerifyValue(hash, shape, index, opening);
    if (!opening.chunk.values.empty())
      return Status::Invalid(kReason, "a factor of the batch is not opened by value");
    if (batch == nullptr) return Status::Invalid(kReason, "a factor of the batch comes from its example");
    return batch->Value(*of, shape, index);
  };
  VT_ASSIGN_OR_RETURN(float a_m,
                      factor(factors.a_hash, factors.a_shape, factors.a_batch, element.AIndex(m), claim.a));
  float b_m = +0.0f;  // a padding tap: +0, nothing opened
  if (const std::int64_t bi = element.BIndex(m); bi >= 0) {
    VT_ASSIGN_OR_RETURN(b_m, factor(factors.b_hash, factors.b_shape, factors.b_batch, bi, claim.b));
  } else if (!claim.b.chunk.values.empty()) {
    return Status::Invalid(kReason, "a padding factor is not opened");
  }
  return JudgeStep(claim.p_m, a_m, b_m, claim.next[0], claim.next[1]);
}

}  // namespace

Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const DotStepClaim& claim,
                                      const OpenedBatch* batch) {
  return JudgeClaim(element, factors, roots, claim, batch);
}
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const CertifiedDotStepClaim& claim,
                                      const OpenedBatch* batch) {
  return JudgeClaim(element, factors, roots, claim, batch);
}
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots, const RoundedDotStepClaim& claim,
                                      const OpenedBatch* batch) {
  return JudgeClaim(element, factors, roots, claim, batch);
}

StepVerdict JudgeDotEpilogue(float p_k, std::optional<float> bias, float y_a, float y_b) {
  return JudgeEpilogue(p_k, bias, y_a, y_b);
}
StepVerdict JudgeDotEpilogue(const ExactPartial& p_k, std::optional<float> bias, float y_a, float y_b) {
  return JudgeEpilogue(p_k, bias, y_a, y_b);
}
Result<StepVerdict> JudgeRoundedDotEpilogue(const RoundedPartial& p_k, std::optional<float> bias,
                                            std::int64_t k, const kernels::RoundingSpec& spec,
                                            std::optional<bool> logged, float y_a, float y_b) {
  VT_ASSIGN_OR_RETURN(const float y, RoundedLinearValue(p_k, bias, k, spec, logged));
  return ValueVerdict(y, y_a, y_b);
}

}  // namespace vt::verify
