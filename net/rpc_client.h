#pragma once
// A small synchronous JSON-RPC 2.0 client over HTTP/1.1 for the CLI and tests.
// One keep-alive connection, reopened when the server closed it. Every call is
// bounded by the timeout. Not thread-safe: one RpcClient per thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "net/rpc.h"

namespace vt::net {

struct RpcError {
  int code = 0;
  std::string message;
  Json data;  // {"reason", "detail"} for errors that came from a Status
};

struct RpcReply {
  Json id;
  std::optional<Json> result;
  std::optional<RpcError> error;
};

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

class RpcClient {
 public:
  RpcClient(std::string host, std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // The result, or:
  //   the server's error as Status::Invalid(data.reason if present, else
  //   "rpc-error-<code>"; detail "<code> <message>");
  //   Error "rpc-transport" (connect/read/write failed), "rpc-timeout",
  //   "rpc-bad-response" (not a JSON-RPC response).
  Result<Json> Call(std::string_view method, const Json& params = Json::array());
  // The whole reply (to inspect error codes).
  Result<RpcReply> CallRaw(std::string_view method, const Json& params = Json::array());
  // A raw HTTP POST of `body` (tests: malformed JSON, batches, oversize).
  Result<HttpReply> Post(std::string body, std::string_view content_type = "application/json");
  // A raw HTTP request with any verb and target (tests: GET of a static file).
  Result<HttpReply> Request(std::string_view verb, std::string body, std::string_view content_type,
                            std::string_view target = "/");

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
  std::uint64_t m_next_id = 1;
};

}  // namespace vt::net
