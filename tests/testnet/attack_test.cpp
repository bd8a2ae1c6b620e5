// The chain under attack from a local process without keys or funds (issue
// 15): real vt-node processes of a 4-validator loopback testnet, attacked
// over JSON-RPC and raw P2P. Every test asserts on counts (blocks, proposers,
// reorgs, reasons), never on timings; every wait is bounded; the testnet is
// torn down at the end.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "common/encoding.h"
#include "common/limits.h"
#include "contract_vm/tx.h"
#include "net/frame.h"
#include "node/genesis.h"
#include "tests/testnet/testnet_util.h"

namespace vt::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

node::TestnetSpec AttackSpec() {
  node::TestnetSpec spec;
  spec.validators = 4;
  spec.block_interval_ms = 300;
  spec.proposer_timeout_ms = 900;
  return spec;
}

// Keys nobody funded: deterministic, distinct from the testnet's.
crypto::SecretKey StrangerKey(std::uint32_t n) {
  std::array<std::uint8_t, 32> bytes{};
  bytes[0] = 0x5a;
  for (int i = 0; i < 4; ++i) bytes[28 + i] = static_cast<std::uint8_t>(n >> (24 - 8 * i));
  return crypto::SecretKey::FromBytes(bytes).value();
}

const crypto::Address kSink = crypto::Address::FromHex("00000000000000000000000000000000000000ee").value();

vm::Transaction SignedTransfer(const crypto::SecretKey& from, std::uint64_t chain_id, std::uint64_t nonce) {
  vm::Transaction tx;
  tx.chain_id = chain_id;
  tx.nonce = nonce;
  tx.gas_limit = 100'000;
  tx.gas_price = 1;
  tx.payload = vm::TransferPayload{kSink, 1};
  EXPECT_TRUE(vm::SignTransaction(tx, from).ok());
  return tx;
}

std::string SubmitReason(node::ChainClient& c, const vm::Transaction& tx) {
  auto r = c.Call("submit_tx", json::array({ToHex(vm::EncodeTransaction(tx))}));
  return r.ok() ? "" : r.status().reason();
}

std::uint64_t StatusField(node::ChainClient& c, const char* field) {
  auto s = c.ChainStatus();
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? (*s)[field].get<std::uint64_t>() : 0;
}

std::uint64_t TotalReorgs(ScopedTestnet& t) {
  std::uint64_t sum = 0;
  for (const char* n : {"v0", "v1", "v2", "v3"}) {
    auto c = t.Client(n);
    sum += StatusField(c, "reorgs");
  }
  return sum;
}

// The blocks in (from, to] proposed by `pubkey`, read from `c`.
std::uint64_t ProposedBy(node::ChainClient& c, const std::string& pubkey, std::uint64_t from, std::uint64_t to) {
  std::uint64_t n = 0;
  for (std::uint64_t h = from + 1; h <= to; ++h) {
    auto b = c.Call("get_block", json::array({h}));
    if (b.ok() && (*b)["proposer"].get<std::string>() == pubkey) ++n;
  }
  return n;
}

// Every node holds the same block at the lowest tip.
void ExpectOneChain(ScopedTestnet& t) {
  std::uint64_t low = ~std::uint64_t{0};
  for (const char* n : {"v0", "v1", "v2", "v3"}) {
    auto c = t.Client(n);
    low = std::min(low, HeightOf(c).value_or(0));
  }
  std::optional<std::string> first;
  for (const char* n : {"v0", "v1", "v2", "v3"}) {
    auto c = t.Client(n);
    const auto h = BlockHashAt(c, low);
    ASSERT_TRUE(h.has_value()) << n;
    if (!first) first = h;
    EXPECT_EQ(*h, *first) << n << " is on another chain at height " << low;
  }
}

