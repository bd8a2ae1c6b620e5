#include "net/p2p.h"

#include <algorithm>
#include <future>
#include <limits>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "common/log.h"
#include "crypto/random.h"
#include "crypto/sha256.h"

namespace vt::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kRecentDisconnects = 64;
// Encoded Items without its items: request id, height, count varint.
constexpr std::size_t kItemsEnvelope = 8 + 8 + kMaxVarintBytes;

spdlog::logger& Log() { return vt::log::Get("net"); }

MsgType GossipType(GossipKind kind) {
  switch (kind) {
    case GossipKind::kTx: return MsgType::kTx;
    case GossipKind::kBlock: return MsgType::kBlock;
    case GossipKind::kConsensus: return MsgType::kConsensus;
  }
  return MsgType::kBlock;
}

GossipKind KindOf(MsgType type) {
  return type == MsgType::kTx ? GossipKind::kTx : type == MsgType::kConsensus ? GossipKind::kConsensus : GossipKind::kBlock;
}

std::string NodeKey(const Hash256& id) { return "node:" + id.Hex(); }
std::string AddrKey(const std::string& host) { return "addr:" + host; }

}  // namespace

Verdict Verdict::FromStatus(const Status& status, int pen) {
  if (status.ok()) return Accept();
  if (status.is_invalid()) return Reject(status.reason(), pen);
  return Ignore(status.reason());
}

P2PNode::P2PNode(asio::io_context& io, P2PConfig config, MessageHandler* handler, BlockSource* blocks,
                 BlobStore* blobs)
    : m_io(io),
      m_config(std::move(config)),
      m_handler(handler),
      m_blocks(blocks),
      m_blobs(blobs),
      m_magic(m_config.magic != 0 ? m_config.magic : ChainMagic(m_config.chain_id)),
      m_node_id(m_config.node_id),
      m_acceptor(io),
      m_tick_timer(io),
      m_seen(m_config.seen_capacity) {
  std::random_device rd;
  m_rng.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  if (m_node_id.IsZero()) {
    if (!crypto::FillOsRandom(m_node_id.bytes).ok()) {
      // Not a secret, only a name: a weaker source is acceptable.
      for (auto& b : m_node_id.bytes) b = static_cast<std::uint8_t>(m_rng());
    }
  }
  if (m_config.user_agent.size() > kMaxUserAgentBytes) m_config.user_agent.resize(kMaxUserAgentBytes);
  m_config.blob_chunk_bytes = std::clamp<std::uint32_t>(m_config.blob_chunk_bytes, 1, kMaxBlobChunk);
  m_config.sync_batch = std::clamp<std::uint32_t>(m_config.sync_batch, 1, kMaxItemsPerResponse);
}

P2PNode::~P2PNode() = default;

// ---- lifecycle -----------------------------------------------------------------

Status P2PNode::Start() {
  if (m_started) return Status::Error("net-already-started");
  if (m_config.chain_id.size() > kMaxChainIdBytes) {
    return Status::Error("net-bad-config", "chain id longer than 64 bytes");
  }
  m_started = true;
  if (m_config.listen) {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(m_config.listen_host, ec);
    if (ec) return Status::Error("net-listen-failed", "listen host is not an IP address");
    const tcp::endpoint endpoint(address, m_config.listen_port);
    m_acceptor.open(endpoint.protocol(), ec);
    if (!ec) m_acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) m_acceptor.bind(endpoint, ec);
    if (!ec) m_acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      boost::system::error_code ignored;
      m_acceptor.close(ignored);
      return Status::Error("net-listen-failed", endpoint.address().to_string() + ":" +
                                                    std::to_string(endpoint.port()) + ": " + ec.message());
    }
    m_listen_port = m_acceptor.local_endpoint(ec).port();
  }
  for (const Endpoint& ep : m_config.peers) m_targets.push_back(MakeTarget(ep));
  asio::post(m_io, [this] {
    if (m_stopped) return;
    if (m_acceptor.is_open()) Accept();
    for (std::size_t i = 0; i < m_targets.size(); ++i) Dial(i);
    ScheduleTick();
  });
  Log().info("p2p started listen={}:{} node={} chain={} peers={}", m_config.listen_host, m_listen_port.load(),
             m_node_id.Hex().substr(0, 16), m_config.chain_id, m_config.peers.size());
  return Status::Ok();
}

void P2PNode::Stop() {
  asio::post(m_io, [this] {
    if (m_stopped) return;
    m_stopped = true;
    boost::system::error_code ec;
    m_acceptor.close(ec);
    m_tick_timer.cancel();
    for (DialTarget& t : m_targets) {
      if (t.socket) t.socket->close(ec);
    }
    std::vector<ConnPtr> conns;
    for (auto& [id, conn] : m_peers) conns.push_back(conn);
    for (const std::weak_ptr<Connection>& weak : m_lingering) {
      if (ConnPtr conn = weak.lock()) conns.push_back(std::move(conn));
    }
    m_lingering.clear();
    for (const ConnPtr& conn : conns) conn->Close("shutdown", false);
    FailRequests([](const PendingRequest&) { return true; }, Status::Error("net-stopped"));
    std::vector<std::uint64_t> fetches;
    for (auto& [id, f] : m_blob_fetches) fetches.push_back(id);
    for (std::uint64_t id : fetches) BlobFail(id, Status::Error("net-stopped"));
    m_sync.active = false;
  });
}

