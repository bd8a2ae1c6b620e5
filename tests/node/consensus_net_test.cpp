// BFT finality over the real P2P layer, in one process: four validators,
// each a P2PNode on its own io thread with a ConsensusDriver and a toy chain
// (a block names its height, its parent and its proposer), every link
// through a fault-injection proxy (tests/support/fault_proxy.h). Real
// BIP-340 signatures, the real frame codec and sync, certificates checked
// on every final block a node takes from a peer.
//
// * PartitionHealsWithoutFork: {v0,v1} | {v2,v3}. Neither half has a
//   quorum (3 of 4), so neither finalises anything while cut off; after the
//   heal all four go on from the same final chain (nothing is reverted:
//   final blocks are never rolled back, and every node's chain is checked
//   block by block against the others and against its own earlier view).
//   The partition lasts 4 s rather than the 30: without a quorum no
//   round can end (a round needs 2f+1 precommits to time out), so a longer
//   cut only waits longer for the same state.
// * Lossy links (drops and duplicates, which on sealed links reset the link,
//   and in-order delays) on every link: the chain still grows and no two
//   nodes finalise different blocks.
// * A validator restarted from its state file rejoins without signing
//   anything that conflicts with what it signed before.
// * One of four validators double-signs every vote and sends garbage: the
//   chain goes on, one chain, and every honest validator holds evidence
//   against it (checked with VerifyEvidence).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "consensus/wire.h"
#include "crypto/sha256.h"
#include "node/consensus_driver.h"
#include "tests/support/fault_proxy.h"
#include "tests/support/test_seed.h"

namespace vt::node {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

constexpr std::uint64_t kChain = 99;
// Upper bounds for a failure to show, never measured times.
constexpr auto kDeadline = 60s;

crypto::SecretKey KeyOf(std::size_t i) {
  std::array<std::uint8_t, 32> b{};
  b[0] = 0x17;
  b[31] = static_cast<std::uint8_t>(i + 1);
  return std::move(crypto::SecretKey::FromBytes(b).value());
}

// A chain of opaque blocks: u64 height ‖ hash parent ‖ u32 proposer ‖ u64 nonce.
class ToyChain final : public FinalityApp, public net::BlockSource {
 public:
  explicit ToyChain(std::uint32_t who) : m_who(who) {}

  std::uint64_t FinalHeight() const override {
    std::lock_guard lock(m_mu);
    return m_final.size();
  }
  Result<std::pair<Hash256, Bytes>> BuildBlock(std::uint64_t height) override {
    Writer w;
    w.PutU64(height);
    w.PutHash(TipHash());
    w.PutU32(m_who);
    w.PutU64(m_nonce++);
    Bytes b = std::move(w).Take();
    return std::make_pair(crypto::Sha256Digest(b), std::move(b));
  }
  Result<Hash256> CheckBlock(std::uint64_t height, ByteSpan block, bool certified) override {
    // As a node whose blobs for every proposal are missing: it prevotes nil
    // but must take final blocks from sync.
    if (!certified && refuse_proposals) return Status::Invalid("toy-refused");
    Reader r(block);
    VT_ASSIGN_OR_RETURN(const std::uint64_t h, r.GetU64());
    VT_ASSIGN_OR_RETURN(const Hash256 parent, r.GetHash());
    if (h != height) return Status::Invalid("toy-wrong-height");
    if (parent != TipHash()) return Status::Invalid("toy-wrong-parent");
    return crypto::Sha256Digest(block);
  }
  Status CommitBlock(std::uint64_t height, ByteSpan block, const consensus::CommitCertificate& cert) override {
    std::lock_guard lock(m_mu);
    if (height != m_final.size() + 1) return Status::Error("toy-not-next");
    m_final.push_back(consensus::FinalBlock{Bytes(block.begin(), block.end()), cert});
    return Status::Ok();
  }
  std::uint64_t TipHeight() const override { return FinalHeight(); }
  std::atomic<bool> refuse_proposals{false};
  std::optional<Bytes> BlockAt(std::uint64_t height) const override {
    std::lock_guard lock(m_mu);
    if (height == 0 || height > m_final.size()) return std::nullopt;
    return EncodeToBytes(m_final[height - 1]);
  }
  std::vector<Hash256> Hashes() const {
    std::lock_guard lock(m_mu);
    std::vector<Hash256> out;
    for (const auto& f : m_final) out.push_back(crypto::Sha256Digest(f.block));
    return out;
  }
  std::vector<consensus::CommitCertificate> Certificates() const {
    std::lock_guard lock(m_mu);
    std::vector<consensus::CommitCertificate> out;
    for (const auto& f : m_final) out.push_back(f.cert);
    return out;
  }

