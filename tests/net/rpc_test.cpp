// JSON-RPC over HTTP: calls, every error code, body cap, keep-alive, batches.

#include "net/rpc_server.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "net/rpc_client.h"

namespace vt::net {
namespace {

class RpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RpcServerConfig config;
    config.max_body_bytes = 4096;
    config.max_batch = 10;
    m_server = std::make_unique<RpcServer>(m_io, config);
    m_server->Register("echo", [](const Json& params) -> Result<Json> { return params; });
    m_server->Register("add", [](const Json& params) -> Result<Json> {
      VT_ASSIGN_OR_RETURN(std::uint64_t a, GetU64Param(params, 0, "a"));
      VT_ASSIGN_OR_RETURN(std::uint64_t b, GetU64Param(params, 1, "b"));
      return Json(a + b);
    });
    m_server->Register("bounty", [](const Json& params) -> Result<Json> {
      VT_ASSIGN_OR_RETURN(std::uint64_t id, GetU64Param(params, 0, "id"));
      return Status::Invalid("bounty-unknown", "no bounty " + std::to_string(id));
    });
    m_server->Register("disk", [](const Json&) -> Result<Json> { return Status::Error("disk-full", "no space"); });
    m_server->Register("throws", [](const Json&) -> Result<Json> { throw std::runtime_error("boom"); });
    // Reads params with nlohmann accessors; a wrong type throws json::type_error.
    m_server->Register("typed", [](const Json& params) -> Result<Json> { return Json(params.at("x").get<int>() * 2); });
    ASSERT_TRUE(m_server->Start().ok());
    ASSERT_NE(m_server->port(), 0);
    m_thread = std::thread([this] { m_io.run(); });
    m_client = std::make_unique<RpcClient>("127.0.0.1", m_server->port(), std::chrono::seconds(5));
  }
  void TearDown() override {
    m_client.reset();
    m_server->Stop();
    m_guard.reset();
    m_thread.join();
    m_server.reset();
  }

  int ErrorCode(std::string_view method, const Json& params) {
    Result<RpcReply> r = m_client->CallRaw(method, params);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !r->error) return 0;
    return r->error->code;
  }
  Json PostJson(const std::string& body, int expect_http = 200) {
    Result<HttpReply> r = m_client->Post(body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return nullptr;
    EXPECT_EQ(r->status, expect_http) << r->body;
    if (r->body.empty()) return nullptr;
    return Json::parse(r->body, nullptr, false);
  }

  boost::asio::io_context m_io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> m_guard{m_io.get_executor()};
  std::unique_ptr<RpcServer> m_server;
  std::thread m_thread;
  std::unique_ptr<RpcClient> m_client;
};

