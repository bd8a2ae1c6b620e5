// Model and optimizer specs: canonical encodings, hostile specs, presets,
// state layout and deterministic initialisation.

#include "kernels/graph/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <set>

#include "common/philox.h"
#include "common/random.h"
#include "tests/kernels/graph/graph_test_util.h"
#include "tests/support/test_seed.h"
#include "tests/kernels/values_hash.h"

namespace vt::kernels::graph {
namespace {

using test::Preset;

std::uint32_t Bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// ---- encodings ------------------------------------------------------------------

TEST(ModelSpec, EveryPresetRoundTrips) {
  for (std::string_view name : ModelPresetNames()) {
    SCOPED_TRACE(std::string(name));
    const auto model = ModelPreset(name);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const Bytes bytes = EncodeModelSpec(*model);
    const auto back = DecodeModelSpec(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, *model);
    EXPECT_EQ(EncodeModelSpec(*back), bytes);
  }
}

TEST(ModelSpec, GoldenBytes) {
  // version 1, family 0 (mlp), input 16, hidden [32], classes 4, relu.
  EXPECT_EQ(ToHex(EncodeModelSpec(Preset("mlp-tiny"))), "01001001200400");
  // version 1, family 2 (gpt), vocab 256 (0x80 0x02), context 32, 2 layers,
  // 2 heads, d 64, dropout 0.1f = 0x3dcccccd little-endian.
  EXPECT_EQ(ToHex(EncodeModelSpec(Preset("gpt-tiny"))), "0102800220020240cdcccc3d");
  // version 1, family 1 (cnn), 1x8x8, 4 channels, 1 block, pool, 4 classes.
  EXPECT_EQ(ToHex(EncodeModelSpec(Preset("cnn-tiny"))),
            "0101010808040101"
            "04");
}

TEST(ModelSpec, UnknownPresetIsRejected) {
  const auto m = ModelPreset("gpt-huge");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().reason(), "model-unknown-preset");
}

std::string DecodeReason(const Bytes& bytes) {
  const auto r = DecodeModelSpec(bytes);
  return r.ok() ? "ok" : r.status().reason();
}

Bytes GptBytes(std::uint64_t vocab, std::uint64_t context, std::uint64_t layers, std::uint64_t heads,
               std::uint64_t d, std::uint32_t dropout_bits) {
  Writer w;
  w.PutVarint(1);
  w.PutVarint(2);
  w.PutVarint(vocab);
  w.PutVarint(context);
  w.PutVarint(layers);
  w.PutVarint(heads);
  w.PutVarint(d);
  w.PutU32(dropout_bits);
  return std::move(w).Take();
}

Bytes MlpBytes(std::uint64_t input, std::vector<std::uint64_t> hidden, std::uint64_t classes,
               std::uint64_t act) {
  Writer w;
  w.PutVarint(1);
  w.PutVarint(0);
  w.PutVarint(input);
  w.PutVector(hidden, &Writer::PutVarint);
  w.PutVarint(classes);
  w.PutVarint(act);
  return std::move(w).Take();
}

Bytes CnnBytes(std::uint64_t c, std::uint64_t h, std::uint64_t w_, std::uint64_t ch, std::uint64_t blocks,
               std::uint8_t pool, std::uint64_t classes) {
  Writer w;
  w.PutVarint(1);
  w.PutVarint(1);
  for (std::uint64_t v : {c, h, w_, ch, blocks}) w.PutVarint(v);
  w.PutU8(pool);
  w.PutVarint(classes);
  return std::move(w).Take();
}

TEST(ModelSpec, HandBuiltEncodingsMatchTheEncoder) {
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, Bits(0.1f))), "ok");
  EXPECT_EQ(GptBytes(256, 32, 2, 2, 64, Bits(0.1f)), EncodeModelSpec(Preset("gpt-tiny")));
  EXPECT_EQ(MlpBytes(784, {128}, 10, 0), EncodeModelSpec(Preset("mlp-fashion")));
  EXPECT_EQ(CnnBytes(1, 28, 28, 16, 2, 1, 10), EncodeModelSpec(Preset("cnn-fashion")));
}

