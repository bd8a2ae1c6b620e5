// The registry as the referee sees it: stable OpKind values, canonical
// attributes, and RunOp rejecting every malformed node with Status::Invalid
// (never a crash) — wrong input counts, null inputs, hostile attributes,
// out-of-range indices, sizes that would overflow.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "common/encoding.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/registry.h"
#include "tests/kernels/ops/ops_cases.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

ExecConfig Repops(int threads = 2) {
  ExecConfig cfg;
  cfg.mode = Mode::kRepops;
  cfg.threads = threads;
  return cfg;
}

Tensor Filled(Shape s, float v = 0.5f) {
  const auto n = static_cast<std::size_t>(NumElements(s));
  return Tensor(std::move(s), std::vector<float>(n, v));
}

Status RunRepops(OpKind kind, const OpAttrs& attrs, const std::vector<const Tensor*>& in, RngAddress rng = {}) {
  return RunNode(Repops(), kind, attrs, in, rng).status;
}

void ExpectInvalid(const Status& s, const std::string& reason, const std::string& what) {
  EXPECT_TRUE(s.is_invalid()) << what << ": " << s.ToString();
  EXPECT_EQ(s.reason(), reason) << what << ": " << s.ToString();
}

// The protocol numbers. Changing one of these breaks every node record ever
// committed: add new kinds, never renumber.
TEST(OpRegistry, KindValuesAreStable) {
  const std::vector<std::pair<std::string, std::uint16_t>> expected = {
      {"matmul", 1},
      {"matmul_backward", 2},
      {"linear", 3},
      {"linear_backward", 4},
      {"conv2d", 10},
      {"conv2d_backward", 11},
      {"maxpool2d", 12},
      {"maxpool2d_backward", 13},
      {"avgpool2d", 14},
      {"avgpool2d_backward", 15},
      {"batchnorm2d_train", 20},
      {"batchnorm2d_eval", 21},
      {"batchnorm2d_backward", 22},
      {"layernorm", 23},
      {"layernorm_backward", 24},
      {"embedding", 30},
      {"embedding_backward", 31},
      {"relu", 40},
      {"relu_backward", 41},
      {"gelu", 42},
      {"gelu_backward", 43},
      {"dropout", 44},
      {"dropout_backward", 45},
      {"add", 46},
      {"add_backward", 47},
      {"softmax", 50},
      {"softmax_backward", 51},
      {"cross_entropy", 52},
      {"cross_entropy_backward", 53},
      {"attention", 60},
      {"attention_backward", 61},
      {"reshape", 70},
      {"transpose", 71},
      {"sum", 80},
      {"sum_backward", 81},
      {"mean", 82},
      {"mean_backward", 83},
      {"sgd", 90},
      {"adamw", 91},
      {"clip_grad_norm", 92},
      {"lr_schedule", 93},
  };
  ASSERT_EQ(AllOps().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(AllOps()[i].name, expected[i].first);
    EXPECT_EQ(static_cast<std::uint16_t>(AllOps()[i].kind), expected[i].second) << expected[i].first;
    Result<OpKind> k = OpKindFromValue(expected[i].second);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(OpKindName(*k), expected[i].first);
  }
}

TEST(OpRegistry, EveryOperatorIsExercisedByTheHarness) {
  std::set<OpKind> covered;
  for (const OpCase& c : AllCases()) {
    covered.insert(c.kind);
    if (c.grad) covered.insert(c.grad->backward);
  }
  for (const OpInfo& info : AllOps()) EXPECT_TRUE(covered.count(info.kind)) << info.name << " has no test case";
}

TEST(OpRegistry, UnknownKindsRejected) {
  for (std::uint64_t v : {0ull, 5ull, 999ull, 65535ull, 65536ull, ~0ull}) {
    EXPECT_FALSE(OpKindFromValue(v).ok()) << v;
  }
  const Tensor x = Filled({2});
  ExpectInvalid(RunRepops(static_cast<OpKind>(999), {}, {&x}), "unknown-op", "kind 999");
  EXPECT_EQ(OpKindName(static_cast<OpKind>(999)), "unknown");
  EXPECT_EQ(OpFlops(static_cast<OpKind>(999), {}, {}), 0u);
}

