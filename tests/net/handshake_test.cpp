// The authenticated handshake (net/handshake.h) under attack, over real TCP
// on loopback: a connection that claims an honest node's id must never be
// able to get that node banned, disconnected or replaced, whatever it sends
// (impersonation, relayed and replayed signatures, reflection, garbage); and
// address bans must never cut local or configured peers.

#include "net/handshake.h"

#include <gtest/gtest.h>

#include <random>

#include "crypto/random.h"
#include "tests/net/net_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;
using test::FastConfig;
using test::RawPeer;
using test::TestNode;
using test::WaitFor;

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string NodeKey(const Hash256& id) { return "node:" + id.Hex(); }

std::string DisconnectReason(RawPeer& raw) {
  auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
  if (!bye) return "<none>";
  Result<DisconnectMsg> msg = DecodeExact<DisconnectMsg>(bye->payload);
  return msg.ok() ? msg->reason : "<undecodable>";
}

// Honest nodes a and b (b dials a), established both ways.
struct HonestPair {
  explicit HonestPair(P2PConfig ca = FastConfig()) : a(std::move(ca)), b(Dialing(a.endpoint())) {
    EXPECT_TRUE(WaitFor([&] { return a.PeerWithNodeId(b_id()).has_value() && b.PeerWithNodeId(a_id()).has_value(); }));
    b_on_a = a.PeerWithNodeId(b_id())->id;
  }
  static P2PConfig Dialing(Endpoint ep) {
    P2PConfig c = FastConfig();
    c.peers = {ep};
    return c;
  }
  Hash256 a_id() const { return a.node->node_id(); }
  Hash256 b_id() const { return b.node->node_id(); }

  // The property every attack below must leave intact: b is not banned on a,
  // its original connection is untouched, and gossip still flows both ways.
  void ExpectBUnharmed(const std::string& tag) {
    SCOPED_TRACE(tag);
    EXPECT_FALSE(a.IsBanned(NodeKey(b_id())));
    EXPECT_FALSE(a.IsBanned("addr:127.0.0.1"));
    const auto on_a = a.PeerWithNodeId(b_id());
    ASSERT_TRUE(on_a.has_value());
    EXPECT_EQ(on_a->id, b_on_a) << "b's connection was replaced or dropped";
    EXPECT_EQ(on_a->score, 0);
    std::size_t with_b_id = 0;
    for (const PeerInfo& p : a.node->Peers()) with_b_id += (p.established && p.hello.node_id == b_id()) ? 1 : 0;
    EXPECT_EQ(with_b_id, 1u) << "someone else holds an established connection as b";
    Result<Hash256> down = b.node->Broadcast(GossipKind::kTx, Text("b->a " + tag));
    ASSERT_TRUE(down.ok());
    EXPECT_TRUE(WaitFor([&] { return a.handler().Count(*down) == 1; }));
    Result<Hash256> up = a.node->Broadcast(GossipKind::kTx, Text("a->b " + tag));
    ASSERT_TRUE(up.ok());
    EXPECT_TRUE(WaitFor([&] { return b.handler().Count(*up) == 1; }));
  }

  TestNode a;
  TestNode b;
  PeerId b_on_a = 0;
};

// The issue-15 attack: a connection says hello with an honest validator's id
// and sends junk. Before the handshake proved node keys, this banned the
// honest id for ten minutes (and, across validators, split the chain).
TEST(Attack, ImpersonatedHelloCannotBanAnHonestPeer) {
  HonestPair net;
  {
    RawPeer impostor;
    ASSERT_TRUE(impostor.Connect(net.a.node->listen_port()));
    ASSERT_TRUE(impostor.SendHello(net.b_id()).has_value());
    impostor.SendFrame(MsgType::kTx, Text("junk tx in b's name"));
    EXPECT_EQ(DisconnectReason(impostor), "handshake-expected-auth");
    EXPECT_TRUE(impostor.WaitClosed());
  }
  net.ExpectBUnharmed("hello then junk");
  {
    // A forged proof fares no better, and the junk after it is never read.
    RawPeer impostor;
    ASSERT_TRUE(impostor.Connect(net.a.node->listen_port()));
    ASSERT_TRUE(impostor.SendHello(net.b_id()).has_value());
    AuthMsg forged;
    forged.signature.bytes.fill(0x5a);
    impostor.Send(MsgType::kAuth, forged);
    impostor.SendFrame(MsgType::kBlock, Text("junk block in b's name"));
    EXPECT_EQ(DisconnectReason(impostor), "handshake-bad-signature");
    EXPECT_TRUE(impostor.WaitClosed());
  }
  net.ExpectBUnharmed("forged auth");
  EXPECT_TRUE(net.a.node->Bans().empty());
}

