// Step graphs: structure, purity, step dependence, batch validation, the
// referee's single-node view, and GPT-2 small's graph (built, not run).

#include "kernels/graph/step_graph.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/kernels/graph/graph_test_util.h"

namespace vt::kernels::graph {
namespace {

using test::Adam;
using test::Preset;

StepGraph Build(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step, std::int64_t batch) {
  const auto shapes = BatchShapes(model, batch);
  EXPECT_TRUE(shapes.ok());
  auto g = BuildStepGraph(model, opt, step, *shapes);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return std::move(g).value();
}

std::size_t CountKind(const StepGraph& g, OpKind kind) {
  std::size_t n = 0;
  for (const Node& node : g.nodes) n += node.kind == kind;
  return n;
}

TEST(StepGraph, NodeInputSourceValuesMatchTheProtocol) {
  // protocol::InputSource: kState = 0, kBatch = 1, kNode = 2 (protocol/types.h).
  EXPECT_EQ(static_cast<int>(NodeInputSource::kState), 0);
  EXPECT_EQ(static_cast<int>(NodeInputSource::kBatch), 1);
  EXPECT_EQ(static_cast<int>(NodeInputSource::kNode), 2);
}

TEST(StepGraph, EveryPresetBuildsAWellFormedGraph) {
  OptimizerSpec sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.momentum = 0.9f;
  OptimizerSpec clipped = Adam(1e-3f);
  clipped.clip_norm = 1.0f;
  for (std::string_view name : ModelPresetNames()) {
    for (const OptimizerSpec& opt : {Adam(1e-3f), sgd, clipped}) {
      SCOPED_TRACE(std::string(name));
      const ModelSpec model = *ModelPreset(name);
      const StepGraph g = Build(model, opt, 3, 2);
      EXPECT_TRUE(CheckGraph(g).ok()) << CheckGraph(g).ToString();
      const auto specs = *StateSpecs(model, opt);
      ASSERT_EQ(g.state_names.size(), specs.size());
      std::size_t params = 0;
      for (std::size_t i = 0; i < specs.size(); ++i) {
        EXPECT_EQ(g.state_names[i], specs[i].name);
        EXPECT_EQ(g.state_shapes[i], specs[i].shape);
        params += specs[i].role == TensorRole::kParameter;
      }
      // One optimizer node per parameter, one schedule node (+ the loss seed),
      // one loss, clipping only when asked.
      EXPECT_EQ(CountKind(g, opt.kind == OptimizerKind::kSgd ? OpKind::kSgd : OpKind::kAdamW), params);
      EXPECT_EQ(CountKind(g, OpKind::kLrSchedule), 2u);
      EXPECT_EQ(CountKind(g, OpKind::kCrossEntropy), 1u);
      EXPECT_EQ(CountKind(g, OpKind::kClipGradNorm), opt.clip_norm > 0.0f ? 1u : 0u);
      // Every state tensor is consumed or rewritten by a node of the step.
      for (const NodeInput& in : g.next_state) EXPECT_EQ(in.source, NodeInputSource::kNode);
      std::set<std::uint32_t> state_read;
      for (const Node& n : g.nodes) {
        for (const NodeInput& in : n.inputs) {
          if (in.source == NodeInputSource::kState) state_read.insert(in.index);
        }
      }
      EXPECT_EQ(state_read.size(), specs.size());
    }
  }
}

TEST(StepGraph, ClipNodeTakesEveryGradientInParameterOrder) {
  OptimizerSpec opt = Adam(1e-3f);
  opt.clip_norm = 0.5f;
  const StepGraph g = Build(Preset("gpt-tiny"), opt, 0, 2);
  std::size_t clip = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind == OpKind::kClipGradNorm) clip = i;
  }
  ASSERT_GT(clip, 0u);
  const Node& c = g.nodes[clip];
  EXPECT_EQ(c.attrs, ClipGradNormAttrs(0.5f));
  EXPECT_EQ(c.inputs.size(), 28u);  // gpt-tiny's trainable tensors
  EXPECT_EQ(c.num_outputs(), 29u);
  // AdamW node k (parameter k in name order) reads clipped gradient k.
  std::size_t k = 0;
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::kAdamW) continue;
    EXPECT_EQ(n.inputs[1], NodeInput::Node(static_cast<std::uint32_t>(clip), static_cast<std::uint32_t>(k)));
    EXPECT_EQ(InputShape(g, n.inputs[0]), c.output_shapes[k]);
    ++k;
  }
  EXPECT_EQ(k, 28u);
}

