// The arbitration precompile's view of a job (contract_vm/graph_source.h,
// node_spec.h) must be exactly the worker's: the same dataset leaves,
// batches, data cursor, τ and step graph (tensor bytes are one shared codec,
// kernels/tensor_codec.h). These tests
// pin each against the worker's own implementation.

#include <gtest/gtest.h>

#include <random>

#include "contract_vm/graph_source.h"
#include "contract_vm/node_spec.h"
#include "kernels/tensor_codec.h"
#include "kernels/calibration.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "protocol/types.h"
#include "tests/support/test_seed.h"
#include "worker/data_order.h"
#include "worker/dataset.h"
#include "worker/dispute.h"
#include "worker/job.h"
#include "kernels/tensor_codec.h"

namespace vt::vm {
namespace {

namespace graph = kernels::graph;

protocol::JobSpec MlpJob(std::uint64_t dataset_size, std::uint32_t batch) {
  graph::ModelSpec model;
  model.arch = graph::MlpSpec{5, {7}, 3, graph::Activation::kRelu};
  graph::OptimizerSpec opt;
  opt.kind = graph::OptimizerKind::kSgd;
  opt.lr = 0.1f;
  protocol::JobSpec job;
  job.model = graph::EncodeModelSpec(model);
  job.optimizer = graph::EncodeOptimizerSpec(opt);
  job.dataset_size = dataset_size;
  job.batch_size = batch;
  job.seed = 99;
  job.num_steps = 10;
  job.checkpoint_interval = 2;
  return job;
}

worker::Dataset SyntheticDataset(std::uint64_t n, std::uint64_t seed) {
  worker::Dataset d("synthetic", {5}, {}, 3);
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::vector<float> x(5);
    for (float& v : x) v = static_cast<float>(static_cast<std::int64_t>(rng() >> 41)) * 0x1p-20f;
    const float y = static_cast<float>(rng() % 3);
    d.Add(x, std::span<const float>(&y, 1));
  }
  return d;
}

TEST(KernelsGraphSource, BatchesAndCursorsMatchTheWorker) {
  const worker::Dataset dataset = SyntheticDataset(13, test::TestSeed());
  for (std::uint32_t batch : {1u, 4u, 13u, 20u}) {
    const protocol::JobSpec job = MlpJob(dataset.size(), batch);
    const KernelsGraphSource source;
    worker::DataOrder order(job.seed, dataset.size());
    worker::DataCursor cursor;
    protocol::StateHeader header;
    for (int step = 0; step < 12; ++step) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " step " + std::to_string(step));
      auto mine = source.BatchIndices(job, header);
      auto theirs = order.NextBatch(cursor, batch);
      ASSERT_TRUE(mine.ok() && theirs.ok());
      EXPECT_EQ(*mine, *theirs);
      std::vector<Bytes> leaves;
      for (std::uint64_t i : *mine) leaves.push_back(dataset.EncodeExample(i));
      auto assembled = source.AssembleBatch(job, leaves);
      ASSERT_TRUE(assembled.ok()) << assembled.status().ToString();
      const worker::Batch expected = worker::MakeBatch(dataset, *theirs);
      EXPECT_TRUE((*assembled)[0].BitwiseEqual(expected.inputs));
      EXPECT_TRUE((*assembled)[1].BitwiseEqual(expected.targets));
      auto next = source.NextHeader(job, header);
      ASSERT_TRUE(next.ok());
      EXPECT_EQ(next->step, header.step + 1);
      EXPECT_EQ(next->data_epoch, cursor.epoch);
      EXPECT_EQ(next->data_offset, cursor.offset);
      header = *next;
    }
  }
}

