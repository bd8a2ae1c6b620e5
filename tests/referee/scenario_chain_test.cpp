// The chain keeps going whatever a transaction does (issue 10 items 5 and 6):
// the reproductions run through the real arbitration precompile —
// an h_0 whose header puts the data cursor past the dataset (which made
// Arbitrate return Status::Error "graph-invalid" and ProduceBlock abort), an
// arbitration of a job whose dataset size makes the data order allocate
// before any gas was charged — plus a randomized mix of failing calls. Each
// must end as a receipt or a left-out transaction; every block is produced
// and replayed by a validator (TestChain), and supply is conserved.

#include <gtest/gtest.h>

#include <random>

#include "common/limits.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/node_spec.h"
#include "contract_vm/vm.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/history.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

// A node of a step, ready to arbitrate: the case and the encoded payload.
struct NodeCase {
  vm::ArbitrationCase c;
  Bytes payload;
};

NodeCase CaseOf(const TinyJob& tiny, const History& h, std::uint64_t step, std::uint64_t node) {
  NodeCase out;
  out.c = ArbitrationCaseOf(tiny, h, step, node);
  out.payload = MakeArbitrate(tiny, h, h, 0, 0, step, node).payload;
  return out;
}

// The reproduction: h_0's header names data_offset >= dataset_size.
// Everything else is honest, so every proof checks and the assemble node
// reaches NextHeader, which refuses the cursor.
NodeCase BadCursorCase(const TinyJob& tiny, const History& h) {
  const std::uint64_t assemble = h.records[0].size() - 1;
  NodeCase out = CaseOf(tiny, h, 0, assemble);
  auto p = DecodeExact<vm::ArbitrationPayload>(out.payload).value();
  p.header.data_offset = tiny.job.dataset_size;
  std::vector<Hash256> leaves;
  for (const kernels::Tensor& t : h.states[0]) leaves.push_back(t.Hash());
  leaves.push_back(protocol::StateHeaderHash(p.header));
  const crypto::MerkleTree tree = crypto::MerkleTree::FromLeafHashes(leaves);
  p.header_proof = tree.Prove(h.states[0].size());
  const vm::KernelsGraphSource graphs;
  const vm::StepGraph graph = graphs.Build(tiny.job, 0).value();
  const vm::NodeSpec spec = vm::NodeSpecAt(graph, assemble);
  for (std::size_t k = 0; k < spec.inputs.size(); ++k)
    if (spec.inputs[k].source == protocol::InputSource::kState) p.inputs[k].proof = tree.Prove(spec.inputs[k].index);
  out.c.state_hash = tree.root();
  out.payload = EncodeToBytes(p);
  return out;
}

// A test-only contract that hands one of a table of cases to the chain's
// arbitration precompile, as the referee does in its Arbitrate call.
class ArbitrationProbe final : public vm::NativeContract {
 public:
  static constexpr std::uint16_t kId = 77;
  std::vector<NodeCase> cases;
  Status Call(vm::CallContext& ctx, std::uint16_t, ByteSpan args) override {
    Reader r(args);
    VT_ASSIGN_OR_RETURN(std::uint32_t index, r.GetU32());
    if (index >= cases.size()) return Status::Invalid("probe-no-such-case");
    VT_ASSIGN_OR_RETURN(const vm::Arbiter* arbiter, ctx.arbiter());
    VT_ASSIGN_OR_RETURN(vm::ArbitrationOutcome outcome,
                        arbiter->Arbitrate(cases[index].c, cases[index].payload, ctx.gas()));
    return outcome.kind == vm::ArbitrationKind::kExecuted ? Status::Ok() : Status::Invalid("probe-op-failed");
  }
};

Bytes Index(std::uint32_t i) {
  Writer w;
  w.PutU32(i);
  return std::move(w).Take();
}

class Scenario : public ::testing::Test {
 protected:
  Scenario() { registry.Register(ArbitrationProbe::kId, &probe); }
  TinyJob tiny = MakeTinyJob(10, 3, kernels::Mode::kRepops);
  History history = Train(tiny, {}).value();
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter{graphs};
  ArbitrationProbe probe;
  vm::ContractRegistry registry;
  TestChain chain{registry, &arbiter, 3, 1'000'000'000'000};
};

