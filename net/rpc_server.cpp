#include "net/rpc_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
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
  Impl(asio::io_context& ctx, RpcServer* s, RpcServerConfig cfg)
      : io(ctx), server(s), config(std::move(cfg)), acceptor(asio::make_strand(ctx)),
        retry_timer(acceptor.get_executor()) {}

  void Accept();
  // A connection over the limits: a canned 503 written without waiting, then closed.
  void Refuse(tcp::socket socket, const char* why);
  // Large bodies (requests and responses) reserve their size from the
  // in-flight budget (false: spent). With `alone`, a body larger than the
  // whole budget is allowed when nothing else holds any of it (so every
  // response can be served, one at a time, like the first frame into an
  // empty P2P send queue): the server holds at most max(budget, one body).
  bool ReserveBody(std::size_t bytes, bool alone = false);
  void ReleaseBody(std::size_t bytes);

  asio::io_context& io;
  RpcServer* server;
  RpcServerConfig config;
  tcp::acceptor acceptor;       // on its own strand, like retry_timer
  asio::steady_timer retry_timer;
  std::atomic<bool> stopped{false};
  std::mutex mu;  // guards the three members below
  std::unordered_map<RpcSession*, std::weak_ptr<RpcSession>> sessions;
  std::map<std::string, std::size_t> per_address;  // open connections by remote address
  std::size_t body_bytes_in_flight = 0;
  std::atomic<std::uint64_t> http_requests{0}, rpc_calls{0}, rpc_errors{0}, connections{0},
      rejected_connections{0}, busy_refusals{0}, continues{0};
};

bool RpcServer::Impl::ReserveBody(std::size_t bytes, bool alone) {
  std::lock_guard lock(mu);
  const bool fits = body_bytes_in_flight + bytes <= config.max_body_bytes_in_flight;
  if (!fits && !(alone && body_bytes_in_flight == 0)) return false;
  body_bytes_in_flight += bytes;
  return true;
}

void RpcServer::Impl::ReleaseBody(std::size_t bytes) {
  std::lock_guard lock(mu);
  body_bytes_in_flight -= std::min(bytes, body_bytes_in_flight);
}

namespace {
std::string BusyBody(std::string_view detail) {
  return Dump(ErrorResponse(nullptr, RpcErrorFromStatus(Status::Invalid(rpc::kBusyReason, detail))));
}
}  // namespace

class RpcSession : public std::enable_shared_from_this<RpcSession> {
 public:
  RpcSession(tcp::socket socket, std::shared_ptr<RpcServer::Impl> impl, std::string address)
      : m_stream(std::move(socket)), m_impl(std::move(impl)), m_address(std::move(address)) {}

  ~RpcSession() {
    ReleaseBody();
    std::lock_guard lock(m_impl->mu);
    m_impl->sessions.erase(this);
    if (auto it = m_impl->per_address.find(m_address); it != m_impl->per_address.end() && --it->second == 0)
      m_impl->per_address.erase(it);
  }

