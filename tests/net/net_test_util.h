#pragma once
// Loopback harness for P2P tests: a node on its own io thread with an
// in-memory chain, blob store and recording handler; a raw peer that speaks
// bytes directly; a bounded wait. All traffic stays on 127.0.0.1.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "common/encoding.h"
#include "crypto/keys.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "net/frame.h"
#include "net/handshake.h"
#include "net/messages.h"
#include "net/p2p.h"

namespace vt::net::test {

using namespace std::chrono_literals;

// Polls `pred` every 5 ms until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

inline const std::string kChain = "vt-test";
inline Hash256 Genesis() { return crypto::Sha256Digest(std::string_view("genesis")); }

inline P2PConfig FastConfig() {
  P2PConfig c;
  c.chain_id = kChain;
  c.genesis_hash = Genesis();
  c.tick_interval = 10ms;
  c.handshake_timeout = 3s;
  c.ping_interval = 500ms;
  c.idle_timeout = 5s;
  c.request_timeout = 3s;
  c.reconnect_initial = 30ms;
  c.reconnect_max = 300ms;
  c.linger = 300ms;
  return c;
}

// Block i is "block-<i>" followed by i%50 filler bytes; header i is "hdr-<i>".
inline Bytes MakeBlock(std::uint64_t height) {
  std::string s = "block-" + std::to_string(height) + std::string(height % 50, '.');
  return Bytes(s.begin(), s.end());
}
inline Bytes MakeHeader(std::uint64_t height) {
  std::string s = "hdr-" + std::to_string(height);
  return Bytes(s.begin(), s.end());
}

class MemChain : public BlockSource {
 public:
  explicit MemChain(std::uint64_t tip = 0) {
    for (std::uint64_t h = 0; h <= tip; ++h) m_blocks.push_back(MakeBlock(h));
  }
  std::uint64_t TipHeight() const override {
    std::lock_guard lock(m_mutex);
    return m_blocks.size() - 1;
  }
  std::optional<Bytes> BlockAt(std::uint64_t height) const override {
    std::lock_guard lock(m_mutex);
    if (height >= m_blocks.size()) return std::nullopt;
    return m_blocks[height];
  }
  std::optional<Bytes> HeaderAt(std::uint64_t height) const override {
    std::lock_guard lock(m_mutex);
    if (height >= m_blocks.size()) return std::nullopt;
    return MakeHeader(height);
  }
  // Appends `blocks` at `first`; false unless they extend the tip and are the
  // expected contents (what a node's validation would check).
  bool Append(std::uint64_t first, const std::vector<Bytes>& blocks) {
    std::lock_guard lock(m_mutex);
    if (first != m_blocks.size()) return false;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i] != MakeBlock(first + i)) return false;
    }
    m_blocks.insert(m_blocks.end(), blocks.begin(), blocks.end());
    return true;
  }
  std::vector<Bytes> Blocks() const {
    std::lock_guard lock(m_mutex);
    return m_blocks;
  }
  // Replaces the stored item at `height` (oversized items for the sync caps).
  void Set(std::uint64_t height, Bytes item) {
    std::lock_guard lock(m_mutex);
    m_blocks.at(height) = std::move(item);
  }

 private:
  mutable std::mutex m_mutex;
  std::vector<Bytes> m_blocks;
};

class MemBlobs : public BlobStore {
 public:
  // Serves `bytes` under `hash` (tests pass a wrong hash to play a liar).
  void Put(const Hash256& hash, Bytes bytes) {
    std::lock_guard lock(m_mutex);
    m_blobs[hash] = std::move(bytes);
  }
  Hash256 Put(Bytes bytes) {
    const Hash256 h = crypto::Sha256Digest(bytes);
    Put(h, std::move(bytes));
    return h;
  }
  std::optional<std::uint64_t> BlobSize(const Hash256& hash) const override {
    std::lock_guard lock(m_mutex);
    auto it = m_blobs.find(hash);
    if (it == m_blobs.end()) return std::nullopt;
    return it->second.size();
  }
  Result<Bytes> ReadBlob(const Hash256& hash, std::uint64_t offset, std::uint32_t len) const override {
    std::lock_guard lock(m_mutex);
    auto it = m_blobs.find(hash);
    if (it == m_blobs.end() || offset + len > it->second.size()) return Status::Error("test-blob-missing");
    return Bytes(it->second.begin() + static_cast<std::ptrdiff_t>(offset),
                 it->second.begin() + static_cast<std::ptrdiff_t>(offset + len));
  }

 private:
  mutable std::mutex m_mutex;
  std::map<Hash256, Bytes> m_blobs;
};

