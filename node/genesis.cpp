#include "node/genesis.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "crypto/sha256.h"

namespace vt::node {
namespace {

using Json = nlohmann::json;

Status Bad(std::string_view field, std::string_view what) {
  return Status::Invalid("genesis-bad-field", std::string(field) + ": " + std::string(what));
}

Result<std::uint64_t> U64(const Json& j, std::string_view key, std::optional<std::uint64_t> dflt) {
  const auto it = j.find(std::string(key));
  if (it == j.end()) {
    if (dflt) return *dflt;
    return Bad(key, "missing");
  }
  if (!it->is_number_unsigned()) return Bad(key, "not an unsigned integer");
  return it->get<std::uint64_t>();
}

}  // namespace

Hash256 GenesisFile::NetworkHash() const {
  Writer w;
  vm::Encode(w, genesis);
  w.PutString(chain_name);
  w.PutU64(block_interval_ms);
  w.PutU64(proposer_timeout_ms);
  w.PutVarint(validators.size());
  for (const Validator& v : validators) w.PutFixed(v.pubkey.bytes());
  return crypto::TaggedHash("veritrain/node-genesis/v1", w.bytes());
}

bool GenesisFile::IsValidator(const std::array<std::uint8_t, 32>& key) const {
  return std::any_of(validators.begin(), validators.end(),
                     [&](const Validator& v) { return v.pubkey.bytes() == key; });
}

Status GenesisFile::CheckProposer(const vm::BlockHeader& header, std::uint64_t parent_time) const {
  if (!IsValidator(header.proposer)) return Status::Invalid("block-bad-proposer", "not a validator");
  if (header.time < parent_time)
    return Status::Invalid("block-bad-time", "block time " + std::to_string(header.time) + " before its parent's " +
                                                 std::to_string(parent_time));
  return Status::Ok();
}

Result<GenesisFile> ParseGenesis(std::string_view text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const std::exception& e) {
    return Status::Invalid("genesis-bad-json", e.what());
  }
  if (!j.is_object()) return Status::Invalid("genesis-bad-json", "not an object");
  static const std::vector<std::string> kKnown = {"chain_id",  "chain_name", "time",       "block_interval_ms",
                                                  "proposer_timeout_ms", "params", "validators", "accounts"};
  for (const auto& [k, v] : j.items()) {
    (void)v;
    if (std::find(kKnown.begin(), kKnown.end(), k) == kKnown.end()) return Bad(k, "unknown key");
  }
  GenesisFile g;
  VT_ASSIGN_OR_RETURN(g.genesis.params.chain_id, U64(j, "chain_id", std::nullopt));
  if (j.contains("chain_name")) {
    if (!j["chain_name"].is_string()) return Bad("chain_name", "not a string");
    g.chain_name = j["chain_name"].get<std::string>();
  }
  VT_ASSIGN_OR_RETURN(g.genesis.time, U64(j, "time", 0));
  VT_ASSIGN_OR_RETURN(g.block_interval_ms, U64(j, "block_interval_ms", 500));
  VT_ASSIGN_OR_RETURN(g.proposer_timeout_ms, U64(j, "proposer_timeout_ms", 3 * std::max<std::uint64_t>(g.block_interval_ms, 100)));
  if (g.proposer_timeout_ms == 0) return Bad("proposer_timeout_ms", "must be positive");
  if (j.contains("params")) {
    const Json& p = j["params"];
    if (!p.is_object()) return Bad("params", "not an object");
    const vm::ChainParams d;
    VT_ASSIGN_OR_RETURN(g.genesis.params.block_gas_limit, U64(p, "block_gas_limit", d.block_gas_limit));
    VT_ASSIGN_OR_RETURN(g.genesis.params.max_tx_bytes, U64(p, "max_tx_bytes", d.max_tx_bytes));
    VT_ASSIGN_OR_RETURN(g.genesis.params.min_gas_price, U64(p, "min_gas_price", d.min_gas_price));
  }
  if (!j.contains("validators") || !j["validators"].is_array() || j["validators"].empty())
    return Bad("validators", "a non-empty array is required");
  for (const Json& v : j["validators"]) {
    if (!v.is_object() || !v.contains("pubkey") || !v["pubkey"].is_string()) return Bad("validators", "{pubkey} expected");
    auto key = crypto::PublicKey::FromHex(v["pubkey"].get<std::string>());
    if (!key.ok()) return Bad("validators.pubkey", key.status().reason());
    std::string name = v.contains("name") && v["name"].is_string() ? v["name"].get<std::string>()
                                                                    : "v" + std::to_string(g.validators.size());
    for (const Validator& other : g.validators)
      if (other.pubkey == *key) return Bad("validators", "duplicate pubkey");
    VT_ASSIGN_OR_RETURN(const std::uint64_t bond, U64(v, "bond", 0));
    g.validators.push_back({std::move(name), *key, bond});
    if (bond > 0) g.genesis.bonds.push_back({key->bytes(), bond});
  }
  std::sort(g.genesis.bonds.begin(), g.genesis.bonds.end(),
            [](const vm::Bond& a, const vm::Bond& b) { return a.validator < b.validator; });
  if (g.instant() && g.validators.size() != 1) return Bad("block_interval_ms", "instant mode (0) needs exactly one validator");
  if (j.contains("accounts")) {
    if (!j["accounts"].is_array()) return Bad("accounts", "not an array");
    for (const Json& a : j["accounts"]) {
      if (!a.is_object() || !a.contains("address") || !a["address"].is_string())
        return Bad("accounts", "{address, balance} expected");
      auto addr = crypto::Address::FromHex(a["address"].get<std::string>());
      if (!addr.ok()) return Bad("accounts.address", addr.status().reason());
      VT_ASSIGN_OR_RETURN(std::uint64_t bal, U64(a, "balance", std::nullopt));
      std::string name = a.contains("name") && a["name"].is_string() ? a["name"].get<std::string>() : "";
      g.accounts.push_back({name, *addr, bal});
    }
  }
  for (const NamedAccount& a : g.accounts) g.genesis.allocations.push_back({a.address, a.balance});
  std::sort(g.genesis.allocations.begin(), g.genesis.allocations.end(),
            [](const vm::Allocation& a, const vm::Allocation& b) { return a.address < b.address; });
  for (std::size_t i = 1; i < g.genesis.allocations.size(); ++i)
    if (g.genesis.allocations[i].address == g.genesis.allocations[i - 1].address)
      return Bad("accounts", "duplicate address");
  return g;
}

Result<GenesisFile> LoadGenesis(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Status::Error("file-not-found", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseGenesis(ss.str());
}

std::string GenesisToJson(const GenesisFile& g) {
  Json j;
  j["chain_id"] = g.genesis.params.chain_id;
  j["chain_name"] = g.chain_name;
  j["time"] = g.genesis.time;
  j["block_interval_ms"] = g.block_interval_ms;
  j["proposer_timeout_ms"] = g.proposer_timeout_ms;
  j["params"] = {{"block_gas_limit", g.genesis.params.block_gas_limit},
                 {"max_tx_bytes", g.genesis.params.max_tx_bytes},
                 {"min_gas_price", g.genesis.params.min_gas_price}};
  j["validators"] = Json::array();
  for (const Validator& v : g.validators)
    j["validators"].push_back({{"name", v.name}, {"pubkey", v.pubkey.Hex()}, {"bond", v.bond}});
  j["accounts"] = Json::array();
  for (const NamedAccount& a : g.accounts)
    j["accounts"].push_back({{"name", a.name}, {"address", a.address.Hex()}, {"balance", a.balance}});
  return j.dump(2) + "\n";
}

}  // namespace vt::node
