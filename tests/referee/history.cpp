#include "tests/referee/history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/tensor_codec.h"
#include "crypto/sha256.h"
#include "kernels/graph/executor.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"

namespace vt::test {
namespace {

namespace graph = kernels::graph;

bool IsRounded(const protocol::JobSpec& job) { return job.mode == static_cast<std::uint8_t>(kernels::Mode::kRounded); }

std::uint64_t IntervalOf(const protocol::JobSpec& job, std::uint64_t step) {
  return step / job.checkpoint_interval + 1;
}

std::vector<Hash256> TensorHashes(const std::vector<kernels::Tensor>& tensors) {
  std::vector<Hash256> out;
  for (const auto& t : tensors) out.push_back(t.Hash());
  return out;
}

crypto::MerkleTree StateTree(const std::vector<kernels::Tensor>& tensors, const protocol::StateHeader& header) {
  std::vector<Hash256> leaves = TensorHashes(tensors);
  leaves.push_back(protocol::StateHeaderHash(header));
  return crypto::MerkleTree::FromLeafHashes(std::move(leaves));
}

kernels::ExecConfig ConfigOf(const protocol::JobSpec& job) {
  kernels::ExecConfig config;
  config.mode = static_cast<kernels::Mode>(job.mode);
  config.threads = 1;
  config.rounding.bits = job.rounding_bits;
  return config;
}

// A log with one more entry, kept sorted by position.
kernels::RoundingLog WithEntry(kernels::RoundingLog log, std::uint64_t position, bool up) {
  kernels::LogEntry e{position, up};
  auto it = std::lower_bound(log.entries.begin(), log.entries.end(), e,
                             [](const kernels::LogEntry& a, const kernels::LogEntry& b) { return a.position < b.position; });
  log.entries.insert(it, e);
  return log;
}

}  // namespace

namespace {

// What one synthetic example is: inputs of shape `x` — values, or token ids
// in [0, classes) when `tokens` — and targets of shape `target` (a label
// each) in [0, classes).
struct ExampleShape {
  kernels::Shape x;
  kernels::Shape target;
  std::int64_t classes = 0;
  bool tokens = false;
};

// A job of `model` (SGD with momentum) on 20 synthetic examples, batch 4.
// Values are exact multiples of 2^-23 so they do not depend on any
// library's float conversion.
TinyJob MakeJob(const graph::ModelSpec& model, const ExampleShape& shape, std::uint64_t num_steps,
                std::uint64_t interval, kernels::Mode mode, std::uint64_t seed) {
  TinyJob t;
  graph::OptimizerSpec opt;
  opt.kind = graph::OptimizerKind::kSgd;
  opt.lr = 0.05f;
  opt.momentum = 0.5f;
  t.job.model = graph::EncodeModelSpec(model);
  t.job.optimizer = graph::EncodeOptimizerSpec(opt);
  std::mt19937_64 rng(seed);
  constexpr int kExamples = 20;
  const auto label = [&] { return static_cast<float>(rng() % static_cast<std::uint64_t>(shape.classes)); };
  for (int e = 0; e < kExamples; ++e) {
    std::vector<float> x(static_cast<std::size_t>(kernels::NumElements(shape.x)));
    for (float& v : x)
      v = shape.tokens ? label()
                       : static_cast<float>(static_cast<std::int64_t>(rng() >> 40) - (1 << 23)) * 0x1p-23f;
    std::vector<float> labels(static_cast<std::size_t>(kernels::NumElements(shape.target)));
    for (float& v : labels) v = label();
    Bytes leaf = kernels::EncodeTensor(kernels::Tensor(shape.x, x));
    const Bytes target = kernels::EncodeTensor(kernels::Tensor(shape.target, labels));
    leaf.insert(leaf.end(), target.begin(), target.end());
    t.examples.push_back(std::move(leaf));
  }
  t.dataset_tree = crypto::MerkleTree::FromLeafBytes(t.examples);
  t.job.dataset_root = t.dataset_tree.root();
  t.job.dataset_size = kExamples;
  t.job.seed = seed;
  t.job.batch_size = 4;
  t.job.num_steps = num_steps;
  t.job.checkpoint_interval = interval;
  t.job.mode = static_cast<std::uint8_t>(mode);
  t.job.rounding_bits = 32;

  auto init = graph::InitState(model, opt, seed);
  EXPECT_TRUE(init.ok()) << init.status().ToString();
  protocol::StateHeader header;
  header.tensor_names = init->names;
  t.initial_state = protocol::StateHashFromLeaves(TensorHashes(init->tensors), header);
  return t;
}

}  // namespace

TinyJob MakeTinyJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode, std::uint64_t seed,
                    std::int64_t hidden) {
  graph::ModelSpec model;
  model.arch = graph::MlpSpec{6, {hidden}, 3, graph::Activation::kRelu};
  return MakeJob(model, {{6}, {}, 3}, num_steps, interval, mode, seed);
}

