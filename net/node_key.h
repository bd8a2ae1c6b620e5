#pragma once
// The node key of a node that is not a validator (validators use their
// validator key, so their P2P id is their genesis key). It is the node's P2P
// identity (net/handshake.h), created once and kept in the data dir, so that
// peers' scores and bans follow the node across restarts.
//
// The file is a key file of crypto/keyfile.h with an empty passphrase and the
// cheapest scrypt parameters: what protects it is its mode 0600, as for an
// SSH host key; the key holds no funds. A file readable by group or others is
// refused (Invalid "node-key-insecure"), as ssh refuses such a host key.

#include <filesystem>

#include "common/result.h"
#include "crypto/keys.h"

namespace vt::net {

// Reads the node key at `path`, or creates it (mode 0600) when there is none.
// Errors of crypto/keyfile.h, or Invalid "node-key-insecure".
Result<crypto::SecretKey> LoadOrCreateNodeKey(const std::filesystem::path& path);

}  // namespace vt::net
