#pragma once
// JSON-RPC 2.0 definitions shared by RpcServer and RpcClient (docs/net.md,
// "JSON-RPC").
//
// Error codes:
//   -32700 parse error        the body is not JSON (or nests deeper than kMaxJsonDepth)
//   -32600 invalid request    not a JSON-RPC 2.0 request object, an empty or
//                             too large batch, or an HTTP body over the cap (HTTP 413)
//   -32601 method not found
//   -32602 invalid params     the handler returned Invalid "rpc-invalid-params"
//                             (see InvalidParams), or threw a JSON type error
//                             while reading its params
//   -32603 internal error     the handler returned Status::Error, or threw
//   -32000 rejected           the handler returned any other Status::Invalid;
//                             the reason code is the error's data; also the
//                             server's own refusals under load (HTTP 503,
//                             reason "rpc-busy": too many connections, or the
//                             budget for large bodies in flight is spent)
// For every error produced from a Status, error.data is
//   {"reason": "<stable reason code>", "detail": "<text for humans>"}.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace vt::net {

using Json = nlohmann::json;

namespace rpc {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kRejected = -32000;

inline constexpr std::string_view kInvalidParamsReason = "rpc-invalid-params";
inline constexpr std::string_view kBusyReason = "rpc-busy";
// Deeper JSON is refused before parsing (the parser recurses).
inline constexpr std::size_t kMaxJsonDepth = 64;
}  // namespace rpc

// The Status a handler returns for bad params (mapped to -32602).
inline Status InvalidParams(std::string_view detail) { return Status::Invalid(rpc::kInvalidParamsReason, detail); }

// params[index] when params is an array, params[name] when it is an object;
// InvalidParams when missing or when params is neither.
Result<Json> GetParam(const Json& params, std::size_t index, std::string_view name);

// Typed variants of GetParam: InvalidParams when the value has another type.
Result<std::string> GetStringParam(const Json& params, std::size_t index, std::string_view name);
Result<std::uint64_t> GetU64Param(const Json& params, std::size_t index, std::string_view name);

// Optional parameters: nullopt when absent (OptParam); `dflt` when absent or
// null, InvalidParams when of another type (OptU64Param).
std::optional<Json> OptParam(const Json& params, std::size_t index, std::string_view name);
Result<std::uint64_t> OptU64Param(const Json& params, std::size_t index, std::string_view name, std::uint64_t dflt);

// Maximum nesting of arrays/objects in `text` (strings are skipped), or
// kMaxJsonDepth + 1 as soon as it goes deeper.
std::size_t JsonNestingDepth(std::string_view text);

}  // namespace vt::net
