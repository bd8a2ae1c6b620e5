#pragma once
// P2PNode: the peer-to-peer layer of a veritrain node (docs/net.md). It moves
// opaque bytes — transactions, blocks, headers, blobs — between nodes and asks
// the node, through the interfaces below, what they mean. It knows nothing
// about chain rules.
//
// Threading model
// ---------------
// * A P2PNode lives on one boost::asio::io_context that exactly ONE thread
//   runs (io_context::run). All sockets, timers and protocol state are touched
//   only by that thread; there are no locks in the data path.
// * Every callback — MessageHandler, BlockSource, BlobStore, and the
//   completion callbacks of RequestBlocks/RequestHeaders/FetchBlob — runs on
//   that io thread. They must be quick (they stall all peers while they run)
//   and must not block waiting for the io thread. Calling P2PNode methods from
//   inside them is fine.
// * The methods marked "thread-safe" may be called from any thread: they post
//   their work to the io thread. Broadcast hashes the payload on the calling
//   thread. Peers()/Bans() from another thread wait (bounded) for the io thread
//   to take a snapshot; from the io thread they answer directly.
// * Lifetime: Start() once; Stop() (thread-safe) closes everything; after the
//   io thread's run() has returned, destroy the P2PNode, then the io_context.
//   The handler, BlockSource and BlobStore must outlive the P2PNode.
//
// Protocol summary (details in docs/net.md and docs/formats.md):
// * Both sides send Hello (node id = x-only public key, fresh challenge) on
//   connect and answer the peer's Hello with Auth, a signature over both
//   challenges and both ids (net/handshake.h). A peer is "established" once
//   its Auth proves its node key (same version, chain id, genesis; not
//   ourselves; not banned; not a duplicate). Anything but Hello/Auth/
//   Disconnect before that is a violation, and scores only the address: an
//   unproven node id is never scored or banned.
// * Gossip (kTx, kBlock): content id = SHA-256(payload). Each id is delivered
//   to MessageHandler::OnGossip at most once (bounded seen-set); accepted
//   items are relayed to every established peer not known to have them.
// * Sync: GetBlocks/GetHeaders from a height, answered from BlockSource with a
//   per-response item and byte limit. With auto_sync, a node that learns of a
//   peer with a greater height pulls blocks into MessageHandler::OnSyncBlocks.
// * Blobs: FetchBlob(hash) pulls chunks of a blob from peers in turn and
//   delivers it only if SHA-256(bytes) == hash; a wrong blob scores the peer.
// * Misbehaviour adds to a per-peer score; at ban_threshold the peer is
//   disconnected and banned (by its proven node id; by address unless the
//   address is exempt: loopback, never_ban_addresses, a configured peer's
//   host) for ban_duration. Garbage frames score the threshold at once.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/keys.h"
#include "net/frame.h"
#include "net/handshake.h"
#include "net/log_limit.h"
#include "net/messages.h"
#include "net/peer.h"
#include "net/seen_set.h"

namespace vt::net {

enum class GossipKind : std::uint8_t { kTx = 1, kBlock = 2, kConsensus = 3 };

// Misbehaviour penalties (docs/net.md); the default ban threshold is 100.
namespace penalty {
inline constexpr int kGarbage = 100;          // bad frame or undecodable payload
inline constexpr int kProtocolViolation = 100;  // message before handshake, second hello
inline constexpr int kInvalidGossip = 20;     // default for a handler's Reject
inline constexpr int kBadResponse = 50;       // sync response that does not fit the request
inline constexpr int kBadBlob = 50;           // blob chunk out of order or a wrong blob
inline constexpr int kUnsolicited = 20;       // a response to nothing we asked
inline constexpr int kBadRequest = 20;        // e.g. a blob offset beyond the blob
}  // namespace penalty

// The node's judgement of an item a peer sent.
struct Verdict {
  enum class Kind : std::uint8_t { kAccept, kIgnore, kReject };
  Kind kind = Kind::kAccept;
  std::string reason;  // stable reason code for kReject (logged, recorded)
  int penalty = 0;     // added to the sender's score for kReject

