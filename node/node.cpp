#include "node/node.h"

#include <algorithm>
#include <chrono>
#include <future>
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
#include "consensus/wire.h"
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

// Sync serves a final block as block ‖ certificate: it must fit one sync item.
static_assert(limits::kMaxBlockBytes + kMaxVarintBytes + consensus::kMaxCertificateBytes <= net::kMaxSyncItemBytes);

// Round timeouts from the genesis timing (docs/node.md, "BFT finality"):
// the round-0 proposer builds block_interval_ms after the parent's time, so
// the others wait that long plus proposer_timeout_ms for its proposal. In
// instant mode the one validator builds an idle block after
// proposer_timeout_ms; its own propose timeout must not fire first.
consensus::Timeouts ConsensusTimeouts(const GenesisFile& g) {
  consensus::Timeouts t;
  const std::uint64_t step = std::max<std::uint64_t>(g.proposer_timeout_ms / 2, 100);
  t.propose_ms = g.instant() ? 2 * g.proposer_timeout_ms + step : g.block_interval_ms + g.proposer_timeout_ms;
  t.prevote_ms = step;
  t.precommit_ms = step;
  t.delta_ms = step;
  return t;
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
  std::unique_ptr<Node> node(new Node(std::move(config), std::move(chain)));
  const NodeConfig& c = node->m_config;
  DriverConfig dc;
  dc.name = c.name;
  dc.chain_id = c.genesis.genesis.params.chain_id;
  for (const Validator& v : c.genesis.validators) dc.validators.push_back(v.pubkey);
  dc.key = c.validator_key ? &*c.validator_key : nullptr;
  dc.timeouts = ConsensusTimeouts(c.genesis);
  dc.state_file = c.data_dir / "consensus_state";
  dc.adversary = c.test_adversary;
  FinalityApp& app = *node;
  VT_ASSIGN_OR_RETURN(node->m_driver, ConsensusDriver::Create(node->m_io, *node->m_p2p, app, std::move(dc)));
  return node;
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
  RegisterRpc();
}

Node::~Node() { Stop(); }

Status Node::Start() {
  VT_TRY(m_p2p->Start());
  VT_TRY(m_rpc->Start());
  m_started = true;
  ScheduleBlobTick();
  // The driver runs on the io thread: started there before anything else.
  std::promise<Status> consensus_started;
  auto consensus = consensus_started.get_future();
  boost::asio::post(m_io, [this, &consensus_started] { consensus_started.set_value(m_driver->Start()); });
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
  if (Status s = consensus.get(); !s.ok()) return s;
  Log().info("{} started p2p={} rpc={} validator={}", m_config.name, p2p_port(), rpc_port(),
             m_config.validator_key ? m_config.validator_key->public_key().Hex().substr(0, 16) : "no");
  return Status::Ok();
}

