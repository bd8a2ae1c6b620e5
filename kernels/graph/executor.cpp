// Step execution: nodes in graph order through the operator registry, with
// per-node rounding state in rounded mode and liveness-based freeing of
// intermediate tensors.

#include "kernels/graph/executor.h"

#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "kernels/chunk_tree.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"

namespace vt::kernels::graph {

namespace {

constexpr std::size_t kNoUse = std::numeric_limits<std::size_t>::max() - 1;  // never consumed
constexpr std::size_t kKeep = std::numeric_limits<std::size_t>::max();       // next state or loss

std::string NodeLabel(const StepGraph& g, std::size_t i) {
  return "node " + std::to_string(i) + " (" + g.nodes[i].name + ")";
}

// The one routine both ExecuteStep and ExecuteNode run, so a node's result
// cannot depend on which of them ran it.
Status RunNode(const ExecConfig& config, const StepGraph& g, std::size_t i,
               std::span<const Tensor* const> inputs, std::uint64_t seed, NodeRounding* rounding,
               std::vector<Tensor>& outputs) {
  const Node& node = g.nodes[i];
  const OpContext ctx(config, rounding, RngAddress{seed, g.step, static_cast<std::uint64_t>(i)});
  Status s = RunOp(ctx, node.kind, node.attrs, inputs, outputs);
  if (!s.ok()) return s.WithContext(NodeLabel(g, i));
  if (rounding != nullptr) VT_TRY(rounding->Finish().WithContext(NodeLabel(g, i)));
  // The graph declares every output shape; a difference is a bug in the
  // graph or an operator, never the input's fault.
  if (outputs.size() != node.num_outputs()) {
    return Status::Error("graph-output-count",
                         NodeLabel(g, i) + " produced " + std::to_string(outputs.size()) +
                             " outputs, the graph declares " + std::to_string(node.num_outputs()));
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].shape() != node.output_shapes[k]) {
      return Status::Error("graph-output-shape", NodeLabel(g, i) + " output " + std::to_string(k) + " is " +
                                                     ShapeToString(outputs[k].shape()) +
                                                     ", the graph declares " +
                                                     ShapeToString(node.output_shapes[k]));
    }
  }
  return Status::Ok();
}

std::optional<NodeRounding> MakeRounding(const ExecConfig& config, const RoundingLog* replay,
                                         const StepGraph& g, std::size_t i, const TauTable* tau_table,
                                         bool skip_invalid = false, bool steer = false) {
  if (config.mode != Mode::kRounded) return std::nullopt;
  RoundingSpec spec = config.rounding;
  if (tau_table != nullptr) spec.tau_q16 = tau_table->Lookup(NodeTauKey(g, i));
  if (replay != nullptr && skip_invalid) return NodeRounding::ReplaySkippingInvalid(spec, *replay);
  if (replay != nullptr) return NodeRounding::Replay(spec, *replay);
  if (steer) return NodeRounding::RecordSteered(spec);
  return NodeRounding::Record(spec);
}

}  // namespace

// The comment in executor.h says why; docs/kernels.md, "Why the process-wide
// mallopt is safe", why it is safe.
void KeepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
#endif
}

std::vector<const Tensor*> NodeInputTensors(const StepGraph& graph, std::size_t i,
                                            std::span<const Tensor> state, std::span<const Tensor> batch,
                                            const std::vector<std::vector<Tensor>>& outputs) {
  std::vector<const Tensor*> out;
  for (const NodeInput& in : graph.nodes[i].inputs) {
    switch (in.source) {
      case NodeInputSource::kState:
        out.push_back(&state[in.index]);
        break;
      case NodeInputSource::kBatch:
        out.push_back(&batch[in.index]);
        break;
      case NodeInputSource::kNode:
        out.push_back(&outputs[in.index][in.slot]);
        break;
    }
  }
  return out;
}

