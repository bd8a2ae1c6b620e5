// Model and optimizer specifications, their canonical encodings, state
// layout and initialisation (docs/models.md).

#include "kernels/graph/model.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <new>

#include "common/philox.h"
#include "common/random.h"
#include "kernels/graph/executor.h"
#include "kernels/parallel.h"

namespace vt::kernels::graph {

namespace {

constexpr std::uint32_t kNegativeZeroBits = 0x80000000u;

// A float field of a consensus object: finite and never −0, so that bits ↔
// value is one-to-one (range checks then exclude the other negatives).
bool CanonicalFloat(float v) {
  return std::isfinite(v) && std::bit_cast<std::uint32_t>(v) != kNegativeZeroBits;
}

bool DimOk(std::int64_t d, std::int64_t min = 1) { return d >= min && d <= kMaxDim; }

Status BadDim(const std::string& what) { return Status::Invalid("model-bad-dim", what + " out of range"); }

// ---- parameter lists (unsorted, in architectural order) ----------------------

InitRule Zeros() { return {InitKind::kZeros, 0.0f}; }
InitRule Ones() { return {InitKind::kOnes, 0.0f}; }
InitRule Normal(float std) { return {InitKind::kNormal, std}; }
InitRule Uniform(float bound) { return {InitKind::kUniform, bound}; }

// 1/sqrt(n) from IEEE-exact operations (sqrt and division are correctly
// rounded), hence the same float everywhere.
float InvSqrt(std::int64_t n) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))); }

void AddParam(std::vector<TensorSpec>& out, std::string name, Shape shape, InitRule init,
              TensorRole role = TensorRole::kParameter) {
  out.push_back(TensorSpec{std::move(name), std::move(shape), role, init});
}

void MlpParams(const MlpSpec& m, std::vector<TensorSpec>& out) {
  std::int64_t in = m.input_dim;
  for (std::size_t i = 0; i < m.hidden.size(); ++i) {
    const std::string p = "fc." + std::to_string(i);
    const float bound = InvSqrt(in);  // PyTorch's default Linear init
    AddParam(out, p + ".weight", {m.hidden[i], in}, Uniform(bound));
    AddParam(out, p + ".bias", {m.hidden[i]}, Uniform(bound));
    in = m.hidden[i];
  }
  const float bound = InvSqrt(in);
  AddParam(out, "head.weight", {m.classes, in}, Uniform(bound));
  AddParam(out, "head.bias", {m.classes}, Uniform(bound));
}

void BatchNormParams(std::vector<TensorSpec>& out, const std::string& p, std::int64_t c) {
  AddParam(out, p + ".weight", {c}, Ones());
  AddParam(out, p + ".bias", {c}, Zeros());
  AddParam(out, p + ".running_mean", {c}, Zeros(), TensorRole::kBuffer);
  AddParam(out, p + ".running_var", {c}, Ones(), TensorRole::kBuffer);
}

void CnnParams(const CnnSpec& m, std::vector<TensorSpec>& out) {
  const std::int64_t c = m.channels;
  // Kaiming normal for ReLU: std = sqrt(2 / fan_in), fan_in = Cin·3·3.
  const auto kaiming = [](std::int64_t fan_in) {
    return Normal(static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_in))));
  };
  AddParam(out, "stem.conv.weight", {c, m.in_channels, 3, 3}, kaiming(m.in_channels * 9));
  BatchNormParams(out, "stem.bn", c);
  for (std::int64_t j = 0; j < m.blocks; ++j) {
    const std::string p = "blocks." + std::to_string(j);
    AddParam(out, p + ".conv1.weight", {c, c, 3, 3}, kaiming(c * 9));
    BatchNormParams(out, p + ".bn1", c);
    AddParam(out, p + ".conv2.weight", {c, c, 3, 3}, kaiming(c * 9));
    BatchNormParams(out, p + ".bn2", c);
  }
  const float bound = InvSqrt(c);
  AddParam(out, "head.weight", {m.classes, c}, Uniform(bound));
  AddParam(out, "head.bias", {m.classes}, Uniform(bound));
}

