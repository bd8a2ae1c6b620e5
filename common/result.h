#pragma once
// Errors are values (docs/style.md, "Errors are values"). A Status is one of:
//   ok       — success;
//   invalid  — the input from outside is wrong (a peer's or a user's fault).
//              It carries a stable, protocol-level reason code such as
//              "enc-trailing-bytes" that tests and peers may rely on;
//   error    — a local failure (disk, memory, a missing file) that says
//              nothing about the input's validity.
// Result<T> holds either a T or a non-ok Status, shaped like std::expected.

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vt {

enum class StatusKind : unsigned char { kOk, kInvalid, kError };

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok

  static Status Ok() { return Status(); }
  // `reason` is a stable machine-readable code; `detail` is for humans.
  static Status Invalid(std::string_view reason, std::string_view detail = {}) {
    return Status(StatusKind::kInvalid, reason, detail);
  }
  static Status Error(std::string_view reason, std::string_view detail = {}) {
    return Status(StatusKind::kError, reason, detail);
  }

  bool ok() const { return m_kind == StatusKind::kOk; }
  bool is_invalid() const { return m_kind == StatusKind::kInvalid; }
  bool is_error() const { return m_kind == StatusKind::kError; }
  StatusKind kind() const { return m_kind; }
  const std::string& reason() const { return m_reason; }
  const std::string& detail() const { return m_detail; }

  // "ok", "invalid: enc-trailing-bytes (3 bytes after the value)", …
  std::string ToString() const;

  // Prefix the detail with context, keeping kind and reason: used when an
  // error travels up ("reading key file /x: ...").
  Status WithContext(std::string_view context) const;

 private:
  Status(StatusKind kind, std::string_view reason, std::string_view detail)
      : m_kind(kind), m_reason(reason), m_detail(detail) {}

  StatusKind m_kind = StatusKind::kOk;
  std::string m_reason;
  std::string m_detail;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Status status) : m_v(std::in_place_index<1>, std::move(status)) {  // NOLINT
    assert(!std::get<1>(m_v).ok() && "a Result cannot hold an ok Status without a value");
  }

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { assert(ok()); return std::get<0>(m_v); }
  T& value() & { assert(ok()); return std::get<0>(m_v); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(m_v)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // The failure; Status::Ok() when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<1>(m_v); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(m_v) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Status> m_v;
};

}  // namespace vt

// Return early from a function returning Status or Result<U> on failure.
#define VT_TRY(expr)                              \
  do {                                            \
    ::vt::Status vt_try_status_ = (expr);         \
    if (!vt_try_status_.ok()) return vt_try_status_; \
  } while (0)

#define VT_CONCAT_INNER(a, b) a##b
#define VT_CONCAT(a, b) VT_CONCAT_INNER(a, b)

// VT_ASSIGN_OR_RETURN(auto x, ParseThing(bytes));
#define VT_ASSIGN_OR_RETURN(lhs, expr) \
  VT_ASSIGN_OR_RETURN_IMPL(VT_CONCAT(vt_result_, __LINE__), lhs, expr)
#define VT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
