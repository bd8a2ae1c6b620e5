#pragma once
// Secret keys on disk, encrypted under a passphrase: scrypt derives a 256-bit
// key, AES-256-GCM encrypts the 32-byte secret. The public key stays in the
// clear so that keys can be listed without the passphrase. Byte layout in
// docs/formats.md ("Key files").
//
// Failures:
//   Invalid "keyfile-bad-passphrase"  the checksum holds but decryption fails
//   Invalid "keyfile-truncated"       the file is a strict prefix of a key file
//   Invalid "keyfile-corrupt"         bad magic, wrong length, bad checksum,
//                                     a public key that does not match
//   Invalid "keyfile-unsupported"     unknown version or KDF, or KDF
//                                     parameters outside the accepted range
//   Invalid "keyfile-bad-params"      WriteKeyFile/EncryptKey: parameters out of range
//   Error   "keyfile-not-found"       no such file
//   Error   "keyfile-exists"          WriteKeyFile never replaces a key file
//   Error   "keyfile-io"              any other file system failure
// The passphrase-derived key and the plaintext are wiped after use; neither
// the passphrase nor the secret ever appears in a Status.

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "common/bytes.h"
#include "common/result.h"
#include "crypto/keys.h"

namespace vt::crypto {

// scrypt cost parameters, stored in the file. Accepted when reading:
// 1 <= log2_n <= 20, 1 <= r <= 32, 1 <= p <= 16 and 128*r*2^log2_n <= 1 GiB,
// so that a crafted file cannot make the reader allocate without bound.
struct ScryptParams {
  std::uint8_t log2_n = 15;
  std::uint32_t r = 8;
  std::uint32_t p = 1;
  bool operator==(const ScryptParams&) const = default;
};

inline constexpr std::size_t kKeyFileSize = 157;  // version 1

struct KeyFileInfo {
  std::uint8_t version;
  ScryptParams kdf;
  PublicKey public_key;
  Address address;
};

// In memory: the complete key file for `key` (fresh random salt and nonce).
Result<Bytes> EncryptKey(const SecretKey& key, std::string_view passphrase, const ScryptParams& params = {});
Result<SecretKey> DecryptKey(ByteSpan file, std::string_view passphrase);
// Header only (no passphrase; checks magic, version, length and checksum).
Result<KeyFileInfo> InspectKey(ByteSpan file);

// On disk: written to a temporary file in the same directory, fsynced,
// renamed into place without replacing an existing file, then the directory
// is fsynced. The file has mode 0600.
Status WriteKeyFile(const std::filesystem::path& path, const SecretKey& key, std::string_view passphrase,
                    const ScryptParams& params = {});
Result<SecretKey> ReadKeyFile(const std::filesystem::path& path, std::string_view passphrase);
Result<KeyFileInfo> ReadKeyFileInfo(const std::filesystem::path& path);

}  // namespace vt::crypto
