// Dispute answers: per-step hashes, node records, node inputs with proofs,
// single-node re-execution, and the whole narrowing between two parties.

#include "worker/dispute.h"

#include <algorithm>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "kernels/graph/executor.h"
#include "kernels/ops/registry.h"
#include "verify/graph_source.h"
#include "worker/data_order.h"
#include "worker/state.h"
#include "kernels/tensor_codec.h"
#include "worker/trainer.h"

namespace vt::worker {

namespace {

namespace graph = kernels::graph;

constexpr char kNodeFileMagic[6] = {'V', 'T', 'N', 'O', 'D', 'E'};
constexpr std::uint16_t kNodeFileVersion = 1;

protocol::InputRef ToRef(const graph::NodeInput& in) {
  return protocol::InputRef{static_cast<protocol::InputSource>(in.source), in.index, in.slot};
}

bool IsRounded(const Job& job) { return job.mode() == kernels::Mode::kRounded; }

protocol::NodeRecord MakeRecord(const graph::Node& node, std::vector<Hash256> output_hashes,
                                const kernels::RoundingLog* log) {
  protocol::NodeRecord r;
  r.op_kind = static_cast<std::uint16_t>(node.kind);
  r.attrs = EncodeToBytes(node.attrs);
  for (const graph::NodeInput& in : node.inputs) r.inputs.push_back(ToRef(in));
  r.output_hashes = std::move(output_hashes);
  if (log != nullptr) r.log_hash = kernels::HashRoundingLog(*log);
  return r;
}

protocol::NodeRecord AssembleRecord(const graph::StepGraph& g, const Hash256& next_state_hash) {
  protocol::NodeRecord r;
  r.op_kind = kAssembleOpKind;
  for (const graph::NodeInput& in : g.next_state) r.inputs.push_back(ToRef(in));
  r.output_hashes.push_back(next_state_hash);
  return r;
}

// Recomputes a party's run forward from its checkpoints.
class Recompute {
 public:
  explicit Recompute(const Party& p) : m_p(p), m_engine(*p.job, *p.dataset, p.config, p.adversary) {}

  StepEngine& engine() { return m_engine; }

  Result<const RunManifest*> States() {
    if (!m_states) {
      if (m_p.states == nullptr) return Status::Error("dispute-no-run", "the party has no run directory");
      VT_ASSIGN_OR_RETURN(RunManifest m, m_p.states->LoadManifest());
      m_states = std::move(m);
    }
    return &*m_states;
  }

  Result<const IntervalLogs*> Interval(std::uint64_t j) {
    if (m_p.logs == nullptr) return Status::Error("dispute-no-logs", "the party follows no logs");
    if (!m_log_manifest) {
      VT_ASSIGN_OR_RETURN(RunManifest m, m_p.logs->LoadManifest());
      m_log_manifest = std::move(m);
    }
    if (j >= m_log_manifest->logs.size()) {
      return Status::Invalid("dispute-no-logs", "the followed run has no logs for interval " + std::to_string(j));
    }
    auto it = m_intervals.find(j);
    if (it == m_intervals.end()) {
      VT_ASSIGN_OR_RETURN(IntervalLogs logs, m_p.logs->LoadIntervalLogs(m_log_manifest->logs[j]));
      it = m_intervals.emplace(j, std::move(logs)).first;
    }
    return &it->second;
  }

  const RunManifest* LogManifest() const { return m_log_manifest ? &*m_log_manifest : nullptr; }
  const Party& party() const { return m_p; }

  // The logs step `s` replays: null outside rounded mode or without logs.
  Result<const std::vector<kernels::RoundingLog>*> LogsFor(std::uint64_t s) {
    if (!IsRounded(*m_p.job) || m_p.logs == nullptr) return static_cast<const std::vector<kernels::RoundingLog>*>(nullptr);
    const std::uint64_t j = s / m_p.job->spec.checkpoint_interval;
    VT_ASSIGN_OR_RETURN(const IntervalLogs* logs, Interval(j));
    if (s < logs->first_step || s - logs->first_step >= logs->steps.size()) {
      return Status::Invalid("dispute-no-logs", "no logs for step " + std::to_string(s));
    }
    return &logs->steps[s - logs->first_step];
  }

