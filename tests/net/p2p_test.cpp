// Loopback tests of P2PNode: handshake, gossip, sync, blobs, misbehaviour,
// keepalive, reconnects. Every wait is bounded; all traffic is on 127.0.0.1.

#include "net/p2p.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <random>
#include <set>

#include "crypto/sha256.h"
#include "tests/net/net_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;
using test::FastConfig;
using test::RawPeer;
using test::TestNode;
using test::WaitFor;

P2PConfig Dialing(P2PConfig c, std::initializer_list<Endpoint> peers) {
  c.peers = peers;
  return c;
}

Bytes Text(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::string NodeKey(const Hash256& id) { return "node:" + id.Hex(); }

TEST(NetP2P, ListensOnAnEphemeralPortAndHandshakes) {
  TestNode a(FastConfig());
  ASSERT_NE(a.node->listen_port(), 0);
  TestNode b(Dialing(FastConfig(), {a.endpoint()}));
  ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 1 && b.EstablishedPeers() == 1; }));
  const auto on_a = a.PeerWithNodeId(b.node->node_id());
  ASSERT_TRUE(on_a.has_value());
  EXPECT_TRUE(on_a->inbound);
  EXPECT_EQ(on_a->hello.listen_port, b.node->listen_port());
  EXPECT_EQ(on_a->hello.chain_id, test::kChain);
  const auto on_b = b.PeerWithNodeId(a.node->node_id());
  ASSERT_TRUE(on_b.has_value());
  EXPECT_FALSE(on_b->inbound);
  EXPECT_EQ(a.handler().connected(), 1);
  EXPECT_EQ(b.handler().connected(), 1);
}

TEST(NetP2P, GossipReachesEveryNodeExactlyOnce) {
  // A triangle, so every item arrives at some node twice and the seen-set
  // must drop the second copy.
  TestNode a(FastConfig());
  TestNode b(Dialing(FastConfig(), {a.endpoint()}));
  TestNode c(Dialing(FastConfig(), {a.endpoint(), b.endpoint()}));
  TestNode* nodes[] = {&a, &b, &c};
  ASSERT_TRUE(WaitFor([&] {
    return a.EstablishedPeers() == 2 && b.EstablishedPeers() == 2 && c.EstablishedPeers() == 2;
  }));

  std::vector<std::pair<int, Hash256>> sent;  // (origin, id)
  for (int i = 0; i < 30; ++i) {
    const int origin = i % 3;
    Result<Hash256> id = nodes[origin]->node->Broadcast(i % 2 ? GossipKind::kTx : GossipKind::kBlock,
                                                        Text("item-" + std::to_string(i)));
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, crypto::Sha256Digest(Text("item-" + std::to_string(i))));
    sent.emplace_back(origin, *id);
  }
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& [origin, id] : sent) {
      for (int n = 0; n < 3; ++n) {
        if (n != origin && nodes[n]->handler().Count(id) == 0) return false;
      }
    }
    return true;
  }));
  // Let stragglers (second copies) arrive, then check nothing was delivered twice.
  std::this_thread::sleep_for(100ms);
  for (const auto& [origin, id] : sent) {
    for (int n = 0; n < 3; ++n) EXPECT_EQ(nodes[n]->handler().Count(id), n == origin ? 0 : 1) << n;
  }
  std::uint64_t duplicates = 0;
  for (TestNode* n : nodes) {
    EXPECT_EQ(n->handler().TotalDeliveries(), 20u);
    duplicates += n->node->Stats().gossip_duplicates;
  }
  EXPECT_GT(duplicates, 0u) << "the triangle should have produced duplicate copies";
}

TEST(NetP2P, GossipRelaysAlongALine) {
  // a - b - c: c hears a's item only through b's relay.
  TestNode a(FastConfig());
  TestNode b(Dialing(FastConfig(), {a.endpoint()}));
  TestNode c(Dialing(FastConfig(), {b.endpoint()}));
  ASSERT_TRUE(WaitFor([&] { return b.EstablishedPeers() == 2 && c.EstablishedPeers() == 1; }));
  Result<Hash256> id = a.node->Broadcast(GossipKind::kTx, Text("relayed"));
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(WaitFor([&] { return c.handler().Count(*id) == 1; }));
  EXPECT_EQ(b.handler().Count(*id), 1);
}

