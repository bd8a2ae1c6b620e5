#pragma once
// Private to the net/p2p*.cpp files that together implement P2PNode: each
// holds one concern (p2p.cpp lifecycle and dispatch, p2p_connections.cpp,
// p2p_handshake.cpp, p2p_gossip.cpp, p2p_sync.cpp, p2p_blobs.cpp,
// p2p_bans.cpp). Not included anywhere else.

#include <optional>
#include <string>

#include "common/encoding.h"
#include "common/log.h"
#include "net/p2p.h"

namespace vt::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace p2p_detail {

// Disconnects kept for RecentDisconnects().
inline constexpr std::size_t kRecentDisconnects = 64;

inline spdlog::logger& Log() { return vt::log::Get("net"); }

// Ban keys (BanEntry::key): a proven node id, or an IP address.
inline std::string NodeKey(const Hash256& id) { return "node:" + id.Hex(); }
inline std::string AddrKey(const std::string& host) { return "addr:" + host; }

}  // namespace p2p_detail

template <typename T>
std::optional<T> P2PNode::DecodeOrScore(const ConnPtr& conn, const Frame& frame) {
  Result<T> decoded = DecodeExact<T>(frame.payload);
  if (!decoded.ok()) {
    Misbehave(conn, penalty::kGarbage, decoded.status().reason());
    return std::nullopt;
  }
  return std::move(decoded).value();
}

}  // namespace vt::net
