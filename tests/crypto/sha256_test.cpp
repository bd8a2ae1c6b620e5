#include "crypto/sha256.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "crypto/tags.h"
#include "tests/support/test_seed.h"

namespace vt::crypto {
namespace {

struct KnownAnswer {
  std::string message;
  const char* digest;
};

// FIPS 180-2 / NIST CSRC example vectors for SHA-256 (also checked with
// Python's hashlib).
std::vector<KnownAnswer> NistVectors() {
  return {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",  // 448 bits
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopq"
       "rstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},  // 896 bits
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
}

TEST(Sha256Test, NistVectorsOneShot) {
  for (const auto& v : NistVectors()) {
    EXPECT_EQ(Sha256Digest(v.message).Hex(), v.digest) << "message length " << v.message.size();
  }
}

TEST(Sha256Test, NistVectorsStreaming) {
  Sha256 h;
  for (const auto& v : NistVectors()) {
    // Reused object: Finalize resets it for the next message.
    EXPECT_EQ(h.Update(v.message).Finalize().Hex(), v.digest);
  }
  // One million 'a' fed one byte at a time, as in the NIST description.
  for (int i = 0; i < 1000000; ++i) h.Update(std::string_view("a"));
  EXPECT_EQ(h.Finalize().Hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, StreamingEqualsOneShotForRandomSplits) {
  std::mt19937_64 rng(test::TestSeed());
  Sha256 h;
  for (int round = 0; round < 200; ++round) {
    const std::size_t size = rng() % 3000;
    Bytes msg(size);
    for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
    std::size_t pos = 0;
    while (pos < size) {
      const std::size_t take = std::min<std::size_t>(size - pos, rng() % 130);
      h.Update(ByteSpan(msg).subspan(pos, take));
      pos += take;
    }
    ASSERT_EQ(h.Finalize(), Sha256Digest(msg)) << "size " << size;
  }
}

TEST(Sha256Test, ResetCopyAndMove) {
  Sha256 h;
  h.Update(std::string_view("garbage"));
  h.Reset();
  EXPECT_EQ(h.Update(std::string_view("abc")).Finalize(), Sha256Digest("abc"));

  // A copy continues independently from the same midstate.
  Sha256 a;
  a.Update(std::string_view("ab"));
  Sha256 b = a;
  a.Update(std::string_view("c"));
  b.Update(std::string_view("x"));
  EXPECT_EQ(a.Finalize(), Sha256Digest("abc"));
  EXPECT_EQ(b.Finalize(), Sha256Digest("abx"));

  // A moved-to object keeps the state; the moved-from one is empty and usable.
  Sha256 c;
  c.Update(std::string_view("ab"));
  Sha256 d = std::move(c);
  d.Update(std::string_view("c"));
  EXPECT_EQ(d.Finalize(), Sha256Digest("abc"));
  c.Update(std::string_view("abc"));  // NOLINT(bugprone-use-after-move): documented as valid
  EXPECT_EQ(c.Finalize(), Sha256Digest("abc"));
}

// Expected values from tests/crypto/data/golden_vectors.py (Python hashlib:
// sha256(sha256(tag) + sha256(tag) + data)).
TEST(TaggedHashTest, GoldenVectors) {
  EXPECT_EQ(TaggedHash("veritrain/test/v1", {}).Hex(),
            "25c146b8069a6e066144c2021a03665d5fa9823180203ce24ab02a3030ce1fae");
  EXPECT_EQ(TaggedHash("veritrain/test/v1", AsBytes("abc")).Hex(),
            "fef86e6b1dcb5c9578978ca0d063014bbf2e598e6569da4ebdf34893effd136c");
  EXPECT_EQ(TaggedHash("BIP0340/challenge", {}).Hex(),
            "c216d352f5818b7b4beacd4ae0a26fe888080823d2a598856661bcd54f1b3713");
}

TEST(TaggedHashTest, MatchesDefinitionAndParts) {
  std::mt19937_64 rng(test::TestSeed() + 1);
  const TaggedHasher hasher("veritrain/test/v1");
  EXPECT_EQ(hasher.tag(), "veritrain/test/v1");
  const Hash256 t = Sha256Digest("veritrain/test/v1");
  for (int round = 0; round < 100; ++round) {
    Bytes msg(rng() % 200);
    for (auto& b : msg) b = static_cast<std::uint8_t>(rng());
    const Hash256 expected = Sha256().Update(t.span()).Update(t.span()).Update(msg).Finalize();
    ASSERT_EQ(hasher.Hash(msg), expected);
    ASSERT_EQ(TaggedHash("veritrain/test/v1", msg), expected);
    const std::size_t cut = msg.empty() ? 0 : rng() % msg.size();
    ASSERT_EQ(hasher.Hash({ByteSpan(msg).first(cut), ByteSpan(msg).subspan(cut)}), expected);
    ASSERT_EQ(hasher.Start().Update(msg).Finalize(), expected);
  }
  // Different tags separate domains.
  EXPECT_NE(TaggedHash("veritrain/a/v1", AsBytes("x")), TaggedHash("veritrain/b/v1", AsBytes("x")));
}

TEST(TaggedHashTest, ConcurrentUseOfOneHasher) {
  const TaggedHasher hasher(tags::kTensor);
  const Hash256 expected = hasher.Hash(AsBytes("payload"));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) mismatches[t] += hasher.Hash(AsBytes("payload")) != expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(TagsTest, AllDistinctAndVersioned) {
  std::set<std::string_view> seen;
  for (std::string_view tag : tags::kAll) {
    EXPECT_TRUE(seen.insert(tag).second) << "duplicate tag " << tag;
    EXPECT_EQ(tag.substr(0, 10), "veritrain/") << tag;
    // Ends in a version "/v<n>" (a changed encoding gets the next one, e.g. veritrain/tensor/v2).
    const std::string_view version = tag.substr(tag.rfind('/') + 1);
    EXPECT_TRUE(version.size() >= 2 && version[0] == 'v' &&
                version.find_first_not_of("0123456789", 1) == std::string_view::npos)
        << tag;
  }
}

}  // namespace
}  // namespace vt::crypto