TEST(ModelSpec, HostileSpecsAreRejectedWithStableReasons) {
  const std::uint64_t kBig = std::uint64_t{1} << 20;
  Bytes trailing = EncodeModelSpec(Preset("mlp-tiny"));
  trailing.push_back(0);
  EXPECT_EQ(DecodeReason(trailing), "enc-trailing-bytes");
  Bytes version = EncodeModelSpec(Preset("mlp-tiny"));
  version[0] = 2;
  EXPECT_EQ(DecodeReason(version), "model-bad-version");
  Bytes family = EncodeModelSpec(Preset("mlp-tiny"));
  family[1] = 3;
  EXPECT_EQ(DecodeReason(family), "enc-unknown-enum");
  // Non-minimal varint for input_dim 16: 0x90 0x00.
  EXPECT_EQ(DecodeReason({0x01, 0x00, 0x90, 0x00, 0x01, 0x20, 0x04, 0x00}), "enc-non-minimal-varint");

  EXPECT_EQ(DecodeReason(MlpBytes(0, {8}, 4, 0)), "model-bad-dim");
  EXPECT_EQ(DecodeReason(MlpBytes(kBig + 1, {8}, 4, 0)), "model-bad-dim");
  EXPECT_EQ(DecodeReason(MlpBytes(std::numeric_limits<std::uint64_t>::max(), {8}, 4, 0)), "model-bad-dim");
  EXPECT_EQ(DecodeReason(MlpBytes(8, {8}, 1, 0)), "model-bad-dim");  // one class
  EXPECT_EQ(DecodeReason(MlpBytes(8, {0}, 4, 0)), "model-bad-dim");
  EXPECT_EQ(DecodeReason(MlpBytes(8, std::vector<std::uint64_t>(65, 8), 4, 0)), "enc-length-over-cap");
  EXPECT_EQ(DecodeReason(MlpBytes(8, std::vector<std::uint64_t>(64, 8), 4, 0)), "ok");
  EXPECT_EQ(DecodeReason(MlpBytes(8, {8}, 4, 2)), "enc-unknown-enum");
  // 2^20 × 2^20 weights: every dimension is allowed, the total is not.
  EXPECT_EQ(DecodeReason(MlpBytes(kBig, {kBig}, 4, 0)), "model-too-large");
  EXPECT_EQ(DecodeReason(MlpBytes(kBig, {2047}, 4, 0)), "ok");  // just under 2^31 elements
  EXPECT_EQ(DecodeReason(MlpBytes(kBig, {2048}, 4, 0)), "model-too-large");

  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 3, 64, 0)), "model-bad-heads");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 0, 64, 0)), "model-bad-heads");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 128, 64, 0)), "model-bad-heads");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 0, 2, 64, 0)), "model-too-deep");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 65, 1, 64, 0)), "model-too-deep");
  EXPECT_EQ(DecodeReason(GptBytes(1, 32, 2, 2, 64, 0)), "model-bad-dim");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 1, 1, kBig / 2, 0)), "model-bad-dim");  // 4·d over the cap
  EXPECT_EQ(DecodeReason(GptBytes(50257, kBig, 1, 1, 2048, 0)), "model-too-large");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, Bits(1.0f))), "model-bad-dropout");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, Bits(-0.1f))), "model-bad-dropout");
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, 0x80000000u)), "model-bad-dropout");  // −0
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, 0x7fc00000u)), "model-bad-dropout");  // NaN
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, 0x7f800000u)), "model-bad-dropout");  // +inf
  EXPECT_EQ(DecodeReason(GptBytes(256, 32, 2, 2, 64, Bits(0.999f))), "ok");

  EXPECT_EQ(DecodeReason(CnnBytes(1, 1, 8, 4, 1, 1, 4)), "model-bad-shape");  // pool on height 1
  EXPECT_EQ(DecodeReason(CnnBytes(1, 1, 8, 4, 1, 0, 4)), "ok");
  EXPECT_EQ(DecodeReason(CnnBytes(1, 8, 8, 4, 1, 2, 4)), "enc-bad-bool");
  EXPECT_EQ(DecodeReason(CnnBytes(1, 8, 8, 4, 65, 1, 4)), "model-too-deep");
  EXPECT_EQ(DecodeReason(CnnBytes(1, 8, 8, 0, 1, 1, 4)), "model-bad-dim");

  // Every strict prefix of a valid encoding is truncated.
  const Bytes good = EncodeModelSpec(Preset("gpt2-small"));
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(DecodeReason(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))),
              "enc-truncated")
        << n;
  }
}