Result<StepResult> ExecuteStep(const ExecConfig& config, const StepGraph& graph,
                               std::span<const Tensor> state, std::span<const Tensor> batch,
                               const StepOptions& options) {
  // Graphs come from BuildStepGraph, but the liveness bookkeeping below
  // indexes by the graph's references: refuse a malformed one outright.
  VT_TRY(CheckGraph(graph));
  if (state.size() != graph.state_shapes.size()) {
    return Status::Invalid("state-shape-mismatch", "the state has " + std::to_string(state.size()) +
                                                       " tensors, the graph " +
                                                       std::to_string(graph.state_shapes.size()));
  }
  for (std::size_t k = 0; k < state.size(); ++k) {
    if (state[k].shape() != graph.state_shapes[k] || state[k].numel() != NumElements(graph.state_shapes[k])) {
      return Status::Invalid("state-shape-mismatch", graph.state_names[k] + " is " +
                                                         ShapeToString(state[k].shape()) + ", expected " +
                                                         ShapeToString(graph.state_shapes[k]));
    }
  }
  if (batch.size() != graph.batch_shapes.size()) {
    return Status::Invalid("batch-shape-mismatch", "a batch is inputs and targets");
  }
  for (std::size_t k = 0; k < batch.size(); ++k) {
    if (batch[k].shape() != graph.batch_shapes[k] || batch[k].numel() != NumElements(graph.batch_shapes[k])) {
      return Status::Invalid("batch-shape-mismatch", "batch tensor " + std::to_string(k) + " is " +
                                                         ShapeToString(batch[k].shape()) + ", expected " +
                                                         ShapeToString(graph.batch_shapes[k]));
    }
  }
  KeepFreedMemoryForReuse();
  const bool rounded = config.mode == Mode::kRounded;
  const bool replay = rounded && options.replay_logs != nullptr;
  if (rounded) VT_TRY(config.rounding.Validate());
  if (replay && options.replay_logs->size() != graph.nodes.size()) {
    return Status::Invalid("log-count-mismatch", std::to_string(options.replay_logs->size()) + " logs for " +
                                                     std::to_string(graph.nodes.size()) + " nodes");
  }

  try {
    const std::size_t n = graph.nodes.size();
    // Liveness: the last node that reads each output.
    std::vector<std::vector<std::size_t>> last_use(n);
    for (std::size_t i = 0; i < n; ++i) last_use[i].assign(graph.nodes[i].num_outputs(), kNoUse);
    for (std::size_t i = 0; i < n; ++i) {
      for (const NodeInput& in : graph.nodes[i].inputs) {
        if (in.source == NodeInputSource::kNode) last_use[in.index][in.slot] = i;
      }
    }
    for (const NodeInput& in : graph.next_state) {
      if (in.source == NodeInputSource::kNode) last_use[in.index][in.slot] = kKeep;
    }
    last_use[graph.loss.index][graph.loss.slot] = kKeep;

    StepResult result;
    std::vector<std::vector<Tensor>> outs(n);
    if (rounded && !replay) result.logs.reserve(n);
    if (options.hash_outputs) result.output_hashes.resize(n);
    std::vector<const Tensor*> inputs;
    for (std::size_t i = 0; i < n; ++i) {
      const Node& node = graph.nodes[i];
      inputs.clear();
      for (const NodeInput& in : node.inputs) {
        switch (in.source) {
          case NodeInputSource::kState:
            inputs.push_back(&state[in.index]);
            break;
          case NodeInputSource::kBatch:
            inputs.push_back(&batch[in.index]);
            break;
          case NodeInputSource::kNode:
            inputs.push_back(&outs[in.index][in.slot]);
            break;
        }
      }
      std::optional<NodeRounding> rounding =
          MakeRounding(config, replay ? &(*options.replay_logs)[i] : nullptr, graph, i, options.tau_table,
                       options.skip_invalid_log_entries, options.steer_rounding);
      VT_TRY(RunNode(config, graph, i, inputs, options.seed, rounding ? &*rounding : nullptr, outs[i]));
      if (rounding) {
        result.values_rounded += rounding->values_rounded();
        result.skipped_log_entries += rounding->skipped_entries();
        result.reference_records += rounding->reference_records();
        result.reference_values += rounding->reference_values();
        if (!replay) result.logs.push_back(rounding->log());
      }
      if (options.observer) VT_TRY(options.observer(i, outs[i]));
      if (options.hash_outputs) {
        for (const Tensor& t : outs[i]) result.output_hashes[i].push_back(TensorHash(t, config.threads));
      }
      if (!options.keep_outputs) {
        for (const NodeInput& in : node.inputs) {
          if (in.source == NodeInputSource::kNode && last_use[in.index][in.slot] == i) {
            outs[in.index][in.slot] = Tensor();
          }
        }
        for (std::size_t k = 0; k < outs[i].size(); ++k) {
          if (last_use[i][k] == kNoUse) outs[i][k] = Tensor();
        }
      }
    }

    // Move the next state out (copy when the outputs are kept or a slot is
    // named twice).
    std::vector<std::vector<int>> refs(n);
    for (std::size_t i = 0; i < n; ++i) refs[i].assign(graph.nodes[i].num_outputs(), 0);
    for (const NodeInput& in : graph.next_state) {
      if (in.source == NodeInputSource::kNode) ++refs[in.index][in.slot];
    }
    result.next_state.reserve(graph.next_state.size());
    for (const NodeInput& in : graph.next_state) {
      switch (in.source) {
        case NodeInputSource::kState:
          result.next_state.push_back(state[in.index]);
          break;
        case NodeInputSource::kBatch:
          result.next_state.push_back(batch[in.index]);
          break;
        case NodeInputSource::kNode: {
          Tensor& t = outs[in.index][in.slot];
          if (options.keep_outputs || --refs[in.index][in.slot] > 0) {
            result.next_state.push_back(t);
          } else {
            result.next_state.push_back(std::move(t));
          }
          break;
        }
      }
    }
    const Tensor& loss = outs[graph.loss.index][graph.loss.slot];
    result.loss = loss.numel() > 0 ? loss[0] : 0.0f;
    if (options.keep_outputs) result.outputs = std::move(outs);
    return result;
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory", "executing the step");
  }
}