TEST(NetP2P, BroadcastRejectsEmptyAndOversizedPayloads) {
  TestNode a(FastConfig());
  EXPECT_EQ(a.node->Broadcast(GossipKind::kTx, {}).status().reason(), "gossip-empty");
  EXPECT_EQ(a.node->Broadcast(GossipKind::kTx, Bytes(MaxPayload(MsgType::kTx) + 1)).status().reason(),
            "gossip-too-large");
  EXPECT_TRUE(a.node->Broadcast(GossipKind::kBlock, Bytes(MaxPayload(MsgType::kTx) + 1)).ok());
}

TEST(NetP2P, RejectedGossipScoresTheSenderAndIsNotRelayed) {
  TestNode a(FastConfig());
  TestNode b(Dialing(FastConfig(), {a.endpoint()}));
  TestNode c(Dialing(FastConfig(), {b.endpoint()}));
  ASSERT_TRUE(WaitFor([&] { return b.EstablishedPeers() == 2; }));
  b.handler().SetJudge([](ByteSpan p) {
    return !p.empty() && p[0] == 'R' ? Verdict::Reject("test-invalid-tx", 60) : Verdict::Accept();
  });
  ASSERT_TRUE(a.node->Broadcast(GossipKind::kTx, Text("R1")).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto p = b.PeerWithNodeId(a.node->node_id());
    return p && p->score == 60;
  }));
  // A good item afterwards still flows (a is not banned yet) and reaches c.
  Result<Hash256> good = a.node->Broadcast(GossipKind::kTx, Text("good"));
  ASSERT_TRUE(WaitFor([&] { return c.handler().Count(*good) == 1; }));
  EXPECT_EQ(c.handler().Count(crypto::Sha256Digest(Text("R1"))), 0) << "a rejected item was relayed";

  // The second invalid item crosses the threshold: b bans a's node id.
  ASSERT_TRUE(a.node->Broadcast(GossipKind::kTx, Text("R2")).ok());
  ASSERT_TRUE(WaitFor([&] { return b.IsBanned(NodeKey(a.node->node_id())); }));
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("remote:test-invalid-tx"); }));
  EXPECT_EQ(b.node->Stats().gossip_rejected, 2u);
  // a keeps redialing b and is refused at the handshake while banned.
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("remote:banned"); }));
  EXPECT_FALSE(b.PeerWithNodeId(a.node->node_id()).has_value());
  // b still serves c.
  Result<Hash256> later = c.node->Broadcast(GossipKind::kTx, Text("from-c"));
  ASSERT_TRUE(WaitFor([&] { return b.handler().Count(*later) == 1; }));
}

TEST(NetP2P, HandshakeWithWrongChainIdIsRejected) {
  TestNode a(FastConfig());
  P2PConfig other = Dialing(FastConfig(), {a.endpoint()});
  other.chain_id = "another-chain";
  other.magic = a.node->magic();  // same framing, so the handshake itself must catch it
  TestNode b(other);
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("handshake-wrong-chain"); }));
  ASSERT_TRUE(WaitFor([&] {
    return b.HasDisconnect("handshake-wrong-chain") || b.HasDisconnect("remote:handshake-wrong-chain");
  }));
  EXPECT_EQ(a.EstablishedPeers(), 0u);
  EXPECT_EQ(b.EstablishedPeers(), 0u);
  EXPECT_EQ(a.handler().connected(), 0);
  // A configuration mismatch is not misbehaviour: nobody is banned.
  EXPECT_TRUE(a.node->Bans().empty());
  EXPECT_EQ(a.node->Stats().misbehaviour, 0u);
}

