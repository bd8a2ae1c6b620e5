#pragma once
// The genesis file of a chain (JSON) and the consensus rule of the local
// testnet (docs/node.md):
//
//   {
//     "chain_id": 7,                      u64, carried by every tx and block
//     "chain_name": "veritrain-local",    the P2P network name
//     "time": 1700000000000,              genesis time, milliseconds
//     "block_interval_ms": 500,           0 = instant mode (one validator: a block per tx batch)
//     "proposer_timeout_ms": 1500,        how long validators wait for a proposal (see below)
//     "params": {"block_gas_limit": …, "max_tx_bytes": …, "min_gas_price": 1},   optional
//     "validators": [{"name": "v0", "pubkey": "<64 hex>", "bond": 1000000}, …],   bond optional (0: none)
//     "accounts": [{"name": "alice", "address": "<40 hex>", "balance": 1000000}, …]
//   }
//
// Consensus: Tendermint-style BFT finality among the validators
// (docs/node.md, "BFT finality"). block_interval_ms is how long a proposer
// waits after the parent's time before building a block; the propose
// timeout of round 0 is block_interval_ms + proposer_timeout_ms, so a silent
// proposer costs one such timeout before the next round's proposer builds.
// Instant mode: one validator (quorum 1) builds a block as soon as
// transactions are pending, and an empty one every proposer_timeout_ms.

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
  vm::Amount bond = 0;  // stake slashed for equivocation (docs/node.md "Evidence and slashing")
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
  bool IsValidator(const std::array<std::uint8_t, 32>& key) const;
  // Stateless consensus check of a header against its parent's time:
  // Invalid "block-bad-proposer" (not a validator) or "block-bad-time"
  // (before the parent's). Who proposes which height and round is the BFT
  // rotation (consensus/messages.h), checked on the signed proposal.
  Status CheckProposer(const vm::BlockHeader& header, std::uint64_t parent_time) const;
};

// Invalid "genesis-bad-json" / "genesis-bad-field" with a detail naming the field.
Result<GenesisFile> ParseGenesis(std::string_view json_text);
Result<GenesisFile> LoadGenesis(const std::filesystem::path& path);
std::string GenesisToJson(const GenesisFile& g);

}  // namespace vt::node