void GptParams(const GptSpec& m, std::vector<TensorSpec>& out) {
  const std::int64_t c = m.d_model;
  constexpr float kStd = 0.02f;  // GPT-2 / nanoGPT
  // Residual projections: std / sqrt(2·layers) (GPT-2 paper, nanoGPT).
  const float proj_std =
      static_cast<float>(static_cast<double>(kStd) / std::sqrt(2.0 * static_cast<double>(m.layers)));
  AddParam(out, "wte.weight", {m.vocab, c}, Normal(kStd));
  AddParam(out, "wpe.weight", {m.context, c}, Normal(kStd));
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const std::string p = "h." + std::to_string(l);
    AddParam(out, p + ".ln_1.weight", {c}, Ones());
    AddParam(out, p + ".ln_1.bias", {c}, Zeros());
    AddParam(out, p + ".attn.qkv.weight", {3 * c, c}, Normal(kStd));
    AddParam(out, p + ".attn.qkv.bias", {3 * c}, Zeros());
    AddParam(out, p + ".attn.proj.weight", {c, c}, Normal(proj_std));
    AddParam(out, p + ".attn.proj.bias", {c}, Zeros());
    AddParam(out, p + ".ln_2.weight", {c}, Ones());
    AddParam(out, p + ".ln_2.bias", {c}, Zeros());
    AddParam(out, p + ".mlp.fc.weight", {4 * c, c}, Normal(kStd));
    AddParam(out, p + ".mlp.fc.bias", {4 * c}, Zeros());
    AddParam(out, p + ".mlp.proj.weight", {c, 4 * c}, Normal(proj_std));
    AddParam(out, p + ".mlp.proj.bias", {c}, Zeros());
  }
  AddParam(out, "ln_f.weight", {c}, Ones());
  AddParam(out, "ln_f.bias", {c}, Zeros());
}

// Precondition: the structural checks of ValidateModelSpec passed (dims and
// depths in range), so every size below fits in 64 bits.
std::vector<TensorSpec> BuildParamList(const ModelSpec& model) {
  std::vector<TensorSpec> out;
  std::visit(
      [&](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, MlpSpec>) {
          MlpParams(m, out);
        } else if constexpr (std::is_same_v<M, CnnSpec>) {
          CnnParams(m, out);
        } else {
          GptParams(m, out);
        }
      },
      model.arch);
  std::sort(out.begin(), out.end(), [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
  return out;
}

std::uint64_t Elements(const Shape& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

Status ValidateStructure(const ModelSpec& model) {
  return std::visit(
      [](const auto& m) -> Status {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, MlpSpec>) {
          if (!DimOk(m.input_dim)) return BadDim("mlp input_dim");
          if (!DimOk(m.classes, 2)) return BadDim("mlp classes");
          if (m.hidden.size() > static_cast<std::size_t>(kMaxDepth)) {
            return Status::Invalid("model-too-deep", "mlp has more than 64 hidden layers");
          }
          for (std::int64_t h : m.hidden) {
            if (!DimOk(h)) return BadDim("mlp hidden width");
          }
          if (m.activation != Activation::kRelu && m.activation != Activation::kGelu) {
            return Status::Invalid("model-bad-activation", "unknown activation");
          }
        } else if constexpr (std::is_same_v<M, CnnSpec>) {
          if (!DimOk(m.in_channels) || !DimOk(m.height) || !DimOk(m.width) || !DimOk(m.channels)) {
            return BadDim("cnn input or channels");
          }
          if (!DimOk(m.classes, 2)) return BadDim("cnn classes");
          if (m.blocks < 0 || m.blocks > kMaxDepth) {
            return Status::Invalid("model-too-deep", "cnn blocks must be in [0, 64]");
          }
          if (m.stem_pool && (m.height < 2 || m.width < 2)) {
            return Status::Invalid("model-bad-shape", "the stem pool needs an image of at least 2x2");
          }
        } else {
          if (!DimOk(m.vocab, 2)) return BadDim("gpt vocab");
          if (!DimOk(m.context) || !DimOk(m.d_model)) return BadDim("gpt context or d_model");
          if (m.layers < 1 || m.layers > kMaxDepth) {
            return Status::Invalid("model-too-deep", "gpt layers must be in [1, 64]");
          }
          if (m.heads < 1 || m.heads > m.d_model || m.d_model % m.heads != 0) {
            return Status::Invalid("model-bad-heads", "heads must divide d_model");
          }
          // 4·d_model is a dimension of the MLP; keep it inside the cap too.
          if (4 * m.d_model > kMaxDim) return BadDim("gpt 4*d_model");
          if (!CanonicalFloat(m.dropout) || m.dropout < 0.0f || m.dropout >= 1.0f) {
            return Status::Invalid("model-bad-dropout", "dropout must be in [0, 1)");
          }
        }
        return Status::Ok();
      },
      model.arch);
}

// ---- encoding helpers ----------------------------------------------------------

Result<std::int64_t> GetDim(Reader& r) {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, r.GetVarint());
  // Anything above the cap is rejected by validation; clamp so the int64
  // conversion cannot wrap into a "valid" value.
  return static_cast<std::int64_t>(std::min<std::uint64_t>(v, static_cast<std::uint64_t>(kMaxDim) + 1));
}