void Node::Stop() {
  if (m_stopping.exchange(true)) return;
  // RPC first: a handler may still wait on the io thread (peer snapshots).
  if (m_started) m_rpc->Stop();
  for (std::thread& t : m_rpc_threads)
    if (t.joinable()) t.join();
  if (m_started) {
    boost::asio::post(m_io, [this] { m_driver->Stop(); });
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

std::optional<DriverStats> Node::ConsensusStats() {
  // Shared: the handler may run after a timed-out caller has returned.
  auto result = std::make_shared<std::promise<DriverStats>>();
  auto answer = result->get_future();
  boost::asio::post(m_io, [this, result] { result->set_value(m_driver->stats()); });
  if (answer.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::nullopt;
  return answer.get();
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

// ---- blocks ------------------------------------------------------------------------

void Node::AfterBlock(const vm::Block& block) {
  std::vector<Hash256> ids;
  ids.reserve(block.txs.size());
  for (const vm::Transaction& tx : block.txs) ids.push_back(vm::TxId(tx));
  m_mempool.Remove(ids);
  // Blobs the block named are pinned now (ChainDb::CommitBlock): no longer anyone's quota.
  for (const referee::BlobRequirement& req : BlockBlobs(block)) m_ledger.Forget(req.hash);
  // Transactions whose nonce the chain has passed can never apply.
  m_mempool.DropStale([this](const crypto::Address& a) { return AccountNonce(a); });
  // A final block from sync may name blobs we never saw: fetch them (they
  // are pinned by the commit and served to peers once here).
  if (const auto named = BlockBlobs(block); !named.empty())
    for (const Hash256& h : m_blobs.Examine(named).missing) (void)FetchBlobFromPeers(h);
}

// ---- consensus (FinalityApp, io thread) ------------------------------------------------

std::uint64_t Node::FinalHeight() const { return m_chain->tip().height; }

Result<std::pair<Hash256, Bytes>> Node::BuildBlock(std::uint64_t height) {
  if (!m_config.validator_key) return Status::Error("node-not-validator");
  const GenesisFile& g = m_config.genesis;
  std::lock_guard lock(m_write_mu);
  const vm::ChainTip tip = m_chain->tip();
  if (height != tip.height + 1) return Status::Invalid("block-not-next", "the chain is at " + std::to_string(tip.height));
  // One block_interval_ms after the parent's time; in instant mode as soon
  // as transactions can go in, else an empty one every proposer_timeout_ms
  // so that block clocks run.
  const std::uint64_t now = NowMs();
  const Status not_due = Status::Invalid(std::string(FinalityApp::kNotDue));
  if (!g.instant() && now < tip.time + g.block_interval_ms) return not_due;
  const auto nonce_of = [this](const crypto::Address& a) { return AccountNonce(a); };
  std::vector<vm::Transaction> candidates = WithBlobsReady(m_mempool.Candidates(m_config.max_block_txs, nonce_of));
  if (g.instant() && candidates.empty() && now < tip.time + g.proposer_timeout_ms) return not_due;
  const std::uint64_t time = std::max(now, tip.time);
  const crypto::SecretKey& key = *m_config.validator_key;
  std::vector<vm::RejectedTx> rejected;
  // Evidence this node holds and the chain has not recorded: the proposer
  // reports it (and is rewarded for it, contract_vm/evidence.h).
  const std::vector<Bytes> evidence = m_chain->EvidenceCandidates(m_driver->evidence(), height);
  auto result = m_chain->Build(candidates, time, key, &rejected, evidence);
  if (!result.ok() && !candidates.empty()) {
    // Only a failing store makes Build fail; whatever the cause, the chain
    // goes on: an empty block keeps the block clock running.
    Log().error("{} could not build block {} with {} tx(s): {}; proposing it empty", m_config.name, height,
                candidates.size(), result.status().ToString());
    rejected.clear();
    result = m_chain->Build({}, time, key, &rejected, evidence);
  }
  if (!result.ok()) return result.status();
  // Drop what can never apply, with its reason; keep what waits for an
  // earlier nonce or for room in a later block.
  std::vector<Hash256> dead;
  for (const vm::RejectedTx& r : rejected) {
    const std::string& why = r.status.reason();
    if (why == vm::reasons::kBadNonce || why == vm::reasons::kGasOverBlock) continue;
    Log().info("{} dropped tx {} from the mempool: {}", m_config.name, r.tx_id.Hex().substr(0, 16), r.status.ToString());
    dead.push_back(r.tx_id);
  }
  m_mempool.Remove(dead);
  return std::make_pair(vm::BlockHash(result->block.header), EncodeToBytes(result->block));
}

Result<Hash256> Node::CheckBlock(std::uint64_t height, ByteSpan bytes, bool certified) {
  VT_ASSIGN_OR_RETURN(const vm::Block block, DecodeBlock(bytes));
  if (block.header.height != height) return Status::Invalid("block-not-next", "height " + std::to_string(height));
  if (block.header.chain_id != m_config.genesis.genesis.params.chain_id) return Status::Invalid("block-wrong-chain");
  if (!vm::VerifyBlockSignature(block.header)) return Status::Invalid("block-bad-signature");
  if (!certified) {
    // Local policy before prevoting (docs/node.md, "Blob availability"): a
    // block's time is not ahead of our clock, and every blob it names is
    // here and verifies; missing ones are fetched now, so a later round's
    // proposal of the same block can be prevoted.
    if (block.header.time > NowMs() + kMaxFutureMs) return Status::Invalid("block-from-future");
    if (const auto named = BlockBlobs(block); !named.empty()) {
      const BlobGate::Check check = m_blobs.Examine(named);
      if (check.state == BlobGate::State::kInvalid)
        return Status::Invalid("block-blob-invalid", check.why.ToString());
      if (check.state == BlobGate::State::kMissing) {
        for (const Hash256& h : check.missing) (void)FetchBlobFromPeers(h);
        return Status::Invalid("block-blobs-pending", std::to_string(check.missing.size()) + " blob(s) missing");
      }
    }
  }
  std::lock_guard lock(m_write_mu);
  VT_TRY(m_chain->Check(block).status());
  return vm::BlockHash(block.header);
}

bool Node::EvidenceRecorded(const vm::Offence& offence) const { return m_chain->Recorded(offence); }

Status Node::CommitBlock(std::uint64_t height, ByteSpan bytes, const consensus::CommitCertificate& cert) {
  VT_ASSIGN_OR_RETURN(const vm::Block block, DecodeBlock(bytes));
  if (block.header.height != height || vm::BlockHash(block.header) != cert.block)
    return Status::Error("block-not-certified", "the certificate names another block");
  const Bytes encoded_cert = EncodeToBytes(cert);
  {
    std::lock_guard lock(m_write_mu);
    VT_TRY(m_chain->AddBlock(block, encoded_cert).status());
    AfterBlock(block);
  }
  const bool ours = m_config.validator_key && m_config.validator_key->public_key().bytes() == block.header.proposer;
  std::lock_guard slock(m_stats_mu);
  ++(ours ? m_stats.blocks_produced : m_stats.blocks_applied);
  return Status::Ok();
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
  if (kind == net::GossipKind::kConsensus) return m_driver->OnMessage(from, payload);
  // Blocks travel inside proposals and, once final, by sync with their certificate.
  return net::Verdict::Ignore("block-gossip-unused");
}

net::Verdict Node::OnSyncBlocks(net::PeerId from, std::uint64_t first_height, const std::vector<Bytes>& blocks) {
  (void)first_height;
  return m_driver->OnFinalBlocks(from, blocks);
}

std::uint64_t Node::TipHeight() const { return m_chain->tip().height; }

// Sync serves final blocks: block ‖ its commit certificate (consensus/wire.h FinalBlock).
std::optional<Bytes> Node::BlockAt(std::uint64_t height) const {
  auto block = m_chain->db().BlockBytesAt(height);
  auto cert = m_chain->db().CertificateAt(height);
  if (!block.ok() || !*block || !cert.ok() || !*cert) return std::nullopt;
  auto decoded = DecodeExact<consensus::CommitCertificate>(**cert);
  if (!decoded.ok()) return std::nullopt;
  return EncodeToBytes(consensus::FinalBlock{std::move(**block), std::move(*decoded)});
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

}  // namespace vt::node