  static Verdict Accept() { return {}; }
  // Not relayed, not held against the peer (e.g. a local failure, an orphan).
  static Verdict Ignore(std::string reason = {}) { return {Kind::kIgnore, std::move(reason), 0}; }
  static Verdict Reject(std::string reason, int pen = penalty::kInvalidGossip) {
    return {Kind::kReject, std::move(reason), pen};
  }
  // ok → Accept; invalid (the peer's fault) → Reject(reason); error (ours) → Ignore.
  static Verdict FromStatus(const Status& status, int pen = penalty::kInvalidGossip);
};

// Implemented by the node. Called on the io thread (see threading model).
class MessageHandler {
 public:
  virtual ~MessageHandler() = default;
  // A gossiped item seen for the first time. Accept relays it to other peers.
  virtual Verdict OnGossip(PeerId from, GossipKind kind, const Hash256& id, ByteSpan payload) = 0;
  // Blocks pulled by auto-sync, at heights first_height, first_height+1, …
  // Accept continues syncing from BlockSource::TipHeight()+1; Ignore stops.
  virtual Verdict OnSyncBlocks(PeerId from, std::uint64_t first_height, const std::vector<Bytes>& blocks) {
    (void)from, (void)first_height, (void)blocks;
    return Verdict::Ignore();
  }
  virtual void OnPeerConnected(const PeerInfo& peer) { (void)peer; }
  // Only for peers that were established (OnPeerConnected was called).
  virtual void OnPeerDisconnected(const PeerInfo& peer, const std::string& reason) { (void)peer, (void)reason; }
};

// Blocks and headers by height, served to syncing peers. Heights start at 0
// (genesis); TipHeight() is the highest height available.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  virtual std::uint64_t TipHeight() const = 0;
  virtual std::optional<Bytes> BlockAt(std::uint64_t height) const = 0;
  virtual std::optional<Bytes> HeaderAt(std::uint64_t height) const {
    (void)height;
    return std::nullopt;
  }
};

// Content-addressed blobs (SHA-256 of the bytes), served to peers in chunks.
class BlobStore {
 public:
  virtual ~BlobStore() = default;
  virtual std::optional<std::uint64_t> BlobSize(const Hash256& hash) const = 0;
  // Bytes [offset, offset + len) of the blob; called only with ranges inside
  // BlobSize(hash). An error is answered as "not found" to the peer.
  virtual Result<Bytes> ReadBlob(const Hash256& hash, std::uint64_t offset, std::uint32_t len) const = 0;
};

struct P2PConfig {
  std::string chain_id;
  Hash256 genesis_hash;
  std::uint32_t magic = 0;  // 0: ChainMagic(chain_id)
  // The node key: the node id is its x-only public key, proven to every peer
  // in the handshake. Validators pass their validator key; other nodes a key
  // kept in their data dir (net/node_key.h). Null: Start() makes a fresh key
  // for this process (node_id() is then known after Start).
  std::shared_ptr<const crypto::SecretKey> node_key;
  std::string user_agent = "veritrain/0.1";

  bool listen = true;
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;  // 0: an ephemeral port (listen_port() tells which)
  std::vector<Endpoint> peers;    // dialed at start and redialed with back-off

  std::size_t max_inbound = 64;  // established inbound peers
  // Inbound connections that have not proven a node key yet ("pending";
  // docs/net.md, "Handshake limits"): at most max_pending in total and
  // max_pending_per_address from one address — the latter only where an
  // address stands for one party (AddressBannable: not loopback, a configured
  // peer's host or never_ban_addresses, where strangers and honest peers
  // share it). A connection beyond either bound evicts the oldest pending
  // one: of its own address, or of the address holding the most. Every
  // pending connection must prove its key within handshake_timeout.
  std::size_t max_pending = 64;
  std::size_t max_pending_per_address = 8;
  std::size_t max_send_queue_bytes = std::size_t{32} << 20;
  std::size_t seen_capacity = 100'000;
  std::size_t known_per_peer = 4096;

  std::chrono::milliseconds tick_interval{100};  // resolution of every timer below
  std::chrono::milliseconds handshake_timeout{5000};
  std::chrono::milliseconds ping_interval{5000};
  std::chrono::milliseconds idle_timeout{20000};  // nothing received for this long: disconnect
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds reconnect_initial{200};
  std::chrono::milliseconds reconnect_max{30000};
  std::chrono::milliseconds linger{500};

