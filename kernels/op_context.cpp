#include "kernels/op_context.h"

namespace vt::kernels {

Status OpContext::RoundOutput(std::span<const double> exact, std::span<float> out,
                              std::span<const double> slack, const ReferenceFn* reference) const {
  if (m_rounding == nullptr) {
    return Status::Error("rounding-state-missing", "rounded mode needs a NodeRounding in the OpContext");
  }
  if (exact.size() != out.size()) {
    return Status::Error("rounding-size-mismatch", "exact and output spans differ in size");
  }
  if (!slack.empty() && slack.size() != exact.size()) {
    return Status::Error("rounding-size-mismatch", "slack and output spans differ in size");
  }
  // A replay's values are the reference already.
  const bool on_vendor_gemm = m_rounding->recording() && !m_config.f64_reference;
  return m_rounding->Round(exact, out, slack, m_config.threads, on_vendor_gemm ? reference : nullptr);
}

}  // namespace vt::kernels
