// Instant mode under BFT finality (docs/node.md, "BFT finality"): one
// validator (quorum 1), block_interval_ms 0. An in-process Node with its
// consensus driver: a transfer is included and final without waiting for
// a block interval, idle blocks keep the block clock running, every block is
// final (finalized_height = height), and a restart from the same data
// directory (store + consensus state file) goes on from the same chain.
#include <gtest/gtest.h>

#include <chrono>

#include "node/client.h"
#include "node/node.h"
#include "tests/node/node_test_util.h"
#include "tests/node/one_node.h"

namespace vt::test {
namespace {

using namespace std::chrono_literals;

// Upper bounds for a failure to show, never measured times.
constexpr auto kBound = 20s;

class InstantNode : public OneValidatorNode {
 public:
  explicit InstantNode(const std::string& tag) : OneValidatorNode(tag, Genesis()) {
    EXPECT_TRUE(genesis().instant());
  }
  std::uint64_t Status(const char* field) {
    auto s = client().Call("chain_status", nlohmann::json::array());
    EXPECT_TRUE(s.ok());
    return s.ok() ? (*s)[field].get<std::uint64_t>() : 0;
  }

 private:
  static node::GenesisFile Genesis() {
    auto parsed = node::ParseGenesis(node::GenesisToJson(MakeTestGenesis(1, 1, 0, 300, node::NowMs())));
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    return parsed.ok() ? *parsed : node::GenesisFile{};
  }
};

TEST(InstantMode, TransfersAreFinalIdleBlocksRunAndARestartGoesOn) {
  InstantNode n("instant");
  n.Start();
  const auto to = crypto::Address::FromHex("00000000000000000000000000000000000000bb");
  ASSERT_TRUE(to.ok());
  for (std::uint64_t amount : {5u, 7u}) {
    auto id = n.client().Send(NodeTestKey(100), vm::TransferPayload{*to, amount});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    auto r = n.client().WaitReceipt(*id, kBound);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE((*r)["success"].get<bool>());
  }
  auto acct = n.client().Account(*to);
  ASSERT_TRUE(acct.ok());
  EXPECT_EQ(acct->balance, 12u);
  // Without transactions, an empty block every proposer_timeout_ms.
  const std::uint64_t h = n.Status("height");
  EXPECT_TRUE(n.client().WaitHeight(h + 2, kBound).ok()) << "no idle blocks";
  EXPECT_EQ(n.Status("finalized_height"), n.Status("height"));
  EXPECT_EQ(n.Status("reorgs"), 0u);
  {
    auto s = n.client().Call("chain_status", nlohmann::json::array());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)["consensus"].is_object());
    EXPECT_GE((*s)["consensus"]["committed"].get<std::uint64_t>(), h) << "blocks decided by its own votes";
    EXPECT_EQ((*s)["consensus"]["evidence"].get<std::uint64_t>(), 0u);
  }

  // Restarted from its store and consensus state: same chain, and it goes on.
  auto before = n.client().Call("get_block", nlohmann::json::array({h}));
  ASSERT_TRUE(before.ok());
  n.Stop();
  n.Start();
  auto after = n.client().Call("get_block", nlohmann::json::array({h}));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["hash"], (*before)["hash"]);
  const std::uint64_t h2 = n.Status("height");
  EXPECT_GE(h2, h + 2);
  auto id = n.client().Send(NodeTestKey(100), vm::TransferPayload{*to, 1});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(n.client().WaitReceipt(*id, kBound).ok());
  EXPECT_TRUE(n.client().WaitHeight(h2 + 2, kBound).ok());
}

}  // namespace
}  // namespace vt::test