Result<std::int64_t> GetSteps(Reader& r) {
  VT_ASSIGN_OR_RETURN(std::uint64_t v, r.GetVarint());
  if (v > static_cast<std::uint64_t>(kMaxScheduleSteps)) {
    return Status::Invalid("optim-bad-schedule", "schedule steps above 2^62");
  }
  return static_cast<std::int64_t>(v);
}

void PutFloat(Writer& w, float v) { w.PutU32(std::bit_cast<std::uint32_t>(v)); }
Result<float> GetFloat(Reader& r) {
  VT_ASSIGN_OR_RETURN(std::uint32_t bits, r.GetU32());
  return std::bit_cast<float>(bits);
}

std::string FloatText(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

}  // namespace

// ---- model ------------------------------------------------------------------

Status ValidateModelSpec(const ModelSpec& model) {
  VT_TRY(ValidateStructure(model));
  std::uint64_t total = 0;
  for (const TensorSpec& t : BuildParamList(model)) total += Elements(t.shape);
  if (total > kMaxModelElements) {
    return Status::Invalid("model-too-large", "model has " + std::to_string(total) + " elements, cap 2^31");
  }
  return Status::Ok();
}

void Encode(Writer& w, const ModelSpec& model) {
  w.PutVarint(kModelSpecVersion);
  w.PutEnum(model.family());
  std::visit(
      [&](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, MlpSpec>) {
          w.PutVarint(static_cast<std::uint64_t>(m.input_dim));
          w.PutVector(m.hidden,
                      [](Writer& ww, std::int64_t h) { ww.PutVarint(static_cast<std::uint64_t>(h)); });
          w.PutVarint(static_cast<std::uint64_t>(m.classes));
          w.PutEnum(m.activation);
        } else if constexpr (std::is_same_v<M, CnnSpec>) {
          w.PutVarint(static_cast<std::uint64_t>(m.in_channels));
          w.PutVarint(static_cast<std::uint64_t>(m.height));
          w.PutVarint(static_cast<std::uint64_t>(m.width));
          w.PutVarint(static_cast<std::uint64_t>(m.channels));
          w.PutVarint(static_cast<std::uint64_t>(m.blocks));
          w.PutBool(m.stem_pool);
          w.PutVarint(static_cast<std::uint64_t>(m.classes));
        } else {
          w.PutVarint(static_cast<std::uint64_t>(m.vocab));
          w.PutVarint(static_cast<std::uint64_t>(m.context));
          w.PutVarint(static_cast<std::uint64_t>(m.layers));
          w.PutVarint(static_cast<std::uint64_t>(m.heads));
          w.PutVarint(static_cast<std::uint64_t>(m.d_model));
          PutFloat(w, m.dropout);
        }
      },
      model.arch);
}

