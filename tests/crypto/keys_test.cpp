#include "crypto/keys.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/encoding.h"
#include "tests/support/test_seed.h"

#ifndef VT_CRYPTO_TEST_DATA
#error "VT_CRYPTO_TEST_DATA must name tests/crypto/data"
#endif

namespace vt::crypto {
namespace {

struct Bip340Vector {
  int index;
  std::string secret_key, public_key, aux_rand, message, signature;
  bool valid;
  std::string comment;
};

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  for (char c : line) {
    if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

// tests/crypto/data/bip340_test_vectors.csv: the official BIP-340 vectors
// (see tests/crypto/data/README.md for where the file comes from).
std::vector<Bip340Vector> LoadVectors() {
  std::ifstream in(std::string(VT_CRYPTO_TEST_DATA) + "/bip340_test_vectors.csv");
  EXPECT_TRUE(in.good()) << "cannot open the BIP-340 vectors";
  std::vector<Bip340Vector> out;
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "index,secret key,public key,aux_rand,message,signature,verification result,comment");
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto f = SplitCsvLine(line);
    // The comment may itself contain commas.
    while (f.size() > 8) {
      f[7] += "," + f[8];
      f.erase(f.begin() + 8);
    }
    EXPECT_EQ(f.size(), 8u) << line;
    if (f.size() != 8) continue;
    EXPECT_TRUE(f[6] == "TRUE" || f[6] == "FALSE") << line;
    out.push_back({std::stoi(f[0]), f[1], f[2], f[3], f[4], f[5], f[6] == "TRUE", f[7]});
  }
  return out;
}

Bytes Hex(const std::string& s) {
  auto b = FromHex(s);
  EXPECT_TRUE(b.ok()) << s;
  return b.value_or(Bytes{});
}

TEST(Bip340Test, OfficialVectors) {
  const auto vectors = LoadVectors();
  ASSERT_EQ(vectors.size(), 19u);  // indices 0..18, including the variable-length messages
  int signed_count = 0;
  int invalid_count = 0;
  for (const auto& v : vectors) {
    SCOPED_TRACE("BIP-340 vector " + std::to_string(v.index) + " " + v.comment);
    const Bytes msg = Hex(v.message);
    const Bytes pub = Hex(v.public_key);
    const Bytes sig = Hex(v.signature);
    EXPECT_EQ(VerifyBytes(pub, msg, sig), v.valid);
    if (!v.secret_key.empty()) {
      auto sk = SecretKey::FromBytes(Hex(v.secret_key));
      ASSERT_TRUE(sk.ok()) << sk.status().ToString();
      EXPECT_EQ(sk->public_key().Hex(), ToHex(pub));
      const Bytes aux_bytes = Hex(v.aux_rand);
      ASSERT_EQ(aux_bytes.size(), 32u);
      std::array<std::uint8_t, 32> aux{};
      std::copy(aux_bytes.begin(), aux_bytes.end(), aux.begin());
      auto made = SignWithAux(*sk, msg, aux);
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      EXPECT_EQ(made->Hex(), ToHex(sig));
      ++signed_count;
    }
    if (!v.valid) {
      ++invalid_count;
      // The same verdict through the typed API where the key parses.
      auto pk = PublicKey::FromBytes(pub);
      auto s = Signature::FromBytes(sig);
      ASSERT_TRUE(s.ok());
      if (pk.ok()) {
        EXPECT_FALSE(Verify(*pk, msg, *s));
      }
    }
  }
  EXPECT_EQ(signed_count, 8);
  EXPECT_EQ(invalid_count, 10);
}

TEST(Bip340Test, InvalidPublicKeysAreRejectedOnParse) {
  // Vector 5 (not on the curve) and 14 (x >= field size).
  EXPECT_EQ(PublicKey::FromHex("EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34")
                .status()
                .reason(),
            "pubkey-invalid");
  EXPECT_EQ(PublicKey::FromHex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30")
                .status()
                .reason(),
            "pubkey-invalid");
  EXPECT_EQ(PublicKey::FromBytes(Bytes(31, 1)).status().reason(), "pubkey-bad-length");
  EXPECT_EQ(PublicKey::FromHex("zz").status().reason(), "pubkey-bad-hex");
}

TEST(KeysTest, SecretKeyValidation) {
  EXPECT_EQ(SecretKey::FromBytes(Bytes(32, 0)).status().reason(), "seckey-invalid");
  // The curve order n itself is not a valid secret; n - 1 is.
  EXPECT_EQ(SecretKey::FromBytes(Hex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141"))
                .status()
                .reason(),
            "seckey-invalid");
  EXPECT_TRUE(
      SecretKey::FromBytes(Hex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364140")).ok());
  EXPECT_EQ(SecretKey::FromBytes(Bytes(33, 1)).status().reason(), "seckey-bad-length");
}

TEST(KeysTest, GeneratedKeysDiffer) {
  auto a = SecretKey::Generate();
  auto b = SecretKey::Generate();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->public_key(), b->public_key());
  EXPECT_NE(a->address(), b->address());
}

TEST(KeysTest, SignVerifyRoundTripAndTampering) {
  std::mt19937_64 rng(test::TestSeed());
  auto sk = SecretKey::Generate();
  auto other = SecretKey::Generate();
  ASSERT_TRUE(sk.ok() && other.ok());
  const PublicKey& pk = sk->public_key();
  for (std::size_t len : {0, 1, 31, 32, 33, 100, 1000}) {
    Bytes msg(len);
    for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
    auto sig = Sign(*sk, msg);
    ASSERT_TRUE(sig.ok()) << sig.status().ToString();
    EXPECT_TRUE(Verify(pk, msg, *sig)) << len;
    EXPECT_TRUE(VerifyBytes(pk.span(), msg, sig->span()));
    // Fresh aux randomness: two signatures of one message differ, both valid.
    auto sig2 = Sign(*sk, msg);
    ASSERT_TRUE(sig2.ok());
    EXPECT_NE(*sig, *sig2);
    EXPECT_TRUE(Verify(pk, msg, *sig2));
    // Tampering with anything fails.
    if (len > 0) {
      Bytes bad = msg;
      bad[rng() % len] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      EXPECT_FALSE(Verify(pk, bad, *sig));
    }
    Bytes longer = msg;
    longer.push_back(0);
    EXPECT_FALSE(Verify(pk, longer, *sig));
    for (int k = 0; k < 8; ++k) {
      Signature bad = *sig;
      bad.bytes[rng() % 64] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      EXPECT_FALSE(Verify(pk, msg, bad));
    }
    EXPECT_FALSE(Verify(other->public_key(), msg, *sig));
    EXPECT_FALSE(VerifyBytes(pk.span(), msg, sig->span().first(63)));
  }
}

TEST(KeysTest, DeterministicSigningWithAux) {
  auto sk = SecretKey::FromBytes(Hex("0000000000000000000000000000000000000000000000000000000000000003"));
  ASSERT_TRUE(sk.ok());
  const std::array<std::uint8_t, 32> zero{};
  auto s1 = SignWithAux(*sk, AsBytes("message"), zero);
  auto s2 = SignWithAux(*sk, AsBytes("message"), zero);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(*s1, *s2);
  std::array<std::uint8_t, 32> one{};
  one[31] = 1;
  auto s3 = SignWithAux(*sk, AsBytes("message"), one);
  ASSERT_TRUE(s3.ok());
  EXPECT_NE(*s1, *s3);
}

// Expected value from tests/crypto/data/golden_vectors.py:
// TaggedHash("veritrain/address/v1", pubkey)[:20] for the key of BIP-340 vector 0.
TEST(KeysTest, AddressGolden) {
  auto pk = PublicKey::FromHex("F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9");
  ASSERT_TRUE(pk.ok());
  EXPECT_EQ(pk->address().Hex(), "447b93b21b6f037783542dc191b77d8e4c31baf9");
  auto parsed = Address::FromHex("447b93b21b6f037783542dc191b77d8e4c31baf9");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, pk->address());
  EXPECT_EQ(Address::FromHex("447b93").status().reason(), "address-bad-length");
  EXPECT_EQ(Address::FromHex("xx").status().reason(), "address-bad-hex");
}

TEST(KeysTest, SecretKeyIsNotCopyableAndNeverPrinted) {
  static_assert(!std::is_copy_constructible_v<SecretKey>);
  static_assert(!std::is_copy_assignable_v<SecretKey>);
  static_assert(std::is_nothrow_move_constructible_v<SecretKey>);
  auto sk = SecretKey::FromBytes(Hex("B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF"));
  ASSERT_TRUE(sk.ok());
  std::ostringstream os;
  os << *sk;
  const std::string text = os.str();
  EXPECT_EQ(text.find("b7e151"), std::string::npos);
  EXPECT_EQ(text.find("B7E151"), std::string::npos);
  EXPECT_NE(text.find("redacted"), std::string::npos);
  EXPECT_NE(text.find(sk->public_key().Hex()), std::string::npos);

  SecretKey clone = sk->Clone();
  EXPECT_EQ(clone.public_key(), sk->public_key());
  EXPECT_TRUE(std::equal(clone.UnsafeSecretBytes().begin(), clone.UnsafeSecretBytes().end(),
                         sk->UnsafeSecretBytes().begin()));
  // Moving wipes the source.
  SecretKey moved = std::move(clone);
  EXPECT_EQ(moved.public_key(), sk->public_key());
  for (std::uint8_t b : clone.UnsafeSecretBytes()) EXPECT_EQ(b, 0);  // NOLINT(bugprone-use-after-move)
}

TEST(KeysTest, CanonicalEncodings) {
  auto pk = PublicKey::FromHex("DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659");
  ASSERT_TRUE(pk.ok());
  const Bytes enc = EncodeToBytes(*pk);
  EXPECT_EQ(ToHex(enc), "dff1d77f2a671c5f36183726db2341be58feae1da2deced843240f7b502ba659");
  auto dec = DecodeExact<PublicKey>(enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, *pk);
  EXPECT_EQ(DecodeExact<PublicKey>(Hex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC30"))
                .status()
                .reason(),
            "pubkey-invalid");
  EXPECT_EQ(DecodeExact<PublicKey>(ByteSpan(enc).first(31)).status().reason(), "enc-truncated");

  const Address a = pk->address();
  EXPECT_EQ(EncodeToBytes(a).size(), 20u);
  auto da = DecodeExact<Address>(EncodeToBytes(a));
  ASSERT_TRUE(da.ok());
  EXPECT_EQ(*da, a);

  Signature s;
  s.bytes.fill(0x5a);
  auto ds = DecodeExact<Signature>(EncodeToBytes(s));
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(*ds, s);
  Bytes trailing = EncodeToBytes(s);
  trailing.push_back(0);
  EXPECT_EQ(DecodeExact<Signature>(trailing).status().reason(), "enc-trailing-bytes");
}

}  // namespace
}  // namespace vt::crypto
