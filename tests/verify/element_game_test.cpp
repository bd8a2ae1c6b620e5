// verify/element_game.h: which rule the referee plays for a value, the
// bounds that keep every final move sendable, slices opened chunk by chunk,
// and the codecs of the moves' parts.

#include "verify/element_game.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

using kernels::OpKind;
using protocol::InputRef;
using protocol::InputSource;

std::uint16_t K(OpKind k) { return static_cast<std::uint16_t>(k); }
InputRef State(std::uint32_t i) { return InputRef{InputSource::kState, i, 0}; }
InputRef Batch(std::uint32_t i) { return InputRef{InputSource::kBatch, i, 0}; }
InputRef Node(std::uint32_t i) { return InputRef{InputSource::kNode, i, 0}; }
constexpr auto kRepops = static_cast<std::uint8_t>(kernels::Mode::kRepops);

TEST(ElementGameRules, DotPlanOrNoneAndTheBatchFromItsExamples) {
  const std::vector<Shape> linear = {{4, 6}, {8, 6}, {8}};
  auto dot = ChooseElementRule(kRepops, K(OpKind::kLinear), {}, 0, 5,
                               std::vector<InputRef>{Node(1), State(0), State(1)}, linear);
  ASSERT_TRUE(dot.ok()) << dot.status().ToString();
  EXPECT_EQ(dot->kind, ElementKind::kDot);
  EXPECT_EQ(dot->opened_inputs, (std::vector<std::uint32_t>{0, 1, 2}));
  // x is the batch (the first layer): read from one example a step, W and b by hash.
  auto first = ChooseElementRule(kRepops, K(OpKind::kLinear), {}, 0, 5,
                                 std::vector<InputRef>{Batch(0), State(0), State(1)}, linear);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->kind, ElementKind::kDot);
  EXPECT_EQ(first->opened_inputs, (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(first->batch_inputs, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(first->batch_examples, 1);
  // Step m of y[0, 5] reads x[0, m]: example 0; of dW[5, 2] over the rows r, x[r, 2]: example r.
  const DotElement y05 = DotElementAt(K(OpKind::kLinear), {}, 0, 5, linear).value();
  EXPECT_EQ(DotStepBatchPositions(y05, 3, std::vector<InputRef>{Batch(0), State(0), State(1)}, linear),
            (std::vector<std::uint64_t>{0}));
  const std::vector<Shape> backward = {{4, 8}, {4, 6}, {8, 6}};
  const DotElement dw = DotElementAt(K(OpKind::kLinearBackward), {}, 1, 5 * 6 + 2, backward).value();
  EXPECT_EQ(DotStepBatchPositions(dw, 3, std::vector<InputRef>{Node(0), Batch(0), State(0)}, backward),
            (std::vector<std::uint64_t>{3}));
  EXPECT_TRUE(
      DotStepBatchPositions(dw, 3, std::vector<InputRef>{Node(0), Node(1), State(0)}, backward).empty());
  auto relu = ChooseElementRule(kRepops, K(OpKind::kRelu), {}, 0, 3, std::vector<InputRef>{Node(0)},
                                std::vector<Shape>{{4, 8}});
  ASSERT_TRUE(relu.ok());
  EXPECT_EQ(relu->kind, ElementKind::kPlan);
  // linear's bias gradient: the reduction rule over dy's rows (only dy opened).
  auto db = ChooseElementRule(kRepops, K(OpKind::kLinearBackward), {}, 2, 0,
                              std::vector<InputRef>{Node(0), Node(1), State(0)},
                              std::vector<Shape>{{4, 8}, {4, 6}, {8, 6}});
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(db->kind, ElementKind::kReduce);
  EXPECT_EQ(db->opened_inputs, (std::vector<std::uint32_t>{0}));
  // … whose dy were the batch: read from its examples (verify/batch_opening.h), one a step.
  auto db_batch = ChooseElementRule(kRepops, K(OpKind::kLinearBackward), {}, 2, 0,
                                    std::vector<InputRef>{Batch(0), Node(1), State(0)},
                                    std::vector<Shape>{{4, 8}, {4, 6}, {8, 6}});
  ASSERT_TRUE(db_batch.ok()) << db_batch.status().ToString();
  EXPECT_TRUE(db_batch->opened_inputs.empty());
  EXPECT_EQ(db_batch->batch_inputs, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(db_batch->batch_examples, 1);
  // dx over a batch dy: the dot rule reads dy's row from its example.
  auto dx_batch = ChooseElementRule(kRepops, K(OpKind::kLinearBackward), {}, 0, 0,
                                    std::vector<InputRef>{Batch(0), Node(1), State(0)},
                                    std::vector<Shape>{{4, 8}, {4, 6}, {8, 6}});
  ASSERT_TRUE(dx_batch.ok()) << dx_batch.status().ToString();
  EXPECT_EQ(dx_batch->batch_inputs, (std::vector<std::uint32_t>{0}));
  // No such output: no rule.
  EXPECT_EQ(ChooseElementRule(kRepops, K(OpKind::kLinear), {}, 1, 0,
                              std::vector<InputRef>{Node(1), State(0), State(1)}, linear)
                .status()
                .reason(),
            "elem-no-rule");
}

// Each mode plays its own rules: certified the dot rule, the pointwise/row
// rule and the reductions with exact sums (db, layer-norm's mean and rstd,
// the loss: one step a term, no combinations; attention_backward's dq);
// rounded only the pointwise rule of the operators exact in fp64.
TEST(ElementGameRules, EachModePlaysItsOwnRules) {
  constexpr auto kCertified = static_cast<std::uint8_t>(kernels::Mode::kCertified);
  constexpr auto kRounded = static_cast<std::uint8_t>(kernels::Mode::kRounded);
  const std::vector<InputRef> backward_refs = {Node(0), Node(1), State(0)};
  const std::vector<Shape> backward = {{5, 8}, {5, 6}, {8, 6}};
  for (std::uint8_t mode : {kRepops, kCertified}) {
    auto db = ChooseElementRule(mode, K(OpKind::kLinearBackward), {}, 2, 3, backward_refs, backward);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    EXPECT_EQ(db->kind, ElementKind::kReduce);
    EXPECT_EQ(db->opened_inputs, (std::vector<std::uint32_t>{0}));
    auto el = ReduceRuleAt(mode, K(OpKind::kLinearBackward), {}, 2, 3, backward);
    ASSERT_TRUE(el.ok());
    // Five rows: the exact sum's 5 terms (the fixed tree's block of 5 terms too).
    EXPECT_EQ(el->exact, mode == kCertified);
    EXPECT_EQ(el->Steps(), 5u);
    auto last = StepReadsAt(*el, el->Steps() - 1);
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(StepReadsAt(*el, el->Steps()).status().reason(), "elem-bad-step");
    if (mode == kCertified) {
      ASSERT_EQ(last->size(), 1u);
      EXPECT_EQ(last->front().index, 4 * 8 + 3) << "term 4 reads dy[4, 3]";
    }
  }
  const Bytes eps = EncodeToBytes(kernels::LayerNormAttrs(1e-5f));
  const std::vector<InputRef> ln_refs = {Node(0), State(0), State(1)};
  const std::vector<Shape> ln = {{2, 16}, {16}, {16}};
  for (std::uint32_t slot : {1u, 2u}) {  // the mean and the rstd: one exact sum each
    auto stat = ChooseElementRule(kCertified, K(OpKind::kLayerNorm), eps, slot, 1, ln_refs, ln);
    ASSERT_TRUE(stat.ok()) << stat.status().ToString();
    EXPECT_EQ(stat->kind, ElementKind::kReduce);
  }
  // The loss: per row its max (100 steps), its exact sum of Exp(x − max)
  // (100) and its loss, then the exact sum of the 4 rows' losses — where the
  // fixed tree adds one combination of its two blocks a row.
  const std::vector<Shape> loss = {{4, 100}, {4}};
  auto ce = ChooseElementRule(kCertified, K(OpKind::kCrossEntropy), {}, 0, 0,
                              std::vector<InputRef>{Node(0), Batch(1)}, loss);
  ASSERT_TRUE(ce.ok()) << ce.status().ToString();
  EXPECT_EQ(ce->kind, ElementKind::kReduce);
  EXPECT_EQ(ReduceRuleAt(kCertified, K(OpKind::kCrossEntropy), {}, 0, 0, loss)->Steps(), 4u * 201u + 4u);
  EXPECT_EQ(ReduceRuleAt(kRepops, K(OpKind::kCrossEntropy), {}, 0, 0, loss)->Steps(), 4u * 202u + 4u);
  // attention_backward's dq (row t = 2 of 3, D = 4): its dot blocks (3 × 4
  // steps), r_t's exact sum (3), the dS values (3) and the GEMM element (3);
  // the fixed tree's r_t is one block too.
  const Bytes one_head = EncodeToBytes(kernels::AttentionAttrs(1));
  const std::vector<InputRef> attn_refs = {Node(0), Node(1), Node(2)};
  const std::vector<Shape> attn = {{1, 3, 4}, {1, 3, 12}, {1, 1, 3, 3}};
  auto dq =
      ChooseElementRule(kCertified, K(OpKind::kAttentionBackward), one_head, 0, 2 * 12, attn_refs, attn);
  ASSERT_TRUE(dq.ok()) << dq.status().ToString();
  EXPECT_EQ(dq->kind, ElementKind::kReduce);
  EXPECT_EQ(ReduceRuleAt(kCertified, K(OpKind::kAttentionBackward), one_head, 0, 2 * 12, attn)->Steps(),
            12u + 3u + 3u + 3u);
  // In rounded mode the same value leaves (the fixed tree's r_t, one block),
  // then its β's: ‖v_j‖² for j ≤ 2 (3 × 4), ‖dy_2‖² (4), β_dP and the
  // weighted sum for each j (3 × 2), β_dS for each u (3), Σ β_dS² and
  // Σ dS² (3 each), Σ k_u[i]² (3), the GEMM's slack, the perturbation, β.
  const ReduceElement rounded_dq =
      ReduceRuleAt(kRounded, K(OpKind::kAttentionBackward), one_head, 0, 2 * 12, attn).value();
  EXPECT_EQ(rounded_dq.slack, ReduceSlack::kAttentionGrad);
  EXPECT_EQ(rounded_dq.ValueSteps(), 12u + 3u + 3u + 3u);
  EXPECT_EQ(rounded_dq.Steps() - rounded_dq.ValueSteps(), 12u + 4u + 6u + 3u + 6u + 3u + 3u);
  auto y = ChooseElementRule(kCertified, K(OpKind::kLayerNorm), eps, 0, 3, ln_refs, ln);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->kind, ElementKind::kPlan);
  // Rounded mode: the GEMM outputs of linear_backward (dx, dW) by the
  // rounded dot rule, its db by the reduction rule over fp64 sums; not
  // attention's dot products (its att differs); a layer norm's y and rstd
  // by the reduction rule over the row (the kernel reads its unrounded mean).
  for (std::uint32_t slot : {0u, 1u}) {
    auto gemm = ChooseElementRule(kRounded, K(OpKind::kLinearBackward), {}, slot, 3, backward_refs, backward);
    ASSERT_TRUE(gemm.ok()) << gemm.status().ToString();
    EXPECT_EQ(gemm->kind, ElementKind::kDot);
  }
  auto db = ChooseElementRule(kRounded, K(OpKind::kLinearBackward), {}, 2, 3, backward_refs, backward);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(db->kind, ElementKind::kReduce);
  auto db_sum = ReduceRuleAt(kRounded, K(OpKind::kLinearBackward), {}, 2, 3, backward);
  ASSERT_TRUE(db_sum.ok());
  EXPECT_TRUE(db_sum->fp64);
  EXPECT_FALSE(db_sum->exact);
  EXPECT_FALSE(ReduceRuleAt(kRepops, K(OpKind::kLinearBackward), {}, 2, 3, backward)->fp64);
  auto ln_mean = ChooseElementRule(kRounded, K(OpKind::kLayerNorm), eps, 1, 1, ln_refs, ln);
  ASSERT_TRUE(ln_mean.ok()) << ln_mean.status().ToString();
  EXPECT_EQ(ln_mean->kind, ElementKind::kReduce);
  // rstd and y: over the kernel's unrounded mean — the row's Σx, then its
  // squared deviations from Σx / C — no committed statistic read.
  for (std::uint32_t slot : {0u, 2u}) {
    auto row = ChooseElementRule(kRounded, K(OpKind::kLayerNorm), eps, slot, 1, ln_refs, ln);
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_EQ(row->kind, ElementKind::kReduce);
    EXPECT_TRUE(row->own_slots.empty()) << "no committed statistic is read";
    const std::vector<std::uint32_t> opened =
        slot == 0 ? std::vector<std::uint32_t>{0, 1, 2} : std::vector<std::uint32_t>{0};
    EXPECT_EQ(row->opened_inputs, opened) << "x (and y's γ and β)";
    EXPECT_EQ(ReduceRuleAt(kRounded, K(OpKind::kLayerNorm), eps, slot, 1, ln)->Steps(),
              2u * 16u + (slot == 0 ? 1u : 0u))
        << "two sums of 16 terms, y's final step";
  }
  EXPECT_EQ(ChooseElementRule(kCertified, K(OpKind::kLayerNorm), eps, 2, 1, ln_refs, ln)->kind,
            ElementKind::kReduce);
  for (OpKind op :
       {OpKind::kLinear, OpKind::kLinearBackward, OpKind::kMatMul, OpKind::kConv2d, OpKind::kConv2dBackward})
    EXPECT_TRUE(RoundedDotRuleCovers(K(op)));
  for (OpKind op : {OpKind::kAttention, OpKind::kRelu}) EXPECT_FALSE(RoundedDotRuleCovers(K(op)));
  EXPECT_EQ(CheckRuleInMode(kRounded, ElementKind::kDot, K(OpKind::kAttention)).reason(),
            "elem-mode-no-rule");
  EXPECT_TRUE(CheckRuleInMode(kRounded, ElementKind::kReduce, K(OpKind::kLinearBackward)).ok());
  // Attention's att and its backward are rounded reductions with their β as leaves.
  EXPECT_TRUE(CheckRuleInMode(kRounded, ElementKind::kReduce, K(OpKind::kAttention)).ok());
  EXPECT_TRUE(CheckRuleInMode(kRounded, ElementKind::kReduce, K(OpKind::kAttentionBackward)).ok());
  const std::vector<Shape> relu = {{5, 8}};
  const std::vector<InputRef> relu_refs = {Node(0)};
  auto rounded_relu = ChooseElementRule(kRounded, K(OpKind::kRelu), {}, 0, 7, relu_refs, relu);
  ASSERT_TRUE(rounded_relu.ok()) << rounded_relu.status().ToString();
  EXPECT_EQ(rounded_relu->kind, ElementKind::kPlan);
  // Each operator rounded mode re-executes is exact in fp64: no entry can
  // change its values (ten element-wise operators, the copies embedding
  // and reshape, dropout and the poolings' backwards) — and attention and
  // conv2d_backward, whose only plans are values read from nothing: the
  // mask's +0 above the diagonal, dx values no tap reaches.
  int reexecuted = 0;
  for (std::uint16_t op = 0; op < 256; ++op) {
    if (!ReexecutesRoundedValue(op)) continue;
    auto kind = kernels::OpKindFromValue(op);
    ASSERT_TRUE(kind.ok());
    EXPECT_TRUE(kernels::OpFp64IsExact(*kind) || *kind == OpKind::kAttention ||
                *kind == OpKind::kConv2dBackward)
        << op;
    ++reexecuted;
  }
  EXPECT_EQ(reexecuted, 17);
  const std::vector<Shape> qkv = {{1, 4, 3 * 8}};
  const std::vector<InputRef> qkv_refs = {Node(0)};
  const Bytes heads = EncodeToBytes(kernels::AttentionAttrs(2));
  // att[0, 0, 1, 2]: above the diagonal, the mask's +0 (nothing opened); att[0, 0, 2, 1] a reduction.
  auto masked = ChooseElementRule(kRounded, K(OpKind::kAttention), heads, 1, 4 + 2, qkv_refs, qkv);
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  EXPECT_EQ(masked->kind, ElementKind::kPlan);
  EXPECT_TRUE(masked->opened_inputs.empty());
  auto scores = ChooseElementRule(kRounded, K(OpKind::kAttention), heads, 1, 2 * 4 + 1, qkv_refs, qkv);
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  EXPECT_EQ(scores->kind, ElementKind::kReduce);
  // Its value's leaves (3 scores of a 4-step dot and the scale, the softmax), then the slack's
  // (per score ‖q‖², ‖k‖², the score's slack, the running max).
  const ReduceElement att = ReduceRuleAt(kRounded, K(OpKind::kAttention), heads, 1, 2 * 4 + 1, qkv).value();
  EXPECT_EQ(att.slack, ReduceSlack::kSoftmaxOfRowSlacks);
  EXPECT_EQ(att.Steps() - att.ValueSteps(), 3u * (2u * 4u + 2u));
  // y[0, 2, 5] (head 1, i = 1): the dot rule's over the committed att in repops; in rounded mode
  // row 2's scores and softmax, the 4-term att·V element, then its β's leaves.
  const std::int64_t y_at = 2 * 8 + 5;
  EXPECT_EQ(ChooseElementRule(kRepops, K(OpKind::kAttention), heads, 0, y_at, qkv_refs, qkv)->kind,
            ElementKind::kDot);
  EXPECT_EQ(ChooseElementRule(kRounded, K(OpKind::kAttention), heads, 0, y_at, qkv_refs, qkv)->kind,
            ElementKind::kReduce);
  const ReduceElement y_el = ReduceRuleAt(kRounded, K(OpKind::kAttention), heads, 0, y_at, qkv).value();
  EXPECT_EQ(y_el.outer, ReduceOuter::kSoftmaxDot);
  EXPECT_EQ(y_el.ValueSteps(), att.ValueSteps() - 1 + 3u + 4u)
      << "every quotient, then the 4-term GEMM element";
  EXPECT_EQ(y_el.Steps() - y_el.ValueSteps(), 3u * (2u * 4u + 2u) + 3u * 3u + 4u + 4u);
}

TEST(ElementGameRules, RowsOfAnyWidthAreOneValueAStepWindowsTooWideAreNotPlayed) {
  // GPT-3's width, 12 288, and a 65 536-value softmax row: layer-norm's y
  // reads one value of x, γ, β and the node's own mean and rstd; every
  // other row value is a reduction, one value a step.
  const std::int64_t d = 12288;
  const std::vector<InputRef> refs = {Node(0), State(0), State(1)};
  const Bytes eps = EncodeToBytes(kernels::LayerNormAttrs(1e-5f));
  const std::vector<Shape> ln = {{2, d}, {d}, {d}};
  auto y = ChooseElementRule(kRepops, K(OpKind::kLayerNorm), eps, 0, d + 7, refs, ln);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->kind, ElementKind::kPlan);
  EXPECT_EQ(y->opened_inputs, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(y->own_slots, (std::vector<std::uint32_t>{1, 2}));
  for (std::uint32_t slot : {1u, 2u}) {
    auto stat = ChooseElementRule(kRepops, K(OpKind::kLayerNorm), eps, slot, 1, refs, ln);
    ASSERT_TRUE(stat.ok()) << stat.status().ToString();
    EXPECT_EQ(stat->kind, ElementKind::kReduce);
  }
  EXPECT_FALSE(ChooseElementRule(kRepops, K(OpKind::kLayerNorm), eps, 1, 2, refs, ln).ok())
      << "two rows: no mean[2]";
  auto dx = ChooseElementRule(kRepops, K(OpKind::kLayerNormBackward), {}, 0, d + 7,
                              std::vector<InputRef>{Node(1), Node(0), State(0), Node(0), Node(0)},
                              std::vector<Shape>{{2, d}, {2, d}, {d}, {2}, {2}});
  ASSERT_TRUE(dx.ok()) << dx.status().ToString();
  EXPECT_EQ(dx->kind, ElementKind::kReduce);
  auto softmax = ChooseElementRule(kRepops, K(OpKind::kSoftmax), {}, 0, 70000, std::vector<InputRef>{Node(0)},
                                   std::vector<Shape>{{2, 65536}});
  ASSERT_TRUE(softmax.ok()) << softmax.status().ToString();
  EXPECT_EQ(softmax->kind, ElementKind::kReduce);
  // An average pool's gradient under 512 × 512 windows (stride 1) of a
  // 1024 × 1024 plane reads 512 rows of 513 dy values: more chunks than one
  // move may open.
  kernels::Pool2dParams wide;
  wide.kernel_h = wide.kernel_w = 512;
  wide.stride_h = wide.stride_w = 1;
  EXPECT_EQ(
      ChooseElementRule(kRepops, K(OpKind::kAvgPool2dBackward), EncodeToBytes(kernels::Pool2dAttrs(wide)), 0,
                        600 * 1024 + 600, std::vector<InputRef>{Node(1), Node(0)},
                        std::vector<Shape>{{1, 1, 513, 513}, {1, 1, 1024, 1024}})
          .status()
          .reason(),
      "elem-too-wide");
}

TEST(ElementGameRules, SlicesOpenChunkByChunkAgainstTheHash) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(1000);
  for (float& x : v) x = d(rng);
  const kernels::Tensor t({1000}, v);
  const Hash256 h = t.Hash();
  for (const InputSlice& slice : {InputSlice{0, 1, {1}}, InputSlice{250, 10, {10}}, InputSlice{255, 514, {514}},
                                 InputSlice{999, 1, {1}}}) {
    const std::vector<ChunkOpening> chunks = OpenSlice(t, slice);
    EXPECT_EQ(static_cast<std::int64_t>(chunks.size()), SliceChunks(slice));
    auto values = VerifySlice(h, t.shape(), slice, chunks);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    ASSERT_EQ(static_cast<std::int64_t>(values->size()), slice.count);
    for (std::int64_t i = 0; i < slice.count; ++i) EXPECT_EQ((*values)[i], v[slice.first + i]);
    // One chunk short, a value changed, another tensor's hash: refused.
    if (chunks.size() > 1) {
      EXPECT_EQ(VerifySlice(h, t.shape(), slice, std::span(chunks).first(chunks.size() - 1)).status().reason(),
                "elem-bad-slice");
    }
    std::vector<ChunkOpening> forged = chunks;
    forged.back().values.back() += 1.0f;
    EXPECT_FALSE(VerifySlice(h, t.shape(), slice, forged).ok());
    EXPECT_FALSE(VerifySlice(kernels::Tensor({1000}, std::vector<float>(1000, 0.0f)).Hash(), t.shape(), slice, chunks).ok());
  }
  EXPECT_EQ(VerifySlice(h, t.shape(), InputSlice{990, 20, {20}}, {}).status().reason(), "elem-bad-slice");
}

TEST(ElementGameRules, CodecsRoundTripAndBoundTheChunk) {
  const kernels::Tensor t({600}, std::vector<float>(600, 0.5f));
  const ChunkOpening c = kernels::OpenChunk(t, 1, 1);
  Writer w;
  EncodeChunk(w, c);
  Bytes bytes = std::move(w).Take();
  Reader r(bytes);
  auto back = DecodeChunk(r);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, c);
  ChunkOpening big = c;
  big.values.resize(kChunkValues + 1, 1.0f);
  Writer w2;
  EncodeChunk(w2, big);
  const Bytes big_bytes = std::move(w2).Take();
  Reader r2(big_bytes);
  EXPECT_EQ(DecodeChunk(r2).status().reason(), "enc-length-over-cap");

  InputHashOpening o{3, t.Hash(), crypto::MerkleTree::FromLeafHashes({t.Hash(), t.Hash()}).Prove(1), std::nullopt};
  auto o2 = DecodeExact<InputHashOpening>(EncodeToBytes(o));
  ASSERT_TRUE(o2.ok());
  EXPECT_EQ(*o2, o);
}