TEST_F(RpcTest, CallsWithPositionalAndNamedParams) {
  Result<Json> r = m_client->Call("add", Json::array({2, 3}));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 5);
  r = m_client->Call("add", Json{{"a", 40}, {"b", 2}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 42);
  r = m_client->Call("echo", Json{{"k", "v"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["k"], "v");
  // The reply carries the request's id.
  Json reply = PostJson(R"({"jsonrpc":"2.0","id":"abc","method":"add","params":[1,1]})");
  EXPECT_EQ(reply["id"], "abc");
  EXPECT_EQ(reply["result"], 2);
}

TEST_F(RpcTest, UnknownMethod) {
  EXPECT_EQ(ErrorCode("no_such_method", Json::array()), rpc::kMethodNotFound);
  Result<Json> r = m_client->Call("no_such_method");
  EXPECT_EQ(r.status().reason(), "rpc-error-32601");
}

TEST_F(RpcTest, MalformedJsonIsAParseError) {
  for (const std::string body : {"{bad json", "", "[1,2", "\"unterminated", "{\"a\":1}}"}) {
    Json reply = PostJson(body);
    ASSERT_TRUE(reply.is_object()) << body;
    EXPECT_EQ(reply["error"]["code"], rpc::kParseError) << body;
    EXPECT_TRUE(reply["id"].is_null());
  }
  // Deep nesting is refused before the (recursive) parser sees it.
  Json reply = PostJson(std::string(3000, '['));
  EXPECT_EQ(reply["error"]["code"], rpc::kParseError);
}

TEST_F(RpcTest, InvalidRequests) {
  for (const std::string body :
       {R"({"jsonrpc":"1.0","id":1,"method":"add"})", R"({"id":1,"method":"add"})",
        R"({"jsonrpc":"2.0","id":1,"method":7})", R"({"jsonrpc":"2.0","id":1,"method":"add","params":"x"})",
        R"({"jsonrpc":"2.0","id":{"o":1},"method":"add"})", "42", "[]"}) {
    Json reply = PostJson(body);
    ASSERT_TRUE(reply.is_object()) << body;
    EXPECT_EQ(reply["error"]["code"], rpc::kInvalidRequest) << body;
  }
}

TEST_F(RpcTest, InvalidParams) {
  EXPECT_EQ(ErrorCode("add", Json::array({1})), rpc::kInvalidParams);             // missing
  EXPECT_EQ(ErrorCode("add", Json::array({"1", 2})), rpc::kInvalidParams);        // wrong type
  EXPECT_EQ(ErrorCode("add", Json::array({-1, 2})), rpc::kInvalidParams);         // negative
  EXPECT_EQ(ErrorCode("typed", Json{{"x", "not a number"}}), rpc::kInvalidParams);  // handler threw type_error
  Result<Json> r = m_client->Call("add", Json::array({1}));
  EXPECT_TRUE(r.status().is_invalid());
  EXPECT_EQ(r.status().reason(), rpc::kInvalidParamsReason);
  Result<Json> ok = m_client->Call("typed", Json{{"x", 21}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 42);
}

TEST_F(RpcTest, ApplicationErrorsCarryTheReasonCode) {
  Result<RpcReply> raw = m_client->CallRaw("bounty", Json::array({7}));
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw->error.has_value());
  EXPECT_EQ(raw->error->code, rpc::kRejected);
  EXPECT_EQ(raw->error->data["reason"], "bounty-unknown");
  EXPECT_EQ(raw->error->data["detail"], "no bounty 7");
  Result<Json> r = m_client->Call("bounty", Json::array({7}));
  EXPECT_TRUE(r.status().is_invalid());
  EXPECT_EQ(r.status().reason(), "bounty-unknown");

  Result<Json> disk = m_client->Call("disk");
  EXPECT_TRUE(disk.status().is_error());
  EXPECT_EQ(disk.status().reason(), "disk-full");
  EXPECT_EQ(ErrorCode("disk", nullptr), rpc::kInternalError);
  EXPECT_EQ(ErrorCode("throws", nullptr), rpc::kInternalError);
  // The server survives a throwing handler.
  EXPECT_EQ(*m_client->Call("add", Json::array({1, 2})), 3);
}

TEST_F(RpcTest, OversizedBodyIsRefused) {
  const std::string big = R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[")" + std::string(8192, 'x') + "\"]}";
  Result<HttpReply> r = m_client->Post(big);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  Json reply = Json::parse(r->body, nullptr, false);
  EXPECT_EQ(reply["error"]["code"], rpc::kInvalidRequest);
  // The client reconnects and carries on.
  EXPECT_EQ(*m_client->Call("add", Json::array({1, 2})), 3);
  // Just under the cap is fine.
  const std::string fits = R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[")" + std::string(3000, 'y') + "\"]}";
  Json ok = PostJson(fits);
  EXPECT_EQ(ok["result"][0].get<std::string>().size(), 3000u);
}

TEST_F(RpcTest, KeepAliveReusesOneConnection) {
  for (int i = 0; i < 20; ++i) ASSERT_EQ(*m_client->Call("add", Json::array({i, 1})), i + 1);
  EXPECT_EQ(m_server->Stats().connections, 1u);
  EXPECT_EQ(m_server->Stats().http_requests, 20u);
}

TEST_F(RpcTest, BatchesAndNotifications) {
  Json reply = PostJson(R"([
    {"jsonrpc":"2.0","id":1,"method":"add","params":[1,2]},
    {"jsonrpc":"2.0","method":"add","params":[5,5]},
    {"jsonrpc":"2.0","id":2,"method":"nope"},
    17
  ])");
  ASSERT_TRUE(reply.is_array());
  ASSERT_EQ(reply.size(), 3u);  // the notification gets no answer
  EXPECT_EQ(reply[0]["id"], 1);
  EXPECT_EQ(reply[0]["result"], 3);
  EXPECT_EQ(reply[1]["id"], 2);
  EXPECT_EQ(reply[1]["error"]["code"], rpc::kMethodNotFound);
  EXPECT_EQ(reply[2]["error"]["code"], rpc::kInvalidRequest);

  // Only notifications: nothing to say, HTTP 204.
  Json none = PostJson(R"({"jsonrpc":"2.0","method":"add","params":[1,2]})", 204);
  EXPECT_TRUE(none.is_null());
  // Too many in one batch.
  Json many = Json::array();
  for (int i = 0; i < 11; ++i) many.push_back({{"jsonrpc", "2.0"}, {"id", i}, {"method", "add"}, {"params", {1, 1}}});
  Json too_many = PostJson(many.dump());
  EXPECT_EQ(too_many["error"]["code"], rpc::kInvalidRequest);
}

TEST_F(RpcTest, OnlyPostIsAccepted) {
  Result<HttpReply> r = m_client->Request("GET", "", "text/plain");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 405);
}

// A server with static files (the node's explorer) serves them to GET on the
// same port, with headers that keep pages to their origin; POST is unchanged.
TEST(RpcStaticTest, GetServesStaticFilesBesideJsonRpc) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  RpcServer server(io, RpcServerConfig{});
  server.Register("add", [](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t a, GetU64Param(params, 0, "a"));
    VT_ASSIGN_OR_RETURN(std::uint64_t b, GetU64Param(params, 1, "b"));
    return Json(a + b);
  });
  server.ServeStatic("/", {"text/html; charset=utf-8", "<p>home</p>"});
  server.ServeStatic("/static/app.js", {"text/javascript", "let x = 1;"});
  ASSERT_TRUE(server.Start().ok());
  std::thread thread([&] { io.run(); });
  RpcClient client("127.0.0.1", server.port(), std::chrono::seconds(5));

  auto home = client.Request("GET", "", "text/plain", "/");
  ASSERT_TRUE(home.ok()) << home.status().ToString();
  EXPECT_EQ(home->status, 200);
  EXPECT_EQ(home->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(home->body, "<p>home</p>");
  auto js = client.Request("GET", "", "text/plain", "/static/app.js?v=2");  // query ignored
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, "let x = 1;");
  for (const char* missing : {"/static/none.js", "/static", "/../etc/passwd", "/static/app.js/"}) {
    auto r = client.Request("GET", "", "text/plain", missing);
    ASSERT_TRUE(r.ok()) << missing;
    EXPECT_EQ(r->status, 404) << missing;
  }
  // Other verbs are still refused; POST is JSON-RPC on the same connection.
  auto del = client.Request("DELETE", "", "text/plain", "/");
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->status, 405);
  auto sum = client.Call("add", Json::array({2, 3}));
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(*sum, 5);

  server.Stop();
  guard.reset();
  thread.join();
}

