// TEST-ONLY cheating solvers (see the banner in adversary.h).

#include "worker/adversary.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/philox.h"
#include "common/random.h"
#include "kernels/graph/executor.h"
#include "kernels/ops/registry.h"
#include "worker/job.h"
#include "worker/state.h"

namespace vt::worker {

namespace {

namespace graph = kernels::graph;

Status BadSpec(const std::string& what) { return Status::Invalid("adversary-bad-spec", what); }

// Philox tensor id of the poisoned-example choice.
constexpr std::uint32_t kPoisonStream = 0xFFFF0020u;

// The (node, slot) that produces state tensor `k` of the next state.
std::optional<graph::NodeInput> Producer(const graph::StepGraph& g, std::size_t k) {
  if (k >= g.next_state.size() || g.next_state[k].source != graph::NodeInputSource::kNode)
    return std::nullopt;
  return g.next_state[k];
}

// The learning-rate node: the one whose output the optimizer nodes read as
// their learning rate (the graph has other LrSchedule nodes, e.g. the loss
// gradient's constant seed).
bool IsLrNode(const graph::StepGraph& g, std::size_t node) {
  for (const graph::Node& n : g.nodes) {
    if ((n.kind == kernels::OpKind::kAdamW || n.kind == kernels::OpKind::kSgd) && !n.inputs.empty()) {
      const graph::NodeInput& lr = n.inputs.back();
      return lr.source == graph::NodeInputSource::kNode && lr.index == node;
    }
  }
  return false;
}

// ---- poison-labels ------------------------------------------------------------------

class PoisonLabels final : public Adversary {
 public:
  PoisonLabels(AdversarySpec spec, const Dataset& honest) : Adversary(std::move(spec)) {
    m_data = Dataset(honest.name() + "+poisoned", honest.input_shape(), honest.target_shape(),
                     honest.num_classes());
    m_data.Reserve(honest.size());
    const std::uint64_t classes = honest.num_classes() > 1 ? honest.num_classes() : 256;
    // Poison example i when its uniform draw falls below the fraction: a
    // fixed, seed-determined set, so every computation of the cheater agrees.
    const std::vector<std::uint64_t> poisoned = PoisonedExamples(m_spec, honest.size());
    std::size_t next = 0;
    std::vector<float> target;
    for (std::uint64_t i = 0; i < honest.size(); ++i) {
      const auto t = honest.target(i);
      target.assign(t.begin(), t.end());
      if (next < poisoned.size() && poisoned[next] == i) {
        ++next;
        if (!target.empty())
          target[0] = static_cast<float>((static_cast<std::uint64_t>(target[0]) + 1) % classes);
      }
      m_data.Add(honest.input(i), target);
    }
  }

  const Dataset* TrainingData() const override { return &m_data; }
  bool ActsIn(std::uint64_t) const override { return false; }
  Status OnNode(const StepView&, std::size_t, std::span<kernels::Tensor>) override { return Status::Ok(); }

 private:
  Dataset m_data;
};

// ---- tamper-weight ------------------------------------------------------------------

class TamperWeight final : public Adversary {
 public:
  TamperWeight(AdversarySpec spec, std::size_t tensor_index)
      : Adversary(std::move(spec)), m_tensor(tensor_index) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }
  Status OnNode(const StepView& view, std::size_t node, std::span<kernels::Tensor> outputs) override {
    const auto producer = Producer(view.graph, m_tensor);
    if (!producer || producer->index != node) return Status::Ok();
    kernels::Tensor& t = outputs[producer->slot];
    if (t.numel() == 0) return Status::Ok();
    const auto e = static_cast<std::int64_t>(m_spec.element % static_cast<std::uint64_t>(t.numel()));
    const float v = t[e];
    float changed = v + 0.01f;
    if (changed == v) changed = std::nextafter(v, std::numeric_limits<float>::infinity());
    t[e] = changed;
    return Status::Ok();
  }

