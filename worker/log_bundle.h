#pragma once
// The log bundle: how a rounded-mode solver publishes its rounding logs so
// that challengers can replay (docs/formats.md, "Log bundle"; docs/referee.md,
// "Data availability"). One blob holds the run's manifest — the checkpoint
// hashes the solver claims and the interval log entries — and every interval
// log file. The solver stores it on the network (content-addressed by SHA-256)
// and names that hash in its commit call (referee::CommitArgs::log_bundle); a
// challenger fetches it, unpacks it into a directory that reads like the
// solver's run (manifest and logs, no checkpoints) and audits against the
// signed commitment, which binds every log through Commitment::log_root.
//
// Byte format (docs/formats.md, "Log bundle"):
//   magic "VTLB" ‖ u16 LE version (1)
//   bytes  manifest (worker/run_dir.h ManifestToJson, UTF-8 JSON)
//   varint interval count, then per interval: bytes (varint length ‖ the
//          ".vtlog" interval log file, worker/run_dir.h)
// Invalid reasons: "log-bundle-corrupt" (framing, magic, version, a manifest
// that does not parse, counts that disagree), "log-bundle-mismatch" (a log
// file whose hash is not the one its manifest entry names), or the
// log-file-* reasons of DecodeIntervalLogFile.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "protocol/types.h"
#include "worker/run_dir.h"

namespace vt::worker {

inline constexpr std::uint16_t kLogBundleVersion = 1;

// The bundle of a rounded run (its manifest and every interval log it names).
Result<Bytes> ExportLogBundle(const RunDir& run);

// Only the manifest of a bundle (what the solver claims: checkpoint hashes,
// per-step losses), without decoding the log files; the explorer shows the
// loss curve from it. Invalid "log-bundle-corrupt".
Result<RunManifest> ReadLogBundleManifest(ByteSpan bundle);

// A bundle decoded and checked in memory (no I/O): its manifest, and each
// interval's log file bytes (views into the bundle), every file decoded and
// checked against its manifest entry. Decoding allocates at most
// `max_decoded_bytes` per log file payload (judged from headers first).
struct DecodedLogBundle {
  RunManifest manifest;
  std::vector<ByteSpan> files;  // files[i] is the log of manifest.logs[i]
};
Result<DecodedLogBundle> DecodeLogBundle(ByteSpan bundle, std::uint64_t max_decoded_bytes = std::uint64_t{1} << 36);

// The bundle's claims are the commitment's: same job, a complete rounded
// run, and the checkpoint root, final state hash and log root it signed.
// Invalid "log-bundle-mismatch" otherwise. (The signature is the referee's
// business; this binds the bytes to the commitment's roots.)
Status CheckBundleCommitment(const RunManifest& manifest, const protocol::Commitment& commitment);

// Unpacks a bundle into `dir` (created; it must not hold another run's
// manifest) and returns the manifest. Every log file is decoded and checked
// against its manifest entry before anything is written.
Result<RunManifest> ImportLogBundle(ByteSpan bundle, const std::filesystem::path& dir);

}  // namespace vt::worker