TEST(NetP2P, HandshakeMismatchesGiveTheirReasons) {
  TestNode a(FastConfig());
  const auto try_hello = [&](Hello hello) {
    RawPeer raw;
    EXPECT_TRUE(raw.Connect(a.node->listen_port()));
    raw.SendHello(test::IdOf(*test::RandomKey()), hello);
    auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
    EXPECT_TRUE(raw.WaitClosed());
    return bye ? DecodeExact<DisconnectMsg>(bye->payload).value().reason : std::string("<none>");
  };
  Hello h = RawPeer::DefaultHello();
  h.protocol_version = kProtocolVersion + 1;
  EXPECT_EQ(try_hello(h), "handshake-bad-version");
  h = RawPeer::DefaultHello();
  h.genesis_hash = crypto::Sha256Digest(std::string_view("another genesis"));
  EXPECT_EQ(try_hello(h), "handshake-wrong-genesis");
  h = RawPeer::DefaultHello();
  h.chain_id = "x";
  EXPECT_EQ(try_hello(h), "handshake-wrong-chain");

  // Another chain's magic never reaches the handshake: its first frame is garbage.
  RawPeer foreign(ChainMagic("another-chain"));
  ASSERT_TRUE(foreign.Connect(a.node->listen_port()));
  foreign.Send(MsgType::kHello, RawPeer::DefaultHello());
  EXPECT_TRUE(foreign.WaitClosed());
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("frame-bad-magic"); }));
}

TEST(NetP2P, MessageBeforeHandshakeIsAViolation) {
  TestNode a(FastConfig());
  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a.node->listen_port()));
  raw.SendFrame(MsgType::kTx, Text("too early"));
  auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
  ASSERT_TRUE(bye.has_value());
  EXPECT_EQ(DecodeExact<DisconnectMsg>(bye->payload)->reason, "handshake-expected-hello");
  EXPECT_TRUE(raw.WaitClosed());
}

TEST(NetP2P, GarbagePeerIsBannedWhileOthersAreServed) {
  P2PConfig ca = FastConfig();
  ca.never_ban_loopback = false;  // let the address ban apply on loopback
  TestNode a(ca);
  TestNode b(Dialing(FastConfig(), {a.endpoint()}));
  ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 1; }));

  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a.node->listen_port()));
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  raw.SendBytes(AsBytes(http));
  auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
  ASSERT_TRUE(bye.has_value());
  EXPECT_EQ(DecodeExact<DisconnectMsg>(bye->payload)->reason, "frame-bad-magic");
  EXPECT_TRUE(raw.WaitClosed());
  ASSERT_TRUE(WaitFor([&] { return a.IsBanned("addr:127.0.0.1"); }));

  // A new connection from the banned address is closed before any byte.
  RawPeer again;
  ASSERT_TRUE(again.Connect(a.node->listen_port()));
  EXPECT_TRUE(again.WaitClosed());
  EXPECT_EQ(again.bytes_received(), 0u);
  ASSERT_TRUE(WaitFor([&] { return a.node->Stats().refused_banned >= 1; }));

  // The established peer keeps working in both directions.
  Result<Hash256> id = b.node->Broadcast(GossipKind::kTx, Text("still served"));
  ASSERT_TRUE(WaitFor([&] { return a.handler().Count(*id) == 1; }));
  Result<Hash256> back = a.node->Broadcast(GossipKind::kTx, Text("and back"));
  ASSERT_TRUE(WaitFor([&] { return b.handler().Count(*back) == 1; }));
}

