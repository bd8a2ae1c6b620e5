#include "node/node.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <tuple>

#include <boost/asio/post.hpp>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

#include "common/encoding.h"
#include "common/log.h"
#include "crypto/sha256.h"
#include "net/node_key.h"
#include "node/blob_rules.h"
#include "node/json_view.h"
#include "referee/blob_rules.h"
#include "referee/records.h"

namespace vt::node {
namespace {

spdlog::logger& Log() { return log::Get("node"); }

// A block from this far in the future (by our clock) is not applied yet.
constexpr std::uint64_t kMaxFutureMs = 5000;
// How often parked blocks are retried; pending transactions' blobs are
// looked after every kMempoolBlobEvery ticks.
constexpr std::chrono::milliseconds kBlobTickMs{100};
constexpr std::uint64_t kMempoolBlobEvery = 5;
// Expired unpinned blobs are collected every kCollectEvery ticks, at most
// kCollectPerTick at a time (each is one LevelDB write under m_write_mu).
constexpr std::uint64_t kCollectEvery = 10;
constexpr std::size_t kCollectPerTick = 64;

using Rank = std::tuple<std::uint64_t, std::uint64_t, Hash256>;

Rank BlockRank(const GenesisFile& g, const vm::BlockHeader& h) {
  const auto offset = g.ProposerOffset(h.height, h.proposer);
  return {offset.value_or(~std::uint64_t{0}), h.time, vm::BlockHash(h)};
}

Result<vm::Block> DecodeBlock(ByteSpan bytes) {
  auto b = DecodeExact<vm::Block>(bytes);
  if (!b.ok()) return Status::Invalid("block-malformed", b.status().ToString());
  return b;
}

// RPC threads yield the CPU to the producer and the network thread when the
// machine is busy: RPC work (parsing a 60 MB body) must never delay a block.
void LowerThreadPriority() {
#ifdef __linux__
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, tid, std::min(now + 5, 19));
#endif
}

}  // namespace

std::uint64_t NowMs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

Result<std::unique_ptr<Node>> Node::Create(NodeConfig config) {
  VT_ASSIGN_OR_RETURN(auto chain, Chain::Open(config.data_dir / "chain", config.genesis));
  if (!config.node_key) {  // after Chain::Open, which creates the data dir
    if (config.validator_key) {
      config.node_key = std::make_shared<const crypto::SecretKey>(config.validator_key->Clone());
    } else {
      VT_ASSIGN_OR_RETURN(crypto::SecretKey key, net::LoadOrCreateNodeKey(config.data_dir / "node_key"));
      config.node_key = std::make_shared<const crypto::SecretKey>(std::move(key));
    }
  }
  const vm::ChainTip tip = chain->tip();
  Log().info("{} opened chain height={} hash={}", config.name, tip.height, tip.hash.Hex().substr(0, 16));
  return std::unique_ptr<Node>(new Node(std::move(config), std::move(chain)));
}

Node::Node(NodeConfig config, std::unique_ptr<Chain> chain)
    : m_config(std::move(config)),
      m_chain(std::move(chain)),
      m_blobs(m_chain->db()),
      m_mempool(m_config.mempool),
      m_ledger(m_config.blobs) {
  // Unpinned blobs of earlier runs count again (and are collected in time).
  const Status scanned = m_chain->db().ScanUploads([this](const Hash256& h, const UploadRecord& r) {
    m_ledger.Load(h, r);
    return true;
  });
  if (!scanned.ok()) Log().error("{} reading upload records: {}", m_config.name, scanned.ToString());
  net::P2PConfig pc;
  pc.chain_id = m_config.genesis.chain_name + "/" + std::to_string(m_config.genesis.genesis.params.chain_id);
  pc.genesis_hash = m_config.genesis.NetworkHash();
  pc.node_key = m_config.node_key;
  pc.listen_host = m_config.host;
  pc.listen_port = m_config.p2p_port;
  pc.peers = m_config.peers;
  pc.reconnect_max = m_config.reconnect_max;
  pc.user_agent = "vt-node/0.1 " + m_config.name;
  pc.max_blob_bytes = referee::kMaxBlobBytes;
  net::MessageHandler* handler = this;
  net::BlockSource* blocks = this;
  net::BlobStore* blobs = this;
  m_p2p = std::make_unique<net::P2PNode>(m_io, pc, handler, blocks, blobs);
  net::RpcServerConfig rc;
  rc.host = m_config.host;
  rc.port = m_config.rpc_port;
  rc.max_body_bytes = m_config.rpc_max_body;
  rc.max_body_bytes_in_flight = m_config.rpc_body_bytes_in_flight;
  m_rpc = std::make_unique<net::RpcServer>(m_rpc_io, rc);
  m_tip_seen_ms = static_cast<std::int64_t>(NowMs());
  RegisterRpc();
}