TEST(StepGraph, BuildingIsPure) {
  for (const char* name : {"mlp-tiny", "cnn-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Build(Preset(name), Adam(1e-3f), 5, 3), Build(Preset(name), Adam(1e-3f), 5, 3));
  }
}

// Steps differ only in the schedule node's step attribute and AdamW's
// bias-correction step; the loss seed is step-independent.
TEST(StepGraph, OnlyStepDependentAttributesChangeBetweenSteps) {
  OptimizerSpec opt = Adam(1e-3f);
  opt.schedule = LrScheduleKind::kCosine;
  opt.warmup_steps = 2;
  opt.total_steps = 100;
  for (const char* name : {"mlp-tiny", "cnn-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(name);
    const StepGraph a = Build(Preset(name), opt, 0, 2);
    const StepGraph b = Build(Preset(name), opt, 17, 2);
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    EXPECT_EQ(a.next_state, b.next_state);
    std::size_t differing = 0, adam = 0;
    for (std::size_t i = 0; i < a.nodes.size(); ++i) {
      const Node& x = a.nodes[i];
      const Node& y = b.nodes[i];
      EXPECT_EQ(x.kind, y.kind);
      EXPECT_EQ(x.inputs, y.inputs);
      EXPECT_EQ(x.output_shapes, y.output_shapes);
      EXPECT_EQ(x.name, y.name);
      if (x.attrs == y.attrs) continue;
      ++differing;
      if (x.kind == OpKind::kAdamW) {
        ++adam;
        EXPECT_EQ(x.attrs.ints, std::vector<std::int64_t>{1});
        EXPECT_EQ(y.attrs.ints, std::vector<std::int64_t>{18});
        EXPECT_EQ(x.attrs.floats, y.attrs.floats);
      } else {
        EXPECT_EQ(x.kind, OpKind::kLrSchedule);
        EXPECT_EQ(x.name, "lr");
        EXPECT_EQ(x.attrs.ints[1], 0);
        EXPECT_EQ(y.attrs.ints[1], 17);
      }
    }
    EXPECT_EQ(differing, adam + 1);
    EXPECT_EQ(adam, CountKind(a, OpKind::kAdamW));
  }
  // With SGD only the schedule node differs.
  OptimizerSpec sgd = opt;
  sgd.kind = OptimizerKind::kSgd;
  const StepGraph a = Build(Preset("mlp-tiny"), sgd, 0, 2);
  const StepGraph b = Build(Preset("mlp-tiny"), sgd, 9, 2);
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.nodes.size(); ++i) differing += !(a.nodes[i] == b.nodes[i]);
  EXPECT_EQ(differing, 1u);
}

TEST(StepGraph, TheRefereeViewOfOneNodeEqualsTheFullGraph) {
  const ModelSpec model = Preset("gpt-tiny");
  const auto shapes = *BatchShapes(model, 2);
  const StepGraph g = Build(model, Adam(1e-3f), 4, 2);
  EXPECT_EQ(*NodeCount(model, Adam(1e-3f), 4, shapes), g.nodes.size());
  for (std::size_t i : {std::size_t{0}, g.nodes.size() / 2, g.nodes.size() - 1}) {
    const auto n = StepNode(model, Adam(1e-3f), 4, shapes, i);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(*n, g.nodes[i]);
  }
  EXPECT_EQ(StepNode(model, Adam(1e-3f), 4, shapes, g.nodes.size()).status().reason(), "node-out-of-range");
}

TEST(StepGraph, BadBatchesAndStepsAreRejected) {
  const ModelSpec gpt = Preset("gpt-tiny");
  const auto reason = [&](const ModelSpec& m, std::vector<Shape> shapes, std::uint64_t step = 0) {
    const auto g = BuildStepGraph(m, Adam(1e-3f), step, shapes);
    return g.ok() ? std::string("ok") : g.status().reason();
  };
  EXPECT_EQ(reason(gpt, {{2, 32}, {2, 32}}), "ok");
  EXPECT_EQ(reason(gpt, {{2, 16}, {2, 16}}), "graph-bad-batch");  // sequences fill the context
  EXPECT_EQ(reason(gpt, {{2, 32}, {2, 31}}), "graph-bad-batch");
  EXPECT_EQ(reason(gpt, {{2, 32}}), "graph-bad-batch");
  EXPECT_EQ(reason(gpt, {{}, {}}), "graph-bad-batch");
  EXPECT_EQ(reason(gpt, {{0, 32}, {0, 32}}), "graph-bad-batch");
  EXPECT_EQ(reason(Preset("mlp-tiny"), {{4, 16}, {4}}), "ok");
  EXPECT_EQ(reason(Preset("mlp-tiny"), {{4, 16}, {4, 1}}), "graph-bad-batch");
  EXPECT_EQ(reason(Preset("cnn-tiny"), {{4, 1, 8, 8}, {4}}), "ok");
  EXPECT_EQ(reason(Preset("cnn-tiny"), {{4, 1, 8, 9}, {4}}), "graph-bad-batch");
  // Dropout addresses its RNG with a 32-bit step.
  EXPECT_EQ(reason(gpt, {{2, 32}, {2, 32}}, 0xFFFFFFFFull), "ok");
  EXPECT_EQ(reason(gpt, {{2, 32}, {2, 32}}, 0x100000000ull), "graph-bad-step");
  EXPECT_EQ(reason(Preset("mlp-tiny"), {{4, 16}, {4}}, 0x100000000ull), "ok");
  EXPECT_EQ(reason(Preset("mlp-tiny"), {{4, 16}, {4}}, std::uint64_t{1} << 62), "graph-bad-step");
  // A valid model whose activations no operator accepts at this batch size.
  ModelSpec wide;
  wide.arch = GptSpec{256, 4096, 1, 1, 64, 0.0f};
  EXPECT_EQ(reason(wide, {{1, 4096}, {1, 4096}}), "ok");
  EXPECT_EQ(reason(wide, {{256, 4096}, {256, 4096}}), "graph-too-large");  // att [256,1,4096,4096]
}

TEST(StepGraph, GptWithoutDropoutHasNoDropoutNodes) {
  ModelSpec m = Preset("gpt-tiny");
  const StepGraph with = Build(m, Adam(1e-3f), 0, 1);
  std::get<GptSpec>(m.arch).dropout = 0.0f;
  const StepGraph without = Build(m, Adam(1e-3f), 0, 1);
  EXPECT_EQ(CountKind(with, OpKind::kDropout), 1u + 2 * 2);  // embedding + 2 per layer
  EXPECT_EQ(CountKind(with, OpKind::kDropoutBackward), 5u);
  EXPECT_EQ(CountKind(without, OpKind::kDropout), 0u);
  EXPECT_EQ(without.nodes.size() + 10, with.nodes.size());
}

TEST(StepGraph, TiedHeadGradientIsAccumulated) {
  const StepGraph g = Build(Preset("gpt-tiny"), Adam(1e-3f), 0, 1);
  std::size_t acc = 0;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].name == "wte.weight.grad.accumulate") acc = i;
  }
  ASSERT_GT(acc, 0u);
  const Node& a = g.nodes[acc];
  EXPECT_EQ(a.kind, OpKind::kAdd);
  EXPECT_EQ(g.nodes[a.inputs[0].index].name, "lm_head.backward");
  EXPECT_EQ(a.inputs[0].slot, 1u);
  EXPECT_EQ(g.nodes[a.inputs[1].index].name, "wte.backward");
}

