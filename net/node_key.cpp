#include "net/node_key.h"

#include <sys/stat.h>

#include <string>

#include "crypto/keyfile.h"

namespace vt::net {
namespace {

// Cheapest accepted parameters: the passphrase is empty, so work spent on it
// would protect nothing.
constexpr crypto::ScryptParams kNodeKeyKdf{1, 1, 1};

Result<crypto::SecretKey> Read(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::Error("keyfile-io", "stat " + path.string());
  if ((st.st_mode & 077) != 0) {
    return Status::Invalid("node-key-insecure", path.string() + " is readable by others; chmod 600 it");
  }
  return crypto::ReadKeyFile(path, "");
}

}  // namespace

Result<crypto::SecretKey> LoadOrCreateNodeKey(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return Read(path);
  VT_ASSIGN_OR_RETURN(crypto::SecretKey key, crypto::SecretKey::Generate());
  const Status written = crypto::WriteKeyFile(path, key, "", kNodeKeyKdf);
  // Another process created it first: theirs is the one on disk.
  if (!written.ok() && written.reason() == "keyfile-exists") return Read(path);
  VT_TRY(written);
  return key;
}

}  // namespace vt::net
