#include "net/rpc.h"

#include <string>

namespace vt::net {

Result<Json> GetParam(const Json& params, std::size_t index, std::string_view name) {
  if (params.is_array()) {
    if (index < params.size()) return params[index];
    return InvalidParams("missing parameter " + std::to_string(index) + " (" + std::string(name) + ")");
  }
  if (params.is_object()) {
    auto it = params.find(std::string(name));
    if (it != params.end()) return *it;
    return InvalidParams("missing parameter \"" + std::string(name) + "\"");
  }
  return InvalidParams("missing parameter \"" + std::string(name) + "\" (no params)");
}

Result<std::string> GetStringParam(const Json& params, std::size_t index, std::string_view name) {
  VT_ASSIGN_OR_RETURN(Json v, GetParam(params, index, name));
  if (!v.is_string()) return InvalidParams("parameter \"" + std::string(name) + "\" must be a string");
  return v.get<std::string>();
}

Result<std::uint64_t> GetU64Param(const Json& params, std::size_t index, std::string_view name) {
  VT_ASSIGN_OR_RETURN(Json v, GetParam(params, index, name));
  if (!v.is_number_unsigned()) {
    return InvalidParams("parameter \"" + std::string(name) + "\" must be a non-negative integer");
  }
  return v.get<std::uint64_t>();
}

std::optional<Json> OptParam(const Json& params, std::size_t index, std::string_view name) {
  if (params.is_array() && index < params.size()) return params[index];
  if (params.is_object() && params.contains(std::string(name))) return params[std::string(name)];
  return std::nullopt;
}

Result<std::uint64_t> OptU64Param(const Json& params, std::size_t index, std::string_view name, std::uint64_t dflt) {
  auto v = OptParam(params, index, name);
  if (!v || v->is_null()) return dflt;
  if (!v->is_number_unsigned()) return InvalidParams(std::string(name) + " must be a non-negative integer");
  return v->get<std::uint64_t>();
}

std::size_t JsonNestingDepth(std::string_view text) {
  std::size_t depth = 0;
  std::size_t max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        max_depth = depth;
        if (max_depth > rpc::kMaxJsonDepth) return rpc::kMaxJsonDepth + 1;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace vt::net
