#pragma once
// Model and optimizer specifications of a training job, their canonical
// encodings (the opaque `model` / `optimizer` bytes of protocol::JobSpec),
// the named state tensors they imply and the state's deterministic
// initialisation. Architectures, names, shapes and init rules: docs/models.md.
//
// Everything here is a pure function of its arguments: the referee rebuilds
// it from the job alone, so two parties can never disagree about which
// tensors a state holds or how they start.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/encoding.h"
#include "common/result.h"
#include "kernels/ops/optim.h"
#include "kernels/tensor.h"

namespace vt::kernels::graph {

// ---- caps (protocol constants: a spec beyond them is rejected) ---------------

inline constexpr std::uint64_t kModelSpecVersion = 1;
inline constexpr std::uint64_t kOptimizerSpecVersion = 1;
// Every dimension (width, vocabulary, context, channels, image side, …).
inline constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;
// Hidden layers (MLP), residual blocks (CNN), transformer layers (GPT). With
// these, a model has at most 1023 trainable tensors, so the gradient-clipping
// node's inputs and outputs fit protocol::kMaxNodeInputs/Outputs (1024).
inline constexpr std::int64_t kMaxDepth = 64;
// Trainable parameters plus buffers, in elements.
inline constexpr std::uint64_t kMaxModelElements = std::uint64_t{1} << 31;
// Schedule lengths, as the LrSchedule operator accepts them.
inline constexpr std::int64_t kMaxScheduleSteps = std::int64_t{1} << 62;

// ---- model ------------------------------------------------------------------

enum class ModelFamily : std::uint8_t { kMlp = 0, kCnn = 1, kGpt = 2 };
enum class Activation : std::uint8_t { kRelu = 0, kGelu = 1 };

// Multi-layer perceptron: [Linear → activation] per hidden width, then a
// linear head to `classes` logits. Input [B, input_dim], targets [B].
struct MlpSpec {
  std::int64_t input_dim = 0;
  std::vector<std::int64_t> hidden;  // 0..kMaxDepth widths
  std::int64_t classes = 0;          // ≥ 2
  Activation activation = Activation::kRelu;
  bool operator==(const MlpSpec&) const = default;
};

// Small ResNet: stem conv3×3 → BN → ReLU (→ 2×2 max pool), `blocks` residual
// blocks conv3×3 → BN → ReLU → conv3×3 → BN → +skip → ReLU at constant width
// `channels`, global average pool, linear head. Input [B, C, H, W], targets [B].
struct CnnSpec {
  std::int64_t in_channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::int64_t channels = 0;
  std::int64_t blocks = 0;   // 0..kMaxDepth
  bool stem_pool = false;    // 2×2 max pool, stride 2, after the stem (needs H, W ≥ 2)
  std::int64_t classes = 0;  // ≥ 2
  bool operator==(const CnnSpec&) const = default;
};

// GPT-2 architecture: token + position embeddings, pre-LayerNorm blocks of
// causal multi-head attention and a 4×-wide GELU MLP, final LayerNorm, output
// head tied to the token embedding. Input tokens [B, context], targets
// [B, context] (token ids as fp32 integers); sequences always fill the context.
struct GptSpec {
  std::int64_t vocab = 0;    // ≥ 2
  std::int64_t context = 0;  // T
  std::int64_t layers = 0;   // 1..kMaxDepth
  std::int64_t heads = 0;    // divides d_model
  std::int64_t d_model = 0;  // C
  float dropout = 0.0f;      // p ∈ [0, 1): embedding and residual dropout; 0 = no dropout nodes
  bool operator==(const GptSpec&) const = default;
};

struct ModelSpec {
  std::variant<MlpSpec, CnnSpec, GptSpec> arch;  // index == ModelFamily value
  ModelFamily family() const { return static_cast<ModelFamily>(arch.index()); }
  bool operator==(const ModelSpec&) const = default;
};

// Semantic checks (Decode applies them). Invalid with one of:
//   "model-bad-dim"      a dimension < 1 (< 2 for classes/vocab) or > kMaxDim
//   "model-too-deep"     more than kMaxDepth hidden layers / blocks / layers (or 0 GPT layers)
//   "model-bad-heads"    heads < 1 or not dividing d_model
//   "model-bad-dropout"  p not in [0, 1), NaN, or −0
//   "model-bad-shape"    CNN stem pool on an image side < 2
//   "model-too-large"    more than kMaxModelElements parameter and buffer elements
Status ValidateModelSpec(const ModelSpec& model);

// Canonical encoding (common/encoding.h):
//   varint version (= 1) ‖ enum family ‖ family fields in declaration order
//   (integers as minimal varints, bool as a byte, dropout as u32 binary32 bits).
// Decode is strict: enc-* reasons, "model-bad-version", then ValidateModelSpec.
void Encode(Writer& w, const ModelSpec& model);
Result<ModelSpec> Decode(Reader& r, DecodeAs<ModelSpec>);
Bytes EncodeModelSpec(const ModelSpec& model);
Result<ModelSpec> DecodeModelSpec(ByteSpan bytes);  // also rejects trailing bytes

// Named presets: "mlp-tiny", "mlp-fashion", "cnn-tiny", "cnn-fashion",
// "gpt-tiny", "gpt2-small". Invalid "model-unknown-preset" otherwise.
Result<ModelSpec> ModelPreset(std::string_view name);
std::span<const std::string_view> ModelPresetNames();
// One line for logs, e.g. "gpt(vocab=256 context=32 layers=2 heads=2 d=64 dropout=0.1)".
std::string DescribeModel(const ModelSpec& model);

// ---- optimizer --------------------------------------------------------------

enum class OptimizerKind : std::uint8_t { kSgd = 0, kAdamW = 1 };

// All fields are encoded whatever the kind (a fixed layout); the kernel
// operators' ranges apply to every field. Floats travel as binary32 bits and
// must be finite and never −0, so each value has exactly one encoding.
struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kAdamW;
  float lr = 1e-3f;     // base learning rate, ≥ 0
  float min_lr = 0.0f;  // end of the decay, ≥ 0
  LrScheduleKind schedule = LrScheduleKind::kConstant;
  std::int64_t warmup_steps = 0;  // linear warm-up base·(t+1)/warmup for t < warmup
  std::int64_t total_steps = 0;   // end of the cosine / linear decay
  float momentum = 0.0f;          // SGD, [0, 1]
  bool nesterov = false;          // SGD, needs momentum > 0
  float beta1 = 0.9f;             // AdamW, [0, 1)
  float beta2 = 0.999f;           // AdamW, [0, 1)
  float eps = 1e-8f;              // AdamW, > 0
  float weight_decay = 0.0f;      // ≥ 0 (SGD: L2 on the gradient; AdamW: decoupled)
  float clip_norm = 0.0f;         // global gradient-norm clipping; 0 = off
  bool operator==(const OptimizerSpec&) const = default;
};