// A misbehaving peer that did prove a key gets that key banned, not b.
TEST(Attack, JunkAfterAProvenHandshakeBansOnlyTheSender) {
  HonestPair net;
  const auto key = test::RandomKey();
  RawPeer attacker;
  ASSERT_TRUE(attacker.Connect(net.a.node->listen_port()));
  ASSERT_TRUE(attacker.Handshake(*key).has_value());
  ASSERT_TRUE(WaitFor([&] { return net.a.PeerWithNodeId(test::IdOf(*key)).has_value(); }));
  attacker.SendFrame(MsgType::kGetBlocks, Bytes{1, 2, 3});  // undecodable: garbage
  EXPECT_EQ(DisconnectReason(attacker), "enc-truncated");
  ASSERT_TRUE(WaitFor([&] { return net.a.IsBanned(NodeKey(test::IdOf(*key))); }));
  net.ExpectBUnharmed("proven attacker");
}

// A man in the middle that b dials passes a's challenge to b and b's proof to
// a. b's signature names the port b dialed (the attacker's), so a, which
// listens elsewhere, refuses it.
TEST(Attack, RelayedProofFromAPeerThatDialedTheAttackerIsRefused) {
  HonestPair net;
  RawPeer mitm_listener;  // b dials this
  const std::uint16_t mitm_port = mitm_listener.Listen();
  net.b.node->AddPeer(Endpoint{"127.0.0.1", mitm_port});
  ASSERT_TRUE(mitm_listener.AcceptOne());
  auto b_hello_frame = mitm_listener.ReadFrameOfType(MsgType::kHello);
  ASSERT_TRUE(b_hello_frame.has_value());
  const Hello b_hello = DecodeExact<Hello>(b_hello_frame->payload).value();
  ASSERT_EQ(b_hello.node_id, net.b_id());

  RawPeer to_a;  // the attacker's connection to a, claiming to be b
  ASSERT_TRUE(to_a.Connect(net.a.node->listen_port()));
  Hello claim = RawPeer::DefaultHello();
  claim.challenge = b_hello.challenge;  // what b will sign as the dialer's challenge
  claim.ephemeral = b_hello.ephemeral;  // a full relay passes the ephemeral keys on too
  const auto a_hello = to_a.SendHello(net.b_id(), claim);
  ASSERT_TRUE(a_hello.has_value());

  // To b, the attacker claims to be a, with a's challenge: b signs exactly
  // the transcript a checks, except for the listener port.
  Hello as_a = RawPeer::DefaultHello();
  as_a.node_id = net.a_id();
  as_a.challenge = a_hello->challenge;
  as_a.ephemeral = a_hello->ephemeral;
  ASSERT_TRUE(mitm_listener.Send(MsgType::kHello, as_a));
  auto b_auth_frame = mitm_listener.ReadFrameOfType(MsgType::kAuth);
  ASSERT_TRUE(b_auth_frame.has_value());
  const AuthMsg b_auth = DecodeExact<AuthMsg>(b_auth_frame->payload).value();

  // The attacker's own view of what b signed verifies (so b really did sign
  // a relayable transcript) ...
  HandshakeTranscript signed_by_b = to_a.Transcript();
  signed_by_b.listener_port = mitm_port;
  EXPECT_TRUE(VerifyHandshake(signed_by_b, HandshakeRole::kDialer, b_auth.signature));
  // ... but a checks it against the port it listens on.
  to_a.Send(MsgType::kAuth, b_auth);
  to_a.SendFrame(MsgType::kTx, Text("junk in b's name"));
  // a's answer is sealed under keys the relay cannot derive (it passed b's
  // and a's ephemeral keys on, holding neither secret): a's own record says why.
  EXPECT_TRUE(to_a.WaitClosed());
  EXPECT_TRUE(WaitFor([&] { return net.a.HasDisconnect("handshake-bad-signature"); }));
  net.ExpectBUnharmed("relay");
}