Node::~Node() { Stop(); }

Status Node::Start() {
  VT_TRY(m_p2p->Start());
  VT_TRY(m_rpc->Start());
  m_started = true;
  ScheduleBlobTick();
  m_io_thread = std::thread([this] {
    try {
      m_io.run();
    } catch (const std::exception& e) {
      Log().error("io thread stopped: {}", e.what());
    }
  });
  for (std::size_t i = 0; i < std::max<std::size_t>(m_config.rpc_threads, 1); ++i) {
    m_rpc_threads.emplace_back([this] {
      LowerThreadPriority();
      try {
        m_rpc_io.run();
      } catch (const std::exception& e) {
        Log().error("rpc thread stopped: {}", e.what());
      }
    });
  }
  if (m_config.validator_key) m_producer = std::thread([this] { ProducerLoop(); });
  Log().info("{} started p2p={} rpc={} validator={}", m_config.name, p2p_port(), rpc_port(),
             m_config.validator_key ? m_config.validator_key->public_key().Hex().substr(0, 16) : "no");
  return Status::Ok();
}

void Node::Stop() {
  if (m_stopping.exchange(true)) return;
  {
    std::lock_guard lock(m_wake_mu);
  }
  m_wake.notify_all();
  if (m_producer.joinable()) m_producer.join();
  // RPC first: a handler may still wait on the io thread (peer snapshots).
  if (m_started) m_rpc->Stop();
  for (std::thread& t : m_rpc_threads)
    if (t.joinable()) t.join();
  if (m_started) {
    m_p2p->Stop();
    boost::asio::post(m_io, [this] { m_blob_timer.cancel(); });
  }
  if (m_io_thread.joinable()) m_io_thread.join();
  const vm::ChainTip tip = m_chain->tip();
  Log().info("{} stopped at height={}", m_config.name, tip.height);
}

std::uint16_t Node::p2p_port() const { return m_p2p->listen_port(); }
std::uint16_t Node::rpc_port() const { return m_rpc->port(); }

NodeStats Node::stats() const {
  std::lock_guard lock(m_stats_mu);
  return m_stats;
}

// ---- transactions ------------------------------------------------------------------

Result<Hash256> Node::SubmitTransaction(const vm::Transaction& tx) { return Submit(tx, true); }

Result<Hash256> Node::Submit(const vm::Transaction& tx, bool broadcast) {
  const Hash256 id = vm::TxId(tx);
  if (m_mempool.Contains(id)) return Status::Invalid("mempool-duplicate");
  VT_ASSIGN_OR_RETURN(auto where, m_chain->db().FindTx(id));
  if (where) return Status::Invalid("tx-already-included", "at height " + std::to_string(where->height));
  VT_ASSIGN_OR_RETURN(const vm::Account account, m_chain->CheckTransaction(tx));
  // Named blobs: one we hold must verify; missing ones are fetched now, so
  // they travel with the transaction (as blob sidecars do).
  if (const auto named = referee::NamedBlobs(tx); !named.empty()) {
    const BlobGate::Check check = m_blobs.Examine(named);
    if (check.state == BlobGate::State::kInvalid) return Status::Invalid("tx-blob-invalid", check.why.ToString());
    for (const Hash256& h : check.missing) (void)FetchBlobFromPeers(h);
  }
  Bytes bytes = vm::EncodeTransaction(tx);
  VT_ASSIGN_OR_RETURN(const std::vector<Displaced> displaced, m_mempool.Add(tx, bytes.size(), account));
  for (const Displaced& d : displaced)
    Log().info("{} dropped tx {} from the mempool: {} by {}", m_config.name, d.tx_id.Hex().substr(0, 16), d.reason,
               id.Hex().substr(0, 16));
  {
    std::lock_guard lock(m_stats_mu);
    ++m_stats.txs_accepted;
  }
  if (broadcast) (void)m_p2p->Broadcast(net::GossipKind::kTx, std::move(bytes));
  m_wake.notify_all();
  return id;
}

