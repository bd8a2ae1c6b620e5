#include "net/rpc_server.h"

#include <array>
#include <atomic>
#include <unordered_map>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "common/log.h"

namespace vt::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

spdlog::logger& Log() { return vt::log::Get("rpc"); }

// Invalid UTF-8 (e.g. echoed from a request) must not make dump() throw.
std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json Response(const Json& id, const char* key, Json value) {
  Json r = Json::object();
  r["jsonrpc"] = "2.0";
  r[key] = std::move(value);
  r["id"] = id;
  return r;
}

Json ErrorResponse(const Json& id, Json error) { return Response(id, "error", std::move(error)); }

bool IsHttpParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

}  // namespace

Json RpcErrorObject(int code, std::string_view message, const Json& data) {
  Json e = Json::object();
  e["code"] = code;
  e["message"] = std::string(message);
  if (!data.is_null()) e["data"] = data;
  return e;
}

Json RpcErrorFromStatus(const Status& status) {
  const Json data = {{"reason", status.reason()}, {"detail", status.detail()}};
  if (status.is_invalid()) {
    if (status.reason() == rpc::kInvalidParamsReason) return RpcErrorObject(rpc::kInvalidParams, "invalid params", data);
    return RpcErrorObject(rpc::kRejected, status.reason(), data);
  }
  return RpcErrorObject(rpc::kInternalError, "internal error", data);
}

// ---- HTTP -------------------------------------------------------------------------

class RpcSession;

struct RpcServer::Impl : std::enable_shared_from_this<RpcServer::Impl> {
  Impl(asio::io_context& io, RpcServer* s, RpcServerConfig cfg)
      : server(s), config(std::move(cfg)), acceptor(io), retry_timer(io) {}

  void Accept();

  RpcServer* server;
  RpcServerConfig config;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  bool stopped = false;
  std::unordered_map<RpcSession*, std::weak_ptr<RpcSession>> sessions;
  std::atomic<std::uint64_t> http_requests{0}, rpc_calls{0}, rpc_errors{0}, connections{0},
      rejected_connections{0};
};

class RpcSession : public std::enable_shared_from_this<RpcSession> {
 public:
  RpcSession(tcp::socket socket, std::shared_ptr<RpcServer::Impl> impl)
      : m_stream(std::move(socket)), m_impl(std::move(impl)) {}

  ~RpcSession() { m_impl->sessions.erase(this); }

  void Start() {
    m_impl->sessions.emplace(this, weak_from_this());
    Read();
  }

  void Cancel() {
    beast::error_code ec;
    m_stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    m_stream.socket().close(ec);
  }

 private:
  void Read() {
    m_parser.emplace();
    m_parser->body_limit(m_impl->config.max_body_bytes);
    m_parser->header_limit(static_cast<std::uint32_t>(m_impl->config.max_header_bytes));
    m_stream.expires_after(m_impl->config.idle_timeout);
    http::async_read(m_stream, m_buffer, *m_parser,
                     [self = shared_from_this()](const beast::error_code& ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(const beast::error_code& ec) {
    if (m_impl->stopped || m_impl->server == nullptr) return Cancel();
    if (ec == http::error::body_limit) {
      return SendError(http::status::payload_too_large, "request body too large");
    }
    if (ec == http::error::header_limit) {
      return SendError(http::status::request_header_fields_too_large, "request header too large");
    }
    if (ec && IsHttpParseError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return SendError(http::status::bad_request, "malformed HTTP request");
    }
    if (ec) return Cancel();  // end of stream, timeout, reset

    http::request<http::string_body> req = m_parser->release();
    RpcServer& server = *m_impl->server;
    ++m_impl->http_requests;
    const bool keep_alive = req.keep_alive();
    m_res = http::response<http::string_body>{};
    m_res.version(req.version());
    m_res.set(http::field::server, "veritrain");
    if (req.method() == http::verb::get && server.ServesStatic()) {
      ServeGet(server, req.target());
    } else if (req.method() != http::verb::post) {
      m_res.result(http::status::method_not_allowed);
      m_res.set(http::field::allow, "POST");
      m_res.set(http::field::content_type, "application/json");
      m_res.body() = Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kInvalidRequest, "use POST")));
    } else if (std::optional<std::string> body = server.HandleBody(req.body())) {
      m_res.result(http::status::ok);
      m_res.set(http::field::content_type, "application/json");
      m_res.body() = std::move(*body);
    } else {
      m_res.result(http::status::no_content);  // notifications only
    }
    m_res.keep_alive(keep_alive);
    Write(!keep_alive);
  }

