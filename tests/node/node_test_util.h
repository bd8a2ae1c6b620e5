#pragma once
// Helpers for node tests: deterministic keys, a genesis, signed transfers.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "contract_vm/tx.h"
#include "crypto/keys.h"
#include "node/genesis.h"

namespace vt::test {

inline crypto::SecretKey NodeTestKey(std::uint32_t n) {
  std::array<std::uint8_t, 32> bytes{};
  bytes[0] = 0x02;
  bytes[28] = static_cast<std::uint8_t>(n >> 24);
  bytes[29] = static_cast<std::uint8_t>(n >> 16);
  bytes[30] = static_cast<std::uint8_t>(n >> 8);
  bytes[31] = static_cast<std::uint8_t>(n);
  auto key = crypto::SecretKey::FromBytes(bytes);
  EXPECT_TRUE(key.ok());
  return std::move(key).value();
}

// Validators are keys 1..validators; accounts 100..100+accounts-1 get `funds`.
inline node::GenesisFile MakeTestGenesis(std::uint32_t validators, std::uint32_t accounts, std::uint64_t interval_ms,
                                         std::uint64_t timeout_ms, std::uint64_t time_ms) {
  node::GenesisFile g;
  g.chain_name = "veritrain-test";
  g.genesis.params.chain_id = 7;
  g.genesis.time = time_ms;
  g.block_interval_ms = interval_ms;
  g.proposer_timeout_ms = timeout_ms;
  for (std::uint32_t i = 1; i <= validators; ++i)
    g.validators.push_back({"v" + std::to_string(i - 1), NodeTestKey(i).public_key()});
  for (std::uint32_t i = 0; i < accounts; ++i)
    g.accounts.push_back({"acct" + std::to_string(i), NodeTestKey(100 + i).address(), 1'000'000'000'000});
  auto parsed = node::ParseGenesis(node::GenesisToJson(g));  // normal form: sorted allocations
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return *parsed;
}

inline vm::Transaction Transfer(const crypto::SecretKey& from, const crypto::Address& to, vm::Amount amount,
                                std::uint64_t nonce, std::uint64_t chain_id = 7) {
  vm::Transaction tx;
  tx.chain_id = chain_id;
  tx.nonce = nonce;
  tx.gas_limit = 100'000;
  tx.gas_price = 1;
  tx.payload = vm::TransferPayload{to, amount};
  EXPECT_TRUE(vm::SignTransaction(tx, from).ok());
  return tx;
}

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    m_path = std::filesystem::temp_directory_path() /
             ("vt-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(s_counter++));
    std::filesystem::remove_all(m_path);
    std::filesystem::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  const std::filesystem::path& path() const { return m_path; }

 private:
  inline static int s_counter = 0;
  std::filesystem::path m_path;
};

}  // namespace vt::test
