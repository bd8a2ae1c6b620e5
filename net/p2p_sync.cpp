// P2PNode: serving and requesting blocks and headers by height, and
// auto-sync from the peer with the greatest announced height.

#include <algorithm>
#include <limits>
#include <utility>

#include <boost/asio/post.hpp>

#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

namespace {
// Encoded Items without its items: request id, height, count varint.
constexpr std::size_t kItemsEnvelope = 8 + 8 + kMaxVarintBytes;
static_assert(kMaxSyncItemBytes + kMaxVarintBytes + kItemsEnvelope <= kMaxFramePayload,
              "a largest sync item fits one blocks frame");
}  // namespace

void P2PNode::HandleGetItems(const ConnPtr& conn, Frame& frame) {
  std::optional<GetItems> req = DecodeOrScore<GetItems>(conn, frame);
  if (!req) return;
  const bool headers = frame.type == MsgType::kGetHeaders;
  const MsgType response_type = headers ? MsgType::kHeaders : MsgType::kBlocks;
  Items resp{req->request_id, req->from_height, {}};
  ++m_counters.sync_requests_served;
  if (m_blocks != nullptr) {
    const std::size_t frame_limit = MaxPayload(response_type) - kItemsEnvelope;
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
      // The first item may pass max_response_bytes (a largest block with its
      // certificate does), never the frame: otherwise it could not be served.
      if (item->size() > kMaxSyncItemBytes || bytes + cost > (resp.items.empty() ? frame_limit : limit)) break;
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

void P2PNode::HandleItems(const ConnPtr& conn, Frame& frame) {
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


}  // namespace vt::net
