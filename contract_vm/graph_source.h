#pragma once
// The production StepGraphSource: the step graph comes from kernels/graph
// (BuildStepGraph over the job's ModelSpec and OptimizerSpec — the very graph
// the worker trains with), and the batch and header follow the training
// loop's conventions (docs/referee.md, "What arbitration assumes"):
//
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

#include "contract_vm/step_graph.h"

namespace vt::vm {

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

}  // namespace vt::vm
