// The fault-injection proxy of tests/support: whole frames dropped,
// duplicated, corrupted, injected, delayed (in order), session frames untouched, links
// cut and refused during a partition and accepted again after it. A sink
// behind the proxy decodes what arrives with the real frame decoder, so a
// fault that broke the framing would fail here.

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "net/frame.h"
#include "tests/support/fault_proxy.h"
#include "tests/support/test_seed.h"

namespace vt::test {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using net::MsgType;

const std::uint32_t kMagic = net::ChainMagic("proxy-test");
// An upper bound for a failure to show, never a measured time.
constexpr auto kDeadline = std::chrono::seconds(20);

// Accepts connections one after another and decodes every frame they carry.
class Sink {
 public:
  Sink() {
    m_acceptor.open(tcp::v4());
    m_acceptor.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    m_acceptor.listen();
    m_thread = std::thread([this] { Loop(); });
  }
  // Declare the proxy after the sink: it is gone (its links closed) first.
  ~Sink() {
    {
      std::lock_guard lock(m_mu);
      m_stop = true;
    }
    boost::system::error_code ignored;
    asio::io_context io;
    tcp::socket wake(io);  // ends a blocking accept
    wake.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port()), ignored);
    m_thread.join();
    m_acceptor.close(ignored);
  }
  std::uint16_t port() const { return m_acceptor.local_endpoint().port(); }
  // Frames received so far (payload's first byte = a sequence number), waiting until `done` holds.
  template <typename Pred>
  std::vector<net::Frame> WaitFor(Pred done) {
    std::unique_lock lock(m_mu);
    m_cv.wait_for(lock, kDeadline, [&] { return done(m_frames); });
    return m_frames;
  }
  std::size_t connections() {
    std::lock_guard lock(m_mu);
    return m_connections;
  }

 private:
  void Loop() {
    while (true) {
      boost::system::error_code ec;
      auto sock = std::make_unique<tcp::socket>(m_io);
      m_acceptor.accept(*sock, ec);
      if (ec) return;
      {
        std::lock_guard lock(m_mu);
        if (m_stop) return;
        ++m_connections;
        m_cv.notify_all();
      }
      net::FrameDecoder dec(kMagic);
      std::array<std::uint8_t, 4096> buf{};
      while (true) {
        const std::size_t n = sock->read_some(asio::buffer(buf), ec);
        if (ec) break;
        ByteSpan in(buf.data(), n);
        while (!in.empty()) {
          auto took = dec.Feed(in);
          ASSERT_TRUE(took.ok()) << took.status().ToString();
          in = in.subspan(*took);
          if (auto f = dec.TakeFrame()) {
            std::lock_guard lock(m_mu);
            m_frames.push_back(std::move(*f));
            m_cv.notify_all();
          }
        }
      }
    }
  }

  asio::io_context m_io;
  tcp::acceptor m_acceptor{m_io};
  std::thread m_thread;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<net::Frame> m_frames;
  std::size_t m_connections = 0;
  bool m_stop = false;
};

Bytes Frames(MsgType type, int first, int count) {
  Bytes out;
  for (int i = first; i < first + count; ++i) {
    const Bytes f = net::EncodeFrame(kMagic, type, Bytes{static_cast<std::uint8_t>(i), 1, 2, 3});
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

struct Client {
  explicit Client(std::uint16_t port) : sock(io) { sock.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port)); }
  void Send(const Bytes& b) { asio::write(sock, asio::buffer(b)); }
  asio::io_context io;
  tcp::socket sock;
};

FaultPolicy Drop(double p, std::set<std::uint16_t> types = {}) {
  FaultPolicy f;
  f.drop = p;
  f.faulty_types = std::move(types);
  return f;
}

std::size_t CountType(const std::vector<net::Frame>& fs, MsgType t) {
  return static_cast<std::size_t>(std::count_if(fs.begin(), fs.end(), [&](const net::Frame& f) { return f.type == t; }));
}

TEST(FaultProxy, PassesFramesUnchangedWithoutFaults) {
  Sink sink;
  FaultProxy proxy(sink.port(), TestSeed());
  ASSERT_TRUE(proxy.Start().ok());
  Client c(proxy.port());
  c.Send(Frames(MsgType::kTx, 0, 100));
  const auto got = sink.WaitFor([](const auto& fs) { return fs.size() >= 100; });
  ASSERT_EQ(got.size(), 100u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].payload[0], i);  // in order
}

