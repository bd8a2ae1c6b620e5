#pragma once
// One TCP connection to a peer: framing in both directions, a bounded send
// queue, graceful or hard close. Protocol logic (handshake, gossip, sync,
// blobs, scoring) lives in P2PNode (net/p2p.h); a Connection only moves frames.
// Everything here runs on the io thread of the owning P2PNode.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/session_cipher.h"
#include "net/frame.h"
#include "net/messages.h"
#include "net/seen_set.h"

namespace vt::net {

// A connection's local number, unique within one P2PNode (never reused).
using PeerId = std::uint64_t;
using Clock = std::chrono::steady_clock;

// An IP literal and port (no name resolution: the testnet is loopback).
struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;

  std::string ToString() const;
  // "127.0.0.1:9000"; Invalid "endpoint-bad" otherwise.
  static Result<Endpoint> Parse(std::string_view text);
  bool operator==(const Endpoint&) const = default;
};

// A snapshot of one peer for the node, RPC and tests.
struct PeerInfo {
  PeerId id = 0;
  Endpoint remote;       // address and (ephemeral for inbound) port of the socket
  bool inbound = false;
  bool established = false;  // handshake done: the peer proved hello.node_id
  Hello hello;               // the peer's, when established
  int score = 0;             // misbehaviour score
  std::chrono::microseconds last_rtt{-1};  // -1 until a pong came back
  std::uint64_t frames_in = 0, frames_out = 0, bytes_in = 0, bytes_out = 0;
  std::size_t send_queue_bytes = 0;
};

class Connection;

// What a Connection reports to its owner, always on the io thread and never
// from inside a call the owner made into the Connection (closing is posted),
// so the owner may iterate its peers and call Send/Close freely.
class ConnectionOwner {
 public:
  virtual void OnFrame(const std::shared_ptr<Connection>& conn, Frame frame) = 0;
  // The peer's bytes are not valid frames (the connection stops reading).
  virtual void OnFrameError(const std::shared_ptr<Connection>& conn, const Status& status) = 0;
  // Called exactly once, after Close or a socket failure.
  virtual void OnConnectionClosed(const std::shared_ptr<Connection>& conn, const std::string& reason) = 0;

 protected:
  ~ConnectionOwner() = default;
};

// Per-peer protocol state that P2PNode keeps with the connection.
struct PeerSession {
  // The peer's Hello arrived (its node id is still only a claim).
  bool hello_received = false;
  // The peer proved the key of hello.node_id (net/handshake.h): only now is
  // the node id an identity that scores and bans may name.
  bool established = false;
  Hash256 our_challenge;  // sent in our Hello on this connection
  // Our X25519 key of this connection (its public half is in our Hello);
  // dropped once the session keys are derived.
  std::optional<crypto::X25519Key> ephemeral;
  Hash256 our_ephemeral;  // its public half, for the transcript
  // The key that opens the peer's frames, from our Auth until the peer's.
  std::optional<crypto::AeadKey> recv_key;
  Hello hello;
  int score = 0;
  Clock::time_point connected_at{};
  Clock::time_point last_ping_sent{};
  std::optional<std::uint64_t> ping_nonce;
  std::chrono::microseconds last_rtt{-1};
  // Content ids this peer is known to have (sent to or received from it), so
  // gossip is never echoed back; bounded like the node's seen-set.
  SeenSet known{4096};
  // Index of the dial target this outbound connection serves, if any.
  std::optional<std::size_t> dial_target;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using tcp = boost::asio::ip::tcp;

  struct Options {
    std::uint32_t magic = 0;
    // Bound on queued, unsent bytes (headers + payloads). A frame that would
    // go over it closes the connection with "send-queue-full"; one frame is
    // always accepted into an empty queue, whatever its size.
    std::size_t max_send_queue_bytes = std::size_t{32} << 20;
    // How long a graceful close may wait for the Disconnect frame to flush.
    std::chrono::milliseconds linger{500};
  };

  Connection(tcp::socket socket, PeerId id, bool inbound, Options options, ConnectionOwner* owner);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts the read loop.
  void Start();

