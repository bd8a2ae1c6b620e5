#include "net/peer.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace vt::net {

namespace asio = boost::asio;

std::string Endpoint::ToString() const {
  // IPv6 literals need brackets to keep the port separable.
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<Endpoint> Endpoint::Parse(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::Invalid("endpoint-bad", "expected host:port");
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return Status::Invalid("endpoint-bad", "bad port");
  }
  boost::system::error_code aec;
  const auto address = asio::ip::make_address(std::string(host), aec);
  if (aec) return Status::Invalid("endpoint-bad", "host must be an IP address");
  return Endpoint{address.to_string(), static_cast<std::uint16_t>(port)};
}

Connection::Connection(tcp::socket socket, PeerId id, bool inbound, Options options, ConnectionOwner* owner)
    : m_socket(std::move(socket)),
      m_linger_timer(m_socket.get_executor()),
      m_id(id),
      m_inbound(inbound),
      m_options(options),
      m_owner(owner),
      m_decoder(options.magic),
      m_last_receive(Clock::now()) {
  boost::system::error_code ec;
  const auto ep = m_socket.remote_endpoint(ec);
  if (!ec) m_remote = Endpoint{ep.address().to_string(), ep.port()};
  const auto local = m_socket.local_endpoint(ec);
  if (!ec) m_local_port = local.port();
  // Small frames (pings, requests) must not wait for Nagle's algorithm.
  m_socket.set_option(tcp::no_delay(true), ec);
  m_session.connected_at = m_last_receive;
}

Connection::~Connection() = default;

void Connection::Start() { ReadMore(); }

void Connection::ReadMore() {
  m_reading = true;
  m_socket.async_read_some(asio::buffer(m_read_buf),
                           [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                             self->OnRead(ec, n);
                           });
}

namespace {
std::string ReasonFor(const boost::system::error_code& ec) {
  if (ec == asio::error::eof) return "connection-closed";
  if (ec == asio::error::connection_reset || ec == asio::error::broken_pipe) return "connection-reset";
  return "io-error";
}
}  // namespace

void Connection::OnRead(const boost::system::error_code& ec, std::size_t n) {
  m_reading = false;
  if (m_socket_closed) return;
  if (m_draining) {
    // Graceful close: discard until the peer closes too (or the linger
    // timer fires), so that closing never resets a connection whose peer
    // has not yet read our Disconnect frame.
    if (ec) {
      Shutdown();
    } else {
      ReadMore();
    }
    return;
  }
  if (m_closing) return;
  if (ec) {
    Close(ReasonFor(ec), false);
    return;
  }
  m_bytes_in += n;
  m_last_receive = Clock::now();
  ByteSpan data(m_read_buf.data(), n);
  auto self = shared_from_this();
  while (!data.empty()) {
    Result<std::size_t> used = m_decoder.Feed(data);
    if (!used.ok()) {
      m_owner->OnFrameError(self, used.status());
      // Never read past garbage, whatever the owner decided.
      if (!m_closing) Close(used.status().reason(), true);
      return;
    }
    data = data.subspan(*used);
    if (std::optional<Frame> frame = m_decoder.TakeFrame()) {
      ++m_frames_in;
      m_owner->OnFrame(self, std::move(*frame));
      if (m_closing) return;
    }
  }
  ReadMore();
}

bool Connection::Send(MsgType type, std::shared_ptr<const Bytes> payload) {
  if (m_closing) return false;
  // A sealed frame carries no checksum: skip the SHA-256.
  const FrameHeaderBytes header = m_send_cipher ? EncodeFrameHeader(m_options.magic, type, payload->size(), Hash256{})
                                                : EncodeFrameHeader(m_options.magic, type, *payload);
  return SendWithHeader(header, std::move(payload));
}

bool Connection::SendWithHeader(const FrameHeaderBytes& header, std::shared_ptr<const Bytes> payload) {
  if (m_closing) return false;
  const std::size_t size = kFrameHeaderSize + payload->size() + (m_send_cipher ? kSealOverhead : 0);
  if (m_queued_bytes > 0 && m_queued_bytes + size > m_options.max_send_queue_bytes) {
    Close("send-queue-full", false);
    return false;
  }
  if (!Enqueue(header, std::move(payload))) return false;
  ++m_frames_out;
  if (!m_writing) WriteMore();
  return true;
}

bool Connection::Enqueue(const FrameHeaderBytes& header, std::shared_ptr<const Bytes> payload) {
  if (m_send_cipher) {
    // Sealed here, in queue order, which is the order on the wire: the
    // counter nonces the peer expects.
    Result<SealedFrame> sealed = SealFrame(*m_send_cipher, header, *payload);
    if (!sealed.ok()) {
      Close(sealed.status().reason(), false);
      return false;
    }
    payload = std::make_shared<const Bytes>(std::move(sealed->body));
    m_queue.push_back(OutFrame{sealed->header, std::move(payload)});
  } else {
    m_queue.push_back(OutFrame{header, std::move(payload)});
  }
  m_queued_bytes += kFrameHeaderSize + m_queue.back().payload->size();
  return true;
}

