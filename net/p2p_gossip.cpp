// P2PNode: gossip of opaque items (kTx, kBlock, kConsensus), delivered once per content
// id and relayed to every established peer not known to have the item.

#include <utility>

#include <boost/asio/post.hpp>

#include "crypto/sha256.h"
#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

namespace {
// Which frame type carries each gossip kind (one row per kind).
struct GossipRow {
  GossipKind kind;
  MsgType type;
};
constexpr GossipRow kGossipRows[] = {
    {GossipKind::kTx, MsgType::kTx},
    {GossipKind::kBlock, MsgType::kBlock},
    {GossipKind::kConsensus, MsgType::kConsensus},
};

MsgType GossipType(GossipKind kind) {
  for (const GossipRow& row : kGossipRows) {
    if (row.kind == kind) return row.type;
  }
  return MsgType::kBlock;  // unreachable: every kind has a row
}

GossipKind KindOf(MsgType type) {
  for (const GossipRow& row : kGossipRows) {
    if (row.type == type) return row.kind;
  }
  return GossipKind::kBlock;  // unreachable: only gossip types are dispatched here
}
}  // namespace

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

void P2PNode::HandleGossip(const ConnPtr& conn, Frame& frame) {
  const MsgType type = frame.type;
  Bytes payload = std::move(frame.payload);
  const Hash256& id = frame.payload_sha256;
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


}  // namespace vt::net
