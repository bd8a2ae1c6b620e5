#include "crypto/keyfile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>

#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "tests/support/test_seed.h"

namespace vt::crypto {
namespace {

namespace fs = std::filesystem;

// Tests use a cheap scrypt (N = 2^10) so that hundreds of decryptions stay fast.
constexpr ScryptParams kFast{10, 8, 1};

SecretKey TestKey() {
  auto sk = SecretKey::FromBytes(
      FromHex("C90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B14E5C9").value());
  EXPECT_TRUE(sk.ok());
  return std::move(sk).value();
}

class TempDir {
 public:
  TempDir() {
    std::mt19937_64 rng(test::TestSeed() ^ static_cast<std::uint64_t>(::getpid()));
    m_path = fs::temp_directory_path() / ("vt_keyfile_test_" + std::to_string(rng()));
    fs::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(m_path, ec);
  }
  const fs::path& path() const { return m_path; }

 private:
  fs::path m_path;
};

Bytes ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// Recomputes the integrity checksum, as someone editing the file on purpose
// would, so that the cryptographic checks are reached.
void FixChecksum(Bytes& file) {
  const Hash256 c = TaggedHash(tags::kKeyFileChecksum, ByteSpan(file).first(kKeyFileSize - 32));
  std::copy(c.bytes.begin(), c.bytes.end(), file.end() - 32);
}

TEST(KeyFileTest, InMemoryRoundTrip) {
  const SecretKey sk = TestKey();
  auto file = EncryptKey(sk, "correct horse", kFast);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->size(), kKeyFileSize);
  EXPECT_EQ(std::string(file->begin(), file->begin() + 6), std::string("VTKEY\0", 6));

  auto back = DecryptKey(*file, "correct horse");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->public_key(), sk.public_key());
  EXPECT_TRUE(std::equal(back->UnsafeSecretBytes().begin(), back->UnsafeSecretBytes().end(),
                         sk.UnsafeSecretBytes().begin()));

  auto info = InspectKey(*file);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->version, 1);
  EXPECT_EQ(info->kdf, kFast);
  EXPECT_EQ(info->public_key, sk.public_key());
  EXPECT_EQ(info->address, sk.address());

  // The secret never appears in the clear; a second encryption uses a fresh
  // salt and nonce.
  const auto secret = sk.UnsafeSecretBytes();
  EXPECT_EQ(std::search(file->begin(), file->end(), secret.begin(), secret.end()), file->end());
  auto again = EncryptKey(sk, "correct horse", kFast);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, *file);
}

// Written by tests/crypto/data/golden_keyfile.py straight from the format in
// docs/formats.md, with Python's hashlib.scrypt and the 'cryptography'
// package's AES-GCM (fixed salt 00..0f and nonce 64..6f): the BIP-340 vector 1
// secret under "veritrain golden passphrase", scrypt N = 2^10, r = 8, p = 1.
constexpr const char* kGoldenKeyFile =
    "56544b45590001010a0800000001000000000102030405060708090a0b0c0d0e0f6465666768696a6b6c6d6e6f"
    "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659913619ed0856a07af5419f0562"
    "c0b77a1f680c610d4c25ba4926132b89b17ec24c8f2a5ac4549d9ff3e1713c5aac2212133585791d0ad354f58a"
    "9c20c9cec16e36d2b3a5ca604fac843fe8559a52fb12";

TEST(KeyFileTest, GoldenFileFromIndependentWriter) {
  const Bytes file = FromHex(kGoldenKeyFile).value();
  ASSERT_EQ(file.size(), kKeyFileSize);
  auto info = InspectKey(file);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->kdf, kFast);
  EXPECT_EQ(info->public_key.Hex(), "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659");
  auto sk = DecryptKey(file, "veritrain golden passphrase");
  ASSERT_TRUE(sk.ok()) << sk.status().ToString();
  EXPECT_EQ(ToHex(sk->UnsafeSecretBytes()),
            "b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef");
  EXPECT_EQ(DecryptKey(file, "veritrain golden passphrasE").status().reason(), "keyfile-bad-passphrase");
}