 private:
  Hash256 TipHash() const {
    std::lock_guard lock(m_mu);
    return m_final.empty() ? Hash256{} : crypto::Sha256Digest(m_final.back().block);
  }
  std::uint32_t m_who;
  std::uint64_t m_nonce = 0;
  mutable std::mutex m_mu;
  std::vector<consensus::FinalBlock> m_final;
};

class Handler final : public net::MessageHandler {
 public:
  ConsensusDriver* driver = nullptr;
  net::Verdict OnGossip(net::PeerId from, net::GossipKind kind, const Hash256&, ByteSpan payload) override {
    if (kind != net::GossipKind::kConsensus || driver == nullptr) return net::Verdict::Ignore();
    return driver->OnMessage(from, payload);
  }
  net::Verdict OnSyncBlocks(net::PeerId from, std::uint64_t, const std::vector<Bytes>& blocks) override {
    if (driver == nullptr) return net::Verdict::Ignore();
    return driver->OnFinalBlocks(from, blocks);
  }
};

// One validator process, in-process: its io thread runs P2P and consensus.
class Validator {
 public:
  Validator(std::size_t index, const std::vector<crypto::PublicKey>& set, const std::filesystem::path& dir,
            std::shared_ptr<ToyChain> chain)
      : m_key(KeyOf(index)), m_chain(std::move(chain)) {
    net::P2PConfig pc;
    pc.chain_id = "bft-test";
    pc.node_key = std::make_shared<const crypto::SecretKey>(m_key.Clone());
    pc.reconnect_initial = 100ms;
    pc.reconnect_max = 300ms;
    pc.user_agent = "bft-test v" + std::to_string(index);
    m_p2p = std::make_unique<net::P2PNode>(m_io, pc, &m_handler, m_chain.get());
    DriverConfig dc;
    dc.name = "v" + std::to_string(index);
    dc.chain_id = kChain;
    dc.validators = set;
    dc.key = &m_key;
    dc.timeouts = consensus::Timeouts{400, 200, 200, 100};
    dc.state_file = dir / ("v" + std::to_string(index) + ".consensus");
    dc.resend = 300ms;
    m_driver = ConsensusDriver::Create(m_io, *m_p2p, *m_chain, dc).value();
    m_handler.driver = m_driver.get();
  }
  ~Validator() { Stop(); }

  Status Start() {
    VT_TRY(m_p2p->Start());
    std::promise<Status> started;
    auto done = started.get_future();
    asio::post(m_io, [&] { started.set_value(m_driver->Start()); });
    m_thread = std::thread([this] { m_io.run(); });
    return done.get();
  }
  void Stop() {
    if (!m_thread.joinable()) return;
    asio::post(m_io, [this] { m_driver->Stop(); });
    m_p2p->Stop();
    m_thread.join();
  }
  std::uint16_t port() const { return m_p2p->listen_port(); }
  void Dial(const net::Endpoint& at) { m_p2p->AddPeer(at); }
  ToyChain& chain() { return *m_chain; }
  std::shared_ptr<ToyChain> shared_chain() { return m_chain; }
  DriverStats stats() {
    std::promise<DriverStats> p;
    auto f = p.get_future();
    asio::post(m_io, [&] { p.set_value(m_driver->stats()); });
    return f.get();
  }
  std::vector<consensus::DuplicateVote> evidence() {
    std::promise<std::vector<HeldEvidence>> p;
    auto f = p.get_future();
    asio::post(m_io, [&] { p.set_value(m_driver->evidence()); });
    std::vector<consensus::DuplicateVote> out;
    for (const HeldEvidence& e : f.get()) out.push_back(DecodeExact<consensus::DuplicateVote>(e.item).value());
    return out;
  }