class RecordingHandler : public MessageHandler {
 public:
  explicit RecordingHandler(MemChain* chain) : m_chain(chain) {}

  Verdict OnGossip(PeerId from, GossipKind kind, const Hash256& id, ByteSpan payload) override {
    std::lock_guard lock(m_mutex);
    ++m_counts[id];
    m_items.push_back(Bytes(payload.begin(), payload.end()));
    (void)from, (void)kind;
    if (m_judge) return m_judge(payload);
    return Verdict::Accept();
  }
  Verdict OnSyncBlocks(PeerId, std::uint64_t first_height, const std::vector<Bytes>& blocks) override {
    ++m_sync_batches;
    if (!m_chain->Append(first_height, blocks)) return Verdict::Reject("test-bad-block", penalty::kBadResponse);
    return Verdict::Accept();
  }
  void OnPeerConnected(const PeerInfo&) override { ++m_connected; }
  void OnPeerDisconnected(const PeerInfo&, const std::string& reason) override {
    std::lock_guard lock(m_mutex);
    m_disconnect_reasons.push_back(reason);
  }

  void SetJudge(std::function<Verdict(ByteSpan)> judge) {
    std::lock_guard lock(m_mutex);
    m_judge = std::move(judge);
  }
  int Count(const Hash256& id) const {
    std::lock_guard lock(m_mutex);
    auto it = m_counts.find(id);
    return it == m_counts.end() ? 0 : it->second;
  }
  std::size_t TotalDeliveries() const {
    std::lock_guard lock(m_mutex);
    return m_items.size();
  }
  std::vector<Bytes> Items() const {
    std::lock_guard lock(m_mutex);
    return m_items;
  }
  std::vector<std::string> DisconnectReasons() const {
    std::lock_guard lock(m_mutex);
    return m_disconnect_reasons;
  }
  int sync_batches() const { return m_sync_batches; }
  int connected() const { return m_connected; }

 private:
  MemChain* m_chain;
  mutable std::mutex m_mutex;
  std::map<Hash256, int> m_counts;
  std::vector<Bytes> m_items;
  std::vector<std::string> m_disconnect_reasons;
  std::function<Verdict(ByteSpan)> m_judge;
  std::atomic<int> m_sync_batches{0};
  std::atomic<int> m_connected{0};
};

// A P2PNode with its own io thread, chain, blob store and handler.
class TestNode {
 public:
  explicit TestNode(P2PConfig config, std::uint64_t chain_tip = 0)
      : m_chain(chain_tip), m_handler(&m_chain), m_guard(m_io.get_executor()) {
    node = std::make_unique<P2PNode>(m_io, std::move(config), &m_handler, &m_chain, &m_blobs);
    const Status st = node->Start();
    EXPECT_TRUE(st.ok()) << st.ToString();
    m_thread = std::thread([this] { m_io.run(); });
  }
  ~TestNode() {
    node->Stop();
    m_guard.reset();
    m_thread.join();
    node.reset();
  }

  Endpoint endpoint() const { return Endpoint{"127.0.0.1", node->listen_port()}; }
  std::size_t EstablishedPeers() const {
    std::size_t n = 0;
    for (const PeerInfo& p : node->Peers()) n += p.established ? 1 : 0;
    return n;
  }
  std::optional<PeerInfo> PeerWithNodeId(const Hash256& id) const {
    for (const PeerInfo& p : node->Peers()) {
      if (p.established && p.hello.node_id == id) return p;
    }
    return std::nullopt;
  }
  bool HasDisconnect(const std::string& reason) const {
    for (const DisconnectRecord& r : node->RecentDisconnects()) {
      if (r.reason == reason) return true;
    }
    return false;
  }
  bool IsBanned(const std::string& key) const {
    for (const BanEntry& b : node->Bans()) {
      if (b.key == key) return true;
    }
    return false;
  }

  MemChain& chain() { return m_chain; }
  MemBlobs& blobs() { return m_blobs; }
  RecordingHandler& handler() { return m_handler; }

  std::unique_ptr<P2PNode> node;

 private:
  boost::asio::io_context m_io;
  MemChain m_chain;
  MemBlobs m_blobs;
  RecordingHandler m_handler;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> m_guard;
  std::thread m_thread;
};

// A peer that writes and reads raw bytes, for protocol violations. After a
// complete Handshake() it speaks sealed frames like a node (docs/net.md,
// "Frame encryption"): SendFrame seals, ReadFrame opens the node's frames
// from its Auth on; SendBytes stays raw.
class RawPeer {
 public:
  using tcp = boost::asio::ip::tcp;

