// The node's JSON-RPC methods (docs/node.md, "JSON-RPC"). Params may be
// positional or named; errors follow net/rpc.h (-32602 bad params, -32000
// rejected with the stable reason in error.data.reason).

#include "common/encoding.h"
#include "common/limits.h"
#include "net/rpc.h"
#include "node/explorer_rpc.h"
#include "node/json_view.h"
#include "node/node.h"
#include "node/solver_note_rpc.h"
#include "referee/records.h"

namespace vt::node {
namespace {

using net::Json;

Result<Hash256> HashParam(const Json& params, std::size_t i, std::string_view name) {
  VT_ASSIGN_OR_RETURN(std::string s, net::GetStringParam(params, i, name));
  auto h = Hash256::FromHex(s);
  if (!h.ok()) return net::InvalidParams(std::string(name) + " must be 64 hex digits");
  return *h;
}

// The ids of every game of a bounty (no cap on games, so they are not in its record).
Result<Json> GamesJson(Chain& chain, std::uint64_t bounty_id) {
  VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> ids, referee::ReadBountyGames(chain.db(), bounty_id));
  Json games = Json::array();
  for (std::uint64_t g : ids) games.push_back(g);
  return games;
}

// A validator's bond and slashes from the tip state (docs/node.md "Evidence
// and slashing"): the one view behind chain_status and get_account. Reads
// a bounded number of entries however often it was slashed (Chain::Stake).
Result<Json> ValidatorJson(const Chain& chain, const Validator& v) {
  VT_ASSIGN_OR_RETURN(const Chain::ValidatorStake stake, chain.Stake(v.pubkey));
  Json slashes = Json::array();
  for (const auto& [o, rec] : stake.latest) {
    slashes.push_back({{"height", o.height}, {"round", o.round},
                       {"vote", o.kind == static_cast<std::uint8_t>(consensus::VoteType::kPrevote) ? "prevote"
                                                                                                    : "precommit"},
                       {"block", rec.block_height}, {"slashed", rec.slashed}, {"reward", rec.reward}});
  }
  return Json{{"name", v.name},
              {"pubkey", v.pubkey.Hex()},
              {"genesis_bond", v.bond},
              {"bond", stake.bond},
              {"slashed", stake.summary.slashed},
              {"offences", stake.summary.offences},
              {"slashes", slashes}};
}

}  // namespace

