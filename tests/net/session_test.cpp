// Frame encryption (docs/net.md, "Frame encryption"): X25519 session keys
// bound into the signed handshake, every frame after Auth sealed with
// ChaCha20-Poly1305 under a per-direction counter. The primitives and the
// sealed framing in memory, then a relay on the path of a real loopback
// connection (the fault proxy, listening on the honest node's own port
// number at another loopback address, which is what the handshake's port
// binding still lets through) that flips bits, injects, replays and drops
// frames: the connection closes, nobody is banned, and nothing altered or
// forged ever reaches the node.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "crypto/session_cipher.h"
#include "net/frame.h"
#include "net/handshake.h"
#include "tests/net/net_test_util.h"
#include "tests/support/fault_proxy.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;
using test::FastConfig;
using test::TestNode;
using test::WaitFor;

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }
Hash256 AsHash(const crypto::X25519Public& k) {
  Hash256 h;
  std::copy(k.begin(), k.end(), h.bytes.begin());
  return h;
}

// ---- primitives ----------------------------------------------------------------------

TEST(SessionCipher, SealsAndOpensInOrderOnly) {
  crypto::AeadKey key{};
  key[0] = 7;
  auto tx = crypto::SessionCipher::Create(key).value();
  auto rx = crypto::SessionCipher::Create(key).value();
  const Bytes aad = Text("header"), m0 = Text("first"), m1 = Text("second");
  Bytes c0, c1;
  ASSERT_TRUE(tx.Seal(aad, m0, c0).ok());
  ASSERT_TRUE(tx.Seal(aad, m1, c1).ok());
  EXPECT_EQ(c0.size(), m0.size() + crypto::kAeadTagBytes);
  EXPECT_NE(Bytes(c0.begin(), c0.begin() + 5), m0);  // encrypted, not only tagged
  // Out of order (c1 under counter 0) fails and does not advance.
  EXPECT_EQ(rx.Open(aad, c1).status().reason(), "aead-bad-tag");
  EXPECT_EQ(rx.counter(), 0u);
  EXPECT_EQ(*rx.Open(aad, c0), m0);
  EXPECT_EQ(rx.Open(aad, c0).status().reason(), "aead-bad-tag");  // a replay
  EXPECT_EQ(rx.Open(Text("HEADER"), c1).status().reason(), "aead-bad-tag");  // other associated data
  EXPECT_EQ(*rx.Open(aad, c1), m1);
  // Every single bit flip anywhere in a sealed message fails.
  auto tx2 = crypto::SessionCipher::Create(key).value();
  Bytes c;
  ASSERT_TRUE(tx2.Seal(aad, m0, c).ok());
  for (std::size_t bit = 0; bit < c.size() * 8; ++bit) {
    auto rx2 = crypto::SessionCipher::Create(key).value();
    Bytes bad = c;
    bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    EXPECT_FALSE(rx2.Open(aad, bad).ok()) << "bit " << bit;
  }
  EXPECT_FALSE(crypto::SessionCipher::Create(key)->Open(aad, Bytes(15, 0)).ok());  // shorter than a tag
}

TEST(SessionKeys, BothSidesAgreeAndEveryTranscriptFieldIsBound) {
  auto d_eph = crypto::X25519Key::Generate().value();
  auto l_eph = crypto::X25519Key::Generate().value();
  HandshakeTranscript t;
  t.protocol_version = kProtocolVersion;
  t.chain_id = test::kChain;
  t.dialer_id = test::IdOf(*test::RandomKey());
  t.listener_id = test::IdOf(*test::RandomKey());
  t.dialer_ephemeral = AsHash(d_eph.public_key());
  t.listener_ephemeral = AsHash(l_eph.public_key());
  t.listener_port = 9000;
  const SessionKeys d = DeriveSessionKeys(t, HandshakeRole::kDialer, d_eph).value();
  const SessionKeys l = DeriveSessionKeys(t, HandshakeRole::kListener, l_eph).value();
  EXPECT_EQ(d.send, l.recv);
  EXPECT_EQ(d.recv, l.send);
  EXPECT_NE(d.send, d.recv);  // one key per direction: a frame reflected back does not open
  // A changed transcript (what a relay could try: its own ephemeral, another
  // port) gives other keys; the signatures cover the same fields.
  HandshakeTranscript other = t;
  other.listener_port = 9001;
  EXPECT_NE(DeriveSessionKeys(other, HandshakeRole::kDialer, d_eph)->send, d.send);
  auto relay_eph = crypto::X25519Key::Generate().value();
  other = t;
  other.listener_ephemeral = AsHash(relay_eph.public_key());
  EXPECT_NE(DeriveSessionKeys(other, HandshakeRole::kDialer, d_eph)->send, d.send);
  // A low-order point (here zero) would fix the secret for anyone.
  other = t;
  other.listener_ephemeral = Hash256{};
  EXPECT_EQ(DeriveSessionKeys(other, HandshakeRole::kDialer, d_eph).status().reason(), "handshake-bad-ephemeral");
}

