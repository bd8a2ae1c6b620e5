#pragma once
// Node: a chain node — the Chain (LevelDB + VM + referee), a mempool, the
// P2P layer (gossip of transactions and blocks, sync, blobs), the JSON-RPC
// server and, on validators, the block producer (docs/node.md).
//
// Threads: one io thread runs the P2P node (all its callbacks, including
// block application from peers) and the blob tick; the RPC server has its own
// io_context and rpc_threads threads, so RPC load (a 60 MB put_blob body, a
// slow reader) never delays the network or consensus; one producer thread
// proposes blocks when it is this validator's turn. RPC handlers call into
// the node from their threads; what guards what:
//   Chain (state, VM, referee, tip)      Chain's own mutex
//   ChainDb reads (blocks, receipts,     LevelDB (thread-safe; each read is
//     tx index, blobs, pins)               atomic, a reader may see the tip move)
//   block writes, blob collection        m_write_mu (producer, peers' blocks, GC)
//   Mempool, BlobGate, BlobLedger        their own mutex each
//   blob fetch state / chunk cache       m_blob_mu / m_blob_cache_mu
//   NodeStats                            m_stats_mu
//   P2PNode                              its thread-safe methods post to the io
//                                          thread (snapshots wait at most 5 s)
//   m_resolving, m_blob_ticks            io thread only (never from RPC)
//   m_config                             read-only after construction
// Block writes go through m_write_mu, so the fork choice never races the producer.
//
// Fork choice (honest about its limits: crash faults, not Byzantine ones):
// * the chain with more blocks wins (sync pulls it; a block that does not
//   link to our chain makes us fetch the peer's recent blocks, find the
//   common ancestor — at most kMaxReorgDepth back — and switch when the
//   peer's branch is longer);
// * at equal height the block of the lower rotation offset wins, then the
//   earlier time, then the lower hash — so nodes that saw two blocks for one
//   height converge on the same one.

#include <atomic>
#include <condition_variable>
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
};

inline constexpr std::uint64_t kMaxReorgDepth = 32;

struct NodeStats {
  std::uint64_t blocks_produced = 0;
  std::uint64_t blocks_applied = 0;  // from peers
  std::uint64_t reorgs = 0;
  std::uint64_t txs_accepted = 0;
};

class Node final : private net::MessageHandler, private net::BlockSource, private net::BlobStore {
 public:
  static Result<std::unique_ptr<Node>> Create(NodeConfig config);
  ~Node() override;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Binds P2P and RPC, starts the io and producer threads.
  Status Start();
  // Thread-safe, idempotent: stops producing, closes sockets, joins threads.
  void Stop();

  std::uint16_t p2p_port() const;
  std::uint16_t rpc_port() const;
  Chain& chain() { return *m_chain; }
  const Mempool& mempool() const { return m_mempool; }
  NodeStats stats() const;

  // Checks, queues and gossips a transaction. Invalid with the VM's tx-*
  // reason or a mempool-* reason (node/mempool.h).
  Result<Hash256> SubmitTransaction(const vm::Transaction& tx);

 private:
  explicit Node(NodeConfig config, std::unique_ptr<Chain> chain);

  // net::MessageHandler
  net::Verdict OnGossip(net::PeerId from, net::GossipKind kind, const Hash256& id, ByteSpan payload) override;
  net::Verdict OnSyncBlocks(net::PeerId from, std::uint64_t first_height, const std::vector<Bytes>& blocks) override;
  // net::BlockSource
  std::uint64_t TipHeight() const override;
  std::optional<Bytes> BlockAt(std::uint64_t height) const override;
  // net::BlobStore
  std::optional<std::uint64_t> BlobSize(const Hash256& hash) const override;
  Result<Bytes> ReadBlob(const Hash256& hash, std::uint64_t offset, std::uint32_t len) const override;
  // Peers pull a blob in chunks (BlobSize, then ReadBlob per chunk); LevelDB
  // returns whole values, so the last blob read is kept rather than read
  // again for every chunk. Null when the store lacks it.
  Result<std::shared_ptr<const Bytes>> CachedBlob(const Hash256& hash) const;

  Result<Hash256> Submit(const vm::Transaction& tx, bool broadcast);
  net::Verdict HandleBlock(net::PeerId from, const vm::Block& block);
  Status ApplyBlockLocked(const vm::Block& block);
  void ResolveFork(net::PeerId peer, std::uint64_t from_height, std::uint64_t depth);
  void OnForkBlocks(net::PeerId peer, std::uint64_t from_height, std::uint64_t depth, const std::vector<Bytes>& items);
  std::optional<Hash256> HashAt(std::uint64_t height) const;
  void AfterBlock(const vm::Block& block);
  void ProducerLoop();
  void RegisterRpc();
  // Starts fetching a blob this node lacks from its peers (at most one fetch
  // per hash at a time); Ok while it runs, or the reason the last attempt
  // failed if that was under a second ago ("blob-not-found", …).
  Status FetchBlobFromPeers(const Hash256& hash);
  std::uint64_t NextNonce(const crypto::Address& address) const;
  std::uint64_t AccountNonce(const crypto::Address& address) const;  // at the tip
  // A transaction of a block rolled back: back into the mempool if it still applies.
  void Readmit(const vm::Transaction& tx);

  // Blob availability (docs/node.md, "Blob availability"). The producer
  // proposes only transactions whose named blobs are held and verify.
  std::vector<vm::Transaction> WithBlobsReady(std::vector<vm::Transaction> candidates);
  // Before applying a peer's block (m_write_mu held): nullopt when its named
  // blobs are all here and verify; else Reject (a blob fails its rule) or
  // Ignore after parking it and starting the fetches.
  std::optional<net::Verdict> GateBlock(net::PeerId from, const vm::Block& block);
  // Io thread, every kBlobTickMs: retries parked blocks (accepting them once
  // their blobs are here, giving up after BlobGate::kBlockWaitMs) and fetches
  // the blobs of pending transactions (dropping those that waited too long).
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
  std::thread m_io_thread;
  std::thread m_producer;
  std::mutex m_write_mu;  // serialises block writes (producer vs. peers)
  std::mutex m_wake_mu;
  std::condition_variable m_wake;
  std::atomic<bool> m_stopping{false};
  bool m_started = false;
  bool m_resolving = false;  // io thread only
  std::atomic<std::int64_t> m_tip_seen_ms{0};  // local time the current tip arrived
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