TEST(FaultProxy, DropsAndDuplicatesWholeFramesButNeverSessionOnes) {
  Sink sink;
  FaultProxy proxy(sink.port(), TestSeed());
  ASSERT_TRUE(proxy.Start().ok());
  proxy.SetPolicy(Drop(1.0));
  Client c(proxy.port());
  c.Send(Frames(MsgType::kTx, 0, 50));
  c.Send(Frames(MsgType::kPing, 0, 1));  // a session frame: never faulted, and a marker
  auto got = sink.WaitFor([](const auto& fs) { return CountType(fs, MsgType::kPing) >= 1; });
  EXPECT_EQ(CountType(got, MsgType::kTx), 0u);
  EXPECT_EQ(proxy.stats().dropped, 50u);

  FaultPolicy dup;
  dup.duplicate = 1.0;
  proxy.SetPolicy(dup);
  c.Send(Frames(MsgType::kBlock, 0, 20));
  c.Send(Frames(MsgType::kPing, 1, 1));
  got = sink.WaitFor([](const auto& fs) { return CountType(fs, MsgType::kPing) >= 2; });
  EXPECT_EQ(CountType(got, MsgType::kBlock), 40u);
  EXPECT_EQ(CountType(got, MsgType::kPing), 2u);

  // Only the named types are faulted.
  proxy.SetPolicy(Drop(1.0, {static_cast<std::uint16_t>(MsgType::kBlock)}));
  c.Send(Frames(MsgType::kBlock, 0, 5));
  c.Send(Frames(MsgType::kTx, 100, 5));
  c.Send(Frames(MsgType::kPing, 2, 1));
  got = sink.WaitFor([](const auto& fs) { return CountType(fs, MsgType::kPing) >= 3; });
  EXPECT_EQ(CountType(got, MsgType::kBlock), 40u);  // none more
  EXPECT_EQ(CountType(got, MsgType::kTx), 5u);
}

// Delays keep each direction's frame order: a sealed P2P stream cannot be
// reordered without breaking (docs/net.md, "Frame encryption"), and TCP
// never reorders; jitter is what a network does to it.
TEST(FaultProxy, DelaysKeepOrderAndLoseNone) {
  Sink sink;
  FaultProxy proxy(sink.port(), TestSeed());
  ASSERT_TRUE(proxy.Start().ok());
  FaultPolicy delay;
  delay.min_delay_ms = 1;
  delay.max_delay_ms = 400;
  proxy.SetPolicy(delay);
  Client c(proxy.port());
  c.Send(Frames(MsgType::kTx, 0, 60));  // one write: the proxy reads them together
  const auto got = sink.WaitFor([](const auto& fs) { return fs.size() >= 60; });
  ASSERT_EQ(got.size(), 60u);
  std::set<int> seen;
  std::size_t inversions = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    seen.insert(got[i].payload[0]);
    if (i > 0 && got[i].payload[0] < got[i - 1].payload[0]) ++inversions;
  }
  EXPECT_EQ(seen.size(), 60u);  // each exactly once
  // 60 frames with independent delays in [1, 400] ms would overtake each
  // other for any seed; the proxy holds each behind the one before.
  EXPECT_EQ(inversions, 0u);
  EXPECT_EQ(proxy.stats().delayed, 60u);
  // Undelayed frames (session ones) wait behind delayed ones too.
  c.Send(Frames(MsgType::kTx, 100, 5));
  c.Send(Frames(MsgType::kPing, 200, 1));
  const auto more = sink.WaitFor([](const auto& fs) { return fs.size() >= 66; });
  ASSERT_EQ(more.size(), 66u);
  EXPECT_EQ(more.back().type, MsgType::kPing);
}

TEST(FaultProxy, PartitionCutsAndRefusesLinksUntilHealed) {
  Sink sink;
  FaultProxy proxy(sink.port(), TestSeed());
  ASSERT_TRUE(proxy.Start().ok());
  Client c(proxy.port());
  c.Send(Frames(MsgType::kTx, 0, 1));
  sink.WaitFor([](const auto& fs) { return fs.size() >= 1; });
  proxy.Partition(true);
  // The open link is cut: the client's read ends.
  std::array<std::uint8_t, 1> b{};
  boost::system::error_code ec;
  c.sock.read_some(asio::buffer(b), ec);
  EXPECT_TRUE(ec);
  // A new link is accepted and closed at once.
  Client refused(proxy.port());
  refused.sock.read_some(asio::buffer(b), ec);
  EXPECT_TRUE(ec);
  EXPECT_GE(proxy.stats().refused, 1u);
  EXPECT_EQ(sink.connections(), 1u);
  proxy.Partition(false);
  Client healed(proxy.port());
  healed.Send(Frames(MsgType::kTx, 7, 1));
  const auto got = sink.WaitFor([](const auto& fs) { return fs.size() >= 2; });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].payload[0], 7);
  EXPECT_EQ(sink.connections(), 2u);
}

}  // namespace
}  // namespace vt::test
