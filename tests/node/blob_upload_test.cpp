// Blob uploads under attack (issue 15 item 5): put_blob must be signed by a
// funded account, stays within per-key and per-node quotas, and unpinned
// blobs are collected after the grace period while pinned ones stay. An
// in-process node (one validator) and its JSON-RPC, plus the store alone for
// pinning.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "node/blob_upload.h"
#include "node/chain_db.h"
#include "node/client.h"
#include "node/node.h"
#include "referee/blob_rules.h"
#include "referee/messages.h"
#include "tests/node/node_test_util.h"
#include "tests/node/one_node.h"

namespace vt::test {
namespace {

Bytes Blob(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed * 31 + i * 7);
  return b;
}

// A one-validator node in-process; account "acct0" (key 100) is funded with
// 10^12, "poor" (key 500) with `poor_balance`.
class BlobNode : public OneValidatorNode {
 public:
  BlobNode(const std::string& tag, node::BlobLimits limits, vm::Amount poor_balance = 1000)
      : OneValidatorNode(tag, Genesis(poor_balance), limits) {
    Start();
  }
  // The reason code of a put_blob, "" when it was stored.
  std::string Put(const crypto::SecretKey& key, const Bytes& blob) {
    auto r = client().PutBlob(key, blob);
    return r.ok() ? "" : r.status().reason();
  }
  bool Holds(const Bytes& blob) {
    auto r = client().TryGetBlob(crypto::Sha256Digest(blob));
    return r.ok() && r->has_value();
  }

