// Attacks on the transaction executor (issue: "no transaction can crash or
// stall the validators"): a call that fails with an error, that runs out of
// memory or throws, a transaction or block larger than the network carries.
// Each must end as a receipt (fees charged) or a left-out transaction, the
// block must still be produced, and a validator must agree with it.

#include <gtest/gtest.h>

#include <new>
#include <random>
#include <stdexcept>

#include "common/limits.h"
#include "contract_vm/block.h"
#include "contract_vm/contract.h"
#include "contract_vm/state_root.h"
#include "contract_vm/tx.h"
#include "contract_vm/vm.h"
#include "protocol/data_order.h"
#include "protocol/types.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/support/test_seed.h"

namespace vt::vm {
namespace {

using test::TestChain;
using test::TestKey;

constexpr std::uint16_t kHostile = 11;

// Method n fails the way the n-th entry of kFailures says, after writing to
// storage and emitting an event (both must be dropped).
struct Failure {
  const char* name;
  std::string_view reason;  // the receipt's reason
};
constexpr Failure kFailures[] = {
    {"ok", ""},
    {"graph-invalid", "graph-invalid"},        // a Status::Error a transaction can provoke
    {"out-of-memory", "out-of-memory"},        // RunOp's allocation guard
    {"bad_alloc", reasons::kVmOutOfMemory},    // an allocation that throws
    {"runtime_error", reasons::kVmException},  // any other exception
    {"int", reasons::kVmException},            // not even a std::exception
};

class HostileContract final : public NativeContract {
 public:
  Status Call(CallContext& ctx, std::uint16_t method, ByteSpan) override {
    VT_TRY(ctx.Put(AsBytes(std::string_view("touched")), AsBytes(std::string_view("1"))));
    VT_TRY(ctx.Emit("touched", {}));
    switch (method) {
      case 0: return Status::Ok();
      case 1: return Status::Error("graph-invalid", "h_0 cursor outside the dataset");
      case 2: return Status::Error("out-of-memory", "operator allocation too large");
      case 3: throw std::bad_alloc();
      case 4: throw std::runtime_error("boom");
      case 5: throw 42;
      case 6: return Status::Error("state-corrupt", "a store failure the tx provokes");
      default: return Status::Invalid("test-unknown-method");
    }
  }
};

class VmFailureTest : public ::testing::Test {
 protected:
  VmFailureTest() { registry.Register(kHostile, &contract); }
  HostileContract contract;
  ContractRegistry registry;
  TestChain chain{registry, nullptr, 4, 1'000'000'000};
  crypto::SecretKey alice = TestKey(1);
  crypto::SecretKey bob = TestKey(2);
};

TEST_F(VmFailureTest, EveryCallFailureEndsAsAFailedReceiptAndTheBlockIsProduced) {
  for (std::uint16_t m = 1; m < std::size(kFailures); ++m) {
    SCOPED_TRACE(kFailures[m].name);
    const Amount before = chain.BalanceOf(alice.address());
    const std::uint64_t height = chain.height();
    // The hostile call and an honest transfer behind it in the same block.
    chain.Submit(chain.Call(alice, kHostile, m, {}));
    chain.Submit(chain.MakeTx(bob, TransferPayload{alice.address(), 7}));
    const auto receipts = chain.Mine();  // also replays on a validator and audits supply
    ASSERT_EQ(chain.height(), height + 1) << "block production stopped";
    ASSERT_EQ(receipts.size(), 2u);
    EXPECT_FALSE(receipts[0].success);
    EXPECT_EQ(receipts[0].reason, kFailures[m].reason);
    EXPECT_GT(receipts[0].fee, 0u) << "a failing call pays for its gas";
    EXPECT_TRUE(receipts[0].events.empty());
    EXPECT_TRUE(receipts[1].success) << receipts[1].reason;
    EXPECT_EQ(chain.BalanceOf(alice.address()), before - receipts[0].fee + 7);
    auto touched = chain.store().Get(ContractKey(kHostile, AsBytes(std::string_view("touched"))));
    ASSERT_TRUE(touched.ok());
    EXPECT_FALSE(touched->has_value()) << "a failed call's writes are dropped";
  }
}

TEST_F(VmFailureTest, AStoreFailureProvokedByATransactionLeavesItOutNotTheBlock) {
  const std::uint64_t height = chain.height();
  const Transaction bad = chain.Call(alice, kHostile, 6, {});
  chain.Submit(bad);
  chain.Submit(chain.MakeTx(bob, TransferPayload{alice.address(), 7}));
  const auto receipts = chain.Mine();
  ASSERT_EQ(chain.height(), height + 1);
  ASSERT_EQ(receipts.size(), 1u) << "the transfer is included";
  EXPECT_TRUE(receipts[0].success);
  ASSERT_EQ(chain.last_rejected().size(), 1u);
  EXPECT_EQ(chain.last_rejected()[0].tx_id, TxId(bad));
  EXPECT_EQ(chain.last_rejected()[0].status.reason(), "state-corrupt");
  EXPECT_EQ(chain.AccountOf(alice.address()).nonce, 0u) << "a left-out transaction changes nothing";
}

TEST_F(VmFailureTest, RandomMixesOfHostileCallsNeverStopBlocks) {
  std::mt19937_64 rng(test::TestSeed());
  for (int block = 0; block < 12; ++block) {
    const std::uint64_t height = chain.height();
    std::size_t expected = 0;
    for (int i = 0; i < 6; ++i) {
      const crypto::SecretKey& who = rng() % 2 ? alice : bob;
      const std::uint16_t m = static_cast<std::uint16_t>(rng() % 8);
      if (m == 6) continue;  // left out, tested above (and would break the nonce sequence)
      chain.Submit(chain.Call(who, kHostile, m, {}));
      ++expected;
    }
    const auto receipts = chain.Mine();
    ASSERT_EQ(chain.height(), height + 1);
    EXPECT_EQ(receipts.size(), expected);
  }
}

// ---- sizes --------------------------------------------------------------------------------

Transaction BigCall(TestChain& chain, const crypto::SecretKey& key, std::size_t args_bytes) {
  return chain.Call(key, kHostile, 0, Bytes(args_bytes, 0xab), 10'000'000);
}

TEST_F(VmFailureTest, ATransactionLargerThanGossipCarriesIsRefusedEverywhere) {
  const Transaction big = BigCall(chain, alice, limits::kMaxTxBytes);
  const Bytes bytes = EncodeTransaction(big);
  ASSERT_GT(bytes.size(), limits::kMaxTxBytes);
  EXPECT_EQ(DecodeTransaction(bytes).status().reason(), reasons::kTooLarge);
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), big).reason(), reasons::kTooLarge);
  EXPECT_EQ(chain.vm().CheckAdmission(chain.store(), big).status().reason(), reasons::kTooLarge);
  // The largest that fits is fine.
  const std::size_t overhead = bytes.size() - limits::kMaxTxBytes;
  const Transaction fits = BigCall(chain, alice, limits::kMaxTxBytes - overhead - 8);
  EXPECT_LE(EncodeTransaction(fits).size(), limits::kMaxTxBytes);
  EXPECT_TRUE(chain.vm().CheckTransaction(chain.store(), fits).ok());
}