  // The party's state at step t: its last checkpoint at or before t, then
  // steps forward.
  Result<TrainingState> StateAt(std::uint64_t t) {
    VT_ASSIGN_OR_RETURN(const RunManifest* m, States());
    if (m->checkpoints.empty() || t > m_p.job->spec.num_steps) {
      return Status::Invalid("dispute-bad-step", "step " + std::to_string(t) + " is outside the run");
    }
    std::uint64_t c = 0;
    for (const CheckpointEntry& e : m->checkpoints) {
      if (e.step <= t) c = e.index;
    }
    VT_ASSIGN_OR_RETURN(TrainingState state, LoadCheckpoint(*m_p.states, *m, c));
    while (state.step < t) {
      StepRequest request;
      VT_ASSIGN_OR_RETURN(request.replay_logs, LogsFor(state.step));
      request.skip_invalid_log_entries = m_p.skip_invalid_log_entries;
      auto outcome = m_engine.Step(state, request);
      if (!outcome.ok()) return outcome.status();
    }
    return state;
  }

 private:
  const Party& m_p;
  StepEngine m_engine;
  std::optional<RunManifest> m_states;
  std::optional<RunManifest> m_log_manifest;
  std::map<std::uint64_t, IntervalLogs> m_intervals;
};

Status CheckParty(const Party& p) {
  if (p.job == nullptr || p.dataset == nullptr || p.states == nullptr) {
    return Status::Error("dispute-bad-party", "a party needs a job, its dataset and its run");
  }
  return Status::Ok();
}

// One step of a party with every node's outputs hashed (and kept, when asked).
struct RecordedStep {
  TrainingState start;  // copy of h_t (keep only)
  Hash256 start_hash;
  graph::StepGraph graph;
  Batch batch;
  std::vector<std::vector<Hash256>> hashes;           // per completed node
  std::vector<std::vector<kernels::Tensor>> outputs;  // per completed node (keep only)
  std::vector<kernels::RoundingLog> logs;             // rounded: per node (committed or replayed)
  bool ok = true;
  std::size_t failed_node = 0;
  Status failure;
  Hash256 next_hash;
};

Result<RecordedStep> RecordStep(Recompute& rc, const Party& p, std::uint64_t t, bool keep) {
  RecordedStep out;
  VT_ASSIGN_OR_RETURN(TrainingState state, rc.StateAt(t));
  out.start_hash = StateHash(state);
  if (keep) out.start = state;
  StepRequest request;
  VT_ASSIGN_OR_RETURN(request.replay_logs, rc.LogsFor(t));
  request.skip_invalid_log_entries = rc.party().skip_invalid_log_entries;
  request.observer = [&](std::size_t, std::span<kernels::Tensor> outputs) -> Status {
    std::vector<Hash256> h;
    for (const kernels::Tensor& o : outputs) h.push_back(o.Hash());
    out.hashes.push_back(std::move(h));
    if (keep) out.outputs.emplace_back(outputs.begin(), outputs.end());
    return Status::Ok();
  };
  std::size_t failed = 0;
  auto outcome = rc.engine().Step(state, request, &failed);
  if (!outcome.ok()) {
    if (outcome.status().is_error()) return outcome.status();
    out.ok = false;
    out.failed_node = failed;
    out.failure = outcome.status();
    VT_ASSIGN_OR_RETURN(out.graph, rc.engine().Graph(t));
    if (request.replay_logs != nullptr) out.logs = *request.replay_logs;
    return out;
  }
  out.graph = std::move(outcome->graph);
  out.batch = std::move(outcome->batch);
  if (IsRounded(*p.job)) out.logs = std::move(outcome->result.logs);
  out.next_hash = StateHash(state);
  return out;
}

StepRecords RecordsOf(const RecordedStep& rs, bool rounded, std::uint64_t step) {
  StepRecords r;
  r.step = step;
  r.state_hash = rs.start_hash;
  for (std::size_t i = 0; i < rs.hashes.size(); ++i) {
    const kernels::RoundingLog* log = rounded && i < rs.logs.size() ? &rs.logs[i] : nullptr;
    r.records.push_back(MakeRecord(rs.graph.nodes[i], rs.hashes[i], log));
    r.names.push_back(rs.graph.nodes[i].name);
  }
  if (rs.ok) {
    r.records.push_back(AssembleRecord(rs.graph, rs.next_hash));
    r.names.push_back("assemble");
  } else {
    r.failed_node = rs.failed_node;
    r.failure = rs.failure;
  }
  return r;
}

}  // namespace

// ---- (a) ----------------------------------------------------------------------------

Result<StepHashes> AnswerStepHashes(const Party& party, std::uint64_t checkpoint_index) {
  VT_TRY(CheckParty(party));
  const protocol::JobSpec& spec = party.job->spec;
  const std::uint64_t count = protocol::CheckpointCount(spec.num_steps, spec.checkpoint_interval);
  if (checkpoint_index == 0 || checkpoint_index >= count) {
    return Status::Invalid("dispute-bad-checkpoint", "checkpoint " + std::to_string(checkpoint_index) +
                                                         " does not end an interval of this job");
  }
  Recompute rc(party);
  StepHashes out;
  out.checkpoint_index = checkpoint_index;
  out.first_step = CheckpointStepOf(spec, checkpoint_index - 1);
  const std::uint64_t end = CheckpointStepOf(spec, checkpoint_index);
  VT_ASSIGN_OR_RETURN(TrainingState state, rc.StateAt(out.first_step));
  out.hashes.push_back(StateHash(state));
  while (state.step < end) {
    StepRequest request;
    VT_ASSIGN_OR_RETURN(request.replay_logs, rc.LogsFor(state.step));
    request.skip_invalid_log_entries = rc.party().skip_invalid_log_entries;
    std::size_t failed = 0;
    const std::uint64_t step = state.step;
    auto outcome = rc.engine().Step(state, request, &failed);
    if (!outcome.ok()) {
      if (outcome.status().is_error()) return outcome.status();
      out.failed_step = step;
      out.failed_node = failed;
      out.failure = outcome.status();
      break;
    }
    out.hashes.push_back(StateHash(state));
  }
  return out;
}

// ---- (b) ----------------------------------------------------------------------------

std::vector<Hash256> StepRecords::LeafHashes() const {
  std::vector<Hash256> out;
  out.reserve(records.size());
  for (const protocol::NodeRecord& r : records) out.push_back(protocol::NodeRecordHash(r));
  return out;
}

Hash256 StepRecords::Root() const { return crypto::MerkleRoot(LeafHashes()); }

Result<StepRecords> AnswerNodeRecords(const Party& party, std::uint64_t step) {
  VT_TRY(CheckParty(party));
  if (step >= party.job->spec.num_steps) {
    return Status::Invalid("dispute-bad-step", "step " + std::to_string(step) + " is not a step of this job");
  }
  Recompute rc(party);
  VT_ASSIGN_OR_RETURN(RecordedStep rs, RecordStep(rc, party, step, /*keep=*/false));
  return RecordsOf(rs, IsRounded(*party.job), step);
}

// ---- (c) ----------------------------------------------------------------------------

Result<NodeInputs> AnswerNodeInputs(const Party& party, std::uint64_t step, std::uint64_t node) {
  VT_ASSIGN_OR_RETURN(NodeCase c, AnswerNodeCase(party, step, node));
  return std::move(c.inputs);
}

Result<crypto::MerkleTree> AnswerStateTree(const Party& party, std::uint64_t step) {
  VT_TRY(CheckParty(party));
  Recompute rc(party);
  VT_ASSIGN_OR_RETURN(TrainingState state, rc.StateAt(step + 1));
  return crypto::MerkleTree::FromLeafHashes(StateLeafHashes(state));
}

Result<NodeCase> AnswerNodeCase(const Party& party, std::uint64_t step, std::uint64_t node) {
  VT_TRY(CheckParty(party));
  const Job& job = *party.job;
  if (step >= job.spec.num_steps) {
    return Status::Invalid("dispute-bad-step", "step " + std::to_string(step) + " is not a step of this job");
  }
  Recompute rc(party);
  VT_ASSIGN_OR_RETURN(RecordedStep rs, RecordStep(rc, party, step, /*keep=*/true));
  if (!rs.ok) {
    return Status::Invalid("dispute-incomplete-step", "this party cannot recompute step " + std::to_string(step) +
                                                          ": " + rs.failure.ToString());
  }
  const bool rounded = IsRounded(job);
  const StepRecords records = RecordsOf(rs, rounded, step);
  const std::uint64_t node_count = records.records.size();
  if (node >= node_count) {
    return Status::Invalid("dispute-bad-node", "node " + std::to_string(node) + " of a step with " +
                                                   std::to_string(node_count) + " records");
  }
  const std::vector<Hash256> record_leaves = records.LeafHashes();
  const crypto::MerkleTree node_tree = crypto::MerkleTree::FromLeafHashes(record_leaves);
  const bool assemble = node == node_count - 1;

  NodeCase c;
  NodeInputs& out = c.inputs;
  if (!assemble) c.outputs = rs.outputs[node];
  out.step = step;
  out.node = node;
  out.state_hash = rs.start_hash;
  out.node_root = node_tree.root();
  out.node_count = node_count;
  out.record = records.records[node];
  out.node_name = records.names[node];
  out.header = rs.start.Header();
  const std::vector<Hash256> state_leaves = StateLeafHashes(rs.start);
  const crypto::MerkleTree state_tree = crypto::MerkleTree::FromLeafHashes(state_leaves);
  out.header_proof = state_tree.Prove(state_leaves.size() - 1);

  std::vector<kernels::Tensor> start_tensors;
  for (const auto& entry : rs.start.tensors) start_tensors.push_back(entry.second);
  const std::vector<graph::NodeInput>& refs = assemble ? rs.graph.next_state : rs.graph.nodes[node].inputs;
  bool reads_batch = false;
  for (const graph::NodeInput& in : refs) {
    InputOpening o;
    switch (in.source) {
      case graph::NodeInputSource::kBatch:
        reads_batch = true;
        break;
      case graph::NodeInputSource::kState: {
        const kernels::Tensor& t = start_tensors[in.index];
        if (!assemble) o.tensor = kernels::EncodeTensor(t);
        o.tensor_hash = state_leaves[in.index];
        o.proof = state_tree.Prove(in.index);
        break;
      }
      case graph::NodeInputSource::kNode: {
        const kernels::Tensor& t = rs.outputs[in.index][in.slot];
        if (!assemble) o.tensor = kernels::EncodeTensor(t);
        o.tensor_hash = rs.hashes[in.index][in.slot];
        o.producer = records.records[in.index];
        o.proof = node_tree.Prove(in.index);
        break;
      }
    }
    out.inputs.push_back(std::move(o));
  }
  if (reads_batch) {
    DataOrder order(job.spec.seed, party.dataset->size());
    DataCursor cursor = rs.start.cursor;
    VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> indices, order.NextBatch(cursor, job.spec.batch_size));
    const crypto::MerkleTree data_tree = party.dataset->Tree();
    for (std::uint64_t idx : indices) {
      out.examples.push_back(ExampleOpening{party.dataset->EncodeExample(idx), data_tree.Prove(idx)});
    }
    c.batch = {rs.batch.inputs, rs.batch.targets};
  }
  if (rounded && !assemble) {
    // The committed log of the node, and its chain up to the log root.
    VT_ASSIGN_OR_RETURN(const std::vector<kernels::RoundingLog>* step_logs, rc.LogsFor(step));
    const std::vector<kernels::RoundingLog>& logs = step_logs != nullptr ? *step_logs : rs.logs;
    out.log = kernels::EncodeRoundingLog(logs[node]);
    if (step_logs != nullptr && rc.LogManifest() != nullptr) {
      const std::uint64_t j = step / job.spec.checkpoint_interval;
      VT_ASSIGN_OR_RETURN(const IntervalLogs* interval, rc.Interval(j));
      std::vector<Hash256> node_log_hashes;
      for (const kernels::RoundingLog& l : logs) node_log_hashes.push_back(kernels::HashRoundingLog(l));
      LogChain chain;
      const crypto::MerkleTree step_tree = crypto::MerkleTree::FromLeafHashes(node_log_hashes);
      chain.node_in_step = step_tree.Prove(node);
      chain.step_log_root = step_tree.root();
      const crypto::MerkleTree interval_tree = crypto::MerkleTree::FromLeafHashes(StepLogRoots(*interval));
      chain.step_in_interval = interval_tree.Prove(step - interval->first_step);
      chain.interval_log_hash = interval_tree.root();
      const crypto::MerkleTree root_tree = crypto::MerkleTree::FromLeafHashes(rc.LogManifest()->IntervalLogHashes());
      chain.interval_in_root = root_tree.Prove(j);
      out.log_chain = chain;
    }
  }
  return c;
}

