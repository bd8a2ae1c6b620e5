// The node's LevelDB store: blocks, state and tip committed atomically,
// reopened after a clean close and after kill -9 in the middle of writing,
// rolled back exactly (fork choice), and refused for another genesis.
#include <gtest/gtest.h>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include "contract_vm/state_root.h"
#include "node/chain.h"
#include "tests/node/node_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

constexpr std::uint64_t kT0 = 1'700'000'000'000;

// One validator; produces `blocks` blocks of `txs_per_block` transfers each.
void ProduceBlocks(node::Chain& chain, int blocks, int txs_per_block, std::uint64_t seed) {
  const auto validator = NodeTestKey(1);
  for (int b = 0; b < blocks; ++b) {
    std::vector<vm::Transaction> txs;
    for (int i = 0; i < txs_per_block; ++i) {
      const std::uint32_t from = static_cast<std::uint32_t>((seed + static_cast<std::uint64_t>(i)) % 4);
      const auto key = NodeTestKey(100 + from);
      auto acct = vm::ReadAccount(chain.db(), key.address());
      ASSERT_TRUE(acct.ok());
      std::uint64_t nonce = acct->nonce;
      for (const auto& t : txs)
        if (t.sender == key.public_key().bytes()) ++nonce;
      txs.push_back(Transfer(key, NodeTestKey(100 + (from + 1) % 4).address(), 1 + (seed * 31 + i) % 1000, nonce));
    }
    const vm::ChainTip tip = chain.tip();
    std::vector<vm::RejectedTx> rejected;
    auto r = chain.Produce(std::move(txs), tip.time + 100, validator, &rejected);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(rejected.empty());
  }
}

Hash256 StateRootOf(const vm::StateStore& s) {
  auto root = vm::ComputeStateRoot(s);
  EXPECT_TRUE(root.ok());
  return root.value_or(Hash256{});
}

TEST(ChainStore, ReopenKeepsTipStateAndBlocks) {
  TempDir dir("store");
  const auto g = MakeTestGenesis(1, 4, 100, 300, kT0);
  vm::ChainTip tip;
  Hash256 root;
  {
    auto chain = node::Chain::Open(dir.path(), g);
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    ProduceBlocks(**chain, 5, 3, TestSeed());
    tip = (*chain)->tip();
    root = StateRootOf((*chain)->db());
    EXPECT_EQ(tip.height, 5u);
  }
  auto chain = node::Chain::Open(dir.path(), g);
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ((*chain)->tip(), tip);
  EXPECT_EQ(StateRootOf((*chain)->db()), root);
  for (std::uint64_t h = 1; h <= 5; ++h) {
    auto b = (*chain)->db().BlockAt(h);
    ASSERT_TRUE(b.ok() && *b);
    EXPECT_EQ((*b)->txs.size(), 3u);
    auto rc = (*chain)->db().ReceiptsAt(h);
    ASSERT_TRUE(rc.ok() && *rc);
    EXPECT_EQ((*rc)->size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      auto loc = (*chain)->db().FindTx(vm::TxId((*b)->txs[i]));
      ASSERT_TRUE(loc.ok() && *loc);
      EXPECT_EQ((*loc)->height, h);
      EXPECT_EQ((*loc)->index, i);
    }
  }
  auto audit = vm::AuditSupply((*chain)->db());
  EXPECT_TRUE(audit.ok()) << audit.status().ToString();
}

TEST(ChainStore, RefusesAnotherGenesis) {
  TempDir dir("genesis");
  {
    auto chain = node::Chain::Open(dir.path(), MakeTestGenesis(1, 4, 100, 300, kT0));
    ASSERT_TRUE(chain.ok());
  }
  auto other = node::Chain::Open(dir.path(), MakeTestGenesis(1, 4, 100, 300, kT0 + 1));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().reason(), "db-wrong-genesis");
}

TEST(ChainStore, RollbackRestoresStateExactly) {
  TempDir dir("rollback");
  auto chain = node::Chain::Open(dir.path(), MakeTestGenesis(1, 4, 100, 300, kT0));
  ASSERT_TRUE(chain.ok());
  ProduceBlocks(**chain, 3, 2, TestSeed());
  const vm::ChainTip tip3 = (*chain)->tip();
  const Hash256 root3 = StateRootOf((*chain)->db());
  ProduceBlocks(**chain, 2, 4, TestSeed() + 1);
  ASSERT_EQ((*chain)->tip().height, 5u);
  auto b5 = (*chain)->db().BlockAt(5);
  ASSERT_TRUE(b5.ok() && *b5);
  const Hash256 tx_in_5 = vm::TxId((*b5)->txs[0]);
  ASSERT_TRUE((*chain)->Rollback().ok());
  ASSERT_TRUE((*chain)->Rollback().ok());
  EXPECT_EQ((*chain)->tip(), tip3);
  EXPECT_EQ(StateRootOf((*chain)->db()), root3);
  auto gone = (*chain)->db().BlockAt(4);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  auto loc = (*chain)->db().FindTx(tx_in_5);
  ASSERT_TRUE(loc.ok());
  EXPECT_FALSE(loc->has_value());
  EXPECT_TRUE((*chain)->db().Verify().ok());
  // The removed block applies again on the restored tip.
  ProduceBlocks(**chain, 1, 1, TestSeed() + 2);
  EXPECT_EQ((*chain)->tip().height, 4u);
}