TinyJob MakeTinyCnnJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                       std::uint64_t seed) {
  auto model = graph::ModelPreset("cnn-tiny");
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  const auto& cnn = std::get<graph::CnnSpec>(model->arch);
  return MakeJob(*model, {{cnn.in_channels, cnn.height, cnn.width}, {}, cnn.classes}, num_steps, interval,
                 mode, seed);
}

TinyJob MakeTinyGptJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                       std::uint64_t seed) {
  graph::ModelSpec model;
  model.arch = graph::GptSpec{16, 8, 1, 2, 16, 0.0f};
  return MakeJob(model, {{8}, {8}, 16, true}, num_steps, interval, mode, seed);
}

TinyJob MakeTinyModelJob(TinyModel model, std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                         std::uint64_t seed, std::int64_t hidden) {
  switch (model) {
    case TinyModel::kCnn:
      return MakeTinyCnnJob(num_steps, interval, mode, seed);
    case TinyModel::kGpt:
      return MakeTinyGptJob(num_steps, interval, mode, seed);
    case TinyModel::kMlp:
      break;
  }
  return MakeTinyJob(num_steps, interval, mode, seed, hidden);
}

bool History::LiedAt(std::uint64_t step, std::uint64_t node) const {
  for (const Lie& l : lies) {
    const bool at_checkpoint = l.kind == LieKind::kCheckpoint || l.kind == LieKind::kStateLeaf;
    if (!at_checkpoint && l.step == step && l.node == node) return true;
  }
  return false;
}

