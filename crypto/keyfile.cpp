#include "crypto/keyfile.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/encoding.h"
#include "crypto/random.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::crypto {
namespace {

// Layout of version 1 (docs/formats.md "Key files").
constexpr std::array<std::uint8_t, 6> kMagic = {'V', 'T', 'K', 'E', 'Y', 0};
constexpr std::uint8_t kVersion = 1;
constexpr std::uint8_t kKdfScrypt = 1;
constexpr std::size_t kSaltSize = 16;
constexpr std::size_t kNonceSize = 12;
constexpr std::size_t kTagSize = 16;
constexpr std::size_t kKeySize = 32;
constexpr std::size_t kHeaderSize = 6 + 1 + 1 + 1 + 4 + 4 + kSaltSize + kNonceSize + PublicKey::kSize;  // AAD
constexpr std::size_t kCiphertextOffset = kHeaderSize;
constexpr std::size_t kTagOffset = kCiphertextOffset + SecretKey::kSize;
constexpr std::size_t kChecksumOffset = kTagOffset + kTagSize;
static_assert(kChecksumOffset + Hash256::kSize == kKeyFileSize);

// Nothing we accept is bigger; reading stops here so that a huge file is
// rejected without being read.
constexpr std::size_t kMaxReadSize = 4096;

// Wipes a fixed buffer when it goes out of scope, on every return path.
template <std::size_t N>
struct WipedArray {
  std::array<std::uint8_t, N> data{};
  WipedArray() = default;
  WipedArray(const WipedArray&) = delete;
  WipedArray& operator=(const WipedArray&) = delete;
  ~WipedArray() { SecureWipe(data.data(), data.size()); }
};

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

bool ParamsInRange(const ScryptParams& p) {
  if (p.log2_n < 1 || p.log2_n > 20 || p.r < 1 || p.r > 32 || p.p < 1 || p.p > 16) return false;
  const std::uint64_t memory = std::uint64_t{128} * p.r << p.log2_n;
  return memory <= (std::uint64_t{1} << 30);
}

Hash256 Checksum(ByteSpan file) {
  static const TaggedHasher hasher(tags::kKeyFileChecksum);
  return hasher.Hash(file.first(kChecksumOffset));
}

Status DeriveKey(std::string_view passphrase, ByteSpan salt, const ScryptParams& params,
                 std::array<std::uint8_t, kKeySize>& out) {
  const std::uint64_t n = std::uint64_t{1} << params.log2_n;
  // scrypt needs 128*r*N bytes for V and 128*r*p for B; the default OpenSSL
  // cap (32 MiB) is exactly the default N=2^15, r=8 and would refuse it.
  const std::uint64_t maxmem = std::uint64_t{128} * params.r * (n + params.p + 2) + (std::uint64_t{1} << 20);
  if (EVP_PBE_scrypt(passphrase.data(), passphrase.size(), salt.data(), salt.size(), n, params.r, params.p,
                     maxmem, out.data(), out.size()) != 1) {
    return Status::Error("keyfile-kdf-failed", "scrypt failed (out of memory?)");
  }
  return Status::Ok();
}

Status CheckStructure(ByteSpan file) {
  const std::size_t magic_seen = std::min(file.size(), kMagic.size());
  if (!std::equal(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(magic_seen), kMagic.begin())) {
    return Status::Invalid("keyfile-corrupt", "not a veritrain key file (bad magic)");
  }
  if (file.size() <= kMagic.size())
    return Status::Invalid("keyfile-truncated", "key file ends in its header");
  if (file[kMagic.size()] != kVersion) {
    return Status::Invalid("keyfile-unsupported",
                           "unknown key file version " + std::to_string(file[kMagic.size()]));
  }
  if (file.size() < kKeyFileSize) {
    return Status::Invalid("keyfile-truncated", "key file has " + std::to_string(file.size()) + " of " +
                                                    std::to_string(kKeyFileSize) + " bytes");
  }
  if (file.size() > kKeyFileSize)
    return Status::Invalid("keyfile-corrupt", "bytes after the end of the key file");
  const Hash256 checksum = Checksum(file);
  if (!std::equal(checksum.bytes.begin(), checksum.bytes.end(), file.begin() + kChecksumOffset)) {
    return Status::Invalid("keyfile-corrupt", "checksum mismatch");
  }
  return Status::Ok();
}

// The parsed header of a structurally valid file.
struct Header {
  KeyFileInfo info;
  ByteSpan salt;
  ByteSpan nonce;
};

Result<Header> ParseHeader(ByteSpan file) {
  VT_TRY(CheckStructure(file));
  Reader r(file.first(kHeaderSize));
  // The structure check guarantees the length, so the reads cannot fail.
  (void)r.GetFixed(kMagic.size());
  const std::uint8_t version = r.GetU8().value();
  const std::uint8_t kdf = r.GetU8().value();
  ScryptParams params;
  params.log2_n = r.GetU8().value();
  params.r = r.GetU32().value();
  params.p = r.GetU32().value();
  const ByteSpan salt = r.GetFixed(kSaltSize).value();
  const ByteSpan nonce = r.GetFixed(kNonceSize).value();
  const ByteSpan pub = r.GetFixed(PublicKey::kSize).value();
  if (kdf != kKdfScrypt) return Status::Invalid("keyfile-unsupported", "unknown KDF " + std::to_string(kdf));
  if (!ParamsInRange(params)) return Status::Invalid("keyfile-unsupported", "scrypt parameters out of range");
  auto key = PublicKey::FromBytes(pub);
  if (!key.ok()) return Status::Invalid("keyfile-corrupt", "stored public key is invalid");
  return Header{KeyFileInfo{version, params, *key, key->address()}, salt, nonce};
}

Result<Bytes> ReadSmallFile(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::Error("keyfile-not-found", "no key file at " + path.string());
    return Status::Error("keyfile-io", "open " + path.string() + ": " + std::strerror(err));
  }
  Bytes out(kMaxReadSize + 1);
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Error("keyfile-io", "read " + path.string() + ": " + std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

Status WriteAll(int fd, ByteSpan data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error("keyfile-io", std::string("write: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

Status FsyncDir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::Error("keyfile-io", "open directory " + dir.string() + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0)
    return Status::Error("keyfile-io", "fsync directory " + dir.string() + ": " + std::strerror(err));
  return Status::Ok();
}

// Moves `from` to `to` unless `to` exists. renameat2(RENAME_NOREPLACE) is
// atomic; file systems without it get link()+unlink(), which is as safe (a
// crash can at worst leave the 0600 temporary file behind).
Status RenameNoReplace(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return Status::Ok();
  int err = errno;
  if (err == EINVAL || err == ENOSYS) {
    if (::link(from.c_str(), to.c_str()) == 0) {
      ::unlink(from.c_str());
      return Status::Ok();
    }
    err = errno;
  }
  if (err == EEXIST)
    return Status::Error("keyfile-exists", "refusing to replace existing key file " + to.string());
  return Status::Error("keyfile-io", "rename to " + to.string() + ": " + std::strerror(err));
}

}  // namespace

Result<Bytes> EncryptKey(const SecretKey& key, std::string_view passphrase, const ScryptParams& params) {
  if (!ParamsInRange(params)) return Status::Invalid("keyfile-bad-params", "scrypt parameters out of range");
  std::array<std::uint8_t, kSaltSize> salt{};
  std::array<std::uint8_t, kNonceSize> nonce{};
  VT_TRY(FillOsRandom(salt));
  VT_TRY(FillOsRandom(nonce));

  Writer w;
  w.PutFixed(kMagic);
  w.PutU8(kVersion);
  w.PutU8(kKdfScrypt);
  w.PutU8(params.log2_n);
  w.PutU32(params.r);
  w.PutU32(params.p);
  w.PutFixed(salt);
  w.PutFixed(nonce);
  w.PutFixed(key.public_key().bytes());
  Bytes file = std::move(w).Take();
  file.resize(kKeyFileSize);

  WipedArray<kKeySize> aes_key;
  VT_TRY(DeriveKey(passphrase, salt, params, aes_key.data));

  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  const std::span<const std::uint8_t, SecretKey::kSize> secret = key.UnsafeSecretBytes();
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceSize, nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, aes_key.data.data(), nonce.data()) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, file.data(), kHeaderSize) != 1 ||
      EVP_EncryptUpdate(ctx.get(), file.data() + kCiphertextOffset, &len, secret.data(), secret.size()) !=
          1 ||
      len != static_cast<int>(SecretKey::kSize) ||
      EVP_EncryptFinal_ex(ctx.get(), file.data() + kCiphertextOffset + len, &final_len) != 1 ||
      final_len != 0 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagSize, file.data() + kTagOffset) != 1) {
    return Status::Error("keyfile-cipher-failed", "AES-256-GCM encryption failed");
  }
  const Hash256 checksum = Checksum(file);
  std::copy(checksum.bytes.begin(), checksum.bytes.end(), file.begin() + kChecksumOffset);
  return file;
}