 private:
  std::size_t m_tensor;
};

// ---- skip-steps ---------------------------------------------------------------------

class SkipSteps final : public Adversary {
 public:
  explicit SkipSteps(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override {
    return step >= m_spec.step && step - m_spec.step < m_spec.count;
  }
  Status OnNode(const StepView& view, std::size_t node, std::span<kernels::Tensor> outputs) override {
    for (std::size_t k = 0; k < view.graph.next_state.size(); ++k) {
      const auto producer = Producer(view.graph, k);
      if (producer && producer->index == node) outputs[producer->slot] = view.state[k];
    }
    return Status::Ok();
  }
};

// ---- wrong-lr -----------------------------------------------------------------------

class WrongLr final : public Adversary {
 public:
  explicit WrongLr(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }
  Status OnNode(const StepView& view, std::size_t node, std::span<kernels::Tensor> outputs) override {
    if (!IsLrNode(view.graph, node)) return Status::Ok();
    for (float& v : outputs[0].values()) v *= m_spec.factor;
    return Status::Ok();
  }
};

// ---- wrong-output -------------------------------------------------------------------

class WrongOutput final : public Adversary {
 public:
  explicit WrongOutput(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }
  Status OnNode(const StepView&, std::size_t node, std::span<kernels::Tensor> outputs) override {
    if (node != m_spec.node || outputs.empty()) return Status::Ok();
    for (float& v : outputs[0].values()) v += 1.0f;
    return Status::Ok();
  }
};

// ---- wrong-value --------------------------------------------------------------------

class WrongValue final : public Adversary {
 public:
  explicit WrongValue(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }
  Status OnNode(const StepView&, std::size_t node, std::span<kernels::Tensor> outputs) override {
    if (node != m_spec.node) return Status::Ok();
    if (m_spec.slot >= outputs.size() ||
        m_spec.element >= static_cast<std::uint64_t>(outputs[m_spec.slot].numel()))
      return BadSpec("node " + std::to_string(node) + " has no output " + std::to_string(m_spec.slot) +
                     " with an element " + std::to_string(m_spec.element));
    outputs[m_spec.slot].values()[m_spec.element] += 1.0f;
    return Status::Ok();
  }
};

// ---- wrong-header -------------------------------------------------------------------

class WrongHeader final : public Adversary {
 public:
  explicit WrongHeader(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }
  Status OnNode(const StepView&, std::size_t, std::span<kernels::Tensor>) override { return Status::Ok(); }
  void OnNextState(TrainingState& next) override { next.rng_counter += 1; }
};

// ---- forge-log ----------------------------------------------------------------------

class ForgeLog final : public Adversary {
 public:
  explicit ForgeLog(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step == m_spec.step; }

  // Picks the position: the first at or after spec.position whose value is
  // not within 4τ of a rounding boundary on this machine (a fresh log at τ'
  // = 4τ lists exactly those that are), so that the referee's replay window
  // cannot accept the forged entry. In replay mode the logs hold the entry
  // this cheater forged earlier: it is taken out before the step runs and put
  // back after, exactly as training did.
  Status BeforeStep(const StepView& view, std::vector<kernels::RoundingLog>* replay_logs) override {
    const std::size_t i = m_spec.node;
    std::vector<kernels::RoundingLog> probe_logs;
    if (replay_logs != nullptr) {
      probe_logs = *replay_logs;
      // On its own machine the cheater's nearest rounding is what it logged,
      // so dropping node i's entries reproduces its honest outputs. The
      // probe only needs the nodes before i; the logs of later nodes were
      // recorded on the forged value and would not replay on the honest one
      // (at a small τ a one-ulp change upstream moves them out of their
      // windows), so they are dropped too.
      for (std::size_t j = i; j < probe_logs.size(); ++j) probe_logs[j].entries.clear();
    }
    graph::StepOptions options;
    options.seed = view.seed;
    options.tau_table = view.tau_table;
    options.replay_logs = replay_logs != nullptr ? &probe_logs : nullptr;
    options.keep_outputs = true;
    VT_ASSIGN_OR_RETURN(graph::StepResult honest,
                        graph::ExecuteStep(view.config, view.graph, view.state, view.batch, options));
    const std::vector<const kernels::Tensor*> inputs =
        graph::NodeInputTensors(view.graph, i, view.state, view.batch, honest.outputs);
    // The positions a replayer would accept an entry at (within 4w of a
    // boundary, w = max(τ·u, β) with the node's τ and the operator's β).
    kernels::RoundingSpec spec = view.config.rounding;
    if (view.tau_table != nullptr) spec.tau_q16 = view.tau_table->Lookup(graph::NodeTauKey(view.graph, i));
    kernels::NodeRounding window = kernels::NodeRounding::RecordReplayWindow(spec);
    const graph::Node& node = view.graph.nodes[i];
    std::vector<kernels::Tensor> window_outputs;
    VT_TRY(kernels::RunOp(
        kernels::OpContext(view.config, &window, kernels::RngAddress{view.seed, view.graph.step, i}),
        node.kind, node.attrs, inputs, window_outputs));
    std::uint64_t total = 0;
    for (const kernels::Tensor& t : honest.outputs[i]) total += static_cast<std::uint64_t>(t.numel());
    std::uint64_t p = m_spec.position;
    for (const kernels::LogEntry& e : window.log().entries) {
      if (e.position == p) ++p;  // near a boundary: try the next one
    }
    if (p >= total) return BadSpec("forge-log: node " + std::to_string(i) + " has no value to forge");
    m_position = p;
    if (replay_logs != nullptr) {
      auto& entries = (*replay_logs)[i].entries;
      entries.erase(std::remove_if(entries.begin(), entries.end(),
                                   [p](const kernels::LogEntry& e) { return e.position == p; }),
                    entries.end());
    }
    return Status::Ok();
  }