 private:
  crypto::SecretKey m_key;
  std::shared_ptr<ToyChain> m_chain;
  asio::io_context m_io;
  Handler m_handler;
  std::unique_ptr<net::P2PNode> m_p2p;
  std::unique_ptr<ConsensusDriver> m_driver;
  std::thread m_thread;
};

// An equivocating validator: for every (height, round) it hears of, it
// signs a prevote and a precommit for the block it saw AND for a block that
// does not exist, and sends both to everyone; once it also sends bytes
// that are no consensus message at all (and gets itself banned).
class Byzantine final : public net::MessageHandler {
 public:
  Byzantine(std::size_t index, std::uint64_t seed, bool silent)
      : m_index(static_cast<std::uint32_t>(index)), m_key(KeyOf(index)), m_rng(seed), m_silent(silent) {
    net::P2PConfig pc;
    pc.chain_id = "bft-test";
    pc.node_key = std::make_shared<const crypto::SecretKey>(m_key.Clone());
    pc.reconnect_initial = 100ms;
    pc.reconnect_max = 300ms;
    m_p2p = std::make_unique<net::P2PNode>(m_io, pc, this);
    EXPECT_TRUE(m_p2p->Start().ok());
    m_thread = std::thread([this] { m_io.run(); });
  }
  ~Byzantine() {
    m_p2p->Stop();
    m_thread.join();
  }
  std::uint16_t port() const { return m_p2p->listen_port(); }
  void Dial(const net::Endpoint& at) { m_p2p->AddPeer(at); }
  std::uint64_t double_signed() const { return m_double_signed.load(); }

  net::Verdict OnGossip(net::PeerId, net::GossipKind kind, const Hash256&, ByteSpan payload) override {
    if (kind != net::GossipKind::kConsensus || m_silent) return net::Verdict::Ignore();
    auto msg = consensus::DecodeMsg(payload);
    if (!msg.ok()) return net::Verdict::Ignore();
    std::uint64_t h = 0;
    std::uint32_t r = 0;
    std::optional<Hash256> seen;
    if (const auto* p = std::get_if<consensus::ProposalMsg>(&*msg)) {
      h = p->proposal.height, r = p->proposal.round, seen = p->proposal.block;
    } else {
      const auto& v = std::get<consensus::Vote>(*msg);
      h = v.height, r = v.round, seen = v.block;
    }
    if (!m_acted.insert({h, r}).second) return net::Verdict::Ignore();
    Hash256 fake;
    for (auto& b : fake.bytes) b = static_cast<std::uint8_t>(m_rng());
    for (consensus::VoteType t : {consensus::VoteType::kPrevote, consensus::VoteType::kPrecommit}) {
      for (const std::optional<Hash256>& block : {seen, std::optional<Hash256>(fake)}) {
        consensus::Vote v{t, h, r, block, m_index, {}};
        EXPECT_TRUE(consensus::SignVote(kChain, m_key, v).ok());
        (void)m_p2p->Broadcast(net::GossipKind::kConsensus, consensus::EncodeMsg(v));
      }
      ++m_double_signed;
    }
    if (m_acted.size() == 4) {  // garbage under the consensus type, once its double-signs are out
      Bytes junk(1 + m_rng() % 64);
      for (auto& b : junk) b = static_cast<std::uint8_t>(m_rng());
      (void)m_p2p->Broadcast(net::GossipKind::kConsensus, std::move(junk));
    }
    return net::Verdict::Ignore();
  }

