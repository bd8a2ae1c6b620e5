// A Byzantine validator in a real 4-validator testnet (vt-node processes on
// loopback): v3 runs the TEST-ONLY adversary (vt-node --test-adversary
// equivocate, honoured only with VT_TEST_ONLY_ADVERSARY=1, which this test
// sets): it signs a second, conflicting prevote and precommit for every
// vote it casts and, after a while, sends garbage consensus frames (which
// gets it banned).
//
// What must hold (docs/node.md "Evidence and slashing"): the three honest
// validators keep finalising one chain; evidence against v3 goes into
// blocks; v3's bond is slashed exactly once per offence, by the documented
// amount, and the chain's record of it (chain_status) matches the evidence
// in the blocks; no honest validator is ever accused or slashed.
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "contract_vm/evidence.h"
#include "tests/testnet/testnet_util.h"

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

const std::vector<std::string> kNodes = {"v0", "v1", "v2", "v3"};
const std::vector<std::string> kHonest = {"v0", "v1", "v2"};
constexpr std::uint32_t kAdversaryIndex = 3;  // v3: validators are listed v0..v3 in genesis
constexpr std::uint64_t kBond = 1'000'000;

std::optional<Json> Status(node::ChainClient& c) {
  auto s = c.Call("chain_status", Json::array());
  if (!s.ok()) return std::nullopt;
  return *s;
}

const Json* ValidatorEntry(const Json& status, const std::string& name) {
  for (const Json& v : status["validators"])
    if (v["name"] == name) return &v;
  return nullptr;
}

std::uint64_t Offences(node::ChainClient& c, const std::string& name) {
  const auto s = Status(c);
  const Json* v = s ? ValidatorEntry(*s, name) : nullptr;
  return v ? (*v)["offences"].get<std::uint64_t>() : 0;
}

