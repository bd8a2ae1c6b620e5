#include "common/encoding.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/test_seed.h"

namespace vt {
namespace {

Bytes Hex(std::string_view hex) {
  auto b = FromHex(hex);
  EXPECT_TRUE(b.ok()) << hex;
  return b.ok() ? *b : Bytes{};
}

template <typename F>
std::string EncodedHex(F&& put) {
  Writer w;
  put(w);
  return ToHex(w.bytes());
}

// Decodes with `get` and expects rejection with `reason`.
template <typename F>
void ExpectReject(std::string_view hex, const std::string& reason, F&& get) {
  const Bytes in = Hex(hex);
  Reader r(in);
  const Status s = get(r).status();
  EXPECT_TRUE(s.is_invalid()) << hex << " gave " << s.ToString();
  EXPECT_EQ(s.reason(), reason) << hex << " gave " << s.ToString();
}

// ---- golden bytes ---------------------------------------------------------------

TEST(Encoding, GoldenFixedWidth) {
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutU8(0xab); }), "ab");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutU16(0x1234); }), "3412");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutU32(0xdeadbeef); }), "efbeadde");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutU64(0x0102030405060708); }), "0807060504030201");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutI64(-2); }), "feffffffffffffff");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutI64(std::numeric_limits<std::int64_t>::min()); }),
            "0000000000000080");
  EXPECT_EQ(EncodedHex([](Writer& w) {
              w.PutBool(false);
              w.PutBool(true);
            }),
            "0001");
}

TEST(Encoding, GoldenVarint) {
  const std::pair<std::uint64_t, std::string_view> cases[] = {
      {0, "00"},
      {1, "01"},
      {127, "7f"},
      {128, "8001"},
      {300, "ac02"},
      {16383, "ff7f"},
      {16384, "808001"},
      {0xffffffff, "ffffffff0f"},
      {std::numeric_limits<std::uint64_t>::max(), "ffffffffffffffffff01"}};
  for (const auto& [v, hex] : cases) {
    EXPECT_EQ(EncodedHex([v = v](Writer& w) { w.PutVarint(v); }), hex) << v;
    EXPECT_EQ(VarintSize(v), hex.size() / 2) << v;
  }
}

TEST(Encoding, GoldenLengthPrefixed) {
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutString("abc"); }), "03616263");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutBytes({}); }), "00");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutFixed(Hex("0102")); }), "0102");
  Hash256 h;
  for (std::size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<std::uint8_t>(i);
  EXPECT_EQ(EncodedHex([&](Writer& w) { w.PutHash(h); }), h.Hex());
  const std::vector<std::uint32_t> v = {1, 2};
  EXPECT_EQ(EncodedHex([&](Writer& w) { w.PutVector(v, &Writer::PutU32); }), "020100000002000000");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutOptional(std::optional<std::uint8_t>(), &Writer::PutU8); }),
            "00");
  EXPECT_EQ(EncodedHex([](Writer& w) { w.PutOptional(std::optional<std::uint8_t>(5), &Writer::PutU8); }),
            "0105");
}

// A composite type following the Encode/Decode convention; its golden bytes
// are the worked example in docs/formats.md.
enum class Color : std::uint8_t { kRed = 0, kGreen = 1, kBlue = 2 };

struct Example {
  std::uint32_t version = 0;
  std::string name;
  Color color = Color::kRed;
  std::vector<Hash256> parents;
  std::optional<std::int64_t> delta;
  bool operator==(const Example&) const = default;
};

void Encode(Writer& w, const Example& e) {
  w.PutU32(e.version);
  w.PutString(e.name);
  w.PutEnum(e.color);
  w.PutVector(e.parents);
  w.PutOptional(e.delta, &Writer::PutI64);
}

Result<Example> Decode(Reader& r, DecodeAs<Example>) {
  Example e;
  VT_ASSIGN_OR_RETURN(e.version, r.GetU32());
  VT_ASSIGN_OR_RETURN(e.name, r.GetString(64));
  VT_ASSIGN_OR_RETURN(e.color, r.GetEnum(Color::kBlue));
  VT_ASSIGN_OR_RETURN(e.parents, r.GetVector<Hash256>(16));
  VT_ASSIGN_OR_RETURN(e.delta, r.GetOptional<std::int64_t>(&Reader::GetI64));
  return e;
}