void P2PNode::Accept() {
  m_acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (m_stopped || !m_acceptor.is_open()) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors and the like: retry on the next tick instead of
      // spinning on an accept that fails at once.
      if (PeerLogAllowed()) Log().warn("accept failed error={}", ec.message());
      m_accept_paused = true;
      return;
    }
    boost::system::error_code rec;
    const std::string host = socket.remote_endpoint(rec).address().to_string();
    std::size_t inbound = 0;
    for (const auto& [id, conn] : m_peers) inbound += conn->inbound() ? 1 : 0;
    if (!rec && IsBanned(AddrKey(host), Clock::now())) {
      ++m_counters.refused_banned;
      boost::system::error_code ignored;
      socket.close(ignored);
    } else if (!rec) {
      ++m_counters.connections_in;
      ConnPtr conn = AddConnection(std::move(socket), true, std::nullopt);
      if (inbound >= m_config.max_inbound) conn->Close("too-many-peers", true);
    }
    Accept();
  });
}

void P2PNode::ScheduleTick() {
  m_tick_timer.expires_after(m_config.tick_interval);
  m_tick_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || m_stopped) return;
    Tick();
    ScheduleTick();
  });
}

void P2PNode::Tick() {
  const Clock::time_point now = Clock::now();
  for (auto it = m_bans.begin(); it != m_bans.end();) {
    it = it->second.until <= now ? m_bans.erase(it) : std::next(it);
  }
  for (auto& [id, conn] : m_peers) {
    if (!conn->open()) continue;
    PeerSession& s = conn->session();
    if (!s.established) {
      if (now - s.connected_at > m_config.handshake_timeout) conn->Close("handshake-timeout", true);
      continue;
    }
    if (now - conn->last_receive() > m_config.idle_timeout) {
      conn->Close("ping-timeout", true);
      continue;
    }
    if (now - s.last_ping_sent >= m_config.ping_interval) {
      const std::uint64_t nonce = m_rng();
      s.ping_nonce = nonce;
      s.last_ping_sent = now;
      conn->Send(MsgType::kPing, EncodeToBytes(PingMsg{nonce}));
    }
  }
  FailRequests([now](const PendingRequest& r) { return r.deadline <= now; }, Status::Error("net-timeout"));
  for (std::size_t i = 0; i < m_targets.size(); ++i) {
    const DialTarget& t = m_targets[i];
    if (!t.disabled && !t.connecting && !t.conn && now >= t.next_attempt) Dial(i);
  }
  if (m_accept_paused && m_acceptor.is_open()) {
    m_accept_paused = false;
    Accept();
  }
}

// ---- connections ------------------------------------------------------------------

bool P2PNode::DialTargetSatisfied(const DialTarget& target) const {
  for (const auto& [id, conn] : m_peers) {
    const PeerSession& s = conn->session();
    if (!conn->open() || !s.established) continue;
    if (conn->remote().host == target.endpoint.host && s.hello.listen_port == target.endpoint.port) return true;
  }
  return false;
}