Result<ModelSpec> Decode(Reader& r, DecodeAs<ModelSpec>) {
  VT_ASSIGN_OR_RETURN(std::uint64_t version, r.GetVarint());
  if (version != kModelSpecVersion) {
    return Status::Invalid("model-bad-version", "model spec version " + std::to_string(version));
  }
  VT_ASSIGN_OR_RETURN(ModelFamily family, r.GetEnum(ModelFamily::kGpt));
  ModelSpec model;
  switch (family) {
    case ModelFamily::kMlp: {
      MlpSpec m;
      VT_ASSIGN_OR_RETURN(m.input_dim, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.hidden, r.GetVector<std::int64_t>(&GetDim, static_cast<std::size_t>(kMaxDepth)));
      VT_ASSIGN_OR_RETURN(m.classes, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.activation, r.GetEnum(Activation::kGelu));
      model.arch = std::move(m);
      break;
    }
    case ModelFamily::kCnn: {
      CnnSpec m;
      VT_ASSIGN_OR_RETURN(m.in_channels, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.height, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.width, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.channels, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.blocks, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.stem_pool, r.GetBool());
      VT_ASSIGN_OR_RETURN(m.classes, GetDim(r));
      model.arch = m;
      break;
    }
    case ModelFamily::kGpt: {
      GptSpec m;
      VT_ASSIGN_OR_RETURN(m.vocab, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.context, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.layers, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.heads, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.d_model, GetDim(r));
      VT_ASSIGN_OR_RETURN(m.dropout, GetFloat(r));
      model.arch = m;
      break;
    }
  }
  VT_TRY(ValidateModelSpec(model));
  return model;
}

Bytes EncodeModelSpec(const ModelSpec& model) { return EncodeToBytes(model); }
Result<ModelSpec> DecodeModelSpec(ByteSpan bytes) { return DecodeExact<ModelSpec>(bytes); }

namespace {

constexpr std::string_view kPresetNames[] = {"mlp-tiny",    "mlp-fashion", "cnn-tiny",
                                             "cnn-fashion", "gpt-tiny",    "gpt2-small"};

}  // namespace

std::span<const std::string_view> ModelPresetNames() { return kPresetNames; }

Result<ModelSpec> ModelPreset(std::string_view name) {
  ModelSpec model;
  if (name == "mlp-tiny") {
    model.arch = MlpSpec{16, {32}, 4, Activation::kRelu};
  } else if (name == "mlp-fashion") {
    model.arch = MlpSpec{784, {128}, 10, Activation::kRelu};
  } else if (name == "cnn-tiny") {
    model.arch = CnnSpec{1, 8, 8, 4, 1, true, 4};
  } else if (name == "cnn-fashion") {
    model.arch = CnnSpec{1, 28, 28, 16, 2, true, 10};
  } else if (name == "gpt-tiny") {
    model.arch = GptSpec{256, 32, 2, 2, 64, 0.1f};
  } else if (name == "gpt2-small") {
    model.arch = GptSpec{50257, 1024, 12, 12, 768, 0.1f};
  } else {
    return Status::Invalid("model-unknown-preset", "no model preset named '" + std::string(name) + "'");
  }
  return model;
}

std::string DescribeModel(const ModelSpec& model) {
  return std::visit(
      [](const auto& m) -> std::string {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, MlpSpec>) {
          std::string s = "mlp(" + std::to_string(m.input_dim);
          for (std::int64_t h : m.hidden) s += "-" + std::to_string(h);
          return s + "-" + std::to_string(m.classes) +
                 (m.activation == Activation::kRelu ? " relu)" : " gelu)");
        } else if constexpr (std::is_same_v<M, CnnSpec>) {
          return "cnn(input=" + std::to_string(m.in_channels) + "x" + std::to_string(m.height) + "x" +
                 std::to_string(m.width) + " channels=" + std::to_string(m.channels) +
                 " blocks=" + std::to_string(m.blocks) + (m.stem_pool ? " pool" : "") +
                 " classes=" + std::to_string(m.classes) + ")";
        } else {
          return "gpt(vocab=" + std::to_string(m.vocab) + " context=" + std::to_string(m.context) +
                 " layers=" + std::to_string(m.layers) + " heads=" + std::to_string(m.heads) +
                 " d=" + std::to_string(m.d_model) + " dropout=" + FloatText(m.dropout) + ")";
        }
      },
      model.arch);
}

// ---- optimizer --------------------------------------------------------------