  int ban_threshold = 100;
  std::chrono::milliseconds ban_duration{10 * 60 * 1000};
  // Addresses never banned by address; peers there are still banned by their
  // proven node id. An address is an identity only when one party stands
  // behind it: every process on a host shares its loopback addresses
  // (127.0.0.0/8, ::1), so a loopback address ban would let any local process
  // cut every local node; and a configured peer's host (config.peers and
  // AddPeer) is never banned by address, so a stranger that shares it (a NAT,
  // a shared host) cannot cut us off from that peer.
  bool never_ban_loopback = true;
  std::vector<std::string> never_ban_addresses;

  // Sync and blobs
  bool auto_sync = true;
  std::uint32_t sync_batch = 128;                             // blocks per request
  std::size_t max_response_bytes = std::size_t{8} << 20;      // per Blocks/Headers response
  std::uint32_t blob_chunk_bytes = std::uint32_t{1} << 20;    // per GetBlob request
  std::uint64_t max_blob_bytes = std::uint64_t{1} << 30;      // largest blob we fetch
};

struct BanEntry {
  std::string key;  // "node:<hex>" or "addr:<ip>"
  std::string reason;
  std::chrono::milliseconds remaining{0};
};

struct DisconnectRecord {
  PeerInfo peer;
  std::string reason;  // ours, or "remote:<theirs>" when the peer said why
};

// Counters, readable from any thread.
struct P2PStats {
  std::uint64_t connections_in = 0, connections_out = 0, handshakes = 0, disconnects = 0;
  std::uint64_t gossip_delivered = 0, gossip_duplicates = 0, gossip_rejected = 0, gossip_sent = 0;
  std::uint64_t misbehaviour = 0, bans = 0, refused_banned = 0;
  std::uint64_t sync_requests_served = 0, blob_chunks_served = 0;
  std::uint64_t handshakes_evicted = 0;  // pending connections closed for the handshake limits
  std::uint64_t session_failures = 0;    // sealed frames that failed (closed, nobody blamed)
};

struct ItemsResponse {
  PeerId peer = 0;
  std::uint64_t first_height = 0;
  std::vector<Bytes> items;
};
using ItemsCallback = std::function<void(Result<ItemsResponse>)>;
using BlobCallback = std::function<void(Result<Bytes>)>;

class P2PNode final : private ConnectionOwner {
 public:
  P2PNode(boost::asio::io_context& io, P2PConfig config, MessageHandler* handler, BlockSource* blocks = nullptr,
          BlobStore* blobs = nullptr);
  ~P2PNode();
  P2PNode(const P2PNode&) = delete;
  P2PNode& operator=(const P2PNode&) = delete;

  // Binds the listener and schedules dialing. Call once, before or on the io
  // thread. Error "net-listen-failed" when the address cannot be bound,
  // "net-no-node-key" when no key was given and none can be generated.
  Status Start();
  // Thread-safe. Closes the listener and every connection, fails pending
  // requests with Error "net-stopped"; run() returns once all is closed.
  void Stop();

  // Thread-safe after Start().
  std::uint16_t listen_port() const { return m_listen_port.load(); }
  const Hash256& node_id() const { return m_node_id; }
  std::uint32_t magic() const { return m_magic; }

  // Thread-safe. Sends `payload` to every established peer that is not known
  // to have it and marks it seen (so it is not delivered back to our own
  // handler). Returns the content id; Invalid "gossip-too-large" over the
  // kind's frame cap, "gossip-empty" for no bytes.
  Result<Hash256> Broadcast(GossipKind kind, Bytes payload);

  // Thread-safe. Ask one peer for blocks/headers [from, from+max_count).
  // The callback gets the items (possibly fewer, possibly none) or an error:
  // Error "net-timeout", "peer-disconnected", "net-stopped", "peer-unknown";
  // Invalid "sync-bad-response" (the peer was scored).
  void RequestBlocks(PeerId peer, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb);
  void RequestHeaders(PeerId peer, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb);

  // Thread-safe. Pull blocks from the peer with the greatest announced height
  // until it has no more (needs a BlockSource and MessageHandler::OnSyncBlocks).
  void StartSync();

  // Thread-safe. Fetch a blob by SHA-256 from the established peers in turn
  // (the preferred one first, if given). The callback gets bytes whose hash
  // was verified, or Invalid "blob-not-found" / "blob-hash-mismatch" /
  // "blob-too-large", or Error "net-stopped" / "blob-no-peers".
  void FetchBlob(const Hash256& hash, BlobCallback cb, std::optional<PeerId> preferred = std::nullopt);