// After the handshake, frames are sealed (docs/net.md, "Frame encryption"):
// a broken frame header can come from a relay on the path as well as from the
// peer, so it closes the connection without banning anyone; a malformed
// payload inside a frame that opened is the peer's own and bans its id.
TEST(NetP2P, OversizedFrameAfterHandshakeClosesWithoutBlame) {
  TestNode a(FastConfig());
  const auto key = test::RandomKey();
  const Hash256 id = test::IdOf(*key);
  {
    RawPeer raw;
    ASSERT_TRUE(raw.Connect(a.node->listen_port()));
    ASSERT_TRUE(raw.Handshake(*key).has_value());
    ASSERT_TRUE(WaitFor([&] { return a.PeerWithNodeId(id).has_value(); }));
    // Header only: 64 MiB announced for a tx.
    Bytes header = EncodeFrame(a.node->magic(), MsgType::kTx, {});
    header[6] = 0;
    header[7] = 0;
    header[8] = 0;
    header[9] = 4;
    raw.SendBytes(header);
    auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
    ASSERT_TRUE(bye.has_value());
    EXPECT_EQ(DecodeExact<DisconnectMsg>(bye->payload)->reason, "frame-oversize");
    EXPECT_TRUE(raw.WaitClosed());
  }
  EXPECT_TRUE(WaitFor([&] { return a.node->Stats().session_failures == 1; }));
  EXPECT_TRUE(a.node->Bans().empty());
  // The same node id is welcome again.
  RawPeer raw2;
  ASSERT_TRUE(raw2.Connect(a.node->listen_port()));
  ASSERT_TRUE(raw2.Handshake(*key).has_value());
  ASSERT_TRUE(WaitFor([&] { return a.PeerWithNodeId(id).has_value(); }));
}

TEST(NetP2P, UnsealedFramesAndUndecodablePayloadsAfterTheHandshake) {
  TestNode a(FastConfig());
  {
    RawPeer raw;
    ASSERT_TRUE(raw.Connect(a.node->listen_port()));
    ASSERT_TRUE(raw.Handshake(*test::RandomKey()).has_value());
    // A plain frame (even with a good checksum) where a sealed one is due.
    raw.SendBytes(EncodeFrame(a.node->magic(), MsgType::kTx, Text("payload")));
    auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
    ASSERT_TRUE(bye.has_value());
    EXPECT_EQ(DecodeExact<DisconnectMsg>(bye->payload)->reason, "frame-bad-tag");
  }
  {
    RawPeer raw;
    ASSERT_TRUE(raw.Connect(a.node->listen_port()));
    ASSERT_TRUE(raw.Handshake(*test::RandomKey()).has_value());
    raw.SendFrame(MsgType::kGetBlocks, Bytes{1, 2, 3});  // a valid frame, an undecodable payload
    auto bye = raw.ReadFrameOfType(MsgType::kDisconnect);
    ASSERT_TRUE(bye.has_value());
    EXPECT_EQ(DecodeExact<DisconnectMsg>(bye->payload)->reason, "enc-truncated");
  }
  // Only the undecodable payload, which came in a frame that opened, bans.
  ASSERT_TRUE(WaitFor([&] { return a.node->Bans().size() == 1; }));
  EXPECT_EQ(a.node->Stats().session_failures, 1u);
}

TEST(NetP2P, UnsolicitedResponseIsScoredButNotFatal) {
  TestNode a(FastConfig());
  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a.node->listen_port()));
  const auto key = test::RandomKey();
  const Hash256 id = test::IdOf(*key);
  ASSERT_TRUE(raw.Handshake(*key).has_value());
  raw.Send(MsgType::kBlocks, Items{999'999, 1, {Text("x")}});
  ASSERT_TRUE(WaitFor([&] {
    auto p = a.PeerWithNodeId(id);
    return p && p->score == penalty::kUnsolicited;
  }));
  EXPECT_FALSE(raw.closed());
}

TEST(NetP2P, SilentPeersTimeOut) {
  P2PConfig c = FastConfig();
  c.handshake_timeout = 200ms;
  c.idle_timeout = 400ms;
  c.ping_interval = 100ms;
  TestNode a(c);
  RawPeer mute;  // connects and says nothing
  ASSERT_TRUE(mute.Connect(a.node->listen_port()));
  RawPeer deaf;  // handshakes, then never answers pings
  ASSERT_TRUE(deaf.Connect(a.node->listen_port()));
  ASSERT_TRUE(deaf.Handshake(*test::RandomKey()).has_value());
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("handshake-timeout"); }, 5s));
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("ping-timeout"); }, 5s));
  EXPECT_TRUE(mute.WaitClosed());
  auto ping = deaf.ReadFrameOfType(MsgType::kPing, 100ms);  // it did ping before giving up
  (void)ping;
  EXPECT_TRUE(deaf.WaitClosed());
  EXPECT_TRUE(a.node->Bans().empty());
}

