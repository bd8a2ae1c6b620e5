// Table 4b of referee_bench as assertions: the element rules verify/
// implements cover the node outputs of the four presets' real step graphs
// (shapes only, no step is run) — all of them, in repops and in certified
// mode, and in rounded mode (attention_backward's dP, dS and GEMMs are
// vendor dgemm's: the canonical sums with their β as leaves) —, and every
// transaction of levels 4-5 for a ruled output stays within the 64 KiB
// budget, a certified dot's and sum's exact leaves and a rounded dot's and
// sum's fp64 leaves and log opening included (docs/referee.md, "Element-level descent").

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "tests/referee/descent_table.h"

namespace vt::referee_bench {
namespace {

constexpr std::uint64_t kTxBudget = 64 * 1024;

struct Expected {
  const char* preset;
  std::int64_t batch;
  std::uint64_t outputs;
  std::uint64_t min_ruled;  // what this branch covers; a rule removed by mistake fails here
  kernels::Mode mode = kernels::Mode::kRepops;
};

class DescentCoverage : public ::testing::TestWithParam<Expected> {};

TEST_P(DescentCoverage, RuledOutputsFitOneTransaction) {
  const Expected& want = GetParam();
  auto c = ImplementedCoverage(want.preset, want.batch, want.mode);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::string unruled;
  for (const auto& [what, count] : c->unruled) unruled += " " + what + " x" + std::to_string(count);
  std::printf(
      "%s %s: %llu of %llu outputs ruled, largest tx %llu B (%s), referee <= %llu flops, <= %llu SHA-256 "
      "blocks, lvl4/lvl5 %llu/%llu; unruled:%s\n",
      want.preset, std::string(kernels::ModeName(want.mode)).c_str(),
      static_cast<unsigned long long>(c->ruled), static_cast<unsigned long long>(c->outputs),
      static_cast<unsigned long long>(c->max_tx), c->max_tx_name.c_str(),
      static_cast<unsigned long long>(c->max_flops), static_cast<unsigned long long>(c->max_sha),
      static_cast<unsigned long long>(c->max_l4), static_cast<unsigned long long>(c->max_l5),
      unruled.c_str());
  EXPECT_EQ(c->outputs, want.outputs);
  EXPECT_GE(c->ruled, want.min_ruled) << unruled;
  EXPECT_LE(c->max_tx, kTxBudget) << c->max_tx_name;
}

INSTANTIATE_TEST_SUITE_P(Presets, DescentCoverage,
                         ::testing::Values(Expected{"gpt-tiny", 8, 222, 222},
                                           Expected{"mlp-fashion", 16, 31, 31},
                                           Expected{"cnn-fashion", 8, 157, 157},
                                           Expected{"gpt2-small", 1, 1132, 1132},
                                           Expected{"gpt-tiny", 8, 222, 222, kernels::Mode::kCertified},
                                           Expected{"mlp-fashion", 16, 31, 31, kernels::Mode::kCertified},
                                           Expected{"cnn-fashion", 8, 157, 157, kernels::Mode::kCertified},
                                           Expected{"gpt2-small", 1, 1132, 1132, kernels::Mode::kCertified},
                                           Expected{"gpt-tiny", 8, 222, 222, kernels::Mode::kRounded},
                                           Expected{"mlp-fashion", 16, 31, 31, kernels::Mode::kRounded},
                                           Expected{"cnn-fashion", 8, 157, 157, kernels::Mode::kRounded},
                                           Expected{"gpt2-small", 1, 1132, 1132, kernels::Mode::kRounded}));

}  // namespace
}  // namespace vt::referee_bench