// Random byte mutations: never a crash, and whatever decodes re-encodes to
// exactly the same bytes (one value, one encoding).
TEST(ModelSpec, MutatedEncodingsAreCanonicalOrRejected) {
  PhiloxStream s(vt::test::TestSeed(), 1, 0);
  std::vector<Bytes> seeds;
  for (std::string_view name : ModelPresetNames()) seeds.push_back(EncodeModelSpec(*ModelPreset(name)));
  seeds.push_back(EncodeOptimizerSpec(OptimizerSpec{}));
  int accepted = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Bytes b = seeds[NextUniformInt(s, seeds.size())];
    const int edits = 1 + static_cast<int>(NextUniformInt(s, 3));
    for (int e = 0; e < edits; ++e) {
      const std::uint64_t op = NextUniformInt(s, 3);
      const std::size_t pos = NextUniformInt(s, b.size());
      if (op == 0) {
        b[pos] = static_cast<std::uint8_t>(NextUniformInt(s, 256));
      } else if (op == 1) {
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(pos));
        if (b.empty()) b.push_back(1);
      } else {
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(pos),
                 static_cast<std::uint8_t>(NextUniformInt(s, 256)));
      }
    }
    if (const auto m = DecodeModelSpec(b); m.ok()) {
      ++accepted;
      EXPECT_EQ(EncodeModelSpec(*m), b);
      EXPECT_TRUE(ValidateModelSpec(*m).ok());
    }
    if (const auto o = DecodeOptimizerSpec(b); o.ok()) {
      ++accepted;
      EXPECT_EQ(EncodeOptimizerSpec(*o), b);
    }
  }
  EXPECT_GT(accepted, 0);  // the mutations do reach the semantic checks
}

std::string OptReason(const OptimizerSpec& o) {
  const auto r = DecodeOptimizerSpec(EncodeOptimizerSpec(o));
  if (r.ok()) {
    EXPECT_EQ(*r, o);
    return "ok";
  }
  EXPECT_EQ(ValidateOptimizerSpec(o).reason(), r.status().reason());
  return r.status().reason();
}

TEST(OptimizerSpec, RoundTripsAndGoldenBytes) {
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.lr = 0.1f;
  sgd.momentum = 0.9f;
  sgd.nesterov = true;
  sgd.schedule = LrScheduleKind::kCosine;
  sgd.warmup_steps = 10;
  sgd.total_steps = 1000;
  sgd.clip_norm = 1.0f;
  EXPECT_EQ(OptReason(sgd), "ok");
  EXPECT_EQ(OptReason(OptimizerSpec{}), "ok");
  // version, kind adamw, lr 1e-3, min_lr 0, constant, 0, 0, momentum 0, no
  // nesterov, 0.9, 0.999, 1e-8, wd 0, clip 0.
  EXPECT_EQ(ToHex(EncodeOptimizerSpec(OptimizerSpec{})),
            "0101"
            "6f12833a"
            "00000000"
            "00"
            "00"
            "00"
            "00000000"
            "00"
            "6666663f"
            "77be7f3f"
            "77cc2b32"
            "00000000"
            "00000000");
}