TEST(StepGraph, Gpt2SmallBuildsWithoutRunning) {
  const ModelSpec model = Preset("gpt2-small");
  EXPECT_EQ(*ParameterCount(model), 124439808u);
  const StepGraph g = Build(model, Adam(6e-4f), 0, 1);
  EXPECT_TRUE(CheckGraph(g).ok());
  EXPECT_EQ(g.state_names.size(), 148u * 3);  // 148 parameters, AdamW m and v
  // Per layer 12 forward + 12 backward nodes (2 + 2 of them dropout); 4 + 3
  // forward and 3 + 3 backward around the stack; the loss seed, the wte
  // accumulation, lr and 148 AdamW nodes.
  EXPECT_EQ(g.nodes.size(), 12u * 24 + 7 + 6 + 3 + 148);
  std::map<OpKind, std::size_t> kinds;
  for (const Node& n : g.nodes) ++kinds[n.kind];
  EXPECT_EQ(kinds[OpKind::kAttention], 12u);
  EXPECT_EQ(kinds[OpKind::kAttentionBackward], 12u);
  EXPECT_EQ(kinds[OpKind::kLinear], 4u * 12 + 1);
  EXPECT_EQ(kinds[OpKind::kLinearBackward], 4u * 12 + 1);
  EXPECT_EQ(kinds[OpKind::kAdamW], 148u);
  const Node& head = g.nodes[g.loss.index - 1];
  EXPECT_EQ(head.name, "lm_head");
  EXPECT_EQ(head.output_shapes[0], (Shape{1, 1024, 50257}));
}

}  // namespace
}  // namespace vt::kernels::graph