TEST(SealedFrames, DecodeInOrderAndRejectTampering) {
  crypto::AeadKey key{};
  key[5] = 1;
  const std::uint32_t magic = ChainMagic(test::kChain);
  auto seal = crypto::SessionCipher::Create(key).value();
  std::vector<Bytes> wire;
  for (int i = 0; i < 3; ++i) {
    const Bytes payload = Text("tx-" + std::to_string(i));
    auto sealed = SealFrame(seal, EncodeFrameHeader(magic, MsgType::kTx, payload), payload).value();
    Bytes w(sealed.header.begin(), sealed.header.end());
    w.insert(w.end(), sealed.body.begin(), sealed.body.end());
    EXPECT_EQ(w.size(), kFrameHeaderSize + payload.size() + kSealOverhead);
    EXPECT_TRUE(std::all_of(w.begin() + 10, w.begin() + 14, [](std::uint8_t b) { return b == 0; }));
    wire.push_back(std::move(w));
  }
  auto decode = [&](const std::vector<Bytes>& stream) -> std::pair<std::vector<Bytes>, Status> {
    FrameDecoder dec(magic);
    dec.OpenFromNow(crypto::SessionCipher::Create(key).value());
    std::vector<Bytes> out;
    for (const Bytes& w : stream) {
      ByteSpan rest(w);
      while (!rest.empty()) {
        Result<std::size_t> used = dec.Feed(rest);
        if (!used.ok()) return {out, used.status()};
        rest = rest.subspan(*used);
        if (auto f = dec.TakeFrame()) {
          EXPECT_EQ(f->payload_sha256, crypto::Sha256Digest(f->payload));  // the content id, as unsealed
          out.push_back(f->payload);
        }
      }
    }
    return {out, Status::Ok()};
  };
  auto [all, ok] = decode(wire);
  ASSERT_TRUE(ok.ok()) << ok.ToString();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2], Text("tx-2"));
  EXPECT_EQ(decode({wire[0], wire[0]}).second.reason(), "frame-bad-tag");  // replay
  EXPECT_EQ(decode({wire[1]}).second.reason(), "frame-bad-tag");           // reorder / drop
  Bytes retyped = wire[0];
  retyped[4] = static_cast<std::uint8_t>(MsgType::kBlock);  // the header is authenticated too
  EXPECT_EQ(decode({retyped}).second.reason(), "frame-bad-tag");
  // A plaintext frame where a sealed one is due.
  EXPECT_EQ(decode({EncodeFrame(magic, MsgType::kTx, Text("plain"))}).second.reason(), "frame-bad-tag");
}

// ---- a relay on the path ----------------------------------------------------------------

// Honest a listens; honest b dials it through a fault proxy that listens on
// a's port number at 127.0.0.2 (an on-path relay the handshake lets
// through). a's loopback address bans are on, so blaming the relay's address
// (127.0.0.1) would show.
struct RelayedPair {
  RelayedPair() : a(ListenerConfig()), proxy(a.node->listen_port(), vt::test::TestSeed(), "127.0.0.2") {
    EXPECT_TRUE(proxy.Start().ok());
    P2PConfig cb = FastConfig();
    cb.peers = {Endpoint{"127.0.0.2", a.node->listen_port()}};
    b = std::make_unique<TestNode>(cb);
    EXPECT_TRUE(WaitFor([&] { return Linked(); })) << "no handshake through the relay";
  }
  // Both ends list each other. A gossip message is relayed to the peers its
  // sender lists at that moment: b broadcasting after a's end had registered
  // the link but before b's had sent nothing, and the tampering case waited
  // in vain (seen once in CI, under load).
  bool Linked() const {
    return a.PeerWithNodeId(b_id()).has_value() && b->PeerWithNodeId(a_id()).has_value();
  }
  static P2PConfig ListenerConfig() {
    P2PConfig c = FastConfig();
    c.never_ban_loopback = false;
    return c;
  }
  Hash256 a_id() const { return a.node->node_id(); }
  Hash256 b_id() const { return b->node->node_id(); }
  void ExpectNobodyBlamed(const std::string& tag) {
    SCOPED_TRACE(tag);
    EXPECT_TRUE(a.node->Bans().empty());
    EXPECT_TRUE(b->node->Bans().empty());
    EXPECT_EQ(a.node->Stats().misbehaviour, 0u);
  }

  TestNode a;
  vt::test::FaultProxy proxy;
  std::unique_ptr<TestNode> b;
};