TEST(OpRegistry, WrongInputCountsRejected) {
  const Tensor x = Filled({2, 2});
  for (const OpInfo& info : AllOps()) {
    std::vector<const Tensor*> in(static_cast<std::size_t>(info.max_inputs) + 1, &x);
    ExpectInvalid(RunRepops(info.kind, {}, in), "bad-input-count", std::string(info.name) + " max+1");
    if (info.min_inputs > 0) {
      in.resize(static_cast<std::size_t>(info.min_inputs) - 1);
      ExpectInvalid(RunRepops(info.kind, {}, in), "bad-input-count", std::string(info.name) + " min-1");
    }
  }
}

TEST(OpRegistry, NullInputsRejected) {
  const Tensor x = Filled({2, 2});
  for (const OpInfo& info : AllOps()) {
    if (info.min_inputs == 0) continue;
    std::vector<const Tensor*> in(static_cast<std::size_t>(info.min_inputs), &x);
    in.back() = nullptr;
    ExpectInvalid(RunRepops(info.kind, {}, in), "null-input", std::string(info.name));
  }
}

// Every case with one extra integer attribute, or one extra float one, is a
// different (invalid) node: attribute counts are exact.
TEST(OpRegistry, WrongAttributeCountsRejected) {
  for (const OpCase& c : AllCases()) {
    const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), 1);
    OpAttrs more_ints = c.attrs, more_floats = c.attrs;
    more_ints.ints.push_back(2);  // 2, not 1: a reshape target [.., 1] would keep the element count
    more_floats.floats.push_back(OpAttrs::Bits(1.0f));
    const Status a = RunRepops(c.kind, more_ints, Pointers(inputs), c.rng);
    const Status b = RunRepops(c.kind, more_floats, Pointers(inputs), c.rng);
    EXPECT_TRUE(a.is_invalid()) << c.name << ": " << a.ToString();
    EXPECT_TRUE(b.is_invalid()) << c.name << ": " << b.ToString();
    EXPECT_EQ(b.reason(), "bad-attribute") << c.name;
  }
  OpAttrs too_many;
  too_many.ints.assign(kMaxAttrInts + 1, 1);
  const Tensor x = Filled({2});
  ExpectInvalid(RunRepops(OpKind::kReshape, too_many, {&x}), "bad-attribute", "17 ints");
}

