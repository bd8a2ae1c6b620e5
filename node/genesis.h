#pragma once
// The genesis file of a chain (JSON) and the consensus rule of the local
// testnet (docs/node.md):
//
//   {
//     "chain_id": 7,                      u64, carried by every tx and block
//     "chain_name": "veritrain-local",    the P2P network name
//     "time": 1700000000000,              genesis time, milliseconds
//     "block_interval_ms": 500,           0 = instant mode (one validator: a block per tx batch)
//     "proposer_timeout_ms": 1500,        after this the next validator in rotation may propose
//     "params": {"block_gas_limit": …, "max_tx_bytes": …, "min_gas_price": 1},   optional
//     "validators": [{"name": "v0", "pubkey": "<64 hex>"}, …],
//     "accounts": [{"name": "alice", "address": "<40 hex>", "balance": 1000000}, …]
//   }
//
// Proposer rotation: block h is due from validators[h mod n] at
// parent.time + interval. The validator at rotation offset d (d = 0 the due
// one, d = 1 the next, …) may propose once block time ≥ parent.time +
// interval + d·timeout; so when a validator is down, the next one takes
// over after one timeout and the chain does not stop.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/block.h"
#include "contract_vm/vm.h"
#include "crypto/keys.h"

namespace vt::node {

struct Validator {
  std::string name;
  crypto::PublicKey pubkey;
};

struct NamedAccount {
  std::string name;
  crypto::Address address;
  vm::Amount balance = 0;
};

struct GenesisFile {
  std::string chain_name = "veritrain-local";
  vm::Genesis genesis;  // params (chain id), time, allocations (sorted)
  std::uint64_t block_interval_ms = 500;
  std::uint64_t proposer_timeout_ms = 1500;
  std::vector<Validator> validators;
  std::vector<NamedAccount> accounts;  // as written (names kept for people)

  bool instant() const { return block_interval_ms == 0; }
  // Hash of everything that defines the chain (the P2P handshake's genesis hash).
  Hash256 NetworkHash() const;
  // Rotation offset of `proposer` for height `height`; nullopt: not a validator.
  std::optional<std::uint64_t> ProposerOffset(std::uint64_t height, const std::array<std::uint8_t, 32>& proposer) const;
  // Earliest block time at which the validator at offset d may propose on a parent with `parent_time`.
  std::uint64_t EarliestTime(std::uint64_t parent_time, std::uint64_t offset) const;
  // Stateless consensus check of a header against its parent's time:
  // Invalid "block-bad-proposer" (not a validator, or too early for its offset).
  Status CheckProposer(const vm::BlockHeader& header, std::uint64_t parent_time) const;
};

// Invalid "genesis-bad-json" / "genesis-bad-field" with a detail naming the field.
Result<GenesisFile> ParseGenesis(std::string_view json_text);
Result<GenesisFile> LoadGenesis(const std::filesystem::path& path);
std::string GenesisToJson(const GenesisFile& g);

}  // namespace vt::node