  // Queues one frame; false when the connection is closing or the queue bound
  // was hit (the connection is then closed). Sealed once SealFromNow was
  // called.
  bool Send(MsgType type, std::shared_ptr<const Bytes> payload);
  bool Send(MsgType type, Bytes payload) { return Send(type, std::make_shared<const Bytes>(std::move(payload))); }
  // Same, with the header already encoded (a broadcast checksums once for all peers).
  bool SendWithHeader(const FrameHeaderBytes& header, std::shared_ptr<const Bytes> payload);

  // Every frame queued from now on is sealed with `cipher` (docs/net.md,
  // "Frame encryption"): call it right after queuing our Auth.
  void SealFromNow(crypto::SessionCipher cipher) { m_send_cipher.emplace(std::move(cipher)); }
  // Every frame received after the one being handled is opened with `cipher`:
  // call it from the handler of the peer's Auth.
  void OpenFromNow(crypto::SessionCipher cipher) { m_decoder.OpenFromNow(std::move(cipher)); }
  // Frames from the peer are sealed: a framing error can no longer be told
  // from a relay's tampering, so it is held against nobody.
  bool receiving_sealed() const { return m_decoder.sealed(); }

  // Stops reading and closes. With `notify_remote`, a Disconnect{reason} frame
  // is flushed first (bounded by the linger time); otherwise queued frames are
  // dropped and the socket is closed at once (also cutting short a graceful
  // close in progress). The owner hears of it once.
  void Close(const std::string& reason, bool notify_remote);

  PeerId id() const { return m_id; }
  bool inbound() const { return m_inbound; }
  bool open() const { return !m_closing; }
  bool socket_closed() const { return m_socket_closed; }
  const Endpoint& remote() const { return m_remote; }
  // The local port of the socket (for an inbound connection, our listen port).
  std::uint16_t local_port() const { return m_local_port; }
  Clock::time_point last_receive() const { return m_last_receive; }
  std::size_t send_queue_bytes() const { return m_queued_bytes; }
  PeerInfo Info() const;

  PeerSession& session() { return m_session; }
  const PeerSession& session() const { return m_session; }

 private:
  struct OutFrame {
    FrameHeaderBytes header;
    std::shared_ptr<const Bytes> payload;
  };

  // Seals (when on) and queues; false when sealing failed (the connection is
  // then closed).
  bool Enqueue(const FrameHeaderBytes& header, std::shared_ptr<const Bytes> payload);
  void ReadMore();
  void OnRead(const boost::system::error_code& ec, std::size_t n);
  void WriteMore();
  void OnWritten(const boost::system::error_code& ec, std::size_t n);
  void Shutdown();  // closes the socket and timer
  void NotifyClosed(const std::string& reason);

  tcp::socket m_socket;
  boost::asio::steady_timer m_linger_timer;
  PeerId m_id;
  bool m_inbound;
  Options m_options;
  ConnectionOwner* m_owner;
  Endpoint m_remote;
  std::uint16_t m_local_port = 0;

  FrameDecoder m_decoder;
  std::optional<crypto::SessionCipher> m_send_cipher;
  std::array<std::uint8_t, 64 * 1024> m_read_buf{};
  Clock::time_point m_last_receive;

  std::deque<OutFrame> m_queue;        // not yet handed to the socket
  std::deque<OutFrame> m_in_flight;    // in the current async_write
  std::vector<boost::asio::const_buffer> m_write_bufs;
  std::size_t m_queued_bytes = 0;      // m_queue + m_in_flight
  bool m_writing = false;
  bool m_reading = false;

  bool m_closing = false;       // no more reads or sends
  bool m_flush_then_close = false;
  bool m_draining = false;      // our side shut down; reading until the peer's EOF
  bool m_socket_closed = false;
  bool m_notified = false;

  std::uint64_t m_frames_in = 0, m_frames_out = 0, m_bytes_in = 0, m_bytes_out = 0;
  PeerSession m_session;
};

}  // namespace vt::net
