// Strict whole numbers (common/parse_number.h) and the CLI11 options built on
// them (common/cli_number.h): no negative wrap-around, no overflow, no
// octal/hex/sign/space surprises — what `--amount -1` used to turn into 2^64-1.
#include "common/parse_number.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "common/cli_number.h"
#include "tests/support/test_seed.h"

namespace vt {
namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::int64_t kI64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();

TEST(ParseNumber, UnsignedAcceptsPlainDecimalOnly) {
  EXPECT_EQ(*ParseUnsigned("0"), 0u);
  EXPECT_EQ(*ParseUnsigned("42"), 42u);
  EXPECT_EQ(*ParseUnsigned("007"), 7u) << "leading zeros are decimal, not octal";
  EXPECT_EQ(*ParseUnsigned("18446744073709551615"), kU64Max);
  struct Bad {
    const char* text;
    const char* reason;
  };
  for (const Bad& b : {Bad{"", "number-empty"}, Bad{"-1", "number-negative"}, Bad{"-0", "number-negative"},
                       Bad{"18446744073709551616", "number-out-of-range"},
                       Bad{"99999999999999999999999", "number-out-of-range"}, Bad{"+1", "number-not-decimal"},
                       Bad{" 1", "number-not-decimal"}, Bad{"1 ", "number-not-decimal"},
                       Bad{"0x10", "number-not-decimal"}, Bad{"1e3", "number-not-decimal"},
                       Bad{"1.0", "number-not-decimal"}, Bad{"1_000", "number-not-decimal"},
                       Bad{"12a", "number-not-decimal"}}) {
    auto r = ParseUnsigned(b.text);
    ASSERT_FALSE(r.ok()) << "'" << b.text << "' accepted as " << *r;
    EXPECT_EQ(r.status().reason(), b.reason) << "'" << b.text << "'";
    EXPECT_FALSE(r.status().detail().empty()) << "the error says what is accepted";
  }
  EXPECT_EQ(ParseUnsigned("11", 10).status().reason(), "number-out-of-range");
  EXPECT_EQ(*ParseUnsigned("10", 10), 10u);
}

TEST(ParseNumber, SignedBoundsAndMinusZero) {
  EXPECT_EQ(*ParseSigned("-9223372036854775808"), kI64Min);
  EXPECT_EQ(*ParseSigned("9223372036854775807"), kI64Max);
  EXPECT_EQ(*ParseSigned("-0"), 0);
  EXPECT_EQ(ParseSigned("-9223372036854775809").status().reason(), "number-out-of-range");
  EXPECT_EQ(ParseSigned("9223372036854775808").status().reason(), "number-out-of-range");
  EXPECT_EQ(ParseSigned("-").status().reason(), "number-not-decimal");
  EXPECT_EQ(ParseSigned("--1").status().reason(), "number-not-decimal");
  EXPECT_EQ(ParseSigned("0", 1, 1024).status().reason(), "number-out-of-range");
  EXPECT_EQ(ParseSigned("-5", 1, 1024).status().reason(), "number-out-of-range");
  EXPECT_EQ(*ParseSigned("1024", 1, 1024), 1024);
}

// Property: every value's decimal text parses back to it; any text with a
// character other than a digit is refused; every value above max is refused.
TEST(ParseNumber, RandomRoundTripsAndRefusals) {
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t v = rng() >> (rng() % 64);
    const std::string text = std::to_string(v);
    ASSERT_EQ(*ParseUnsigned(text), v);
    const std::uint64_t max = rng() >> (rng() % 64);
    ASSERT_EQ(ParseUnsigned(text, max).ok(), v <= max) << text << " max " << max;
    const std::int64_t s = static_cast<std::int64_t>(rng());
    ASSERT_EQ(*ParseSigned(std::to_string(s)), s);
    std::string garbled = text;
    const char junk[] = {'-', '+', ' ', 'x', '.', 'e', '\0', '/', ':'};
    garbled.insert(garbled.begin() + static_cast<std::ptrdiff_t>(1 + rng() % garbled.size()),
                   junk[rng() % sizeof(junk)]);
    ASSERT_FALSE(ParseUnsigned(garbled).ok()) << "'" << garbled << "'";
  }
}

// The CLI11 glue: the option is refused at parse time with the option's name.
TEST(CliNumber, NegativeAndOverflowingOptionsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    bool ok;
    std::uint64_t amount;
  };
  for (const Case& c : {Case{{"--amount", "5"}, true, 5}, Case{{"--amount", "-1"}, false, 0},
                        Case{{"--amount=-1"}, false, 0}, Case{{"--amount", "18446744073709551616"}, false, 0},
                        Case{{"--amount", "0x10"}, false, 0}, Case{{"--amount", "010"}, true, 10},
                        Case{{"--amount", "0"}, false, 0}}) {
    CLI::App app;
    std::uint64_t amount = 0;
    std::optional<std::uint32_t> step;
    cli::AddNumber(&app, "--amount", amount, "amount", std::uint64_t{1});
    cli::AddNumber(&app, "--step", step, "step");
    std::vector<std::string> argv = c.args;
    std::reverse(argv.begin(), argv.end());  // CLI11 takes them reversed
    std::string error;
    try {
      app.parse(argv);
    } catch (const CLI::ParseError& e) {
      error = e.what();
    }
    EXPECT_EQ(error.empty(), c.ok) << c.args.back() << ": " << error;
    if (c.ok) {
      EXPECT_EQ(amount, c.amount);
    } else {
      EXPECT_NE(error.find("--amount"), std::string::npos) << error;
    }
  }
  CLI::App app;
  std::optional<std::uint32_t> step;
  cli::AddNumber(&app, "--step", step, "step");
  std::vector<std::string> argv{"4294967296", "--step"};
  EXPECT_THROW(app.parse(argv), CLI::ParseError) << "beyond the option's own type (u32)";
  std::vector<std::string> ok{"4294967295", "--step"};
  app.parse(ok);
  EXPECT_EQ(step, 4294967295u);
}

}  // namespace
}  // namespace vt
