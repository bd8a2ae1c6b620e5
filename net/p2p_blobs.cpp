// P2PNode: content-addressed blobs, served in chunks and fetched from peers
// in turn; a blob is delivered only when its SHA-256 matches.

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "crypto/sha256.h"
#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

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

void P2PNode::HandleGetBlob(const ConnPtr& conn, Frame& frame) {
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

void P2PNode::HandleBlobChunk(const ConnPtr& conn, Frame& frame) {
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

void P2PNode::HandleBlobNotFound(const ConnPtr& conn, Frame& frame) {
  std::optional<BlobNotFound> msg = DecodeOrScore<BlobNotFound>(conn, frame);
  if (!msg) return;
  std::optional<PendingRequest> req = TakeRequest(conn, msg->request_id, MsgType::kBlobChunk);
  if (!req) return;
  BlobPeerFailed(req->blob_fetch, Status::Invalid("blob-not-found"));
}


}  // namespace vt::net
