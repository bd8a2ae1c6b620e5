#include "net/p2p.h"

#include <algorithm>
#include <future>
#include <limits>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

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
      m_node_key(m_config.node_key),
      m_acceptor(io),
      m_tick_timer(io),
      m_seen(m_config.seen_capacity) {
  std::random_device rd;
  m_rng.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  if (m_node_key) m_node_id = NodeIdOf(m_node_key->public_key());
  if (m_config.user_agent.size() > kMaxUserAgentBytes) m_config.user_agent.resize(kMaxUserAgentBytes);
  m_config.blob_chunk_bytes = std::clamp<std::uint32_t>(m_config.blob_chunk_bytes, 1, kMaxBlobChunk);
  m_config.sync_batch = std::clamp<std::uint32_t>(m_config.sync_batch, 1, kMaxItemsPerResponse);
  m_config.max_pending = std::max<std::size_t>(m_config.max_pending, 1);
  m_config.max_pending_per_address = std::max<std::size_t>(m_config.max_pending_per_address, 1);
}

P2PNode::~P2PNode() = default;

// ---- lifecycle -----------------------------------------------------------------

Status P2PNode::Start() {
  if (m_started) return Status::Error("net-already-started");
  if (m_config.chain_id.size() > kMaxChainIdBytes) {
    return Status::Error("net-bad-config", "chain id longer than 64 bytes");
  }
  if (!m_node_key) {
    // An identity only for this process (tests, throwaway nodes).
    Result<crypto::SecretKey> key = crypto::SecretKey::Generate();
    if (!key.ok()) return Status::Error("net-no-node-key", key.status().ToString());
    m_node_key = std::make_shared<const crypto::SecretKey>(std::move(key).value());
    m_node_id = NodeIdOf(m_node_key->public_key());
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

void P2PNode::OnFrameError(const ConnPtr& conn, const Status& status) {
  if (conn->receiving_sealed()) {
    // After the peer's Auth, bytes that are not a sealed frame of this
    // session (a bad tag, or a header no honest peer sends) may come from a
    // relay on the path as well as from the peer: the connection closes
    // (Connection does it) and nobody's identity or address is blamed.
    ++m_counters.session_failures;
    if (PeerLogAllowed()) {
      Log().warn("session frame failed peer={} addr={} reason={}", conn->id(), conn->remote().ToString(),
                 status.reason());
    }
    return;
  }
  Misbehave(conn, penalty::kGarbage, status.reason());
}

void P2PNode::OnFrame(const ConnPtr& conn, Frame frame) {
  if (!conn->open() || m_stopped) return;
  // The decoder yields only types of the table, so the row exists.
  const MsgSpec& spec = SpecOf(frame.type);
  const PeerSession& s = conn->session();
  if (spec.phase == MsgPhase::kEstablished && !s.established) {
    // Before the proof nothing but the handshake is read: an unproven peer
    // can make us do no work and cannot speak for anyone.
    Misbehave(conn, penalty::kProtocolViolation,
              s.hello_received ? "handshake-expected-auth" : "handshake-expected-hello");
    return;
  }
  if (spec.phase == MsgPhase::kHandshake && s.established) {
    Misbehave(conn, penalty::kProtocolViolation, "handshake-duplicate-" + std::string(spec.name));
    return;
  }
  switch (frame.type) {
#define VT_NET_MSG_DISPATCH(enumerator, wire, name, max_payload, phase, handler) \
  case MsgType::enumerator:                                                     \
    handler(conn, frame);                                                       \
    return;
    VT_NET_MSG_TYPES(VT_NET_MSG_DISPATCH)
#undef VT_NET_MSG_DISPATCH
  }
}

void P2PNode::HandleDisconnect(const ConnPtr& conn, Frame& frame) {
  Result<DisconnectMsg> msg = DecodeExact<DisconnectMsg>(frame.payload);
  conn->Close("remote:" + (msg.ok() ? msg->reason : std::string("?")), false);
}

void P2PNode::HandlePing(const ConnPtr& conn, Frame& frame) {
  if (!DecodeOrScore<PingMsg>(conn, frame)) return;
  conn->Send(MsgType::kPong, std::move(frame.payload));
}

void P2PNode::HandlePong(const ConnPtr& conn, Frame& frame) {
  std::optional<PingMsg> pong = DecodeOrScore<PingMsg>(conn, frame);
  if (!pong) return;
  PeerSession& s = conn->session();
  if (s.ping_nonce && *s.ping_nonce == pong->nonce) {
    s.last_rtt = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - s.last_ping_sent);
    s.ping_nonce.reset();
  }
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
  s.handshakes_evicted = m_counters.handshakes_evicted;
  s.session_failures = m_counters.session_failures;
  return s;
}

}  // namespace vt::net
