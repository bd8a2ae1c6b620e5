#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vt::log {
namespace {

using Level = spdlog::level::level_enum;

std::optional<Level> ParseLevel(std::string_view s) {
  static const std::pair<std::string_view, Level> kNames[] = {
      {"trace", Level::trace},  {"debug", Level::debug}, {"info", Level::info},         {"warn", Level::warn},
      {"warning", Level::warn}, {"error", Level::err},   {"critical", Level::critical}, {"off", Level::off}};
  for (const auto& [name, level] : kNames)
    if (s == name) return level;
  return std::nullopt;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

struct Levels {
  Level fallback = Level::info;
  std::map<std::string, Level, std::less<>> per_component;

  Level For(std::string_view component) const {
    auto it = per_component.find(component);
    return it == per_component.end() ? fallback : it->second;
  }
};

Result<Levels> ParseSpec(std::string_view spec) {
  Levels out;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = Trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view level_name = eq == std::string_view::npos ? item : Trim(item.substr(eq + 1));
    const std::optional<Level> level = ParseLevel(level_name);
    if (!level) return Status::Invalid("log-bad-spec", "unknown log level '" + std::string(level_name) + "'");
    if (eq == std::string_view::npos) {
      out.fallback = *level;
    } else {
      const std::string_view component = Trim(item.substr(0, eq));
      if (component.empty()) return Status::Invalid("log-bad-spec", "empty component name");
      out.per_component[std::string(component)] = *level;
    }
  }
  return out;
}

void SetFormat(spdlog::sinks::sink& sink) {
  sink.set_formatter(std::make_unique<spdlog::pattern_formatter>(kPattern, spdlog::pattern_time_type::utc));
}

struct Registry {
  std::mutex mu;
  spdlog::sink_ptr sink;
  Levels levels;
  std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> loggers;
};

// Created on first use and never destroyed, so logging still works while other
// static objects are torn down.
Registry& GetRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    SetFormat(*r->sink);
    return r;
  }();
  return *registry;
}

// VT_LOG, applied once before the first logger is made; its status is kept so
// that a bad spec can be reported once through a logger.
const Status& EnvStatus() {
  static const Status status = [] {
    const char* env = std::getenv("VT_LOG");
    return env == nullptr ? Status::Ok() : SetLevels(env);
  }();
  return status;
}

std::atomic<bool> g_env_warned{false};

}  // namespace

spdlog::logger& Get(std::string_view component) {
  if (!EnvStatus().ok() && !g_env_warned.exchange(true))
    Get("log").warn("ignoring VT_LOG reason={}", EnvStatus().ToString());
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.loggers.find(component);
  if (it != r.loggers.end()) return *it->second;
  auto logger = std::make_shared<spdlog::logger>(std::string(component), r.sink);
  logger->set_level(r.levels.For(component));
  // Every line is flushed as written: a crash (kill -9) loses no line.
  logger->flush_on(Level::trace);
  return *r.loggers.emplace(std::string(component), std::move(logger)).first->second;
}

Status SetLevels(std::string_view spec) {
  VT_ASSIGN_OR_RETURN(Levels levels, ParseSpec(spec));
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  r.levels = std::move(levels);
  for (auto& [name, logger] : r.loggers) logger->set_level(r.levels.For(name));
  return Status::Ok();
}

void SetSink(spdlog::sink_ptr sink) {
  SetFormat(*sink);
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  r.sink = sink;
  for (auto& [name, logger] : r.loggers) logger->sinks() = {sink};
}

}  // namespace vt::log
