#pragma once
// Where scripts and daemons get a key passphrase without a prompt: a file
// (--passphrase-file, first line) or the environment variable VT_PASSPHRASE.

#include <filesystem>
#include <string>

#include "common/result.h"

namespace vt::node {

// Invalid "passphrase-missing" when neither is given; Error "file-not-found".
Result<std::string> ReadPassphrase(const std::filesystem::path& file);

}  // namespace vt::node
