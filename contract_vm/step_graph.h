#pragma once
// Where the arbitration precompile gets a step's operator graph, its batch
// and the next state header from: an injected, pure, deterministic function
// of the job spec. kernels/graph will provide the production implementation
// (the same code the worker trains with); tests inject a small graph built
// from real kernels operators. Everything here must be a pure function of
// its arguments: no I/O, no clock, no global state.

#include <cstdint>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/node_spec.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"

namespace vt::vm {

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
  // examples' dataset-commitment leaf bytes, in BatchIndices order.
  virtual Result<std::vector<kernels::Tensor>> AssembleBatch(const protocol::JobSpec& job,
                                                             std::span<const Bytes> examples) const = 0;
};

}  // namespace vt::vm