TEST(NetP2P, PingPongMeasuresRoundTrip) {
  P2PConfig c = FastConfig();
  c.ping_interval = 50ms;
  TestNode a(c);
  TestNode b(Dialing(c, {a.endpoint()}));
  ASSERT_TRUE(WaitFor([&] {
    auto p = b.PeerWithNodeId(a.node->node_id());
    return p && p->last_rtt.count() >= 0;
  }));
  // The raw peer answers the node's ping with the same nonce.
  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a.node->listen_port()));
  ASSERT_TRUE(raw.Handshake(*test::RandomKey()).has_value());
  auto ping = raw.ReadFrameOfType(MsgType::kPing);
  ASSERT_TRUE(ping.has_value());
  raw.SendFrame(MsgType::kPong, ping->payload);
  // And the node answers ours.
  raw.Send(MsgType::kPing, PingMsg{42});
  auto pong = raw.ReadFrameOfType(MsgType::kPong);
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(DecodeExact<PingMsg>(pong->payload)->nonce, 42u);
}

TEST(NetP2P, SlowPeerIsDisconnectedAtTheSendQueueBound) {
  P2PConfig c = FastConfig();
  c.max_send_queue_bytes = 256 * 1024;
  TestNode a(c);
  RawPeer slow;  // handshakes and then never reads
  ASSERT_TRUE(slow.Connect(a.node->listen_port()));
  ASSERT_TRUE(slow.Handshake(*test::RandomKey()).has_value());
  ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 1; }));
  // 64 KiB items until the kernel buffers and then the queue are full; the
  // loop is bounded (at most 64 MiB in all).
  bool dropped = false;
  for (int i = 0; i < 1024 && !dropped; ++i) {
    Bytes item(64 * 1024, static_cast<std::uint8_t>(i));
    item[0] = static_cast<std::uint8_t>(i >> 8);
    ASSERT_TRUE(a.node->Broadcast(GossipKind::kBlock, std::move(item)).ok());
    if (i % 32 == 31) dropped = WaitFor([&] { return a.HasDisconnect("send-queue-full"); }, 20ms);
  }
  ASSERT_TRUE(dropped || WaitFor([&] { return a.HasDisconnect("send-queue-full"); }));
  EXPECT_EQ(a.EstablishedPeers(), 0u);
}

TEST(NetP2P, LateJoinerSyncsThroughBlockSource) {
  P2PConfig ca = FastConfig();
  ca.max_response_bytes = 512;  // forces many small responses
  TestNode a(ca, /*chain_tip=*/300);
  P2PConfig cb = Dialing(FastConfig(), {a.endpoint()});
  cb.sync_batch = 64;
  TestNode b(cb, /*chain_tip=*/0);
  ASSERT_TRUE(WaitFor([&] { return b.chain().TipHeight() == 300; }));
  EXPECT_EQ(b.chain().Blocks(), a.chain().Blocks());
  // Byte limit: 512 bytes hold at most ~20 of these blocks per response.
  EXPECT_GE(b.handler().sync_batches(), 10);
  EXPECT_GE(a.node->Stats().sync_requests_served, 10u);
}