TEST(OptimizerSpec, HostileSpecsAreRejected) {
  const auto with = [](auto edit) {
    OptimizerSpec o;
    edit(o);
    return OptReason(o);
  };
  EXPECT_EQ(with([](OptimizerSpec& o) { o.lr = std::nanf(""); }), "optim-bad-lr");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.lr = -1.0f; }), "optim-bad-lr");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.lr = -0.0f; }), "optim-bad-lr");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.min_lr = INFINITY; }), "optim-bad-lr");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.momentum = 1.5f; }), "optim-bad-momentum");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.nesterov = true; }), "optim-bad-momentum");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.beta1 = 1.0f; }), "optim-bad-beta");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.beta2 = -0.5f; }), "optim-bad-beta");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.eps = 0.0f; }), "optim-bad-eps");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.weight_decay = -0.0f; }), "optim-bad-weight-decay");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.clip_norm = INFINITY; }), "optim-bad-clip");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.clip_norm = -1.0f; }), "optim-bad-clip");
  EXPECT_EQ(with([](OptimizerSpec& o) { o.warmup_steps = -1; }), "optim-bad-schedule");

  Bytes b = EncodeOptimizerSpec(OptimizerSpec{});
  b[0] = 0;
  EXPECT_EQ(DecodeOptimizerSpec(b).status().reason(), "optim-bad-version");
  b = EncodeOptimizerSpec(OptimizerSpec{});
  b[10] = 3;  // schedule
  EXPECT_EQ(DecodeOptimizerSpec(b).status().reason(), "enc-unknown-enum");
  // warmup 2^62 + 1 as a varint.
  Writer w;
  w.PutVarint(1);
  w.PutVarint(1);
  w.PutU32(Bits(1e-3f));
  w.PutU32(0);
  w.PutVarint(0);
  w.PutVarint((std::uint64_t{1} << 62) + 1);
  EXPECT_EQ(DecodeOptimizerSpec(w.bytes()).status().reason(), "optim-bad-schedule");
}

// ---- state layout -----------------------------------------------------------------

TEST(ParamSpecs, SortedUniqueAndCounted) {
  for (std::string_view name : ModelPresetNames()) {
    SCOPED_TRACE(std::string(name));
    const auto specs = ParamSpecs(*ModelPreset(name));
    ASSERT_TRUE(specs.ok());
    for (std::size_t i = 1; i < specs->size(); ++i) EXPECT_LT((*specs)[i - 1].name, (*specs)[i].name);
  }
  EXPECT_EQ(*ParameterCount(Preset("gpt2-small")), 124439808u);  // GPT-2 small, tied head
  EXPECT_EQ(*ParameterCount(Preset("mlp-fashion")), 784u * 128 + 128 + 128 * 10 + 10);
  // cnn-tiny: stem 4·1·9 + bn 2·4, block 2·(4·4·9 + 2·4), head 4·4 + 4.
  EXPECT_EQ(*ParameterCount(Preset("cnn-tiny")), 36u + 8 + 2 * (144 + 8) + 20);
}