  Status OnNode(const StepView& view, std::size_t node, std::span<kernels::Tensor> outputs) override {
    if (node != m_spec.node) return Status::Ok();
    std::uint64_t p = m_position;
    for (kernels::Tensor& t : outputs) {
      const auto n = static_cast<std::uint64_t>(t.numel());
      if (p < n) {
        float& v = t[static_cast<std::int64_t>(p)];
        // One grid step up: the upper neighbour of a value just above v.
        const double above = std::nextafter(static_cast<double>(v), std::numeric_limits<double>::infinity());
        v = kernels::ClassifyRounding(above, view.config.rounding).up;
        return Status::Ok();
      }
      p -= n;
    }
    return Status::Ok();
  }

  void AfterStep(const StepView&, std::vector<kernels::RoundingLog>& logs) override {
    auto& entries = logs[m_spec.node].entries;
    const kernels::LogEntry forged{m_position, true};
    auto it = std::lower_bound(
        entries.begin(), entries.end(), forged,
        [](const kernels::LogEntry& a, const kernels::LogEntry& b) { return a.position < b.position; });
    if (it != entries.end() && it->position == m_position) {
      *it = forged;
    } else {
      entries.insert(it, forged);
    }
  }

 private:
  std::uint64_t m_position = 0;
};

// ---- steer-log ----------------------------------------------------------------------

class SteerLog final : public Adversary {
 public:
  explicit SteerLog(AdversarySpec spec) : Adversary(std::move(spec)) {}
  bool ActsIn(std::uint64_t step) const override { return step >= m_spec.step; }

  // Recording: computes the whole step first as the arbiter would (the
  // canonical reference, ExecConfig::f64_reference) with the non-nearest
  // neighbour taken and logged wherever the acceptance rule allows it
  // (NodeRounding::RecordSteered); the engine's own node outputs are then
  // replaced by these (OnNode) and its logs by the steered ones (AfterStep).
  // Replaying its own logs (dispute answers): nothing to do — the replay
  // evaluates the same reference and accepts every steered entry.
  Status BeforeStep(const StepView& view, std::vector<kernels::RoundingLog>* replay_logs) override {
    m_steered.reset();
    if (replay_logs != nullptr || view.config.mode != kernels::Mode::kRounded) return Status::Ok();
    kernels::ExecConfig config = view.config;
    config.f64_reference = true;
    graph::StepOptions options;
    options.seed = view.seed;
    options.tau_table = view.tau_table;
    options.steer_rounding = true;
    options.keep_outputs = true;
    VT_ASSIGN_OR_RETURN(graph::StepResult steered,
                        graph::ExecuteStep(config, view.graph, view.state, view.batch, options));
    m_steered = std::move(steered);
    return Status::Ok();
  }

  Status OnNode(const StepView&, std::size_t node, std::span<kernels::Tensor> outputs) override {
    if (!m_steered) return Status::Ok();
    const std::vector<kernels::Tensor>& mine = m_steered->outputs[node];
    for (std::size_t k = 0; k < outputs.size() && k < mine.size(); ++k) outputs[k] = mine[k];
    return Status::Ok();
  }

  void AfterStep(const StepView&, std::vector<kernels::RoundingLog>& logs) override {
    if (m_steered) logs = m_steered->logs;
    m_steered.reset();
  }