std::uint64_t Node::NextNonce(const crypto::Address& address) const {
  std::uint64_t next = AccountNonce(address);
  // Pending transactions of this sender with consecutive nonces.
  for (std::uint64_t n : m_mempool.PendingNonces(address))
    if (n == next) ++next;
  return next;
}

std::uint64_t Node::AccountNonce(const crypto::Address& address) const {
  auto account = vm::ReadAccount(m_chain->db(), address);
  return account.ok() ? account->nonce : 0;
}

void Node::Readmit(const vm::Transaction& tx) {
  auto account = m_chain->CheckTransaction(tx);
  if (account.ok()) (void)m_mempool.Add(tx, vm::EncodeTransaction(tx).size(), *account);
}

// ---- blocks ------------------------------------------------------------------------

std::optional<Hash256> Node::HashAt(std::uint64_t height) const {
  if (height == 0) return vm::GenesisHash(m_config.genesis.genesis);
  auto b = m_chain->db().BlockAt(height);
  if (!b.ok() || !*b) return std::nullopt;
  return vm::BlockHash((*b)->header);
}

void Node::AfterBlock(const vm::Block& block) {
  std::vector<Hash256> ids;
  ids.reserve(block.txs.size());
  for (const vm::Transaction& tx : block.txs) ids.push_back(vm::TxId(tx));
  m_mempool.Remove(ids);
  // Blobs the block named are pinned now (ChainDb::CommitBlock): no longer anyone's quota.
  for (const referee::BlobRequirement& req : BlockBlobs(block)) m_ledger.Forget(req.hash);
  // Transactions whose nonce the chain has passed can never apply.
  m_mempool.DropStale([this](const crypto::Address& a) { return AccountNonce(a); });
  m_tip_seen_ms = static_cast<std::int64_t>(NowMs());
  m_wake.notify_all();
}

Status Node::ApplyBlockLocked(const vm::Block& block) {
  auto r = m_chain->AddBlock(block);
  if (!r.ok()) return r.status();
  AfterBlock(block);
  return Status::Ok();
}

net::Verdict Node::HandleBlock(net::PeerId from, const vm::Block& block) {
  if (!vm::VerifyBlockSignature(block.header)) return net::Verdict::Reject("block-bad-signature");
  if (block.header.chain_id != m_config.genesis.genesis.params.chain_id)
    return net::Verdict::Reject("block-wrong-chain");
  if (!m_config.genesis.ProposerOffset(block.header.height, block.header.proposer))
    return net::Verdict::Reject("block-bad-proposer");
  if (block.header.time > NowMs() + kMaxFutureMs) return net::Verdict::Ignore("block-from-future");
  std::lock_guard lock(m_write_mu);
  const vm::ChainTip tip = m_chain->tip();
  const std::uint64_t h = block.header.height;
  if (h == tip.height + 1) {
    if (block.header.parent_hash != tip.hash) {
      ResolveFork(from, tip.height, 0);
      return net::Verdict::Ignore("block-fork");
    }
    if (auto gated = GateBlock(from, block)) return *gated;
    Status s = ApplyBlockLocked(block);
    if (!s.ok()) return net::Verdict::FromStatus(s);
    std::lock_guard slock(m_stats_mu);
    ++m_stats.blocks_applied;
    return net::Verdict::Accept();
  }
  if (h > tip.height + 1) {
    m_p2p->StartSync();
    return net::Verdict::Ignore("block-ahead");
  }
  // A block for a height we have: switch only for a better sibling of our tip.
  if (h != tip.height || vm::BlockHash(block.header) == tip.hash) return net::Verdict::Ignore("block-old");
  auto ours = m_chain->db().BlockAt(h);
  if (!ours.ok() || !*ours) return net::Verdict::Ignore("block-old");
  if (block.header.parent_hash != (*ours)->header.parent_hash) return net::Verdict::Ignore("block-old");
  if (!(BlockRank(m_config.genesis, block.header) < BlockRank(m_config.genesis, (*ours)->header)))
    return net::Verdict::Ignore("block-worse-sibling");
  if (auto gated = GateBlock(from, block)) return *gated;
  auto removed = m_chain->Rollback();
  if (!removed.ok()) return net::Verdict::Ignore("rollback-failed");
  Status s = ApplyBlockLocked(block);
  if (!s.ok()) {
    (void)ApplyBlockLocked(*removed);  // keep ours
    return net::Verdict::FromStatus(s);
  }
  for (const vm::Transaction& tx : removed->txs) Readmit(tx);
  Log().info("{} switched to a better block at height={} proposer={}", m_config.name, h,
             ToHex(block.header.proposer).substr(0, 8));
  std::lock_guard slock(m_stats_mu);
  ++m_stats.reorgs;
  return net::Verdict::Accept();
}

