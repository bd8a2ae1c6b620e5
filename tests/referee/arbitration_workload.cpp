#include "tests/referee/arbitration_workload.h"

#include <algorithm>

#include "common/philox.h"
#include "common/random.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "kernels/tensor_codec.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "protocol/state.h"

namespace vt::test {

namespace graph = kernels::graph;

struct ArbitrationWorkload::Impl {
  WorkloadInfo info;
  int threads = 1;
  protocol::JobSpec job;
  graph::ModelSpec model;
  graph::OptimizerSpec opt;
  graph::StepGraph graph;
  vm::StepGraph vgraph;
  std::size_t max_node = 0;
  std::vector<kernels::Tensor> state;
  std::vector<kernels::Tensor> batch;
  vm::KernelsGraphSource source;
  vm::ArbitrationCase arb_case;
  Bytes payload;
  std::vector<Hash256> expected;
  bool prepared = false;

  kernels::ExecConfig Repops() const {
    kernels::ExecConfig c;
    c.mode = kernels::Mode::kRepops;
    c.threads = threads;
    return c;
  }
};

ArbitrationWorkload::ArbitrationWorkload(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
ArbitrationWorkload::~ArbitrationWorkload() = default;
const WorkloadInfo& ArbitrationWorkload::info() const { return m_impl->info; }

Result<std::unique_ptr<ArbitrationWorkload>> ArbitrationWorkload::Describe(const std::string& preset,
                                                                           std::int64_t batch, int threads) {
  auto w = std::make_unique<Impl>();
  w->threads = threads;
  VT_ASSIGN_OR_RETURN(w->model, graph::ModelPreset(preset));
  if (w->model.family() != graph::ModelFamily::kGpt) return Status::Invalid("workload-not-gpt");
  w->opt.clip_norm = 1.0f;  // AdamW with clipping, as the kernels step benchmark
  w->job.model = graph::EncodeModelSpec(w->model);
  w->job.optimizer = graph::EncodeOptimizerSpec(w->opt);
  w->job.batch_size = static_cast<std::uint32_t>(batch);
  w->job.dataset_size = 1;
  w->job.num_steps = 1;
  w->job.checkpoint_interval = 1;
  w->job.mode = static_cast<std::uint8_t>(kernels::Mode::kRepops);
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes, graph::BatchShapes(w->model, batch));
  VT_ASSIGN_OR_RETURN(w->graph, graph::BuildStepGraph(w->model, w->opt, 0, shapes));
  VT_ASSIGN_OR_RETURN(w->vgraph, w->source.Build(w->job, 0));

  WorkloadInfo& info = w->info;
  info.preset = preset;
  info.batch = batch;
  info.context = std::get<graph::GptSpec>(w->model.arch).context;
  info.nodes = w->graph.nodes.size();
  std::vector<std::uint64_t> flops;
  for (std::size_t i = 0; i < w->graph.nodes.size(); ++i) {
    const auto& node = w->graph.nodes[i];
    const std::uint64_t f = kernels::OpFlops(node.kind, node.attrs, graph::NodeInputShapes(w->graph, i));
    flops.push_back(f);
    info.step_flops += f;
    bool reads_batch = false;
    for (const auto& in : node.inputs) reads_batch |= in.source == graph::NodeInputSource::kBatch;
    if (!reads_batch && f > flops[w->max_node]) w->max_node = i;
  }
  info.max_node = w->graph.nodes[w->max_node].name;
  info.max_node_flops = flops[w->max_node];
  std::sort(flops.begin(), flops.end());
  info.median_node_flops = flops[flops.size() / 2];
  return std::unique_ptr<ArbitrationWorkload>(new ArbitrationWorkload(std::move(w)));
}

Status ArbitrationWorkload::Prepare() {
  Impl& w = *m_impl;
  if (w.prepared) return Status::Ok();
  VT_ASSIGN_OR_RETURN(graph::NamedTensors init, graph::InitState(w.model, w.opt, 1, w.threads));
  w.state = std::move(init.tensors);
  PhiloxStream s(2024, 0, 0);
  const auto vocab = static_cast<std::uint64_t>(std::get<graph::GptSpec>(w.model.arch).vocab);
  w.batch.clear();
  for (const auto& shape : w.graph.batch_shapes) {
    kernels::Tensor t(shape);
    for (std::int64_t i = 0; i < t.numel(); ++i) t[i] = static_cast<float>(NextUniformInt(s, vocab));
    w.batch.push_back(std::move(t));
  }
  graph::StepOptions o;
  o.seed = 1;
  o.keep_outputs = true;
  VT_ASSIGN_OR_RETURN(graph::StepResult run, graph::ExecuteStep(w.Repops(), w.graph, w.state, w.batch, o));

  protocol::StateHeader header;
  header.tensor_names = init.names;
  std::vector<Hash256> leaves;
  for (const auto& t : w.state) leaves.push_back(t.Hash());
  leaves.push_back(protocol::StateHeaderHash(header));
  const crypto::MerkleTree state_tree = crypto::MerkleTree::FromLeafHashes(leaves);
  std::vector<Hash256> record_hashes;
  std::vector<protocol::NodeRecord> records;
  for (std::size_t i = 0; i < w.vgraph.nodes.size(); ++i) {
    protocol::NodeRecord r;
    r.op_kind = w.vgraph.nodes[i].op_kind;
    r.attrs = w.vgraph.nodes[i].attrs;
    r.inputs = w.vgraph.nodes[i].inputs;
    for (const auto& t : run.outputs[i]) r.output_hashes.push_back(t.Hash());
    record_hashes.push_back(protocol::NodeRecordHash(r));
    records.push_back(std::move(r));
  }
  record_hashes.push_back(Hash256{});  // the assemble leaf: not opened for this node
  const crypto::MerkleTree node_tree = crypto::MerkleTree::FromLeafHashes(record_hashes);

  vm::ArbitrationPayload p;
  p.header = header;
  p.header_proof = state_tree.Prove(w.state.size());
  for (const auto& ref : w.vgraph.nodes[w.max_node].inputs) {
    vm::InputOpening in;
    if (ref.source == protocol::InputSource::kState) {
      in.tensor = kernels::EncodeTensor(w.state[ref.index]);
      in.proof = state_tree.Prove(ref.index);
    } else {
      in.tensor = kernels::EncodeTensor(run.outputs[ref.index][ref.slot]);
      in.producer = records[ref.index];
      in.proof = node_tree.Prove(ref.index);
    }
    p.inputs.push_back(std::move(in));
  }
  w.payload = EncodeToBytes(p);
  w.info.payload_bytes = w.payload.size();
  w.arb_case.job = w.job;
  w.arb_case.step = 0;
  w.arb_case.state_hash = state_tree.root();
  w.arb_case.node_root = node_tree.root();
  w.arb_case.node_count = node_tree.leaf_count();
  w.arb_case.node_index = w.max_node;
  w.expected = records[w.max_node].output_hashes;
  w.prepared = true;
  return Status::Ok();
}

Status ArbitrationWorkload::RunStep() {
  Impl& w = *m_impl;
  VT_TRY(Prepare());
  graph::StepOptions o;
  o.seed = 1;
  VT_ASSIGN_OR_RETURN(graph::StepResult r, graph::ExecuteStep(w.Repops(), w.graph, w.state, w.batch, o));
  (void)r;
  return Status::Ok();
}

Result<std::uint64_t> ArbitrationWorkload::RunArbitration() {
  Impl& w = *m_impl;
  VT_TRY(Prepare());
  const vm::Arbiter arbiter(w.source);
  vm::GasMeter gas(std::uint64_t{1} << 62);
  VT_ASSIGN_OR_RETURN(vm::ArbitrationOutcome outcome, arbiter.Arbitrate(w.arb_case, w.payload, gas));
  if (outcome.kind != vm::ArbitrationKind::kExecuted || outcome.output_hashes != w.expected)
    return Status::Error("workload-mismatch", "the precompile does not reproduce the step's node");
  return gas.used();
}

}  // namespace vt::test