TEST(OpRegistry, HostileAttributesRejected) {
  const Tensor img = Filled({1, 2, 4, 4}), w = Filled({3, 2, 3, 3}), vec2 = Filled({2});
  const Tensor x = Filled({2, 3}), qkv = Filled({1, 4, 12});
  const std::int64_t big = std::int64_t{1} << 40, huge = std::numeric_limits<std::int64_t>::max();
  struct Bad {
    std::string what;
    OpKind kind;
    OpAttrs attrs;
    std::vector<const Tensor*> in;
    std::string reason;
  };
  const std::vector<Bad> cases = {
      {"matmul trans=2", OpKind::kMatMul, {{2, 0}, {}}, {&x, &x}, "bad-attribute"},
      {"conv stride 0", OpKind::kConv2d, Conv2dAttrs({0, 1, 0, 0}), {&img, &w}, "bad-attribute"},
      {"conv stride -1", OpKind::kConv2d, Conv2dAttrs({-1, 1, 0, 0}), {&img, &w}, "bad-attribute"},
      {"conv pad -1", OpKind::kConv2d, Conv2dAttrs({1, 1, -1, 0}), {&img, &w}, "bad-attribute"},
      {"conv pad 2^40", OpKind::kConv2d, Conv2dAttrs({1, 1, big, 0}), {&img, &w}, "bad-attribute"},
      {"conv pad max", OpKind::kConv2d, Conv2dAttrs({1, 1, huge, huge}), {&img, &w}, "bad-attribute"},
      {"conv output too large", OpKind::kConv2d, Conv2dAttrs({1, 1, 1 << 20, 1 << 20}), {&img, &w}, "too-large"},
      {"conv kernel > input", OpKind::kConv2d, Conv2dAttrs({1, 1, 0, 0}), {&vec2, &w}, "shape-mismatch"},
      {"pool kernel 0", OpKind::kMaxPool2d, Pool2dAttrs({0, 2, 1, 1, 0, 0}), {&img}, "bad-attribute"},
      {"pool kernel 2^40", OpKind::kMaxPool2d, Pool2dAttrs({big, big, 1, 1, 0, 0}), {&img}, "bad-attribute"},
      {"pool pad > k/2", OpKind::kAvgPool2d, Pool2dAttrs({2, 2, 1, 1, 2, 0}), {&img}, "bad-attribute"},
      {"pool kernel > input", OpKind::kAvgPool2d, Pool2dAttrs({9, 9, 1, 1, 0, 0}), {&img}, "shape-mismatch"},
      {"pool stride max", OpKind::kMaxPool2d, Pool2dAttrs({2, 2, huge, 1, 0, 0}), {&img}, "bad-attribute"},
      {"attention heads 0", OpKind::kAttention, AttentionAttrs(0), {&qkv}, "bad-attribute"},
      {"attention heads 3", OpKind::kAttention, AttentionAttrs(3), {&qkv}, "bad-attribute"},
      {"attention heads max", OpKind::kAttention, AttentionAttrs(huge), {&qkv}, "bad-attribute"},
      {"attention heads -4", OpKind::kAttention, AttentionAttrs(-4), {&qkv}, "bad-attribute"},
      {"embedding V 0", OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(0), {&x, &vec2}, "bad-attribute"},
      {"reshape overflow", OpKind::kReshape, ReshapeAttrs({std::int64_t{1} << 32, std::int64_t{1} << 32}), {&x},
       "too-large"},
      {"reshape negative", OpKind::kReshape, ReshapeAttrs({-2, -3}), {&x}, "shape-mismatch"},
      {"reshape zero", OpKind::kReshape, ReshapeAttrs({0, 6}), {&x}, "shape-mismatch"},
      {"reshape count", OpKind::kReshape, ReshapeAttrs({7}), {&x}, "shape-mismatch"},
      {"reshape rank 0", OpKind::kReshape, ReshapeAttrs({}), {&x}, "bad-attribute"},
      {"transpose dim -1", OpKind::kTranspose, TransposeAttrs(-1, 0), {&x}, "bad-attribute"},
      {"transpose dim 2", OpKind::kTranspose, TransposeAttrs(0, 2), {&x}, "bad-attribute"},
      {"sum axis 2", OpKind::kSum, ReduceAttrs(2), {&x}, "bad-attribute"},
      {"mean axis -2", OpKind::kMean, ReduceAttrs(-2), {&x}, "bad-attribute"},
      {"dropout p 1", OpKind::kDropout, DropoutAttrs(1.0f), {&x}, "bad-attribute"},
      {"dropout p -0.1", OpKind::kDropout, DropoutAttrs(-0.1f), {&x}, "bad-attribute"},
      {"dropout p NaN", OpKind::kDropout, DropoutAttrs(kNaN), {&x}, "bad-attribute"},
      {"layernorm eps 0", OpKind::kLayerNorm, LayerNormAttrs(0.0f), {&x, &vec2, &vec2}, "bad-attribute"},
      {"layernorm eps NaN", OpKind::kLayerNorm, LayerNormAttrs(kNaN), {&x, &vec2, &vec2}, "bad-attribute"},
      {"batchnorm momentum 2", OpKind::kBatchNorm2dTrain, BatchNormAttrs({1e-5f, 2.0f}),
       {&img, &vec2, &vec2, &vec2, &vec2}, "bad-attribute"},
      {"batchnorm eps inf", OpKind::kBatchNorm2dEval, BatchNormAttrs({kInf, 0.1f}), {&img, &vec2, &vec2, &vec2, &vec2},
       "bad-attribute"},
      {"sgd nesterov 2", OpKind::kSgd, {{2}, {OpAttrs::Bits(0.9f), 0}}, {&x, &x, &x, &vec2}, "bad-attribute"},
      {"sgd nesterov without momentum", OpKind::kSgd, SgdAttrs({0.0f, 0.0f, true}), {&x, &x, &x, &vec2},
       "bad-attribute"},
      {"sgd weight decay NaN", OpKind::kSgd, SgdAttrs({0.9f, kNaN, false}), {&x, &x, &x, &vec2}, "bad-attribute"},
      {"adamw step 0", OpKind::kAdamW, AdamWAttrs({0.9f, 0.999f, 1e-8f, 0.0f, 0}), {&x, &x, &x, &x, &vec2},
       "bad-attribute"},
      {"adamw step max", OpKind::kAdamW, AdamWAttrs({0.9f, 0.999f, 1e-8f, 0.0f, huge}), {&x, &x, &x, &x, &vec2},
       "bad-attribute"},
      {"adamw beta 1", OpKind::kAdamW, AdamWAttrs({1.0f, 0.999f, 1e-8f, 0.0f, 1}), {&x, &x, &x, &x, &vec2},
       "bad-attribute"},
      {"adamw eps -1", OpKind::kAdamW, AdamWAttrs({0.9f, 0.999f, -1.0f, 0.0f, 1}), {&x, &x, &x, &x, &vec2},
       "bad-attribute"},
      {"clip max_norm 0", OpKind::kClipGradNorm, ClipGradNormAttrs(0.0f), {&x}, "bad-attribute"},
      {"clip max_norm inf", OpKind::kClipGradNorm, ClipGradNormAttrs(kInf), {&x}, "bad-attribute"},
      {"lr kind 7", OpKind::kLrSchedule, {{7, 0, 0, 0}, {OpAttrs::Bits(1.0f), 0}}, {}, "bad-attribute"},
      {"lr step -1", OpKind::kLrSchedule, {{1, -1, 0, 10}, {OpAttrs::Bits(1.0f), 0}}, {}, "bad-attribute"},
      {"lr warmup max", OpKind::kLrSchedule, {{1, 0, huge, 10}, {OpAttrs::Bits(1.0f), 0}}, {}, "bad-attribute"},
      {"lr base NaN", OpKind::kLrSchedule, {{1, 0, 0, 10}, {OpAttrs::Bits(kNaN), 0}}, {}, "bad-attribute"},
  };
  for (const Bad& b : cases) ExpectInvalid(RunRepops(b.kind, b.attrs, b.in), b.reason, b.what);
}