// Invalid with one of "optim-bad-lr", "optim-bad-schedule", "optim-bad-momentum",
// "optim-bad-beta", "optim-bad-eps", "optim-bad-weight-decay", "optim-bad-clip".
Status ValidateOptimizerSpec(const OptimizerSpec& opt);

// Canonical encoding: varint version (= 1) ‖ enum kind ‖ u32 lr ‖ u32 min_lr ‖
// enum schedule ‖ varint warmup_steps ‖ varint total_steps ‖ u32 momentum ‖
// bool nesterov ‖ u32 beta1 ‖ u32 beta2 ‖ u32 eps ‖ u32 weight_decay ‖
// u32 clip_norm. Decode: enc-* reasons, "optim-bad-version", then validation.
void Encode(Writer& w, const OptimizerSpec& opt);
Result<OptimizerSpec> Decode(Reader& r, DecodeAs<OptimizerSpec>);
Bytes EncodeOptimizerSpec(const OptimizerSpec& opt);
Result<OptimizerSpec> DecodeOptimizerSpec(ByteSpan bytes);

// The schedule as the LrSchedule operator takes it.
LrScheduleParams ScheduleParams(const OptimizerSpec& opt);

// ---- state tensors ----------------------------------------------------------

enum class InitKind : std::uint8_t {
  kZeros = 0,
  kOnes = 1,
  kNormal = 2,   // scale · NormalAt(…)           (common/random.h)
  kUniform = 3,  // scale · (2·UniformAt(…) − 1), in [−scale, scale)
};

struct InitRule {
  InitKind kind = InitKind::kZeros;
  float scale = 0.0f;
  bool operator==(const InitRule&) const = default;
};

enum class TensorRole : std::uint8_t {
  kParameter = 0,       // trained: has a gradient and optimizer state
  kBuffer = 1,          // updated by the forward (batch-norm running statistics)
  kOptimizerState = 2,  // "opt.m.<param>", "opt.v.<param>", "opt.momentum.<param>"
};

struct TensorSpec {
  std::string name;
  Shape shape;
  TensorRole role = TensorRole::kParameter;
  InitRule init;
  bool operator==(const TensorSpec&) const = default;
};

// The model's parameters and buffers, sorted bytewise by name.
Result<std::vector<TensorSpec>> ParamSpecs(const ModelSpec& model);
// The whole training state: ParamSpecs plus the optimizer state of every
// parameter (AdamW: "opt.m.<p>", "opt.v.<p>"; SGD: "opt.momentum.<p>", kept
// even at momentum 0 so the layout does not depend on a value), sorted.
// Position i here is the index InputSource::kState uses.
Result<std::vector<TensorSpec>> StateSpecs(const ModelSpec& model, const OptimizerSpec& opt);
// Trainable elements (parameters only; GPT-2 small: 124,439,808).
Result<std::uint64_t> ParameterCount(const ModelSpec& model);

struct NamedTensors {
  std::vector<std::string> names;  // sorted bytewise
  std::vector<Tensor> tensors;     // same order
};

// Philox stream of parameter p's initial values: key = seed, step =
// kInitRngStep, tensor = position of p in ParamSpecs(model) (so the values do
// not depend on the optimizer); element e is drawn from word e (uniform) or
// words 2e, 2e+1 (normal). Identical on every platform; `threads` only splits
// the elements.
inline constexpr std::uint32_t kInitRngStep = 0xFFFFFFFFu;
Result<NamedTensors> InitState(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t seed,
                               int threads = 1);

}  // namespace vt::kernels::graph
