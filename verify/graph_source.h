#pragma once
// Where the node check (verify/arbitrate.h) gets a step's operator graph, its
// batch and the next state header from: pure, deterministic functions of the
// job spec — no I/O, no clock, no global state.
//
// KernelsGraphSource is the one production implementation, used by the
// arbitration precompile and by every worker that checks a node. Its rules
// (docs/referee.md, "What arbitration assumes"):
//
//  * the graph: kernels/graph BuildStepGraph over the job's ModelSpec and
//    OptimizerSpec — the very graph the worker trains with — viewed as
//    protocol types (verify/node_spec.h);
//  * data order: protocol/data_order.h BatchIndices from the header's cursor
//    (data_epoch, data_offset);
//  * dataset leaf i = tensor bytes of input_i ‖ tensor bytes of target_i
//    (worker/dataset.h), stacked into [B, …] batch tensors;
//  * the header of h_{t+1} = the header of h_t with step + 1 and the cursor
//    advanced by B; names and rng_counter unchanged;
//  * rounded mode: node i's τ is the job's TauTable (kernels/calibration.h
//    DecodeJobTauTable; empty bytes = kDefaultTauQ16 everywhere) looked up at
//    kernels::graph::NodeTauKey(graph, i) — its op name and input shapes —
//    falling back to the table's "*" default: the same lookup the worker's
//    executor makes. A malformed table is Invalid "job-bad-tau-table".
//
// Tests may wrap it (to count or fault calls); every method of a source must
// stay a pure function of its arguments.

#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "verify/node_spec.h"

namespace vt::verify {

class StepGraphSource {
 public:
  virtual ~StepGraphSource() = default;

  // The operator graph of step `step` (the transition h_step → h_step+1).
  // Must pass ValidateStepGraph. Invalid when the job cannot be built.
  virtual Result<StepGraph> Build(const protocol::JobSpec& job, std::uint64_t step) const = 0;

  // The header of h_{t+1} given the header of h_t (step + 1, the advanced
  // data cursor, the same tensor names, …).
  virtual Result<protocol::StateHeader> NextHeader(const protocol::JobSpec& job,
                                                   const protocol::StateHeader& header) const = 0;

  // Dataset indices of the batch the step starting at `header` reads.
  virtual Result<std::vector<std::uint64_t>> BatchIndices(const protocol::JobSpec& job,
                                                          const protocol::StateHeader& header) const = 0;

  // The batch tensors (InputSource::kBatch 0 = inputs, 1 = targets) from the
  // examples' dataset-commitment leaf bytes, stacked in the given order:
  // [n, …] for n examples, 1 ≤ n ≤ B (all B in BatchIndices order: the
  // step's batch; fewer: the examples a batch opening reads).
  virtual Result<std::vector<kernels::Tensor>> AssembleBatch(const protocol::JobSpec& job,
                                                             std::span<const Bytes> examples) const = 0;
};

class KernelsGraphSource final : public StepGraphSource {
 public:
  Result<StepGraph> Build(const protocol::JobSpec& job, std::uint64_t step) const override;
  Result<protocol::StateHeader> NextHeader(const protocol::JobSpec& job,
                                           const protocol::StateHeader& header) const override;
  Result<std::vector<std::uint64_t>> BatchIndices(const protocol::JobSpec& job,
                                                  const protocol::StateHeader& header) const override;
  Result<std::vector<kernels::Tensor>> AssembleBatch(const protocol::JobSpec& job,
                                                     std::span<const Bytes> examples) const override;
};

}  // namespace vt::verify