// Issue 15 item 2: 4,200 zero-balance keys each sending nonce 1 filled every
// mempool and a funded transfer waited over two minutes. Here 1,500 fresh
// keys send nonces 1 and 0 to three validators from three clients at once;
// the funded transfer, sent in the middle of the flood, must be in a block
// within a few blocks, and no node may hold any of the flood.
TEST(Attack, ZeroBalanceFloodDoesNotDelayFundedTx) {
  ScopedTestnet t("attack-flood", AttackSpec());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.net().Up().ok());
  auto c0 = t.Client("v0");
  ASSERT_TRUE(c0.WaitHeight(2, 30s).ok());
  const std::uint64_t chain_id = *c0.ChainId();

  constexpr std::uint32_t kKeysPerClient = 500;
  std::mutex mu;
  std::map<std::string, int> reasons;
  std::atomic<int> progress{0};
  std::vector<std::thread> flood;
  for (int w = 0; w < 3; ++w) {
    flood.emplace_back([&, w] {
      node::ChainClient c("127.0.0.1", t.net().rpc_port("v" + std::to_string(w)), 10s);
      for (std::uint32_t k = 0; k < kKeysPerClient; ++k) {
        const auto key = StrangerKey(static_cast<std::uint32_t>(w) * kKeysPerClient + k);
        for (std::uint64_t nonce : {1, 0}) {
          const std::string why = SubmitReason(c, SignedTransfer(key, chain_id, nonce));
          std::lock_guard lock(mu);
          ++reasons[why.empty() ? "ACCEPTED" : why];
        }
        ++progress;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return progress >= static_cast<int>(kKeysPerClient); }, 120s));
  const auto client_key = t.net().Key("client");
  ASSERT_TRUE(client_key.ok());
  const std::uint64_t sent_at = *HeightOf(c0);
  auto id = c0.Send(*client_key, vm::TransferPayload{kSink, 5}, 100'000);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  for (std::thread& th : flood) th.join();
  auto receipt = c0.WaitReceipt(*id, 60s);
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_TRUE((*receipt)["success"].get<bool>());
  const std::uint64_t included_at = (*receipt)["height"].get<std::uint64_t>();
  EXPECT_LE(included_at, sent_at + 5) << "the funded transfer waited " << included_at - sent_at << " blocks";

  EXPECT_EQ(reasons["ACCEPTED"], 0) << "an unfunded key got a transaction into a mempool";
  EXPECT_EQ(reasons["mempool-insufficient-funds"] + reasons["tx-insufficient-funds"],
            static_cast<int>(2 * 3 * kKeysPerClient));
  for (const char* n : {"v0", "v1", "v2", "v3"}) {
    auto c = t.Client(n);
    EXPECT_EQ(StatusField(c, "mempool"), 0u) << n << " holds flood transactions";
  }
  ExpectOneChain(t);
}

// Issue 15 item 4: a 10 MB transaction was accepted by one validator over
// RPC, which then proposed blocks nobody could receive. Now it is refused at
// the door — over RPC before decoding, and over P2P from the frame header
// before a payload byte is kept — and the chain goes on without a reorg.
TEST(Attack, OversizedTxRefusedAtTheDoor) {
  ScopedTestnet t("attack-oversized", AttackSpec());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.net().Up().ok());
  auto c0 = t.Client("v0");
  ASSERT_TRUE(c0.WaitHeight(2, 30s).ok());
  const std::uint64_t chain_id = *c0.ChainId();
  const std::uint64_t reorgs_before = TotalReorgs(t);
  const auto client_key = t.net().Key("client");
  ASSERT_TRUE(client_key.ok());
  const std::uint64_t nonce = c0.Account(client_key->address())->next_nonce;

  // Over RPC: properly signed, one byte over the limit and ten megabytes.
  std::vector<Hash256> refused;
  for (std::size_t args : {limits::kMaxTxBytes, std::size_t{10} << 20}) {
    vm::Transaction tx;
    tx.chain_id = chain_id;
    tx.nonce = nonce;
    tx.gas_limit = 50'000'000;
    tx.gas_price = 1;
    tx.payload = vm::CallPayload{1, 1, Bytes(args, 0x42)};
    ASSERT_TRUE(vm::SignTransaction(tx, *client_key).ok());
    ASSERT_GT(vm::EncodeTransaction(tx).size(), limits::kMaxTxBytes);
    for (const char* n : {"v0", "v1"}) {
      auto c = t.Client(n);
      EXPECT_EQ(SubmitReason(c, tx), "tx-too-large") << n << ", " << args << " bytes of args";
    }
    refused.push_back(vm::TxId(tx));
  }

  // Over P2P: a frame announcing a 10 MB transaction. The node reads the
  // 14-byte header, refuses it and closes the connection.
  {
    auto genesis = node::LoadGenesis(t.net().GenesisPath());
    ASSERT_TRUE(genesis.ok()) << genesis.status().ToString();
    const std::string net_id = genesis->chain_name + "/" + std::to_string(genesis->genesis.params.chain_id);
    Bytes header;
    auto put_le = [&](std::uint64_t v, int n) {
      for (int i = 0; i < n; ++i) header.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    };
    put_le(net::ChainMagic(net_id), 4);
    put_le(static_cast<std::uint16_t>(net::MsgType::kTx), 2);
    put_le(std::uint32_t{10} << 20, 4);
    put_le(0, 4);  // checksum: never reached
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket sock(io);
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), t.net().Find("v1")->p2p_port});
    boost::system::error_code ec;
    boost::asio::write(sock, boost::asio::buffer(header), ec);
    bool closed = false;
    std::array<std::uint8_t, 4096> buf{};
    sock.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!closed && std::chrono::steady_clock::now() < deadline) {
      sock.read_some(boost::asio::buffer(buf), ec);
      if (ec == boost::asio::error::would_block) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      closed = static_cast<bool>(ec);
    }
    EXPECT_TRUE(closed) << "the node kept a connection announcing a 10 MB transaction";
  }

  // The chain goes on, one chain, no reorg, and nobody has the transactions.
  const std::uint64_t h = *HeightOf(c0);
  EXPECT_TRUE(c0.WaitHeight(h + 4, 30s).ok());
  for (const char* n : {"v0", "v1", "v2", "v3"}) {
    auto c = t.Client(n);
    for (const Hash256& id : refused)
      EXPECT_EQ(c.Call("get_tx", json::array({id.Hex()})).status().reason(), "not-found") << n;
  }
  EXPECT_EQ(TotalReorgs(t), reorgs_before);
  ExpectOneChain(t);
}