Bytes EncodeArbitrationPayload(const NodeInputs& inputs) {
  return EncodeToBytes(static_cast<const verify::ArbitrationPayload&>(inputs));
}

Bytes EncodeNodeInputsFile(const NodeInputs& n) {
  Writer w;
  w.PutFixed(ByteSpan(reinterpret_cast<const std::uint8_t*>(kNodeFileMagic), sizeof(kNodeFileMagic)));
  w.PutU16(kNodeFileVersion);
  w.PutU64(n.step);
  w.PutU64(n.node);
  w.PutHash(n.state_hash);
  w.PutHash(n.node_root);
  w.PutU64(n.node_count);
  protocol::Encode(w, n.record);
  w.PutString(n.node_name);
  w.PutOptional(n.log_chain, [](Writer& out, const LogChain& c) { verify::Encode(out, c); });
  verify::Encode(w, static_cast<const verify::ArbitrationPayload&>(n));
  return std::move(w).Take();
}

Result<NodeInputs> DecodeNodeInputsFile(ByteSpan bytes) {
  auto decode = [&]() -> Result<NodeInputs> {
    Reader r(bytes);
    VT_ASSIGN_OR_RETURN(ByteSpan magic, r.GetFixed(sizeof(kNodeFileMagic)));
    if (!std::equal(magic.begin(), magic.end(), kNodeFileMagic)) return Status::Invalid("bad-magic", "not a node-inputs file");
    VT_ASSIGN_OR_RETURN(std::uint16_t version, r.GetU16());
    if (version != kNodeFileVersion) return Status::Invalid("bad-version", "version " + std::to_string(version));
    NodeInputs n;
    VT_ASSIGN_OR_RETURN(n.step, r.GetU64());
    VT_ASSIGN_OR_RETURN(n.node, r.GetU64());
    VT_ASSIGN_OR_RETURN(n.state_hash, r.GetHash());
    VT_ASSIGN_OR_RETURN(n.node_root, r.GetHash());
    VT_ASSIGN_OR_RETURN(n.node_count, r.GetU64());
    VT_ASSIGN_OR_RETURN(n.record, protocol::Decode(r, DecodeAs<protocol::NodeRecord>{}));
    VT_ASSIGN_OR_RETURN(n.node_name, r.GetString(4096));
    VT_ASSIGN_OR_RETURN(n.log_chain, r.GetOptional<LogChain>(
                                         [](Reader& rr) { return verify::Decode(rr, DecodeAs<LogChain>{}); }));
    VT_ASSIGN_OR_RETURN(static_cast<verify::ArbitrationPayload&>(n),
                        verify::Decode(r, DecodeAs<verify::ArbitrationPayload>{}));
    VT_TRY(r.Finish());
    return n;
  };
  auto n = decode();
  if (!n.ok()) return Status::Invalid("node-inputs-corrupt", n.status().ToString());
  return n;
}