 private:
  std::uint32_t m_index;
  crypto::SecretKey m_key;
  std::mt19937_64 m_rng;
  bool m_silent;  // connected, but never says a word
  asio::io_context m_io;
  std::unique_ptr<net::P2PNode> m_p2p;
  std::thread m_thread;
  std::set<std::pair<std::uint64_t, std::uint32_t>> m_acted;  // io thread
  std::atomic<std::uint64_t> m_double_signed{0};
};

class Net {
 public:
  // Validators with an index in `byzantine` are Byzantine ones (above), or silent ones.
  explicit Net(std::size_t n, std::set<std::size_t> byzantine = {}, bool silent = false) : m_dir(std::filesystem::temp_directory_path() / ("bft-net-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(m_dir);
    std::filesystem::create_directories(m_dir);
    for (std::size_t i = 0; i < n; ++i) m_keys.push_back(KeyOf(i).public_key());
    for (std::size_t i = 0; i < n; ++i) {
      if (byzantine.count(i)) {
        m_byzantine[i] = std::make_unique<Byzantine>(i, test::TestSeed() + i, silent);
        if (m_nodes.size() <= i) m_nodes.resize(i + 1);
      } else {
        Add(i, std::make_shared<ToyChain>(static_cast<std::uint32_t>(i)));
      }
    }
    const auto port = [&](std::size_t i) { return m_byzantine.count(i) ? m_byzantine[i]->port() : m_nodes[i]->port(); };
    // One link per pair, i dials j > i, through its own proxy.
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) {
        // On its own loopback address at j's port (the handshake binds the port).
        const std::string host = "127.0.0." + std::to_string(2 + i * n + j);
        auto proxy = std::make_unique<test::FaultProxy>(port(j), test::TestSeed() + i * 16 + j, host);
        EXPECT_TRUE(proxy->Start().ok());
        const net::Endpoint at{proxy->host(), proxy->port()};
        if (m_byzantine.count(i)) {
          m_byzantine[i]->Dial(at);
        } else {
          m_nodes[i]->Dial(at);
        }
        m_links[{i, j}] = std::move(proxy);
      }
  }
  ~Net() {
    m_links.clear();
    m_nodes.clear();
    m_byzantine.clear();
    std::filesystem::remove_all(m_dir);
  }
  void Add(std::size_t i, std::shared_ptr<ToyChain> chain) {
    if (m_nodes.size() <= i) m_nodes.resize(i + 1);
    m_nodes[i] = std::make_unique<Validator>(i, m_keys, m_dir, std::move(chain));
    EXPECT_TRUE(m_nodes[i]->Start().ok());
  }
  Validator& operator[](std::size_t i) { return *m_nodes[i]; }
  Byzantine& byzantine(std::size_t i) { return *m_byzantine.at(i); }
  std::size_t size() const { return m_nodes.size(); }
  test::FaultProxy& link(std::size_t i, std::size_t j) { return *m_links.at({std::min(i, j), std::max(i, j)}); }
  void ForEachLink(const std::function<void(std::size_t, std::size_t, test::FaultProxy&)>& f) {
    for (auto& [k, p] : m_links) f(k.first, k.second, *p);
  }
  std::uint64_t MinHeight(const std::vector<std::size_t>& who) {
    std::uint64_t h = ~std::uint64_t{0};
    for (std::size_t i : who) h = std::min(h, m_nodes[i]->chain().FinalHeight());
    return h;
  }
  bool WaitHeight(const std::vector<std::size_t>& who, std::uint64_t height) {
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    while (std::chrono::steady_clock::now() < until) {
      if (MinHeight(who) >= height) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // No fork: every height final on several nodes holds the same block, and
  // every certificate verifies.
  void ExpectOneChain() {
    auto set = consensus::ValidatorSet::Create(m_keys).value();
    std::vector<std::vector<Hash256>> chains;
    std::vector<std::vector<consensus::CommitCertificate>> certs;
    for (auto& node : m_nodes) {
      chains.push_back(node ? node->chain().Hashes() : std::vector<Hash256>{});
      certs.push_back(node ? node->chain().Certificates() : std::vector<consensus::CommitCertificate>{});
    }
    for (std::size_t a = 0; a < chains.size(); ++a) {
      for (std::size_t h = 0; h < chains[a].size(); ++h) {
        EXPECT_TRUE(consensus::VerifyCertificate(kChain, set, certs[a][h], h + 1, chains[a][h]).ok())
            << "v" << a << " height " << h + 1;
        for (std::size_t b = 0; b < chains.size(); ++b) {
          if (h < chains[b].size()) {
            EXPECT_EQ(chains[a][h], chains[b][h]) << "fork at height " << h + 1;
          }
        }
      }
    }
  }
  const std::filesystem::path& dir() const { return m_dir; }
  const std::vector<crypto::PublicKey>& keys() const { return m_keys; }

 private:
  std::filesystem::path m_dir;
  std::vector<crypto::PublicKey> m_keys;
  std::vector<std::unique_ptr<Validator>> m_nodes;  // null where Byzantine
  std::map<std::size_t, std::unique_ptr<Byzantine>> m_byzantine;
  std::map<std::pair<std::size_t, std::size_t>, std::unique_ptr<test::FaultProxy>> m_links;
};

TEST(ConsensusNet, PartitionHealsWithoutFork) {
  Net net(4);
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, 3)) << "no progress before the partition";
  const std::vector<std::size_t> left{0, 1}, right{2, 3};
  for (std::size_t a : left)
    for (std::size_t b : right) net.link(a, b).Partition(true);
  // What was in flight when the cut came may still land; then nothing.
  std::this_thread::sleep_for(1s);
  std::vector<std::vector<Hash256>> before;
  for (std::size_t i = 0; i < 4; ++i) before.push_back(net[i].chain().Hashes());
  std::this_thread::sleep_for(4s);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(net[i].chain().Hashes(), before[i]) << "v" << i << " finalised a block without a quorum";
  for (std::size_t a : left)
    for (std::size_t b : right) net.link(a, b).Partition(false);
  std::uint64_t top = 0;
  for (const auto& b : before) top = std::max<std::uint64_t>(top, b.size());
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, top + 3)) << "no progress after the heal";
  net.ExpectOneChain();
  std::printf("[partition] final height at the cut %llu; after the heal every validator at >= %llu\n",
              static_cast<unsigned long long>(top), static_cast<unsigned long long>(net.MinHeight({0, 1, 2, 3})));
  // Nothing final before the partition was reverted.
  for (std::size_t i = 0; i < 4; ++i) {
    const auto now = net[i].chain().Hashes();
    ASSERT_GE(now.size(), before[i].size());
    EXPECT_TRUE(std::equal(before[i].begin(), before[i].end(), now.begin())) << "v" << i;
  }
}