// A final block travels with its commit certificate, so a sync item may be
// larger than a gossiped block and than max_response_bytes: the largest one
// is served (alone), a larger one never.
TEST(NetP2P, LargestSyncItemIsServedAloneAndALargerOneNot) {
  TestNode a(FastConfig(), 3);
  a.chain().Set(1, Bytes(kMaxSyncItemBytes, 0x5a));
  a.chain().Set(2, Bytes(kMaxSyncItemBytes, 0xa5));
  a.chain().Set(3, Bytes(kMaxSyncItemBytes + 1, 0x33));
  P2PConfig cb = Dialing(FastConfig(), {a.endpoint()});
  cb.auto_sync = false;
  TestNode b(cb, 0);
  ASSERT_TRUE(WaitFor([&] { return b.EstablishedPeers() == 1; }));
  const PeerId peer = b.PeerWithNodeId(a.node->node_id())->id;
  const auto request = [&](std::uint64_t from) {
    std::promise<Result<ItemsResponse>> p;
    b.node->RequestBlocks(peer, from, 3, [&](Result<ItemsResponse> r) { p.set_value(std::move(r)); });
    auto f = p.get_future();
    EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
    return f.get();
  };
  Result<ItemsResponse> first = request(1);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->items.size(), 1u) << "one largest item per response";
  EXPECT_EQ(first->items[0], Bytes(kMaxSyncItemBytes, 0x5a));
  Result<ItemsResponse> second = request(2);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->items.size(), 1u) << "the item above the cap at height 3 is not served";
  Result<ItemsResponse> third = request(3);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_TRUE(third->items.empty());
}

TEST(NetP2P, RequestHeadersAndBlocksDirectly) {
  TestNode a(FastConfig(), 20);
  P2PConfig cb = Dialing(FastConfig(), {a.endpoint()});
  cb.auto_sync = false;
  TestNode b(cb, 0);
  ASSERT_TRUE(WaitFor([&] { return b.EstablishedPeers() == 1; }));
  const PeerId peer = b.PeerWithNodeId(a.node->node_id())->id;

  std::promise<Result<ItemsResponse>> p1;
  b.node->RequestHeaders(peer, 10, 5, [&](Result<ItemsResponse> r) { p1.set_value(std::move(r)); });
  auto f1 = p1.get_future();
  ASSERT_EQ(f1.wait_for(5s), std::future_status::ready);
  Result<ItemsResponse> headers = f1.get();
  ASSERT_TRUE(headers.ok()) << headers.status().ToString();
  EXPECT_EQ(headers->first_height, 10u);
  ASSERT_EQ(headers->items.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(headers->items[i], test::MakeHeader(10 + i));

  std::promise<Result<ItemsResponse>> p2;  // past the tip: none
  b.node->RequestBlocks(peer, 18, 100, [&](Result<ItemsResponse> r) { p2.set_value(std::move(r)); });
  auto f2 = p2.get_future();
  ASSERT_EQ(f2.wait_for(5s), std::future_status::ready);
  Result<ItemsResponse> blocks = f2.get();
  ASSERT_TRUE(blocks.ok());
  ASSERT_EQ(blocks->items.size(), 3u);  // 18, 19, 20
  EXPECT_EQ(blocks->items[2], test::MakeBlock(20));

  std::promise<Result<ItemsResponse>> p3;  // unknown peer
  b.node->RequestBlocks(9999, 0, 1, [&](Result<ItemsResponse> r) { p3.set_value(std::move(r)); });
  auto f3 = p3.get_future();
  ASSERT_EQ(f3.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f3.get().status().reason(), "peer-unknown");
}

TEST(NetP2P, RequestToASilentPeerTimesOut) {
  P2PConfig c = FastConfig();
  c.request_timeout = 200ms;
  TestNode a(c);
  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a.node->listen_port()));
  const auto key = test::RandomKey();
  const Hash256 id = test::IdOf(*key);
  ASSERT_TRUE(raw.Handshake(*key).has_value());
  ASSERT_TRUE(WaitFor([&] { return a.PeerWithNodeId(id).has_value(); }));
  std::promise<Result<ItemsResponse>> p;
  a.node->RequestBlocks(a.PeerWithNodeId(id)->id, 1, 10, [&](Result<ItemsResponse> r) { p.set_value(std::move(r)); });
  auto req = raw.ReadFrameOfType(MsgType::kGetBlocks);
  ASSERT_TRUE(req.has_value());
  EXPECT_EQ(DecodeExact<GetItems>(req->payload)->from_height, 1u);
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get().status().reason(), "net-timeout");
}