// ---- (d) ----------------------------------------------------------------------------

std::string_view NodeVerdictKindName(NodeVerdictKind kind) {
  switch (kind) {
    case NodeVerdictKind::kExecuted:
      return "executed";
    case NodeVerdictKind::kLogRejected:
      return "log-rejected";
    case NodeVerdictKind::kOpFailed:
      return "op-failed";
  }
  return "unknown";
}

bool NodeVerdict::Confirms(const protocol::NodeRecord& record, bool rounded) const {
  return verify::OutcomeConfirms(*this, record, rounded);
}

Result<NodeVerdict> ReexecuteNode(const Job& job, const NodeInputs& ex) {
  // The precompile's own steps, unmetered: the graph view of the job, its
  // structural check, then the node rule.
  const verify::KernelsGraphSource graphs;
  VT_ASSIGN_OR_RETURN(verify::StepGraph graph, graphs.Build(job.spec, ex.step));
  VT_TRY(verify::ValidateStepGraph(graph));
  const verify::ArbitrationCase c{job.spec, ex.step, ex.state_hash, ex.node_root, ex.node_count, ex.node};
  verify::FreeMeter free;
  VT_ASSIGN_OR_RETURN(verify::ArbitrationOutcome outcome, verify::ArbitrateNode(graphs, graph, c, ex, free));
  NodeVerdict verdict;
  static_cast<verify::ArbitrationOutcome&>(verdict) = std::move(outcome);
  return verdict;
}