Result<History> Train(const TinyJob& tiny, std::vector<Lie> lies, const History* follow) {
  const protocol::JobSpec& job = tiny.job;
  const vm::KernelsGraphSource source;
  VT_ASSIGN_OR_RETURN(graph::ModelSpec model, graph::DecodeModelSpec(job.model));
  VT_ASSIGN_OR_RETURN(graph::OptimizerSpec opt, graph::DecodeOptimizerSpec(job.optimizer));
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> batch_shapes, graph::BatchShapes(model, job.batch_size));
  VT_ASSIGN_OR_RETURN(graph::NamedTensors init, graph::InitState(model, opt, job.seed));
  const kernels::ExecConfig config = ConfigOf(job);
  const bool rounded = IsRounded(job);
  bool following = rounded && follow != nullptr;

  History h;
  h.job = job;
  h.lies = lies;
  h.examples = tiny.examples;
  h.dataset_tree = tiny.dataset_tree;
  protocol::StateHeader header;
  header.tensor_names = init.names;
  h.headers.push_back(header);
  h.states.push_back(init.tensors);
  h.h.push_back(protocol::StateHashFromLeaves(TensorHashes(init.tensors), header));

  for (std::uint64_t t = 0; t < job.num_steps; ++t) {
    VT_ASSIGN_OR_RETURN(graph::StepGraph sg, graph::BuildStepGraph(model, opt, t, batch_shapes));
    VT_ASSIGN_OR_RETURN(vm::StepGraph vg, source.Build(job, t));
    VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> indices, source.BatchIndices(job, h.headers[t]));
    std::vector<Bytes> leaves;
    for (std::uint64_t i : indices) leaves.push_back(tiny.examples[i]);
    VT_ASSIGN_OR_RETURN(std::vector<kernels::Tensor> batch, source.AssembleBatch(job, leaves));
    const std::vector<kernels::Tensor>& state = h.states[t];

    // Value changes the lies of this step make, node → (position, value).
    struct Change {
      std::uint32_t node = 0;
      std::uint32_t slot = 0;
      std::int64_t position = 0;
      float value = 0.0f;
    };
    std::vector<Change> changes;
    auto run = [&](bool replay) -> Result<graph::StepResult> {
      graph::StepOptions options;
      options.seed = job.seed;
      options.keep_outputs = true;
      // A challenger follows the solver's logs, skipping the entries a
      // strict replay rejects (as worker::Party does): its records name the
      // committed logs.
      if (replay) {
        options.replay_logs = &follow->logs[t];
        options.skip_invalid_log_entries = true;
      }
      options.observer = [&](std::size_t node, std::span<kernels::Tensor> outs) -> Status {
        for (const Change& c : changes) {
          if (c.node == node && c.slot < outs.size()) outs[c.slot][c.position] = c.value;
        }
        return Status::Ok();
      };
      return graph::ExecuteStep(config, sg, state, batch, options);
    };
    // Follow the solver's logs while they replay; record our own from the
    // first step where they do not.
    auto run_step = [&]() -> Result<graph::StepResult> {
      auto r = run(following);
      if (!r.ok() && following && r.status().reason().rfind("log-", 0) == 0) {
        following = false;
        r = run(false);
      }
      return r;
    };
    auto first = run_step();
    if (!first.ok()) return first.status();

    std::vector<kernels::RoundingLog> bad_logs(sg.nodes.size());
    std::vector<bool> has_bad_log(sg.nodes.size(), false);
    for (const Lie& lie : lies) {
      if (lie.kind == LieKind::kCheckpoint || lie.kind == LieKind::kStateLeaf ||
          lie.kind == LieKind::kLogHash || lie.step != t)
        continue;  // claims, not changes to the run (a log hash is changed in the record below)
      const kernels::Tensor& out0 = first->outputs[lie.node][0];
      if (lie.kind == LieKind::kOneValue) {
        const kernels::Tensor& out = first->outputs[lie.node][lie.slot];
        changes.push_back({lie.node, lie.slot, lie.value, std::nextafter(out[lie.value], INFINITY)});
        continue;
      }
      if (lie.kind == LieKind::kOutput || lie.kind == LieKind::kSpec) {
        // Every element, unevenly, so that neither a mask downstream (relu)
        // nor a shift-invariant one (softmax) can hide the lie.
        for (std::int64_t p = 0; p < out0.numel(); ++p)
          changes.push_back({lie.node, 0, p, out0[p] + 0.25f * static_cast<float>(p % 3 + 1)});
        continue;
      }
      // kLog: find an output position whose value is far from any rounding
      // boundary, so that a logged direction there is rejected on replay.
      const auto inputs = graph::NodeInputTensors(sg, lie.node, state, batch, first->outputs);
      bool found = false;
      for (std::int64_t p = 0; p < out0.numel() && !found; ++p) {
        const kernels::RoundingLog log = WithEntry(first->logs[lie.node], static_cast<std::uint64_t>(p), true);
        auto replay = graph::ExecuteNode(config, sg, lie.node, inputs, job.seed, &log);
        if (!replay.ok() && replay.status().reason() == "log-entry-outside-region") {
          changes.push_back({lie.node, 0, p, std::nextafter(out0[p], INFINITY)});
          bad_logs[lie.node] = log;
          has_bad_log[lie.node] = true;
          found = true;
        }
      }
      if (!found) return Status::Error("harness", "no position outside the logging region");
    }
    graph::StepResult result;
    if (changes.empty()) {
      result = std::move(first).value();
    } else {
      VT_ASSIGN_OR_RETURN(result, run_step());
    }
    // A replayed step's logs are the ones it followed.
    if (rounded && following && result.logs.size() != sg.nodes.size()) result.logs = follow->logs[t];
    if (rounded) {
      for (std::size_t n = 0; n < sg.nodes.size(); ++n)
        if (has_bad_log[n]) result.logs[n] = bad_logs[n];
    }

    std::vector<protocol::NodeRecord> records;
    for (std::size_t n = 0; n < vg.nodes.size(); ++n) {
      protocol::NodeRecord rec;
      rec.op_kind = vg.nodes[n].op_kind;
      rec.attrs = vg.nodes[n].attrs;
      rec.inputs = vg.nodes[n].inputs;
      rec.output_hashes = TensorHashes(result.outputs[n]);
      if (rounded) rec.log_hash = kernels::HashRoundingLog(result.logs[n]);
      for (const Lie& lie : lies) {
        if (lie.step != t || lie.node != n) continue;
        if (lie.kind == LieKind::kSpec) rec.op_kind += 1000;
        if (lie.kind == LieKind::kLogHash) rec.log_hash.bytes[0] ^= 1;
      }
      records.push_back(std::move(rec));
    }
    VT_ASSIGN_OR_RETURN(protocol::StateHeader next_header, source.NextHeader(job, h.headers[t]));
    const Hash256 next_hash = protocol::StateHashFromLeaves(TensorHashes(result.next_state), next_header);
    protocol::NodeRecord assemble;
    assemble.op_kind = vm::kAssembleOpKind;
    assemble.inputs = vg.next_state;
    assemble.output_hashes = {next_hash};
    records.push_back(std::move(assemble));

    h.records.push_back(std::move(records));
    h.outputs.push_back(std::move(result.outputs));
    h.logs.push_back(rounded ? std::move(result.logs) : std::vector<kernels::RoundingLog>{});
    h.states.push_back(std::move(result.next_state));
    h.headers.push_back(next_header);
    h.h.push_back(next_hash);
  }

  // A checkpoint lie: a made-up hash at checkpoint j, and the step that
  // claims to produce it.
  // A state-leaf lie: the same with h the root of the honest leaves, one made up.
  for (const Lie& lie : lies) {
    if (lie.kind != LieKind::kCheckpoint && lie.kind != LieKind::kStateLeaf) continue;
    const std::uint64_t s = protocol::CheckpointStepAt(job.num_steps, job.checkpoint_interval, lie.step);
    Hash256 fake = crypto::TaggedHash("veritrain/test/fake", h.h[s].span());
    if (lie.kind == LieKind::kStateLeaf) {
      // Several state-leaf lies at one checkpoint make up several leaves.
      const auto claimed = h.claimed_leaves.find(s);
      std::vector<Hash256> leaves = claimed != h.claimed_leaves.end()
                                        ? claimed->second
                                        : protocol::StateLeaves(TensorHashes(h.states[s]), h.headers[s]);
      if (lie.value < 0 || static_cast<std::size_t>(lie.value) >= leaves.size())
        return Status::Invalid("harness", "no such leaf of h");
      leaves[static_cast<std::size_t>(lie.value)] =
          crypto::TaggedHash("veritrain/test/fake", leaves[static_cast<std::size_t>(lie.value)].span());
      fake = crypto::MerkleRoot(leaves);
      h.claimed_leaves[s] = std::move(leaves);
    }
    h.h[s] = fake;
    h.records[s - 1].back().output_hashes = {fake};
  }

  // Trees.
  const std::vector<std::uint64_t> steps = protocol::CheckpointSteps(job.num_steps, job.checkpoint_interval);
  std::vector<Hash256> cp;
  for (std::uint64_t s : steps) cp.push_back(h.h[s]);
  h.checkpoint_tree = crypto::MerkleTree::FromLeafHashes(cp);
  for (std::size_t j = 1; j < steps.size(); ++j) {
    h.step_trees.push_back(crypto::MerkleTree::FromLeafHashes(
        std::vector<Hash256>(h.h.begin() + static_cast<std::ptrdiff_t>(steps[j - 1]),
                             h.h.begin() + static_cast<std::ptrdiff_t>(steps[j] + 1))));
  }
  for (const auto& records : h.records) {
    std::vector<Hash256> leaves;
    for (const auto& r : records) leaves.push_back(protocol::NodeRecordHash(r));
    h.node_trees.push_back(crypto::MerkleTree::FromLeafHashes(std::move(leaves)));
  }
  if (rounded) {
    for (const auto& logs : h.logs) {
      std::vector<Hash256> leaves;
      for (const auto& l : logs) leaves.push_back(kernels::HashRoundingLog(l));
      h.step_log_trees.push_back(crypto::MerkleTree::FromLeafHashes(std::move(leaves)));
    }
    std::vector<Hash256> intervals;
    for (std::size_t j = 1; j < steps.size(); ++j) {
      std::vector<Hash256> leaves;
      for (std::uint64_t t = steps[j - 1]; t < steps[j]; ++t) leaves.push_back(h.step_log_trees[t].root());
      h.interval_log_trees.push_back(crypto::MerkleTree::FromLeafHashes(std::move(leaves)));
      intervals.push_back(h.interval_log_trees.back().root());
    }
    h.log_root_tree = crypto::MerkleTree::FromLeafHashes(std::move(intervals));
    h.log_root = h.log_root_tree.root();
  }
  return h;
}

