#pragma once
// The operator graph of one training step: forward, loss, backward,
// gradient clipping, learning-rate schedule and optimizer update, as a
// canonical topological list of registry operators (kernels/ops/registry.h).
// A pure function of (model, optimizer, step, batch shapes): the worker runs
// it, and the referee's arbitration rebuilds node i of any step from the job
// alone (docs/referee.md, "The game", level 3). Node order, names and the
// state layout of each family: docs/models.md.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/graph/model.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor.h"

namespace vt::kernels::graph {

// Where a node's input comes from. The numeric values MUST equal
// protocol::InputSource (kState = 0, kBatch = 1, kNode = 2): node records
// carry them, and kernels/ may not include protocol/ to share the type.
enum class NodeInputSource : std::uint8_t {
  kState = 0,  // state tensor `index` in name order (StateSpecs)
  kBatch = 1,  // batch tensor `index`: 0 = inputs, 1 = targets
  kNode = 2,   // output `slot` of earlier node `index`
};

struct NodeInput {
  NodeInputSource source = NodeInputSource::kState;
  std::uint32_t index = 0;
  std::uint32_t slot = 0;  // 0 unless source == kNode

  static NodeInput State(std::uint32_t i) { return {NodeInputSource::kState, i, 0}; }
  static NodeInput Batch(std::uint32_t i) { return {NodeInputSource::kBatch, i, 0}; }
  static NodeInput Node(std::uint32_t node, std::uint32_t slot) {
    return {NodeInputSource::kNode, node, slot};
  }
  bool operator==(const NodeInput&) const = default;
};

inline constexpr std::uint32_t kBatchInputs = 0;
inline constexpr std::uint32_t kBatchTargets = 1;

// One operator invocation. `output_shapes` are what the operator produces
// from inputs of the declared shapes (the executor checks it); `name` is for
// people ("h.0.attn.qkv.backward") and is part of no hash.
struct Node {
  OpKind kind = OpKind::kAdd;
  OpAttrs attrs;
  std::vector<NodeInput> inputs;
  std::vector<Shape> output_shapes;
  std::string name;

  std::size_t num_outputs() const { return output_shapes.size(); }
  bool operator==(const Node&) const = default;
};

struct StepGraph {
  std::uint64_t step = 0;
  std::vector<std::string> state_names;  // sorted; = StateSpecs names
  std::vector<Shape> state_shapes;
  std::vector<Shape> batch_shapes;  // [inputs, targets]
  std::vector<Node> nodes;          // topological: inputs only name earlier nodes
  // Where each tensor of the next state comes from (one per state tensor,
  // name order): always a node output for the models here (parameters and
  // optimizer state from the optimizer nodes, batch-norm running statistics
  // from the batch-norm nodes).
  std::vector<NodeInput> next_state;
  NodeInput loss;  // the cross-entropy node's output [1]

  bool operator==(const StepGraph&) const = default;
};

// The batch a step consumes, for `batch_size` examples:
//   MLP: inputs [B, input_dim],   targets [B]        (class ids as fp32)
//   CNN: inputs [B, C, H, W],     targets [B]
//   GPT: inputs [B, context],     targets [B, context] (token ids as fp32)
// Invalid "graph-bad-batch" unless 1 ≤ batch_size ≤ kMaxDim; model errors as
// ValidateModelSpec.
Result<std::vector<Shape>> BatchShapes(const ModelSpec& model, std::int64_t batch_size);

// Invalid with: model/optimizer reasons; "graph-bad-batch" (batch shapes not
// of the BatchShapes form); "graph-bad-step" (step ≥ 2^62, or ≥ 2^32 for a
// model with dropout, whose RNG address has a 32-bit step); "graph-too-large"
// (a node output above 2^31 − 1 elements, which no operator accepts).
Result<StepGraph> BuildStepGraph(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                                 std::span<const Shape> batch_shapes);

// The number of nodes, and node i alone (the referee's view; Invalid
// "node-out-of-range" for i ≥ NodeCount). Both build the graph: it holds no
// tensors and takes well under a millisecond even for GPT-2 small.
Result<std::size_t> NodeCount(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                              std::span<const Shape> batch_shapes);
Result<Node> StepNode(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                      std::span<const Shape> batch_shapes, std::size_t i);

// The shape of one node input as the graph declares it (state, batch or an
// earlier node's output). Precondition: `in` is an input of a node of `graph`.
const Shape& InputShape(const StepGraph& graph, const NodeInput& in);
// The declared shapes of node i's inputs, in order. Precondition: i < nodes.size().
std::vector<Shape> NodeInputShapes(const StepGraph& graph, std::size_t i);

// Rounded mode: node i's τ key, TauKeyForInputs(OpKindName(kind), its declared
// input shapes) — e.g. "linear/64x16,32x16,32" (kernels/calibration.h). A
// job's TauTable maps such keys to τ; absent keys use the table's default.
// Precondition: i < nodes.size().
std::string NodeTauKey(const StepGraph& graph, std::size_t i);

// Structural self-check (for tests and tools): every input refers to an
// existing state/batch tensor or an earlier node's existing output slot,
// input and output counts match the registry's arity, next_state covers
// every state tensor with a tensor of its shape. Invalid "graph-malformed".
Status CheckGraph(const StepGraph& graph);

}  // namespace vt::kernels::graph
