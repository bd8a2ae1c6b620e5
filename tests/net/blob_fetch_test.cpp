// A peer that serves a truncated or corrupted blob (e.g. the final state of a
// bounty a client fetches with `vt bounty result`) is detected by the hash,
// penalised, and the fetch completes from another peer — for every way of
// cutting or flipping the bytes, at chunk boundaries and in between.
#include <gtest/gtest.h>

#include <future>
#include <random>

#include "crypto/sha256.h"
#include "tests/net/net_test_util.h"
#include "tests/support/test_seed.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;
using test::FastConfig;
using test::TestNode;
using test::WaitFor;

P2PConfig DialingBoth(P2PConfig c, std::vector<Endpoint> peers) {
  c.peers = std::move(peers);
  return c;
}

TEST(NetBlobFetch, TruncatedOrCorruptBlobScoresTheLiarAndTheFetchCompletesFromAnHonestPeer) {
  constexpr std::size_t kChunk = 16 * 1024;
  std::mt19937_64 rng(vt::test::TestSeed());
  Bytes blob(5 * kChunk + 321);
  for (auto& x : blob) x = static_cast<std::uint8_t>(rng());
  const Hash256 hash = crypto::Sha256Digest(blob);

  // Truncations at 0, inside the first chunk, at a chunk boundary, one byte
  // short; corruptions of one random byte and of one extra trailing byte.
  std::vector<std::pair<std::string, Bytes>> forgeries;
  for (std::size_t keep : {std::size_t{0}, std::size_t{1}, kChunk, 3 * kChunk + 7, blob.size() - 1})
    forgeries.push_back({"truncated to " + std::to_string(keep), Bytes(blob.begin(), blob.begin() + keep)});
  Bytes flipped = blob;
  flipped[rng() % flipped.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
  forgeries.push_back({"one byte flipped", flipped});
  Bytes longer = blob;
  longer.push_back(0);
  forgeries.push_back({"one byte appended", longer});

  for (const auto& [what, forged] : forgeries) {
    SCOPED_TRACE(what);
    TestNode liar(FastConfig());
    liar.blobs().Put(hash, forged);  // serves the forgery under the real hash
    TestNode honest(FastConfig());
    honest.blobs().Put(blob);
    P2PConfig cf = DialingBoth(FastConfig(), {liar.endpoint(), honest.endpoint()});
    cf.blob_chunk_bytes = kChunk;
    TestNode fetcher(cf);
    ASSERT_TRUE(WaitFor([&] { return fetcher.EstablishedPeers() == 2; }));
    const PeerId liar_peer = fetcher.PeerWithNodeId(liar.node->node_id())->id;

    std::promise<Result<Bytes>> p;
    fetcher.node->FetchBlob(hash, [&](Result<Bytes> r) { p.set_value(std::move(r)); }, liar_peer);
    auto f = p.get_future();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    Result<Bytes> got = f.get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, blob) << "the fetch continued from the honest peer";
    auto liar_info = fetcher.PeerWithNodeId(liar.node->node_id());
    ASSERT_TRUE(liar_info.has_value());
    EXPECT_EQ(liar_info->score, penalty::kBadBlob) << "the liar is penalised";
    EXPECT_EQ(fetcher.PeerWithNodeId(honest.node->node_id())->score, 0);
  }
}

}  // namespace
}  // namespace vt::net
