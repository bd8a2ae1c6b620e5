#include "kernels/op_context.h"

namespace vt::kernels {

Status OpContext::RoundOutput(std::span<const double> exact, std::span<float> out,
                              std::span<const double> slack) const {
  if (m_rounding == nullptr) {
    return Status::Error("rounding-state-missing", "rounded mode needs a NodeRounding in the OpContext");
  }
  if (exact.size() != out.size()) {
    return Status::Error("rounding-size-mismatch", "exact and output spans differ in size");
  }
  if (!slack.empty() && slack.size() != exact.size()) {
    return Status::Error("rounding-size-mismatch", "slack and output spans differ in size");
  }
  return m_rounding->Round(exact, out, slack, m_config.threads);
}

}  // namespace vt::kernels
