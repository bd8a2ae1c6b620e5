#pragma once
// Shared helpers of the kernels/graph tests: synthetic batches and specs.

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "common/philox.h"
#include "common/random.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/tensor.h"

namespace vt::kernels::graph::test {

inline ModelSpec Preset(const std::string& name) {
  auto m = ModelPreset(name);
  if (!m.ok()) std::abort();
  return *m;
}

// A fixed synthetic batch: normal inputs and random labels (MLP, CNN), or
// random tokens with next-token targets (GPT).
inline std::vector<Tensor> SyntheticBatch(const ModelSpec& model, std::int64_t batch, std::uint64_t seed) {
  const std::vector<Shape> shapes = *BatchShapes(model, batch);
  PhiloxStream s(seed, 0, 0);
  Tensor inputs(shapes[0]);
  Tensor targets(shapes[1]);
  if (model.family() == ModelFamily::kGpt) {
    const auto& g = std::get<GptSpec>(model.arch);
    const auto vocab = static_cast<std::uint64_t>(g.vocab);
    for (std::int64_t i = 0; i < inputs.numel(); ++i)
      inputs[i] = static_cast<float>(NextUniformInt(s, vocab));
    const std::int64_t t = g.context;
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t j = 0; j < t; ++j) {
        targets[b * t + j] = j + 1 < t ? inputs[b * t + j + 1] : static_cast<float>(NextUniformInt(s, vocab));
      }
    }
  } else {
    const std::int64_t classes = model.family() == ModelFamily::kMlp ? std::get<MlpSpec>(model.arch).classes
                                                                     : std::get<CnnSpec>(model.arch).classes;
    for (std::int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = NextNormal(s);
    for (std::int64_t i = 0; i < targets.numel(); ++i) {
      targets[i] = static_cast<float>(NextUniformInt(s, static_cast<std::uint64_t>(classes)));
    }
  }
  return {std::move(inputs), std::move(targets)};
}

inline OptimizerSpec Adam(float lr) {
  OptimizerSpec o;
  o.kind = OptimizerKind::kAdamW;
  o.lr = lr;
  o.weight_decay = 0.01f;
  return o;
}

}  // namespace vt::kernels::graph::test
