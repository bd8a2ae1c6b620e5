// safetensors: round trips, the exact byte layout, files in the reference
// implementation's style, F16/BF16 widening, and hostile headers.

#include "worker/safetensors.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "tests/worker/test_util.h"

namespace vt::worker {
namespace {

// A file from a header string and raw data bytes.
Bytes File(const std::string& header, const Bytes& data) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Bytes F32Bytes(std::initializer_list<float> values) {
  Bytes out;
  for (float v : values) {
    const auto bits = std::bit_cast<std::uint32_t>(v);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
  }
  return out;
}

TEST(SafetensorsTest, RoundTripWithMetadata) {
  TensorMap tensors;
  tensors.emplace("w", kernels::Tensor({2, 3}, {1, 2, 3, 4, 5, -0.0f}));
  tensors.emplace("b", kernels::Tensor({3}, {0.5f, std::numeric_limits<float>::infinity(), 1e-40f}));
  tensors.emplace("scalar", kernels::Tensor({}, {7.0f}));
  tensors.emplace("empty", kernels::Tensor({0, 4}));
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"veritrain.step", "12"}};
  const Bytes file = EncodeSafetensors(tensors, meta);
  auto back = DecodeSafetensors(file);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->metadata, meta);
  ASSERT_EQ(back->tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(back->tensors.count(name)) << name;
    EXPECT_TRUE(back->tensors.at(name).BitwiseEqual(t)) << name;
  }
  // Header padded so that the data starts 8-byte aligned.
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(SafetensorsTest, GoldenByteLayout) {
  TensorMap tensors;
  tensors.emplace("b", kernels::Tensor({}, {0.5f}));
  tensors.emplace("a", kernels::Tensor({2}, {1.0f, -2.0f}));
  const Bytes file = EncodeSafetensors(tensors);
  // Names sorted, data packed in name order, compact JSON with sorted keys,
  // padded with spaces to a multiple of 8 (107 + 5 = 112 bytes).
  const std::string header =
      R"({"a":{"data_offsets":[0,8],"dtype":"F32","shape":[2]},"b":{"data_offsets":[8,12],"dtype":"F32","shape":[]}})"
      "     ";
  ASSERT_EQ(header.size(), 112u);
  const Bytes expected = File(header, F32Bytes({1.0f, -2.0f, 0.5f}));
  EXPECT_EQ(ToHex(file), ToHex(expected));
  EXPECT_EQ(ToHex(Bytes(file.begin(), file.begin() + 8)), "7000000000000000");
  EXPECT_EQ(ToHex(Bytes(file.end() - 12, file.end())), "0000803f000000c00000003f");
}

TEST(SafetensorsTest, ReadsReferenceStyleFiles) {
  // Metadata first, keys in another order, spaces inside, data in another
  // order than the names.
  const std::string header =
      R"({"__metadata__": {"format": "pt"}, "z": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
      R"( "a": {"shape": [2, 1], "data_offsets": [4, 12], "dtype": "F32"}}   )";
  auto r = DecodeSafetensors(File(header, F32Bytes({9.0f, 1.0f, 2.0f})));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metadata.at("format"), "pt");
  EXPECT_EQ(r->tensors.at("z")[0], 9.0f);
  EXPECT_EQ(r->tensors.at("a").shape(), (kernels::Shape{2, 1}));
  EXPECT_EQ(r->tensors.at("a")[1], 2.0f);
}

TEST(SafetensorsTest, WidensF16AndBf16Exactly) {
  // F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), 2^-14 (smallest normal), +inf, -0
  const std::vector<std::uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x7c00, 0x8000};
  // BF16: 1, -3.0, the bits of 1e38 truncated
  const std::vector<std::uint16_t> bf = {0x3f80, 0xc040, 0x7e96};
  Bytes data;
  for (auto h : halves) data.push_back(static_cast<std::uint8_t>(h)), data.push_back(static_cast<std::uint8_t>(h >> 8));
  for (auto h : bf) data.push_back(static_cast<std::uint8_t>(h)), data.push_back(static_cast<std::uint8_t>(h >> 8));
  const std::string header = R"({"h":{"dtype":"F16","shape":[7],"data_offsets":[0,14]},)"
                             R"("g":{"dtype":"BF16","shape":[3],"data_offsets":[14,20]}})";
  auto r = DecodeSafetensors(File(header, data));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& h = r->tensors.at("h");
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], std::ldexp(1.0f, -14));
  EXPECT_EQ(h[5], std::numeric_limits<float>::infinity());
  EXPECT_EQ(std::bit_cast<std::uint32_t>(h[6]), 0x80000000u);
  const auto& g = r->tensors.at("g");
  EXPECT_EQ(g[0], 1.0f);
  EXPECT_EQ(g[1], -3.0f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(g[2]), 0x7e960000u);
}

