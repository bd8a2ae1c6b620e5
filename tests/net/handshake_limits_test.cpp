// Handshake limits (docs/net.md, "Handshake limits") under attack, over real
// TCP on loopback: a stranger that opens many connections and never finishes
// (or slowly finishes) the handshake must not keep honest peers out nor make
// the node hold an unbounded number of connections.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "tests/net/net_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;
using test::FastConfig;
using test::TestNode;
using test::WaitFor;
using tcp = boost::asio::ip::tcp;

// Raw sockets of an attacker: connect from a chosen loopback address and
// send whatever it likes, never reading (one io_context for them all).
class Swarm {
 public:
  std::size_t Open(std::uint16_t port, const std::string& from, std::size_t n) {
    std::size_t ok = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto s = std::make_unique<tcp::socket>(m_io);
      boost::system::error_code ec;
      s->open(tcp::v4(), ec);
      if (!ec) s->bind(tcp::endpoint(boost::asio::ip::make_address(from), 0), ec);
      if (!ec) s->connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), ec);
      if (ec) continue;
      ++ok;
      m_sockets.push_back(std::move(s));
    }
    return ok;
  }
  // Writes `bytes` on the last opened socket (errors ignored: the node may
  // have closed it).
  void SendOnLast(ByteSpan bytes) {
    if (m_sockets.empty()) return;
    boost::system::error_code ec;
    boost::asio::write(*m_sockets.back(), boost::asio::buffer(bytes.data(), bytes.size()), ec);
  }
  // One byte on every socket (a trickling handshake); the number still open.
  std::size_t TrickleAll(std::uint8_t byte) {
    std::size_t open = 0;
    for (auto& s : m_sockets) {
      boost::system::error_code ec;
      s->write_some(boost::asio::buffer(&byte, 1), ec);
      open += ec ? 0 : 1;
    }
    return open;
  }
  std::size_t size() const { return m_sockets.size(); }

 private:
  boost::asio::io_context m_io;
  std::vector<std::unique_ptr<tcp::socket>> m_sockets;
};

// Inbound connections of `node` that have not proven a key, by address.
std::map<std::string, std::size_t> PendingByAddress(const TestNode& node) {
  std::map<std::string, std::size_t> out;
  for (const PeerInfo& p : node.node->Peers()) {
    if (p.inbound && !p.established) ++out[p.remote.host];
  }
  return out;
}
std::size_t Total(const std::map<std::string, std::size_t>& m) {
  std::size_t n = 0;
  for (const auto& [k, v] : m) n += v;
  return n;
}

P2PConfig Dialing(Endpoint ep) {
  P2PConfig c = FastConfig();
  c.peers = {ep};
  return c;
}

// A valid Hello under a fresh key: the attacker that starts honestly and then
// never sends its Auth (the node has signed its own Auth for it by then).
Bytes StallingHello() {
  Hello h = test::RawPeer::DefaultHello();
  h.protocol_version = kProtocolVersion;
  h.node_id = test::IdOf(*test::RandomKey());
  EXPECT_TRUE(crypto::FillOsRandom(h.challenge.bytes).ok());
  const auto eph = crypto::X25519Key::Generate().value();
  std::copy(eph.public_key().begin(), eph.public_key().end(), h.ephemeral.bytes.begin());
  return EncodeFrame(ChainMagic(test::kChain), MsgType::kHello, EncodeToBytes(h));
}

// Hundreds of silent connections from the shared loopback address, more than
// max_inbound: an honest node dialing in afterwards must still get in, and
// the node must hold no more than max_pending unproven connections. The
// handshake deadline is long here, so only the limits can let the honest
// node in.
TEST(Attack, SilentConnectionsCannotKeepHonestPeersOut) {
  P2PConfig ca = FastConfig();
  ca.handshake_timeout = 60s;
  TestNode a(ca);
  Swarm swarm;
  ASSERT_EQ(swarm.Open(a.node->listen_port(), "127.0.0.1", 300), 300u);
  ASSERT_TRUE(WaitFor([&] { return a.node->Stats().connections_in >= 300; }));
  EXPECT_LE(Total(PendingByAddress(a)), ca.max_pending);

  TestNode b(Dialing(a.endpoint()));
  EXPECT_TRUE(WaitFor([&] { return a.PeerWithNodeId(b.node->node_id()).has_value(); }, 10s))
      << "an honest dialer was kept out by connections that never said hello";
  EXPECT_GE(a.node->Stats().handshakes_evicted, 300u - ca.max_pending);
  EXPECT_LE(Total(PendingByAddress(a)), ca.max_pending);
}