Example GoldenExample() {
  Example e;
  e.version = 1;
  e.name = "vt";
  e.color = Color::kBlue;
  e.parents.resize(1);
  e.parents[0].bytes.fill(0xaa);
  e.delta = -1;
  return e;
}

const std::string kGoldenExampleHex = std::string("01000000")  // version u32
                                      + "027674"               // name "vt"
                                      + "02"                   // color kBlue
                                      + "01"                   // one parent
                                      + std::string(64, 'a')   // parent hash 0xaa..aa
                                      + "01ffffffffffffffff";  // delta present, -1 // delta = -1

TEST(Encoding, GoldenComposite) {
  const Bytes bytes = EncodeToBytes(GoldenExample());
  EXPECT_EQ(ToHex(bytes), kGoldenExampleHex);
  auto back = DecodeExact<Example>(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, GoldenExample());
}

// ---- round trips ----------------------------------------------------------------

TEST(Encoding, RoundTripEveryType) {
  Hash256 h;
  h.bytes.fill(0x5c);
  const Bytes blob = Hex("00ff10");
  Writer w(Hex("beef"));  // a prefix is kept in front
  w.PutU8(0xff);
  w.PutU16(0xffff);
  w.PutU32(0);
  w.PutU64(std::numeric_limits<std::uint64_t>::max());
  w.PutI64(std::numeric_limits<std::int64_t>::min());
  w.PutI64(std::numeric_limits<std::int64_t>::max());
  w.PutVarint(1ull << 63);
  w.PutBool(true);
  w.PutBytes(blob);
  w.PutString("");
  w.PutHash(h);
  w.PutFixed(blob);
  w.PutEnum(Color::kGreen);
  w.PutVector(std::vector<std::uint64_t>{}, &Writer::PutVarint);
  w.PutOptional(std::optional<std::string>("x"), [](Writer& ww, const std::string& s) { ww.PutString(s); });
  const Bytes bytes = std::move(w).Take();

  Reader r(bytes);
  EXPECT_EQ(ToHex(*r.GetFixed(2)), "beef");
  EXPECT_EQ(*r.GetU8(), 0xff);
  EXPECT_EQ(*r.GetU16(), 0xffff);
  EXPECT_EQ(*r.GetU32(), 0u);
  EXPECT_EQ(*r.GetU64(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(*r.GetI64(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(*r.GetI64(), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(*r.GetVarint(), 1ull << 63);
  EXPECT_EQ(*r.GetBool(), true);
  EXPECT_EQ(*r.GetBytes(), blob);
  EXPECT_EQ(*r.GetString(), "");
  EXPECT_EQ(*r.GetHash(), h);
  auto fixed = r.GetFixed(3);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(Bytes(fixed->begin(), fixed->end()), blob);
  EXPECT_EQ(fixed->data(), bytes.data() + r.position() - 3);  // a view, not a copy
  EXPECT_EQ(*r.GetEnum(Color::kBlue), Color::kGreen);
  EXPECT_TRUE(r.GetVector<std::uint64_t>(&Reader::GetVarint)->empty());
  auto opt = r.GetOptional<std::string>([](Reader& rr) { return rr.GetString(); });
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(opt->value_or("none"), "x");
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(r.Finish().ok());
}

TEST(Encoding, VarintBoundariesRoundTrip) {
  for (int bits = 0; bits <= 64; ++bits) {
    const std::uint64_t base = bits == 64 ? 0 : (std::uint64_t{1} << bits);
    for (std::uint64_t v : {base - 1, base, base + 1}) {
      Writer w;
      w.PutVarint(v);
      EXPECT_EQ(w.size(), VarintSize(v));
      Reader r(w.bytes());
      auto got = r.GetVarint();
      ASSERT_TRUE(got.ok()) << v << " " << got.status().ToString();
      EXPECT_EQ(*got, v);
      EXPECT_TRUE(r.Finish().ok());
    }
  }
}

// Random values of every type survive a round trip, and the encoding of equal
// values is equal (no hidden state in the writer).
TEST(Encoding, PropertyRandomRoundTrip) {
  std::mt19937_64 rng(test::TestSeed());
  for (int iter = 0; iter < 2000; ++iter) {
    Example e;
    e.version = static_cast<std::uint32_t>(rng());
    e.name.resize(rng() % 65);
    for (char& c : e.name) c = static_cast<char>(rng());
    e.color = static_cast<Color>(rng() % 3);
    e.parents.resize(rng() % 17);
    for (Hash256& h : e.parents)
      for (auto& b : h.bytes) b = static_cast<std::uint8_t>(rng());
    if (rng() % 2) e.delta = static_cast<std::int64_t>(rng());
    const Bytes bytes = EncodeToBytes(e);
    EXPECT_EQ(bytes, EncodeToBytes(e));
    auto back = DecodeExact<Example>(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ASSERT_EQ(*back, e);

    // Varints of random widths.
    const std::uint64_t v = rng() >> (rng() % 64);
    Writer w;
    w.PutVarint(v);
    Reader r(w.bytes());
    ASSERT_EQ(*r.GetVarint(), v);
  }
}

// Canonical: any mutation of a valid encoding either fails to decode or
// decodes to a value whose encoding is exactly the mutated bytes.
TEST(Encoding, PropertyMutationsStayCanonical) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x9e3779b97f4a7c15ull);
  const Bytes golden = EncodeToBytes(GoldenExample());
  int decoded = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes m = golden;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      switch (rng() % 3) {
        case 0:
          m[rng() % m.size()] = static_cast<std::uint8_t>(rng());
          break;
        case 1:
          m.insert(m.begin() + static_cast<long>(rng() % (m.size() + 1)), static_cast<std::uint8_t>(rng()));
          break;
        default:
          if (m.size() > 1) m.erase(m.begin() + static_cast<long>(rng() % m.size()));
          break;
      }
    }
    auto back = DecodeExact<Example>(m);
    if (!back.ok()) {
      EXPECT_TRUE(back.status().is_invalid());
      EXPECT_EQ(back.status().reason().rfind("enc-", 0), 0u) << back.status().ToString();
      continue;
    }
    ++decoded;
    ASSERT_EQ(EncodeToBytes(*back), m) << ToHex(m);
  }
  EXPECT_GT(decoded, 0);  // the property was exercised on accepted inputs too
}

// ---- every rejection path ---------------------------------------------------------

TEST(Encoding, RejectsTruncated) {
  const std::string code = "enc-truncated";
  ExpectReject("", code, [](Reader& r) { return r.GetU8(); });
  ExpectReject("34", code, [](Reader& r) { return r.GetU16(); });
  ExpectReject("010203", code, [](Reader& r) { return r.GetU32(); });
  ExpectReject("01020304050607", code, [](Reader& r) { return r.GetU64(); });
  ExpectReject("01020304050607", code, [](Reader& r) { return r.GetI64(); });
  ExpectReject("", code, [](Reader& r) { return r.GetVarint(); });
  ExpectReject("8080", code, [](Reader& r) { return r.GetVarint(); });
  ExpectReject("", code, [](Reader& r) { return r.GetBool(); });
  ExpectReject("05616263", code, [](Reader& r) { return r.GetBytes(); });
  ExpectReject("05616263", code, [](Reader& r) { return r.GetString(); });
  ExpectReject("80", code, [](Reader& r) { return r.GetBytes(); });  // inside the length
  ExpectReject(std::string(62, 'a'), code, [](Reader& r) { return r.GetHash(); });
  ExpectReject("0102", code, [](Reader& r) { return r.GetFixed(3); });
  ExpectReject("0201000000", code, [](Reader& r) { return r.GetVector<std::uint32_t>(&Reader::GetU32); });
  ExpectReject("01", code, [](Reader& r) { return r.GetOptional<std::uint32_t>(&Reader::GetU32); });
  ExpectReject(kGoldenExampleHex.substr(0, kGoldenExampleHex.size() - 2), code,
               [](Reader& r) { return Decode(r, DecodeAs<Example>{}); });
}

TEST(Encoding, RejectsNonMinimalVarint) {
  const std::string code = "enc-non-minimal-varint";
  for (std::string_view hex : {"8000", "ff00", "808000", "ff8000", "80808080808080808000"})
    ExpectReject(hex, code, [](Reader& r) { return r.GetVarint(); });
  // Also as a length or count prefix.
  ExpectReject("8000", code, [](Reader& r) { return r.GetBytes(); });
  ExpectReject("8100", code, [](Reader& r) { return r.GetVector<std::uint8_t>(&Reader::GetU8); });
}

TEST(Encoding, RejectsVarintOverflow) {
  const std::string code = "enc-varint-overflow";
  for (std::string_view hex :
       {"ffffffffffffffffff02", "ffffffffffffffffff7f", "8080808080808080808001", "ffffffffffffffffffff01"})
    ExpectReject(hex, code, [](Reader& r) { return r.GetVarint(); });
}

TEST(Encoding, RejectsLengthOverCap) {
  const std::string code = "enc-length-over-cap";
  ExpectReject("03616263", code, [](Reader& r) { return r.GetBytes(2); });
  ExpectReject("03616263", code, [](Reader& r) { return r.GetString(2); });
  ExpectReject("03616263", code, [](Reader& r) { return r.GetBytesView(2); });
  // The default cap applies before looking for the data: 16 MiB + 1 is refused
  // as too long, not as truncated.
  Writer w;
  w.PutVarint(kMaxEncodedBytes + 1);
  ExpectReject(ToHex(w.bytes()), code, [](Reader& r) { return r.GetBytes(); });
  ExpectReject("03010203", code, [](Reader& r) { return r.GetVector<std::uint8_t>(&Reader::GetU8, 2); });
  Writer big;
  big.PutVarint(kMaxEncodedCount + 1);
  ExpectReject(ToHex(big.bytes()), code, [](Reader& r) { return r.GetVector<std::uint8_t>(&Reader::GetU8); });
  // At the cap is fine.
  const Bytes ok = Hex("026162");
  Reader r(ok);
  EXPECT_TRUE(r.GetBytes(2).ok());
}

TEST(Encoding, RejectsBadBool) {
  const std::string code = "enc-bad-bool";
  ExpectReject("02", code, [](Reader& r) { return r.GetBool(); });
  ExpectReject("ff", code, [](Reader& r) { return r.GetBool(); });
  ExpectReject("0205", code, [](Reader& r) { return r.GetOptional<std::uint8_t>(&Reader::GetU8); });
}

TEST(Encoding, RejectsUnknownEnum) {
  const std::string code = "enc-unknown-enum";
  ExpectReject("03", code, [](Reader& r) { return r.GetEnum(Color::kBlue); });
  ExpectReject("8002", code, [](Reader& r) { return r.GetEnum(Color::kBlue); });  // 256 must not wrap to 0
  ExpectReject("ffffffffffffffffff01", code, [](Reader& r) { return r.GetEnum(Color::kBlue); });
  const Bytes ok = Hex("02");
  Reader r(ok);
  EXPECT_EQ(*r.GetEnum(Color::kBlue), Color::kBlue);
}

TEST(Encoding, RejectsTrailingBytes) {
  Bytes bytes = EncodeToBytes(GoldenExample());
  bytes.push_back(0);
  auto back = DecodeExact<Example>(bytes);
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(back.status().is_invalid());
  EXPECT_EQ(back.status().reason(), "enc-trailing-bytes");

  const Bytes two = Hex("0102");
  Reader r(two);
  ASSERT_TRUE(r.GetU8().ok());
  EXPECT_EQ(r.Finish().reason(), "enc-trailing-bytes");
  ASSERT_TRUE(r.GetU8().ok());
  EXPECT_TRUE(r.Finish().ok());
}

TEST(Encoding, HashVectorUsesAdlDefault) {
  std::vector<Hash256> hashes(2);
  hashes[1].bytes[31] = 7;
  Writer w;
  w.PutVector(hashes);
  EXPECT_EQ(w.size(), 1u + 64u);
  Reader r(w.bytes());
  auto back = r.GetVector<Hash256>();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, hashes);
}

}  // namespace
}  // namespace vt