Status VerifyLogChain(const Job& job, const NodeInputs& ex, const Hash256& log_root) {
  if (!IsRounded(job)) return Status::Ok();
  if (!ex.log_chain) return Status::Invalid("arb-bad-log-proof", "no log chain");
  auto log = kernels::DecodeRoundingLog(ex.log);
  if (!log.ok()) return Status::Invalid("arb-bad-log", log.status().ToString());
  const verify::LogPosition at{job.spec.num_steps, job.spec.checkpoint_interval, ex.step, ex.node, ex.node_count};
  verify::FreeMeter free;
  return verify::VerifyLogChain(at, kernels::HashRoundingLog(*log), *ex.log_chain, log_root, free);
}

// ---- the whole narrowing ----------------------------------------------------------------

Result<DisputeLocation> LocateDispute(const Party& solver, const Party& challenger) {
  VT_TRY(CheckParty(solver));
  VT_TRY(CheckParty(challenger));
  const Job& job = *solver.job;
  const bool rounded = IsRounded(job);
  VT_ASSIGN_OR_RETURN(RunManifest sm, solver.states->LoadManifest());
  VT_ASSIGN_OR_RETURN(RunManifest cm, challenger.states->LoadManifest());
  DisputeLocation loc;
  // Level 1: the first checkpoint the two runs disagree on (a checkpoint the
  // challenger could not reach counts as disagreeing).
  std::optional<std::uint64_t> j;
  for (std::uint64_t i = 0; i < sm.checkpoints.size(); ++i) {
    if (i >= cm.checkpoints.size() || cm.checkpoints[i].state_hash != sm.checkpoints[i].state_hash) {
      j = i;
      break;
    }
  }
  if (!j) return Status::Invalid("dispute-no-divergence", "the runs agree on every checkpoint");
  loc.checkpoint_index = *j;
  if (*j == 0) return loc;  // the initial states differ: nothing to bisect

  // Level 2: the first step whose resulting state differs.
  VT_ASSIGN_OR_RETURN(StepHashes sa, AnswerStepHashes(solver, *j));
  VT_ASSIGN_OR_RETURN(StepHashes ca, AnswerStepHashes(challenger, *j));
  if (!sa.complete()) {
    return Status::Error("dispute-solver-inconsistent", "the solver cannot recompute its own interval: " +
                                                            sa.failure.ToString());
  }
  if (ca.hashes.empty() || ca.hashes[0] != sa.hashes[0]) {
    return Status::Error("dispute-inconsistent", "the parties disagree on the agreed checkpoint");
  }
  std::uint64_t u = 1;
  while (u < sa.hashes.size() && u < ca.hashes.size() && sa.hashes[u] == ca.hashes[u]) ++u;
  if (u >= sa.hashes.size()) {
    return Status::Error("dispute-inconsistent", "the recomputed interval agrees although the checkpoints differ");
  }
  const std::uint64_t t = sa.first_step + u - 1;
  loc.step = t;

  // Level 3: the first node record that differs.
  VT_ASSIGN_OR_RETURN(StepRecords sr, AnswerNodeRecords(solver, t));
  VT_ASSIGN_OR_RETURN(StepRecords cr, AnswerNodeRecords(challenger, t));
  if (!sr.complete()) {
    return Status::Error("dispute-solver-inconsistent", "the solver cannot recompute step " + std::to_string(t));
  }
  std::size_t i = 0;
  while (i < sr.records.size() && i < cr.records.size() && sr.records[i] == cr.records[i]) ++i;
  if (i >= sr.records.size()) {
    return Status::Error("dispute-inconsistent", "the node records agree although the states differ");
  }
  loc.node = i;
  loc.node_name = sr.names[i];
  loc.solver_record = sr.records[i];
  if (i < cr.records.size()) loc.challenger_record = cr.records[i];

  // Level 4: the node's inputs (owed by the solver, checked against the
  // agreed hashes) and its re-execution.
  auto inputs = AnswerNodeInputs(solver, t, i);
  if (!inputs.ok() && cr.complete()) inputs = AnswerNodeInputs(challenger, t, i);
  if (!inputs.ok()) return inputs.status();
  VT_ASSIGN_OR_RETURN(NodeVerdict verdict, ReexecuteNode(job, *inputs));
  loc.solver_right = verdict.Confirms(*loc.solver_record, rounded);
  // A rejected log entry is the solver's fault alone (the referee resolves
  // kLogRejected against the solver), whatever the challenger recorded.
  loc.challenger_right = verdict.kind == NodeVerdictKind::kLogRejected ||
                         (loc.challenger_record && verdict.Confirms(*loc.challenger_record, rounded));
  loc.verdict = std::move(verdict);
  return loc;
}