// Over a non-exempt address (loopback bans switched off so 127.0.0.0/8 stands
// for distinct hosts), one address holds at most max_pending_per_address
// unproven connections, and its flood evicts only its own: a slow but honest
// handshake from another address survives it.
TEST(Attack, OneAddressFloodEvictsOnlyItsOwnPendingConnections) {
  P2PConfig ca = FastConfig();
  ca.handshake_timeout = 60s;
  ca.never_ban_loopback = false;
  TestNode a(ca);
  Swarm slow;  // a patient, honest-looking stranger at 127.0.0.20
  ASSERT_EQ(slow.Open(a.node->listen_port(), "127.0.0.20", 1), 1u);
  Swarm flood;
  ASSERT_EQ(flood.Open(a.node->listen_port(), "127.0.0.21", 200), 200u);
  ASSERT_TRUE(WaitFor([&] { return a.node->Stats().connections_in >= 201; }));
  const auto pending = PendingByAddress(a);
  EXPECT_LE(pending.count("127.0.0.21") ? pending.at("127.0.0.21") : 0, ca.max_pending_per_address);
  EXPECT_EQ(pending.count("127.0.0.20") ? pending.at("127.0.0.20") : 0, 1u)
      << "the flood from another address evicted a stranger's pending handshake";
}

// A connection that trickles its handshake a byte at a time is closed at the
// handshake deadline, however steadily it sends.
TEST(Attack, TricklingHandshakeMeetsTheDeadline) {
  P2PConfig ca = FastConfig();
  ca.handshake_timeout = 600ms;
  TestNode a(ca);
  Swarm swarm;
  ASSERT_EQ(swarm.Open(a.node->listen_port(), "127.0.0.1", 5), 5u);
  ASSERT_TRUE(WaitFor([&] { return Total(PendingByAddress(a)) == 5; }));
  const Bytes hello = StallingHello();
  const auto start = std::chrono::steady_clock::now();
  std::size_t i = 0;
  while (std::chrono::steady_clock::now() - start < 3s && Total(PendingByAddress(a)) > 0) {
    swarm.TrickleAll(hello[i % 8]);  // never completes the 14-byte header
    ++i;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(Total(PendingByAddress(a)), 0u);
  EXPECT_TRUE(a.HasDisconnect("handshake-timeout"));
}

// Randomised adversary (seed: VT_TEST_SEED): from the honest nodes' own
// address and from three others, a stream of connections that stay silent,
// send half a header, a valid hello and then stall, or garbage — while honest
// nodes dial in at random moments. Every honest node gets in; the node never
// holds more unproven connections than its bounds, in total and per address.
TEST(Property, HandshakeFloodNeverExceedsBoundsAndHonestPeersGetIn) {
  std::mt19937_64 rng(vt::test::TestSeed());
  P2PConfig ca = FastConfig();
  ca.handshake_timeout = 2s;
  ca.max_pending = 16;
  ca.max_pending_per_address = 4;
  ca.never_ban_loopback = false;
  ca.ban_threshold = 1 << 30;  // garbage must not get an attacker's address banned: it must be bounded anyway
  TestNode a(ca);
  const std::vector<std::string> froms = {"127.0.0.1", "127.0.0.31", "127.0.0.32", "127.0.0.33"};
  const Bytes hello = StallingHello();
  Swarm swarm;
  std::vector<std::unique_ptr<TestNode>> honest;
  std::size_t max_total = 0;
  std::map<std::string, std::size_t> max_per;
  const std::size_t kHonest = 4;
  for (int step = 0; step < 400; ++step) {
    const std::string& from = froms[rng() % froms.size()];
    if (swarm.Open(a.node->listen_port(), from, 1) == 1) {
      switch (rng() % 4) {
        case 0: break;  // silent
        case 1: swarm.SendOnLast(ByteSpan(hello.data(), 7)); break;
        case 2: swarm.SendOnLast(hello); break;
        default: {
          Bytes junk(1 + rng() % 64);
          for (auto& byte : junk) byte = static_cast<std::uint8_t>(rng());
          swarm.SendOnLast(junk);
        }
      }
    }
    if (honest.size() < kHonest && rng() % 80 == 0) honest.push_back(std::make_unique<TestNode>(Dialing(a.endpoint())));
    if (step % 10 == 0) {
      const auto pending = PendingByAddress(a);
      max_total = std::max(max_total, Total(pending));
      for (const auto& [addr, n] : pending) max_per[addr] = std::max(max_per[addr], n);
    }
  }
  while (honest.size() < kHonest) honest.push_back(std::make_unique<TestNode>(Dialing(a.endpoint())));
  for (const auto& h : honest) {
    EXPECT_TRUE(WaitFor([&] { return a.PeerWithNodeId(h->node->node_id()).has_value(); }, 10s))
        << "an honest node did not get in";
  }
  EXPECT_LE(max_total, ca.max_pending);
  for (const auto& [addr, n] : max_per) EXPECT_LE(n, ca.max_pending_per_address) << addr;
  EXPECT_GT(a.node->Stats().handshakes_evicted, 0u);
}

}  // namespace
}  // namespace vt::net