TEST(Attack, RelayThatTampersWithFramesClosesTheLinkAndBlamesNobody) {
  RelayedPair p;
  const std::uint16_t tx = static_cast<std::uint16_t>(MsgType::kTx);
  struct Case {
    const char* name;
    vt::test::FaultPolicy policy;
  };
  std::vector<Case> cases(4);
  cases[0] = {"bit flip", {}};
  cases[0].policy.corrupt = 1.0;
  cases[1] = {"injected frame", {}};
  cases[1].policy.inject = 1.0;
  cases[2] = {"replayed frame", {}};
  cases[2].policy.duplicate = 1.0;
  cases[3] = {"dropped frame", {}};
  cases[3].policy.drop = 1.0;
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    c.policy.faulty_types = {tx};
    ASSERT_TRUE(WaitFor([&] { return p.Linked(); }));
    const std::uint64_t failures = p.a.node->Stats().session_failures + p.b->node->Stats().session_failures;
    const std::uint64_t disconnects = p.a.node->Stats().disconnects;
    p.proxy.SetPolicy(c.policy);
    const std::string tag = std::string("tampered-") + c.name;
    const std::uint64_t dropped = p.proxy.stats().dropped;
    const Hash256 id = *p.b->node->Broadcast(GossipKind::kTx, Text(tag));
    if (c.policy.drop > 0) {
      // A dropped frame shows at the next one: the counter has moved on.
      ASSERT_TRUE(WaitFor([&] { return p.proxy.stats().dropped > dropped; }));
      p.proxy.SetPolicy({});
      (void)p.b->node->Broadcast(GossipKind::kTx, Text(tag + "-next"));
    }
    EXPECT_TRUE(WaitFor([&] { return p.a.node->Stats().disconnects > disconnects; })) << "the link stayed up";
    EXPECT_GT(p.a.node->Stats().session_failures + p.b->node->Stats().session_failures, failures);
    p.proxy.SetPolicy({});
    if (c.policy.corrupt > 0 || c.policy.inject > 0) {
      EXPECT_EQ(p.a.handler().Count(id), 0);  // never delivered altered
    }
    EXPECT_LE(p.a.handler().Count(id), 1);
    p.ExpectNobodyBlamed(c.name);
    // b redials through the relay and the session works again.
    ASSERT_TRUE(WaitFor([&] { return p.Linked(); })) << "b did not come back";
    const Hash256 after = *p.b->node->Broadcast(GossipKind::kTx, Text(tag + "-after"));
    EXPECT_TRUE(WaitFor([&] { return p.a.handler().Count(after) == 1; }));
  }
}

// Randomised tamperer (seed: VT_TEST_SEED): rounds of random faults on random
// frame types while b gossips distinct transactions. Whatever the relay
// does, a delivers only transactions b sent, byte for byte, each at most
// once; nobody is banned or scored; after the relay turns honest, the link
// comes back and carries gossip again.
TEST(Property, RandomTampererNeverGetsAlteredFramesDeliveredNorAnyoneBanned) {
  RelayedPair p;
  std::mt19937_64 rng(vt::test::TestSeed());
  const std::vector<std::uint16_t> types = {static_cast<std::uint16_t>(MsgType::kTx),
                                            static_cast<std::uint16_t>(MsgType::kPing),
                                            static_cast<std::uint16_t>(MsgType::kPong)};
  std::set<Bytes> sent;
  std::uniform_real_distribution<double> u(0, 1);
  for (int round = 0; round < 12; ++round) {
    vt::test::FaultPolicy f;
    switch (rng() % 4) {
      case 0: f.corrupt = u(rng); break;
      case 1: f.inject = u(rng); break;
      case 2: f.duplicate = u(rng); break;
      default: f.drop = u(rng);
    }
    f.max_delay_ms = static_cast<std::uint32_t>(rng() % 20);
    f.faulty_types = {types[rng() % types.size()], types[rng() % types.size()]};
    p.proxy.SetPolicy(f);
    for (int i = 0; i < 10; ++i) {
      const Bytes tx = Text("r" + std::to_string(round) + "-" + std::to_string(i) + "-" + std::to_string(rng()));
      sent.insert(tx);
      (void)p.b->node->Broadcast(GossipKind::kTx, tx);
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 15));
    }
  }
  p.proxy.SetPolicy({});
  // A frame dropped just before the relay turned honest shows only at the
  // next one, which the reset then loses too: probe until one arrives.
  bool delivered = false;
  for (int probe = 0; probe < 30 && !delivered; ++probe) {
    (void)WaitFor([&] { return p.Linked(); }, 2s);
    const Bytes tx = Text("after the storm " + std::to_string(probe));
    sent.insert(tx);
    const Hash256 id = *p.b->node->Broadcast(GossipKind::kTx, tx);
    delivered = WaitFor([&] { return p.a.handler().Count(id) == 1; }, 500ms);
  }
  EXPECT_TRUE(delivered) << "the link did not come back";
  const auto stats = p.proxy.stats();
  EXPECT_GT(stats.corrupted + stats.injected + stats.duplicated + stats.dropped, 0u) << "the relay never tampered";
  EXPECT_GT(p.a.node->Stats().session_failures + p.b->node->Stats().session_failures, 0u);
  p.ExpectNobodyBlamed("random tamperer");
  const std::vector<Bytes> got = p.a.handler().Items();
  for (const Bytes& item : got) EXPECT_TRUE(sent.count(item) == 1) << "a forged or altered tx arrived";
  EXPECT_EQ(std::set<Bytes>(got.begin(), got.end()).size(), got.size()) << "a tx was delivered twice";
}

}  // namespace
}  // namespace vt::net