TEST(NetP2P, BlobTransferVerifiesTheHash) {
  std::mt19937_64 rng(vt::test::TestSeed());
  Bytes blob(3 * 1024 * 1024 + 12345);
  for (auto& x : blob) x = static_cast<std::uint8_t>(rng());
  TestNode a(FastConfig());
  const Hash256 hash = a.blobs().Put(blob);
  P2PConfig cb = Dialing(FastConfig(), {a.endpoint()});
  cb.blob_chunk_bytes = 1 << 20;
  TestNode b(cb);
  ASSERT_TRUE(WaitFor([&] { return b.EstablishedPeers() == 1; }));

  std::promise<Result<Bytes>> p;
  b.node->FetchBlob(hash, [&](Result<Bytes> r) { p.set_value(std::move(r)); });
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  Result<Bytes> got = f.get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, blob);
  EXPECT_EQ(a.node->Stats().blob_chunks_served, 4u);

  std::promise<Result<Bytes>> p2;
  b.node->FetchBlob(crypto::Sha256Digest(std::string_view("nobody has this")),
                    [&](Result<Bytes> r) { p2.set_value(std::move(r)); });
  auto f2 = p2.get_future();
  ASSERT_EQ(f2.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f2.get().status().reason(), "blob-not-found");

  // An empty blob is a blob too.
  const Hash256 empty = a.blobs().Put(Bytes{});
  std::promise<Result<Bytes>> p3;
  b.node->FetchBlob(empty, [&](Result<Bytes> r) { p3.set_value(std::move(r)); });
  auto f3 = p3.get_future();
  ASSERT_EQ(f3.wait_for(5s), std::future_status::ready);
  Result<Bytes> got3 = f3.get();
  ASSERT_TRUE(got3.ok()) << got3.status().ToString();
  EXPECT_TRUE(got3->empty());
}

TEST(NetP2P, WrongBlobScoresTheLiarAndFallsBackToAnHonestPeer) {
  Bytes blob(300'000, 7);
  blob[12345] = 8;
  const Hash256 hash = crypto::Sha256Digest(blob);
  Bytes forged = blob;
  forged[200'000] ^= 0xff;

  TestNode liar(FastConfig());
  liar.blobs().Put(hash, forged);  // serves forged bytes under the real hash
  TestNode honest(FastConfig());
  honest.blobs().Put(blob);
  P2PConfig cf = Dialing(FastConfig(), {liar.endpoint(), honest.endpoint()});
  cf.blob_chunk_bytes = 64 * 1024;
  TestNode fetcher(cf);
  ASSERT_TRUE(WaitFor([&] { return fetcher.EstablishedPeers() == 2; }));
  const PeerId liar_peer = fetcher.PeerWithNodeId(liar.node->node_id())->id;

  std::promise<Result<Bytes>> p;
  fetcher.node->FetchBlob(hash, [&](Result<Bytes> r) { p.set_value(std::move(r)); }, liar_peer);
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  Result<Bytes> got = f.get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, blob);
  auto liar_info = fetcher.PeerWithNodeId(liar.node->node_id());
  ASSERT_TRUE(liar_info.has_value());
  EXPECT_EQ(liar_info->score, penalty::kBadBlob);
  EXPECT_EQ(fetcher.PeerWithNodeId(honest.node->node_id())->score, 0);

  // With only the liar to ask the fetch fails with the mismatch, and the
  // second offence reaches the ban threshold.
  TestNode alone(Dialing(cf, {liar.endpoint()}));
  ASSERT_TRUE(WaitFor([&] { return alone.EstablishedPeers() == 1; }));
  for (int round = 0; round < 2; ++round) {
    std::promise<Result<Bytes>> p2;
    alone.node->FetchBlob(hash, [&](Result<Bytes> r) { p2.set_value(std::move(r)); });
    auto f2 = p2.get_future();
    ASSERT_EQ(f2.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(f2.get().status().reason(), "blob-hash-mismatch");
  }
  ASSERT_TRUE(WaitFor([&] { return alone.IsBanned(NodeKey(liar.node->node_id())); }));
}

std::uint16_t ReservePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acc(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return acc.local_endpoint().port();
}

TEST(NetP2P, ReconnectsWithBackoffWhenThePeerAppears) {
  // Reserve a port, free it, and let a dial it before anyone listens there.
  const std::uint16_t port = ReservePort();
  TestNode a(Dialing(FastConfig(), {Endpoint{"127.0.0.1", port}}));
  std::this_thread::sleep_for(150ms);  // a few failed attempts
  EXPECT_EQ(a.EstablishedPeers(), 0u);
  P2PConfig cb = FastConfig();
  cb.listen_port = port;
  cb.node_key = test::RandomKey();
  const Hash256 b_id = test::IdOf(*cb.node_key);
  {
    TestNode b(cb);
    ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 1; }));
  }
  // b went away; a notices and, when b is back, reconnects.
  ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 0; }));
  TestNode b2(cb);
  ASSERT_TRUE(WaitFor([&] { return a.PeerWithNodeId(b_id).has_value(); }));
  EXPECT_GE(a.node->Stats().connections_out, 2u);
}