// A validator that refuses every proposal (as one lacking the blobs the
// blocks name) still sees the others' quorum decide; it must then fetch the
// decided blocks by sync (with their certificates) rather than stop.
TEST(ConsensusNet, ValidatorRefusingEveryProposalSyncsTheDecidedBlocks) {
  Net net(4);
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, 2));
  net[3].chain().refuse_proposals = true;
  const std::uint64_t h = net.MinHeight({0, 1, 2, 3});
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, h + 6)) << "v3 stopped following the chain";
  net.ExpectOneChain();
  EXPECT_GT(net[3].stats().synced, 0u) << "v3 never needed sync: the refusal did not happen";
}

TEST(ConsensusNet, LossyLinksNeverForkAndTheChainGrows) {
  Net net(4);
  net.ForEachLink([](std::size_t, std::size_t, test::FaultProxy& p) {
    test::FaultPolicy f;
    // Frames are sealed (docs/net.md, "Frame encryption"): a dropped or
    // duplicated frame makes the receiver close the link, and the dialer
    // redials, losing what was in flight. So these rates are link resets
    // per consensus frame, and delays keep order (jitter).
    f.drop = 0.03;
    f.duplicate = 0.03;
    f.max_delay_ms = 150;
    // Consensus messages only: a lost sync response costs a request timeout (10 s), not safety.
    f.faulty_types = {static_cast<std::uint16_t>(net::MsgType::kConsensus)};
    p.SetPolicy(f);
  });
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, 5)) << "no progress on lossy links";
  net.ExpectOneChain();
  std::uint64_t dropped = 0;
  net.ForEachLink([&](std::size_t, std::size_t, test::FaultProxy& p) { dropped += p.stats().dropped; });
  EXPECT_GT(dropped, 0u);  // the faults were really there
}