// A node's own proof sent back to it on a second connection (reflection), or
// a proof replayed on a new connection (fresh challenge), never verifies.
TEST(Attack, ReflectedAndReplayedProofsAreRefused) {
  HonestPair net;
  // Capture a's proof on one connection: the attacker claims b's id, a signs
  // as the listener before it has seen any proof.
  RawPeer first;
  ASSERT_TRUE(first.Connect(net.a.node->listen_port()));
  const auto a_hello1 = first.SendHello(net.b_id());
  ASSERT_TRUE(a_hello1.has_value());
  auto a_auth_frame = first.ReadFrameOfType(MsgType::kAuth);
  ASSERT_TRUE(a_auth_frame.has_value());
  const AuthMsg a_auth = DecodeExact<AuthMsg>(a_auth_frame->payload).value();

  // Reflection: a second connection claims to be a itself and returns a's
  // own signature.
  RawPeer second;
  ASSERT_TRUE(second.Connect(net.a.node->listen_port()));
  ASSERT_TRUE(second.SendHello(net.a_id()).has_value());
  second.Send(MsgType::kAuth, a_auth);
  EXPECT_EQ(DisconnectReason(second), "handshake-bad-signature");

  // Replay on the first connection's twin: same claimed id and challenge,
  // a's challenge is fresh, so nothing captured before can match.
  RawPeer third;
  ASSERT_TRUE(third.Connect(net.a.node->listen_port()));
  Hello same = RawPeer::DefaultHello();
  same.challenge = first.Transcript().dialer_challenge;
  ASSERT_TRUE(third.SendHello(net.b_id(), same).has_value());
  third.Send(MsgType::kAuth, a_auth);
  EXPECT_EQ(DisconnectReason(third), "handshake-bad-signature");
  net.ExpectBUnharmed("reflect/replay");
}