TEST_F(Scenario, TheBadCursorReproductionIsAnErrorOfTheArbiter) {
  // What used to stop the chain: not an Invalid (the request is wrong) but a
  // Status::Error, which ProduceBlock treated as a local failure.
  const NodeCase bad = BadCursorCase(tiny, history);
  vm::GasMeter gas(1'000'000'000);
  auto r = arbiter.Arbitrate(bad.c, bad.payload, gas);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is_error());
  EXPECT_EQ(r.status().reason(), "graph-invalid");
  // The honest assemble node of the same step executes.
  const NodeCase good = CaseOf(tiny, history, 0, history.records[0].size() - 1);
  vm::GasMeter gas2(1'000'000'000);
  EXPECT_TRUE(arbiter.Arbitrate(good.c, good.payload, gas2).ok());
}

TEST_F(Scenario, FailingTransactionNeverHaltsBlocks) {
  probe.cases.push_back(BadCursorCase(tiny, history));
  const std::uint64_t height = chain.height();
  const vm::Amount before = chain.BalanceOf(TestKey(1).address());
  chain.Submit(chain.Call(TestKey(1), ArbitrationProbe::kId, 0, Index(0)));
  chain.Submit(chain.MakeTx(TestKey(2), vm::TransferPayload{TestKey(3).address(), 5}));
  const auto receipts = chain.Mine();  // replays on a validator, audits supply
  ASSERT_EQ(chain.height(), height + 1) << "the block was produced";
  ASSERT_EQ(receipts.size(), 2u);
  EXPECT_FALSE(receipts[0].success);
  EXPECT_EQ(receipts[0].reason, "graph-invalid");
  EXPECT_GT(receipts[0].fee, 0u);
  EXPECT_EQ(chain.BalanceOf(TestKey(1).address()), before - receipts[0].fee) << "fees charged, nothing else";
  EXPECT_TRUE(receipts[1].success);
}

TEST_F(Scenario, ArbitrationChargesTheDataOrderBeforeBuildingIt) {
  // The first node of step 0 that reads the batch.
  const vm::StepGraph graph = graphs.Build(tiny.job, 0).value();
  std::uint64_t node = 0;
  while (node < graph.nodes.size()) {
    bool reads = false;
    for (const auto& in : graph.nodes[node].inputs) reads |= in.source == protocol::InputSource::kBatch;
    if (reads) break;
    ++node;
  }
  ASSERT_LT(node, graph.nodes.size());
  NodeCase huge = CaseOf(tiny, history, 0, node);
  // The attacker's job: the largest dataset the protocol allows. Building
  // its permutation costs 2^24 words; the gas left cannot pay for it.
  huge.c.job.dataset_size = limits::kMaxDatasetSize;
  class Counting final : public vm::StepGraphSource {
   public:
    explicit Counting(const vm::StepGraphSource& inner) : m_inner(inner) {}
    Result<vm::StepGraph> Build(const protocol::JobSpec& j, std::uint64_t s) const override { return m_inner.Build(j, s); }
    Result<protocol::StateHeader> NextHeader(const protocol::JobSpec& j, const protocol::StateHeader& h) const override {
      return m_inner.NextHeader(j, h);
    }
    Result<std::vector<std::uint64_t>> BatchIndices(const protocol::JobSpec& j,
                                                    const protocol::StateHeader& h) const override {
      ++calls;
      return m_inner.BatchIndices(j, h);
    }
    Result<std::vector<kernels::Tensor>> AssembleBatch(const protocol::JobSpec& j,
                                                       std::span<const Bytes> e) const override {
      return m_inner.AssembleBatch(j, e);
    }
    mutable int calls = 0;

   private:
    const vm::StepGraphSource& m_inner;
  } counting(graphs);
  const vm::Arbiter metered(counting);
  vm::GasMeter gas(vm::kGas.data_order_element * limits::kMaxDatasetSize / 2);
  auto r = metered.Arbitrate(huge.c, huge.payload, gas);
  EXPECT_EQ(r.status().reason(), "tx-out-of-gas");
  EXPECT_EQ(counting.calls, 0) << "the permutation was built before it was paid for";
  // The honest job pays a few hundred gas for its 20-example order and executes.
  const NodeCase honest = CaseOf(tiny, history, 0, node);
  vm::GasMeter enough(1'000'000'000);
  auto ok = metered.Arbitrate(honest.c, honest.payload, enough);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(counting.calls, 1);
}

TEST_F(Scenario, RandomMixesOfFailingArbitrationsNeverStopBlocks) {
  // The case table: honest nodes, the bad cursor, and garbled payloads.
  std::mt19937_64 rng(TestSeed());
  for (std::uint64_t node = 0; node < history.records[2].size(); node += 2)
    probe.cases.push_back(CaseOf(tiny, history, 2, node));
  probe.cases.push_back(BadCursorCase(tiny, history));
  const std::size_t real = probe.cases.size();
  for (std::size_t i = 0; i < real; ++i) {
    NodeCase garbled = probe.cases[i];
    for (int flips = 0; flips < 3; ++flips)
      garbled.payload[rng() % garbled.payload.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    probe.cases.push_back(std::move(garbled));
  }
  std::size_t failed = 0, succeeded = 0;
  for (int block = 0; block < 10; ++block) {
    const std::uint64_t height = chain.height();
    std::size_t sent = 0;
    for (int i = 0; i < 5; ++i) {
      const std::uint32_t which = static_cast<std::uint32_t>(rng() % (probe.cases.size() + 1));  // +1: no such case
      const std::uint64_t gas = rng() % 4 == 0 ? 20'000 : 0;  // sometimes too little gas
      chain.Submit(chain.Call(TestKey(1 + static_cast<std::uint32_t>(rng() % 3)), ArbitrationProbe::kId, 0,
                              Index(which), gas));
      ++sent;
    }
    const auto receipts = chain.Mine();
    ASSERT_EQ(chain.height(), height + 1) << "block " << block;
    EXPECT_EQ(receipts.size(), sent) << "every call ends as a receipt";
    for (const vm::Receipt& r : receipts) (r.success ? succeeded : failed) += 1;
  }
  EXPECT_GT(succeeded, 0u);
  EXPECT_GT(failed, 0u);
}

}  // namespace
}  // namespace vt::test