  // Thread-safe. Dial `endpoint` now and keep redialing it with back-off.
  void AddPeer(Endpoint endpoint);
  // Thread-safe. Close a connection (the peer is told `reason`).
  void DisconnectPeer(PeerId peer, std::string reason);
  // Thread-safe. Ban a node id for `duration` and drop its connections.
  void BanNode(const Hash256& node_id, std::chrono::milliseconds duration, std::string reason);

  // Thread-safe snapshots.
  std::vector<PeerInfo> Peers() const;
  std::vector<BanEntry> Bans() const;
  std::vector<DisconnectRecord> RecentDisconnects() const;
  P2PStats Stats() const;

 private:
  struct DialTarget {
    Endpoint endpoint;
    Clock::time_point next_attempt{};
    std::chrono::milliseconds backoff{0};
    bool connecting = false;
    bool disabled = false;  // it is ourselves
    std::optional<PeerId> conn;
    std::shared_ptr<boost::asio::ip::tcp::socket> socket;  // while connecting
  };
  static DialTarget MakeTarget(const Endpoint& endpoint) {
    DialTarget t;
    t.endpoint = endpoint;
    return t;
  }
  struct Ban {
    Clock::time_point until;
    std::string reason;
  };
  struct PendingRequest {
    PeerId peer = 0;
    MsgType response = MsgType::kBlocks;
    Clock::time_point deadline;
    std::uint64_t from = 0;
    std::uint32_t max_count = 0;
    ItemsCallback items_cb;        // Headers/Blocks
    std::uint64_t blob_fetch = 0;  // BlobChunk: id of the BlobFetch
  };
  struct BlobFetch {
    Hash256 hash;
    BlobCallback cb;
    std::vector<PeerId> candidates;
    std::size_t next = 0;
    PeerId current = 0;
    Bytes data;
    bool have_total = false;
    std::uint64_t total = 0;
    Status last_failure;        // what the callback gets if no peer delivers
    bool has_invalid_failure = false;  // last_failure is a peer's answer, not a timeout
  };
  struct Counters {
    std::atomic<std::uint64_t> connections_in{0}, connections_out{0}, handshakes{0}, disconnects{0};
    std::atomic<std::uint64_t> gossip_delivered{0}, gossip_duplicates{0}, gossip_rejected{0}, gossip_sent{0};
    std::atomic<std::uint64_t> misbehaviour{0}, bans{0}, refused_banned{0};
    std::atomic<std::uint64_t> sync_requests_served{0}, blob_chunks_served{0};
    std::atomic<std::uint64_t> handshakes_evicted{0}, session_failures{0};
  };
  using ConnPtr = std::shared_ptr<Connection>;

  // ConnectionOwner
  void OnFrame(const ConnPtr& conn, Frame frame) override;
  void OnFrameError(const ConnPtr& conn, const Status& status) override;
  void OnConnectionClosed(const ConnPtr& conn, const std::string& reason) override;

  void Accept();
  void Tick();
  void ScheduleTick();
  void Dial(std::size_t target_index);
  ConnPtr AddConnection(boost::asio::ip::tcp::socket socket, bool inbound, std::optional<std::size_t> target);
  // Established inbound peers (P2PConfig::max_inbound counts these).
  std::size_t EstablishedInbound() const;
  // Makes room for one more pending inbound connection from `host`
  // (P2PConfig::max_pending, max_pending_per_address): closes the oldest
  // pending one of `host`, or of the address holding the most, when a bound
  // is reached.
  void MakeRoomForPending(const std::string& host);
  Hello OurHello(const PeerSession& session) const;
  bool DialTargetSatisfied(const DialTarget& target) const;

  // Message handlers, one per row of net/msg_types.h (OnFrame dispatches
  // after the row's phase check).
  void HandleHello(const ConnPtr& conn, Frame& frame);
  void HandleAuth(const ConnPtr& conn, Frame& frame);
  void HandleDisconnect(const ConnPtr& conn, Frame& frame);
  void HandlePing(const ConnPtr& conn, Frame& frame);
  void HandlePong(const ConnPtr& conn, Frame& frame);
  void HandleGossip(const ConnPtr& conn, Frame& frame);
  void HandleGetItems(const ConnPtr& conn, Frame& frame);
  void HandleItems(const ConnPtr& conn, Frame& frame);
  void HandleGetBlob(const ConnPtr& conn, Frame& frame);
  void HandleBlobChunk(const ConnPtr& conn, Frame& frame);
  void HandleBlobNotFound(const ConnPtr& conn, Frame& frame);

