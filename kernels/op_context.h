#pragma once
// What one operator invocation (a node of a training step's graph) needs
// besides its tensors: the job's execution configuration, the node's
// rounding state in rounded mode, and the node's identity for randomness
// (dropout masks are Philox-addressed by seed, step, node and element).

#include <cstdint>
#include <span>

#include "common/result.h"
#include "kernels/mode.h"
#include "kernels/rounding.h"

namespace vt::kernels {

struct RngAddress {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  std::uint64_t node = 0;
};

class OpContext {
 public:
  // `rounding` must be non-null in rounded mode and is ignored otherwise. A
  // replaying `rounding` (not recording) turns on config.f64_reference: a
  // log is always judged against the canonical reference value, whoever
  // replays it (arbiter, challenger, a solver answering a dispute).
  OpContext(const ExecConfig& config, NodeRounding* rounding = nullptr, RngAddress rng = {})
      : m_config(config), m_rounding(rounding), m_rng(rng) {
    if (rounding != nullptr && !rounding->recording()) m_config.f64_reference = true;
  }

  const ExecConfig& config() const { return m_config; }
  Mode mode() const { return m_config.mode; }
  int threads() const { return m_config.threads; }
  const RngAddress& rng() const { return m_rng; }
  NodeRounding* rounding() const { return m_rounding; }

  // Rounded mode: round an output computed in fp64 into its fp32 tensor
  // storage (and record or replay the node's log). `slack`: empty, or the
  // per-value bound β (NodeRounding::Round). `reference`: the canonical
  // reference value of output i, used for the values past what a log entry
  // repairs when a trainer records on its vendor GEMM (NodeRounding::Round).
  Status RoundOutput(std::span<const double> exact, std::span<float> out, std::span<const double> slack = {},
                     const ReferenceFn* reference = nullptr) const;

 private:
  ExecConfig m_config;  // a copy: f64_reference may differ from the caller's
  NodeRounding* m_rounding;
  RngAddress m_rng;
};

}  // namespace vt::kernels