// The referee's final move of the pointwise/row rule, as it plays it: each
// slice opened against its tensor hash (an input's, or the node's own agreed
// output's; an unread input's with no chunk), then the operator re-executed
// at the node's RNG address. Returns the verdict on (y_a, y_b).
Result<StepVerdict> PlayOpenElement(std::uint16_t op, const Bytes& attrs, std::uint32_t slot, std::int64_t e,
                                    const std::vector<kernels::Tensor>& inputs,
                                    const std::vector<kernels::Tensor>& outputs, const RngAddress& rng, float y_a,
                                    float y_b) {
  std::vector<Shape> shapes;
  for (const kernels::Tensor& t : inputs) shapes.push_back(t.shape());
  VT_ASSIGN_OR_RETURN(ElementPlan plan, PlanElement(op, attrs, slot, e, shapes));
  std::vector<std::vector<float>> slices;
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSlice& s = plan.inputs[i];
    const kernels::Tensor& t = s.output_slot >= 0 ? outputs[static_cast<std::size_t>(s.output_slot)] : inputs[i];
    VT_ASSIGN_OR_RETURN(std::vector<float> v, VerifySlice(t.Hash(), t.shape(), s, OpenSlice(t, s)));
    slices.push_back(std::move(v));
  }
  VT_ASSIGN_OR_RETURN(float value,
                      ReexecuteElement(kernels::Mode::kRepops, op, attrs, slot, plan, slices, rng));
  return JudgeElementValue(value, y_a, y_b);
}