Result<NodeResult> ExecuteNode(const ExecConfig& config, const StepGraph& graph, std::size_t i,
                               std::span<const Tensor* const> inputs, std::uint64_t seed,
                               const RoundingLog* replay_log, const TauTable* tau_table) {
  if (i >= graph.nodes.size()) {
    return Status::Invalid("node-out-of-range", "node " + std::to_string(i) + " of a step with " +
                                                    std::to_string(graph.nodes.size()));
  }
  const Node& node = graph.nodes[i];
  if (inputs.size() != node.inputs.size()) {
    return Status::Invalid("node-bad-inputs", NodeLabel(graph, i) + " takes " +
                                                  std::to_string(node.inputs.size()) + " inputs, got " +
                                                  std::to_string(inputs.size()));
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k] == nullptr)
      return Status::Invalid("node-bad-inputs", NodeLabel(graph, i) + ": a null input");
    const Shape& want = InputShape(graph, node.inputs[k]);
    if (inputs[k]->shape() != want || inputs[k]->numel() != NumElements(want)) {
      return Status::Invalid("node-input-shape", NodeLabel(graph, i) + " input " + std::to_string(k) +
                                                     " is " + ShapeToString(inputs[k]->shape()) +
                                                     ", expected " + ShapeToString(want));
    }
  }
  if (config.mode == Mode::kRounded) VT_TRY(config.rounding.Validate());
  try {
    NodeResult result;
    std::optional<NodeRounding> rounding = MakeRounding(config, replay_log, graph, i, tau_table);
    VT_TRY(RunNode(config, graph, i, inputs, seed, rounding ? &*rounding : nullptr, result.outputs));
    if (rounding) {
      result.values_rounded = rounding->values_rounded();
      if (replay_log == nullptr) result.log = rounding->log();
    }
    return result;
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory", "executing the node");
  }
}

}  // namespace vt::kernels::graph