void Node::ResolveFork(net::PeerId peer, std::uint64_t from_height, std::uint64_t depth) {
  if (m_resolving && depth == 0) return;
  if (from_height == 0 || depth > kMaxReorgDepth) {
    m_resolving = false;
    return;
  }
  m_resolving = true;
  m_p2p->RequestBlocks(peer, from_height, static_cast<std::uint32_t>(kMaxReorgDepth * 2),
                       [this, peer, from_height, depth](Result<net::ItemsResponse> r) {
                         if (!r.ok() || r->items.empty()) {
                           m_resolving = false;
                           return;
                         }
                         OnForkBlocks(peer, from_height, depth, r->items);
                       });
}

void Node::OnForkBlocks(net::PeerId peer, std::uint64_t from_height, std::uint64_t depth,
                        const std::vector<Bytes>& items) {
  std::vector<vm::Block> theirs;
  for (const Bytes& b : items) {
    auto blk = DecodeBlock(b);
    if (!blk.ok()) {
      m_resolving = false;
      return;
    }
    theirs.push_back(std::move(*blk));
  }
  std::unique_lock lock(m_write_mu);
  const auto anchor = HashAt(from_height - 1);
  if (!anchor || theirs.front().header.parent_hash != *anchor) {
    lock.unlock();
    ResolveFork(peer, from_height - 1, depth + 1);  // the fork is further back
    return;
  }
  m_resolving = false;
  // Skip the blocks we share.
  std::size_t first_diff = 0;
  while (first_diff < theirs.size()) {
    const auto ours = HashAt(from_height + first_diff);
    if (!ours || *ours != vm::BlockHash(theirs[first_diff].header)) break;
    ++first_diff;
  }
  if (first_diff == theirs.size()) return;
  const std::uint64_t fork_height = from_height + first_diff;
  const vm::ChainTip tip = m_chain->tip();
  const std::uint64_t their_top = from_height + theirs.size() - 1;
  bool better = their_top > tip.height;
  if (their_top == tip.height && fork_height <= tip.height) {
    auto ours = m_chain->db().BlockAt(fork_height);
    better = ours.ok() && *ours &&
             BlockRank(m_config.genesis, theirs[first_diff].header) < BlockRank(m_config.genesis, (*ours)->header);
  }
  if (!better) return;
  // Their blocks must have their blobs before we leave ours (those still
  // missing are parked and fetched; the fork is resolved again later).
  for (std::size_t i = first_diff; i < theirs.size(); ++i)
    if (GateBlock(peer, theirs[i])) return;
  std::vector<vm::Block> removed;
  while (m_chain->tip().height >= fork_height) {
    auto b = m_chain->Rollback();
    if (!b.ok()) {
      Log().error("{} rollback failed: {}", m_config.name, b.status().ToString());
      return;
    }
    removed.push_back(std::move(*b));
  }
  std::size_t applied = 0;
  Status failure;
  for (std::size_t i = first_diff; i < theirs.size(); ++i) {
    failure = ApplyBlockLocked(theirs[i]);
    if (!failure.ok()) break;
    ++applied;
  }
  if (!failure.ok() && m_chain->tip().height < tip.height) {
    // Their branch was bad and not longer after all: go back to ours.
    for (std::size_t i = 0; i < applied; ++i) (void)m_chain->Rollback();
    for (auto it = removed.rbegin(); it != removed.rend(); ++it) (void)ApplyBlockLocked(*it);
    Log().warn("{} fork from peer rejected: {}", m_config.name, failure.ToString());
    return;
  }
  for (const vm::Block& b : removed)
    for (const vm::Transaction& tx : b.txs) Readmit(tx);
  Log().info("{} reorganised: rolled back {} block(s) from height {}, now at {}", m_config.name, removed.size(),
             fork_height, m_chain->tip().height);
  std::lock_guard slock(m_stats_mu);
  ++m_stats.reorgs;
}