  // The caller registered the session (sessions, per_address) under the mutex.
  void Start() {
    asio::dispatch(m_stream.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // Any thread: closes the socket on the session's strand.
  void CancelFromAnyThread() {
    asio::post(m_stream.get_executor(), [self = shared_from_this()] { self->Cancel(); });
  }

 private:
  void Cancel() {
    beast::error_code ec;
    m_stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    m_stream.socket().close(ec);
  }

  void ReleaseBody() {
    if (m_reserved == 0) return;
    m_impl->ReleaseBody(m_reserved);
    m_reserved = 0;
  }

  void Read() {
    m_parser.emplace();
    m_parser->body_limit(m_impl->config.max_body_bytes);
    m_parser->header_limit(static_cast<std::uint32_t>(m_impl->config.max_header_bytes));
    m_stream.expires_after(m_impl->config.idle_timeout);
    http::async_read_header(m_stream, m_buffer, *m_parser,
                            [self = shared_from_this()](const beast::error_code& ec, std::size_t) {
                              self->OnHeader(ec);
                            });
  }

  // Refusals that depend only on the header, before any body byte is read:
  // the body cap, the in-flight budget and the client's expectation.
  void OnHeader(const beast::error_code& ec) {
    if (m_impl->stopped || m_impl->server == nullptr) return Cancel();
    if (ec) return OnReadError(ec);
    const auto& req = m_parser->get();
    const auto length = m_parser->content_length();  // boost::optional
    // Unknown length (chunked): reserve the cap, the most it may grow to.
    const std::size_t need = length ? static_cast<std::size_t>(*length)
                                    : (m_parser->chunked() ? m_impl->config.max_body_bytes : 0);
    if (need > m_impl->config.small_body_bytes) {
      if (!m_impl->ReserveBody(need)) {
        ++m_impl->busy_refusals;
        return SendError(http::status::service_unavailable,
                         BusyBody("too many large request bodies in flight; retry later"));
      }
      m_reserved = need;
    }
    const auto expect = req.find(http::field::expect);
    if (expect != req.end()) {
      if (!beast::iequals(expect->value(), "100-continue"))
        return SendError(http::status::expectation_failed, InvalidRequestBody("unsupported Expect"));
      ++m_impl->continues;
      m_continue.emplace(http::status::continue_, req.version());
      m_stream.expires_after(m_impl->config.idle_timeout);
      return http::async_write(m_stream, *m_continue,
                               [self = shared_from_this()](const beast::error_code& wec, std::size_t) {
                                 if (wec || self->m_impl->stopped) return self->Cancel();
                                 self->ReadBody();
                               });
    }
    ReadBody();
  }

  void ReadBody() {
    m_stream.expires_after(m_impl->config.body_timeout);
    http::async_read(m_stream, m_buffer, *m_parser,
                     [self = shared_from_this()](const beast::error_code& ec, std::size_t) { self->OnRead(ec); });
  }

  void OnReadError(const beast::error_code& ec) {
    if (ec == http::error::body_limit)
      return SendError(http::status::payload_too_large, InvalidRequestBody("request body too large"));
    if (ec == http::error::header_limit)
      return SendError(http::status::request_header_fields_too_large, InvalidRequestBody("request header too large"));
    if (IsHttpParseError(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message)
      return SendError(http::status::bad_request, InvalidRequestBody("malformed HTTP request"));
    Cancel();  // end of stream, timeout, reset
  }

  void OnRead(const beast::error_code& ec) {
    if (m_impl->stopped || m_impl->server == nullptr) return Cancel();
    if (ec) return OnReadError(ec);

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
    req = http::request<http::string_body>{};  // the body is handled: give its memory and its reservation back
    ReleaseBody();
    // A large response is held until the client has read it (a slow or
    // silent reader holds it up to idle_timeout): it reserves its size from
    // the same budget, or is replaced by 503 "rpc-busy" (so many concurrent
    // get_blob calls cannot make the server hold gigabytes).
    if (const std::size_t out = m_res.body().size(); out > m_impl->config.small_body_bytes) {
      if (!m_impl->ReserveBody(out, /*alone=*/true)) {
        ++m_impl->busy_refusals;
        return SendError(http::status::service_unavailable,
                         BusyBody("too many large responses in flight; retry later"));
      }
      m_reserved = out;
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

  static std::string InvalidRequestBody(const char* message) {
    return Dump(ErrorResponse(nullptr, RpcErrorObject(rpc::kInvalidRequest, message)));
  }

  // An HTTP-level refusal: answer with a JSON-RPC error, then close.
  void SendError(http::status status, std::string body) {
    ++m_impl->rpc_errors;
    ReleaseBody();
    m_res = http::response<http::string_body>{};
    m_res.version(11);
    m_res.result(status);
    m_res.set(http::field::server, "veritrain");
    m_res.set(http::field::content_type, "application/json");
    m_res.body() = std::move(body);
    m_res.keep_alive(false);
    Write(true);
  }

  void Write(bool close) {
    m_res.prepare_payload();
    m_stream.expires_after(m_impl->config.idle_timeout);
    http::async_write(m_stream, m_res,
                      [self = shared_from_this(), close](const beast::error_code& ec, std::size_t) {
                        self->m_res = {};  // written (or failed): its memory and reservation go back
                        self->ReleaseBody();
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
  std::optional<http::response<http::empty_body>> m_continue;
  http::response<http::string_body> m_res;
  std::shared_ptr<RpcServer::Impl> m_impl;
  std::string m_address;
  std::size_t m_reserved = 0;  // bytes of the budget this request's body, then its response, holds
  std::array<char, 16 * 1024> m_drain_buf{};
  std::size_t m_drained = 0;
};

void RpcServer::Impl::Refuse(tcp::socket socket, const char* why) {
  ++rejected_connections;
  const std::string body = BusyBody(why);
  const std::string response = "HTTP/1.1 503 Service Unavailable\r\nServer: veritrain\r\nConnection: close\r\n"
                               "Content-Type: application/json\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
  beast::error_code ec;
  socket.non_blocking(true, ec);
  socket.write_some(asio::buffer(response), ec);  // a fresh socket's buffer takes it; never waits
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

void RpcServer::Impl::Accept() {
  acceptor.async_accept(asio::make_strand(io), [self = shared_from_this()](const beast::error_code& ec,
                                                                           tcp::socket socket) {
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
    beast::error_code rec;
    const tcp::endpoint remote = socket.remote_endpoint(rec);
    const std::string address = rec ? std::string("?") : remote.address().to_string();
    const char* refusal = nullptr;
    std::shared_ptr<RpcSession> session;
    {
      std::lock_guard lock(self->mu);
      if (self->sessions.size() >= self->config.max_connections) {
        refusal = "too many connections";
      } else if (self->per_address[address] >= self->config.max_connections_per_address) {
        refusal = "too many connections from this address";
      } else {
        session = std::make_shared<RpcSession>(std::move(socket), self, address);
        self->sessions.emplace(session.get(), session);
        ++self->per_address[address];
      }
      if (self->per_address[address] == 0) self->per_address.erase(address);
    }
    if (session) {
      ++self->connections;
      session->Start();
    } else {
      self->Refuse(std::move(socket), refusal);
    }
    self->Accept();
  });
}

// ---- RpcServer --------------------------------------------------------------------

RpcServer::RpcServer(asio::io_context& io, RpcServerConfig config)
    : m_config(std::move(config)), m_impl(std::make_shared<Impl>(io, this, m_config)) {}

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
  asio::post(m_impl->acceptor.get_executor(), [impl = m_impl] {
    if (!impl->stopped) impl->Accept();
  });
  Log().info("rpc listening addr={}:{} methods={}", m_config.host, m_port.load(), m_methods.size());
  return Status::Ok();
}

void RpcServer::Stop() {
  asio::post(m_impl->acceptor.get_executor(), [impl = m_impl] {
    if (impl->stopped.exchange(true)) return;
    beast::error_code ec;
    impl->acceptor.close(ec);
    impl->retry_timer.cancel();
    std::vector<std::shared_ptr<RpcSession>> live;
    {
      std::lock_guard lock(impl->mu);
      for (auto& [ptr, weak] : impl->sessions) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->CancelFromAnyThread();
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
  s.busy_refusals = m_impl->busy_refusals;
  s.continues = m_impl->continues;
  {
    std::lock_guard lock(m_impl->mu);
    s.body_bytes_in_flight = m_impl->body_bytes_in_flight;
  }
  return s;
}

}  // namespace vt::net
