#pragma once
// One GPT training step and the arbitration of its most expensive node, for
// the referee benchmark (referee/bench may not include kernels/, so the
// kernels side lives here, behind an opaque interface).

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace vt::test {

struct WorkloadInfo {
  std::string preset;
  std::int64_t batch = 0;
  std::int64_t context = 0;
  std::size_t nodes = 0;
  std::uint64_t step_flops = 0;    // sum of kernels OpFlops over the step's nodes
  std::string max_node;            // the costliest node that does not read the batch
  std::uint64_t max_node_flops = 0;
  std::uint64_t median_node_flops = 0;
  std::size_t payload_bytes = 0;   // the encoded arbitration payload of the max node (after Prepare)
};

class ArbitrationWorkload {
 public:
  // Builds the graph of `preset` (a GPT preset of kernels/graph) for one
  // step with `batch` sequences; no tensors yet.
  static Result<std::unique_ptr<ArbitrationWorkload>> Describe(const std::string& preset, std::int64_t batch,
                                                               int threads);
  ~ArbitrationWorkload();

  const WorkloadInfo& info() const;
  // Initialises the state, runs one step keeping every output, and builds the
  // precompile's request for the max node (openings and proofs, as a party).
  Status Prepare();
  // One full repops training step.
  Status RunStep();
  // The arbitration precompile on the max node; checks that it reproduces
  // the step's outputs and returns the gas it metered.
  Result<std::uint64_t> RunArbitration();

 private:
  struct Impl;
  explicit ArbitrationWorkload(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace vt::test