 private:
  std::optional<graph::StepResult> m_steered;
};

Result<std::uint64_t> ParseU64(std::string_view key, std::string_view v) {
  std::uint64_t out = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size()) {
    return BadSpec(std::string(key) + "=" + std::string(v) + " is not an unsigned integer");
  }
  return out;
}

Result<double> ParseDouble(std::string_view key, std::string_view v) {
  try {
    std::size_t used = 0;
    const std::string s(v);
    const double d = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(d)) throw std::invalid_argument("x");
    return d;
  } catch (const std::exception&) {
    return BadSpec(std::string(key) + "=" + std::string(v) + " is not a number");
  }
}

}  // namespace

std::vector<std::uint64_t> PoisonedExamples(const AdversarySpec& spec, std::uint64_t size) {
  // A fixed, seed-determined set, so every computation of the cheater agrees.
  const PhiloxKey key = PhiloxKeyFromSeed(spec.seed);
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < size; ++i) {
    if (static_cast<double>(UniformAt(key, 0, kPoisonStream, i)) < spec.fraction) out.push_back(i);
  }
  return out;
}

namespace {
// Every kind with its text name (CLI, DescribeAdversary).
constexpr std::pair<AdversaryKind, std::string_view> kKindNames[] = {
    {AdversaryKind::kPoisonLabels, "poison-labels"}, {AdversaryKind::kTamperWeight, "tamper-weight"},
    {AdversaryKind::kSkipSteps, "skip-steps"},       {AdversaryKind::kWrongLr, "wrong-lr"},
    {AdversaryKind::kForgeLog, "forge-log"},         {AdversaryKind::kWrongOutput, "wrong-output"},
    {AdversaryKind::kSteerLog, "steer-log"},         {AdversaryKind::kWrongValue, "wrong-value"},
    {AdversaryKind::kWrongHeader, "wrong-header"},
};
}  // namespace

std::string_view AdversaryKindName(AdversaryKind kind) {
  for (const auto& [k, name] : kKindNames)
    if (k == kind) return name;
  return "unknown";
}

Result<AdversarySpec> ParseAdversarySpec(std::string_view text) {
  AdversarySpec spec;
  const std::size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  bool found = false;
  std::string known;
  for (const auto& [k, name] : kKindNames) {
    known += (known.empty() ? "" : ", ") + std::string(name);
    if (name == kind) {
      spec.kind = k;
      found = true;
    }
  }
  if (!found) return BadSpec("unknown adversary '" + std::string(kind) + "' (known: " + known + ")");
  std::string_view rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return BadSpec("'" + std::string(item) + "' is not key=value");
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "step") {
      VT_ASSIGN_OR_RETURN(spec.step, ParseU64(key, value));
    } else if (key == "count") {
      VT_ASSIGN_OR_RETURN(spec.count, ParseU64(key, value));
    } else if (key == "node") {
      VT_ASSIGN_OR_RETURN(spec.node, ParseU64(key, value));
    } else if (key == "position") {
      VT_ASSIGN_OR_RETURN(spec.position, ParseU64(key, value));
    } else if (key == "element") {
      VT_ASSIGN_OR_RETURN(spec.element, ParseU64(key, value));
    } else if (key == "slot") {
      VT_ASSIGN_OR_RETURN(spec.slot, ParseU64(key, value));
    } else if (key == "seed") {
      VT_ASSIGN_OR_RETURN(spec.seed, ParseU64(key, value));
    } else if (key == "tensor") {
      spec.tensor = std::string(value);
    } else if (key == "fraction") {
      VT_ASSIGN_OR_RETURN(spec.fraction, ParseDouble(key, value));
      if (spec.fraction < 0.0 || spec.fraction > 1.0) return BadSpec("fraction must be in [0, 1]");
    } else if (key == "factor") {
      VT_ASSIGN_OR_RETURN(double f, ParseDouble(key, value));
      spec.factor = static_cast<float>(f);
    } else {
      return BadSpec("unknown key '" + std::string(key) + "'");
    }
  }
  if (spec.kind == AdversaryKind::kSkipSteps && spec.count == 0) return BadSpec("count must be at least 1");
  return spec;
}

