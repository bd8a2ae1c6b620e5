#pragma once
// Node: a chain node — the Chain (LevelDB + VM + referee), a mempool, the
// P2P layer (gossip of transactions, consensus messages, sync of final
// blocks, blobs), the JSON-RPC server and the BFT consensus driver
// (node/consensus_driver.h; docs/node.md, "BFT finality"): every block is
// final once committed, there is no fork choice and no reorg.
//
// Threads: one io thread runs the P2P node (all its callbacks), the
// consensus driver (which calls this node's FinalityApp methods: build,
// check and commit blocks) and the blob tick; the RPC server has its own
// io_context and rpc_threads threads, so RPC load (a 60 MB put_blob body, a
// slow reader) never delays the network or consensus. RPC handlers call
// into the node from their threads; what guards what:
//   Chain (state, VM, referee, tip)      Chain's own mutex
//   ChainDb reads (blocks, receipts,     LevelDB (thread-safe; each read is
//     tx index, blobs, pins)               atomic, a reader may see the tip move)
//   block builds and writes, blob        m_write_mu (consensus vs. blob GC)
//     collection
//   Mempool, BlobGate, BlobLedger        their own mutex each
//   blob fetch state / chunk cache       m_blob_mu / m_blob_cache_mu
//   NodeStats                            m_stats_mu
//   P2PNode                              its thread-safe methods post to the io
//                                          thread (snapshots wait at most 5 s)
//   m_driver, m_blob_ticks               io thread only (never from RPC)
//   m_config                             read-only after construction

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "crypto/keys.h"
#include "net/p2p.h"
#include "net/rpc_server.h"
#include "node/blob_gate.h"
#include "node/blob_upload.h"
#include "node/chain.h"
#include "node/consensus_driver.h"
#include "node/genesis.h"