net::Verdict Node::OnGossip(net::PeerId from, net::GossipKind kind, const Hash256& id, ByteSpan payload) {
  (void)id;
  if (kind == net::GossipKind::kTx) {
    auto tx = vm::DecodeTransaction(payload);
    if (!tx.ok()) return net::Verdict::Reject("tx-malformed", net::penalty::kGarbage);
    auto r = Submit(*tx, false);
    if (r.ok()) return net::Verdict::Accept();
    // A tx that is stale or already known is not the peer's fault.
    return net::Verdict::Ignore(r.status().reason());
  }
  // BFT consensus messages (docs/node.md, "BFT finality") are not used by this node yet.
  if (kind == net::GossipKind::kConsensus) return net::Verdict::Ignore("consensus-not-enabled");
  auto block = DecodeBlock(payload);
  if (!block.ok()) return net::Verdict::Reject("block-malformed", net::penalty::kGarbage);
  return HandleBlock(from, *block);
}

net::Verdict Node::OnSyncBlocks(net::PeerId from, std::uint64_t first_height, const std::vector<Bytes>& blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto block = DecodeBlock(blocks[i]);
    if (!block.ok()) return net::Verdict::Reject("block-malformed", net::penalty::kGarbage);
    if (!vm::VerifyBlockSignature(block->header)) return net::Verdict::Reject("block-bad-signature");
    std::lock_guard lock(m_write_mu);
    const vm::ChainTip tip = m_chain->tip();
    if (block->header.height <= tip.height) continue;
    if (block->header.height != tip.height + 1 || block->header.parent_hash != tip.hash) {
      if (!m_resolving) ResolveFork(from, tip.height, 0);
      return net::Verdict::Ignore("sync-fork");
    }
    if (auto gated = GateBlock(from, *block)) return *gated;
    Status s = ApplyBlockLocked(*block);
    if (!s.ok()) return net::Verdict::FromStatus(s);
    std::lock_guard slock(m_stats_mu);
    ++m_stats.blocks_applied;
  }
  (void)first_height;
  return net::Verdict::Accept();
}

std::uint64_t Node::TipHeight() const { return m_chain->tip().height; }

std::optional<Bytes> Node::BlockAt(std::uint64_t height) const {
  auto b = m_chain->db().BlockBytesAt(height);
  if (!b.ok()) return std::nullopt;
  return *b;
}

Result<std::shared_ptr<const Bytes>> Node::CachedBlob(const Hash256& hash) const {
  std::lock_guard lock(m_blob_cache_mu);
  if (m_cached_blob && m_cached_blob_hash == hash) return m_cached_blob;
  VT_ASSIGN_OR_RETURN(auto b, m_chain->db().GetBlob(hash));
  if (!b) return std::shared_ptr<const Bytes>();
  m_cached_blob = std::make_shared<const Bytes>(std::move(*b));
  m_cached_blob_hash = hash;
  return m_cached_blob;
}

std::optional<std::uint64_t> Node::BlobSize(const Hash256& hash) const {
  auto b = CachedBlob(hash);
  if (!b.ok() || !*b) return std::nullopt;
  return (*b)->size();
}

Result<Bytes> Node::ReadBlob(const Hash256& hash, std::uint64_t offset, std::uint32_t len) const {
  VT_ASSIGN_OR_RETURN(std::shared_ptr<const Bytes> b, CachedBlob(hash));
  if (!b) return Status::Invalid("blob-not-found");
  const auto end = std::min<std::uint64_t>(b->size(), offset + len);
  return Bytes(b->begin() + static_cast<std::ptrdiff_t>(offset), b->begin() + static_cast<std::ptrdiff_t>(end));
}