  // Static files are fixed bytes: no-cache so a restarted node's new pages
  // are picked up; the CSP keeps pages to their own origin (no inline script,
  // nothing fetched from elsewhere), so they also work offline.
  void ServeGet(const RpcServer& server, beast::string_view target) {
    const StaticFile* file = server.FindStatic(std::string_view(target.data(), target.size()));
    if (file == nullptr) {
      m_res.result(http::status::not_found);
      m_res.set(http::field::content_type, "text/plain; charset=utf-8");
      m_res.body() = "not found\n";
      return;
    }
    m_res.result(http::status::ok);
    m_res.set(http::field::content_type, file->content_type);
    m_res.set(http::field::cache_control, "no-cache");
    m_res.set("X-Content-Type-Options", "nosniff");
    m_res.set("Content-Security-Policy",
              "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'");
    m_res.body() = file->body;
  }

  // An HTTP-level refusal: answer with a JSON-RPC error, then close.
  void SendError(http::status status, const char* message) {
    ++m_impl->rpc_errors;
    m_res = http::response<http::string_body>{};
    m_res.version(11);
    m_res.result(status);
    m_res.set(http::field::server, "veritrain");
    m_res.set(http::field::content_type, "application/json");
    m_res.body() = Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kInvalidRequest, message)));
    m_res.keep_alive(false);
    Write(true);
  }

  void Write(bool close) {
    m_res.prepare_payload();
    m_stream.expires_after(m_impl->config.idle_timeout);
    http::async_write(m_stream, m_res,
                      [self = shared_from_this(), close](const beast::error_code& ec, std::size_t) {
                        if (ec || self->m_impl->stopped) return self->Cancel();
                        if (close) return self->Drain();
                        self->Read();
                      });
  }

  // Closing a socket with unread input resets the connection, and the client
  // may lose the response it has not read yet (a 413 arrives while it is
  // still sending the body). So: shut down our side, read and discard a
  // bounded amount until the client closes, then close.
  void Drain() {
    beast::error_code ec;
    m_stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    m_stream.expires_after(std::chrono::seconds(2));
    DrainMore();
  }

  void DrainMore() {
    m_stream.async_read_some(asio::buffer(m_drain_buf),
                             [self = shared_from_this()](const beast::error_code& ec, std::size_t n) {
                               self->m_drained += n;
                               if (ec || self->m_drained > kMaxDrainBytes) return self->Cancel();
                               self->DrainMore();
                             });
  }

  static constexpr std::size_t kMaxDrainBytes = std::size_t{64} << 20;

  beast::tcp_stream m_stream;
  beast::flat_buffer m_buffer;
  std::optional<http::request_parser<http::string_body>> m_parser;
  http::response<http::string_body> m_res;
  std::shared_ptr<RpcServer::Impl> m_impl;
  std::array<char, 16 * 1024> m_drain_buf{};
  std::size_t m_drained = 0;
};

void RpcServer::Impl::Accept() {
  acceptor.async_accept([self = shared_from_this()](const beast::error_code& ec, tcp::socket socket) {
    if (self->stopped || self->server == nullptr) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors and the like: retry shortly instead of spinning.
      self->retry_timer.expires_after(std::chrono::milliseconds(100));
      self->retry_timer.async_wait([self](const beast::error_code& tec) {
        if (!tec && !self->stopped) self->Accept();
      });
      return;
    }
    if (self->sessions.size() >= self->config.max_connections) {
      ++self->rejected_connections;
      beast::error_code ignored;
      socket.close(ignored);
    } else {
      ++self->connections;
      std::make_shared<RpcSession>(std::move(socket), self)->Start();
    }
    self->Accept();
  });
}

// ---- RpcServer --------------------------------------------------------------------

RpcServer::RpcServer(asio::io_context& io, RpcServerConfig config)
    : m_io(io), m_config(std::move(config)), m_impl(std::make_shared<Impl>(io, this, m_config)) {}

RpcServer::~RpcServer() { m_impl->server = nullptr; }

void RpcServer::Register(std::string name, Handler handler) { m_methods[std::move(name)] = std::move(handler); }

void RpcServer::ServeStatic(std::string path, StaticFile file) { m_static[std::move(path)] = std::move(file); }

const StaticFile* RpcServer::FindStatic(std::string_view target) const {
  const std::string path(target.substr(0, target.find_first_of("?#")));
  const auto it = m_static.find(path);
  return it == m_static.end() ? nullptr : &it->second;
}