void P2PNode::Dial(std::size_t index) {
  DialTarget& t = m_targets[index];
  if (m_stopped || t.disabled || t.connecting || t.conn) return;
  if (DialTargetSatisfied(t)) {
    // Already connected through the peer's own dial; look again later.
    t.next_attempt = Clock::now() + m_config.reconnect_initial;
    return;
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(t.endpoint.host, ec);
  if (ec || t.endpoint.port == 0) {
    Log().warn("peer address not dialable addr={}", t.endpoint.ToString());
    t.disabled = true;
    return;
  }
  t.connecting = true;
  t.socket = std::make_shared<tcp::socket>(m_io);
  t.socket->async_connect(tcp::endpoint(address, t.endpoint.port),
                          [this, index, sock = t.socket](const boost::system::error_code& cec) {
                            DialTarget& target = m_targets[index];
                            target.connecting = false;
                            target.socket.reset();
                            if (m_stopped) return;
                            if (cec) {
                              target.backoff = target.backoff.count() == 0
                                                   ? m_config.reconnect_initial
                                                   : std::min(target.backoff * 2, m_config.reconnect_max);
                              const auto jitter = std::chrono::milliseconds(
                                  m_rng() % static_cast<std::uint64_t>(target.backoff.count() / 4 + 1));
                              target.next_attempt = Clock::now() + target.backoff + jitter;
                              return;
                            }
                            ++m_counters.connections_out;
                            AddConnection(std::move(*sock), false, index);
                          });
}

P2PNode::ConnPtr P2PNode::AddConnection(tcp::socket socket, bool inbound, std::optional<std::size_t> target) {
  Connection::Options options;
  options.magic = m_magic;
  options.max_send_queue_bytes = m_config.max_send_queue_bytes;
  options.linger = m_config.linger;
  const PeerId id = m_next_peer_id++;
  auto conn = std::make_shared<Connection>(std::move(socket), id, inbound, options,
                                           static_cast<ConnectionOwner*>(this));
  conn->session().known = SeenSet(m_config.known_per_peer);
  conn->session().dial_target = target;
  if (target) m_targets[*target].conn = id;
  m_peers.emplace(id, conn);
  conn->Start();
  conn->Send(MsgType::kHello, EncodeToBytes(OurHello()));
  return conn;
}

Hello P2PNode::OurHello() const {
  Hello h;
  h.protocol_version = kProtocolVersion;
  h.chain_id = m_config.chain_id;
  h.genesis_hash = m_config.genesis_hash;
  h.node_id = m_node_id;
  h.listen_port = m_listen_port.load();
  h.best_height = m_blocks != nullptr ? m_blocks->TipHeight() : 0;
  h.user_agent = m_config.user_agent;
  return h;
}

void P2PNode::OnConnectionClosed(const ConnPtr& conn, const std::string& reason) {
  m_peers.erase(conn->id());
  std::erase_if(m_lingering, [](const std::weak_ptr<Connection>& w) { return w.expired(); });
  if (!conn->socket_closed()) {
    if (m_stopped) {
      conn->Close("shutdown", false);
    } else {
      m_lingering.push_back(conn);
    }
  }
  ++m_counters.disconnects;
  const PeerInfo info = conn->Info();
  DisconnectRecord record{info, reason};
  if (m_recent.size() < kRecentDisconnects) {
    m_recent.push_back(std::move(record));
  } else {
    m_recent[m_recent_next] = std::move(record);
  }
  m_recent_next = (m_recent_next + 1) % kRecentDisconnects;
  if (PeerLogAllowed()) {
    Log().info("peer disconnected peer={} addr={} reason={} established={}", info.id, info.remote.ToString(),
               reason, info.established);
  }
  const PeerSession& s = conn->session();
  if (s.dial_target && !m_stopped) {
    DialTarget& t = m_targets[*s.dial_target];
    if (t.conn == conn->id()) {
      t.conn.reset();
      if (s.established) {
        t.backoff = m_config.reconnect_initial;
      } else {
        t.backoff = t.backoff.count() == 0 ? m_config.reconnect_initial
                                           : std::min(t.backoff * 2, m_config.reconnect_max);
      }
      t.next_attempt = Clock::now() + t.backoff;
    }
  }
  const PeerId id = conn->id();
  FailRequests([id](const PendingRequest& r) { return r.peer == id; }, Status::Error("peer-disconnected"));
  if (s.established && m_handler != nullptr) m_handler->OnPeerDisconnected(info, reason);
}

void P2PNode::OnFrameError(const ConnPtr& conn, const Status& status) {
  Misbehave(conn, penalty::kGarbage, status.reason());
}

template <typename T>
std::optional<T> P2PNode::DecodeOrScore(const ConnPtr& conn, const Frame& frame) {
  Result<T> decoded = DecodeExact<T>(frame.payload);
  if (!decoded.ok()) {
    Misbehave(conn, penalty::kGarbage, decoded.status().reason());
    return std::nullopt;
  }
  return std::move(decoded).value();
}

void P2PNode::OnFrame(const ConnPtr& conn, Frame frame) {
  if (!conn->open() || m_stopped) return;
  PeerSession& s = conn->session();
  if (frame.type == MsgType::kDisconnect) {
    Result<DisconnectMsg> msg = DecodeExact<DisconnectMsg>(frame.payload);
    conn->Close("remote:" + (msg.ok() ? msg->reason : std::string("?")), false);
    return;
  }
  if (!s.established) {
    if (frame.type != MsgType::kHello) {
      Misbehave(conn, penalty::kProtocolViolation, "handshake-expected-hello");
      return;
    }
    HandleHello(conn, frame);
    return;
  }
  switch (frame.type) {
    case MsgType::kHello:
      Misbehave(conn, penalty::kProtocolViolation, "handshake-duplicate-hello");
      return;
    case MsgType::kPing: {
      if (!DecodeOrScore<PingMsg>(conn, frame)) return;
      conn->Send(MsgType::kPong, std::move(frame.payload));
      return;
    }
    case MsgType::kPong: {
      std::optional<PingMsg> pong = DecodeOrScore<PingMsg>(conn, frame);
      if (!pong) return;
      if (s.ping_nonce && *s.ping_nonce == pong->nonce) {
        s.last_rtt = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - s.last_ping_sent);
        s.ping_nonce.reset();
      }
      return;
    }
    case MsgType::kTx:
    case MsgType::kBlock:
    case MsgType::kConsensus:
      HandleGossip(conn, frame.type, std::move(frame.payload), frame.payload_sha256);
      return;
    case MsgType::kGetHeaders:
    case MsgType::kGetBlocks:
      HandleGetItems(conn, frame);
      return;
    case MsgType::kHeaders:
    case MsgType::kBlocks:
      HandleItems(conn, frame);
      return;
    case MsgType::kGetBlob:
      HandleGetBlob(conn, frame);
      return;
    case MsgType::kBlobChunk:
      HandleBlobChunk(conn, frame);
      return;
    case MsgType::kBlobNotFound:
      HandleBlobNotFound(conn, frame);
      return;
    case MsgType::kDisconnect:
      return;  // handled above
  }
}

// ---- handshake --------------------------------------------------------------------

