// P2PNode: accepting, dialing (with back-off), adding and closing connections.

#include <algorithm>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

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
    if (!rec && IsBanned(AddrKey(host), Clock::now())) {
      ++m_counters.refused_banned;
      boost::system::error_code ignored;
      socket.close(ignored);
    } else if (!rec) {
      ++m_counters.connections_in;
      const bool full = EstablishedInbound() >= m_config.max_inbound;
      if (!full) MakeRoomForPending(host);
      ConnPtr conn = AddConnection(std::move(socket), true, std::nullopt);
      if (full) conn->Close("too-many-peers", true);
    }
    Accept();
  });
}

std::size_t P2PNode::EstablishedInbound() const {
  std::size_t n = 0;
  for (const auto& [id, conn] : m_peers) n += conn->open() && conn->inbound() && conn->session().established ? 1 : 0;
  return n;
}

// Why evict the oldest: an honest handshake takes a round trip and two
// signature operations (about a millisecond on loopback), so an honest
// connection is almost never the oldest pending one; whoever holds
// connections open without finishing loses them first. The per-address bound
// applies only where an address is one party (AddressBannable): on loopback
// every local process shares 127.0.0.1, and the total bound with this
// eviction is what keeps a local flood from shutting out a local testnet.
void P2PNode::MakeRoomForPending(const std::string& host) {
  struct PerAddress {
    std::size_t count = 0;
    ConnPtr oldest;  // m_peers is ordered by id, which grows with time
  };
  std::map<std::string, PerAddress> pending;
  std::size_t total = 0;
  for (const auto& [id, conn] : m_peers) {
    if (!conn->open() || !conn->inbound() || conn->session().established) continue;
    PerAddress& p = pending[conn->remote().host];
    if (p.count++ == 0) p.oldest = conn;
    ++total;
  }
  ConnPtr victim;
  const auto own = pending.find(host);
  if (own != pending.end() && own->second.count >= m_config.max_pending_per_address && AddressBannable(host)) {
    victim = own->second.oldest;
  } else if (total >= m_config.max_pending) {
    const PerAddress* most = nullptr;
    for (const auto& [addr, p] : pending) {
      if (most == nullptr || p.count > most->count ||
          (p.count == most->count && p.oldest->id() < most->oldest->id())) {
        most = &p;
      }
    }
    if (most != nullptr) victim = most->oldest;
  }
  if (!victim) return;
  ++m_counters.handshakes_evicted;
  // A hard close: an unproven connection gets no linger time, so a flood
  // cannot pile up sockets waiting to flush their disconnect frame.
  victim->Close("handshake-evicted", false);
}

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
  StartHandshake(conn);
  return conn;
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

}  // namespace vt::net
