#pragma once
// ============================================================================
//  TEST-ONLY: simulated cheating solvers.
//
//  Nothing here is used by an honest run. The CLI accepts them only behind
//  `--adversary` (flagged "test only" in --help) and marks every output of a
//  run that used one. They exist so that tests and demos can check that the
//  audit and the dispute answers locate each kind of cheating at exactly the
//  checkpoint, step and node where it acted.
// ============================================================================
//
// A cheater is consistent: every computation it does for the job — training,
// and later its own dispute answers (per-step hashes, node records, node
// inputs) — goes through the same hooks, so its answers agree with its
// commitment, as a real cheater's would. Kinds:
//
//   poison-labels   fraction=F seed=S      trains on a copy of the dataset in which a
//                                          fraction F of the examples have their
//                                          target(s) changed (class c → c+1 mod classes;
//                                          token x → x+1 mod 256), while committing to
//                                          the real dataset root
//   tamper-weight   step=T tensor=NAME element=E   after step T's update, one element of
//                                          the named state tensor (default: the first
//                                          parameter) is changed, in the output of the
//                                          node that produces it
//   skip-steps      step=T count=C        steps T..T+C-1 leave every tensor unchanged
//                                          (the nodes that produce the next state output
//                                          their inputs); step counter and data cursor advance
//   wrong-lr        step=T factor=X       the learning-rate node of step T outputs X·lr
//   forge-log       step=T node=I position=P   rounded mode: node I of step T gets a log
//                                          entry at the first position ≥ P whose value is
//                                          far from any rounding boundary, and the solver
//                                          rounds that value the wrong way (one grid step up)
//   wrong-output    step=T node=I          node I of step T reports (and passes on) an
//                                          output with 1 added to every element of output 0
//   wrong-value     step=T node=I slot=S element=E   the same for one value: 1 added to
//                                          element E of output S only (the element level's
//                                          walks then end inside the output, not at its start)
//   wrong-header    step=T                 every node of step T is honest, but the next
//                                          state's header is not: its rng_counter is one
//                                          higher, so h_{T+1} differs from the honest one
//                                          in its header leaf alone (the assemble node's
//                                          walk, verify/state_walk.h, ends there)
//   steer-log       step=T                 rounded mode, from step T on: every node is
//                                          computed as the canonical reference and every
//                                          value within w of its rounding boundary takes
//                                          (and logs) the NON-nearest neighbour — the most
//                                          the acceptance rule lets a cheater steer
//                                          (docs/referee.md, "Residual freedom")
//
// Text form (CLI): "<kind>:key=value,key=value", e.g. "wrong-lr:step=7,factor=10".

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kernels/calibration.h"
#include "kernels/graph/step_graph.h"
#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"
#include "worker/dataset.h"

namespace vt::worker {

struct Job;
struct TrainingState;

enum class AdversaryKind : std::uint8_t {
  kPoisonLabels,
  kTamperWeight,
  kSkipSteps,
  kWrongLr,
  kForgeLog,
  kWrongOutput,
  kSteerLog,
  kWrongValue,
  kWrongHeader,
};

std::string_view AdversaryKindName(AdversaryKind kind);

struct AdversarySpec {
  AdversaryKind kind = AdversaryKind::kTamperWeight;
  std::uint64_t step = 0;
  std::uint64_t count = 1;       // skip-steps
  std::uint64_t node = 0;        // forge-log, wrong-output, wrong-value
  std::uint64_t position = 0;    // forge-log
  std::uint64_t element = 0;     // tamper-weight, wrong-value
  std::uint64_t slot = 0;        // wrong-value
  std::string tensor;            // tamper-weight; empty = the first parameter
  double fraction = 0.1;         // poison-labels
  std::uint64_t seed = 1;        // poison-labels
  float factor = 10.0f;          // wrong-lr
};

// Invalid "adversary-bad-spec" with a message naming the problem.
Result<AdversarySpec> ParseAdversarySpec(std::string_view text);
std::string DescribeAdversary(const AdversarySpec& spec);

// What a hook sees of the step being computed.
struct StepView {
  const kernels::graph::StepGraph& graph;
  std::span<const kernels::Tensor> state;  // the step's starting state, name order
  std::span<const kernels::Tensor> batch;
  const kernels::ExecConfig& config;
  std::uint64_t seed = 0;
  const kernels::TauTable* tau_table = nullptr;  // rounded mode: the job's per-node τ
};

class Adversary {
 public:
  virtual ~Adversary() = default;
  const AdversarySpec& spec() const { return m_spec; }

  // The examples the cheater trains on (poison-labels), or null for the real ones.
  virtual const Dataset* TrainingData() const { return nullptr; }
  // Whether the hooks act in `step` (the engine runs untouched otherwise).
  virtual bool ActsIn(std::uint64_t step) const = 0;
  // Before the step: may look at the honest step (forge-log probes which
  // position to forge) and edit the logs the step will replay.
  virtual Status BeforeStep(const StepView& /*view*/, std::vector<kernels::RoundingLog>* /*replay_logs*/) {
    return Status::Ok();
  }
  // After node `node` ran: may change its outputs (later nodes see the change).
  virtual Status OnNode(const StepView& view, std::size_t node, std::span<kernels::Tensor> outputs) = 0;
  // After the step: may change the logs it commits to.
  virtual void AfterStep(const StepView& /*view*/, std::vector<kernels::RoundingLog>& /*logs*/) {}
  // The state the step produced (tensors, step, cursor advanced): may change it.
  virtual void OnNextState(TrainingState& /*next*/) {}

 protected:
  explicit Adversary(AdversarySpec spec) : m_spec(std::move(spec)) {}
  AdversarySpec m_spec;
};

// poison-labels: the indices of the examples it poisons in a dataset of `size`
// (example i when Philox(seed, 0, 0xFFFF0020, i) < fraction), ascending.
std::vector<std::uint64_t> PoisonedExamples(const AdversarySpec& spec, std::uint64_t size);

// Invalid "adversary-bad-spec" when the spec does not fit the job (unknown
// tensor, node out of range, forge-log outside rounded mode, …).
Result<std::unique_ptr<Adversary>> MakeAdversary(const AdversarySpec& spec, const Job& job, const Dataset& dataset);

}  // namespace vt::worker