// ---- limits and the thread model ---------------------------------------------------

// A raw HTTP client: sends exactly the bytes given and reads with a deadline,
// so a test sees what the server does before the client sends more.
class RawConn {
 public:
  explicit RawConn(std::uint16_t port) : m_sock(m_io) {
    boost::system::error_code ec;
    m_sock.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    m_ok = !ec;
  }
  bool ok() const { return m_ok; }
  void Send(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(m_sock, boost::asio::buffer(bytes), ec);
  }
  // Reads until `marker` has arrived (then returns everything read), the
  // peer closes, or `limit` passes.
  std::string ReadUntil(std::string_view marker, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (m_in.find(marker) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{m_sock.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(m_sock.native_handle(), buf, sizeof buf, 0);
      if (n <= 0) break;
      m_in.append(buf, static_cast<std::size_t>(n));
    }
    return m_in;
  }
  void Clear() { m_in.clear(); }

 private:
  boost::asio::io_context m_io;
  boost::asio::ip::tcp::socket m_sock;
  bool m_ok = false;
  std::string m_in;
};

std::string PostHeader(std::size_t length, std::string_view extra = "") {
  return "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(length) +
         "\r\n" + std::string(extra) + "\r\n";
}

const std::string kAddBody = R"({"jsonrpc":"2.0","id":7,"method":"add","params":[20,22]})";

// A server on its own io_context run by `threads` threads (as a node runs it).
class LimitedServer {
 public:
  LimitedServer(RpcServerConfig config, std::size_t threads) : m_server(m_io, config) {
    m_server.Register("add", [](const Json& params) -> Result<Json> {
      VT_ASSIGN_OR_RETURN(std::uint64_t a, GetU64Param(params, 0, "a"));
      VT_ASSIGN_OR_RETURN(std::uint64_t b, GetU64Param(params, 1, "b"));
      return Json(a + b);
    });
    m_server.Register("echo", [](const Json& params) -> Result<Json> { return params; });
    m_server.Register("wait", [this](const Json&) -> Result<Json> {
      std::unique_lock lock(m_mu);
      ++m_waiting;
      m_cv.notify_all();
      m_cv.wait_for(lock, std::chrono::seconds(20), [this] { return m_released; });
      return Json(m_released);
    });
    EXPECT_TRUE(m_server.Start().ok());
    for (std::size_t i = 0; i < threads; ++i) m_threads.emplace_back([this] { m_io.run(); });
  }
  ~LimitedServer() {
    Release();
    m_server.Stop();
    m_guard.reset();
    for (std::thread& t : m_threads) t.join();
  }
  RpcServer& server() { return m_server; }
  std::uint16_t port() const { return m_server.port(); }
  bool WaitForWaiters(int n) {
    std::unique_lock lock(m_mu);
    return m_cv.wait_for(lock, std::chrono::seconds(10), [&] { return m_waiting >= n; });
  }
  void Release() {
    std::lock_guard lock(m_mu);
    m_released = true;
    m_cv.notify_all();
  }