void Node::RegisterRpc() {
  net::RpcServer& rpc = *m_rpc;
  Chain& chain = *m_chain;

  rpc.Register("chain_status", [this, &chain](const Json&) -> Result<Json> {
    const vm::ChainTip tip = chain.tip();
    const GenesisFile& g = chain.genesis();
    const NodeStats st = stats();
    const BlobLedger::Usage unpinned = m_ledger.Total();
    Json consensus;  // null when the io thread did not answer in time
    if (const auto c = ConsensusStats())
      consensus = Json{{"committed", c->committed},   {"synced", c->synced},
                       {"rejected", c->rejected},     {"evidence", c->evidence},
                       {"highest_round", c->highest_round}};
    // Bonds and slashes from the tip state (docs/node.md "Evidence and slashing").
    Json validators = Json::array();
    for (const Validator& v : g.validators) {
      VT_ASSIGN_OR_RETURN(Json j, ValidatorJson(chain, v));
      validators.push_back(std::move(j));
    }
    return Json{{"name", m_config.name},
                {"chain_id", tip.chain_id},
                {"chain_name", g.chain_name},
                {"genesis_hash", g.NetworkHash().Hex()},
                {"height", tip.height},
                // Every stored block is final (BFT: committed with a certificate).
                {"finalized_height", tip.height},
                {"hash", tip.hash.Hex()},
                {"time", tip.time},
                {"block_interval_ms", g.block_interval_ms},
                {"proposer_timeout_ms", g.proposer_timeout_ms},
                {"instant", g.instant()},
                {"validator", m_config.validator_key ? Json(m_config.validator_key->public_key().Hex()) : Json()},
                {"validators", validators},
                {"peers", m_p2p->Peers().size()},
                {"mempool", m_mempool.size()},
                {"p2p_port", p2p_port()},
                {"blocks_produced", st.blocks_produced},
                {"blocks_applied", st.blocks_applied},
                {"reorgs", st.reorgs},
                {"txs_accepted", st.txs_accepted},
                {"unpinned_blobs", unpinned.blobs},
                {"unpinned_blob_bytes", unpinned.bytes},
                {"consensus", consensus}};
  });

  rpc.Register("submit_tx", [this](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::string hex, net::GetStringParam(params, 0, "tx"));
    // Refused at the door: nothing larger than a gossip frame is decoded.
    if (hex.size() > 2 * limits::kMaxTxBytes)
      return Status::Invalid(vm::reasons::kTooLarge, std::to_string(hex.size() / 2) + " bytes, the limit is " +
                                                         std::to_string(limits::kMaxTxBytes));
    auto bytes = FromHex(hex);
    if (!bytes.ok()) return net::InvalidParams("tx must be hex");
    VT_ASSIGN_OR_RETURN(vm::Transaction tx, vm::DecodeTransaction(*bytes));
    VT_ASSIGN_OR_RETURN(Hash256 id, SubmitTransaction(tx));
    return Json{{"tx_id", id.Hex()}};
  });

  rpc.Register("get_block", [&chain](const Json& params) -> Result<Json> {
    std::uint64_t height = chain.tip().height;
    if (auto p = net::OptParam(params, 0, "height"); p && !(p->is_string() && *p == "latest") && !p->is_null()) {
      if (!p->is_number_unsigned()) return net::InvalidParams("height must be an integer or \"latest\"");
      height = p->get<std::uint64_t>();
    }
    bool full = false;
    if (auto f = net::OptParam(params, 1, "full"); f && f->is_boolean()) full = f->get<bool>();
    if (height == 0) {
      return Json{{"height", 0}, {"hash", vm::GenesisHash(chain.genesis().genesis).Hex()},
                  {"time", chain.genesis().genesis.time}, {"txs", Json::array()}, {"tx_count", 0}};
    }
    VT_ASSIGN_OR_RETURN(auto block, chain.db().BlockAt(height));
    if (!block) return Status::Invalid("not-found", "no block at height " + std::to_string(height));
    return BlockToJson(*block, full);
  });

  auto find_tx = [&chain](const Hash256& id) -> Result<std::pair<vm::Block, TxLocation>> {
    VT_ASSIGN_OR_RETURN(auto loc, chain.db().FindTx(id));
    if (!loc) return Status::Invalid("not-found", "unknown or pending transaction");
    VT_ASSIGN_OR_RETURN(auto block, chain.db().BlockAt(loc->height));
    if (!block || loc->index >= block->txs.size()) return Status::Error("db-corrupt", "tx index");
    return std::make_pair(std::move(*block), *loc);
  };

  rpc.Register("get_tx", [this, find_tx](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(Hash256 id, HashParam(params, 0, "tx_id"));
    auto found = find_tx(id);
    if (!found.ok()) {
      if (m_mempool.Contains(id)) return Json{{"tx_id", id.Hex()}, {"status", "pending"}};
      return found.status();
    }
    Json j = TxToJson(found->first.txs[found->second.index]);
    j["status"] = "included";
    j["height"] = found->second.height;
    j["index"] = found->second.index;
    return j;
  });

  rpc.Register("get_receipt", [&chain, find_tx](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(Hash256 id, HashParam(params, 0, "tx_id"));
    VT_ASSIGN_OR_RETURN(auto found, find_tx(id));
    VT_ASSIGN_OR_RETURN(auto receipts, chain.db().ReceiptsAt(found.second.height));
    if (!receipts || found.second.index >= receipts->size()) return Status::Error("db-corrupt", "receipts");
    Json j = ReceiptToJson((*receipts)[found.second.index]);
    j["height"] = found.second.height;
    j["index"] = found.second.index;
    return j;
  });

  rpc.Register("get_account", [this, &chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::string s, net::GetStringParam(params, 0, "address"));
    auto addr = crypto::Address::FromHex(s);
    if (!addr.ok()) return net::InvalidParams("address must be 40 hex digits");
    VT_ASSIGN_OR_RETURN(vm::Account a, vm::ReadAccount(chain.db(), *addr));
    Json j{{"address", addr->Hex()}, {"balance", a.balance}, {"nonce", a.nonce},
           {"next_nonce", NextNonce(*addr)}, {"height", chain.tip().height}};
    // A validator's key: its bond too (held apart from the balance).
    for (const Validator& v : chain.genesis().validators) {
      if (v.pubkey.address() != *addr) continue;
      VT_ASSIGN_OR_RETURN(j["validator"], ValidatorJson(chain, v));
    }
    return j;
  });

  rpc.Register("get_bounty", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), id));
    Json j = BountyToJson(b);
    VT_ASSIGN_OR_RETURN(j["games"], GamesJson(chain, id));
    j["encoded"] = ToHex(EncodeToBytes(b));
    j["height"] = chain.tip().height;
    return j;
  });

  rpc.Register("list_bounties", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t from, net::OptU64Param(params, 0, "from", 0));
    VT_ASSIGN_OR_RETURN(std::uint64_t limit, net::OptU64Param(params, 1, "limit", 100));
    Json out = Json::array();
    for (std::uint64_t id = from; out.size() < std::min<std::uint64_t>(limit, 1000); ++id) {
      auto b = referee::ReadBounty(chain.db(), id);
      if (!b.ok()) break;
      Json j = BountyToJson(*b);
      VT_ASSIGN_OR_RETURN(j["games"], GamesJson(chain, id));
      out.push_back(std::move(j));
    }
    return Json{{"bounties", out}, {"height", chain.tip().height}};
  });

  rpc.Register("get_job", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    VT_ASSIGN_OR_RETURN(protocol::JobSpec job, referee::ReadJob(chain.db(), id));
    return Json{{"bounty_id", id}, {"job_hash", protocol::JobHash(job).Hex()},
                {"spec", ToHex(protocol::EncodeJobSpec(job))}, {"num_steps", job.num_steps},
                {"checkpoint_interval", job.checkpoint_interval}, {"batch_size", job.batch_size}};
  });

  rpc.Register("get_dispute", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "game_id"));
    VT_ASSIGN_OR_RETURN(referee::Game g, referee::ReadGame(chain.db(), id));
    Json j = GameToJson(g);
    j["encoded"] = ToHex(EncodeToBytes(g));
    VT_ASSIGN_OR_RETURN(auto walk, referee::ReadWalk(chain.db(), id));
    if (walk) j["walk"] = ToHex(EncodeToBytes(*walk));
    // The element level, once a party descended (docs/referee.md, "How the referee plays them").
    VT_ASSIGN_OR_RETURN(auto element, referee::ReadElementGame(chain.db(), id));
    if (element) {
      j["element"] = ElementGameToJson(*element);
      j["element_encoded"] = ToHex(EncodeToBytes(*element));
    }
    j["height"] = chain.tip().height;
    return j;
  });

  rpc.Register("get_events", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t from, net::OptU64Param(params, 0, "from_height", 1));
    VT_ASSIGN_OR_RETURN(std::uint64_t limit, net::OptU64Param(params, 1, "limit", 1000));
    std::string topic;
    if (auto t = net::OptParam(params, 2, "topic"); t && t->is_string()) topic = t->get<std::string>();
    const std::uint64_t tip = chain.tip().height;
    from = std::max<std::uint64_t>(from, 1);
    Json events = Json::array();
    std::uint64_t h = from;
    for (; h <= tip && h < from + 2000 && events.size() < limit; ++h) {
      VT_ASSIGN_OR_RETURN(auto block, chain.db().BlockAt(h));
      VT_ASSIGN_OR_RETURN(auto receipts, chain.db().ReceiptsAt(h));
      if (!block || !receipts) break;
      for (std::size_t i = 0; i < receipts->size(); ++i) {
        const vm::Receipt& r = (*receipts)[i];
        for (const vm::Event& e : r.events) {
          if (!topic.empty() && e.topic != topic) continue;
          Json ej = EventToJson(e);
          ej["height"] = h;
          ej["tx_id"] = r.tx_id.Hex();
          ej["time"] = block->header.time;
          events.push_back(std::move(ej));
        }
      }
    }
    return Json{{"events", events}, {"next_height", h}, {"height", tip}};
  });

  rpc.Register("peers", [this](const Json&) -> Result<Json> {
    Json out = Json::array();
    for (const net::PeerInfo& p : m_p2p->Peers())
      out.push_back({{"id", p.id}, {"remote", p.remote.ToString()}, {"inbound", p.inbound},
                     {"established", p.established}, {"height", p.hello.best_height}, {"score", p.score}});
    Json bans = Json::array();
    for (const net::BanEntry& b : m_p2p->Bans()) bans.push_back({{"key", b.key}, {"reason", b.reason}});
    Json disc = Json::array();
    for (const net::DisconnectRecord& d : m_p2p->RecentDisconnects())
      disc.push_back({{"remote", d.peer.remote.ToString()}, {"reason", d.reason}});
    return Json{{"peers", out}, {"bans", bans}, {"recent_disconnects", disc}};
  });

  // Signed by an account, within its quota and the node's (node/blob_upload.h).
  rpc.Register("put_blob", [this](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::string hex, net::GetStringParam(params, 0, "data"));
    VT_ASSIGN_OR_RETURN(std::string uploader, net::GetStringParam(params, 1, "uploader"));
    VT_ASSIGN_OR_RETURN(std::string signature, net::GetStringParam(params, 2, "signature"));
    auto bytes = FromHex(hex);
    if (!bytes.ok()) return net::InvalidParams("data must be hex");
    VT_ASSIGN_OR_RETURN(Hash256 h, PutUploadedBlob(*bytes, uploader, signature));
    return Json{{"hash", h.Hex()}, {"size", bytes->size()}};
  });

  // A blob this node lacks is fetched from its peers in the background; the
  // caller sees "blob-pending" and asks again (ChainClient::GetBlob polls).
  rpc.Register("get_blob", [this, &chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(Hash256 h, HashParam(params, 0, "hash"));
    VT_ASSIGN_OR_RETURN(auto b, chain.db().GetBlob(h));
    if (b) {
      const auto pinned = chain.db().IsPinned(h);  // named by a block: kept for good
      return Json{{"hash", h.Hex()}, {"size", b->size()}, {"pinned", pinned.ok() && *pinned}, {"data", ToHex(*b)}};
    }
    VT_TRY(FetchBlobFromPeers(h));
    return Status::Invalid("blob-pending", "not stored here; fetching it from peers, ask again");
  });

  // The web explorer: its read-only methods and its pages on GET.
  RegisterExplorerRpc(rpc, chain, [this](const Hash256& h) { return FetchBlobFromPeers(h); });
  ServeExplorer(rpc);

  // Solvers' signed off-chain notes: progress, checkpoints served on request.
  RegisterSolverNoteRpc(rpc, chain);
}

}  // namespace vt::node
