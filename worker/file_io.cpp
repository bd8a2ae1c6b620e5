#include "worker/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace vt::worker {

namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

Status ReadError(const std::filesystem::path& path, int err) {
  if (err == ENOENT) return Status::Error("file-not-found", path.string() + ": " + ErrnoText(err));
  return Status::Error("file-read-failed", path.string() + ": " + ErrnoText(err));
}

Status WriteError(const std::filesystem::path& path, std::string_view what, int err) {
  const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
  return Status::Error(full ? "disk-full" : "file-write-failed",
                       path.string() + ": " + std::string(what) + ": " + ErrnoText(err));
}

// Closes the descriptor on every path out of a function.
class Fd {
 public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }
  // Close now and report the result (close can report delayed write errors).
  int Close() {
    const int rc = ::close(m_fd);
    m_fd = -1;
    return rc;
  }

 private:
  int m_fd;
};

Result<Bytes> ReadUpTo(const std::filesystem::path& path, std::size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ReadError(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ReadError(path, errno);
  if (S_ISDIR(st.st_mode)) return ReadError(path, EISDIR);
  // Read straight into a buffer of the stat size; a file that grew meanwhile
  // continues through a small buffer.
  Bytes out(std::min<std::size_t>(static_cast<std::size_t>(st.st_size), max_bytes));
  std::size_t have = 0;
  std::uint8_t extra[1 << 14];
  while (have < max_bytes) {
    const bool into_out = have < out.size();
    std::uint8_t* dst = into_out ? out.data() + have : extra;
    const std::size_t want = into_out ? out.size() - have : std::min(sizeof(extra), max_bytes - have);
    const ssize_t n = ::read(fd.get(), dst, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (n == 0) break;
    if (!into_out) out.insert(out.end(), extra, extra + n);
    have += static_cast<std::size_t>(n);
  }
  out.resize(have);
  return out;
}

std::atomic<std::uint64_t> g_temp_counter{0};

}  // namespace

Result<Bytes> ReadFile(const std::filesystem::path& path) { return ReadUpTo(path, static_cast<std::size_t>(-1)); }

Result<Bytes> ReadFilePrefix(const std::filesystem::path& path, std::size_t max_bytes) {
  return ReadUpTo(path, max_bytes);
}

Status SyncDirectory(const std::filesystem::path& dir) {
  Fd fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return WriteError(dir, "open directory", errno);
  if (::fsync(fd.get()) != 0) return WriteError(dir, "fsync directory", errno);
  return Status::Ok();
}

bool IsTempFileName(std::string_view file_name) {
  return file_name.size() > 1 && file_name.front() == '.' && file_name.find(".tmp.") != std::string_view::npos;
}

Status WriteFileAtomic(const std::filesystem::path& path, ByteSpan data, DirSync dir_sync) {
  const std::filesystem::path dir = path.parent_path();
  const std::string temp_name = "." + path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(g_temp_counter.fetch_add(1));
  const std::filesystem::path temp = dir / temp_name;

  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return WriteError(temp, "create", errno);
  // From here on every failure removes the temporary file.
  auto fail = [&](std::string_view what, int err) {
    const Status st = WriteError(path, what, err);
    ::unlink(temp.c_str());
    return st;
  };
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write", errno);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail("fsync", errno);
  if (fd.Close() != 0) return fail("close", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail("rename", errno);
  // The rename is durable only once the directory entry is.
  return dir_sync == DirSync::kNow ? SyncDirectory(dir) : Status::Ok();
}

}  // namespace vt::worker
