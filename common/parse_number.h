#pragma once
// Strict parsing of the whole numbers people type (command-line options):
// plain decimal digits only — no sign, no spaces, no 0x/octal prefixes, no
// exponent — and a value within [min, max]. strtoull would turn "-1" into
// 2^64 - 1 and "99999999999999999999" into a clamped value; here both are
// errors that say what was wrong and what is accepted.
//
// Status::Invalid reasons:
//   number-empty         nothing given
//   number-negative      a leading '-' where only values >= 0 are accepted
//   number-not-decimal   any character other than the digits (and one leading
//                        '-' for a signed range)
//   number-out-of-range  a value outside [min, max] (overflow included)

#include <cstdint>
#include <limits>
#include <string_view>

#include "common/result.h"

namespace vt {

Result<std::uint64_t> ParseUnsigned(std::string_view text,
                                    std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
Result<std::int64_t> ParseSigned(std::string_view text, std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                 std::int64_t max = std::numeric_limits<std::int64_t>::max());

}  // namespace vt