TEST(OpRegistry, HostileSizesRejected) {
  // Embedding backward with a table of 2^40 × 2 rows would need 8 TiB.
  const Tensor idx = Filled({3}, 1.0f), dy = Filled({3, 2});
  ExpectInvalid(RunRepops(OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(std::int64_t{1} << 40), {&dy, &idx}),
                "too-large", "embedding V 2^40");
  ExpectInvalid(RunRepops(OpKind::kEmbeddingBackward,
                          EmbeddingBackwardAttrs(std::numeric_limits<std::int64_t>::max()), {&dy, &idx}),
                "too-large", "embedding V max");
  // Attention probabilities B·H·T·T beyond the limit: T = 2^16 needs 2^32·H values.
  Result<Tensor> long_seq = Tensor::FromValues({1, 1 << 16, 3}, std::vector<float>(3u << 16, 0.0f));
  ASSERT_TRUE(long_seq.ok());
  ExpectInvalid(RunRepops(OpKind::kAttention, AttentionAttrs(1), {&*long_seq}), "too-large", "attention T 2^16");
}

TEST(OpRegistry, OutOfRangeIndicesRejected) {
  const Tensor table = Filled({5, 3});
  const Tensor logits = Filled({2, 5});
  for (float bad : {5.0f, -1.0f, 0.5f, 2.25f, kNaN, kInf, -kInf, 1e30f}) {
    const Tensor idx({2}, {1.0f, bad});
    ExpectInvalid(RunRepops(OpKind::kEmbedding, {}, {&idx, &table}), "bad-index", "embedding " + std::to_string(bad));
    const Tensor dy = Filled({2, 3});
    ExpectInvalid(RunRepops(OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(5), {&dy, &idx}), "bad-index",
                  "embedding backward " + std::to_string(bad));
    ExpectInvalid(RunRepops(OpKind::kCrossEntropy, {}, {&logits, &idx}), "bad-index", "labels " + std::to_string(bad));
    const Tensor dloss = Filled({1}, 1.0f);
    ExpectInvalid(RunRepops(OpKind::kCrossEntropyBackward, {}, {&dloss, &logits, &idx}), "bad-index",
                  "labels backward " + std::to_string(bad));
  }
  // -0.0 is the integer 0: accepted.
  const Tensor neg_zero({2}, {-0.0f, 4.0f});
  EXPECT_TRUE(RunRepops(OpKind::kEmbedding, {}, {&neg_zero, &table}).ok());
}

