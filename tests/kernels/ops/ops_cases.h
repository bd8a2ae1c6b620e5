#pragma once
// The operator test table: one entry per operator configuration, each with
// its input generators, an independent fp64 reference implementation (plain
// loops, written from the operator's mathematical definition, not from the
// kernels), tolerances, and how to check its gradient against central finite
// differences of that reference. One harness (ops_harness_test.cpp) runs
// every entry in every mode, in the style of ggml's test-backend-ops.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"

namespace vt::kernels::testing {

// An fp64 tensor of the reference world.
struct T64 {
  Shape shape;
  std::vector<double> v;
  std::int64_t numel() const { return static_cast<std::int64_t>(v.size()); }
};

enum class Gen {
  kUniform,       // (-0.97, 0.97)
  kWide,          // (-3.9, 3.9)
  kPositive,      // [0.5, 1.5)
  kAwayFromZero,  // ±[0.1, 1): no kink of relu within a finite-difference step
  kDistinct,      // a permutation of evenly spaced values in [-1, 1): no ties
  kIndex,         // integers in [0, param)
  kSmallPositive, // [0.01, 0.11): second moments of AdamW
  kConstant,      // every element = param
};

struct InputSpec {
  Shape shape;
  Gen gen = Gen::kUniform;
  double param = 0;
};

using RefFn = std::function<std::vector<T64>(const std::vector<T64>& inputs)>;

// Where a backward input comes from.
struct Src {
  enum Kind { kInput, kOutput, kDy } kind;
  int index = 0;
};

struct GradSpec {
  OpKind backward;
  OpAttrs attrs;
  std::vector<Src> sources;       // the backward's inputs, in order
  int output = 0;                 // the forward output the loss Σ dy·y weights
  std::vector<int> wrt;           // forward inputs differentiated …
  std::vector<int> grad_outputs;  // … and the backward output holding each gradient
  double atol = 2e-4, rtol = 2e-3;  // fp32 modes (rounded mode uses a tighter bound)
};

struct OpCase {
  std::string name;
  OpKind kind;
  OpAttrs attrs;
  std::vector<InputSpec> inputs;
  RefFn reference;
  double atol = 1e-5, rtol = 1e-4;  // native and repops vs the fp64 reference
  std::optional<GradSpec> grad;
  // Inputs that must be rejected when given one extra trailing dimension of 2.
  std::vector<int> shape_bound;
  RngAddress rng{0x5eed5eedULL, 7, 3};
};

const std::vector<OpCase>& AllCases();
std::vector<OpCase> GradientCases();

// Inputs of a case from Philox stream (seed, step = salt, tensor = input index).
std::vector<Tensor> MakeInputs(const OpCase& c, std::uint64_t seed, std::uint32_t salt);
T64 ToT64(const Tensor& t);

// One RunOp in a fresh context; in rounded mode with a recording (or, when
// `replay` is given, replaying) NodeRounding whose log and Finish() status
// are returned.
struct RunResult {
  Status status;
  std::vector<Tensor> outputs;
  RoundingLog log;
};
RunResult RunNode(const ExecConfig& config, OpKind kind, const OpAttrs& attrs, const std::vector<const Tensor*>& inputs,
              const RngAddress& rng, const RoundingLog* replay = nullptr);

std::vector<const Tensor*> Pointers(const std::vector<Tensor>& tensors);

}  // namespace vt::kernels::testing