TEST(ParamSpecs, GptLayoutFollowsGpt2Names) {
  const auto specs = *ParamSpecs(Preset("gpt-tiny"));
  std::vector<std::string> names;
  for (const auto& s : specs) names.push_back(s.name);
  const std::vector<std::string> want = {
      "h.0.attn.proj.bias", "h.0.attn.proj.weight", "h.0.attn.qkv.bias", "h.0.attn.qkv.weight",
      "h.0.ln_1.bias",      "h.0.ln_1.weight",      "h.0.ln_2.bias",     "h.0.ln_2.weight",
      "h.0.mlp.fc.bias",    "h.0.mlp.fc.weight",    "h.0.mlp.proj.bias", "h.0.mlp.proj.weight",
      "h.1.attn.proj.bias", "h.1.attn.proj.weight", "h.1.attn.qkv.bias", "h.1.attn.qkv.weight",
      "h.1.ln_1.bias",      "h.1.ln_1.weight",      "h.1.ln_2.bias",     "h.1.ln_2.weight",
      "h.1.mlp.fc.bias",    "h.1.mlp.fc.weight",    "h.1.mlp.proj.bias", "h.1.mlp.proj.weight",
      "ln_f.bias",          "ln_f.weight",          "wpe.weight",        "wte.weight"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(specs[3].shape, (Shape{192, 64}));  // qkv [3C, C]
  EXPECT_EQ(specs.back().shape, (Shape{256, 64}));
  EXPECT_EQ(specs[1].init.kind, InitKind::kNormal);
  EXPECT_EQ(specs[1].init.scale, static_cast<float>(0.02 / std::sqrt(4.0)));  // residual projection
}

TEST(StateSpecs, OptimizerStateIsNamedAndSorted) {
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::kSgd;
  const auto params = *ParamSpecs(Preset("cnn-tiny"));
  const auto with_sgd = *StateSpecs(Preset("cnn-tiny"), sgd);
  const auto with_adam = *StateSpecs(Preset("cnn-tiny"), OptimizerSpec{});
  std::size_t trainable = 0, buffers = 0;
  for (const auto& p : params) (p.role == TensorRole::kParameter ? trainable : buffers)++;
  EXPECT_EQ(buffers, 2u * 3);  // running mean and var of 3 batch norms
  EXPECT_EQ(with_sgd.size(), params.size() + trainable);
  EXPECT_EQ(with_adam.size(), params.size() + 2 * trainable);
  std::set<std::string> names;
  for (std::size_t i = 0; i < with_adam.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(with_adam[i - 1].name, with_adam[i].name);
    }
    names.insert(with_adam[i].name);
  }
  EXPECT_TRUE(names.count("opt.m.stem.conv.weight"));
  EXPECT_TRUE(names.count("opt.v.head.bias"));
  EXPECT_FALSE(names.count("opt.m.stem.bn.running_mean"));  // buffers have no optimizer state
}

// ---- initialisation -----------------------------------------------------------------

const Tensor& ByName(const NamedTensors& s, const std::string& name) {
  const auto it = std::find(s.names.begin(), s.names.end(), name);
  EXPECT_NE(it, s.names.end()) << name;
  return s.tensors[static_cast<std::size_t>(it - s.names.begin())];
}

TEST(InitState, DeterministicAcrossThreadsAndMatchesTheLayout) {
  for (const char* name : {"mlp-tiny", "cnn-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(name);
    const ModelSpec model = Preset(name);
    const auto specs = *StateSpecs(model, OptimizerSpec{});
    const auto a = InitState(model, OptimizerSpec{}, 42, 1);
    const auto b = InitState(model, OptimizerSpec{}, 42, 3);
    const auto c = InitState(model, OptimizerSpec{}, 43, 1);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    ASSERT_EQ(a->names.size(), specs.size());
    bool any_differs = false;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EXPECT_EQ(a->names[i], specs[i].name);
      EXPECT_EQ(a->tensors[i].shape(), specs[i].shape);
      EXPECT_TRUE(a->tensors[i].BitwiseEqual(b->tensors[i])) << specs[i].name;
      any_differs |= !a->tensors[i].BitwiseEqual(c->tensors[i]);
      const auto v = a->tensors[i].values();
      switch (specs[i].init.kind) {
        case InitKind::kZeros:
          EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 0.0f; })) << specs[i].name;
          break;
        case InitKind::kOnes:
          EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](float x) { return x == 1.0f; })) << specs[i].name;
          break;
        case InitKind::kUniform: {
          const float s = specs[i].init.scale;
          EXPECT_TRUE(std::all_of(v.begin(), v.end(), [s](float x) { return x >= -s && x < s; }))
              << specs[i].name;
          break;
        }
        case InitKind::kNormal: {
          // Box-Muller here is cut at |z| ≤ 5.77.
          const float s = specs[i].init.scale;
          EXPECT_TRUE(std::all_of(v.begin(), v.end(), [s](float x) { return std::fabs(x) <= 5.8f * s; }));
          break;
        }
      }
    }
    EXPECT_TRUE(any_differs);  // the seed matters
  }
}