TEST(OpRegistry, RoundedModeNeedsARoundingState) {
  ExecConfig cfg;
  cfg.mode = Mode::kRounded;
  OpContext ctx(cfg, nullptr);
  const Tensor x = Filled({4});
  std::vector<Tensor> out;
  const Tensor* in[] = {&x};
  const Status s = RunOp(ctx, OpKind::kRelu, {}, in, out);
  EXPECT_TRUE(s.is_error()) << s.ToString();
  EXPECT_TRUE(out.empty());
}

TEST(OpRegistry, FailureLeavesOutputsUntouched) {
  const Tensor x = Filled({2, 3}), w = Filled({4, 5});
  std::vector<Tensor> out = {Filled({7}, 7.0f)};
  ExecConfig cfg = Repops();
  OpContext ctx(cfg);
  const Tensor* in[] = {&x, &w};
  EXPECT_TRUE(RunOp(ctx, OpKind::kLinear, {}, in, out).is_invalid());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0], 7.0f);
}

TEST(OpRegistry, AttributesEncodeCanonically) {
  const OpAttrs a = AdamWAttrs({0.9f, 0.999f, 1e-8f, 0.01f, 3});
  const Bytes bytes = EncodeToBytes(a);
  // varint 1, i64 3; varint 4, then four u32 bit patterns, little-endian.
  EXPECT_EQ(ToHex(bytes), "01" "0300000000000000" "04" "6666663f" "77be7f3f" "77cc2b32" "0ad7233c");
  Result<OpAttrs> back = DecodeExact<OpAttrs>(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, a);
  EXPECT_EQ(back->Float(0), 0.9f);
  // Negative integers round-trip (reduction axis -1).
  Result<OpAttrs> axis = DecodeExact<OpAttrs>(EncodeToBytes(ReduceAttrs(kReduceAll)));
  ASSERT_TRUE(axis.ok());
  EXPECT_EQ(axis->ints, std::vector<std::int64_t>{-1});

  Bytes trailing = bytes;
  trailing.push_back(0);
  EXPECT_EQ(DecodeExact<OpAttrs>(trailing).status().reason(), "enc-trailing-bytes");
  Bytes truncated(bytes.begin(), bytes.end() - 1);
  EXPECT_EQ(DecodeExact<OpAttrs>(truncated).status().reason(), "enc-truncated");
  Writer w;
  w.PutVarint(kMaxAttrInts + 1);
  EXPECT_EQ(DecodeExact<OpAttrs>(w.bytes()).status().reason(), "enc-length-over-cap");
}

