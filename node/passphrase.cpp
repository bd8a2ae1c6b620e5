#include "node/passphrase.h"

#include <cstdlib>
#include <fstream>

namespace vt::node {

Result<std::string> ReadPassphrase(const std::filesystem::path& file) {
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::Error("file-not-found", file.string());
    std::string line;
    std::getline(in, line);
    return line;
  }
  if (const char* env = std::getenv("VT_PASSPHRASE")) return std::string(env);
  return Status::Invalid("passphrase-missing", "give --passphrase-file or set VT_PASSPHRASE");
}

}  // namespace vt::node