TEST(InitState, ValuesComeFromTheDocumentedPhiloxStream) {
  const ModelSpec model = Preset("mlp-tiny");
  const auto state = *InitState(model, OptimizerSpec{}, 7);
  const auto params = *ParamSpecs(model);  // fc.0.bias, fc.0.weight, head.bias, head.weight
  ASSERT_EQ(params[1].name, "fc.0.weight");
  const Tensor& w = ByName(state, "fc.0.weight");
  const float bound = params[1].init.scale;
  EXPECT_EQ(bound, 0.25f);  // 1/sqrt(16)
  for (std::uint64_t e : {0u, 1u, 100u, 511u}) {
    const float u = UniformAt(PhiloxKeyFromSeed(7), kInitRngStep, 1, e);
    EXPECT_EQ(w[static_cast<std::int64_t>(e)], bound * (2.0f * u - 1.0f));
  }
  const ModelSpec gpt = Preset("gpt-tiny");
  const auto gs = *InitState(gpt, OptimizerSpec{}, 7);
  const auto gp = *ParamSpecs(gpt);
  ASSERT_EQ(gp.back().name, "wte.weight");
  const Tensor& wte = ByName(gs, "wte.weight");
  for (std::uint64_t e : {0u, 1u, 2u, 16383u}) {
    EXPECT_EQ(
        wte[static_cast<std::int64_t>(e)],
        0.02f * NormalAt(PhiloxKeyFromSeed(7), kInitRngStep, static_cast<std::uint32_t>(gp.size() - 1), e));
  }
}

// Golden tensor hashes: any change of init rules, streams or the normal
// sampler changes them (and with them every job's h_0).
TEST(InitState, GoldenHashes) {
  const auto mlp = *InitState(Preset("mlp-tiny"), OptimizerSpec{}, 42);
  const auto gpt = *InitState(Preset("gpt-tiny"), OptimizerSpec{}, 42);
  const auto cnn = *InitState(Preset("cnn-tiny"), OptimizerSpec{}, 42);
  EXPECT_EQ(kernels::testing::ValuesHash(ByName(mlp, "fc.0.weight")).Hex(),
            "9064a555fb079b9b9f0c14c9a651ea7d99387e74e4092a4b564751c0b7dcd5dc");
  EXPECT_EQ(kernels::testing::ValuesHash(ByName(mlp, "head.bias")).Hex(),
            "22cfd9582a417ba6c9fc95e0fe9950dcd7761ae8b67ea96d880c302c5c19411f");
  EXPECT_EQ(kernels::testing::ValuesHash(ByName(gpt, "wte.weight")).Hex(),
            "eb347d37b43517b62823dae0568fcdd1b209dacbddbb732db76fa56570ccc04a");
  EXPECT_EQ(kernels::testing::ValuesHash(ByName(gpt, "h.1.mlp.proj.weight")).Hex(),
            "d72b42baa2c3cd6127e5f6fd95b9a6ee88c645fbf9fa4654888ec48a3a316ed5");
  EXPECT_EQ(kernels::testing::ValuesHash(ByName(cnn, "blocks.0.conv2.weight")).Hex(),
            "3033fb80548fe2cbd53bd745704bb3b91b29bfc91725808044c430809111c280");
}

}  // namespace
}  // namespace vt::kernels::graph
