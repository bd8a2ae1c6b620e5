#include "tests/support/fault_proxy.h"

#include <array>
#include <chrono>
#include <deque>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "net/frame.h"

namespace vt::test {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

bool IsSessionType(std::uint16_t type) {
  using net::MsgType;
  for (MsgType t : {MsgType::kHello, MsgType::kAuth, MsgType::kDisconnect, MsgType::kPing, MsgType::kPong})
    if (type == static_cast<std::uint16_t>(t)) return true;
  return false;
}

std::uint64_t Le(const std::uint8_t* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

// One proxied connection: `down` is the dialing peer, `up` the node.
// Direction 0 carries down → up, direction 1 up → down.
class FaultProxy::Link : public std::enable_shared_from_this<Link> {
 public:
  Link(FaultProxy& proxy, tcp::socket down) : m_proxy(proxy), m_down(std::move(down)), m_up(proxy.m_io) {}

  void Start() {
    auto self = shared_from_this();
    m_up.async_connect(tcp::endpoint(asio::ip::address_v4::loopback(), m_proxy.m_target_port),
                       [self](const boost::system::error_code& ec) {
                         if (ec) return self->Close();
                         self->Read(0);
                         self->Read(1);
                       });
  }

  void Close() {
    m_closed = true;
    boost::system::error_code ignored;
    m_down.close(ignored);
    m_up.close(ignored);
  }

 private:
  struct Dir {
    std::array<std::uint8_t, 64 * 1024> buf{};
    Bytes pending;      // bytes of an incomplete frame
    bool raw = false;   // the stream stopped parsing as frames: pass bytes through
    std::deque<std::shared_ptr<const Bytes>> out;
    bool writing = false;
    // When the last delayed frame of this direction is due: later frames
    // wait at least until just after it, so delays never reorder.
    std::chrono::steady_clock::time_point last_due{};
  };

  tcp::socket& From(int d) { return d == 0 ? m_down : m_up; }
  tcp::socket& To(int d) { return d == 0 ? m_up : m_down; }

  void Read(int d) {
    auto self = shared_from_this();
    From(d).async_read_some(asio::buffer(m_dir[d].buf), [self, d](const boost::system::error_code& ec, std::size_t n) {
      if (ec || self->m_closed) return self->Close();
      self->OnBytes(d, n);
      self->Read(d);
    });
  }

  void OnBytes(int d, std::size_t n) {
    Dir& dir = m_dir[d];
    dir.pending.insert(dir.pending.end(), dir.buf.begin(), dir.buf.begin() + static_cast<std::ptrdiff_t>(n));
    std::size_t pos = 0;
    while (pos < dir.pending.size()) {
      if (dir.raw) {
        Emit(d, Bytes(dir.pending.begin() + static_cast<std::ptrdiff_t>(pos), dir.pending.end()), Fate{});
        pos = dir.pending.size();
        break;
      }
      if (dir.pending.size() - pos < net::kFrameHeaderSize) break;
      const std::uint8_t* h = dir.pending.data() + pos;
      const auto type = static_cast<std::uint16_t>(Le(h + 4, 2));
      const auto len = static_cast<std::uint32_t>(Le(h + 6, 4));
      if (len > net::kMaxFrameLength) {
        dir.raw = true;  // not our framing: the node will judge the garbage
        continue;
      }
      const std::size_t size = net::kFrameHeaderSize + len;
      if (dir.pending.size() - pos < size) break;
      Bytes frame(dir.pending.begin() + static_cast<std::ptrdiff_t>(pos),
                  dir.pending.begin() + static_cast<std::ptrdiff_t>(pos + size));
      pos += size;
      const Fate fate = m_proxy.Decide(type, len);
      if (fate.inject) {
        Bytes forged(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(net::kFrameHeaderSize));
        const Bytes body = m_proxy.RandomBytes(len);
        forged.insert(forged.end(), body.begin(), body.end());
        Emit(d, std::move(forged), Fate{1, fate.delay_ms, std::nullopt, false});
      }
      if (fate.flip_bit) {
        frame[net::kFrameHeaderSize + *fate.flip_bit / 8] ^= static_cast<std::uint8_t>(1u << (*fate.flip_bit % 8));
      }
      Emit(d, std::move(frame), fate);
    }
    dir.pending.erase(dir.pending.begin(), dir.pending.begin() + static_cast<std::ptrdiff_t>(pos));
  }

  void Emit(int d, Bytes bytes, Fate fate) {
    auto data = std::make_shared<const Bytes>(std::move(bytes));
    Dir& dir = m_dir[d];
    for (int c = 0; c < fate.copies; ++c) {
      const auto now = std::chrono::steady_clock::now();
      if (fate.delay_ms == 0 && dir.last_due < now) {
        Enqueue(d, data);
        continue;
      }
      // Timers due at distinct times complete in that order.
      const auto due = std::max(now + std::chrono::milliseconds(fate.delay_ms), dir.last_due + std::chrono::microseconds(1));
      dir.last_due = due;
      auto timer = std::make_shared<asio::steady_timer>(m_proxy.m_io, due);
      auto self = shared_from_this();
      timer->async_wait([self, d, data, timer](const boost::system::error_code& ec) {
        if (!ec) self->Enqueue(d, data);
      });
    }
  }

  void Enqueue(int d, std::shared_ptr<const Bytes> data) {
    if (m_closed) return;
    Dir& dir = m_dir[d];
    dir.out.push_back(std::move(data));
    if (!dir.writing) WriteNext(d);
  }

  void WriteNext(int d) {
    Dir& dir = m_dir[d];
    if (dir.out.empty() || m_closed) {
      dir.writing = false;
      return;
    }
    dir.writing = true;
    auto self = shared_from_this();
    auto data = dir.out.front();
    asio::async_write(To(d), asio::buffer(*data), [self, d, data](const boost::system::error_code& ec, std::size_t) {
      if (ec) return self->Close();
      self->m_dir[d].out.pop_front();
      {
        std::lock_guard lock(self->m_proxy.m_mu);
        ++self->m_proxy.m_stats.forwarded;
      }
      self->WriteNext(d);
    });
  }

  FaultProxy& m_proxy;
  tcp::socket m_down;
  tcp::socket m_up;
  std::array<Dir, 2> m_dir;
  bool m_closed = false;
};

FaultProxy::FaultProxy(std::uint16_t target_port, std::uint64_t seed, std::string listen_host)
    : m_target_port(target_port), m_host(std::move(listen_host)), m_rng(seed) {}

FaultProxy::~FaultProxy() { Stop(); }

Status FaultProxy::Start() {
  boost::system::error_code ec;
  boost::system::error_code parse_ec;
  const auto address = asio::ip::make_address_v4(m_host, parse_ec);
  if (parse_ec || !address.is_loopback()) return Status::Error("proxy-bad-host", m_host);
  const bool own_port = address != asio::ip::address_v4::loopback();
  const tcp::endpoint ep(address, own_port ? m_target_port : 0);
  m_acceptor.open(ep.protocol(), ec);
  if (!ec) m_acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) m_acceptor.bind(ep, ec);
  if (!ec) m_acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Error("proxy-bind-failed", ec.message());
  m_port = m_acceptor.local_endpoint().port();
  Accept();
  m_thread = std::thread([this] { m_io.run(); });
  return Status::Ok();
}

void FaultProxy::Stop() {
  if (!m_thread.joinable()) return;
  asio::post(m_io, [this] {
    boost::system::error_code ignored;
    m_acceptor.close(ignored);
    {
      std::lock_guard lock(m_mu);
      for (auto& weak : m_links)
        if (auto link = weak.lock()) link->Close();
    }
    m_io.stop();  // pending delays are dropped with the io context
  });
  m_thread.join();
}

void FaultProxy::Accept() {
  m_acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec) return;  // closed
    if (m_partitioned) {
      {
        std::lock_guard lock(m_mu);
        ++m_stats.refused;  // counted before the peer can see the close
      }
      boost::system::error_code ignored;
      socket.close(ignored);
    } else {
      auto link = std::make_shared<Link>(*this, std::move(socket));
      {
        std::lock_guard lock(m_mu);
        ++m_stats.links;
        std::erase_if(m_links, [](const std::weak_ptr<Link>& w) { return w.expired(); });
        m_links.push_back(link);
      }
      link->Start();
    }
    Accept();
  });
}

