#pragma once
// Table 4 of referee_bench: the element-level descent of docs/referee.md
// ("Element-level descent") priced on a model's real step graph.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "kernels/mode.h"

namespace vt::referee_bench {

// One row per (preset, batch): prints the largest transaction, the referee's
// work and the game's moves for N = 2^30 steps. `level12_moves` is table 2's
// count of transactions until the disputed step is known at N = 2^30.
void DescentTable(const std::vector<std::pair<std::string, std::int64_t>>& presets, std::uint64_t level12_moves);

// Table 4b: the element rules verify/ implements, over the same graphs, sized
// with the real chunk openings and proof lengths, in repops and certified mode.
void ImplementedRulesTable(const std::vector<std::pair<std::string, std::int64_t>>& presets);

// What table 4b prints for one preset: how many node outputs verify/ has a
// rule for, and the largest transaction of levels 4-5 among them.
struct RuleCoverage {
  std::uint64_t outputs = 0, ruled = 0;
  std::uint64_t max_tx = 0;  // bytes, with the envelope
  std::string max_tx_name;
  std::uint64_t max_flops = 0, max_sha = 0, max_l4 = 0, max_l5 = 0;
  std::map<std::string, std::uint64_t> unruled;  // "op_kind/slot" -> outputs without a rule
};
// `mode`: the job's (verify::CheckRuleInMode says which rules it plays; a
// certified dot rule's leaves are exact sums, verify::PartialLeafBytes).
Result<RuleCoverage> ImplementedCoverage(const std::string& preset, std::int64_t batch,
                                         kernels::Mode mode = kernels::Mode::kRepops);

}  // namespace vt::referee_bench