Status RpcServer::Start() {
  beast::error_code ec;
  const auto address = asio::ip::make_address(m_config.host, ec);
  if (ec) return Status::Error("rpc-listen-failed", "host is not an IP address");
  const tcp::endpoint endpoint(address, m_config.port);
  tcp::acceptor& acceptor = m_impl->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    beast::error_code ignored;
    acceptor.close(ignored);
    return Status::Error("rpc-listen-failed", m_config.host + ":" + std::to_string(m_config.port) + ": " + ec.message());
  }
  m_port = acceptor.local_endpoint(ec).port();
  asio::post(m_io, [impl = m_impl] {
    if (!impl->stopped) impl->Accept();
  });
  Log().info("rpc listening addr={}:{} methods={}", m_config.host, m_port.load(), m_methods.size());
  return Status::Ok();
}

void RpcServer::Stop() {
  asio::post(m_io, [impl = m_impl] {
    if (impl->stopped) return;
    impl->stopped = true;
    beast::error_code ec;
    impl->acceptor.close(ec);
    impl->retry_timer.cancel();
    std::vector<std::shared_ptr<RpcSession>> live;
    for (auto& [ptr, weak] : impl->sessions) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live) s->Cancel();
  });
}

std::optional<std::string> RpcServer::HandleBody(std::string_view body) {
  if (JsonNestingDepth(body) > rpc::kMaxJsonDepth) {
    ++m_impl->rpc_errors;
    return Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kParseError, "parse error: nesting too deep")));
  }
  const Json request = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    ++m_impl->rpc_errors;
    return Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kParseError, "parse error")));
  }
  if (request.is_array()) {
    if (request.empty() || request.size() > m_config.max_batch) {
      ++m_impl->rpc_errors;
      return Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kInvalidRequest,
                                                        request.empty() ? "empty batch" : "batch too large")));
    }
    Json out = Json::array();
    for (const Json& item : request) {
      bool notification = false;
      Json r = HandleOne(item, &notification);
      if (!notification) out.push_back(std::move(r));
    }
    if (out.empty()) return std::nullopt;
    return Dump(out);
  }
  bool notification = false;
  Json r = HandleOne(request, &notification);
  if (notification) return std::nullopt;
  return Dump(r);
}

Json RpcServer::HandleOne(const Json& request, bool* is_notification) {
  *is_notification = false;
  auto invalid = [this](const Json& id, const char* why) {
    ++m_impl->rpc_errors;
    return ErrorResponse(id, RpcErrorObject(rpc::kInvalidRequest, std::string("invalid request: ") + why));
  };
  if (!request.is_object()) return invalid(nullptr, "not an object");
  Json id = nullptr;
  const auto id_it = request.find("id");
  const bool has_id = id_it != request.end();
  if (has_id) {
    if (!id_it->is_string() && !id_it->is_number() && !id_it->is_null()) return invalid(nullptr, "bad id");
    id = *id_it;
  }
  const auto version = request.find("jsonrpc");
  if (version == request.end() || !version->is_string() || *version != "2.0") return invalid(id, "jsonrpc must be \"2.0\"");
  const auto method = request.find("method");
  if (method == request.end() || !method->is_string()) return invalid(id, "method must be a string");
  Json params = nullptr;
  if (const auto p = request.find("params"); p != request.end()) {
    if (!p->is_array() && !p->is_object()) return invalid(id, "params must be an array or an object");
    params = *p;
  }
  *is_notification = !has_id;
  ++m_impl->rpc_calls;
  const auto handler = m_methods.find(method->get<std::string>());
  if (handler == m_methods.end()) {
    ++m_impl->rpc_errors;
    return ErrorResponse(id, RpcErrorObject(rpc::kMethodNotFound, "method not found",
                                            Json{{"method", method->get<std::string>()}}));
  }
  try {
    Result<Json> result = handler->second(params);
    if (result.ok()) return Response(id, "result", std::move(result).value());
    ++m_impl->rpc_errors;
    return ErrorResponse(id, RpcErrorFromStatus(result.status()));
  } catch (const Json::exception& e) {
    // Handlers read params with nlohmann accessors; a type mismatch there is
    // the caller's fault.
    ++m_impl->rpc_errors;
    return ErrorResponse(id, RpcErrorFromStatus(InvalidParams(e.what())));
  } catch (const std::exception& e) {
    ++m_impl->rpc_errors;
    Log().error("rpc handler threw method={} what={}", method->get<std::string>(), e.what());
    return ErrorResponse(id, RpcErrorFromStatus(Status::Error("rpc-handler-exception", e.what())));
  }
}

RpcServerStats RpcServer::Stats() const {
  RpcServerStats s;
  s.http_requests = m_impl->http_requests;
  s.rpc_calls = m_impl->rpc_calls;
  s.rpc_errors = m_impl->rpc_errors;
  s.connections = m_impl->connections;
  s.rejected_connections = m_impl->rejected_connections;
  return s;
}

}  // namespace vt::net
