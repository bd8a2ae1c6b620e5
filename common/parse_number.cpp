#include "common/parse_number.h"

#include <string>

namespace vt {
namespace {

std::string RangeText(std::int64_t min, std::uint64_t max, bool signed_min) {
  return "a whole number from " + (signed_min ? std::to_string(min) : std::string("0")) + " to " +
         std::to_string(max);
}

// The magnitude of a run of decimal digits; nullopt-like false when it does
// not fit in 64 bits.
bool Magnitude(std::string_view digits, std::uint64_t* out) {
  std::uint64_t v = 0;
  for (char ch : digits) {
    const std::uint64_t d = static_cast<std::uint64_t>(ch - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

Status CheckDigits(std::string_view text, std::string_view digits, const std::string& range) {
  if (digits.empty()) return Status::Invalid("number-not-decimal", "'" + std::string(text) + "' is not " + range);
  for (char ch : digits)
    if (ch < '0' || ch > '9')
      return Status::Invalid("number-not-decimal",
                             "'" + std::string(text) + "' is not " + range + " (decimal digits only)");
  return Status::Ok();
}

}  // namespace

Result<std::uint64_t> ParseUnsigned(std::string_view text, std::uint64_t max) {
  const std::string range = RangeText(0, max, false);
  if (text.empty()) return Status::Invalid("number-empty", "expected " + range);
  if (text.front() == '-')
    return Status::Invalid("number-negative", "'" + std::string(text) + "' is negative; expected " + range);
  VT_TRY(CheckDigits(text, text, range));
  std::uint64_t v = 0;
  if (!Magnitude(text, &v) || v > max)
    return Status::Invalid("number-out-of-range", "'" + std::string(text) + "' is too large; expected " + range);
  return v;
}

Result<std::int64_t> ParseSigned(std::string_view text, std::int64_t min, std::int64_t max) {
  const std::string range = RangeText(min, static_cast<std::uint64_t>(max), true);
  if (text.empty()) return Status::Invalid("number-empty", "expected " + range);
  const bool negative = text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  VT_TRY(CheckDigits(text, digits, range));
  const std::uint64_t limit = std::uint64_t{1} << 63;  // |INT64_MIN|; INT64_MAX = limit - 1
  std::uint64_t mag = 0;
  const Status out_of_range =
      Status::Invalid("number-out-of-range", "'" + std::string(text) + "' is outside " + range);
  if (!Magnitude(digits, &mag) || mag > (negative ? limit : limit - 1)) return out_of_range;
  // -mag computed without overflowing at mag = 2^63.
  const std::int64_t v =
      !negative ? static_cast<std::int64_t>(mag) : (mag == 0 ? 0 : -static_cast<std::int64_t>(mag - 1) - 1);
  if (v < min || v > max) return out_of_range;
  return v;
}

}  // namespace vt
