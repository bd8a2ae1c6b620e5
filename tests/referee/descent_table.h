#pragma once
// Table 4 of referee_bench: the element-level descent of docs/referee.md
// ("Element-level descent") priced on a model's real step graph.

#include <cstdint>
#include <string>
#include <vector>

namespace vt::referee_bench {

// One row per (preset, batch): prints the largest transaction, the referee's
// work and the game's moves for N = 2^30 steps. `level12_moves` is table 2's
// count of transactions until the disputed step is known at N = 2^30.
void DescentTable(const std::vector<std::pair<std::string, std::int64_t>>& presets, std::uint64_t level12_moves);

}  // namespace vt::referee_bench