TEST(OpRegistry, FlopEstimates) {
  for (const OpCase& c : AllCases()) {
    std::vector<Shape> shapes;
    for (const InputSpec& s : c.inputs) shapes.push_back(s.shape);
    EXPECT_GT(OpFlops(c.kind, c.attrs, shapes), 0u) << c.name;
  }
  // linear [8·128, 256] × [768, 256]ᵀ: 2·1024·768·256 multiply-adds.
  const std::vector<Shape> lin = {{8, 128, 256}, {768, 256}, {768}};
  EXPECT_EQ(OpFlops(OpKind::kLinear, {}, lin), 2ull * 1024 * 768 * 256);
  // Hostile shapes saturate or give zero; nothing crashes.
  const std::int64_t big = std::int64_t{1} << 62;
  const std::vector<Shape> hostile = {{big, big, big}, {big, big}, {-5, big}, {}};
  for (const OpInfo& info : AllOps()) {
    const std::uint64_t f = OpFlops(info.kind, Conv2dAttrs({1, 1, big, big}), hostile);
    (void)f;
    (void)OpFlops(info.kind, {}, {});
    (void)OpFlops(info.kind, {{-1, -2}, {}}, std::vector<Shape>(4, Shape{-3, 0}));
  }
  EXPECT_EQ(OpFlops(OpKind::kLinear, {}, hostile), std::numeric_limits<std::uint64_t>::max());
}

// ---- dropout masks -----------------------------------------------------------------------

TEST(OpDropout, MaskIsAPureFunctionOfTheAddressAndIdenticalInEveryMode) {
  const Tensor x = Filled({250, 400}, 1.0f);
  const RngAddress rng{vt::test::TestSeed(), 12, 34};
  std::vector<Tensor> keeps;
  for (Mode mode : {Mode::kNative, Mode::kRepops, Mode::kRounded}) {
    ExecConfig cfg = Repops(3);
    cfg.mode = mode;
    const RunResult r = RunNode(cfg, OpKind::kDropout, DropoutAttrs(0.3f), {&x}, rng);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    keeps.push_back(r.outputs[1]);
  }
  EXPECT_TRUE(keeps[0].BitwiseEqual(keeps[1]));
  EXPECT_TRUE(keeps[0].BitwiseEqual(keeps[2]));
  double kept = 0;
  for (float k : keeps[0].values()) kept += k;
  const double fraction = kept / static_cast<double>(x.numel());
  EXPECT_NEAR(fraction, 0.7, 0.01);  // 100 000 Bernoulli(0.7): σ ≈ 0.0015
  for (std::int64_t e : {0, 1, 4, 99999}) {
    EXPECT_EQ(keeps[0][e] != 0.0f, DropoutKeep(rng.seed, 12, 34, static_cast<std::uint64_t>(e), 0.3f)) << e;
  }
  // Another node (or step) draws another mask.
  const RunResult other = RunNode(Repops(), OpKind::kDropout, DropoutAttrs(0.3f), {&x}, RngAddress{rng.seed, 12, 35});
  ASSERT_TRUE(other.status.ok());
  EXPECT_FALSE(other.outputs[1].BitwiseEqual(keeps[0]));
  // Step and node are 32-bit Philox counter words.
  ExpectInvalid(RunNode(Repops(), OpKind::kDropout, DropoutAttrs(0.3f), {&x}, RngAddress{1, 1ull << 32, 0}).status,
                "bad-rng-address", "step 2^32");
}

TEST(OpOptim, AdamWBiasCorrectionAtLargeSteps) {
  // β^t by binary exponentiation: 40 multiplications at t = 10^12, and the
  // correction tends to 1 (the update to the plain Adam direction).
  const Tensor p = Filled({3}, 1.0f), g = Filled({3}, 0.5f), m = Filled({3}, 0.1f), v = Filled({3}, 0.04f);
  const Tensor lr = Filled({1}, 0.01f);
  const RunResult r = RunNode(Repops(), OpKind::kAdamW, AdamWAttrs({0.9f, 0.999f, 1e-8f, 0.0f, 1000000000000}),
                          {&p, &g, &m, &v, &lr}, {});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const double nm = 0.9 * 0.1 + 0.1 * 0.5, nv = 0.999 * 0.04 + 0.001 * 0.25;
  EXPECT_NEAR(r.outputs[0][0], 1.0 - 0.01 * nm / (std::sqrt(nv) + 1e-8), 1e-6);
}

}  // namespace
}  // namespace vt::kernels::testing