TEST(Byzantine, EquivocatingValidatorIsSlashedAndChainLives) {
  ASSERT_EQ(::setenv("VT_TEST_ONLY_ADVERSARY", "1", 1), 0);  // inherited by the vt-node processes
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = 150;
  spec.proposer_timeout_ms = 450;
  spec.validator_bond = kBond;
  spec.test_adversary = {{"v3", "equivocate"}};
  ScopedTestnet t("byzantine", spec);
  ASSERT_TRUE(t.ok());
  for (const std::string& v : kNodes) ASSERT_TRUE(t.net().Start(v).ok()) << v;
  std::map<std::string, node::ChainClient> clients;
  for (const std::string& v : kHonest) clients.emplace(v, t.Client(v));
  for (auto& [name, c] : clients) ASSERT_TRUE(c.WaitHeight(2, 20s).ok()) << name;

  // Evidence reaches the chain: an offence of v3 is recorded.
  ASSERT_TRUE(WaitFor([&] { return Offences(clients.at("v0"), "v3") >= 2; }, 20s))
      << "no evidence against the equivocating validator reached a block";
  // And the chain lives on: 12 more blocks (rate printed, not asserted).
  const std::uint64_t from = HeightOf(clients.at("v0")).value_or(0);
  const auto started = std::chrono::steady_clock::now();
  const std::uint64_t target = from + 12;
  for (auto& [name, c] : clients) ASSERT_TRUE(c.WaitHeight(target, 25s).ok()) << name << " stopped finalising";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("[byzantine] %llu blocks in %.1f s with v3 equivocating: %.2f blocks/s\n",
              static_cast<unsigned long long>(target - from), seconds, static_cast<double>(target - from) / seconds);

  // The garbage was seen and refused somewhere.
  std::uint64_t rejected = 0;
  for (auto& [name, c] : clients)
    if (const auto s = Status(c); s && (*s)["consensus"].is_object())
      rejected += (*s)["consensus"]["rejected"].get<std::uint64_t>();
  EXPECT_GT(rejected, 0u) << "no honest node refused the adversary's garbage";

  // The state as of one height, from v0: its status (bonds, records), then
  // every block up to that height.
  const auto status = Status(clients.at("v0"));
  ASSERT_TRUE(status);
  const std::uint64_t height = (*status)["height"].get<std::uint64_t>();
  // One chain: the honest nodes hold the same block at every height.
  for (std::uint64_t h = 1; h <= height; ++h) {
    const auto ref = BlockHashAt(clients.at("v0"), h);
    ASSERT_TRUE(ref) << h;
    for (const std::string name : {"v1", "v2"}) EXPECT_EQ(BlockHashAt(clients.at(name), h), ref) << name << " at " << h;
  }
  std::set<std::tuple<std::uint64_t, std::uint32_t, std::string>> offences;  // (height, round, vote)
  std::size_t items = 0;
  for (std::uint64_t h = 1; h <= height; ++h) {
    auto b = clients.at("v0").Call("get_block", Json::array({h}));
    ASSERT_TRUE(b.ok()) << h;
    for (const Json& e : (*b)["evidence"]) {
      ++items;
      ASSERT_TRUE(e.contains("validator")) << "undecodable evidence at " << h;
      EXPECT_EQ(e["validator"].get<std::uint32_t>(), kAdversaryIndex) << "evidence against an honest validator at " << h;
      EXPECT_LE(e["height"].get<std::uint64_t>(), h);
      const bool fresh = offences
                             .emplace(e["height"].get<std::uint64_t>(), e["round"].get<std::uint32_t>(),
                                      e["vote"].get<std::string>())
                             .second;
      EXPECT_TRUE(fresh) << "offence at height " << e["height"] << " round " << e["round"] << " recorded twice";
    }
  }
  EXPECT_GE(items, 2u);
  // Slashed exactly once per offence, by the documented amount.
  vm::Amount bond = kBond;
  vm::Amount slashed = 0;
  for (std::size_t i = 0; i < offences.size(); ++i) {
    slashed += vm::SlashAmount(bond);
    bond -= vm::SlashAmount(bond);
  }
  const Json* adversary = ValidatorEntry(*status, "v3");
  ASSERT_NE(adversary, nullptr);
  EXPECT_EQ((*adversary)["offences"].get<std::uint64_t>(), offences.size());
  EXPECT_EQ((*adversary)["genesis_bond"].get<std::uint64_t>(), kBond);
  EXPECT_EQ((*adversary)["bond"].get<std::uint64_t>(), bond);
  EXPECT_EQ((*adversary)["slashed"].get<std::uint64_t>(), slashed);
  for (const std::string& name : kHonest) {
    const Json* v = ValidatorEntry(*status, name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ((*v)["bond"].get<std::uint64_t>(), kBond) << name << " was slashed";
    EXPECT_EQ((*v)["offences"].get<std::uint64_t>(), 0u) << name;
  }
  // Every honest node computed the same: same state root, same records.
  for (const std::string name : {"v1", "v2"}) {
    ASSERT_TRUE(clients.at(name).WaitHeight(height, 10s).ok());
    auto b0 = clients.at("v0").Call("get_block", Json::array({height}));
    auto b1 = clients.at(name).Call("get_block", Json::array({height}));
    ASSERT_TRUE(b0.ok() && b1.ok());
    EXPECT_EQ((*b0)["state_root"], (*b1)["state_root"]) << name;
  }
  // `vt validators` shows the same record.
  const CliRun cli = Vt("--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v1")) + " --json validators");
  ASSERT_EQ(cli.code, 0) << cli.out;
  const Json listed = Json::parse(cli.out, nullptr, false);
  ASSERT_TRUE(listed.is_array()) << cli.out;
  ASSERT_EQ(listed.size(), kNodes.size());
  EXPECT_EQ(listed[kAdversaryIndex]["name"], "v3");
  EXPECT_GE(listed[kAdversaryIndex]["offences"].get<std::uint64_t>(), offences.size());  // v1 may be ahead
  for (std::size_t i = 0; i < kHonest.size(); ++i) EXPECT_EQ(listed[i]["offences"].get<std::uint64_t>(), 0u);
  // So does `vt account balance` of each validator's address (get_account's
  // "validator"); an address that is no validator's has none.
  for (const std::string name : {"v0", "v3"}) {
    const Json* v = ValidatorEntry(*status, name);
    ASSERT_NE(v, nullptr);
    const auto pk = crypto::PublicKey::FromBytes(FromHex((*v)["pubkey"].get<std::string>()).value());
    ASSERT_TRUE(pk.ok());
    const CliRun acct = Vt("--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v1")) + " --json account balance " +
                           pk->address().Hex());
    ASSERT_EQ(acct.code, 0) << acct.out;
    const Json a = Json::parse(acct.out, nullptr, false);
    ASSERT_TRUE(a.contains("validator")) << acct.out;
    EXPECT_EQ(a["validator"]["name"], name);
    EXPECT_EQ(a["validator"]["genesis_bond"].get<std::uint64_t>(), kBond);
    EXPECT_EQ(a["validator"]["bond"].get<std::uint64_t>() + a["validator"]["slashed"].get<std::uint64_t>(), kBond)
        << "bond + slashed is what was bonded at genesis";
    if (name == "v0") {
      EXPECT_EQ(a["validator"]["offences"].get<std::uint64_t>(), 0u);
    } else {
      EXPECT_GE(a["validator"]["offences"].get<std::uint64_t>(), offences.size());
    }
  }
  const CliRun stranger =
      Vt("--rpc 127.0.0.1:" + std::to_string(t.net().rpc_port("v1")) + " --json account balance " + std::string(40, '0'));
  ASSERT_EQ(stranger.code, 0) << stranger.out;
  EXPECT_FALSE(Json::parse(stranger.out, nullptr, false).contains("validator")) << stranger.out;
  std::printf("[byzantine] %zu offences of v3 recorded in %zu evidence items up to height %llu; bond %llu -> %llu\n",
              offences.size(), items, static_cast<unsigned long long>(height), static_cast<unsigned long long>(kBond),
              static_cast<unsigned long long>(bond));
}

}  // namespace
}  // namespace vt::test