namespace vt::node {

struct NodeConfig {
  std::string name = "node";
  std::filesystem::path data_dir;
  GenesisFile genesis;
  std::optional<crypto::SecretKey> validator_key;  // absent: a full node that follows
  // The P2P node key (net/handshake.h). Null: Create uses the validator key
  // (a validator's P2P id is its genesis key) or <data_dir>/node_key.
  std::shared_ptr<const crypto::SecretKey> node_key;
  std::string host = "127.0.0.1";
  std::uint16_t p2p_port = 0;  // 0: ephemeral
  std::vector<net::Endpoint> peers;
  std::uint16_t rpc_port = 0;  // 0: ephemeral
  std::size_t rpc_max_body = std::size_t{64} << 20;
  // Large RPC bodies in flight at once (net/rpc_server.h): four at the cap.
  std::size_t rpc_body_bytes_in_flight = std::size_t{256} << 20;
  std::size_t rpc_threads = 2;
  BlobLimits blobs;  // put_blob quotas and garbage collection (node/blob_upload.h)
  std::size_t max_block_txs = 4096;
  MempoolLimits mempool;
  // Gossip/sync timing for tests (P2PConfig defaults otherwise).
  std::chrono::milliseconds reconnect_max{2000};
  // TEST-ONLY: a validator that misbehaves on purpose (consensus_driver.h);
  // vt-node sets it only when started by a test.
  TestAdversary test_adversary = TestAdversary::kNone;
};

struct NodeStats {
  std::uint64_t blocks_produced = 0;  // final blocks this validator proposed
  std::uint64_t blocks_applied = 0;   // final blocks others proposed
  std::uint64_t reorgs = 0;           // always 0: final blocks are never reverted (kept for RPC clients)
  std::uint64_t txs_accepted = 0;
};

class Node final : private net::MessageHandler,
                   private net::BlockSource,
                   private net::BlobStore,
                   private FinalityApp {
 public:
  static Result<std::unique_ptr<Node>> Create(NodeConfig config);
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Binds P2P and RPC, starts the io thread and consensus.
  Status Start();
  // Thread-safe, idempotent: stops consensus, closes sockets, joins threads.
  void Stop();

  std::uint16_t p2p_port() const;
  std::uint16_t rpc_port() const;
  Chain& chain() { return *m_chain; }
  const Mempool& mempool() const { return m_mempool; }
  NodeStats stats() const;
  // The consensus driver's counters, read on the io thread (any thread may
  // call; waits at most 5 s, nullopt when the io thread does not answer).
  std::optional<DriverStats> ConsensusStats();

  // Checks, queues and gossips a transaction. Invalid with the VM's tx-*
  // reason or a mempool-* reason (node/mempool.h).
  Result<Hash256> SubmitTransaction(const vm::Transaction& tx);

 private:
  explicit Node(NodeConfig config, std::unique_ptr<Chain> chain);

  // net::MessageHandler
  net::Verdict OnGossip(net::PeerId from, net::GossipKind kind, const Hash256& id, ByteSpan payload) override;
  net::Verdict OnSyncBlocks(net::PeerId from, std::uint64_t first_height, const std::vector<Bytes>& blocks) override;
  // net::BlockSource: final blocks (consensus/wire.h FinalBlock) for sync.
  std::uint64_t TipHeight() const override;
  std::optional<Bytes> BlockAt(std::uint64_t height) const override;
  // FinalityApp (io thread). BuildBlock: kNotDue until block_interval_ms
  // after the parent (instant mode: until transactions are pending or
  // proposer_timeout_ms passed). CheckBlock: the chain's rules on a staged
  // overlay plus, for proposals, the blob gate and a clock bound.
  std::uint64_t FinalHeight() const override;
  Result<std::pair<Hash256, Bytes>> BuildBlock(std::uint64_t height) override;
  Result<Hash256> CheckBlock(std::uint64_t height, ByteSpan block, bool certified) override;
  Status CommitBlock(std::uint64_t height, ByteSpan block, const consensus::CommitCertificate& cert) override;
  bool EvidenceRecorded(const vm::Offence& offence) const override;
  // net::BlobStore
  std::optional<std::uint64_t> BlobSize(const Hash256& hash) const override;
  Result<Bytes> ReadBlob(const Hash256& hash, std::uint64_t offset, std::uint32_t len) const override;
  // Peers pull a blob in chunks (BlobSize, then ReadBlob per chunk); LevelDB
  // returns whole values, so the last blob read is kept rather than read
  // again for every chunk. Null when the store lacks it.
  Result<std::shared_ptr<const Bytes>> CachedBlob(const Hash256& hash) const;

  Result<Hash256> Submit(const vm::Transaction& tx, bool broadcast);
  void AfterBlock(const vm::Block& block);
  void RegisterRpc();
  // Starts fetching a blob this node lacks from its peers (at most one fetch
  // per hash at a time); Ok while it runs, or the reason the last attempt
  // failed if that was under a second ago ("blob-not-found", …).
  Status FetchBlobFromPeers(const Hash256& hash);
  std::uint64_t NextNonce(const crypto::Address& address) const;
  std::uint64_t AccountNonce(const crypto::Address& address) const;  // at the tip

  // Blob availability (docs/node.md, "Blob availability"). A proposer
  // proposes only transactions whose named blobs are held and verify.
  std::vector<vm::Transaction> WithBlobsReady(std::vector<vm::Transaction> candidates);
  // Io thread, every kBlobTickMs: fetches the blobs of pending transactions
  // (dropping those that waited too long) and collects expired blobs.
  void BlobTick();
  void ScheduleBlobTick();
  // Deletes unpinned blobs older than the grace period that no pending
  // transaction names (BlobLimits::grace_ms), a bounded number per call.
  void CollectBlobs(std::uint64_t now_ms);
  // put_blob: a signed upload, within its key's quota and the node's.
  Result<Hash256> PutUploadedBlob(const Bytes& data, std::string_view uploader, std::string_view signature);

  NodeConfig m_config;
  std::unique_ptr<Chain> m_chain;
  BlobGate m_blobs;
  Mempool m_mempool;
  BlobLedger m_ledger;
  boost::asio::io_context m_rpc_io;  // before m_rpc, which outlives nothing of it
  std::vector<std::thread> m_rpc_threads;
  boost::asio::io_context m_io;
  std::unique_ptr<net::P2PNode> m_p2p;
  std::unique_ptr<net::RpcServer> m_rpc;
  boost::asio::steady_timer m_blob_timer{m_io};
  std::uint64_t m_blob_ticks = 0;  // io thread only
  std::unique_ptr<ConsensusDriver> m_driver;  // after m_p2p, which it uses
  std::thread m_io_thread;
  std::mutex m_write_mu;  // serialises block builds and writes with blob collection
  std::atomic<bool> m_stopping{false};
  bool m_started = false;
  struct BlobFetchState {
    bool in_flight = false;
    Status last_failure = Status::Ok();
    std::uint64_t failed_at_ms = 0;
  };
  mutable std::mutex m_blob_cache_mu;
  mutable Hash256 m_cached_blob_hash;
  mutable std::shared_ptr<const Bytes> m_cached_blob;
  std::mutex m_blob_mu;
  std::map<Hash256, BlobFetchState> m_blob_fetches;
  mutable std::mutex m_stats_mu;
  NodeStats m_stats;
};

std::uint64_t NowMs();

}  // namespace vt::node
