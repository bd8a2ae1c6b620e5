#pragma once
// Token amounts and the only arithmetic allowed on them. Every balance,
// escrow, bond, fee and reward is an unsigned 64-bit integer; every sum and
// difference goes through these helpers, so an overflow or an underflow is a
// stable invalid Status and never wraps (docs/referee.md, "Parties and
// money": all amounts are u64 with checked arithmetic).

#include <cassert>
#include <cstdint>
#include <limits>
#include <string_view>

#include "common/result.h"

namespace vt::vm {

using Amount = std::uint64_t;

inline constexpr std::string_view kReasonOverflow = "amount-overflow";
inline constexpr std::string_view kReasonUnderflow = "amount-underflow";

inline Result<Amount> CheckedAdd(Amount a, Amount b) noexcept {
  if (a > std::numeric_limits<Amount>::max() - b) return Status::Invalid(kReasonOverflow);
  return a + b;
}

inline Result<Amount> CheckedSub(Amount a, Amount b) noexcept {
  if (b > a) return Status::Invalid(kReasonUnderflow);
  return a - b;
}

inline Result<Amount> CheckedMul(Amount a, Amount b) noexcept {
  if (a != 0 && b > std::numeric_limits<Amount>::max() / a) return Status::Invalid(kReasonOverflow);
  return a * b;
}

// floor(amount * bps / 10000) for 0 <= bps <= 10000, exact and without a
// 128-bit intermediate: amount = q*10000 + r gives q*bps + floor(r*bps/10000),
// and neither term can overflow.
inline constexpr std::uint32_t kBpsDenominator = 10000;
inline Amount ShareBps(Amount amount, std::uint32_t bps) noexcept {
  assert(bps <= kBpsDenominator && "validated parameters only");
  const Amount q = amount / kBpsDenominator;
  const Amount r = amount % kBpsDenominator;
  return q * bps + (r * bps) / kBpsDenominator;
}

}  // namespace vt::vm