TEST(NetP2P, MutualDialsKeepExactlyOneConnection) {
  const std::uint16_t pa = ReservePort();
  std::uint16_t pb = ReservePort();
  while (pb == pa) pb = ReservePort();
  P2PConfig ca = Dialing(FastConfig(), {Endpoint{"127.0.0.1", pb}});
  ca.listen_port = pa;
  P2PConfig cb = Dialing(FastConfig(), {Endpoint{"127.0.0.1", pa}});
  cb.listen_port = pb;
  TestNode a(ca);
  TestNode b(cb);
  ASSERT_TRUE(WaitFor([&] { return a.EstablishedPeers() == 1 && b.EstablishedPeers() == 1; }));
  std::this_thread::sleep_for(300ms);  // redials must not churn
  const auto pa_peers = a.node->Peers();
  const auto pb_peers = b.node->Peers();
  ASSERT_EQ(std::count_if(pa_peers.begin(), pa_peers.end(), [](const PeerInfo& p) { return p.established; }), 1);
  ASSERT_EQ(std::count_if(pb_peers.begin(), pb_peers.end(), [](const PeerInfo& p) { return p.established; }), 1);
  Result<Hash256> id = a.node->Broadcast(GossipKind::kTx, Text("one link"));
  ASSERT_TRUE(WaitFor([&] { return b.handler().Count(*id) == 1; }));
}

TEST(NetP2P, SelfDialIsDetectedAndNotRetried) {
  TestNode a(FastConfig());
  a.node->AddPeer(a.endpoint());
  ASSERT_TRUE(WaitFor([&] { return a.HasDisconnect("handshake-self-connection"); }));
  const std::uint64_t dials = a.node->Stats().connections_out;
  std::this_thread::sleep_for(200ms);  // many reconnect periods
  EXPECT_EQ(a.node->Stats().connections_out, dials);
  EXPECT_EQ(a.EstablishedPeers(), 0u);
}

TEST(NetP2P, StopFailsPendingWork) {
  auto a = std::make_unique<TestNode>(FastConfig());
  RawPeer raw;
  ASSERT_TRUE(raw.Connect(a->node->listen_port()));
  const auto key = test::RandomKey();
  const Hash256 id = test::IdOf(*key);
  ASSERT_TRUE(raw.Handshake(*key).has_value());
  ASSERT_TRUE(WaitFor([&] { return a->PeerWithNodeId(id).has_value(); }));
  std::promise<Result<Bytes>> p;
  a->node->FetchBlob(crypto::Sha256Digest(std::string_view("x")), [&](Result<Bytes> r) { p.set_value(std::move(r)); });
  ASSERT_TRUE(raw.ReadFrameOfType(MsgType::kGetBlob).has_value());
  a.reset();  // Stop + join
  auto f = p.get_future();
  ASSERT_EQ(f.wait_for(1s), std::future_status::ready);
  EXPECT_EQ(f.get().status().reason(), "net-stopped");
  EXPECT_TRUE(raw.WaitClosed());
}

}  // namespace
}  // namespace vt::net