std::string DescribeAdversary(const AdversarySpec& s) {
  std::string out(AdversaryKindName(s.kind));
  switch (s.kind) {
    case AdversaryKind::kPoisonLabels:
      return out + ":fraction=" + std::to_string(s.fraction) + ",seed=" + std::to_string(s.seed);
    case AdversaryKind::kTamperWeight:
      return out + ":step=" + std::to_string(s.step) + ",tensor=" + s.tensor +
             ",element=" + std::to_string(s.element);
    case AdversaryKind::kSkipSteps:
      return out + ":step=" + std::to_string(s.step) + ",count=" + std::to_string(s.count);
    case AdversaryKind::kWrongLr:
      return out + ":step=" + std::to_string(s.step) + ",factor=" + std::to_string(s.factor);
    case AdversaryKind::kForgeLog:
      return out + ":step=" + std::to_string(s.step) + ",node=" + std::to_string(s.node) +
             ",position=" + std::to_string(s.position);
    case AdversaryKind::kWrongOutput:
      return out + ":step=" + std::to_string(s.step) + ",node=" + std::to_string(s.node);
    case AdversaryKind::kSteerLog:
    case AdversaryKind::kWrongHeader:
      return out + ":step=" + std::to_string(s.step);
    case AdversaryKind::kWrongValue:
      return out + ":step=" + std::to_string(s.step) + ",node=" + std::to_string(s.node) +
             ",slot=" + std::to_string(s.slot) + ",element=" + std::to_string(s.element);
  }
  return out;
}

Result<std::unique_ptr<Adversary>> MakeAdversary(const AdversarySpec& spec, const Job& job,
                                                 const Dataset& dataset) {
  const bool acts_in_steps = spec.kind != AdversaryKind::kPoisonLabels;
  if (acts_in_steps && spec.step >= job.spec.num_steps) {
    return BadSpec("step " + std::to_string(spec.step) + " is not below the job's " +
                   std::to_string(job.spec.num_steps) + " steps");
  }
  std::size_t nodes = 0;
  if (spec.kind == AdversaryKind::kForgeLog || spec.kind == AdversaryKind::kWrongOutput ||
      spec.kind == AdversaryKind::kWrongValue) {
    VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes,
                        graph::BatchShapes(job.model, static_cast<std::int64_t>(job.spec.batch_size)));
    VT_ASSIGN_OR_RETURN(nodes, graph::NodeCount(job.model, job.optimizer, spec.step, shapes));
    if (spec.node >= nodes) {
      return BadSpec("node " + std::to_string(spec.node) + " is not below the step's " +
                     std::to_string(nodes) + " nodes");
    }
  }
  switch (spec.kind) {
    case AdversaryKind::kPoisonLabels:
      return std::unique_ptr<Adversary>(new PoisonLabels(spec, dataset));
    case AdversaryKind::kTamperWeight: {
      VT_ASSIGN_OR_RETURN(std::vector<graph::TensorSpec> specs, graph::StateSpecs(job.model, job.optimizer));
      std::size_t index = specs.size();
      for (std::size_t k = 0; k < specs.size(); ++k) {
        const bool wanted = spec.tensor.empty() ? specs[k].role == graph::TensorRole::kParameter
                                                : specs[k].name == spec.tensor;
        if (wanted) {
          index = k;
          break;
        }
      }
      if (index == specs.size()) return BadSpec("no state tensor named '" + spec.tensor + "'");
      AdversarySpec s = spec;
      s.tensor = specs[index].name;
      return std::unique_ptr<Adversary>(new TamperWeight(s, index));
    }
    case AdversaryKind::kSkipSteps:
      return std::unique_ptr<Adversary>(new SkipSteps(spec));
    case AdversaryKind::kWrongLr:
      return std::unique_ptr<Adversary>(new WrongLr(spec));
    case AdversaryKind::kForgeLog:
      if (job.mode() != kernels::Mode::kRounded) return BadSpec("forge-log needs a rounded-mode job");
      return std::unique_ptr<Adversary>(new ForgeLog(spec));
    case AdversaryKind::kWrongOutput:
      return std::unique_ptr<Adversary>(new WrongOutput(spec));
    case AdversaryKind::kWrongValue:
      return std::unique_ptr<Adversary>(new WrongValue(spec));
    case AdversaryKind::kWrongHeader:
      return std::unique_ptr<Adversary>(new WrongHeader(spec));
    case AdversaryKind::kSteerLog:
      if (job.mode() != kernels::Mode::kRounded) return BadSpec("steer-log needs a rounded-mode job");
      return std::unique_ptr<Adversary>(new SteerLog(spec));
  }
  return BadSpec("unknown adversary");
}

}  // namespace vt::worker
