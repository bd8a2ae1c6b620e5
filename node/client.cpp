#include "node/client.h"

#include <thread>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "node/blob_upload.h"

namespace vt::node {
namespace {

Result<Bytes> HexField(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return Status::Invalid("rpc-bad-response", key);
  return FromHex(j[key].get<std::string>());
}

}  // namespace

ChainClient::ChainClient(std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : m_rpc(std::make_unique<net::RpcClient>(std::move(host), port, timeout)) {}
ChainClient::~ChainClient() = default;
ChainClient::ChainClient(ChainClient&&) noexcept = default;
ChainClient& ChainClient::operator=(ChainClient&&) noexcept = default;

Result<Json> ChainClient::Call(std::string_view method, const Json& params) { return m_rpc->Call(method, params); }

Result<Json> ChainClient::ChainStatus() { return Call("chain_status"); }

Result<std::uint64_t> ChainClient::Height() {
  VT_ASSIGN_OR_RETURN(Json s, ChainStatus());
  return s["height"].get<std::uint64_t>();
}

Result<AccountView> ChainClient::Account(const crypto::Address& address) {
  VT_ASSIGN_OR_RETURN(Json j, Call("get_account", Json::array({address.Hex()})));
  return AccountView{j["balance"].get<vm::Amount>(), j["nonce"].get<std::uint64_t>(),
                     j["next_nonce"].get<std::uint64_t>(), j.value("validator", Json())};
}

Result<referee::Bounty> ChainClient::Bounty(std::uint64_t id) {
  VT_ASSIGN_OR_RETURN(Json j, Call("get_bounty", Json::array({id})));
  VT_ASSIGN_OR_RETURN(Bytes b, HexField(j, "encoded"));
  return DecodeExact<referee::Bounty>(b);
}

Result<std::vector<std::uint64_t>> ChainClient::BountyGames(std::uint64_t id) {
  VT_ASSIGN_OR_RETURN(Json j, Call("get_bounty", Json::array({id})));
  if (!j.contains("games") || !j["games"].is_array()) return Status::Invalid("rpc-bad-response", "no games list");
  std::vector<std::uint64_t> ids;
  for (const Json& g : j["games"]) {
    if (!g.is_number_unsigned()) return Status::Invalid("rpc-bad-response", "a game id");
    ids.push_back(g.get<std::uint64_t>());
  }
  return ids;
}

Result<GameView> ChainClient::Game(std::uint64_t id) {
  VT_ASSIGN_OR_RETURN(Json j, Call("get_dispute", Json::array({id})));
  VT_ASSIGN_OR_RETURN(Bytes b, HexField(j, "encoded"));
  GameView v;
  VT_ASSIGN_OR_RETURN(v.game, DecodeExact<referee::Game>(b));
  if (j.contains("walk")) {
    VT_ASSIGN_OR_RETURN(Bytes w, HexField(j, "walk"));
    VT_ASSIGN_OR_RETURN(auto t, DecodeExact<referee::WalkTranscript>(w));
    v.walk = std::move(t);
  }
  if (j.contains("element_encoded")) {
    VT_ASSIGN_OR_RETURN(Bytes e, HexField(j, "element_encoded"));
    VT_ASSIGN_OR_RETURN(auto element, DecodeExact<referee::ElementGame>(e));
    v.element = std::move(element);
  }
  v.height = j["height"].get<std::uint64_t>();
  return v;
}

Result<protocol::JobSpec> ChainClient::Job(std::uint64_t bounty_id) {
  VT_ASSIGN_OR_RETURN(Json j, Call("get_job", Json::array({bounty_id})));
  VT_ASSIGN_OR_RETURN(Bytes b, HexField(j, "spec"));
  return protocol::DecodeJobSpec(b);
}

Result<std::uint64_t> ChainClient::ChainId() {
  if (!m_chain_id) {
    VT_ASSIGN_OR_RETURN(Json s, ChainStatus());
    m_chain_id = s["chain_id"].get<std::uint64_t>();
  }
  return *m_chain_id;
}

Result<Hash256> ChainClient::PutBlob(const crypto::SecretKey& uploader, ByteSpan data) {
  VT_ASSIGN_OR_RETURN(std::uint64_t chain_id, ChainId());
  VT_ASSIGN_OR_RETURN(crypto::Signature sig, SignUpload(uploader, chain_id, crypto::Sha256Digest(data), data.size()));
  VT_ASSIGN_OR_RETURN(Json j, Call("put_blob", Json::array({ToHex(data), uploader.public_key().Hex(), sig.Hex()})));
  if (!j.contains("hash") || !j["hash"].is_string()) return Status::Error("rpc-bad-result", "put_blob: no hash");
  auto h = Hash256::FromHex(j["hash"].get<std::string>());
  if (!h.ok()) return Status::Error("rpc-bad-result", "put_blob: bad hash");
  if (*h != crypto::Sha256Digest(data)) return Status::Error("rpc-bad-result", "put_blob: the node named another hash");
  return *h;
}

Result<std::optional<Bytes>> ChainClient::TryGetBlob(const Hash256& hash) {
  auto j = Call("get_blob", Json::array({hash.Hex()}));
  if (!j.ok()) {
    if (j.status().reason() == "blob-pending") return std::optional<Bytes>{};
    return j.status();
  }
  VT_ASSIGN_OR_RETURN(Bytes b, HexField(*j, "data"));
  // Never trust the node with content addressing.
  if (crypto::Sha256Digest(b) != hash) return Status::Invalid("blob-hash-mismatch", "the node returned other bytes");
  return std::optional<Bytes>(std::move(b));
}

Result<Bytes> ChainClient::GetBlob(const Hash256& hash, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> b, TryGetBlob(hash));
    if (b) return std::move(*b);
    if (std::chrono::steady_clock::now() >= deadline)
      return Status::Invalid("blob-timeout", "blob " + hash.Hex() + " not available yet");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<Hash256> ChainClient::Send(const crypto::SecretKey& key,
                                  std::variant<vm::TransferPayload, vm::CallPayload> payload,
                                  std::uint64_t gas_limit) {
  VT_TRY(ChainId().status());
  VT_ASSIGN_OR_RETURN(AccountView a, Account(key.address()));
  std::uint64_t nonce = a.next_nonce;
  // Our own earlier sends count only while the node still holds some of
  // them pending (next_nonce > nonce): a node drops transactions (e.g. ones
  // whose named blobs never arrive), and a nonce past a dropped one would
  // wait forever.
  if (auto it = m_nonces.find(key.address());
      it != m_nonces.end() && a.next_nonce > a.nonce && it->second > nonce && it->second <= a.nonce + 64)
    nonce = it->second;
  vm::Transaction tx;
  tx.chain_id = *m_chain_id;
  tx.nonce = nonce;
  tx.gas_limit = gas_limit;
  tx.gas_price = 1;
  tx.payload = std::move(payload);
  VT_TRY(vm::SignTransaction(tx, key));
  VT_ASSIGN_OR_RETURN(Json r, Call("submit_tx", Json::array({ToHex(vm::EncodeTransaction(tx))})));
  m_nonces[key.address()] = nonce + 1;
  VT_ASSIGN_OR_RETURN(Hash256 id, Hash256::FromHex(r["tx_id"].get<std::string>()));
  return id;
}

Result<Hash256> ChainClient::CallReferee(const crypto::SecretKey& key, referee::Method method, Bytes args,
                                         std::uint64_t gas_limit) {
  return Send(key, vm::CallPayload{referee::kRefereeContractId, static_cast<std::uint16_t>(method), std::move(args)},
              gas_limit);
}

Result<Json> ChainClient::WaitReceipt(const Hash256& tx_id, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto r = Call("get_receipt", Json::array({tx_id.Hex()}));
    if (r.ok()) return r;
    if (r.status().reason() != "not-found") return r.status();
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Error("tx-timeout", "not included within the timeout: " + tx_id.Hex());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status ChainClient::WaitHeight(std::uint64_t height, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto h = Height();
    if (h.ok() && *h >= height) return Status::Ok();
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Error("height-timeout", "chain did not reach " + std::to_string(height));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace vt::node