TEST(SafetensorsTest, HostileHeaders) {
  const Bytes four = F32Bytes({1.0f});
  const Bytes eight = F32Bytes({1.0f, 2.0f});
  struct Case {
    const char* reason;
    Bytes file;
  };
  auto entry = [](const std::string& name, const std::string& body) { return "\"" + name + "\":{" + body + "}"; };
  const std::string ok1 = R"("dtype":"F32","shape":[1],"data_offsets":[0,4])";
  std::vector<Case> cases = {
      {"safetensors-truncated", Bytes{1, 2, 3}},
      {"safetensors-truncated", Bytes{8, 0, 0, 0, 0, 0, 0, 0, '{', '}'}},  // 8 header bytes promised, 2 present
      {"safetensors-bad-header-length", [] {
         Bytes b = {0, 0, 0, 0, 0, 0, 0, 0x01};  // 2^56
         return b;
       }()},
      {"safetensors-bad-header-length", [] {
         Bytes b(8, 0);
         const std::uint64_t n = kMaxSafetensorsHeader + 1;
         for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
         return b;
       }()},
      {"safetensors-bad-header", File("", {})},
      {"safetensors-bad-header", File("{nope", four)},
      {"safetensors-bad-header", File("[]", {})},
      {"safetensors-bad-header", File(" {}", {})},
      {"safetensors-bad-header", File("{\"a\":1}", {})},
      {"safetensors-bad-header", File("{" + entry("", ok1) + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":[1])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", ok1 + R"(,"extra":1)") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":5,"shape":[1],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":[1.0],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":1,"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[0])") + "}", four)},
      {"safetensors-bad-header", File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[0,-4])") + "}", four)},
      {"safetensors-bad-header", File("{\"__metadata__\":{\"k\":1}}", {})},
      {"safetensors-bad-header", File("{\"__metadata__\":[]}", {})},
      {"safetensors-bad-header", File("{\"a\xff\":{" + ok1 + "}}", four)},  // invalid UTF-8
      {"safetensors-bad-header", File("{" + entry("a", ok1) + "} x", four)},  // trailing garbage
      {"safetensors-duplicate-name", File("{" + entry("a", ok1) + "," + entry("a", ok1) + "}", four)},
      {"safetensors-duplicate-name",
       File("{" + entry("a", R"("dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-unsupported-dtype", File("{" + entry("a", R"("dtype":"I64","shape":[1],"data_offsets":[0,8])") + "}", eight)},
      {"safetensors-unsupported-dtype", File("{" + entry("a", R"("dtype":"F64","shape":[1],"data_offsets":[0,8])") + "}", eight)},
      {"safetensors-bad-offsets", File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[4,0])") + "}", four)},
      {"safetensors-bad-offsets", File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[0,8])") + "}", four)},
      {"safetensors-bad-offsets", File("{" + entry("a", R"("dtype":"F32","shape":[2],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-offsets",
       File("{" + entry("a", R"("dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4])") + "}", four)},
      {"safetensors-bad-offsets",
       File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615])") + "}", four)},
      {"safetensors-overlap",
       File("{" + entry("a", ok1) + "," + entry("b", R"("dtype":"F32","shape":[2],"data_offsets":[0,8])") + "}", eight)},
      {"safetensors-hole", File("{" + entry("a", R"("dtype":"F32","shape":[1],"data_offsets":[4,8])") + "}", eight)},
      {"safetensors-hole", File("{" + entry("a", ok1) + "}", eight)},  // 4 bytes after the last tensor
      {"safetensors-hole", File("{}", four)},
  };
  for (const Case& c : cases) {
    const Status st = DecodeSafetensors(c.file).status();
    EXPECT_TRUE(st.is_invalid()) << c.reason << " / " << std::string(c.file.begin(), c.file.end());
    EXPECT_EQ(st.reason(), c.reason) << st.ToString() << " for " << std::string(c.file.begin(), c.file.end());
  }
  // The empty file of tensors is fine, and so are zero-length tensors side by side.
  EXPECT_TRUE(DecodeSafetensors(File("{}", {})).ok());
  EXPECT_TRUE(DecodeSafetensors(File(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)"
                                     R"("b":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}})",
                                     {}))
                  .ok());
}

TEST(SafetensorsTest, TruncatedAtEveryOffset) {
  TensorMap tensors;
  tensors.emplace("w", kernels::Tensor({3}, {1, 2, 3}));
  const Bytes file = EncodeSafetensors(tensors);
  for (std::size_t n = 0; n < file.size(); ++n) {
    const Status st = DecodeSafetensors(ByteSpan(file.data(), n)).status();
    EXPECT_TRUE(st.is_invalid()) << n;
    // Inside the header: truncated; inside the data: the offsets overrun it.
    EXPECT_TRUE(st.reason() == "safetensors-truncated" || st.reason() == "safetensors-bad-offsets") << st.ToString();
  }
}

TEST(SafetensorsTest, SaveAndLoadFiles) {
  test::TempDir dir;
  TensorMap tensors;
  tensors.emplace("layer.weight", kernels::Tensor({2, 2}, {1, 2, 3, 4}));
  ASSERT_TRUE(SaveSafetensors(dir / "model.safetensors", tensors, {{"step", "5"}}).ok());
  // Overwrite atomically with different content.
  tensors.at("layer.weight")[0] = 9;
  ASSERT_TRUE(SaveSafetensors(dir / "model.safetensors", tensors).ok());
  auto r = LoadSafetensors(dir / "model.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->tensors.at("layer.weight")[0], 9.0f);
  EXPECT_TRUE(r->metadata.empty());
  // Only the file itself is left (no temporary files).
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);

  const Status missing = LoadSafetensors(dir / "nope.safetensors").status();
  EXPECT_TRUE(missing.is_error());
  EXPECT_EQ(missing.reason(), "file-not-found");
  const Status no_dir = SaveSafetensors(dir / "no" / "such" / "dir.safetensors", tensors);
  EXPECT_TRUE(no_dir.is_error());
  EXPECT_EQ(no_dir.reason(), "file-write-failed");
  test::WriteBytes(dir / "bad.safetensors", Bytes{1, 2});
  const Status bad = LoadSafetensors(dir / "bad.safetensors").status();
  EXPECT_EQ(bad.reason(), "safetensors-truncated");
  EXPECT_NE(bad.detail().find("bad.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace vt::worker
