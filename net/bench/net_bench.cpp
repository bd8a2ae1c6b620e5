// Throughput of the P2P link and the JSON-RPC server on loopback, against raw
// Boost.Asio TCP measured in the same run.
//
//   net_bench            full run, then a summary table with ratios
//   net_bench --quick    tiny batches and minimal time (the CTest smoke run)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=P2P).
//
// What is measured (wall time: several threads take part):
// * P2P gossip: one node broadcasts a batch of distinct messages to one peer;
//   an iteration ends when the peer's handler has received all of them. Costs
//   included: framing, frame checksum, content id (SHA-256) on both sides,
//   seen-set, the handler call.
// * Raw TCP stream (baseline): the same batch as 4-byte-length-prefixed
//   messages in one gather write; the server reads each into its own buffer
//   and counts. No checksum, no hashing, no dedup.
// * Round trips: raw TCP echo of 256 B vs a P2P GetBlocks request for one
//   256 B block vs a JSON-RPC call over a kept-alive HTTP connection.
// * P2P blob fetch: FetchBlob of one 32 MiB blob in 1 MiB chunks from the
//   peer (framing, SHA-256 of every frame and of the whole blob, and, from
//   protocol version 3, the frames' ChaCha20-Poly1305 both ways); MB/s and
//   the process CPU time (all threads, getrusage) per MiB moved.
// * HandshakeSignVerify: the signature and verification the authenticated
//   handshake costs each side of a new connection.

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "common/log.h"
#include "crypto/sha256.h"
#include "net/handshake.h"
#include "net/p2p.h"
#include "net/rpc_client.h"
#include "net/rpc_server.h"
#include "tests/support/bench_main.h"

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using vt::Bytes;
using vt::ByteSpan;
using vt::Hash256;
using namespace vt::net;
using namespace std::chrono_literals;

bool g_quick = false;
double g_blob_cpu_ms_per_mib = 0;

std::size_t BatchFor(std::size_t size) {
  if (g_quick) return 8;
  return size <= 1024 ? 2048 : 64;
}

// Counts deliveries and lets a waiter block until a target count.
class Counter {
 public:
  void Add(std::uint64_t n) {
    std::lock_guard lock(m_mutex);
    m_count += n;
    // Wake the waiter only when its target is reached, not per message.
    if (m_count >= m_target) m_cv.notify_all();
  }
  std::uint64_t Get() {
    std::lock_guard lock(m_mutex);
    return m_count;
  }
  bool WaitAtLeast(std::uint64_t target, std::chrono::milliseconds timeout = 30s) {
    std::unique_lock lock(m_mutex);
    m_target = target;
    const bool ok = m_cv.wait_for(lock, timeout, [&] { return m_count >= target; });
    m_target = ~std::uint64_t{0};
    return ok;
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  std::uint64_t m_count = 0;
  std::uint64_t m_target = ~std::uint64_t{0};
};

// An io_context on its own thread.
struct IoThread {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  std::thread thread;
  void Start() {
    thread = std::thread([this] { io.run(); });
  }
  ~IoThread() {
    guard.reset();
    io.stop();
    if (thread.joinable()) thread.join();
  }
};

// ---- P2P ---------------------------------------------------------------------

class CountingHandler : public MessageHandler {
 public:
  explicit CountingHandler(Counter* counter) : m_counter(counter) {}
  Verdict OnGossip(PeerId, GossipKind, const Hash256&, ByteSpan) override {
    m_counter->Add(1);
    return Verdict::Accept();
  }

 private:
  Counter* m_counter;
};

// One blob, served in chunks (the fetch benchmark).
class OneBlobStore : public BlobStore {
 public:
  OneBlobStore() : m_data(g_quick ? std::size_t{1} << 20 : std::size_t{32} << 20) {
    for (std::size_t i = 0; i < m_data.size(); ++i) m_data[i] = static_cast<std::uint8_t>(i * 131 + (i >> 12));
    m_hash = vt::crypto::Sha256Digest(m_data);
  }
  const Hash256& hash() const { return m_hash; }
  std::size_t size() const { return m_data.size(); }
  std::optional<std::uint64_t> BlobSize(const Hash256& h) const override {
    if (h != m_hash) return std::nullopt;
    return m_data.size();
  }
  vt::Result<Bytes> ReadBlob(const Hash256&, std::uint64_t offset, std::uint32_t len) const override {
    return Bytes(m_data.begin() + static_cast<std::ptrdiff_t>(offset),
                 m_data.begin() + static_cast<std::ptrdiff_t>(offset + len));
  }