// ---- call arguments -----------------------------------------------------------------------

referee::CommitArgs MakeCommit(const History& h, std::uint64_t bounty_id, const crypto::SecretKey& solver) {
  referee::CommitArgs a;
  a.bounty_id = bounty_id;
  protocol::Commitment& c = a.commitment;
  c.bounty_id = bounty_id;
  c.job_hash = protocol::JobHash(h.job);
  c.checkpoint_root = h.checkpoint_tree.root();
  c.final_state_hash = h.h.back();
  c.log_root = h.log_root;
  c.solver = solver.public_key().bytes();
  const std::array<std::uint8_t, 32> aux{};
  auto sig = crypto::SignWithAux(solver, protocol::CommitmentSigningHash(c).span(), aux);
  EXPECT_TRUE(sig.ok());
  c.signature = sig->bytes;
  a.checkpoint_top = h.checkpoint_tree.top();
  a.first_proof = h.checkpoint_tree.Prove(0);
  a.last_proof = h.checkpoint_tree.Prove(h.checkpoint_tree.leaf_count() - 1);
  // The blobs it names: any non-zero hash and length do here (the referee
  // records them and charges their bytes; block validity, which needs the
  // blobs themselves, is the node's: tests/node/blob_rules_test.cpp).
  a.state_blob = crypto::Sha256Digest(c.final_state_hash.span());
  a.state_blob_bytes = 1000;
  if (!h.log_root.IsZero()) {
    a.log_bundle = crypto::Sha256Digest(h.log_root.span());
    a.log_bundle_bytes = 1000;
  }
  return a;
}

