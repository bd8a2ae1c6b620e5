#pragma once
// Whole-file reads and crash-safe whole-file writes for the worker's files
// (checkpoints, safetensors). Failures of the file system are Status::Error:
//   "file-not-found"     the path does not exist
//   "file-read-failed"   any other error while opening or reading
//   "disk-full"          ENOSPC, EDQUOT or EFBIG while writing
//   "file-write-failed"  any other error while writing, syncing or renaming
// The detail names the path and the errno text.

#include <filesystem>
#include <string_view>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::worker {

Result<Bytes> ReadFile(const std::filesystem::path& path);

// Reads at most `max_bytes` from the start of the file (headers).
Result<Bytes> ReadFilePrefix(const std::filesystem::path& path, std::size_t max_bytes);

// Replaces `path` with `data` so that a crash at any moment leaves either the
// old file or the new one, never a mix: write a temporary file in the same
// directory, fsync it, rename it over `path`, fsync the directory. On failure
// the temporary file is removed and `path` is untouched.
//
// DirSync::kDeferred leaves out the directory's fsync: the new file's
// content is durable, but its name is not until SyncDirectory(parent) — for
// writers that put several files in one directory and then sync it once
// (a batch of checkpoints), before anything that names them is written.
enum class DirSync { kNow, kDeferred };
Status WriteFileAtomic(const std::filesystem::path& path, ByteSpan data, DirSync dir_sync = DirSync::kNow);

// fsync of a directory: the renames into it become durable.
Status SyncDirectory(const std::filesystem::path& dir);

// Temporary files of WriteFileAtomic are named ".<name>.tmp.<pid>.<n>"; a
// crash can leave one behind. Directory owners ignore and remove them.
bool IsTempFileName(std::string_view file_name);

}  // namespace vt::worker