 private:
  Bytes m_data;
  Hash256 m_hash;
};

// Process CPU seconds so far, every thread (user + system).
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

class OneBlockSource : public BlockSource {
 public:
  std::uint64_t TipHeight() const override { return 1; }
  std::optional<Bytes> BlockAt(std::uint64_t height) const override {
    if (height > 1) return std::nullopt;
    return Bytes(256, static_cast<std::uint8_t>(height));
  }
};

struct P2PPair {
  Counter received;
  CountingHandler handler{&received};
  OneBlockSource blocks;
  OneBlobStore blobs;
  IoThread rx_io, tx_io;
  std::unique_ptr<P2PNode> rx, tx;
  PeerId rx_peer_on_tx = 0;
  std::uint64_t next_message = 0;

  P2PPair() {
    P2PConfig c;
    c.chain_id = "bench";
    c.genesis_hash = vt::crypto::Sha256Digest(std::string_view("bench"));
    c.auto_sync = false;
    c.max_send_queue_bytes = std::size_t{256} << 20;
    rx = std::make_unique<P2PNode>(rx_io.io, c, &handler, &blocks, &blobs);
    if (!rx->Start().ok()) std::abort();
    c.peers = {Endpoint{"127.0.0.1", rx->listen_port()}};
    tx = std::make_unique<P2PNode>(tx_io.io, c, nullptr, nullptr);
    if (!tx->Start().ok()) std::abort();
    rx_io.Start();
    tx_io.Start();
    for (int i = 0; i < 2000; ++i) {
      for (const PeerInfo& p : tx->Peers()) {
        if (p.established) rx_peer_on_tx = p.id;
      }
      if (rx_peer_on_tx != 0) break;
      std::this_thread::sleep_for(5ms);
    }
    if (rx_peer_on_tx == 0) std::abort();
  }
  ~P2PPair() {
    tx->Stop();
    rx->Stop();
  }
};

P2PPair& Pair() {
  static P2PPair pair;
  return pair;
}

void BM_P2PGossip(benchmark::State& state) {
  P2PPair& p = Pair();
  const auto size = static_cast<std::size_t>(state.range(0));
  const std::size_t batch = BatchFor(size);
  for (auto _ : state) {
    const std::uint64_t target = p.received.Get() + batch;
    for (std::size_t i = 0; i < batch; ++i) {
      Bytes msg(size, 0x5a);
      const std::uint64_t n = p.next_message++;
      std::memcpy(msg.data(), &n, sizeof n);  // distinct content ids
      if (!p.tx->Broadcast(GossipKind::kTx, std::move(msg)).ok()) std::abort();
    }
    if (!p.received.WaitAtLeast(target)) {
      state.SkipWithError("P2P batch not delivered in 30 s");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch * size));
}

void BM_P2PRequestRoundTrip(benchmark::State& state) {
  P2PPair& p = Pair();
  for (auto _ : state) {
    std::promise<bool> done;
    p.tx->RequestBlocks(p.rx_peer_on_tx, 1, 1, [&](vt::Result<ItemsResponse> r) {
      done.set_value(r.ok() && r->items.size() == 1);
    });
    if (!done.get_future().get()) {
      state.SkipWithError("request failed");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_P2PBlobFetch(benchmark::State& state) {
  P2PPair& p = Pair();
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    std::promise<std::size_t> done;
    p.tx->FetchBlob(p.blobs.hash(), [&](vt::Result<Bytes> r) { done.set_value(r.ok() ? r->size() : 0); });
    if (done.get_future().get() != p.blobs.size()) {
      state.SkipWithError("blob fetch failed");
      return;
    }
  }
  const double mib = static_cast<double>(state.iterations()) * static_cast<double>(p.blobs.size()) / (1 << 20);
  state.counters["cpu_ms_per_MiB"] = (ProcessCpuSeconds() - cpu0) * 1e3 / mib;
  g_blob_cpu_ms_per_mib = state.counters["cpu_ms_per_MiB"];
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * p.blobs.size()));
}

// The cryptography the authenticated handshake adds to each side of a new
// connection: one BIP-340 signature and one verification over the
// transcript digest (net/handshake.h).
void BM_HandshakeSignVerify(benchmark::State& state) {
  const auto ours = vt::crypto::SecretKey::Generate().value();
  const auto theirs = vt::crypto::SecretKey::Generate().value();
  HandshakeTranscript t;
  t.protocol_version = kProtocolVersion;
  t.chain_id = "bench";
  t.dialer_id = NodeIdOf(ours.public_key());
  t.listener_id = NodeIdOf(theirs.public_key());
  const vt::crypto::Signature their_sig = SignHandshake(theirs, t, HandshakeRole::kListener).value();
  for (auto _ : state) {
    ++t.dialer_challenge.bytes[0];  // a fresh transcript each time, as per connection
    auto sig = SignHandshake(ours, t, HandshakeRole::kDialer);
    benchmark::DoNotOptimize(sig);
    benchmark::DoNotOptimize(VerifyHandshake(t, HandshakeRole::kListener, their_sig));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// ---- raw TCP baseline ----------------------------------------------------------

// Reads 4-byte-length-prefixed messages, each into a fresh buffer (as a
// protocol must hand each message on), and counts them. In echo mode it
// writes every message back instead.
class RawServer {
 public:
  explicit RawServer(bool echo) : m_echo(echo), m_acceptor(m_io.io, {asio::ip::make_address("127.0.0.1"), 0}) {
    m_acceptor.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      m_socket = std::make_unique<tcp::socket>(std::move(s));
      m_socket->set_option(tcp::no_delay(true));
      ReadHeader();
    });
    m_io.Start();
  }
  std::uint16_t port() const { return m_acceptor.local_endpoint().port(); }
  Counter& received() { return m_received; }

 private:
  void ReadHeader() {
    asio::async_read(*m_socket, asio::buffer(m_len), [this](const boost::system::error_code& ec, std::size_t) {
      if (ec) return;
      std::uint32_t len = 0;
      std::memcpy(&len, m_len.data(), 4);
      m_body = std::make_shared<Bytes>(len);
      asio::async_read(*m_socket, asio::buffer(*m_body), [this](const boost::system::error_code& ec2, std::size_t) {
        if (ec2) return;
        if (m_echo) {
          m_out = {asio::buffer(m_len), asio::buffer(*m_body)};
          asio::async_write(*m_socket, m_out, [this](const boost::system::error_code& ec3, std::size_t) {
            if (!ec3) ReadHeader();
          });
          return;
        }
        m_received.Add(1);
        ReadHeader();
      });
    });
  }

  bool m_echo;
  IoThread m_io;
  tcp::acceptor m_acceptor;
  std::unique_ptr<tcp::socket> m_socket;
  std::array<std::uint8_t, 4> m_len{};
  std::shared_ptr<Bytes> m_body;
  std::vector<asio::const_buffer> m_out;
  Counter m_received;
};

struct RawClient {
  asio::io_context io;
  tcp::socket socket{io};
  explicit RawClient(std::uint16_t port) {
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    socket.set_option(tcp::no_delay(true));
  }
};

void BM_RawTcpStream(benchmark::State& state) {
  static RawServer server(false);
  static RawClient client(server.port());
  const auto size = static_cast<std::size_t>(state.range(0));
  const std::size_t batch = BatchFor(size);
  std::uint64_t next = 0;
  for (auto _ : state) {
    const std::uint64_t target = server.received().Get() + batch;
    // Own buffers per message, as the P2P side has (one allocation each).
    std::vector<Bytes> msgs(batch);
    std::vector<std::array<std::uint8_t, 4>> lens(batch);
    std::vector<asio::const_buffer> bufs;
    for (std::size_t i = 0; i < batch; ++i) {
      msgs[i].assign(size, 0x5a);
      const std::uint64_t n = next++;
      std::memcpy(msgs[i].data(), &n, sizeof n);
      const auto len = static_cast<std::uint32_t>(size);
      std::memcpy(lens[i].data(), &len, 4);
      bufs.emplace_back(asio::buffer(lens[i]));
      bufs.emplace_back(asio::buffer(msgs[i]));
    }
    asio::write(client.socket, bufs);
    if (!server.received().WaitAtLeast(target)) {
      state.SkipWithError("raw batch not delivered in 30 s");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch * size));
}

void BM_RawTcpEchoRoundTrip(benchmark::State& state) {
  static RawServer server(true);
  static RawClient client(server.port());
  Bytes msg(260, 0x5a);
  const std::uint32_t len = 256;
  std::memcpy(msg.data(), &len, 4);
  Bytes back(260);
  for (auto _ : state) {
    asio::write(client.socket, asio::buffer(msg));
    asio::read(client.socket, asio::buffer(back));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// ---- JSON-RPC --------------------------------------------------------------------

void BM_RpcCall(benchmark::State& state) {
  static IoThread io;
  static RpcServer* server = [] {
    auto* s = new RpcServer(io.io, RpcServerConfig{});
    s->Register("echo", [](const Json& params) -> vt::Result<Json> { return params; });
    if (!s->Start().ok()) std::abort();
    io.Start();
    return s;
  }();
  static RpcClient client("127.0.0.1", server->port());
  const Json params = Json::array({"0123456789abcdef0123456789abcdef", 12345});
  for (auto _ : state) {
    vt::Result<Json> r = client.Call("echo", params);
    if (!r.ok()) {
      state.SkipWithError("rpc call failed");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void Register() {
  for (std::int64_t size : {std::int64_t{256}, std::int64_t{64} << 10}) {
    benchmark::RegisterBenchmark("P2PGossip", BM_P2PGossip)->Arg(size)->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("RawTcpStream", BM_RawTcpStream)->Arg(size)->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("RawTcpEchoRoundTrip", BM_RawTcpEchoRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P2PRequestRoundTrip", BM_P2PRequestRoundTrip)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("P2PBlobFetch", BM_P2PBlobFetch)->UseRealTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RpcCall", BM_RpcCall)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("HandshakeSignVerify", BM_HandshakeSignVerify)->Unit(benchmark::kMicrosecond);
}

void PrintSummary(const vt::bench::SecondsReporter& r) {
  auto ratio = [](double ours, double base) { return base > 0 && ours > 0 ? base / ours : 0.0; };
  std::printf("\nSummary (wall time on loopback; ratio = ours / baseline throughput, same run)\n");
  if (g_quick) std::printf("(--quick: tiny batches, one short pass; these numbers mean nothing)\n");
  std::printf("%-26s %14s %12s   %-24s %14s %12s %7s\n", "ours", "msg/s", "MB/s", "baseline", "msg/s", "MB/s",
              "ratio");
  for (std::int64_t size : {std::int64_t{256}, std::int64_t{64} << 10}) {
    const std::string arg = "/" + std::to_string(size) + "/";
    const double batch = static_cast<double>(BatchFor(static_cast<std::size_t>(size)));
    const double ours = r.SecondsWithPrefix("P2PGossip" + arg);
    const double base = r.SecondsWithPrefix("RawTcpStream" + arg);
    auto rate = [&](double s) { return s > 0 ? batch / s : 0.0; };
    auto mbs = [&](double s) { return s > 0 ? batch * static_cast<double>(size) / s / 1e6 : 0.0; };
    const std::string label = size == 256 ? "256 B" : "64 KiB";
    std::printf("%-26s %14.0f %12.1f   %-24s %14.0f %12.1f %7.2f\n", ("P2P gossip " + label).c_str(), rate(ours),
                mbs(ours), ("raw TCP stream " + label).c_str(), rate(base), mbs(base), ratio(ours, base));
  }
  const double blob = r.SecondsWithPrefix("P2PBlobFetch");
  const double blob_mb = Pair().blobs.size() / 1e6;
  std::printf("%-26s %14s %12.1f   CPU (all threads) %.2f ms per MiB\n", "P2P blob fetch (32 MiB)", "",
              blob > 0 ? blob_mb / blob : 0.0, g_blob_cpu_ms_per_mib);
  const double echo = r.SecondsWithPrefix("RawTcpEchoRoundTrip");
  auto per_s = [](double s) { return s > 0 ? 1.0 / s : 0.0; };
  std::printf("%-26s %14s %12s   %-24s %14s %12s %7s\n", "", "req/s", "us/req", "", "req/s", "us/req", "");
  for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
           {"P2PRequestRoundTrip", "P2P GetBlocks (1x256 B)"}, {"RpcCall", "JSON-RPC call"}}) {
    const double ours = r.SecondsWithPrefix(name);
    std::printf("%-26s %14.0f %12.1f   %-24s %14.0f %12.1f %7.2f\n", label.c_str(), per_s(ours), ours * 1e6,
                "raw TCP echo 256 B", per_s(echo), echo * 1e6, ratio(ours, echo));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rc = vt::bench::RunBenchmarks(argc, argv, g_quick, vt::bench::Clock::kReal, [] {
    (void)vt::log::SetLevels("warn");  // connection chatter is not part of the table
    Register();
  }, PrintSummary);
  // Static fixtures own threads and sockets; leave without tearing them down
  // in an order the statics would not respect.
  std::fflush(stdout);
  std::_Exit(rc);
}
