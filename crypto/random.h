#pragma once
// Randomness from the operating system (getrandom(2)) for keys, nonces,
// salts and signing aux data. Never used for anything consensus-relevant:
// consensus randomness is derived from seeds (Philox, see docs/formats.md,
// "Randomness (Philox streams)").

#include <cstdint>
#include <span>

#include "common/result.h"

namespace vt::crypto {

// Fills `out` completely, or returns Error "os-random-failed".
Status FillOsRandom(std::span<std::uint8_t> out);

}  // namespace vt::crypto
