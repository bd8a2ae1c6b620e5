#pragma once
// ChainClient: what the CLI, the worker daemons, the demo and the tests use
// to talk to a node over JSON-RPC — typed reads of accounts, bounties, games
// and jobs, and signed transactions with the right nonce.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "contract_vm/tx.h"
#include "contract_vm/vm.h"
#include "crypto/keys.h"
#include "net/rpc_client.h"
#include "protocol/types.h"
#include "referee/messages.h"
#include "referee/records.h"

namespace vt::node {

using Json = nlohmann::json;

inline constexpr std::uint64_t kDefaultGasLimit = 50'000'000;

struct AccountView {
  vm::Amount balance = 0;
  std::uint64_t nonce = 0;
  std::uint64_t next_nonce = 0;
  // For a genesis validator's key: get_account's "validator" (genesis_bond,
  // bond, slashed, offences, slashes; docs/node.md); null otherwise.
  Json validator;
};

struct GameView {
  referee::Game game;
  std::optional<referee::WalkTranscript> walk;
  std::optional<referee::ElementGame> element;  // once a party descended to the element level
  std::uint64_t height = 0;
};

class ChainClient {
 public:
  ChainClient(std::string host, std::uint16_t port,
              std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~ChainClient();
  ChainClient(ChainClient&&) noexcept;
  ChainClient& operator=(ChainClient&&) noexcept;

  Result<Json> Call(std::string_view method, const Json& params = Json::array());
  Result<Json> ChainStatus();
  Result<std::uint64_t> Height();
  Result<std::uint64_t> ChainId();  // asked once, then remembered
  Result<AccountView> Account(const crypto::Address& address);
  Result<referee::Bounty> Bounty(std::uint64_t id);
  // The ids of every game opened on the bounty (get_bounty's "games").
  Result<std::vector<std::uint64_t>> BountyGames(std::uint64_t id);
  Result<GameView> Game(std::uint64_t id);
  Result<protocol::JobSpec> Job(std::uint64_t bounty_id);

  // Content-addressed blobs (SHA-256 of the bytes; both directions checked
  // here). An upload is signed by `uploader`, whose account must be funded
  // and within its quota (node/blob_upload.h: "blob-insufficient-funds",
  // "blob-quota-exceeded", "blob-store-full"). A node that lacks a blob
  // fetches it from its peers: TryGetBlob answers nullopt meanwhile, GetBlob
  // polls until `timeout` (Invalid "blob-timeout"), or fails with the fetch's reason.
  Result<Hash256> PutBlob(const crypto::SecretKey& uploader, ByteSpan data);
  Result<std::optional<Bytes>> TryGetBlob(const Hash256& hash);
  Result<Bytes> GetBlob(const Hash256& hash, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Signs `payload` from `key` with the node's next nonce and submits it.
  Result<Hash256> Send(const crypto::SecretKey& key, std::variant<vm::TransferPayload, vm::CallPayload> payload,
                       std::uint64_t gas_limit = kDefaultGasLimit);
  // Commit and PostBounty that name blobs need kDefaultGasLimit plus
  // referee::BlobGas of what they name.
  Result<Hash256> CallReferee(const crypto::SecretKey& key, referee::Method method, Bytes args,
                              std::uint64_t gas_limit = kDefaultGasLimit);
  // Polls until the transaction is in a block; its receipt JSON.
  Result<Json> WaitReceipt(const Hash256& tx_id, std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Polls until the chain reaches `height`.
  Status WaitHeight(std::uint64_t height, std::chrono::milliseconds timeout = std::chrono::seconds(60));

 private:
  std::unique_ptr<net::RpcClient> m_rpc;
  std::optional<std::uint64_t> m_chain_id;
  // Nonces handed out by this client, so several sends before a block work.
  std::map<crypto::Address, std::uint64_t> m_nonces;
};

}  // namespace vt::node