TEST(KernelsGraphSource, GraphIsTheKernelsGraphAndValid) {
  const protocol::JobSpec job = MlpJob(13, 4);
  const KernelsGraphSource source;
  auto mine = source.Build(job, 3);
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_TRUE(ValidateStepGraph(*mine).ok());
  auto model = graph::DecodeModelSpec(job.model);
  auto opt = graph::DecodeOptimizerSpec(job.optimizer);
  auto g = graph::BuildStepGraph(*model, *opt, 3, *graph::BatchShapes(*model, 4));
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(mine->nodes.size(), g->nodes.size());
  EXPECT_EQ(mine->num_state_tensors, g->state_names.size());
  for (std::size_t i = 0; i < g->nodes.size(); ++i) {
    EXPECT_EQ(mine->nodes[i].op_kind, static_cast<std::uint16_t>(g->nodes[i].kind));
    EXPECT_EQ(mine->nodes[i].attrs, EncodeToBytes(g->nodes[i].attrs));
    EXPECT_EQ(mine->nodes[i].num_outputs, g->nodes[i].num_outputs());
    EXPECT_EQ(mine->nodes[i].tau_q16, 0u) << "no τ outside rounded mode";
  }
  EXPECT_EQ(NodeSpecAt(*mine, mine->nodes.size()).inputs, mine->next_state);

  // Rounded mode: each node's τ from the job's table, looked up by the node's
  // key (op name and input shapes) with the "*" default, or the built-in default.
  protocol::JobSpec rounded = job;
  rounded.mode = 2;
  auto defaults = source.Build(rounded, 0);
  ASSERT_TRUE(defaults.ok());
  for (const NodeSpec& n : defaults->nodes) EXPECT_EQ(n.tau_q16, kernels::kDefaultTauQ16);
  auto g0 = graph::BuildStepGraph(*model, *opt, 0, *graph::BatchShapes(*model, 4));
  ASSERT_TRUE(g0.ok());
  const std::string key0 = graph::NodeTauKey(*g0, 0);
  EXPECT_EQ(key0.rfind(std::string(kernels::OpKindName(g0->nodes[0].kind)) + "/", 0), 0u) << key0;
  kernels::TauTable taus;
  taus.Set("*", 1234);
  taus.Set(key0, 99);
  rounded.tau_table = kernels::EncodeJobTauTable(taus);
  auto table = source.Build(rounded, 0);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  std::size_t keyed = 0;
  for (std::size_t i = 0; i < table->nodes.size(); ++i) {
    const bool same_key = graph::NodeTauKey(*g0, i) == key0;
    keyed += same_key ? 1 : 0;
    EXPECT_EQ(table->nodes[i].tau_q16, same_key ? 99u : 1234u) << i;
  }
  EXPECT_GE(keyed, 1u);
  rounded.tau_table.push_back(0);
  EXPECT_EQ(source.Build(rounded, 0).status().reason(), "job-bad-tau-table");
}

TEST(NodeSpec, ValidationAndRecordChecks) {
  using protocol::InputRef;
  using protocol::InputSource;
  StepGraph g;
  g.num_state_tensors = 2;
  g.nodes = {NodeSpec{3, {1}, {{InputSource::kState, 0, 0}, {InputSource::kBatch, 0, 0}}, 2, 0, {}},
             NodeSpec{40, {}, {{InputSource::kNode, 0, 1}}, 1, 0, {}}};
  g.next_state = {{InputSource::kNode, 1, 0}, {InputSource::kState, 1, 0}};
  EXPECT_TRUE(ValidateStepGraph(g).ok());
  auto broken = [&](auto&& change) {
    StepGraph b = g;
    change(b);
    return ValidateStepGraph(b).reason();
  };
  EXPECT_EQ(broken([](StepGraph& b) { b.nodes[0].inputs[0] = {InputSource::kNode, 0, 0}; }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.nodes[1].inputs[0].slot = 2; }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.nodes[0].inputs[0].index = 2; }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.nodes[0].inputs[1].index = 2; }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.next_state.pop_back(); }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.next_state[0] = {InputSource::kBatch, 0, 0}; }), "graph-invalid");
  EXPECT_EQ(broken([](StepGraph& b) { b.nodes[1].op_kind = kAssembleOpKind; }), "graph-invalid");

  protocol::NodeRecord rec{3, {1}, g.nodes[0].inputs, {Hash256{}, Hash256{}}, Hash256{}};
  EXPECT_TRUE(CheckRecordAgainstSpec(rec, g.nodes[0], false).ok());
  auto bad = [&](auto&& change, bool rounded = false) {
    protocol::NodeRecord r = rec;
    change(r);
    return CheckRecordAgainstSpec(r, g.nodes[0], rounded).reason();
  };
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.op_kind = 4; }), "record-bad-op");
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.attrs = {2}; }), "record-bad-attrs");
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.inputs.pop_back(); }), "record-bad-inputs");
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.output_hashes.pop_back(); }), "record-bad-output-count");
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.log_hash.bytes[0] = 1; }), "record-bad-log-hash");
  EXPECT_EQ(bad([](protocol::NodeRecord& r) { r.log_hash.bytes[0] = 1; }, true), "");  // rounded: any log hash
  const NodeSpec assemble = NodeSpecAt(g, 2);
  EXPECT_EQ(assemble.op_kind, kAssembleOpKind);
  EXPECT_EQ(assemble.num_outputs, 1u);
}

}  // namespace
}  // namespace vt::vm