referee::OpenGameArgs MakeOpenGame(const History& h, std::uint64_t bounty_id) {
  return referee::OpenGameArgs{bounty_id, h.checkpoint_tree.root(), h.checkpoint_tree.top(),
                               h.checkpoint_tree.Prove(0)};
}

referee::StepRootArgs MakeStepRoot(const History& h, std::uint64_t game_id, std::uint64_t j) {
  const crypto::MerkleTree& tree = h.step_trees[j - 1];
  const std::uint64_t s0 = protocol::CheckpointStepAt(h.job.num_steps, h.job.checkpoint_interval, j - 1);
  referee::StepRootArgs a;
  a.game_id = game_id;
  a.root = tree.root();
  a.top = tree.top();
  a.start_state = h.h[s0];
  a.start_proof = h.checkpoint_tree.Prove(j - 1);
  a.first_proof = tree.Prove(0);
  a.last_proof = tree.Prove(tree.leaf_count() - 1);
  return a;
}

referee::NodeRootArgs MakeNodeRoot(const History& h, std::uint64_t game_id, std::uint64_t j, std::uint64_t t) {
  const std::uint64_t s0 = protocol::CheckpointStepAt(h.job.num_steps, h.job.checkpoint_interval, j - 1);
  const crypto::MerkleTree& nodes = h.node_trees[t];
  referee::NodeRootArgs a;
  a.game_id = game_id;
  a.root = nodes.root();
  a.top = nodes.top();
  a.agreed_state = h.h[t];
  a.agreed_proof = h.step_trees[j - 1].Prove(t - s0);
  a.assemble = h.records[t].back();
  a.assemble_proof = nodes.Prove(nodes.leaf_count() - 1);
  return a;
}