// Our writer puts every field where the document says.
TEST(KeyFileTest, WriterLayout) {
  const SecretKey sk = TestKey();
  auto file = EncryptKey(sk, "pw", ScryptParams{11, 3, 2});
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(ToHex(ByteSpan(*file).first(17)),
            "56544b455900"
            "01"
            "01"
            "0b"
            "03000000"
            "02000000");
  EXPECT_EQ(ToHex(ByteSpan(*file).subspan(45, 32)), sk.public_key().Hex());
  EXPECT_EQ(TaggedHash(tags::kKeyFileChecksum, ByteSpan(*file).first(125)).Hex(),
            ToHex(ByteSpan(*file).subspan(125)));
  auto back = DecryptKey(*file, "pw");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->public_key(), sk.public_key());
}

TEST(KeyFileTest, WrongPassphrase) {
  auto file = EncryptKey(TestKey(), "right", kFast);
  ASSERT_TRUE(file.ok());
  for (const char* wrong : {"wrong", "", "Right", "right "}) {
    auto r = DecryptKey(*file, wrong);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().is_invalid());
    EXPECT_EQ(r.status().reason(), "keyfile-bad-passphrase") << wrong;
    EXPECT_EQ(r.status().ToString().find("right"), std::string::npos) << "passphrase leaked into the status";
  }
}

TEST(KeyFileTest, EveryPrefixIsTruncated) {
  auto file = EncryptKey(TestKey(), "pw", kFast);
  ASSERT_TRUE(file.ok());
  for (std::size_t len = 0; len < file->size(); ++len) {
    auto r = DecryptKey(ByteSpan(*file).first(len), "pw");
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_TRUE(r.status().is_invalid()) << len;
    EXPECT_EQ(r.status().reason(), "keyfile-truncated") << len;
    EXPECT_EQ(InspectKey(ByteSpan(*file).first(len)).status().reason(), "keyfile-truncated") << len;
  }
  Bytes longer = *file;
  longer.push_back(0);
  EXPECT_EQ(DecryptKey(longer, "pw").status().reason(), "keyfile-corrupt");
}

TEST(KeyFileTest, EveryFlippedByteFails) {
  std::mt19937_64 rng(test::TestSeed());
  auto file = EncryptKey(TestKey(), "pw", kFast);
  ASSERT_TRUE(file.ok());
  for (std::size_t pos = 0; pos < file->size(); ++pos) {
    Bytes bad = *file;
    bad[pos] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    auto r = DecryptKey(bad, "pw");
    ASSERT_FALSE(r.ok()) << pos;
    EXPECT_TRUE(r.status().is_invalid()) << pos;
    // Accidental damage: the checksum (or the magic / version) catches it.
    const std::set<std::string> accidental = {"keyfile-corrupt", "keyfile-unsupported"};
    EXPECT_TRUE(accidental.count(r.status().reason())) << pos << " " << r.status().ToString();
  }
}

TEST(KeyFileTest, DeliberateEditsBehindAValidChecksumFail) {
  auto file = EncryptKey(TestKey(), "pw", kFast);
  ASSERT_TRUE(file.ok());
  // Bytes 7.. up to the checksum: KDF id and parameters, salt, nonce, public
  // key, ciphertext, GCM tag. None may yield a key.
  for (std::size_t pos = 7; pos < kKeyFileSize - 32; ++pos) {
    Bytes bad = *file;
    bad[pos] ^= 0x01;
    FixChecksum(bad);
    auto r = DecryptKey(bad, "pw");
    ASSERT_FALSE(r.ok()) << pos;
    EXPECT_TRUE(r.status().is_invalid()) << pos << " " << r.status().ToString();
  }
  // A forged public key (another valid key) is caught by the GCM tag over
  // the header.
  auto other = SecretKey::Generate();
  ASSERT_TRUE(other.ok());
  Bytes forged = *file;
  std::copy(other->public_key().bytes().begin(), other->public_key().bytes().end(), forged.begin() + 45);
  FixChecksum(forged);
  ASSERT_TRUE(InspectKey(forged).ok());
  EXPECT_EQ(InspectKey(forged)->public_key, other->public_key());
  EXPECT_EQ(DecryptKey(forged, "pw").status().reason(), "keyfile-bad-passphrase");
  // scrypt parameters out of range are refused before any work.
  Bytes big_n = *file;
  big_n[8] = 30;
  FixChecksum(big_n);
  EXPECT_EQ(DecryptKey(big_n, "pw").status().reason(), "keyfile-unsupported");
  EXPECT_EQ(InspectKey(big_n).status().reason(), "keyfile-unsupported");
}