 private:
  boost::asio::io_context m_io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> m_guard{m_io.get_executor()};
  RpcServer m_server;
  std::vector<std::thread> m_threads;
  std::mutex m_mu;
  std::condition_variable m_cv;
  int m_waiting = 0;
  bool m_released = false;
};

// `Expect: 100-continue` is answered as soon as the header is read (a client
// waits for it before sending the body), and a body over the cap is refused
// then, before the client sends a byte of it.
TEST(RpcLimits, ExpectContinueIsAnsweredAtOnce) {
  RpcServerConfig config;
  config.max_body_bytes = 4096;
  LimitedServer s(config, 1);
  RawConn c(s.port());
  ASSERT_TRUE(c.ok());
  c.Send(PostHeader(kAddBody.size(), "Expect: 100-continue\r\n"));
  const std::string interim = c.ReadUntil("\r\n\r\n");
  EXPECT_EQ(interim.rfind("HTTP/1.1 100 Continue\r\n", 0), 0u) << interim;
  c.Clear();
  c.Send(kAddBody);
  const std::string reply = c.ReadUntil("}");
  EXPECT_NE(reply.find("200 OK"), std::string::npos) << reply;
  EXPECT_NE(reply.find("\"result\":42"), std::string::npos) << reply;
  EXPECT_EQ(s.server().Stats().continues, 1u);

  RawConn big(s.port());
  big.Send(PostHeader(1 << 20, "Expect: 100-continue\r\n"));
  const std::string refused = big.ReadUntil("}");
  EXPECT_EQ(refused.rfind("HTTP/1.1 413", 0), 0u) << refused;
  EXPECT_EQ(refused.find("100 Continue"), std::string::npos) << refused;

  RawConn odd(s.port());
  odd.Send(PostHeader(kAddBody.size(), "Expect: something-else\r\n"));
  EXPECT_EQ(odd.ReadUntil("}").rfind("HTTP/1.1 417", 0), 0u);
}

// Connections over the per-address cap (and the total) get a 503 "rpc-busy"
// at once; a slot freed by a closing client is usable again.
TEST(RpcLimits, ConnectionsPerAddressAreCapped) {
  RpcServerConfig config;
  config.max_connections_per_address = 3;
  LimitedServer s(config, 1);
  std::vector<std::unique_ptr<RawConn>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawConn>(s.port()));
    ASSERT_TRUE(held.back()->ok());
  }
  // The server registers accepted connections in order: make sure all three are in.
  for (int i = 0; i < 100 && s.server().Stats().connections < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(s.server().Stats().connections, 3u);
  RawConn fourth(s.port());  // refused on accept, before it sends anything
  const std::string busy = fourth.ReadUntil("}");
  EXPECT_EQ(busy.rfind("HTTP/1.1 503", 0), 0u) << busy;
  EXPECT_NE(busy.find("rpc-busy"), std::string::npos) << busy;
  EXPECT_EQ(s.server().Stats().rejected_connections, 1u);
  // The held ones still work.
  held[0]->Send(PostHeader(kAddBody.size()) + kAddBody);
  EXPECT_NE(held[0]->ReadUntil("}").find("\"result\":42"), std::string::npos);
  // Close one: its slot comes back (the server notices the close).
  held.pop_back();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    RpcClient c("127.0.0.1", s.port(), std::chrono::seconds(5));
    auto r = c.Call("add", Json::array({1, 2}));
    served = r.ok() && *r == 3;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(served);
}