TEST(VmGenesis, RefusesATransactionCapAboveTheWireLimit) {
  ContractRegistry registry;
  Vm vm(registry, nullptr);
  MemoryStateStore store;
  Genesis g;
  g.params.max_tx_bytes = limits::kMaxTxBytes + 1;
  EXPECT_EQ(vm.ApplyGenesis(store, g).status().reason(), "genesis-bad-params");
  g.params.max_tx_bytes = limits::kMaxTxBytes;
  EXPECT_TRUE(vm.ApplyGenesis(store, g).ok());
  EXPECT_EQ(ChainParams{}.max_tx_bytes, limits::kMaxTxBytes);
}

TEST_F(VmFailureTest, BlocksStayWithinWhatGossipCarries) {
  // Twelve ~0.9 MiB transactions: at most eight fit a block; the rest wait.
  for (std::uint32_t k = 1; k <= 4; ++k)
    for (int i = 0; i < 3; ++i) {
      const crypto::SecretKey key = TestKey(k);
      chain.Submit(BigCall(chain, key, 900'000));
    }
  const auto receipts = chain.Mine();
  EXPECT_GE(receipts.size(), 1u);
  EXPECT_LT(receipts.size(), 12u);
  EXPECT_LE(EncodedBlockSize(chain.blocks().back()), limits::kMaxBlockBytes);
  EXPECT_EQ(EncodedBlockSize(chain.blocks().back()), EncodeToBytes(chain.blocks().back()).size());

  // A proposer that ignores the rule makes a block every validator refuses.
  Block fat;
  fat.header.chain_id = TestChain::kChainId;
  fat.header.height = chain.height() + 1;
  fat.header.parent_hash = chain.tip().hash;
  fat.header.time = chain.tip().time + 5;
  for (std::uint32_t k = 1; k <= 4; ++k)
    for (int i = 0; i < 3; ++i) fat.txs.push_back(BigCall(chain, TestKey(k), 900'000));
  fat.header.tx_root = TxRoot(fat.txs);
  ASSERT_TRUE(SignBlock(fat.header, TestKey(1000)).ok());
  MemoryStateStore copy = chain.store();
  EXPECT_EQ(chain.vm().ApplyBlock(copy, chain.tip(), fat).status().reason(), "block-too-large");
}

// ---- job limits ---------------------------------------------------------------------------

protocol::JobSpec ValidJob() {
  protocol::JobSpec job;
  job.dataset_size = 100;
  job.batch_size = 10;
  job.num_steps = 10;
  job.checkpoint_interval = 5;
  return job;
}

TEST(JobLimits, EveryAttackerChosenSizeHasAProtocolLimit) {
  ASSERT_TRUE(protocol::ValidateJobSpec(ValidJob()).ok());
  struct Case {
    const char* what;
    void (*set)(protocol::JobSpec&, bool over);
    std::string_view reason;
  };
  const Case cases[] = {
      {"dataset_size", [](protocol::JobSpec& j, bool over) { j.dataset_size = limits::kMaxDatasetSize + over; },
       "job-bad-dataset-size"},
      {"batch_size", [](protocol::JobSpec& j, bool over) { j.batch_size = limits::kMaxBatchSize + over; },
       "job-bad-batch-size"},
      {"num_steps",
       [](protocol::JobSpec& j, bool over) {
         j.num_steps = limits::kMaxSteps + over;
         j.checkpoint_interval = j.num_steps;
       },
       "job-bad-steps"},
  };
  for (const Case& c : cases) {
    protocol::JobSpec at = ValidJob(), over = ValidJob();
    c.set(at, false);
    c.set(over, true);
    EXPECT_TRUE(protocol::ValidateJobSpec(at).ok()) << c.what << " at its limit";
    EXPECT_EQ(protocol::ValidateJobSpec(over).reason(), c.reason) << c.what << " past its limit";
    // The decoder applies the same rule.
    EXPECT_EQ(protocol::DecodeJobSpec(protocol::EncodeJobSpec(over)).status().reason(), c.reason) << c.what;
  }
}

TEST(JobLimits, BatchIndicesWorkCountsEveryPermutationItBuilds) {
  // One epoch: the permutation plus the batch.
  EXPECT_EQ(protocol::BatchIndicesWork(100, 0, 10), 110u);
  // Running into the next epoch builds a second permutation.
  EXPECT_EQ(protocol::BatchIndicesWork(100, 95, 10), 210u);
  // A batch larger than the dataset spans several.
  EXPECT_EQ(protocol::BatchIndicesWork(10, 0, 35), 4 * 10u + 35);
  EXPECT_EQ(protocol::BatchIndicesWork(limits::kMaxDatasetSize, 0, limits::kMaxBatchSize),
            limits::kMaxDatasetSize + limits::kMaxBatchSize);
  // Cross-checked against what BatchIndices returns for random cursors.
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t n = 1 + rng() % 50;
    const std::uint64_t offset = rng() % n;
    const std::uint32_t b = static_cast<std::uint32_t>(1 + rng() % 120);
    auto idx = protocol::BatchIndices(7, n, 0, offset, b);
    ASSERT_TRUE(idx.ok());
    ASSERT_EQ(idx->size(), b);
    const std::uint64_t epochs = (offset + b + n - 1) / n;
    EXPECT_EQ(protocol::BatchIndicesWork(n, offset, b), epochs * n + b) << n << " " << offset << " " << b;
  }
}

}  // namespace
}  // namespace vt::vm