// Randomised adversary: every connection claims b's id and sends a random mix
// of garbage, truncated or bit-flipped handshake messages, captured proofs
// replayed, messages out of order and junk. None may establish, none may hurt b.
TEST(Attack, RandomHandshakeAbuseNeverEstablishesOrBansTheClaimedId) {
  P2PConfig ca = FastConfig();
  ca.handshake_timeout = 300ms;
  HonestPair net(ca);
  std::mt19937_64 rng(vt::test::TestSeed());
  const std::uint64_t handshakes_before = net.a.node->Stats().handshakes;

  // Real signatures to replay: a's proofs over transcripts claiming b.
  std::vector<AuthMsg> captured;
  for (int i = 0; i < 3; ++i) {
    RawPeer tap;
    ASSERT_TRUE(tap.Connect(net.a.node->listen_port()));
    ASSERT_TRUE(tap.SendHello(net.b_id()).has_value());
    auto f = tap.ReadFrameOfType(MsgType::kAuth);
    ASSERT_TRUE(f.has_value());
    captured.push_back(DecodeExact<AuthMsg>(f->payload).value());
  }
  const auto random_bytes = [&](std::size_t n) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    return b;
  };

  constexpr int kTrials = 40;
  for (int trial = 0; trial < kTrials; ++trial) {
    RawPeer raw;
    ASSERT_TRUE(raw.Connect(net.a.node->listen_port()));
    const int steps = 1 + static_cast<int>(rng() % 4);
    bool hello_sent = false;
    for (int step = 0; step < steps && !raw.closed(); ++step) {
      switch (rng() % 8) {
        case 0:  // raw garbage
          raw.SendBytes(random_bytes(1 + rng() % 64));
          break;
        case 1: {  // a truncated Hello payload in a valid frame
          Hello h = RawPeer::DefaultHello();
          h.node_id = net.b_id();
          Bytes enc = EncodeToBytes(h);
          enc.resize(rng() % enc.size());
          raw.SendFrame(MsgType::kHello, enc);
          break;
        }
        case 2:  // a proper Hello claiming b
          if (!hello_sent) raw.SendHello(net.b_id());
          hello_sent = true;
          break;
        case 3: {  // a captured, real signature replayed
          raw.Send(MsgType::kAuth, captured[rng() % captured.size()]);
          break;
        }
        case 4: {  // a captured signature with one bit flipped
          AuthMsg m = captured[rng() % captured.size()];
          m.signature.bytes[rng() % m.signature.bytes.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          raw.Send(MsgType::kAuth, m);
          break;
        }
        case 5:  // a random-length Auth payload
          raw.SendFrame(MsgType::kAuth, random_bytes(rng() % 64));
          break;
        case 6:  // junk gossip
          raw.SendFrame(rng() % 2 ? MsgType::kTx : MsgType::kBlock, random_bytes(1 + rng() % 32));
          break;
        default: {  // a request before the proof
          raw.Send(MsgType::kGetBlocks, GetItems{1, 0, 1});
          break;
        }
      }
    }
    // Every such connection ends: refused, or timed out in the handshake.
    EXPECT_TRUE(raw.WaitClosed(3s)) << "trial " << trial;
  }
  EXPECT_EQ(net.a.node->Stats().handshakes, handshakes_before) << "an abusive connection was established";
  net.ExpectBUnharmed("random abuse");
  EXPECT_TRUE(net.a.node->Bans().empty());
}

// ---- address bans ------------------------------------------------------------------

// Every local process shares the loopback address, so by default garbage
// from it is answered by closing, never by an address ban that would cut the
// other local nodes.
TEST(Attack, LoopbackGarbageNeverBansTheSharedAddress) {
  HonestPair net;
  for (int i = 0; i < 3; ++i) {
    RawPeer raw;
    ASSERT_TRUE(raw.Connect(net.a.node->listen_port()));
    raw.SendBytes(AsBytes(std::string_view("GET / HTTP/1.1\r\n\r\n")));
    EXPECT_EQ(DisconnectReason(raw), "frame-bad-magic");
  }
  EXPECT_TRUE(net.a.node->Bans().empty());
  // A new local node still gets in.
  TestNode c(HonestPair::Dialing(net.a.endpoint()));
  ASSERT_TRUE(WaitFor([&] { return net.a.PeerWithNodeId(c.node->node_id()).has_value(); }));
}

// With loopback treated like any address (as for hosts on a network): the
// host of a configured peer is never banned by address, a stranger's is.
TEST(Attack, ConfiguredPeerHostIsNeverBannedByAddress) {
  P2PConfig cb = FastConfig();
  TestNode b(cb);
  P2PConfig ca = FastConfig();
  ca.never_ban_loopback = false;
  ca.peers = {Endpoint{"127.0.0.1", b.node->listen_port()}};  // 127.0.0.1 is a configured peer's host
  TestNode a(ca);
  ASSERT_TRUE(WaitFor([&] { return a.PeerWithNodeId(b.node->node_id()).has_value(); }));
  {
    RawPeer same_host;  // from 127.0.0.1, like b
    ASSERT_TRUE(same_host.Connect(a.node->listen_port()));
    same_host.SendBytes(AsBytes(std::string_view("garbage!")));
    EXPECT_EQ(DisconnectReason(same_host), "frame-bad-magic");
  }
  {
    RawPeer stranger;  // from another address nobody configured
    ASSERT_TRUE(stranger.Connect(a.node->listen_port(), "127.0.0.2"));
    stranger.SendBytes(AsBytes(std::string_view("garbage!")));
    EXPECT_EQ(DisconnectReason(stranger), "frame-bad-magic");
  }
  ASSERT_TRUE(WaitFor([&] { return a.IsBanned("addr:127.0.0.2"); }));
  EXPECT_FALSE(a.IsBanned("addr:127.0.0.1"));
  EXPECT_TRUE(a.PeerWithNodeId(b.node->node_id()).has_value());
}