// Large bodies share a budget: while one client trickles a big body, a second
// big body is refused at its header (503 "rpc-busy") instead of being held in
// memory; small requests are never refused for it; the budget comes back.
TEST(RpcLimits, LargeBodiesShareABudget) {
  RpcServerConfig config;
  config.max_body_bytes = 4096;
  config.small_body_bytes = 256;
  config.max_body_bytes_in_flight = 3000;
  LimitedServer s(config, 2);
  const std::string payload(2000, 'p');
  const std::string big_body = R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[")" + payload + "\"]}";
  RawConn slow(s.port());
  slow.Send(PostHeader(big_body.size()) + big_body.substr(0, 100));  // holds its reservation
  for (int i = 0; i < 250 && s.server().Stats().body_bytes_in_flight == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(s.server().Stats().body_bytes_in_flight, big_body.size());

  RawConn second(s.port());
  second.Send(PostHeader(big_body.size()));
  const std::string busy = second.ReadUntil("}");
  EXPECT_EQ(busy.rfind("HTTP/1.1 503", 0), 0u) << busy;
  EXPECT_NE(busy.find("rpc-busy"), std::string::npos) << busy;
  EXPECT_EQ(s.server().Stats().busy_refusals, 1u);

  RpcClient small("127.0.0.1", s.port(), std::chrono::seconds(5));
  EXPECT_EQ(*small.Call("add", Json::array({1, 1})), 2);

  slow.Send(big_body.substr(100));
  EXPECT_NE(slow.ReadUntil("]}").find(payload), std::string::npos);
  // The echoed response holds the budget too, until its write has completed,
  // which is just after the client has read it: wait for the release.
  const auto wait_released = [&] {
    for (int i = 0; i < 250 && s.server().Stats().body_bytes_in_flight != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return s.server().Stats().body_bytes_in_flight;
  };
  ASSERT_EQ(wait_released(), 0u);
  // Budget released: the same big request goes through now.
  auto again = small.Post(big_body);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(wait_released(), 0u);
  EXPECT_EQ(s.server().Stats().busy_refusals, 1u);
}

// Handlers run on the server's own threads: a handler that blocks holds one
// thread, and another connection is still served by the other.
TEST(RpcLimits, ABlockedHandlerDoesNotStopOtherConnections) {
  LimitedServer s(RpcServerConfig{}, 2);
  std::thread blocked([&] {
    RpcClient c("127.0.0.1", s.port(), std::chrono::seconds(30));
    auto r = c.Call("wait");
    EXPECT_TRUE(r.ok() && *r == true) << (r.ok() ? r->dump() : r.status().ToString());
  });
  ASSERT_TRUE(s.WaitForWaiters(1));
  RpcClient other("127.0.0.1", s.port(), std::chrono::seconds(5));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(*other.Call("add", Json::array({i, 1})), i + 1);
  s.Release();
  blocked.join();
}

TEST(RpcClientTest, ConnectionRefusedIsATransportError) {
  // Reserve a port and free it: nobody listens there.
  boost::asio::io_context io;
  std::uint16_t port = 0;
  {
    boost::asio::ip::tcp::acceptor acc(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acc.local_endpoint().port();
  }
  RpcClient client("127.0.0.1", port, std::chrono::seconds(2));
  EXPECT_EQ(client.Call("x").status().reason(), "rpc-transport");
}

TEST(RpcHelpers, NestingDepth) {
  EXPECT_EQ(JsonNestingDepth("{}"), 1u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":[]}]})"), 4u);
  EXPECT_EQ(JsonNestingDepth(R"(["[[[[", "\"[[["])"), 1u);  // brackets inside strings do not count
  EXPECT_EQ(JsonNestingDepth(std::string(1000, '[')), rpc::kMaxJsonDepth + 1);
}

}  // namespace
}  // namespace vt::net