vm::ArbitrationCase ArbitrationCaseOf(const TinyJob& tiny, const History& h, std::uint64_t step, std::uint64_t node) {
  vm::ArbitrationCase c;
  c.job = tiny.job;
  c.step = step;
  c.state_hash = h.h[step];
  c.node_root = h.node_trees[step].root();
  c.node_count = h.records[step].size();
  c.node_index = node;
  return c;
}

referee::LogProofs LogChainOf(const History& solver, std::uint64_t t, std::uint64_t i) {
  const protocol::JobSpec& job = solver.job;
  const std::uint64_t j = IntervalOf(job, t);
  const std::uint64_t s0 = protocol::CheckpointStepAt(job.num_steps, job.checkpoint_interval, j - 1);
  referee::LogProofs lp;
  lp.node_in_step = solver.step_log_trees[t].Prove(i);
  lp.step_log_root = solver.step_log_trees[t].root();
  lp.step_in_interval = solver.interval_log_trees[j - 1].Prove(t - s0);
  lp.interval_log_hash = solver.interval_log_trees[j - 1].root();
  lp.interval_in_root = solver.log_root_tree.Prove(j - 1);
  return lp;
}

referee::NodeLogProof NodeLogProofOf(const History& solver, std::uint64_t step, std::uint64_t node) {
  return referee::NodeLogProof{kernels::HashRoundingLog(solver.logs[step][node]),
                               LogChainOf(solver, step, node)};
}

referee::ArbitrateArgs MakeArbitrate(const TinyJob& tiny, const History& from, const History& solver,
                                     std::uint64_t game_id, std::uint8_t node_root_of, std::uint64_t t,
                                     std::uint64_t i) {
  const protocol::JobSpec& job = tiny.job;
  const vm::KernelsGraphSource source;
  auto graph = source.Build(job, t);
  EXPECT_TRUE(graph.ok());
  const vm::NodeSpec spec = vm::NodeSpecAt(*graph, i);
  const bool assemble = i == graph->nodes.size();

  vm::ArbitrationPayload p;
  p.header = from.headers[t];
  const crypto::MerkleTree state_tree = StateTree(from.states[t], p.header);
  p.header_proof = state_tree.Prove(from.states[t].size());
  bool reads_batch = false;
  for (const protocol::InputRef& ref : spec.inputs) {
    vm::InputOpening in;
    switch (ref.source) {
      case protocol::InputSource::kState: {
        const kernels::Tensor& tensor = from.states[t][ref.index];
        if (assemble) {
          in.tensor_hash = tensor.Hash();
        } else {
          in.tensor = kernels::EncodeTensor(tensor);
        }
        in.proof = state_tree.Prove(ref.index);
        break;
      }
      case protocol::InputSource::kNode: {
        const kernels::Tensor& tensor = from.outputs[t][ref.index][ref.slot];
        if (assemble) {
          in.tensor_hash = tensor.Hash();
        } else {
          in.tensor = kernels::EncodeTensor(tensor);
        }
        in.producer = from.records[t][ref.index];
        in.proof = from.node_trees[t].Prove(ref.index);
        break;
      }
      case protocol::InputSource::kBatch:
        reads_batch = true;
        break;
    }
    p.inputs.push_back(std::move(in));
  }
  if (reads_batch) {
    auto indices = source.BatchIndices(job, p.header);
    EXPECT_TRUE(indices.ok());
    for (std::uint64_t idx : *indices) p.examples.push_back({tiny.examples[idx], tiny.dataset_tree.Prove(idx)});
  }
  referee::ArbitrateArgs a;
  a.game_id = game_id;
  a.node_root_of = node_root_of;
  if (IsRounded(job) && !assemble) {
    p.log = kernels::EncodeRoundingLog(solver.logs[t][i]);
    a.log_proofs = LogChainOf(solver, t, i);
  }
  a.payload = EncodeToBytes(p);
  return a;
}

crypto::MerkleTree StateTreeOf(const History& h, std::uint64_t step) {
  const auto claimed = h.claimed_leaves.find(step);
  if (claimed != h.claimed_leaves.end()) return crypto::MerkleTree::FromLeafHashes(claimed->second);
  return StateTree(h.states[step], h.headers[step]);
}

}  // namespace vt::test