std::string NodeRecordToJson(const protocol::NodeRecord& r) {
  nlohmann::json j;
  j["op_kind"] = r.op_kind;
  j["op"] = r.op_kind == kAssembleOpKind ? std::string("assemble")
                                         : std::string(kernels::OpKindName(static_cast<kernels::OpKind>(r.op_kind)));
  j["attrs"] = ToHex(r.attrs);
  nlohmann::json inputs = nlohmann::json::array();
  for (const protocol::InputRef& in : r.inputs) {
    const char* src = in.source == protocol::InputSource::kState ? "state"
                      : in.source == protocol::InputSource::kBatch ? "batch"
                                                                    : "node";
    inputs.push_back({{"source", src}, {"index", in.index}, {"slot", in.slot}});
  }
  j["inputs"] = inputs;
  nlohmann::json outs = nlohmann::json::array();
  for (const Hash256& h : r.output_hashes) outs.push_back(h.Hex());
  j["output_hashes"] = outs;
  j["log_hash"] = r.log_hash.Hex();
  return j.dump();
}

std::string DisputeLocationToJson(const DisputeLocation& loc, int indent) {
  nlohmann::json j;
  j["checkpoint_index"] = loc.checkpoint_index;
  j["step"] = loc.step ? nlohmann::json(*loc.step) : nlohmann::json(nullptr);
  j["node"] = loc.node ? nlohmann::json(*loc.node) : nlohmann::json(nullptr);
  j["node_name"] = loc.node_name;
  if (loc.solver_record) j["solver_record"] = nlohmann::json::parse(NodeRecordToJson(*loc.solver_record));
  if (loc.challenger_record) j["challenger_record"] = nlohmann::json::parse(NodeRecordToJson(*loc.challenger_record));
  if (loc.verdict) {
    j["verdict"] = std::string(NodeVerdictKindName(loc.verdict->kind));
    j["verdict_detail"] = loc.verdict->detail;
  }
  j["solver_right"] = loc.solver_right;
  j["challenger_right"] = loc.challenger_right;
  return j.dump(indent);
}

}  // namespace vt::worker