Status P2PNode::CheckHello(const ConnPtr& conn, const Hello& hello) {
  if (hello.protocol_version != kProtocolVersion) {
    return Status::Invalid("handshake-bad-version", "peer speaks version " + std::to_string(hello.protocol_version));
  }
  if (hello.chain_id != m_config.chain_id) return Status::Invalid("handshake-wrong-chain", hello.chain_id);
  if (hello.genesis_hash != m_config.genesis_hash) return Status::Invalid("handshake-wrong-genesis");
  if (hello.node_id == m_node_id) return Status::Invalid("handshake-self-connection");
  if (IsBanned(NodeKey(hello.node_id), Clock::now())) {
    ++m_counters.refused_banned;
    return Status::Invalid("banned");
  }
  for (auto& [id, other] : m_peers) {
    if (other == conn || !other->open() || !other->session().established) continue;
    if (other->session().hello.node_id != hello.node_id) continue;
    // Two connections to one node (both dialed each other): both ends keep
    // the one dialed by the smaller node id, so they agree without talking.
    // From the same dialer the newer wins (the peer restarted).
    const Hash256& dialer_new = conn->inbound() ? hello.node_id : m_node_id;
    const Hash256& dialer_old = other->inbound() ? hello.node_id : m_node_id;
    if (dialer_old < dialer_new) return Status::Invalid("duplicate-connection");
    other->Close("duplicate-connection", true);
  }
  return Status::Ok();
}

void P2PNode::HandleHello(const ConnPtr& conn, const Frame& frame) {
  std::optional<Hello> hello = DecodeOrScore<Hello>(conn, frame);
  if (!hello) return;
  PeerSession& s = conn->session();
  if (Status st = CheckHello(conn, *hello); !st.ok()) {
    if (st.reason() == "handshake-self-connection" && s.dial_target) m_targets[*s.dial_target].disabled = true;
    if (PeerLogAllowed()) {
      Log().info("handshake rejected peer={} addr={} reason={}", conn->id(), conn->remote().ToString(),
                 st.ToString());
    }
    conn->Close(st.reason(), true);
    return;
  }
  s.established = true;
  s.hello = std::move(*hello);
  s.last_ping_sent = Clock::now();
  ++m_counters.handshakes;
  if (s.dial_target) m_targets[*s.dial_target].backoff = std::chrono::milliseconds(0);
  if (PeerLogAllowed()) {
    Log().info("peer connected peer={} addr={} inbound={} node={} height={}", conn->id(), conn->remote().ToString(),
               conn->inbound(), s.hello.node_id.Hex().substr(0, 16), s.hello.best_height);
  }
  if (m_handler != nullptr) m_handler->OnPeerConnected(conn->Info());
  if (conn->open()) MaybeSync(conn);
}

// ---- gossip -----------------------------------------------------------------------

Result<Hash256> P2PNode::Broadcast(GossipKind kind, Bytes payload) {
  const MsgType type = GossipType(kind);
  if (payload.empty()) return Status::Invalid("gossip-empty");
  if (payload.size() > MaxPayload(type)) {
    return Status::Invalid("gossip-too-large", std::to_string(payload.size()) + " bytes");
  }
  const Hash256 id = crypto::Sha256Digest(payload);
  auto shared = std::make_shared<const Bytes>(std::move(payload));
  asio::post(m_io, [this, type, id, shared] {
    if (m_stopped) return;
    m_seen.Insert(id);
    Relay(type, id, shared, 0);
  });
  return id;
}

void P2PNode::HandleGossip(const ConnPtr& conn, MsgType type, Bytes payload, const Hash256& id) {
  if (payload.empty()) {
    Misbehave(conn, penalty::kGarbage, "msg-empty-gossip");
    return;
  }
  // `id` is SHA-256(payload), computed by the frame decoder: the content id
  // costs no second pass over the payload.
  conn->session().known.Insert(id);
  if (!m_seen.Insert(id)) {
    ++m_counters.gossip_duplicates;
    return;
  }
  const GossipKind kind = KindOf(type);
  const Verdict verdict = m_handler != nullptr ? m_handler->OnGossip(conn->id(), kind, id, payload) : Verdict::Accept();
  switch (verdict.kind) {
    case Verdict::Kind::kAccept:
      ++m_counters.gossip_delivered;
      Relay(type, id, std::make_shared<const Bytes>(std::move(payload)), conn->id());
      return;
    case Verdict::Kind::kIgnore:
      ++m_counters.gossip_delivered;
      return;
    case Verdict::Kind::kReject:
      ++m_counters.gossip_rejected;
      Misbehave(conn, verdict.penalty, verdict.reason.empty() ? "gossip-rejected" : verdict.reason);
      return;
  }
}

void P2PNode::Relay(MsgType type, const Hash256& id, const std::shared_ptr<const Bytes>& payload, PeerId except) {
  std::optional<FrameHeaderBytes> header;  // one checksum for every peer
  for (auto& [pid, conn] : m_peers) {
    if (pid == except || !conn->open() || !conn->session().established) continue;
    if (!conn->session().known.Insert(id)) continue;
    if (!header) header = EncodeFrameHeader(m_magic, type, payload->size(), id);
    if (conn->SendWithHeader(*header, payload)) ++m_counters.gossip_sent;
  }
}

// ---- sync -------------------------------------------------------------------------