Status Node::FetchBlobFromPeers(const Hash256& hash) {
  {
    std::lock_guard lock(m_blob_mu);
    BlobFetchState& st = m_blob_fetches[hash];
    if (st.in_flight) return Status::Ok();
    if (!st.last_failure.ok() && NowMs() < st.failed_at_ms + 1000) return st.last_failure;
    st.in_flight = true;
  }
  m_p2p->FetchBlob(hash, [this, hash](Result<Bytes> bytes) {
    // P2PNode checked SHA-256(bytes) == hash before calling back. Fetched
    // blobs count in the node's total of unpinned blobs, like uploads.
    Status s = bytes.status();
    if (s.ok()) {
      m_ledger.AdmitFetched(hash, bytes->size(), NowMs());
      s = m_chain->db().PutBlob(*bytes, UploadRecord{std::nullopt, bytes->size(), NowMs()}).status();
      if (!s.ok()) m_ledger.Forget(hash);
    }
    std::lock_guard lock(m_blob_mu);
    if (s.ok()) {
      m_blob_fetches.erase(hash);
      return;
    }
    BlobFetchState& st = m_blob_fetches[hash];
    st.in_flight = false;
    st.last_failure = s;
    st.failed_at_ms = NowMs();
    Log().info("blob fetch failed hash={} reason={}", hash.Hex().substr(0, 16), s.ToString());
  });
  return Status::Ok();
}

// ---- blob availability ---------------------------------------------------------------

std::vector<vm::Transaction> Node::WithBlobsReady(std::vector<vm::Transaction> candidates) {
  std::vector<vm::Transaction> out;
  out.reserve(candidates.size());
  std::set<std::array<std::uint8_t, 32>> waiting;  // senders with a tx held back: their later nonces wait too (no gap)
  for (vm::Transaction& tx : candidates) {
    if (waiting.count(tx.sender)) continue;
    const auto named = referee::NamedBlobs(tx);
    if (named.empty() || m_blobs.Examine(named).state == BlobGate::State::kReady) {
      out.push_back(std::move(tx));
    } else {
      waiting.insert(tx.sender);  // BlobTick fetches its blobs or drops it
    }
  }
  return out;
}

std::optional<net::Verdict> Node::GateBlock(net::PeerId from, const vm::Block& block) {
  const auto named = BlockBlobs(block);
  if (named.empty()) return std::nullopt;
  const BlobGate::Check check = m_blobs.Examine(named);
  switch (check.state) {
    case BlobGate::State::kReady:
      return std::nullopt;
    case BlobGate::State::kInvalid:
      Log().warn("{} block {} rejected: {}", m_config.name, block.header.height, check.why.ToString());
      return net::Verdict::Reject("block-blob-invalid");
    case BlobGate::State::kMissing:
      break;
  }
  for (const Hash256& h : check.missing) (void)FetchBlobFromPeers(h);
  m_blobs.Park(from, block, NowMs());
  return net::Verdict::Ignore("block-blobs-pending");
}

void Node::ScheduleBlobTick() {
  m_blob_timer.expires_after(kBlobTickMs);
  m_blob_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || m_stopping) return;
    BlobTick();
    ScheduleBlobTick();
  });
}

