#include "common/result.h"

#include <gtest/gtest.h>

#include "common/bytes.h"

namespace vt {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return Status::Invalid("not-positive", "x must be > 0");
  return x;
}

Result<int> Doubled(int x) {
  VT_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return 2 * v;
}

Status CheckBoth(int a, int b) {
  VT_TRY(ParsePositive(a).status());
  VT_TRY(ParsePositive(b).status());
  return Status::Ok();
}

TEST(Result, HoldsValueOrStatus) {
  auto good = Doubled(21);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  EXPECT_TRUE(good.status().ok());

  auto bad = Doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is_invalid());
  EXPECT_EQ(bad.status().reason(), "not-positive");
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(Status, KindsStayApart) {
  EXPECT_EQ(CheckBoth(1, 2).ToString(), "ok");
  Status s = CheckBoth(1, 0);
  EXPECT_TRUE(s.is_invalid());
  EXPECT_FALSE(s.is_error());
  Status e = Status::Error("io", "disk full").WithContext("writing /x");
  EXPECT_TRUE(e.is_error());
  EXPECT_EQ(e.reason(), "io");
  EXPECT_EQ(e.ToString(), "error: io (writing /x: disk full)");
}

TEST(Bytes, HexRoundTripAndRejects) {
  Bytes b = {0x00, 0x7f, 0xff, 0x10};
  EXPECT_EQ(ToHex(b), "007fff10");
  auto back = FromHex("007FfF10");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, b);
  EXPECT_EQ(FromHex("abc").status().reason(), "hex-odd-length");
  EXPECT_EQ(FromHex("zz").status().reason(), "hex-bad-digit");
  EXPECT_EQ(Hash256::FromHex("00").status().reason(), "hash-bad-length");
  auto h = Hash256::FromHex(std::string(64, 'a'));
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->IsZero());
  EXPECT_TRUE(Hash256{}.IsZero());
}

}  // namespace
}  // namespace vt