void P2PNode::HandleGetItems(const ConnPtr& conn, const Frame& frame) {
  std::optional<GetItems> req = DecodeOrScore<GetItems>(conn, frame);
  if (!req) return;
  const bool headers = frame.type == MsgType::kGetHeaders;
  const MsgType response_type = headers ? MsgType::kHeaders : MsgType::kBlocks;
  Items resp{req->request_id, req->from_height, {}};
  ++m_counters.sync_requests_served;
  if (m_blocks != nullptr) {
    const std::size_t limit = std::min<std::size_t>(m_config.max_response_bytes, MaxPayload(response_type)) -
                              kItemsEnvelope;
    const std::uint64_t tip = m_blocks->TipHeight();
    std::size_t bytes = 0;
    for (std::uint32_t i = 0; i < req->max_count; ++i) {
      const std::uint64_t h = req->from_height + i;
      if (h < req->from_height || h > tip) break;  // wrapped, or past our tip
      std::optional<Bytes> item = headers ? m_blocks->HeaderAt(h) : m_blocks->BlockAt(h);
      if (!item) break;
      const std::size_t cost = item->size() + VarintSize(item->size());
      if (bytes + cost > limit || item->size() > MaxPayload(MsgType::kBlock)) break;
      bytes += cost;
      resp.items.push_back(std::move(*item));
    }
  }
  conn->Send(response_type, EncodeToBytes(resp));
}

std::optional<P2PNode::PendingRequest> P2PNode::TakeRequest(const ConnPtr& conn, std::uint64_t request_id,
                                                            MsgType response) {
  auto it = m_requests.find(request_id);
  if (it == m_requests.end() || it->second.peer != conn->id() || it->second.response != response) {
    // An id we never issued is a protocol violation; an old one is a late
    // answer to a request that timed out, which is not the peer's fault.
    if (request_id == 0 || request_id >= m_next_request_id) {
      Misbehave(conn, penalty::kUnsolicited, "unsolicited-response");
    }
    return std::nullopt;
  }
  PendingRequest req = std::move(it->second);
  m_requests.erase(it);
  return req;
}

void P2PNode::HandleItems(const ConnPtr& conn, const Frame& frame) {
  std::optional<Items> resp = DecodeOrScore<Items>(conn, frame);
  if (!resp) return;
  std::optional<PendingRequest> req = TakeRequest(conn, resp->request_id, frame.type);
  if (!req) return;
  if (resp->first_height != req->from || resp->items.size() > req->max_count) {
    Misbehave(conn, penalty::kBadResponse, "sync-bad-response");
    CompleteRequest(std::move(*req), Status::Invalid("sync-bad-response", "items do not fit the request"));
    return;
  }
  CompleteRequest(std::move(*req), ItemsResponse{conn->id(), resp->first_height, std::move(resp->items)});
}

void P2PNode::CompleteRequest(PendingRequest req, Result<ItemsResponse> result) {
  if (req.items_cb) req.items_cb(std::move(result));
}

void P2PNode::FailRequests(const std::function<bool(const PendingRequest&)>& pred, const Status& status) {
  // Collect first: the callbacks may issue new requests.
  std::vector<PendingRequest> failed;
  for (auto it = m_requests.begin(); it != m_requests.end();) {
    if (pred(it->second)) {
      failed.push_back(std::move(it->second));
      it = m_requests.erase(it);
    } else {
      ++it;
    }
  }
  for (PendingRequest& req : failed) {
    if (req.response == MsgType::kBlobChunk) {
      BlobPeerFailed(req.blob_fetch, status);
    } else {
      CompleteRequest(std::move(req), status);
    }
  }
}

void P2PNode::SendRequest(PeerId peer, MsgType type, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb) {
  if (m_stopped) {
    cb(Status::Error("net-stopped"));
    return;
  }
  ConnPtr conn = FindPeer(peer);
  if (!conn || !conn->open() || !conn->session().established) {
    cb(Status::Error("peer-unknown", "no established peer " + std::to_string(peer)));
    return;
  }
  max_count = std::clamp<std::uint32_t>(max_count, 1, kMaxItemsPerResponse);
  const std::uint64_t id = m_next_request_id++;
  PendingRequest req;
  req.peer = peer;
  req.response = type == MsgType::kGetHeaders ? MsgType::kHeaders : MsgType::kBlocks;
  req.deadline = Clock::now() + m_config.request_timeout;
  req.from = from;
  req.max_count = max_count;
  req.items_cb = std::move(cb);
  m_requests.emplace(id, std::move(req));
  conn->Send(type, EncodeToBytes(GetItems{id, from, max_count}));
}

void P2PNode::RequestBlocks(PeerId peer, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb) {
  asio::post(m_io, [this, peer, from, max_count, cb = std::move(cb)]() mutable {
    SendRequest(peer, MsgType::kGetBlocks, from, max_count, std::move(cb));
  });
}

void P2PNode::RequestHeaders(PeerId peer, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb) {
  asio::post(m_io, [this, peer, from, max_count, cb = std::move(cb)]() mutable {
    SendRequest(peer, MsgType::kGetHeaders, from, max_count, std::move(cb));
  });
}

void P2PNode::MaybeSync(const ConnPtr& conn) {
  if (!m_config.auto_sync || m_blocks == nullptr || m_handler == nullptr || m_sync.active) return;
  if (conn->session().hello.best_height > m_blocks->TipHeight()) SyncFrom(conn->id());
}