void Node::BlobTick() {
  const std::uint64_t now = NowMs();
  for (const BlobGate::Parked& p : m_blobs.ParkedBlocks()) {
    const Hash256 hash = vm::BlockHash(p.block.header);
    if (now > p.since_ms + BlobGate::kBlockWaitMs) {
      m_blobs.Unpark(hash);
      Log().warn("{} block {} ({}) not accepted: its named blobs did not arrive within {} ms", m_config.name,
                 p.block.header.height, hash.Hex().substr(0, 16), BlobGate::kBlockWaitMs);
      continue;
    }
    const BlobGate::Check check = m_blobs.Examine(BlockBlobs(p.block));
    if (check.state == BlobGate::State::kMissing) {
      for (const Hash256& h : check.missing) (void)FetchBlobFromPeers(h);
      continue;
    }
    m_blobs.Unpark(hash);
    // Ready (applied now, or refused if no longer fitting), or invalid (refused again by the gate).
    const net::Verdict v = HandleBlock(p.from, p.block);
    if (v.kind == net::Verdict::Kind::kAccept) {
      (void)m_p2p->Broadcast(net::GossipKind::kBlock, EncodeToBytes(p.block));  // relay what we held back
      m_p2p->StartSync();
    }
  }
  ++m_blob_ticks;
  if (m_blob_ticks % kCollectEvery == 0) CollectBlobs(now);
  if (m_blob_ticks % kMempoolBlobEvery != 0) return;
  // Pending transactions: fetch what they name; drop those whose blobs are
  // invalid or never came (their sender withholds them).
  std::vector<Hash256> dead;
  // (Each sender's run of next nonces: what a block could take now.)
  const auto nonce_of = [this](const crypto::Address& a) { return AccountNonce(a); };
  for (const vm::Transaction& tx : m_mempool.Candidates(~std::size_t{0}, nonce_of)) {
    const auto named = referee::NamedBlobs(tx);
    if (named.empty()) continue;
    const Hash256 id = vm::TxId(tx);
    const BlobGate::Check check = m_blobs.Examine(named);
    if (check.state == BlobGate::State::kReady) {
      m_blobs.ForgetTx(id);
      continue;
    }
    if (check.state == BlobGate::State::kInvalid) {
      Log().warn("{} dropped tx {}: {}", m_config.name, id.Hex().substr(0, 16), check.why.ToString());
    } else {
      for (const Hash256& h : check.missing) (void)FetchBlobFromPeers(h);
      if (!m_blobs.TxWaitedTooLong(id, now)) continue;
      Log().warn("{} dropped tx {}: tx-blobs-unavailable ({} named blob(s) missing after {} ms)", m_config.name,
                 id.Hex().substr(0, 16), check.missing.size(), BlobGate::kTxWaitMs);
    }
    m_blobs.ForgetTx(id);
    dead.push_back(id);
  }
  m_mempool.Remove(dead);
}

void Node::CollectBlobs(std::uint64_t now_ms) {
  const std::vector<Hash256> expired = m_ledger.Expired(now_ms, kCollectPerTick);
  if (expired.empty()) return;
  // Under the block-write lock: no block pins a blob between the check and
  // the delete, and the producer is not between choosing and proposing.
  std::lock_guard lock(m_write_mu);
  std::set<Hash256> in_use;
  const auto nonce_of = [this](const crypto::Address& a) { return AccountNonce(a); };
  for (const vm::Transaction& tx : m_mempool.Candidates(~std::size_t{0}, nonce_of))
    for (const referee::BlobRequirement& req : referee::NamedBlobs(tx)) in_use.insert(req.hash);
  std::size_t collected = 0;
  for (const Hash256& h : expired) {
    if (in_use.count(h)) continue;  // a pending transaction still needs it
    const Status s = m_chain->db().CollectBlob(h);
    if (!s.ok()) {
      Log().error("{} collecting blob {}: {}", m_config.name, h.Hex().substr(0, 16), s.ToString());
      return;
    }
    m_ledger.Forget(h);
    ++collected;
  }
  if (collected > 0)
    Log().info("{} collected {} unpinned blob(s) older than {} ms", m_config.name, collected, m_config.blobs.grace_ms);
}

Result<Hash256> Node::PutUploadedBlob(const Bytes& data, std::string_view uploader, std::string_view signature) {
  if (data.empty()) return Status::Invalid("blob-empty", "a blob has at least one byte");
  if (data.size() > referee::kMaxBlobBytes)
    return Status::Invalid("blob-too-large", std::to_string(data.size()) + " bytes, the limit is " +
                                                 std::to_string(referee::kMaxBlobBytes));
  const vm::ChainParams& params = m_config.genesis.genesis.params;
  const Hash256 hash = crypto::Sha256Digest(data);
  VT_ASSIGN_OR_RETURN(const crypto::PublicKey key,
                      CheckUploadSignature(params.chain_id, hash, data.size(), uploader, signature));
  // Already here (pinned, or stored by anyone): nothing to store or charge.
  VT_ASSIGN_OR_RETURN(const bool pinned, m_chain->db().IsPinned(hash));
  if (pinned || m_ledger.Contains(hash)) return hash;
  VT_ASSIGN_OR_RETURN(const vm::Account account, vm::ReadAccount(m_chain->db(), key.address()));
  const std::uint64_t now = NowMs();
  VT_TRY(m_ledger.Admit(hash, key.address(), data.size(), account.balance, params.min_gas_price, now));
  auto stored = m_chain->db().PutBlob(data, UploadRecord{key.address(), data.size(), now});
  if (!stored.ok()) m_ledger.Forget(hash);
  return stored;
}

