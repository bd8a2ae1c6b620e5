// P2PNode: misbehaviour scores and bans. Scores live with the connection;
// bans name a proven node id (never a claimed one: an id is proven only after
// the handshake, net/p2p_handshake.cpp) or an address that is not exempt.

#include <algorithm>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

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
  // Before the handshake proof the node id is only a claim (anyone can claim
  // an honest validator's id): only the address answers for it then.
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
  boost::system::error_code ec;
  const asio::ip::address parsed = asio::ip::make_address(address, ec);
  if (ec) return false;  // not an address we could refuse at accept anyway
  if (m_config.never_ban_loopback && parsed.is_loopback()) return false;
  const auto same = [&](const std::string& other) {
    boost::system::error_code oec;
    const asio::ip::address o = asio::ip::make_address(other, oec);
    return !oec && o == parsed;
  };
  if (std::any_of(m_config.never_ban_addresses.begin(), m_config.never_ban_addresses.end(), same)) return false;
  return std::none_of(m_targets.begin(), m_targets.end(),
                      [&](const DialTarget& t) { return same(t.endpoint.host); });
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

}  // namespace vt::net