TEST(ConsensusNet, RestartedValidatorRejoinsFromItsState) {
  Net net(4);
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, 2));
  auto chain = net[3].shared_chain();  // the block store survives the restart
  net.Add(3, chain);                    // stops the old one, starts anew from the state file
  // The proxies still point at the old port: the new v3 dials everyone itself.
  for (std::size_t i = 0; i < 3; ++i) net[3].Dial(net::Endpoint{"127.0.0.1", net[i].port()});
  const std::uint64_t h = net.MinHeight({0, 1, 2});
  ASSERT_TRUE(net.WaitHeight({0, 1, 2, 3}, h + 3));
  net.ExpectOneChain();
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(net[i].stats().evidence, 0u) << "v" << i << " saw a double-sign";
}

TEST(ConsensusNet, EquivocatingValidatorIsCaughtAndTheChainLives) {
  Net net(4, {3});
  ASSERT_TRUE(net.WaitHeight({0, 1, 2}, 6)) << "three honest validators of four must finalise";
  EXPECT_GT(net.byzantine(3).double_signed(), 0u);
  net.ExpectOneChain();
  auto set = consensus::ValidatorSet::Create(net.keys()).value();
  for (std::size_t i = 0; i < 3; ++i) {
    const auto ev = net[i].evidence();
    EXPECT_FALSE(ev.empty()) << "v" << i << " holds no evidence";
    for (const consensus::DuplicateVote& d : ev) {
      EXPECT_EQ(d.a.validator, 3u);  // never against an honest one
      EXPECT_TRUE(consensus::VerifyEvidence(kChain, set, d).ok());
    }
    EXPECT_GT(net[i].stats().rejected, 0u) << "v" << i << " took the garbage";
  }
}

// A silent validator (its turn to propose comes every fourth height) costs
// one propose timeout per turn; the others finalise without it. The rates
// are printed for the record, not asserted.
// Seconds for 12 final blocks (after the first 2) on this network.
double SecondsFor12Blocks(Net& net, const std::vector<std::size_t>& honest) {
  EXPECT_TRUE(net.WaitHeight(honest, 2));
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t from = net.MinHeight(honest);
  EXPECT_TRUE(net.WaitHeight(honest, from + 12));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ConsensusNet, OneSilentValidatorDoesNotStopTheChain) {
  double all = 0, silent = 0;
  {
    Net net(4);
    all = SecondsFor12Blocks(net, {0, 1, 2, 3});
  }
  {
    Net net(4, {3}, /*silent=*/true);
    silent = SecondsFor12Blocks(net, {0, 1, 2});
    net.ExpectOneChain();
  }
  std::printf("[silent] blocks/s: %.1f with 4 validators, %.1f with one of them silent (%.2fx; propose timeout 400 ms)\n",
              12 / all, 12 / silent, all / silent);
}

// A validator never starts from a state file it cannot trust: garbage, or a
// state for a height its chain has not reached (someone else's file, or a
// chain store rolled back under it) could make it vote against its past.
TEST(ConsensusNet, UnreadableOrFutureStateFileIsRefused) {
  const auto dir = std::filesystem::temp_directory_path() / ("bft-state-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<crypto::PublicKey> keys;
  for (std::size_t i = 0; i < 4; ++i) keys.push_back(KeyOf(i).public_key());
  const auto file = dir / "v0.consensus";
  {
    std::ofstream(file, std::ios::binary) << "not a state";
    Validator v(0, keys, dir, std::make_shared<ToyChain>(0));
    EXPECT_EQ(v.Start().reason(), "consensus-state-corrupt");
  }
  {
    consensus::SafetyState ahead;
    ahead.height = 5;
    Writer w;
    Encode(w, ahead);
    w.PutVarint(0);  // no proposals
    w.PutVarint(0);  // no votes
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(w.bytes().data()), static_cast<std::streamsize>(w.size()));
    Validator v(0, keys, dir, std::make_shared<ToyChain>(0));
    EXPECT_EQ(v.Start().reason(), "consensus-state-ahead");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vt::node