void Connection::WriteMore() {
  if (m_socket_closed) return;
  if (m_queue.empty()) {
    m_writing = false;
    if (m_flush_then_close && !m_draining) {
      boost::system::error_code ec;
      m_socket.shutdown(tcp::socket::shutdown_send, ec);
      m_draining = true;
      if (!m_reading) ReadMore();
    }
    return;
  }
  // Gather many small frames into one write: per-frame syscalls would cap
  // small-message throughput far below what the link can carry.
  constexpr std::size_t kMaxFramesPerWrite = 64;
  constexpr std::size_t kMaxBytesPerWrite = std::size_t{1} << 20;
  m_write_bufs.clear();
  std::size_t batch = 0;
  while (!m_queue.empty() && m_in_flight.size() < kMaxFramesPerWrite && batch < kMaxBytesPerWrite) {
    m_in_flight.push_back(std::move(m_queue.front()));
    m_queue.pop_front();
    const OutFrame& f = m_in_flight.back();
    m_write_bufs.emplace_back(f.header.data(), f.header.size());
    if (!f.payload->empty()) m_write_bufs.emplace_back(f.payload->data(), f.payload->size());
    batch += f.header.size() + f.payload->size();
  }
  m_writing = true;
  asio::async_write(m_socket, m_write_bufs,
                    [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                      self->OnWritten(ec, n);
                    });
}

void Connection::OnWritten(const boost::system::error_code& ec, std::size_t n) {
  m_bytes_out += n;
  for (const OutFrame& f : m_in_flight) m_queued_bytes -= f.header.size() + f.payload->size();
  m_in_flight.clear();
  m_writing = false;
  if (m_socket_closed) return;
  if (ec) {
    if (!m_closing) {
      Close(ReasonFor(ec), false);
    } else {
      Shutdown();
    }
    return;
  }
  WriteMore();
}

void Connection::Close(const std::string& reason, bool notify_remote) {
  if (m_closing) {
    if (!notify_remote) Shutdown();  // cut a graceful close short
    return;
  }
  m_closing = true;
  NotifyClosed(reason);
  if (!notify_remote || m_socket_closed) {
    Shutdown();
    return;
  }
  // Drop what was queued but not yet written, then say why we leave. A
  // sealed stream cannot skip frames (their counters are spent, and the
  // peer could not open our Disconnect): there the queue goes out first,
  // within the same linger time.
  if (!m_send_cipher) {
    for (const OutFrame& f : m_queue) m_queued_bytes -= f.header.size() + f.payload->size();
    m_queue.clear();
  }
  const auto payload = std::make_shared<const Bytes>(EncodeToBytes(DisconnectMsg{reason.substr(
      0, std::min(reason.size(), kMaxReasonBytes))}));
  if (!Enqueue(EncodeFrameHeader(m_options.magic, MsgType::kDisconnect, *payload), payload)) {
    Shutdown();
    return;
  }
  m_flush_then_close = true;
  m_linger_timer.expires_after(m_options.linger);
  m_linger_timer.async_wait([self = shared_from_this()](const boost::system::error_code& tec) {
    if (!tec) self->Shutdown();
  });
  if (!m_writing) WriteMore();
}

void Connection::Shutdown() {
  if (m_socket_closed) return;
  m_socket_closed = true;
  m_closing = true;
  boost::system::error_code ec;
  m_socket.shutdown(tcp::socket::shutdown_both, ec);
  m_socket.close(ec);
  m_linger_timer.cancel();
  // Frames in flight stay alive until their aborted write handler runs.
  for (const OutFrame& f : m_queue) m_queued_bytes -= f.header.size() + f.payload->size();
  m_queue.clear();
}

void Connection::NotifyClosed(const std::string& reason) {
  if (m_notified) return;
  m_notified = true;
  asio::post(m_socket.get_executor(),
             [self = shared_from_this(), reason] { self->m_owner->OnConnectionClosed(self, reason); });
}

PeerInfo Connection::Info() const {
  PeerInfo info;
  info.id = m_id;
  info.remote = m_remote;
  info.inbound = m_inbound;
  info.established = m_session.established;
  if (m_session.established) info.hello = m_session.hello;
  info.score = m_session.score;
  info.last_rtt = m_session.last_rtt;
  info.frames_in = m_frames_in;
  info.frames_out = m_frames_out;
  info.bytes_in = m_bytes_in;
  info.bytes_out = m_bytes_out;
  info.send_queue_bytes = m_queued_bytes;
  return info;
}

}  // namespace vt::net
