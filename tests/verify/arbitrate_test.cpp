// verify/: the one node rule and the log chain, judged from the outside.
//
// The attacker chooses the gas limit of an Arbitrate transaction, so the
// rule must stop cleanly wherever the meter refuses, having done no unpaid
// work; and the worker's unmetered run must reach the very verdict the
// precompile reaches. The log chain must refuse any altered proof.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "contract_vm/arbitration.h"
#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "tests/referee/history.h"
#include "tests/support/test_seed.h"
#include "verify/arbitrate.h"
#include "verify/graph_source.h"

namespace vt::verify {
namespace {

using test::History;
using test::TinyJob;

// Records every charge; refuses the `refuse_at`-th (0-based) when set.
class ScriptedMeter final : public Meter {
 public:
  explicit ScriptedMeter(std::optional<std::size_t> refuse_at = std::nullopt) : m_refuse_at(refuse_at) {}
  Status Charge(Cost cost, std::uint64_t amount) override {
    if (m_refuse_at && charges.size() == *m_refuse_at) return Status::Invalid("tx-out-of-gas", "scripted");
    charges.emplace_back(cost, amount);
    return Status::Ok();
  }
  std::vector<std::pair<Cost, std::uint64_t>> charges;

 private:
  std::optional<std::size_t> m_refuse_at;
};

struct Case {
  ArbitrationCase c;
  ArbitrationPayload payload;
  StepGraph graph;
};

Case CaseOf(const TinyJob& tiny, const History& h, std::uint64_t step, std::uint64_t node) {
  Case out;
  out.c = test::ArbitrationCaseOf(tiny, h, step, node);
  out.payload = DecodeExact<ArbitrationPayload>(test::MakeArbitrate(tiny, h, h, 0, 0, step, node).payload).value();
  out.graph = KernelsGraphSource().Build(tiny.job, step).value();
  return out;
}

class VerifyModes : public testing::TestWithParam<kernels::Mode> {};

TEST_P(VerifyModes, ARefusedChargeAnywhereStopsTheRuleWithThatStatus) {
  const TinyJob tiny = test::MakeTinyJob(6, 2, GetParam());
  auto history = test::Train(tiny, {});
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  const KernelsGraphSource graphs;
  const std::uint64_t step = 3;
  std::size_t refusals = 0;
  for (std::uint64_t node = 0; node < history->records[step].size(); ++node) {
    const Case k = CaseOf(tiny, *history, step, node);
    ScriptedMeter full;
    auto expected = ArbitrateNode(graphs, k.graph, k.c, k.payload, full);
    ASSERT_TRUE(expected.ok()) << "node " << node << ": " << expected.status().ToString();
    ASSERT_EQ(expected->kind, ArbitrationKind::kExecuted) << expected->detail;
    EXPECT_TRUE(OutcomeConfirms(*expected, history->records[step][node],
                                GetParam() == kernels::Mode::kRounded && node + 1 < k.c.node_count))
        << "node " << node;
    ASSERT_FALSE(full.charges.empty()) << "every node costs something";
    // Unmetered (the worker): the same verdict.
    FreeMeter free;
    auto unmetered = ArbitrateNode(graphs, k.graph, k.c, k.payload, free);
    ASSERT_TRUE(unmetered.ok());
    EXPECT_EQ(unmetered->output_hashes, expected->output_hashes);
    EXPECT_EQ(unmetered->log_hash, expected->log_hash);
    // Refused at the i-th charge: exactly that status, after exactly i charges.
    for (std::size_t i = 0; i < full.charges.size(); ++i) {
      ScriptedMeter meter(i);
      auto r = ArbitrateNode(graphs, k.graph, k.c, k.payload, meter);
      EXPECT_EQ(r.status().reason(), "tx-out-of-gas") << "node " << node << " charge " << i;
      EXPECT_EQ(meter.charges.size(), i);
      EXPECT_TRUE(std::equal(meter.charges.begin(), meter.charges.end(), full.charges.begin()));
      ++refusals;
    }
    // The precompile's price is the rule's charges, priced once, plus the graph.
    vm::GasMeter priced(std::uint64_t{1} << 50);
    vm::GasCosts costs(priced);
    for (const auto& [cost, amount] : full.charges) ASSERT_TRUE(costs.Charge(cost, amount).ok());
    const vm::Arbiter arbiter(graphs);
    vm::GasMeter gas(std::uint64_t{1} << 50);
    ASSERT_TRUE(arbiter.Arbitrate(k.c, EncodeToBytes(k.payload), gas).ok());
    EXPECT_EQ(gas.used(), priced.used() + vm::GraphGas(k.graph.nodes.size())) << "node " << node;
  }
  EXPECT_GT(refusals, 50u);
}

// The arbitrator of a rounded node decodes the log it is sent and hashes it
// as a tree, two hashes an entry: a log of many entries is paid for — its
// declared payload, then its tree — before either is done.
TEST(VerifyArbitrate, ALongLogIsPaidForBeforeItIsDecodedAndHashed) {
  const TinyJob tiny = test::MakeTinyJob(6, 2, kernels::Mode::kRounded);
  auto history = test::Train(tiny, {});
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  Case k = CaseOf(tiny, *history, 3, 0);
  kernels::RoundingLog big;
  constexpr std::uint64_t kEntries = 100'000;
  for (std::uint64_t i = 0; i < kEntries; ++i) big.entries.push_back({3 * i, i % 2 == 0});
  k.payload.log = kernels::EncodeRoundingLog(big);
  const KernelsGraphSource graphs;
  ScriptedMeter full;
  auto outcome = ArbitrateNode(graphs, k.graph, k.c, k.payload, full);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->kind, ArbitrationKind::kLogRejected) << "entries past the node's outputs";
  const auto at = [&](Cost cost, std::uint64_t amount) {
    return std::find(full.charges.begin(), full.charges.end(), std::pair{cost, amount}) -
           full.charges.begin();
  };
  const auto decode = at(Cost::kHashBytes, kernels::RoundingLogPayload(big).size());
  const auto tree = at(Cost::kMerkleHashes, 2 * kEntries);
  ASSERT_LT(decode, tree) << "the payload is paid for, then the tree";
  ASSERT_LT(tree, static_cast<std::ptrdiff_t>(full.charges.size()));
  for (const auto refused : {decode, tree}) {
    ScriptedMeter meter(static_cast<std::size_t>(refused));
    EXPECT_EQ(ArbitrateNode(graphs, k.graph, k.c, k.payload, meter).status().reason(), "tx-out-of-gas");
  }
}

TEST(VerifyLogChain, RefusesEveryAlteredProofPositionAndLog) {
  const TinyJob tiny = test::MakeTinyJob(6, 2, kernels::Mode::kRounded);
  auto history = test::Train(tiny, {});
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  std::mt19937_64 rng(test::TestSeed());
  std::size_t tried = 0;
  for (std::uint64_t step = 0; step < tiny.job.num_steps; ++step) {
    const std::uint64_t nodes = history->records[step].size();
    for (std::uint64_t node = 0; node + 1 < nodes; ++node) {
      const referee::ArbitrateArgs a = test::MakeArbitrate(tiny, *history, *history, 0, 0, step, node);
      ASSERT_TRUE(a.log_proofs.has_value());
      const LogChain& chain = *a.log_proofs;
      const Hash256& log_hash = history->records[step][node].log_hash;
      const LogPosition at{tiny.job.num_steps, tiny.job.checkpoint_interval, step, node, nodes};
      FreeMeter free;
      ASSERT_TRUE(VerifyLogChain(at, log_hash, chain, history->log_root, free).ok()) << step << "/" << node;
      // Another position, log or root: refused.
      LogPosition moved = at;
      moved.node = (node + 1) % (nodes - 1);
      if (moved.node != node) {
        EXPECT_EQ(VerifyLogChain(moved, log_hash, chain, history->log_root, free).reason(), "arb-bad-log-proof");
      }
      moved = at;
      moved.step = (step + 1) % tiny.job.num_steps;
      EXPECT_EQ(VerifyLogChain(moved, log_hash, chain, history->log_root, free).reason(), "arb-bad-log-proof");
      Hash256 other = log_hash;
      other.bytes[rng() % 32] ^= 1;
      EXPECT_EQ(VerifyLogChain(at, other, chain, history->log_root, free).reason(), "arb-bad-log-proof");
      // One random bit of the encoded chain flipped: refused or undecodable, never accepted.
      Bytes bytes = EncodeToBytes(chain);
      bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      auto flipped = DecodeExact<LogChain>(bytes);
      if (flipped.ok() && !(*flipped == chain)) {
        EXPECT_EQ(VerifyLogChain(at, log_hash, *flipped, history->log_root, free).reason(), "arb-bad-log-proof");
      }
      ++tried;
    }
  }
  EXPECT_GT(tried, 20u);
}

INSTANTIATE_TEST_SUITE_P(Modes, VerifyModes, testing::Values(kernels::Mode::kRepops, kernels::Mode::kRounded),
                         [](const testing::TestParamInfo<kernels::Mode>& p) {
                           return p.param == kernels::Mode::kRounded ? std::string("rounded") : std::string("repops");
                         });

}  // namespace
}  // namespace vt::verify
