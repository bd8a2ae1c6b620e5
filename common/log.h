#pragma once
// Logging on spdlog (docs/style.md, "Logs"): one line per event,
//   2025-01-31T12:00:00.123Z [net:info] peer connected addr=127.0.0.1:9000
// written as  vt::log::Get("net").info("peer connected addr={}", addr);
// Messages are "text key=value ..."; time is UTC.
//
// Levels come from the environment variable VT_LOG: a default level, per-component
// levels, or both: "debug", "net=debug", "net=trace,vm=warn,info" (default: info).
// Level names: trace, debug, info, warn (or warning), error, critical, off.
//
// Logs are never hashed and never part of consensus. NEVER log secrets: private
// keys, key seeds, key file contents, passphrases, not even at trace level.
// Anything a peer can trigger must be rate-limited by the caller.

#include <string_view>

#include <spdlog/logger.h>

#include "common/result.h"

namespace vt::log {

// spdlog pattern of every line.
inline constexpr char kPattern[] = "%Y-%m-%dT%H:%M:%S.%eZ [%n:%l] %v";

// The logger of `component`, created on first use; valid for the whole process,
// so callers may keep the reference.
spdlog::logger& Get(std::string_view component);

// Applies a level spec in VT_LOG syntax to existing and future loggers.
// Invalid specs change nothing and return Invalid("log-bad-spec").
Status SetLevels(std::string_view spec);

// Sends every logger's output to `sink` (a file for daemons, a buffer in tests)
// instead of stderr, with the standard format. Call during start-up.
void SetSink(spdlog::sink_ptr sink);

}  // namespace vt::log
