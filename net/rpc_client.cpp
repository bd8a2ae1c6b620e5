#include "net/rpc_client.h"

#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace vt::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr std::size_t kMaxResponseBytes = std::size_t{256} << 20;

Status TransportError(const beast::error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout) return Status::Error("rpc-timeout", std::string(what) + " timed out");
  return Status::Error("rpc-transport", std::string(what) + ": " + ec.message());
}
}  // namespace

struct RpcClient::Impl {
  std::string host;
  std::uint16_t port = 0;
  std::chrono::milliseconds timeout;
  asio::io_context io;
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  void Reset() {
    if (stream) {
      beast::error_code ec;
      stream->socket().close(ec);
    }
    stream.reset();
    buffer.clear();
  }

  // Runs the io_context until the pending operations finished (each is
  // bounded by the stream's expiry).
  void RunPending() {
    io.restart();
    io.run();
  }
};

RpcClient::RpcClient(std::string host, std::uint16_t port, std::chrono::milliseconds timeout)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->host = std::move(host);
  m_impl->port = port;
  m_impl->timeout = timeout;
}

RpcClient::~RpcClient() = default;

Result<HttpReply> RpcClient::Post(std::string body, std::string_view content_type) {
  return Request("POST", std::move(body), content_type);
}

Result<HttpReply> RpcClient::Request(std::string_view verb_name, std::string body, std::string_view content_type,
                                     std::string_view target) {
  const http::verb verb = http::string_to_verb(beast::string_view(verb_name.data(), verb_name.size()));
  if (verb == http::verb::unknown) return Status::Error("rpc-bad-request", "unknown HTTP verb");
  Impl& d = *m_impl;
  beast::error_code aec;
  const auto address = asio::ip::make_address(d.host, aec);
  if (aec) return Status::Error("rpc-transport", "host must be an IP address");

  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = d.stream.has_value();
    if (!reused) {
      d.stream.emplace(d.io);
      d.stream->expires_after(d.timeout);
      beast::error_code ec;
      d.stream->async_connect(tcp::endpoint(address, d.port), [&ec](const beast::error_code& e) { ec = e; });
      d.RunPending();
      if (ec) {
        d.Reset();
        return TransportError(ec, "connect");
      }
    }
    http::request<http::string_body> req{verb, beast::string_view(target.data(), target.size()), 11};
    req.set(http::field::host, d.host);
    req.set(http::field::user_agent, "veritrain-rpc-client");
    req.set(http::field::content_type, std::string(content_type));
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();

    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    beast::error_code ec;
    const char* stage = "write";
    d.stream->expires_after(d.timeout);
    http::async_write(*d.stream, req, [&](const beast::error_code& wec, std::size_t) {
      ec = wec;
      if (ec) return;
      stage = "read";
      http::async_read(*d.stream, d.buffer, parser, [&](const beast::error_code& rec, std::size_t) { ec = rec; });
    });
    d.RunPending();
    if (ec) {
      d.Reset();
      // A kept-alive connection the server has since closed: reconnect once.
      if (reused && attempt == 0 && ec != beast::error::timeout) continue;
      return TransportError(ec, stage);
    }
    http::response<http::string_body> res = parser.release();
    HttpReply out;
    out.status = static_cast<int>(res.result_int());
    out.content_type = std::string(res[http::field::content_type]);
    out.body = std::move(res.body());
    if (!res.keep_alive()) d.Reset();
    return out;
  }
  return Status::Error("rpc-transport", "connection lost");
}

Result<RpcReply> RpcClient::CallRaw(std::string_view method, const Json& params) {
  Json req = Json::object();
  req["jsonrpc"] = "2.0";
  req["id"] = m_next_id++;
  req["method"] = std::string(method);
  if (!params.is_null()) req["params"] = params;
  VT_ASSIGN_OR_RETURN(HttpReply http_reply, Post(req.dump()));
  const Json r = Json::parse(http_reply.body, nullptr, /*allow_exceptions=*/false);
  if (r.is_discarded() || !r.is_object()) {
    return Status::Error("rpc-bad-response", "HTTP " + std::to_string(http_reply.status) + ": not a JSON object");
  }
  RpcReply reply;
  if (auto id = r.find("id"); id != r.end()) reply.id = *id;
  if (auto result = r.find("result"); result != r.end()) {
    reply.result = *result;
    return reply;
  }
  const auto error = r.find("error");
  if (error == r.end() || !error->is_object()) return Status::Error("rpc-bad-response", "neither result nor error");
  RpcError e;
  if (auto code = error->find("code"); code != error->end() && code->is_number_integer()) e.code = code->get<int>();
  if (auto msg = error->find("message"); msg != error->end() && msg->is_string()) e.message = msg->get<std::string>();
  if (auto data = error->find("data"); data != error->end()) e.data = *data;
  reply.error = std::move(e);
  return reply;
}

Result<Json> RpcClient::Call(std::string_view method, const Json& params) {
  VT_ASSIGN_OR_RETURN(RpcReply reply, CallRaw(method, params));
  if (reply.result) return std::move(*reply.result);
  const RpcError& e = *reply.error;
  std::string reason = "rpc-error-" + std::to_string(-e.code);
  if (e.data.is_object()) {
    if (auto it = e.data.find("reason"); it != e.data.end() && it->is_string()) reason = it->get<std::string>();
  }
  const std::string detail = std::to_string(e.code) + " " + e.message;
  if (e.code == rpc::kInternalError) return Status::Error(reason, detail);
  return Status::Invalid(reason, detail);
}

}  // namespace vt::net