Result<KeyFileInfo> InspectKey(ByteSpan file) {
  VT_ASSIGN_OR_RETURN(Header header, ParseHeader(file));
  return header.info;
}

Result<SecretKey> DecryptKey(ByteSpan file, std::string_view passphrase) {
  VT_ASSIGN_OR_RETURN(Header header, ParseHeader(file));

  WipedArray<kKeySize> aes_key;
  VT_TRY(DeriveKey(passphrase, header.salt, header.info.kdf, aes_key.data));

  WipedArray<SecretKey::kSize> plain;
  // OpenSSL wants a mutable tag buffer for EVP_CTRL_GCM_SET_TAG.
  std::array<std::uint8_t, kTagSize> tag{};
  std::copy_n(file.begin() + kTagOffset, kTagSize, tag.begin());
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceSize, nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, aes_key.data.data(), header.nonce.data()) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, file.data(), kHeaderSize) != 1 ||
      EVP_DecryptUpdate(ctx.get(), plain.data.data(), &len, file.data() + kCiphertextOffset,
                        SecretKey::kSize) != 1 ||
      len != static_cast<int>(SecretKey::kSize) ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagSize, tag.data()) != 1) {
    return Status::Error("keyfile-cipher-failed", "AES-256-GCM setup failed");
  }
  // The checksum held, so a failing tag means a wrong passphrase (or a
  // deliberate edit that also recomputed the checksum).
  if (EVP_DecryptFinal_ex(ctx.get(), plain.data.data() + len, &final_len) != 1) {
    return Status::Invalid("keyfile-bad-passphrase", "wrong passphrase");
  }
  auto key = SecretKey::FromBytes(plain.data);
  if (!key.ok()) return Status::Invalid("keyfile-corrupt", "decrypted secret key is invalid");
  if (key->public_key() != header.info.public_key) {
    return Status::Invalid("keyfile-corrupt", "secret key does not match the stored public key");
  }
  return key;
}

