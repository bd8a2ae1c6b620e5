// RPC responses inside the in-flight budget (docs/net.md, JSON-RPC limits):
// a client that asks for large responses (get_blob) on many connections and
// never reads them must not make the server hold more than the budget.

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include "net/rpc_client.h"
#include "net/rpc_server.h"

namespace vt::net {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A server whose "big" method answers `big_bytes` of text, "huge" more than
// the whole budget, "add" a small sum; two handler threads, as in vt-node.
class BudgetServer {
 public:
  explicit BudgetServer(RpcServerConfig config) : m_server(m_io, config) {
    m_server.Register("big", [](const Json&) -> Result<Json> { return Json(std::string(16 * kMiB, 'b')); });
    m_server.Register("huge", [](const Json&) -> Result<Json> { return Json(std::string(48 * kMiB, 'h')); });
    m_server.Register("add", [](const Json& p) -> Result<Json> { return Json(p.at(0).get<int>() + p.at(1).get<int>()); });
    EXPECT_TRUE(m_server.Start().ok());
    for (int i = 0; i < 2; ++i) m_threads.emplace_back([this] { m_io.run(); });
  }
  ~BudgetServer() {
    m_server.Stop();
    m_guard.reset();
    for (std::thread& t : m_threads) t.join();
  }
  RpcServer& server() { return m_server; }
  std::uint16_t port() const { return m_server.port(); }

 private:
  boost::asio::io_context m_io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> m_guard{m_io.get_executor()};
  RpcServer m_server;
  std::vector<std::thread> m_threads;
};

// A client that sends one request and then never reads: a tiny receive
// window, so the server cannot finish writing a large response.
class NonReader {
 public:
  NonReader(std::uint16_t port, const std::string& method) : m_sock(m_io) {
    boost::system::error_code ec;
    m_sock.open(boost::asio::ip::tcp::v4(), ec);
    const int small = 4096;
    ::setsockopt(m_sock.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    m_sock.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    const std::string body = R"({"jsonrpc":"2.0","id":1,"method":")" + method + R"("})";
    const std::string req = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(m_sock, boost::asio::buffer(req), ec);
    m_ok = !ec;
  }
  bool ok() const { return m_ok; }
  void Close() {
    boost::system::error_code ec;
    m_sock.close(ec);
  }

 private:
  boost::asio::io_context m_io;
  boost::asio::ip::tcp::socket m_sock;
  bool m_ok = false;
};

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

RpcServerConfig Budget40MiB() {
  RpcServerConfig c;
  c.max_body_bytes_in_flight = 40 * kMiB;
  c.max_connections_per_address = 64;
  return c;
}

// Two unread 16 MiB responses hold 32 MiB of the 40 MiB budget: a third is
// refused (503 "rpc-busy") rather than held, small answers still flow, and
// the budget comes back when the readers go.
TEST(RpcAttack, UnreadLargeResponsesStayInsideTheBudget) {
  BudgetServer s(Budget40MiB());
  NonReader r1(s.port(), "big"), r2(s.port(), "big");
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_TRUE(WaitFor([&] { return s.server().Stats().body_bytes_in_flight >= 32 * kMiB; }))
      << "responses being written are not counted in the budget";

  RpcClient third("127.0.0.1", s.port(), 10s);
  Result<Json> refused = third.Call("big");
  ASSERT_FALSE(refused.ok()) << "a third 16 MiB response was held beyond the 40 MiB budget";
  EXPECT_EQ(refused.status().reason(), "rpc-busy");
  EXPECT_GE(s.server().Stats().busy_refusals, 1u);
  EXPECT_LE(s.server().Stats().body_bytes_in_flight, 40 * kMiB);

  RpcClient small("127.0.0.1", s.port(), 10s);
  Result<Json> sum = small.Call("add", Json::array({2, 3}));
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*sum, 5);

  r1.Close();
  r2.Close();
  EXPECT_TRUE(WaitFor([&] { return s.server().Stats().body_bytes_in_flight == 0; }));
  RpcClient again("127.0.0.1", s.port(), 30s);
  Result<Json> big = again.Call("big");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->get<std::string>().size(), 16 * kMiB);
}

// A response larger than the whole budget is served only alone (the budget
// otherwise idle), like the first frame into an empty send queue: the server
// then holds at most max(budget, one response).
TEST(RpcAttack, AResponseOverTheWholeBudgetIsServedOnlyAlone) {
  BudgetServer s(Budget40MiB());
  RpcClient client("127.0.0.1", s.port(), 30s);
  Result<Json> alone = client.Call("huge");
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->get<std::string>().size(), 48 * kMiB);
  EXPECT_TRUE(WaitFor([&] { return s.server().Stats().body_bytes_in_flight == 0; }));

  NonReader holder(s.port(), "big");
  ASSERT_TRUE(holder.ok());
  ASSERT_TRUE(WaitFor([&] { return s.server().Stats().body_bytes_in_flight >= 16 * kMiB; }));
  Result<Json> refused = client.Call("huge");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().reason(), "rpc-busy");
}

// Twelve non-readers asking for big answers one after another never push the
// reserved bytes over the budget (sampled while they pile up); all but two
// are refused.
TEST(RpcAttack, ManyNonReadersNeverExceedTheBudget) {
  BudgetServer s(Budget40MiB());
  std::vector<std::unique_ptr<NonReader>> readers;
  std::size_t peak = 0;
  for (int i = 0; i < 12; ++i) {
    readers.push_back(std::make_unique<NonReader>(s.port(), "big"));
    for (int k = 0; k < 10; ++k) {
      peak = std::max<std::size_t>(peak, s.server().Stats().body_bytes_in_flight);
      std::this_thread::sleep_for(5ms);
    }
  }
  EXPECT_TRUE(WaitFor([&] { return s.server().Stats().busy_refusals >= 10; }));
  peak = std::max<std::size_t>(peak, s.server().Stats().body_bytes_in_flight);
  EXPECT_LE(peak, 40 * kMiB);
  EXPECT_GE(peak, 32 * kMiB);
}

}  // namespace
}  // namespace vt::net