// Issue 15 item 5: four clients streaming 60 MB put_blob bodies made a
// validator lag 4 blocks and reorg 6 times, and put_blob stored anyone's
// bytes. Now RPC runs on its own threads with a budget for large bodies, and
// uploads must be signed by a funded key. During the flood the attacked
// validator keeps proposing its share, nobody reorgs, a funded transfer sent
// to it lands, and the strangers' bytes are not kept.
TEST(Attack, RpcBlobFloodDoesNotSlowBlocks) {
  ScopedTestnet t("attack-blobs", AttackSpec());
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.net().Up().ok());
  auto c0 = t.Client("v0");
  ASSERT_TRUE(c0.WaitHeight(3, 30s).ok());
  auto status = c0.ChainStatus();
  ASSERT_TRUE(status.ok());
  const std::string v0_key = (*status)["validator"].get<std::string>();
  const std::uint64_t reorgs_before = TotalReorgs(t);
  const std::uint64_t h0 = *HeightOf(c0);
  const auto funded = t.net().Key("client");
  ASSERT_TRUE(funded.ok());

  // Four clients, three uploads each of a 30 MB blob (a 60 MB hex body): two
  // sign with keys nobody funded, two with a funded key.
  constexpr std::size_t kBlobBytes = 30u << 20;
  constexpr int kUploads = 3;
  std::mutex mu;
  std::map<std::string, int> stranger_reasons, funded_reasons;
  std::vector<std::thread> flood;
  for (int w = 0; w < 4; ++w) {
    flood.emplace_back([&, w] {
      node::ChainClient c("127.0.0.1", t.net().rpc_port("v0"), 120s);
      for (int i = 0; i < kUploads; ++i) {
        Bytes blob(kBlobBytes, static_cast<std::uint8_t>(w));
        blob[0] = static_cast<std::uint8_t>(i);  // distinct blobs
        const bool stranger = w < 2;
        const crypto::SecretKey stranger_key = StrangerKey(900'000 + static_cast<std::uint32_t>(w));
        const crypto::SecretKey& key = stranger ? stranger_key : *funded;
        auto r = c.PutBlob(key, blob);
        std::lock_guard lock(mu);
        ++(stranger ? stranger_reasons : funded_reasons)[r.ok() ? "STORED" : r.status().reason()];
      }
    });
  }
  // A funded transfer to the attacked validator while the flood runs.
  const auto solver = t.net().Key("solver");
  ASSERT_TRUE(solver.ok());
  auto id = c0.Send(*solver, vm::TransferPayload{kSink, 7}, 100'000);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto receipt = c0.WaitReceipt(*id, 90s);
  for (std::thread& th : flood) th.join();
  ASSERT_TRUE(receipt.ok()) << receipt.status().ToString();
  EXPECT_TRUE((*receipt)["success"].get<bool>());
  const std::uint64_t h1 = *HeightOf(c0);

  // Counts, not times: the chain moved, v0 proposed its share, no reorg.
  const std::uint64_t blocks = h1 - h0;
  const std::uint64_t mine = ProposedBy(c0, v0_key, h0, h1);
  std::cout << "during the flood: " << blocks << " blocks, " << mine << " proposed by the attacked validator\n";
  EXPECT_GE(blocks, 8u);
  // Its fair share is blocks/4; on main's binary (RPC on the network thread)
  // this flood left it 71 of 454 (63 % of its share) with 15 reorgs.
  EXPECT_GE(mine * 4 * 4, blocks * 3) << "the attacked validator lost more than a quarter of its turns";
  EXPECT_EQ(TotalReorgs(t), reorgs_before);
  ExpectOneChain(t);

  // Strangers stored nothing; the funded key's uploads were stored (or told
  // to retry while the large-body budget was spent).
  for (const auto& [why, n] : stranger_reasons)
    EXPECT_TRUE(why == "blob-insufficient-funds" || why == "rpc-busy") << n << " x " << why;
  EXPECT_EQ(stranger_reasons["STORED"], 0);
  EXPECT_GE(funded_reasons["STORED"], 1);
  for (const auto& [why, n] : funded_reasons) EXPECT_TRUE(why == "STORED" || why == "rpc-busy") << n << " x " << why;
  EXPECT_EQ(StatusField(c0, "unpinned_blob_bytes"), static_cast<std::uint64_t>(funded_reasons["STORED"]) * kBlobBytes);
}

}  // namespace
}  // namespace vt::test