// ---- producer ------------------------------------------------------------------------

void Node::ProducerLoop() {
  const GenesisFile& g = m_config.genesis;
  const crypto::SecretKey& key = *m_config.validator_key;
  while (!m_stopping) {
    std::uint64_t wait_ms = 20;
    {
      std::unique_lock lock(m_write_mu);
      const vm::ChainTip tip = m_chain->tip();
      const auto offset = g.ProposerOffset(tip.height + 1, key.public_key().bytes());
      const std::uint64_t now = NowMs();
      bool produce = false;
      std::uint64_t time = 0;
      if (offset) {
        if (g.instant()) {
          // Instant mode: a block as soon as there are transactions, else an
          // empty one every proposer_timeout_ms so that block clocks run.
          const std::uint64_t idle_at = tip.time + g.proposer_timeout_ms;
          produce = m_mempool.size() > 0 || now >= idle_at;
          time = std::max(now, tip.time);
          if (!produce) wait_ms = std::min<std::uint64_t>(idle_at - now, 50);
        } else {
          // The rule allows us at EarliestTime(parent); locally we also wait
          // the same schedule from when we saw the tip, so that after a long
          // pause the validators do not all propose at once.
          const std::uint64_t by_rule = g.EarliestTime(tip.time, *offset);
          const std::uint64_t by_seen =
              static_cast<std::uint64_t>(m_tip_seen_ms.load()) + g.block_interval_ms + *offset * g.proposer_timeout_ms;
          const std::uint64_t at = std::max(by_rule, by_seen);
          produce = now >= at;
          time = std::max(now, by_rule);
          if (!produce) wait_ms = std::min<std::uint64_t>(at - now, 50);
        }
      }
      if (produce) {
        std::vector<vm::RejectedTx> rejected;
        auto candidates = WithBlobsReady(
            m_mempool.Candidates(m_config.max_block_txs, [this](const crypto::Address& a) { return AccountNonce(a); }));
        auto result = m_chain->Produce(candidates, time, key, &rejected);
        if (!result.ok() && !candidates.empty()) {
          // Only a failing store makes Produce fail; whatever the cause, the
          // chain goes on: an empty block keeps the block clock running.
          Log().error("{} could not produce block {} with {} tx(s): {}; proposing it empty", m_config.name,
                      tip.height + 1, candidates.size(), result.status().ToString());
          rejected.clear();
          result = m_chain->Produce({}, time, key, &rejected);
        }
        if (!result.ok()) {
          Log().error("{} could not produce block {}: {}", m_config.name, tip.height + 1,
                      result.status().ToString());
          wait_ms = 200;
        } else {
          AfterBlock(result->block);
          // Drop what can never apply, with its reason; keep what waits for
          // an earlier nonce or for room in a later block.
          std::vector<Hash256> dead;
          for (const vm::RejectedTx& r : rejected) {
            const std::string& why = r.status.reason();
            if (why == vm::reasons::kBadNonce || why == vm::reasons::kGasOverBlock) continue;
            Log().info("{} dropped tx {} from the mempool: {}", m_config.name, r.tx_id.Hex().substr(0, 16),
                       r.status.ToString());
            dead.push_back(r.tx_id);
          }
          m_mempool.Remove(dead);
          {
            std::lock_guard slock(m_stats_mu);
            ++m_stats.blocks_produced;
          }
          (void)m_p2p->Broadcast(net::GossipKind::kBlock, EncodeToBytes(result->block));
          wait_ms = 0;
        }
      }
    }
    if (wait_ms > 0) {
      std::unique_lock lock(m_wake_mu);
      if (!m_stopping) m_wake.wait_for(lock, std::chrono::milliseconds(wait_ms));
    }
  }
}

}  // namespace vt::node