Status ValidateOptimizerSpec(const OptimizerSpec& o) {
  if (o.kind != OptimizerKind::kSgd && o.kind != OptimizerKind::kAdamW) {
    return Status::Invalid("optim-bad-kind", "unknown optimizer");
  }
  if (!CanonicalFloat(o.lr) || o.lr < 0.0f || !CanonicalFloat(o.min_lr) || o.min_lr < 0.0f) {
    return Status::Invalid("optim-bad-lr", "learning rates must be finite and >= 0");
  }
  if (o.schedule != LrScheduleKind::kConstant && o.schedule != LrScheduleKind::kCosine &&
      o.schedule != LrScheduleKind::kLinear) {
    return Status::Invalid("optim-bad-schedule", "unknown schedule");
  }
  if (o.warmup_steps < 0 || o.warmup_steps > kMaxScheduleSteps || o.total_steps < 0 ||
      o.total_steps > kMaxScheduleSteps) {
    return Status::Invalid("optim-bad-schedule", "schedule steps must be in [0, 2^62]");
  }
  if (!CanonicalFloat(o.momentum) || o.momentum < 0.0f || o.momentum > 1.0f ||
      (o.nesterov && !(o.momentum > 0.0f))) {
    return Status::Invalid("optim-bad-momentum", "momentum must be in [0, 1] (> 0 for nesterov)");
  }
  if (!CanonicalFloat(o.beta1) || o.beta1 < 0.0f || o.beta1 >= 1.0f || !CanonicalFloat(o.beta2) ||
      o.beta2 < 0.0f || o.beta2 >= 1.0f) {
    return Status::Invalid("optim-bad-beta", "betas must be in [0, 1)");
  }
  if (!CanonicalFloat(o.eps) || !(o.eps > 0.0f)) return Status::Invalid("optim-bad-eps", "eps must be > 0");
  if (!CanonicalFloat(o.weight_decay) || o.weight_decay < 0.0f) {
    return Status::Invalid("optim-bad-weight-decay", "weight decay must be finite and >= 0");
  }
  if (!CanonicalFloat(o.clip_norm) || o.clip_norm < 0.0f) {
    return Status::Invalid("optim-bad-clip", "clip norm must be finite and >= 0 (0 = off)");
  }
  return Status::Ok();
}

void Encode(Writer& w, const OptimizerSpec& o) {
  w.PutVarint(kOptimizerSpecVersion);
  w.PutEnum(o.kind);
  PutFloat(w, o.lr);
  PutFloat(w, o.min_lr);
  w.PutEnum(o.schedule);
  w.PutVarint(static_cast<std::uint64_t>(o.warmup_steps));
  w.PutVarint(static_cast<std::uint64_t>(o.total_steps));
  PutFloat(w, o.momentum);
  w.PutBool(o.nesterov);
  PutFloat(w, o.beta1);
  PutFloat(w, o.beta2);
  PutFloat(w, o.eps);
  PutFloat(w, o.weight_decay);
  PutFloat(w, o.clip_norm);
}

Result<OptimizerSpec> Decode(Reader& r, DecodeAs<OptimizerSpec>) {
  VT_ASSIGN_OR_RETURN(std::uint64_t version, r.GetVarint());
  if (version != kOptimizerSpecVersion) {
    return Status::Invalid("optim-bad-version", "optimizer spec version " + std::to_string(version));
  }
  OptimizerSpec o;
  VT_ASSIGN_OR_RETURN(o.kind, r.GetEnum(OptimizerKind::kAdamW));
  VT_ASSIGN_OR_RETURN(o.lr, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.min_lr, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.schedule, r.GetEnum(LrScheduleKind::kLinear));
  VT_ASSIGN_OR_RETURN(o.warmup_steps, GetSteps(r));
  VT_ASSIGN_OR_RETURN(o.total_steps, GetSteps(r));
  VT_ASSIGN_OR_RETURN(o.momentum, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.nesterov, r.GetBool());
  VT_ASSIGN_OR_RETURN(o.beta1, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.beta2, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.eps, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.weight_decay, GetFloat(r));
  VT_ASSIGN_OR_RETURN(o.clip_norm, GetFloat(r));
  VT_TRY(ValidateOptimizerSpec(o));
  return o;
}