Status WriteKeyFile(const std::filesystem::path& path, const SecretKey& key, std::string_view passphrase,
                    const ScryptParams& params) {
  VT_ASSIGN_OR_RETURN(Bytes file, EncryptKey(key, passphrase, params));

  std::array<std::uint8_t, 8> suffix{};
  VT_TRY(FillOsRandom(suffix));
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + ToHex(suffix);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::Error("keyfile-io", "create " + tmp.string() + ": " + std::strerror(errno));
  Status st = WriteAll(fd, file);
  // The umask can only remove bits; fchmod makes the mode exactly 0600.
  if (st.ok() && ::fchmod(fd, 0600) != 0)
    st = Status::Error("keyfile-io", std::string("fchmod: ") + std::strerror(errno));
  if (st.ok() && ::fsync(fd) != 0)
    st = Status::Error("keyfile-io", std::string("fsync: ") + std::strerror(errno));
  if (::close(fd) != 0 && st.ok())
    st = Status::Error("keyfile-io", std::string("close: ") + std::strerror(errno));
  if (st.ok()) st = RenameNoReplace(tmp, path);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st.WithContext("writing key file " + path.string());
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  return FsyncDir(dir);
}

Result<SecretKey> ReadKeyFile(const std::filesystem::path& path, std::string_view passphrase) {
  VT_ASSIGN_OR_RETURN(Bytes file, ReadSmallFile(path));
  auto key = DecryptKey(file, passphrase);
  if (!key.ok()) return key.status().WithContext("key file " + path.string());
  return key;
}

Result<KeyFileInfo> ReadKeyFileInfo(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Bytes file, ReadSmallFile(path));
  auto info = InspectKey(file);
  if (!info.ok()) return info.status().WithContext("key file " + path.string());
  return info;
}

}  // namespace vt::crypto