// ---- the transcript ----------------------------------------------------------------

HandshakeTranscript SampleTranscript(const crypto::SecretKey& dialer, const crypto::SecretKey& listener) {
  HandshakeTranscript t;
  t.protocol_version = kProtocolVersion;
  t.chain_id = test::kChain;
  t.genesis_hash = test::Genesis();
  t.dialer_id = test::IdOf(dialer);
  t.listener_id = test::IdOf(listener);
  EXPECT_TRUE(crypto::FillOsRandom(t.dialer_challenge.bytes).ok());
  EXPECT_TRUE(crypto::FillOsRandom(t.listener_challenge.bytes).ok());
  t.listener_port = 9000;
  return t;
}

TEST(NetHandshake, EveryFieldAndTheRoleAreBound) {
  const auto d = test::RandomKey();
  const auto l = test::RandomKey();
  const HandshakeTranscript t = SampleTranscript(*d, *l);
  const crypto::Signature by_dialer = SignHandshake(*d, t, HandshakeRole::kDialer).value();
  const crypto::Signature by_listener = SignHandshake(*l, t, HandshakeRole::kListener).value();
  EXPECT_TRUE(VerifyHandshake(t, HandshakeRole::kDialer, by_dialer));
  EXPECT_TRUE(VerifyHandshake(t, HandshakeRole::kListener, by_listener));
  // Each role's proof is useless in the other role.
  EXPECT_FALSE(VerifyHandshake(t, HandshakeRole::kListener, by_dialer));
  EXPECT_FALSE(VerifyHandshake(t, HandshakeRole::kDialer, by_listener));
  // A key signs only for the id it is.
  EXPECT_EQ(SignHandshake(*d, t, HandshakeRole::kListener).status().reason(), "handshake-wrong-key");

  const std::vector<std::pair<const char*, std::function<void(HandshakeTranscript&)>>> changes = {
      {"version", [](HandshakeTranscript& x) { ++x.protocol_version; }},
      {"chain", [](HandshakeTranscript& x) { x.chain_id += "x"; }},
      {"genesis", [](HandshakeTranscript& x) { x.genesis_hash.bytes[0] ^= 1; }},
      {"dialer challenge", [](HandshakeTranscript& x) { x.dialer_challenge.bytes[31] ^= 1; }},
      {"dialer ephemeral", [](HandshakeTranscript& x) { x.dialer_ephemeral.bytes[3] ^= 1; }},
      {"listener ephemeral", [](HandshakeTranscript& x) { x.listener_ephemeral.bytes[30] ^= 4; }},
      {"listener id", [&](HandshakeTranscript& x) { x.listener_id = test::IdOf(*test::RandomKey()); }},
      {"listener challenge", [](HandshakeTranscript& x) { x.listener_challenge.bytes[0] ^= 0x80; }},
      {"listener port", [](HandshakeTranscript& x) { ++x.listener_port; }},
      {"swapped challenges", [](HandshakeTranscript& x) { std::swap(x.dialer_challenge, x.listener_challenge); }},
  };
  for (const auto& [what, change] : changes) {
    HandshakeTranscript changed = t;
    change(changed);
    EXPECT_FALSE(VerifyHandshake(changed, HandshakeRole::kDialer, by_dialer)) << what;
  }
  // A claimed id that is not a curve point verifies nothing.
  HandshakeTranscript bad = t;
  bad.dialer_id.bytes.fill(0xff);
  EXPECT_FALSE(VerifyHandshake(bad, HandshakeRole::kDialer, by_dialer));
}

}  // namespace
}  // namespace vt::net