  // Handshake (p2p_handshake.cpp).
  void StartHandshake(const ConnPtr& conn);
  Status CheckHello(const Hello& hello) const;
  Status CheckProvenPeer(const ConnPtr& conn);
  HandshakeTranscript Transcript(const ConnPtr& conn) const;
  void Establish(const ConnPtr& conn);
  void RejectHandshake(const ConnPtr& conn, const Status& status);

  // Gossip (p2p_gossip.cpp): sends to every established peer but `except`
  // that is not known to have the item.
  void Relay(MsgType type, const Hash256& id, const std::shared_ptr<const Bytes>& payload, PeerId except);

  void SendRequest(PeerId peer, MsgType type, std::uint64_t from, std::uint32_t max_count, ItemsCallback cb);
  std::optional<PendingRequest> TakeRequest(const ConnPtr& conn, std::uint64_t request_id, MsgType response);
  void FailRequests(const std::function<bool(const PendingRequest&)>& pred, const Status& status);
  void CompleteRequest(PendingRequest req, Result<ItemsResponse> result);

  void MaybeSync(const ConnPtr& conn);
  void SyncFrom(PeerId peer);
  void SyncStep();
  void SyncNextCandidate(PeerId failed);

  void BlobTryNext(std::uint64_t fetch_id);
  void BlobRequestChunk(std::uint64_t fetch_id);
  void BlobFail(std::uint64_t fetch_id, Status status);
  void BlobPeerFailed(std::uint64_t fetch_id, Status status);

  // Adds `pen` to the peer's score; at the threshold bans and disconnects.
  void Misbehave(const ConnPtr& conn, int pen, const std::string& reason);
  void AddBan(const std::string& key, const std::string& reason);
  bool IsBanned(const std::string& key, Clock::time_point now) const;
  // False for the exempt addresses (P2PConfig::never_ban_loopback and
  // never_ban_addresses, the hosts of dial targets).
  bool AddressBannable(const std::string& address) const;

  // True when a peer-triggered log line may be written now (rate limit).
  bool PeerLogAllowed();
  template <typename T>
  std::optional<T> DecodeOrScore(const ConnPtr& conn, const Frame& frame);

  ConnPtr FindPeer(PeerId id) const;
  std::vector<PeerInfo> PeersOnIo() const;
  std::vector<BanEntry> BansOnIo() const;
  template <typename T, typename F>
  T OnIoThread(F&& fn, T fallback) const;

  boost::asio::io_context& m_io;
  P2PConfig m_config;
  MessageHandler* m_handler;
  BlockSource* m_blocks;
  BlobStore* m_blobs;
  std::uint32_t m_magic;
  std::shared_ptr<const crypto::SecretKey> m_node_key;
  Hash256 m_node_id;  // m_node_key's x-only public key

  boost::asio::ip::tcp::acceptor m_acceptor;
  boost::asio::steady_timer m_tick_timer;
  std::atomic<std::uint16_t> m_listen_port{0};
  bool m_started = false;
  bool m_stopped = false;
  bool m_accept_paused = false;

  PeerId m_next_peer_id = 1;
  std::map<PeerId, ConnPtr> m_peers;  // ordered: candidates are tried oldest first
  // Closed connections still flushing their Disconnect frame; Stop cuts them short.
  std::vector<std::weak_ptr<Connection>> m_lingering;
  std::vector<DialTarget> m_targets;
  std::unordered_map<std::string, Ban> m_bans;
  SeenSet m_seen;
  std::uint64_t m_next_request_id = 1;
  std::unordered_map<std::uint64_t, PendingRequest> m_requests;
  std::uint64_t m_next_blob_fetch = 1;
  std::unordered_map<std::uint64_t, BlobFetch> m_blob_fetches;
  struct SyncState {
    bool active = false;
    PeerId peer = 0;
    std::uint64_t from = 0;
  } m_sync;
  std::mt19937_64 m_rng;
  LogLimit m_log_limit{20, std::chrono::seconds(10)};

  std::vector<DisconnectRecord> m_recent;  // ring of the last kRecentDisconnects
  std::size_t m_recent_next = 0;

  Counters m_counters;
};

}  // namespace vt::net
