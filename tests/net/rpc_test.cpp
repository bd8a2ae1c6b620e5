// JSON-RPC over HTTP: calls, every error code, body cap, keep-alive, batches.

#include "net/rpc_server.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

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
