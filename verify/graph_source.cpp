#include "verify/graph_source.h"

#include <algorithm>
#include <limits>
#include <string>

#include "kernels/tensor_codec.h"
#include "kernels/calibration.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/mode.h"
#include "protocol/data_order.h"

namespace vt::verify {
namespace {

protocol::InputRef ToRef(const kernels::graph::NodeInput& in) {
  return protocol::InputRef{static_cast<protocol::InputSource>(in.source), in.index, in.slot};
}

struct Specs {
  kernels::graph::ModelSpec model;
  kernels::graph::OptimizerSpec optimizer;
  std::vector<kernels::Shape> batch_shapes;
};

Result<Specs> DecodeSpecs(const protocol::JobSpec& job) {
  Specs s;
  VT_ASSIGN_OR_RETURN(s.model, kernels::graph::DecodeModelSpec(job.model));
  VT_ASSIGN_OR_RETURN(s.optimizer, kernels::graph::DecodeOptimizerSpec(job.optimizer));
  VT_ASSIGN_OR_RETURN(s.batch_shapes, kernels::graph::BatchShapes(s.model, job.batch_size));
  return s;
}

Result<std::vector<kernels::Shape>> BatchShapesOf(const protocol::JobSpec& job) {
  auto model = kernels::graph::DecodeModelSpec(job.model);
  if (!model.ok()) return model.status();
  return kernels::graph::BatchShapes(*model, job.batch_size);
}

}  // namespace

Result<StepGraph> KernelsGraphSource::Build(const protocol::JobSpec& job, std::uint64_t step) const {
  VT_ASSIGN_OR_RETURN(Specs specs, DecodeSpecs(job));
  VT_ASSIGN_OR_RETURN(kernels::graph::StepGraph g,
                      kernels::graph::BuildStepGraph(specs.model, specs.optimizer, step, specs.batch_shapes));
  const bool rounded = job.mode == static_cast<std::uint8_t>(kernels::Mode::kRounded);
  kernels::TauTable taus;
  if (rounded) {
    VT_ASSIGN_OR_RETURN(taus, kernels::DecodeJobTauTable(job.tau_table));
  }
  StepGraph out;
  out.num_state_tensors = static_cast<std::uint32_t>(g.state_names.size());
  out.nodes.reserve(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const kernels::graph::Node& n = g.nodes[i];
    NodeSpec spec;
    spec.op_kind = static_cast<std::uint16_t>(n.kind);
    spec.attrs = EncodeToBytes(n.attrs);
    for (const auto& in : n.inputs) spec.inputs.push_back(ToRef(in));
    spec.num_outputs = static_cast<std::uint32_t>(n.num_outputs());
    // The worker's executor uses the same lookup (StepOptions::tau_table).
    spec.tau_q16 = rounded ? taus.Lookup(kernels::graph::NodeTauKey(g, i)) : 0;
    spec.output_shapes = n.output_shapes;
    out.nodes.push_back(std::move(spec));
  }
  for (const auto& in : g.next_state) out.next_state.push_back(ToRef(in));
  out.state_names = std::move(g.state_names);
  out.state_shapes = std::move(g.state_shapes);
  out.batch_shapes = std::move(g.batch_shapes);
  return out;
}

Result<protocol::StateHeader> KernelsGraphSource::NextHeader(const protocol::JobSpec& job,
                                                             const protocol::StateHeader& header) const {
  if (job.dataset_size == 0 || header.data_offset >= job.dataset_size)
    return Status::Invalid("data-bad-cursor", "cursor outside the dataset");
  protocol::StateHeader next = header;
  next.step += 1;
  // offset + B may pass several epochs when the batch is larger than the dataset.
  const std::uint64_t advanced = header.data_offset + job.batch_size;
  next.data_epoch += advanced / job.dataset_size;
  next.data_offset = advanced % job.dataset_size;
  return next;
}

Result<std::vector<std::uint64_t>> KernelsGraphSource::BatchIndices(const protocol::JobSpec& job,
                                                                    const protocol::StateHeader& header) const {
  return protocol::BatchIndices(job.seed, job.dataset_size, header.data_epoch, header.data_offset, job.batch_size);
}

Result<std::vector<kernels::Tensor>> KernelsGraphSource::AssembleBatch(const protocol::JobSpec& job,
                                                                       std::span<const Bytes> examples) const {
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes, BatchShapesOf(job));
  if (examples.empty() || examples.size() > job.batch_size)
    return Status::Invalid("batch-shape-mismatch", "wrong example count");
  if (shapes.size() != 2) return Status::Invalid("batch-shape-mismatch", "a batch is inputs and targets");
  // Decode and shape-check every example before allocating the [B, …]
  // tensors: their size then follows from bytes the caller paid for, never
  // from the model's declared shapes alone.
  std::array<std::vector<kernels::Tensor>, 2> parts;
  for (std::size_t e = 0; e < examples.size(); ++e) {
    Reader r(examples[e]);
    for (std::size_t k = 0; k < 2; ++k) {
      VT_ASSIGN_OR_RETURN(kernels::Tensor t, kernels::DecodeTensor(r));
      // The example's own shape must be the batch shape without its leading B.
      const kernels::Shape expected(shapes[k].begin() + 1, shapes[k].end());
      if (t.shape() != expected) return Status::Invalid("batch-shape-mismatch", "example " + std::to_string(e));
      parts[k].push_back(std::move(t));
    }
    VT_TRY(r.Finish());
  }
  std::vector<kernels::Tensor> batch;
  for (std::size_t k = 0; k < 2; ++k) {
    shapes[k][0] = static_cast<std::int64_t>(examples.size());
    batch.emplace_back(shapes[k]);
    auto out = batch[k].values().begin();
    for (const kernels::Tensor& t : parts[k]) out = std::copy(t.values().begin(), t.values().end(), out);
    parts[k].clear();
  }
  return batch;
}

}  // namespace vt::verify
