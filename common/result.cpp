#include "common/result.h"

namespace vt {

std::string Status::ToString() const {
  switch (m_kind) {
    case StatusKind::kOk:
      return "ok";
    case StatusKind::kInvalid:
    case StatusKind::kError: {
      std::string s = m_kind == StatusKind::kInvalid ? "invalid: " : "error: ";
      s += m_reason;
      if (!m_detail.empty()) s += " (" + m_detail + ")";
      return s;
    }
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string detail(context);
  if (!m_detail.empty()) detail += ": " + m_detail;
  return Status(m_kind, m_reason, detail);
}

}  // namespace vt
