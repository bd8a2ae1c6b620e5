#pragma once
// JSON-RPC 2.0 over HTTP/1.1 (Boost.Beast) on 127.0.0.1:<port>.
//
// * POST with a JSON body to any path. GET serves the read-only files given
//   to ServeStatic (the node's web explorer: same origin as the RPC, so its
//   pages call it without CORS), 404 for other paths; without any such file
//   GET gets 405 like every other verb. Keep-alive is honoured; idle
//   connections close after idle_timeout.
// * Bodies over max_body_bytes are refused from the Content-Length header,
//   before the body is read: HTTP 413 with a JSON-RPC -32600 error, then the
//   connection closes.
// * Single requests, notifications (no "id": no response, HTTP 204) and
//   batches (arrays of up to max_batch requests) are supported.
// * Error codes and the mapping of Status to errors: net/rpc.h.
//
// * Limits, each answered at once with a clear error, never by stalling:
//   connections in total and per remote address (HTTP 503, reason
//   "rpc-busy", sent right after accept, then close); header size (431); body
//   size (413, judged from Content-Length before the body is read); bodies
//   above small_body_bytes share a budget of max_body_bytes_in_flight
//   (503 "rpc-busy" when it is spent, so a few huge uploads cannot hold
//   gigabytes); a deadline for the header (header_timeout, which is also the
//   keep-alive idle time) and one for the body (body_timeout).
//   `Expect: 100-continue` is answered as soon as the header is read: 100
//   Continue when the body fits, else the refusal; any other expectation 417.
//   One request at a time per connection (no pipelining).
//
// Threading: the server lives on an io_context that its owner runs, on one
// or more threads (a node gives it its own threads, apart from P2P and
// consensus). Each connection and the acceptor run on their own strand;
// shared bookkeeping is under one mutex. Handlers therefore run on any of the
// io_context's threads, several at once when it has several threads (never
// more than it has threads), so each must be thread-safe. Register every
// method before Start(); the registry is read-only afterwards. Stop() is
// thread-safe; destroy the server only after the io_context's threads have
// returned.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/result.h"
#include "net/rpc.h"

namespace vt::net {

struct RpcServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: ephemeral (port() tells which)
  std::size_t max_body_bytes = std::size_t{1} << 20;
  std::size_t max_header_bytes = 8 * 1024;
  std::size_t max_connections = 64;
  std::size_t max_connections_per_address = 32;
  std::size_t max_batch = 100;
  // Request bodies larger than small_body_bytes reserve their size from this
  // budget while they are read and handled, and responses larger than it
  // while they are written (a response larger than the whole budget only
  // when nothing else holds any of it).
  std::size_t small_body_bytes = 64 * 1024;
  std::size_t max_body_bytes_in_flight = std::size_t{4} << 20;
  // From the end of the previous response (or accept) to a complete header.
  std::chrono::milliseconds idle_timeout{30000};
  // From the header to a complete body.
  std::chrono::milliseconds body_timeout{60000};
};

struct RpcServerStats {
  std::uint64_t http_requests = 0;
  std::uint64_t rpc_calls = 0;
  std::uint64_t rpc_errors = 0;
  std::uint64_t connections = 0;
  std::uint64_t rejected_connections = 0;  // over max_connections or the per-address cap
  std::uint64_t busy_refusals = 0;         // requests or responses refused for the in-flight budget
  std::uint64_t continues = 0;             // "100 Continue" answers sent
  std::uint64_t body_bytes_in_flight = 0;  // reserved by large request and response bodies now
};

// A file served to GET (ServeStatic): bytes fixed before Start().
struct StaticFile {
  std::string content_type;
  std::string body;
};

class RpcServer {
 public:
  using Handler = std::function<Result<Json>(const Json& params)>;

  RpcServer(boost::asio::io_context& io, RpcServerConfig config);
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Before Start(). A second registration of a name replaces the first.
  void Register(std::string name, Handler handler);
  // Before Start(): serve `file` for GET `path` ("/", "/static/app.js", …).
  void ServeStatic(std::string path, StaticFile file);
  // The file for a request target (query string ignored), or nullptr.
  const StaticFile* FindStatic(std::string_view target) const;
  bool ServesStatic() const { return !m_static.empty(); }

  // Binds and starts accepting. Error "rpc-listen-failed".
  Status Start();
  // Thread-safe: stops accepting and closes every connection.
  void Stop();
  std::uint16_t port() const { return m_port.load(); }

  // The JSON-RPC layer without HTTP: the response body for a request body,
  // or nullopt when nothing is to be sent back (only notifications).
  std::optional<std::string> HandleBody(std::string_view body);

  RpcServerStats Stats() const;

  struct Impl;  // the accept loop and HTTP sessions (rpc_server.cpp)

 private:
  Json HandleOne(const Json& request, bool* is_notification);

  RpcServerConfig m_config;
  std::unordered_map<std::string, Handler> m_methods;
  std::unordered_map<std::string, StaticFile> m_static;
  std::atomic<std::uint16_t> m_port{0};
  std::shared_ptr<Impl> m_impl;
};

// A JSON-RPC error object {"code", "message", "data"?}.
Json RpcErrorObject(int code, std::string_view message, const Json& data = nullptr);
// The error object for a failed Status (see net/rpc.h for the mapping).
Json RpcErrorFromStatus(const Status& status);

}  // namespace vt::net
