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
Status WriteFileAtomic(const std::filesystem::path& path, ByteSpan data);

// Temporary files of WriteFileAtomic are named ".<name>.tmp.<pid>.<n>"; a
// crash can leave one behind. Directory owners ignore and remove them.
bool IsTempFileName(std::string_view file_name);

}  // namespace vt::worker