void P2PNode::StartSync() {
  asio::post(m_io, [this] {
    if (m_stopped || m_blocks == nullptr || m_handler == nullptr || m_sync.active) return;
    std::optional<PeerId> best;
    std::uint64_t best_height = 0;
    for (const auto& [id, conn] : m_peers) {
      if (!conn->open() || !conn->session().established) continue;
      if (!best || conn->session().hello.best_height > best_height) {
        best = id;
        best_height = conn->session().hello.best_height;
      }
    }
    if (best) SyncFrom(*best);
  });
}

void P2PNode::SyncFrom(PeerId peer) {
  m_sync.active = true;
  m_sync.peer = peer;
  SyncStep();
}

void P2PNode::SyncStep() {
  const std::uint64_t tip = m_blocks->TipHeight();
  if (tip == std::numeric_limits<std::uint64_t>::max()) {
    m_sync.active = false;
    return;
  }
  m_sync.from = tip + 1;
  const PeerId peer = m_sync.peer;
  SendRequest(peer, MsgType::kGetBlocks, m_sync.from, m_config.sync_batch, [this, peer](Result<ItemsResponse> r) {
    if (!m_sync.active || m_sync.peer != peer) return;
    if (!r.ok()) {
      m_sync.active = false;
      if (!m_stopped) SyncNextCandidate(peer);
      return;
    }
    if (r->items.empty()) {  // this peer has nothing more
      m_sync.active = false;
      return;
    }
    const std::uint64_t first = r->first_height;
    const Verdict verdict = m_handler->OnSyncBlocks(peer, first, r->items);
    if (verdict.kind == Verdict::Kind::kReject) {
      m_sync.active = false;
      if (ConnPtr conn = FindPeer(peer)) Misbehave(conn, verdict.penalty, verdict.reason);
      SyncNextCandidate(peer);
      return;
    }
    // Ignore, or Accept without progress (the node did not apply them): stop
    // rather than ask for the same blocks forever.
    if (verdict.kind == Verdict::Kind::kIgnore || m_blocks->TipHeight() < first) {
      m_sync.active = false;
      return;
    }
    SyncStep();
  });
}

void P2PNode::SyncNextCandidate(PeerId failed) {
  const std::uint64_t tip = m_blocks->TipHeight();
  for (const auto& [id, conn] : m_peers) {
    if (id == failed || !conn->open() || !conn->session().established) continue;
    if (conn->session().hello.best_height > tip) {
      SyncFrom(id);
      return;
    }
  }
}

// ---- blobs ------------------------------------------------------------------------

void P2PNode::FetchBlob(const Hash256& hash, BlobCallback cb, std::optional<PeerId> preferred) {
  asio::post(m_io, [this, hash, cb = std::move(cb), preferred]() mutable {
    if (m_stopped) {
      cb(Status::Error("net-stopped"));
      return;
    }
    BlobFetch f;
    f.hash = hash;
    f.cb = std::move(cb);
    f.last_failure = Status::Invalid("blob-not-found");
    auto usable = [](const ConnPtr& c) { return c->open() && c->session().established; };
    if (preferred) {
      if (ConnPtr c = FindPeer(*preferred); c && usable(c)) f.candidates.push_back(*preferred);
    }
    for (const auto& [id, conn] : m_peers) {
      if (usable(conn) && (!preferred || id != *preferred)) f.candidates.push_back(id);
    }
    if (f.candidates.empty()) {
      f.cb(Status::Error("blob-no-peers"));
      return;
    }
    const std::uint64_t fid = m_next_blob_fetch++;
    m_blob_fetches.emplace(fid, std::move(f));
    BlobTryNext(fid);
  });
}

void P2PNode::BlobTryNext(std::uint64_t fid) {
  auto it = m_blob_fetches.find(fid);
  if (it == m_blob_fetches.end()) return;
  BlobFetch& f = it->second;
  f.data = Bytes();
  f.have_total = false;
  f.total = 0;
  if (m_stopped) {
    BlobFail(fid, Status::Error("net-stopped"));
    return;
  }
  while (f.next < f.candidates.size()) {
    const PeerId peer = f.candidates[f.next++];
    ConnPtr conn = FindPeer(peer);
    if (!conn || !conn->open() || !conn->session().established) continue;
    f.current = peer;
    BlobRequestChunk(fid);
    return;
  }
  BlobFail(fid, f.last_failure);
}

void P2PNode::BlobRequestChunk(std::uint64_t fid) {
  BlobFetch& f = m_blob_fetches.at(fid);
  ConnPtr conn = FindPeer(f.current);
  if (!conn || !conn->open()) {
    BlobPeerFailed(fid, Status::Error("peer-disconnected"));
    return;
  }
  const std::uint64_t id = m_next_request_id++;
  PendingRequest req;
  req.peer = f.current;
  req.response = MsgType::kBlobChunk;
  req.deadline = Clock::now() + m_config.request_timeout;
  req.blob_fetch = fid;
  m_requests.emplace(id, std::move(req));
  conn->Send(MsgType::kGetBlob, EncodeToBytes(GetBlob{id, f.hash, f.data.size(), m_config.blob_chunk_bytes}));
}

