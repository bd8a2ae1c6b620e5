// A network partition of a real 4-validator testnet (vt-node processes on
// loopback), made with a fault proxy (tests/support/fault_proxy.h) on every
// directed P2P link: {v0,v1} | {v2,v3} for 30 s, then healed.
//
// With BFT finality (docs/node.md, "BFT finality") neither half has a
// quorum (3 of 4), so neither finalises a block while cut off — except the
// height that was being decided at the cut, which a node may still complete
// from the precommits it already had (at most one block) — and after the
// heal all four go on from one chain. Every block a node reported before is
// still the block at that height afterwards (nothing final is reverted),
// no node ever reports a reorganisation, and none holds evidence of a
// double-sign (every validator here is honest).
#include <map>
#include <memory>

#include "tests/support/fault_proxy.h"
#include "tests/support/test_seed.h"
#include "tests/testnet/testnet_util.h"

namespace vt::test {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kNodes = {"v0", "v1", "v2", "v3"};

std::uint64_t StatusField(node::ChainClient& c, const char* field) {
  auto s = c.Call("chain_status", nlohmann::json::array());
  return s.ok() && s->contains(field) ? (*s)[field].get<std::uint64_t>() : 0;
}

// A counter of the node's consensus driver (chain_status "consensus").
std::optional<std::uint64_t> ConsensusField(node::ChainClient& c, const char* field) {
  auto s = c.Call("chain_status", nlohmann::json::array());
  if (!s.ok() || !(*s)["consensus"].is_object()) return std::nullopt;
  return (*s)["consensus"][field].get<std::uint64_t>();
}

TEST(Partition, HealsWithoutForkOrDeepReorg) {
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = 150;
  spec.proposer_timeout_ms = 450;
  spec.link_hosts = true;
  ScopedTestnet t("partition", spec);
  ASSERT_TRUE(t.ok());
  // One proxy per directed link, before any node dials.
  std::map<std::pair<std::string, std::string>, std::unique_ptr<FaultProxy>> links;
  std::uint64_t seed = TestSeed();
  for (const std::string& from : kNodes)
    for (const std::string& to : kNodes) {
      if (from == to) continue;
      auto proxy = std::make_unique<FaultProxy>(t.net().Find(to)->p2p_port, seed++, t.net().LinkHost(from, to));
      ASSERT_TRUE(proxy->Start().ok()) << from << "->" << to;
      links[{from, to}] = std::move(proxy);
    }
  for (const std::string& v : kNodes) ASSERT_TRUE(t.net().Start(v).ok()) << v;
  std::map<std::string, node::ChainClient> clients;
  for (const std::string& v : kNodes) clients.emplace(v, t.Client(v));
  for (auto& [name, c] : clients) ASSERT_TRUE(c.WaitHeight(3, 30s).ok()) << name;

  // What each node has final before the cut (checked again at the end).
  std::map<std::string, std::map<std::uint64_t, std::string>> seen;
  const auto record = [&] {
    for (auto& [name, c] : clients) {
      const auto h = HeightOf(c);
      if (!h) continue;
      for (std::uint64_t i = 1; i <= *h; ++i)
        if (!seen[name].count(i)) {
          if (auto hash = BlockHashAt(c, i)) seen[name][i] = *hash;
        }
    }
  };
  record();

  const auto side = [](const std::string& n) { return n == "v0" || n == "v1" ? 0 : 1; };
  for (auto& [link, proxy] : links)
    if (side(link.first) != side(link.second)) proxy->Partition(true);
  std::uint64_t at_cut = 0;
  for (auto& [name, c] : clients) at_cut = std::max(at_cut, HeightOf(c).value_or(0));

  // 30 s cut: no half finalises beyond the height in flight at the cut.
  const auto cut_until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < cut_until) {
    std::this_thread::sleep_for(1s);
    for (auto& [name, c] : clients) {
      const auto h = HeightOf(c);
      ASSERT_TRUE(h) << name << " stopped answering during the partition";
      EXPECT_LE(*h, at_cut + 1) << name << " finalised blocks without a quorum";
    }
  }
  record();

  for (auto& [link, proxy] : links) proxy->Partition(false);
  const std::uint64_t target = at_cut + 5;
  for (auto& [name, c] : clients) EXPECT_TRUE(c.WaitHeight(target, 60s).ok()) << name << " did not go on after the heal";
  record();

  // One chain: every node's block at every height it reported is the same,
  // and still the block it reported then.
  std::uint64_t low = ~std::uint64_t{0};
  for (auto& [name, c] : clients) low = std::min(low, HeightOf(c).value_or(0));
  ASSERT_GE(low, target);
  for (std::uint64_t h = 1; h <= low; ++h) {
    const auto ref = BlockHashAt(clients.at("v0"), h);
    ASSERT_TRUE(ref) << h;
    for (auto& [name, c] : clients) {
      EXPECT_EQ(BlockHashAt(c, h), ref) << name << " differs at height " << h;
      if (seen[name].count(h)) {
        EXPECT_EQ(seen[name][h], *ref) << name << " reverted its final block " << h;
      }
    }
  }
  for (auto& [name, c] : clients) {
    EXPECT_EQ(StatusField(c, "reorgs"), 0u) << name;
    EXPECT_EQ(StatusField(c, "finalized_height"), StatusField(c, "height")) << name;
    // Honest validators cut off and reconnected never double-sign.
    EXPECT_EQ(ConsensusField(c, "evidence"), std::optional<std::uint64_t>(0)) << name;
  }
  std::uint64_t refused = 0;
  for (auto& [link, proxy] : links) refused += proxy->stats().refused;
  EXPECT_GT(refused, 0u) << "the partition refused no link: nodes did not try to reconnect through the proxies";
}

}  // namespace
}  // namespace vt::test