std::vector<kernels::Tensor> RunNode(OpKind op, const kernels::OpAttrs& attrs, const std::vector<kernels::Tensor>& in,
                                 const RngAddress& rng) {
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRepops;
  config.threads = 1;
  const kernels::OpContext ctx(config, nullptr, rng);
  std::vector<const kernels::Tensor*> ptrs;
  for (const kernels::Tensor& t : in) ptrs.push_back(&t);
  std::vector<kernels::Tensor> out;
  EXPECT_TRUE(kernels::RunOp(ctx, op, attrs, ptrs, out).ok());
  return out;
}

kernels::Tensor Random(std::mt19937& rng, Shape shape) {
  std::uniform_real_distribution<float> d(-2, 2);
  kernels::Tensor t(std::move(shape));
  for (float& v : t.values()) v = d(rng);
  return t;
}

float OneUlp(float v) { return std::nextafter(v, INFINITY); }

// The outputs the referee plays since the attribute overloads, own-output
// factors and slices, and unread inputs: which rule, which inputs the final
// move opens by hash and which own outputs (never the batch).
TEST(ElementGameRules, AttributeRulesOwnOutputsAndUnreadInputsArePlayed) {
  const std::vector<InputRef> three = {Node(0), State(0), State(1)};
  // conv2d needs its attributes (stride, padding): without them no rule.
  kernels::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const Bytes conv = EncodeToBytes(kernels::Conv2dAttrs(p));
  const std::vector<Shape> conv_in = {{2, 3, 5, 5}, {4, 3, 3, 3}, {4}};
  auto c = ChooseElementRule(kRepops, K(OpKind::kConv2d), conv, 0, 0, three, conv_in);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kind, ElementKind::kDot);
  EXPECT_EQ(c->opened_inputs, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_TRUE(c->own_slots.empty());
  EXPECT_EQ(ChooseElementRule(kRepops, K(OpKind::kConv2d), {}, 0, 0, three, conv_in).status().reason(),
            "elem-no-rule");
  // attention's y reads the node's own att (slot 1) and v from qkv.
  const Bytes att = EncodeToBytes(kernels::AttentionAttrs(2));
  const std::vector<Shape> qkv = {{1, 6, 3 * 2 * 4}};
  auto y = ChooseElementRule(kRepops, K(OpKind::kAttention), att, 0, 7, std::vector<InputRef>{Node(0)}, qkv);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->kind, ElementKind::kDot);
  EXPECT_EQ(y->opened_inputs, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(y->own_slots, (std::vector<std::uint32_t>{1}));
  // att[0, 0, 1, 1] is a walk over row 1's scores (q and k from qkv);
  // att[0, 0, 0, 2], above the diagonal, the mask's +0: nothing opened.
  auto a = ChooseElementRule(kRepops, K(OpKind::kAttention), att, 1, 7, std::vector<InputRef>{Node(0)}, qkv);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->kind, ElementKind::kReduce);
  EXPECT_EQ(a->opened_inputs, (std::vector<std::uint32_t>{0}));
  auto masked =
      ChooseElementRule(kRepops, K(OpKind::kAttention), att, 1, 2, std::vector<InputRef>{Node(0)}, qkv);
  ASSERT_TRUE(masked.ok()) << masked.status().ToString();
  EXPECT_EQ(masked->kind, ElementKind::kPlan);
  EXPECT_TRUE(masked->opened_inputs.empty() && masked->own_slots.empty());
  // clip_grad_norm's g'_1: g_1 at e and the own norm (slot 3); g_0 and g_2 unread — even the batch.
  const Bytes clip = EncodeToBytes(kernels::ClipGradNormAttrs(1.0f));
  auto g1 =
      ChooseElementRule(kRepops, K(OpKind::kClipGradNorm), clip, 1, 2,
                        std::vector<InputRef>{Batch(0), Node(1), Node(2)}, std::vector<Shape>{{3}, {4}, {5}});
  ASSERT_TRUE(g1.ok()) << g1.status().ToString();
  EXPECT_EQ(g1->opened_inputs, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(g1->own_slots, (std::vector<std::uint32_t>{3}));
  // dropout's keep reads no input; its y reads x and the own keep.
  const Bytes drop = EncodeToBytes(kernels::OpAttrs{{}, {kernels::OpAttrs::Bits(0.25f)}});
  auto keep = ChooseElementRule(kRepops, K(OpKind::kDropout), drop, 1, 3, std::vector<InputRef>{Node(0)},
                                std::vector<Shape>{{8}});
  ASSERT_TRUE(keep.ok()) << keep.status().ToString();
  EXPECT_TRUE(keep->opened_inputs.empty());
  auto dy = ChooseElementRule(kRepops, K(OpKind::kDropout), drop, 0, 3, std::vector<InputRef>{Node(0)},
                              std::vector<Shape>{{8}});
  ASSERT_TRUE(dy.ok()) << dy.status().ToString();
  EXPECT_EQ(dy->opened_inputs, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(dy->own_slots, (std::vector<std::uint32_t>{1}));
}

TEST(ElementGameRules, FirstDifferingSlotWalksTheSlotsOtherRulesReadFirst) {
  const auto rec = [](std::uint16_t op, std::vector<std::uint8_t> tags) {
    protocol::NodeRecord r;
    r.op_kind = op;
    for (std::uint8_t t : tags) {
      Hash256 h{};
      h.bytes[0] = t;
      r.output_hashes.push_back(h);
    }
    return r;
  };
  const auto att = K(OpKind::kAttention);
  // Both y and att differ: att (slot 1) is walked, so y's rule reads an agreed att.
  EXPECT_EQ(*FirstDifferingSlot(att, rec(att, {1, 1}), rec(att, {2, 2})), 1u);
  EXPECT_EQ(*FirstDifferingSlot(att, rec(att, {1, 1}), rec(att, {2, 1})), 0u);
  const auto clip = K(OpKind::kClipGradNorm);
  EXPECT_EQ(*FirstDifferingSlot(clip, rec(clip, {1, 1, 1}), rec(clip, {2, 1, 2})), 2u);  // the norm
  EXPECT_EQ(*FirstDifferingSlot(clip, rec(clip, {1, 1, 1}), rec(clip, {1, 2, 1})), 1u);
  const auto lin = K(OpKind::kLinearBackward);
  EXPECT_EQ(*FirstDifferingSlot(lin, rec(lin, {1, 1, 1}), rec(lin, {1, 2, 2})), 1u);
  EXPECT_EQ(FirstDifferingSlot(lin, rec(lin, {1, 1}), rec(lin, {1, 1})).status().reason(), "elem-same-outputs");
}

TEST(ElementGameRules, UnreadSlicesTakeNoChunk) {
  const kernels::Tensor t({300}, std::vector<float>(300, 1.5f));
  auto none = VerifySlice(t.Hash(), t.shape(), InputSlice{0, 0, {300}}, {});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(OpenSlice(t, InputSlice{0, 0, {300}}).empty());
  EXPECT_EQ(VerifySlice(t.Hash(), t.shape(), InputSlice{0, 0, {300}}, OpenSlice(t, InputSlice{0, 1, {1}}))
                .status()
                .reason(),
            "elem-bad-slice");
}

// Attack: a one-ulp cheat in clip_grad_norm's g' and dropout's y and keep
// is caught by the referee's final move (own-output slices, unread inputs,
// the node's RNG address), every value; the honest value always wins.
TEST(ElementGameRules, OneUlpCheatsInOwnOutputAndRngRulesAreCaught) {
  std::mt19937 rng(11);
  const RngAddress at{0x5eed, 5, 17};
  const kernels::OpAttrs clip_attrs = kernels::ClipGradNormAttrs(0.5f);
  const std::vector<kernels::Tensor> gs = {Random(rng, {7}), Random(rng, {300}), Random(rng, {3, 4})};
  const std::vector<kernels::Tensor> clipped = RunNode(OpKind::kClipGradNorm, clip_attrs, gs, at);
  ASSERT_EQ(clipped.size(), 4u);
  const kernels::OpAttrs drop_attrs{{}, {kernels::OpAttrs::Bits(0.3f)}};
  const std::vector<kernels::Tensor> x = {Random(rng, {600})};
  const std::vector<kernels::Tensor> dropped = RunNode(OpKind::kDropout, drop_attrs, x, at);
  ASSERT_EQ(dropped.size(), 2u);
  struct Case {
    OpKind op;
    const kernels::OpAttrs* attrs;
    const std::vector<kernels::Tensor>* in;
    const std::vector<kernels::Tensor>* out;
    std::uint32_t slot;
  };
  const Case cases[] = {{OpKind::kClipGradNorm, &clip_attrs, &gs, &clipped, 0},
                        {OpKind::kClipGradNorm, &clip_attrs, &gs, &clipped, 1},
                        {OpKind::kClipGradNorm, &clip_attrs, &gs, &clipped, 2},
                        {OpKind::kDropout, &drop_attrs, &x, &dropped, 0},
                        {OpKind::kDropout, &drop_attrs, &x, &dropped, 1}};
  int checked = 0;
  for (const Case& c : cases) {
    const Bytes attrs = EncodeToBytes(*c.attrs);
    const kernels::Tensor& y = (*c.out)[c.slot];
    for (std::int64_t e = 0; e < y.numel(); e += 1 + e % 5) {
      const float honest = y.values()[static_cast<std::size_t>(e)];
      for (bool cheater_is_a : {true, false}) {
        const float a = cheater_is_a ? OneUlp(honest) : honest, b = cheater_is_a ? honest : OneUlp(honest);
        auto v = PlayOpenElement(K(c.op), attrs, c.slot, e, *c.in, *c.out, at, a, b);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        EXPECT_EQ(v->a_right, !cheater_is_a) << K(c.op) << " slot " << c.slot << " value " << e;
        EXPECT_EQ(v->b_right, cheater_is_a) << K(c.op) << " slot " << c.slot << " value " << e;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
  // The keep mask at another node's address is not this node's: a referee
  // that re-executed without the node's address would side with a cheater.
  const RngAddress other{at.seed, at.step, at.node + 1};
  int differ = 0;
  for (std::int64_t e = 0; e < 600; ++e) {
    const float k = dropped[1].values()[static_cast<std::size_t>(e)];
    auto v = PlayOpenElement(K(OpKind::kDropout), EncodeToBytes(drop_attrs), 1, e, x, dropped, other, k, OneUlp(k));
    ASSERT_TRUE(v.ok());
    differ += v->a_right ? 0 : 1;
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace vt::verify