  explicit RawPeer(std::uint32_t magic = ChainMagic(kChain)) : m_socket(m_io), m_decoder(magic), m_magic(magic) {}
  ~RawPeer() {
    boost::system::error_code ec;
    m_socket.close(ec);
    if (m_acceptor) m_acceptor->close(ec);
  }

  // Connects to 127.0.0.1:port, from `local_host` (any 127.0.0.0/8 address
  // works on Linux loopback) when given.
  bool Connect(std::uint16_t port, const std::string& local_host = "") {
    m_port = port;
    boost::system::error_code ec;
    if (!local_host.empty()) {
      m_socket.open(tcp::v4(), ec);
      if (!ec) m_socket.bind(tcp::endpoint(boost::asio::ip::make_address(local_host), 0), ec);
      if (ec) return false;
    }
    m_socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), ec);
    return !ec;
  }
  // Listens on an ephemeral 127.0.0.1 port (returned) for one AcceptOne().
  std::uint16_t Listen() {
    m_acceptor.emplace(m_io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    m_port = m_acceptor->local_endpoint().port();
    return m_port;
  }
  // Takes the one connection that a node dials to Listen()'s port; this raw
  // peer is then its listener.
  bool AcceptOne(std::chrono::milliseconds timeout = 5s) {
    boost::system::error_code result = boost::asio::error::would_block;
    m_acceptor->async_accept(m_socket, [&](const boost::system::error_code& ec) { result = ec; });
    m_io.restart();
    m_io.run_for(timeout);
    if (result == boost::asio::error::would_block) {
      m_acceptor->cancel();
      m_io.restart();
      m_io.run();
      return false;
    }
    return !result;
  }
  bool SendBytes(ByteSpan bytes) {
    boost::system::error_code ec;
    boost::asio::write(m_socket, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }
  bool SendFrame(MsgType type, ByteSpan payload) {
    if (!m_seal) return SendBytes(EncodeFrame(m_magic, type, payload));
    const FrameHeaderBytes header = EncodeFrameHeader(m_magic, type, payload);
    Result<SealedFrame> sealed = SealFrame(*m_seal, header, payload);
    if (!sealed.ok()) return false;
    Bytes wire(sealed->header.begin(), sealed->header.end());
    wire.insert(wire.end(), sealed->body.begin(), sealed->body.end());
    return SendBytes(wire);
  }
  template <typename T>
  bool Send(MsgType type, const T& msg) {
    return SendFrame(type, EncodeToBytes(msg));
  }

  // The next frame, or nullopt at end of stream, error or timeout (closed()
  // tells which).
  std::optional<Frame> ReadFrame(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto f = m_decoder.TakeFrame()) return Took(std::move(*f));
      while (!m_pending.empty()) {
        Result<std::size_t> used = m_decoder.Feed(m_pending);
        if (!used.ok()) return std::nullopt;
        m_pending.erase(m_pending.begin(), m_pending.begin() + static_cast<std::ptrdiff_t>(*used));
        if (auto f = m_decoder.TakeFrame()) return Took(std::move(*f));
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline || m_closed) return std::nullopt;
      if (!ReadSome(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now))) return std::nullopt;
    }
  }
  // The next frame of `type`, skipping others (pings, the peer's hello, …).
  std::optional<Frame> ReadFrameOfType(MsgType type, std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto f = ReadFrame(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (!f) return std::nullopt;
      if (f->type == type) return f;
    }
    return std::nullopt;
  }
  // Reads (and drops) until the peer closes; true if it did within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout = 5s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!m_closed) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      m_pending.clear();
      ReadSome(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    }
    return true;
  }
  bool closed() const { return m_closed; }
  std::size_t bytes_received() const { return m_bytes_received; }

  // Sends a Hello claiming `claimed_id` (with a fresh challenge, kept for
  // Auth) and waits for the node's Hello, which it keeps too.
  std::optional<Hello> SendHello(const Hash256& claimed_id, Hello hello = DefaultHello()) {
    hello.node_id = claimed_id;
    if (hello.challenge.IsZero() && !crypto::FillOsRandom(hello.challenge.bytes).ok()) return std::nullopt;
    if (hello.ephemeral.IsZero()) {
      m_ephemeral.emplace(crypto::X25519Key::Generate().value());
      std::copy(m_ephemeral->public_key().begin(), m_ephemeral->public_key().end(), hello.ephemeral.bytes.begin());
    }
    m_our_hello = hello;
    if (!Send(MsgType::kHello, hello)) return std::nullopt;
    auto f = ReadFrameOfType(MsgType::kHello);
    if (!f) return std::nullopt;
    Result<Hello> theirs = DecodeExact<Hello>(f->payload);
    if (!theirs.ok()) return std::nullopt;
    m_their_hello = *theirs;
    // The session keys need only both hellos: derived now, so that the
    // node's sealed frames (everything after its Auth, which follows its
    // Hello at once) can be read even when this peer never sends a valid Auth.
    if (m_ephemeral) {
      Result<SessionKeys> keys = DeriveSessionKeys(Transcript(), HandshakeRole::kDialer, *m_ephemeral);
      if (keys.ok()) {
        m_seal_key = keys->send;
        m_open_key = keys->recv;
      }
    }
    return *theirs;
  }
  // What this raw peer, the dialer, and the node sign after SendHello.
  HandshakeTranscript Transcript() const {
    HandshakeTranscript t;
    t.protocol_version = kProtocolVersion;
    t.chain_id = m_our_hello.chain_id;
    t.genesis_hash = m_our_hello.genesis_hash;
    t.dialer_id = m_our_hello.node_id;
    t.dialer_challenge = m_our_hello.challenge;
    t.dialer_ephemeral = m_our_hello.ephemeral;
    t.listener_id = m_their_hello.node_id;
    t.listener_challenge = m_their_hello.challenge;
    t.listener_ephemeral = m_their_hello.ephemeral;
    t.listener_port = m_port;
    return t;
  }
  // The whole honest handshake with `key`: Hello, then Auth signed as the
  // dialer. The node's Hello, or nullopt.
  std::optional<Hello> Handshake(const crypto::SecretKey& key, Hello hello = DefaultHello()) {
    auto theirs = SendHello(NodeIdOf(key.public_key()), std::move(hello));
    if (!theirs) return std::nullopt;
    Result<crypto::Signature> sig = SignHandshake(key, Transcript(), HandshakeRole::kDialer);
    if (!sig.ok() || !Send(MsgType::kAuth, AuthMsg{*sig})) return std::nullopt;
    if (m_seal_key) m_seal.emplace(crypto::SessionCipher::Create(*m_seal_key).value());
    return theirs;
  }
  // Whether frames this peer sends are sealed now.
  bool sealing() const { return m_seal.has_value(); }
  static Hello DefaultHello() {
    Hello h;
    h.chain_id = kChain;
    h.genesis_hash = Genesis();
    h.user_agent = "raw-peer";
    return h;
  }

 private:
  // The node seals everything after its Auth.
  std::optional<Frame> Took(Frame f) {
    if (f.type == MsgType::kAuth && m_open_key && !m_decoder.sealed()) {
      m_decoder.OpenFromNow(crypto::SessionCipher::Create(*m_open_key).value());
    }
    return f;
  }

  bool ReadSome(std::chrono::milliseconds timeout) {
    std::array<std::uint8_t, 64 * 1024> buf;
    boost::system::error_code result = boost::asio::error::would_block;
    std::size_t n = 0;
    m_socket.async_read_some(boost::asio::buffer(buf), [&](const boost::system::error_code& ec, std::size_t got) {
      result = ec;
      n = got;
    });
    m_io.restart();
    m_io.run_for(timeout);
    if (result == boost::asio::error::would_block) {  // timed out: cancel and reap the handler
      m_socket.cancel();
      m_io.restart();
      m_io.run();
      if (result == boost::asio::error::operation_aborted) return false;
    }
    m_bytes_received += n;
    m_pending.insert(m_pending.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    if (result) {
      m_closed = true;
      return n > 0;
    }
    return true;
  }

  boost::asio::io_context m_io;
  std::optional<tcp::acceptor> m_acceptor;
  tcp::socket m_socket;
  FrameDecoder m_decoder;
  std::uint32_t m_magic;
  std::uint16_t m_port = 0;
  Hello m_our_hello, m_their_hello;
  std::optional<crypto::X25519Key> m_ephemeral;
  std::optional<crypto::SessionCipher> m_seal;
  std::optional<crypto::AeadKey> m_seal_key, m_open_key;
  Bytes m_pending;
  bool m_closed = false;
  std::size_t m_bytes_received = 0;
};

// A fresh node key, and the node id it proves.
inline std::shared_ptr<const crypto::SecretKey> RandomKey() {
  return std::make_shared<const crypto::SecretKey>(crypto::SecretKey::Generate().value());
}
inline Hash256 IdOf(const crypto::SecretKey& key) { return NodeIdOf(key.public_key()); }

}  // namespace vt::net::test