void P2PNode::BlobPeerFailed(std::uint64_t fid, Status status) {
  auto it = m_blob_fetches.find(fid);
  if (it == m_blob_fetches.end()) return;
  // A timeout or a lost peer says nothing about the blob: keep the more
  // telling failure (not found, wrong hash) if a peer gave one.
  BlobFetch& f = it->second;
  if (status.is_invalid()) {
    f.last_failure = std::move(status);
    f.has_invalid_failure = true;
  } else if (!f.has_invalid_failure) {
    f.last_failure = std::move(status);
  }
  BlobTryNext(fid);
}

void P2PNode::BlobFail(std::uint64_t fid, Status status) {
  auto it = m_blob_fetches.find(fid);
  if (it == m_blob_fetches.end()) return;
  BlobCallback cb = std::move(it->second.cb);
  m_blob_fetches.erase(it);
  cb(std::move(status));
}

void P2PNode::HandleGetBlob(const ConnPtr& conn, const Frame& frame) {
  std::optional<GetBlob> req = DecodeOrScore<GetBlob>(conn, frame);
  if (!req) return;
  auto not_found = [&] { conn->Send(MsgType::kBlobNotFound, EncodeToBytes(BlobNotFound{req->request_id, req->hash})); };
  if (m_blobs == nullptr) return not_found();
  const std::optional<std::uint64_t> size = m_blobs->BlobSize(req->hash);
  if (!size) return not_found();
  if (req->offset > *size) {
    Misbehave(conn, penalty::kBadRequest, "blob-bad-offset");
    return;
  }
  const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(req->max_len, *size - req->offset));
  BlobChunk chunk{req->request_id, req->hash, *size, req->offset, {}};
  if (len > 0) {
    Result<Bytes> data = m_blobs->ReadBlob(req->hash, req->offset, len);
    if (!data.ok() || data->size() != len) {
      Log().warn("blob read failed hash={} status={}", req->hash.Hex(),
                 data.ok() ? std::string("short read") : data.status().ToString());
      return not_found();
    }
    chunk.data = std::move(*data);
  }
  ++m_counters.blob_chunks_served;
  conn->Send(MsgType::kBlobChunk, EncodeToBytes(chunk));
}

void P2PNode::HandleBlobChunk(const ConnPtr& conn, const Frame& frame) {
  std::optional<BlobChunk> chunk = DecodeOrScore<BlobChunk>(conn, frame);
  if (!chunk) return;
  std::optional<PendingRequest> req = TakeRequest(conn, chunk->request_id, MsgType::kBlobChunk);
  if (!req) return;
  const std::uint64_t fid = req->blob_fetch;
  auto it = m_blob_fetches.find(fid);
  if (it == m_blob_fetches.end()) return;
  BlobFetch& f = it->second;
  auto bad = [&](const char* reason) {
    Misbehave(conn, penalty::kBadBlob, reason);
    BlobPeerFailed(fid, Status::Invalid(reason));
  };
  if (chunk->hash != f.hash || chunk->offset != f.data.size()) return bad("blob-bad-chunk");
  if (!f.have_total) {
    if (chunk->total_size > m_config.max_blob_bytes) {
      // Not a fault: the blob is just larger than we accept.
      return BlobPeerFailed(fid, Status::Invalid("blob-too-large", std::to_string(chunk->total_size) + " bytes"));
    }
    f.have_total = true;
    f.total = chunk->total_size;
  } else if (chunk->total_size != f.total) {
    return bad("blob-bad-chunk");
  }
  const std::uint64_t remaining = f.total - f.data.size();
  if (chunk->data.size() > m_config.blob_chunk_bytes || chunk->data.size() > remaining ||
      (chunk->data.empty() && remaining > 0)) {
    return bad("blob-bad-chunk");
  }
  f.data.insert(f.data.end(), chunk->data.begin(), chunk->data.end());
  if (f.data.size() < f.total) {
    BlobRequestChunk(fid);
    return;
  }
  if (crypto::Sha256Digest(f.data) != f.hash) return bad("blob-hash-mismatch");
  BlobCallback cb = std::move(f.cb);
  Bytes data = std::move(f.data);
  m_blob_fetches.erase(it);
  cb(std::move(data));
}

void P2PNode::HandleBlobNotFound(const ConnPtr& conn, const Frame& frame) {
  std::optional<BlobNotFound> msg = DecodeOrScore<BlobNotFound>(conn, frame);
  if (!msg) return;
  std::optional<PendingRequest> req = TakeRequest(conn, msg->request_id, MsgType::kBlobChunk);
  if (!req) return;
  BlobPeerFailed(req->blob_fetch, Status::Invalid("blob-not-found"));
}

// ---- misbehaviour and bans ----------------------------------------------------------

bool P2PNode::PeerLogAllowed() {
  std::size_t suppressed = 0;
  if (!m_log_limit.Allow(Clock::now(), &suppressed)) return false;
  if (suppressed > 0) Log().warn("peer-triggered log lines suppressed count={}", suppressed);
  return true;
}