TEST(KeyFileTest, BadParamsAndOtherMagic) {
  EXPECT_EQ(EncryptKey(TestKey(), "pw", ScryptParams{0, 8, 1}).status().reason(), "keyfile-bad-params");
  EXPECT_EQ(EncryptKey(TestKey(), "pw", ScryptParams{21, 8, 1}).status().reason(), "keyfile-bad-params");
  EXPECT_EQ(EncryptKey(TestKey(), "pw", ScryptParams{10, 0, 1}).status().reason(), "keyfile-bad-params");
  EXPECT_EQ(EncryptKey(TestKey(), "pw", ScryptParams{20, 16, 1}).status().reason(), "keyfile-bad-params");
  const Bytes not_a_key(kKeyFileSize, 'x');
  EXPECT_EQ(DecryptKey(not_a_key, "pw").status().reason(), "keyfile-corrupt");
  EXPECT_EQ(DecryptKey(AsBytes("VTKEX"), "pw").status().reason(), "keyfile-corrupt");
}

TEST(KeyFileTest, DefaultParamsRoundTrip) {
  // The production cost (N = 2^15, r = 8): one encryption and one decryption.
  auto file = EncryptKey(TestKey(), "pw");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  auto info = InspectKey(*file);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->kdf, (ScryptParams{15, 8, 1}));
  auto back = DecryptKey(*file, "pw");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->public_key(), TestKey().public_key());
}

TEST(KeyFileTest, OnDiskRoundTripModeAndNoReplace) {
  TempDir dir;
  const fs::path path = dir.path() / "validator.key";
  const SecretKey sk = TestKey();
  ASSERT_TRUE(WriteKeyFile(path, sk, "pw", kFast).ok());

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ReadAll(path).size(), kKeyFileSize);
  // No temporary file is left behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);

  auto back = ReadKeyFile(path, "pw");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->public_key(), sk.public_key());
  auto info = ReadKeyFileInfo(path);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->address, sk.address());

  auto wrong = ReadKeyFile(path, "nope");
  EXPECT_EQ(wrong.status().reason(), "keyfile-bad-passphrase");

  // An existing key file is never replaced.
  auto other = SecretKey::Generate();
  ASSERT_TRUE(other.ok());
  const Status again = WriteKeyFile(path, *other, "pw", kFast);
  EXPECT_TRUE(again.is_error());
  EXPECT_EQ(again.reason(), "keyfile-exists");
  auto still = ReadKeyFile(path, "pw");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->public_key(), sk.public_key());
}

TEST(KeyFileTest, MissingAndDamagedFiles) {
  TempDir dir;
  auto missing = ReadKeyFile(dir.path() / "nope.key", "pw");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().is_error());
  EXPECT_EQ(missing.status().reason(), "keyfile-not-found");
  EXPECT_EQ(ReadKeyFileInfo(dir.path() / "nope.key").status().reason(), "keyfile-not-found");

  const fs::path path = dir.path() / "k.key";
  ASSERT_TRUE(WriteKeyFile(path, TestKey(), "pw", kFast).ok());
  fs::resize_file(path, 100);
  EXPECT_EQ(ReadKeyFile(path, "pw").status().reason(), "keyfile-truncated");

  // A directory where a file is expected is a local error, not invalid input.
  auto dir_read = ReadKeyFile(dir.path(), "pw");
  EXPECT_TRUE(dir_read.status().is_error()) << dir_read.status().ToString();

  // Writing into a missing directory fails cleanly.
  EXPECT_TRUE(WriteKeyFile(dir.path() / "no" / "such.key", TestKey(), "pw", kFast).is_error());
}

}  // namespace
}  // namespace vt::crypto