Bytes EncodeOptimizerSpec(const OptimizerSpec& opt) { return EncodeToBytes(opt); }
Result<OptimizerSpec> DecodeOptimizerSpec(ByteSpan bytes) { return DecodeExact<OptimizerSpec>(bytes); }

LrScheduleParams ScheduleParams(const OptimizerSpec& opt) {
  LrScheduleParams p;
  p.kind = opt.schedule;
  p.warmup_steps = opt.warmup_steps;
  p.total_steps = opt.total_steps;
  p.base_lr = opt.lr;
  p.min_lr = opt.min_lr;
  return p;
}

// ---- state ------------------------------------------------------------------

Result<std::vector<TensorSpec>> ParamSpecs(const ModelSpec& model) {
  VT_TRY(ValidateModelSpec(model));
  return BuildParamList(model);
}

Result<std::vector<TensorSpec>> StateSpecs(const ModelSpec& model, const OptimizerSpec& opt) {
  VT_TRY(ValidateOptimizerSpec(opt));
  VT_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs, ParamSpecs(model));
  const std::size_t params = specs.size();
  for (std::size_t i = 0; i < params; ++i) {
    if (specs[i].role != TensorRole::kParameter) continue;
    const auto add = [&](const char* prefix) {
      specs.push_back(TensorSpec{std::string(prefix) + specs[i].name, specs[i].shape,
                                 TensorRole::kOptimizerState, Zeros()});
    };
    if (opt.kind == OptimizerKind::kSgd) {
      add("opt.momentum.");
    } else {
      add("opt.m.");
      add("opt.v.");
    }
  }
  std::sort(specs.begin(), specs.end(),
            [](const TensorSpec& a, const TensorSpec& b) { return a.name < b.name; });
  return specs;
}

Result<std::uint64_t> ParameterCount(const ModelSpec& model) {
  VT_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs, ParamSpecs(model));
  std::uint64_t n = 0;
  for (const TensorSpec& t : specs) {
    if (t.role == TensorRole::kParameter) n += Elements(t.shape);
  }
  return n;
}

Result<NamedTensors> InitState(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t seed,
                               int threads) {
  KeepFreedMemoryForReuse();  // the state's blocks come from the heap steps reuse
  VT_ASSIGN_OR_RETURN(std::vector<TensorSpec> params, ParamSpecs(model));
  VT_ASSIGN_OR_RETURN(std::vector<TensorSpec> state, StateSpecs(model, opt));
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  NamedTensors out;
  try {
    out.names.reserve(state.size());
    out.tensors.reserve(state.size());
    for (const TensorSpec& spec : state) {
      Tensor t(spec.shape);
      // The stream is the parameter's position in the model's own list.
      const auto it = std::lower_bound(params.begin(), params.end(), spec.name,
                                       [](const TensorSpec& p, const std::string& n) { return p.name < n; });
      const auto stream = static_cast<std::uint32_t>(it - params.begin());
      const InitRule rule = spec.init;
      float* data = t.data();
      switch (rule.kind) {
        case InitKind::kZeros:
          break;
        case InitKind::kOnes:
          std::fill(data, data + t.numel(), 1.0f);
          break;
        case InitKind::kNormal:
          ParallelFor(threads, t.numel(), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t i = b; i < e; ++i) {
              data[i] = rule.scale * NormalAt(key, kInitRngStep, stream, static_cast<std::uint64_t>(i));
            }
          });
          break;
        case InitKind::kUniform:
          ParallelFor(threads, t.numel(), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t i = b; i < e; ++i) {
              // 2u − 1 is exact for the 24-bit u of UniformAt; one rounding in the product.
              data[i] = rule.scale *
                        (2.0f * UniformAt(key, kInitRngStep, stream, static_cast<std::uint64_t>(i)) - 1.0f);
            }
          });
          break;
      }
      out.names.push_back(spec.name);
      out.tensors.push_back(std::move(t));
    }
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory", "initial state does not fit in memory");
  }
  return out;
}

}  // namespace vt::kernels::graph