void P2PNode::Misbehave(const ConnPtr& conn, int pen, const std::string& reason) {
  if (!conn->open()) return;
  ++m_counters.misbehaviour;
  PeerSession& s = conn->session();
  s.score += std::max(pen, 0);
  if (PeerLogAllowed()) {
    Log().warn("peer misbehaved peer={} addr={} reason={} penalty={} score={}", conn->id(),
               conn->remote().ToString(), reason, pen, s.score);
  }
  if (s.score < m_config.ban_threshold) return;
  if (s.established) AddBan(NodeKey(s.hello.node_id), reason);
  if (AddressBannable(conn->remote().host)) AddBan(AddrKey(conn->remote().host), reason);
  conn->Close(reason, true);
}

void P2PNode::AddBan(const std::string& key, const std::string& reason) {
  ++m_counters.bans;
  m_bans[key] = Ban{Clock::now() + m_config.ban_duration, reason};
  if (PeerLogAllowed()) Log().warn("banned key={} reason={}", key, reason);
}

bool P2PNode::IsBanned(const std::string& key, Clock::time_point now) const {
  auto it = m_bans.find(key);
  return it != m_bans.end() && it->second.until > now;
}

bool P2PNode::AddressBannable(const std::string& address) const {
  return std::find(m_config.never_ban_addresses.begin(), m_config.never_ban_addresses.end(), address) ==
         m_config.never_ban_addresses.end();
}

void P2PNode::BanNode(const Hash256& node_id, std::chrono::milliseconds duration, std::string reason) {
  asio::post(m_io, [this, node_id, duration, reason = std::move(reason)] {
    m_bans[NodeKey(node_id)] = Ban{Clock::now() + duration, reason};
    ++m_counters.bans;
    for (auto& [id, conn] : m_peers) {
      if (conn->session().established && conn->session().hello.node_id == node_id) conn->Close(reason, true);
    }
  });
}

void P2PNode::AddPeer(Endpoint endpoint) {
  asio::post(m_io, [this, endpoint = std::move(endpoint)] {
    if (m_stopped) return;
    m_targets.push_back(MakeTarget(endpoint));
    Dial(m_targets.size() - 1);
  });
}

void P2PNode::DisconnectPeer(PeerId peer, std::string reason) {
  asio::post(m_io, [this, peer, reason = std::move(reason)] {
    if (ConnPtr conn = FindPeer(peer)) conn->Close(reason, true);
  });
}

// ---- snapshots --------------------------------------------------------------------

P2PNode::ConnPtr P2PNode::FindPeer(PeerId id) const {
  auto it = m_peers.find(id);
  return it == m_peers.end() ? nullptr : it->second;
}

template <typename T, typename F>
T P2PNode::OnIoThread(F&& fn, T fallback) const {
  if (m_io.get_executor().running_in_this_thread()) return fn();
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  asio::post(m_io, [promise, fn] { promise->set_value(fn()); });
  // Bounded: a stopped or blocked io thread must not hang the caller.
  if (future.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return fallback;
  return future.get();
}

std::vector<PeerInfo> P2PNode::PeersOnIo() const {
  std::vector<PeerInfo> out;
  for (const auto& [id, conn] : m_peers) {
    if (conn->open()) out.push_back(conn->Info());
  }
  return out;
}

std::vector<BanEntry> P2PNode::BansOnIo() const {
  const Clock::time_point now = Clock::now();
  std::vector<BanEntry> out;
  for (const auto& [key, ban] : m_bans) {
    if (ban.until <= now) continue;
    out.push_back(BanEntry{key, ban.reason, std::chrono::duration_cast<std::chrono::milliseconds>(ban.until - now)});
  }
  std::sort(out.begin(), out.end(), [](const BanEntry& a, const BanEntry& b) { return a.key < b.key; });
  return out;
}

std::vector<PeerInfo> P2PNode::Peers() const {
  return OnIoThread<std::vector<PeerInfo>>([this] { return PeersOnIo(); }, {});
}

std::vector<BanEntry> P2PNode::Bans() const {
  return OnIoThread<std::vector<BanEntry>>([this] { return BansOnIo(); }, {});
}

std::vector<DisconnectRecord> P2PNode::RecentDisconnects() const {
  return OnIoThread<std::vector<DisconnectRecord>>(
      [this] {
        // Oldest first.
        std::vector<DisconnectRecord> out;
        const std::size_t n = m_recent.size();
        const std::size_t start = n < kRecentDisconnects ? 0 : m_recent_next;
        for (std::size_t i = 0; i < n; ++i) out.push_back(m_recent[(start + i) % n]);
        return out;
      },
      {});
}

P2PStats P2PNode::Stats() const {
  P2PStats s;
  s.connections_in = m_counters.connections_in;
  s.connections_out = m_counters.connections_out;
  s.handshakes = m_counters.handshakes;
  s.disconnects = m_counters.disconnects;
  s.gossip_delivered = m_counters.gossip_delivered;
  s.gossip_duplicates = m_counters.gossip_duplicates;
  s.gossip_rejected = m_counters.gossip_rejected;
  s.gossip_sent = m_counters.gossip_sent;
  s.misbehaviour = m_counters.misbehaviour;
  s.bans = m_counters.bans;
  s.refused_banned = m_counters.refused_banned;
  s.sync_requests_served = m_counters.sync_requests_served;
  s.blob_chunks_served = m_counters.blob_chunks_served;
  return s;
}

}  // namespace vt::net