 private:
  static node::GenesisFile Genesis(vm::Amount poor_balance) {
    node::GenesisFile g = MakeTestGenesis(1, 1, 200, 600, node::NowMs());
    g.accounts.push_back({"poor", NodeTestKey(500).address(), poor_balance});
    auto parsed = node::ParseGenesis(node::GenesisToJson(g));
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    return parsed.ok() ? *parsed : g;
  }
};

// Raw put_blob with explicit uploader and signature fields.
std::string RawPut(node::ChainClient& c, const Bytes& blob, const std::string& uploader, const std::string& sig) {
  auto r = c.Call("put_blob", nlohmann::json::array({ToHex(blob), uploader, sig}));
  return r.ok() ? "" : r.status().reason();
}

TEST(BlobUpload, OnlyAValidSignatureForThisChainIsAccepted) {
  BlobNode n("blob-sig", {});
  const auto key = NodeTestKey(100);
  const Bytes blob = Blob(1000, 1);
  const Hash256 h = crypto::Sha256Digest(blob);
  const std::string pub = key.public_key().Hex();
  auto sig = [&](const crypto::SecretKey& k, std::uint64_t chain, std::uint64_t len) {
    return node::SignUpload(k, chain, h, len)->Hex();
  };
  EXPECT_EQ(RawPut(n.client(), blob, pub, std::string(128, '0')), "blob-bad-signature");
  EXPECT_EQ(RawPut(n.client(), blob, pub, "zz"), "blob-bad-signature");
  EXPECT_EQ(RawPut(n.client(), blob, "abcd", sig(key, 7, blob.size())), "blob-bad-signature");
  EXPECT_EQ(RawPut(n.client(), blob, pub, sig(NodeTestKey(101), 7, blob.size())), "blob-bad-signature");
  EXPECT_EQ(RawPut(n.client(), blob, pub, sig(key, 8, blob.size())), "blob-bad-signature") << "another chain";
  EXPECT_EQ(RawPut(n.client(), blob, pub, sig(key, 7, blob.size() + 1)), "blob-bad-signature") << "another length";
  // The old unsigned form names no uploader: bad params, nothing stored.
  auto unsigned_put = n.client().Call("put_blob", nlohmann::json::array({ToHex(blob)}));
  EXPECT_EQ(unsigned_put.status().reason(), "rpc-invalid-params");
  EXPECT_FALSE(n.Holds(blob));
  EXPECT_EQ(RawPut(n.client(), blob, pub, sig(key, 7, blob.size())), "");
  EXPECT_TRUE(n.Holds(blob));
  EXPECT_EQ(RawPut(n.client(), Bytes{}, pub, node::SignUpload(key, 7, crypto::Sha256Digest(Bytes{}), 0)->Hex()),
            "blob-empty");
}

// The reproduction: put_blob needed no key, so 30 MB of random blobs
// from nobody stayed on disk. Strangers now store nothing, whatever they send.
TEST(BlobUpload, KeysWithoutFundsStoreNothing) {
  BlobNode n("blob-unfunded", {});
  for (std::uint32_t k = 0; k < 50; ++k) {
    const Bytes blob = Blob(4096, static_cast<std::uint8_t>(k));
    EXPECT_EQ(n.Put(NodeTestKey(20'000 + k), blob), "blob-insufficient-funds");
    EXPECT_FALSE(n.Holds(blob));
  }
  // A small balance covers naming that many unpinned bytes, no more.
  const auto poor = NodeTestKey(500);  // balance 1000
  EXPECT_EQ(n.Put(poor, Blob(800, 1)), "");
  EXPECT_EQ(n.Put(poor, Blob(300, 2)), "blob-insufficient-funds");
  EXPECT_EQ(n.Put(poor, Blob(200, 3)), "");
  EXPECT_EQ(n.Put(poor, Blob(1, 4)), "blob-insufficient-funds");
  EXPECT_EQ(n.Put(poor, Blob(800, 1)), "") << "re-uploading a stored blob charges nothing";
}

TEST(BlobUpload, PerKeyAndPerNodeQuotasHold) {
  node::BlobLimits limits;
  limits.per_key_blobs = 2;
  limits.per_key_bytes = 5000;
  limits.total_blobs = 3;
  BlobNode n("blob-quota", limits, 1'000'000);
  const auto a = NodeTestKey(100), b = NodeTestKey(500);
  EXPECT_EQ(n.Put(a, Blob(4000, 1)), "");
  EXPECT_EQ(n.Put(a, Blob(2000, 2)), "blob-quota-exceeded") << "bytes per key";
  EXPECT_EQ(n.Put(a, Blob(1000, 3)), "");
  EXPECT_EQ(n.Put(a, Blob(10, 4)), "blob-quota-exceeded") << "blobs per key";
  EXPECT_EQ(n.Put(b, Blob(10, 5)), "");
  EXPECT_EQ(n.Put(b, Blob(10, 6)), "blob-store-full") << "the node's total";
  EXPECT_FALSE(n.Holds(Blob(10, 6)));
  // The account survives a restart: the upload records are read back.
  n.Stop();
  n.Start();
  EXPECT_EQ(n.Put(a, Blob(10, 7)), "blob-quota-exceeded");
  EXPECT_EQ(n.Put(b, Blob(10, 8)), "blob-store-full");
  EXPECT_TRUE(n.Holds(Blob(4000, 1)));
}

TEST(BlobUpload, UnpinnedBlobsAreCollectedAfterTheGracePeriod) {
  node::BlobLimits limits;
  limits.grace_ms = 300;
  limits.per_key_blobs = 1;
  BlobNode n("blob-gc", limits);
  const auto a = NodeTestKey(100);
  const Bytes first = Blob(5000, 1), second = Blob(5000, 2);
  ASSERT_EQ(n.Put(a, first), "");
  EXPECT_EQ(n.Put(a, second), "blob-quota-exceeded");
  // Collected (the node looks every second), and the key's quota is free again.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = !n.Holds(first);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "an unpinned blob outlived its grace period";
  EXPECT_EQ(n.Put(a, second), "");
}

// Pinning and collection in the store: a blob a committed block names is
// pinned and survives collection (only its upload record goes); an unpinned
// one is deleted with its record.
TEST(BlobUpload, CollectionKeepsPinnedBlobs) {
  TempDir dir("blob-pin");
  auto db = node::ChainDb::Open(dir.path());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  const Bytes pinned_blob = Blob(3000, 1), loose_blob = Blob(3000, 2);
  const node::UploadRecord rec{NodeTestKey(100).address(), 3000, 1};
  auto ph = (*db)->PutBlob(pinned_blob, rec);
  auto lh = (*db)->PutBlob(loose_blob, rec);
  ASSERT_TRUE(ph.ok() && lh.ok());
  std::size_t records = 0;
  ASSERT_TRUE((*db)->ScanUploads([&](const Hash256&, const node::UploadRecord& r) {
    EXPECT_EQ(r, rec);
    ++records;
    return true;
  }).ok());
  EXPECT_EQ(records, 2u);
  // A block whose Commit names the first blob as its final state.
  referee::CommitArgs args;
  args.state_blob = *ph;
  args.state_blob_bytes = pinned_blob.size();
  args.first_proof.leaf_count = args.last_proof.leaf_count = 1;  // decodable; the store does not judge it
  vm::Transaction tx;
  tx.chain_id = 7;
  tx.gas_limit = 1'000'000;
  tx.gas_price = 1;
  tx.payload = vm::CallPayload{referee::kRefereeContractId, static_cast<std::uint16_t>(referee::Method::kCommit),
                               EncodeToBytes(args)};
  ASSERT_EQ(referee::NamedBlobs(tx).size(), 1u)
      << DecodeExact<referee::CommitArgs>(EncodeToBytes(args)).status().ToString() << " / "
      << referee::BlobsOf(args).status().ToString();
  ASSERT_TRUE(vm::SignTransaction(tx, NodeTestKey(100)).ok());
  vm::Block block;
  block.header.height = 1;
  block.txs.push_back(tx);
  ASSERT_TRUE((*db)->CommitBlock(vm::WriteBatch{}, block, {}, vm::ChainTip{7, 1, vm::BlockHash(block.header), 0}).ok());
  EXPECT_TRUE(*(*db)->IsPinned(*ph));
  records = 0;
  ASSERT_TRUE((*db)->ScanUploads([&](const Hash256& h, const node::UploadRecord&) {
    EXPECT_EQ(h, *lh) << "the pinned blob's record went with the block";
    ++records;
    return true;
  }).ok());
  EXPECT_EQ(records, 1u);
  ASSERT_TRUE((*db)->CollectBlob(*ph).ok());
  ASSERT_TRUE((*db)->CollectBlob(*lh).ok());
  EXPECT_TRUE((*db)->GetBlob(*ph)->has_value()) << "a pinned blob is never collected";
  EXPECT_FALSE((*db)->GetBlob(*lh)->has_value());
}

TEST(BlobLedgerProperty, RandomUploadsAndForgetsKeepTheTotalsExact) {
  node::BlobLimits limits;
  limits.per_key_blobs = 5;
  limits.per_key_bytes = 50'000;
  limits.total_blobs = 40;
  limits.total_bytes = 300'000;
  node::BlobLedger ledger(limits);
  std::mt19937_64 rng(15);
  std::map<Hash256, std::pair<crypto::Address, std::uint64_t>> held;
  for (int step = 0; step < 5000; ++step) {
    const crypto::Address owner = NodeTestKey(100 + static_cast<std::uint32_t>(rng() % 12)).address();
    Hash256 h;
    h.bytes[0] = static_cast<std::uint8_t>(rng() % 64);
    if (rng() % 3 == 0) {
      ledger.Forget(h);
      held.erase(h);
    } else {
      const std::uint64_t bytes = 1 + rng() % 20'000;
      const vm::Amount balance = rng() % 60'000;
      if (ledger.Admit(h, owner, bytes, balance, 1, step).ok() && !held.count(h)) held[h] = {owner, bytes};
    }
    // The ledger's totals equal the model's, and never pass a bound.
    std::map<crypto::Address, node::BlobLedger::Usage> by_key;
    node::BlobLedger::Usage total;
    for (const auto& [hash, v] : held) {
      by_key[v.first].bytes += v.second;
      by_key[v.first].blobs += 1;
      total.bytes += v.second;
      total.blobs += 1;
    }
    ASSERT_EQ(ledger.Total().bytes, total.bytes);
    ASSERT_EQ(ledger.Total().blobs, total.blobs);
    ASSERT_LE(total.bytes, limits.total_bytes);
    ASSERT_LE(total.blobs, limits.total_blobs);
    for (const auto& [a, u] : by_key) {
      ASSERT_EQ(ledger.OfKey(a).bytes, u.bytes);
      ASSERT_LE(u.bytes, limits.per_key_bytes);
      ASSERT_LE(u.blobs, limits.per_key_blobs);
    }
  }
}

}  // namespace
}  // namespace vt::test