void FaultProxy::SetPolicy(FaultPolicy policy) {
  std::lock_guard lock(m_mu);
  m_policy = std::move(policy);
}

void FaultProxy::Partition(bool on) {
  m_partitioned = on;
  if (!on) return;
  asio::post(m_io, [this] {
    std::lock_guard lock(m_mu);
    for (auto& weak : m_links)
      if (auto link = weak.lock()) link->Close();
  });
}

FaultStats FaultProxy::stats() const {
  std::lock_guard lock(m_mu);
  return m_stats;
}

Bytes FaultProxy::RandomBytes(std::size_t n) {
  std::lock_guard lock(m_mu);
  Bytes out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(m_rng());
  return out;
}

FaultProxy::Fate FaultProxy::Decide(std::uint16_t type, std::size_t body_bytes) {
  std::lock_guard lock(m_mu);
  const bool faulty = m_policy.faulty_types.empty() ? !IsSessionType(type) : m_policy.faulty_types.count(type) > 0;
  if (!faulty) return Fate{};
  std::uniform_real_distribution<double> coin(0, 1);
  Fate f;
  if (coin(m_rng) < m_policy.drop) {
    ++m_stats.dropped;
    f.copies = 0;
    return f;
  }
  if (coin(m_rng) < m_policy.duplicate) {
    ++m_stats.duplicated;
    f.copies = 2;
  }
  if (body_bytes > 0 && coin(m_rng) < m_policy.corrupt) {
    ++m_stats.corrupted;
    f.flip_bit = std::uniform_int_distribution<std::size_t>(0, body_bytes * 8 - 1)(m_rng);
  }
  if (coin(m_rng) < m_policy.inject) {
    ++m_stats.injected;
    f.inject = true;
  }
  if (m_policy.max_delay_ms > 0) {
    f.delay_ms = std::uniform_int_distribution<std::uint32_t>(m_policy.min_delay_ms, m_policy.max_delay_ms)(m_rng);
    if (f.delay_ms > 0) ++m_stats.delayed;
  }
  return f;
}

}  // namespace vt::test