TEST(ChainStore, RejectsBlockFromOutsiderOrBeforeItsParent) {
  TempDir dir("proposer");
  const auto g = MakeTestGenesis(3, 4, 100, 300, kT0);
  auto chain = node::Chain::Open(dir.path(), g);
  ASSERT_TRUE(chain.ok());
  // Any validator may build any height (BFT picks the proposer per round);
  // the block rule is only: a validator, and time not before the parent's.
  std::vector<vm::RejectedTx> rejected;
  auto outsider = (*chain)->Produce({}, kT0 + 10'000, NodeTestKey(50), &rejected);
  ASSERT_FALSE(outsider.ok());
  EXPECT_EQ(outsider.status().reason(), "block-bad-proposer");
  EXPECT_EQ((*chain)->tip().height, 0u) << "a refused block leaves no trace";
  // A block timed before its parent (signed by a validator, built by hand).
  auto built = (*chain)->Build({}, kT0, NodeTestKey(3), &rejected);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  vm::Block early = built->block;
  early.header.time = kT0 - 1;
  ASSERT_TRUE(vm::SignBlock(early.header, NodeTestKey(3)).ok());
  auto before_parent = (*chain)->AddBlock(early);
  ASSERT_FALSE(before_parent.ok());
  EXPECT_EQ(before_parent.status().reason(), "block-bad-time");
  EXPECT_EQ((*chain)->Check(early).status().reason(), "block-bad-time");
  auto same_time = (*chain)->Produce({}, kT0, NodeTestKey(3), &rejected);
  ASSERT_TRUE(same_time.ok()) << same_time.status().ToString();
  auto other = (*chain)->Produce({}, (*chain)->tip().time + 1, NodeTestKey(1), &rejected);
  EXPECT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ((*chain)->tip().height, 2u);
}

// A child process writes blocks as fast as it can and reports each committed
// height on a pipe; the parent kills it with SIGKILL mid-stream. Reopening
// must find a verified tip at or above every reported height, and a state
// equal to replaying the stored blocks from genesis.
TEST(ChainStore, SurvivesKillNineWhileWriting) {
  TempDir dir("kill9");
  const auto g = MakeTestGenesis(1, 4, 100, 300, kT0);
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto chain = node::Chain::Open(dir.path(), g);
      if (!chain.ok()) ::_exit(3);
      for (std::uint64_t i = 0;; ++i) {
        ProduceBlocks(**chain, 1, 8, i);
        const std::uint64_t h = (*chain)->tip().height;
        if (::write(fds[1], &h, sizeof h) != sizeof h) ::_exit(4);
      }
    }
    ::close(fds[1]);
    std::uint64_t last = 0, h = 0;
    int seen = 0;
    while (seen < 15 + 10 * round && ::read(fds[0], &h, sizeof h) == sizeof h) {
      last = h;
      ++seen;
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer was killed, not exited (status " << status << ")";

    auto chain = node::Chain::Open(dir.path(), g);
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    const vm::ChainTip tip = (*chain)->tip();
    EXPECT_GE(tip.height, last) << "a block reported committed was lost";
    // Replay every stored block from genesis into memory: same state root.
    vm::MemoryStateStore replay;
    vm::ContractRegistry registry;
    vm::Vm machine(registry, nullptr);
    auto t = machine.ApplyGenesis(replay, g.genesis);
    ASSERT_TRUE(t.ok());
    vm::ChainTip rt = *t;
    for (std::uint64_t hh = 1; hh <= tip.height; ++hh) {
      auto b = (*chain)->db().BlockAt(hh);
      ASSERT_TRUE(b.ok() && *b);
      auto applied = machine.ApplyBlock(replay, rt, **b);
      ASSERT_TRUE(applied.ok()) << applied.status().ToString();
      rt = applied->tip;
    }
    EXPECT_EQ(rt, tip);
    EXPECT_EQ(StateRootOf(replay), StateRootOf((*chain)->db()));
  }
}

TEST(Genesis, RoundTripsAndRejectsBadFiles) {
  const auto g = MakeTestGenesis(3, 2, 250, 700, kT0);
  auto again = node::ParseGenesis(node::GenesisToJson(g));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->NetworkHash(), g.NetworkHash());
  EXPECT_EQ(again->genesis, g.genesis);
  auto bad = [](const std::string& text) { return node::ParseGenesis(text).status().reason(); };
  EXPECT_EQ(bad("{"), "genesis-bad-json");
  EXPECT_EQ(bad(R"({"chain_id": 7, "validators": []})"), "genesis-bad-field");
  EXPECT_EQ(bad(R"({"chain_id": 7, "typo": 1, "validators": [{"pubkey": "00"}]})"), "genesis-bad-field");
  const std::string v1 = NodeTestKey(1).public_key().Hex(), v2 = NodeTestKey(2).public_key().Hex();
  EXPECT_EQ(bad(R"({"chain_id": 7, "block_interval_ms": 0, "validators": [{"pubkey": ")" + v1 + R"("}, {"pubkey": ")" +
                v2 + R"("}]})"),
            "genesis-bad-field")
      << "instant mode needs exactly one validator";
  EXPECT_TRUE(g.IsValidator(NodeTestKey(1).public_key().bytes()));
  EXPECT_FALSE(g.IsValidator(NodeTestKey(9).public_key().bytes()));
}

}  // namespace
}  // namespace vt::test
