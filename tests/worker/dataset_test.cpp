// Dataset loaders (IDX, CIFAR-10, byte text), gzip handling, every corrupt-file
// path, the synthetic generator and the dataset commitment.

#include "worker/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "crypto/merkle.h"
#include "tests/support/test_seed.h"
#include "tests/worker/test_util.h"
#include "kernels/tensor_codec.h"

namespace vt::worker {
namespace {

using test::Gzip;
using test::TempDir;
using test::WriteBytes;

// IDX bytes: magic 00 00 08 rank, big-endian dims, then `payload`.
Bytes Idx(const std::vector<std::uint32_t>& dims, const Bytes& payload, std::uint8_t type = 0x08) {
  Bytes b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    b.push_back(static_cast<std::uint8_t>(d >> 24));
    b.push_back(static_cast<std::uint8_t>(d >> 16));
    b.push_back(static_cast<std::uint8_t>(d >> 8));
    b.push_back(static_cast<std::uint8_t>(d));
  }
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Five 3×4 images with pixel (i, j) = 10·i + j, labels 0, 1, 2, 0, 4.
struct TinyIdx {
  Bytes images;
  Bytes labels;
  TinyIdx() {
    Bytes pix;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 12; ++j) pix.push_back(static_cast<std::uint8_t>(10 * i + j));
    images = Idx({5, 3, 4}, pix);
    labels = Idx({5}, {0, 1, 2, 0, 4});
  }
};

void ExpectTinyIdx(const Dataset& d) {
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d.input_shape(), (kernels::Shape{3, 4}));
  EXPECT_EQ(d.target_shape(), kernels::Shape{});
  EXPECT_EQ(d.num_classes(), 5u);
  const Example e = d.Get(3);
  EXPECT_EQ(e.input.shape(), (kernels::Shape{3, 4}));
  EXPECT_EQ(e.input[0], 30.0f / 255.0f);
  EXPECT_EQ(e.input[11], 41.0f / 255.0f);
  EXPECT_EQ(e.target.numel(), 1);
  EXPECT_EQ(e.target[0], 0.0f);
  EXPECT_EQ(d.Get(4).target[0], 4.0f);
}

Status ParseStatus(const Bytes& images, const Bytes& labels) { return ParseIdx(images, labels).status(); }

TEST(IdxTest, ParsesPlainAndGzipFiles) {
  TempDir dir;
  const TinyIdx tiny;
  WriteBytes(dir / "img", tiny.images);
  WriteBytes(dir / "lab", tiny.labels);
  WriteBytes(dir / "img.gz", Gzip(tiny.images));
  WriteBytes(dir / "lab.gz", Gzip(tiny.labels));
  auto plain = LoadIdx(dir / "img", dir / "lab");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  ExpectTinyIdx(*plain);
  auto gz = LoadIdx(dir / "img.gz", dir / "lab.gz");
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  ExpectTinyIdx(*gz);
  EXPECT_EQ(plain->Root(), gz->Root());

  auto limited = LoadIdx(dir / "img.gz", dir / "lab", 2);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_EQ(limited->size(), 2u);
  EXPECT_EQ(limited->num_classes(), 2u);
}

TEST(IdxTest, LoadMnistLikeFindsGzOrPlainFiles) {
  TempDir dir;
  const TinyIdx tiny;
  WriteBytes(dir / "t10k-images-idx3-ubyte.gz", Gzip(tiny.images));
  WriteBytes(dir / "t10k-labels-idx1-ubyte", tiny.labels);
  auto d = LoadMnistLike(dir.path(), "t10k");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ExpectTinyIdx(*d);
  const Status missing = LoadMnistLike(dir.path(), "train").status();
  EXPECT_TRUE(missing.is_error());
  EXPECT_EQ(missing.reason(), "file-not-found");
}

TEST(IdxTest, MissingFileIsAnError) {
  TempDir dir;
  const Status st = LoadIdx(dir / "nope", dir / "nope2").status();
  EXPECT_TRUE(st.is_error());
  EXPECT_EQ(st.reason(), "file-not-found");
  EXPECT_NE(st.detail().find("nope"), std::string::npos) << st.ToString();
}

TEST(IdxTest, TruncatedAtEveryOffset) {
  const TinyIdx tiny;
  for (std::size_t n = 0; n < tiny.images.size(); ++n) {
    const Bytes cut(tiny.images.begin(), tiny.images.begin() + static_cast<std::ptrdiff_t>(n));
    const Status st = ParseStatus(cut, tiny.labels);
    EXPECT_TRUE(st.is_invalid()) << n;
    EXPECT_EQ(st.reason(), "dataset-truncated") << "images cut at " << n << ": " << st.ToString();
  }
  for (std::size_t n = 0; n < tiny.labels.size(); ++n) {
    const Bytes cut(tiny.labels.begin(), tiny.labels.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(ParseStatus(tiny.images, cut).reason(), "dataset-truncated") << "labels cut at " << n;
  }
}

TEST(IdxTest, RejectsBadMagicAndTypes) {
  const TinyIdx tiny;
  Bytes bad = tiny.images;
  bad[0] = 0x01;
  EXPECT_EQ(ParseStatus(bad, tiny.labels).reason(), "dataset-bad-magic");
  bad = tiny.images;
  bad[2] = 0x0D;  // IDX float
  EXPECT_EQ(ParseStatus(bad, tiny.labels).reason(), "dataset-bad-magic");
  // A PNG is not an IDX file.
  EXPECT_EQ(ParseStatus({0x89, 'P', 'N', 'G', 0, 0, 0, 0}, tiny.labels).reason(), "dataset-bad-magic");
}

TEST(IdxTest, RejectsSizeAndCountMismatches) {
  const TinyIdx tiny;
  Bytes longer = tiny.images;
  longer.push_back(0);
  EXPECT_EQ(ParseStatus(longer, tiny.labels).reason(), "dataset-size-mismatch");
  // Labels of rank 2, images of rank 1.
  EXPECT_EQ(ParseStatus(tiny.images, Idx({5, 1}, {0, 1, 2, 3, 4})).reason(), "dataset-size-mismatch");
  EXPECT_EQ(ParseStatus(Idx({5}, {0, 1, 2, 3, 4}), tiny.labels).reason(), "dataset-size-mismatch");
  EXPECT_EQ(ParseStatus(Idx({}, {}), tiny.labels).reason(), "dataset-size-mismatch");
  // Four labels for five images.
  EXPECT_EQ(ParseStatus(tiny.images, Idx({4}, {0, 1, 2, 3})).reason(), "dataset-count-mismatch");
  // No examples at all.
  EXPECT_EQ(ParseStatus(Idx({0, 3, 4}, {}), Idx({0}, {})).reason(), "dataset-empty");
  // Dimensions promising more than 4 GiB.
  EXPECT_EQ(ParseStatus(Idx({0xffffffffu, 0xffffffffu}, {}), tiny.labels).reason(), "dataset-too-large");
}

TEST(GzipTest, TruncatedAtEveryOffsetIsDetected) {
  const TinyIdx tiny;
  const Bytes gz = Gzip(tiny.images);
  for (std::size_t n = 2; n < gz.size(); ++n) {
    auto out = GunzipIfCompressed(Bytes(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(n)), "test");
    ASSERT_FALSE(out.ok()) << "cut at " << n;
    EXPECT_EQ(out.status().reason(), "dataset-gzip-truncated") << "cut at " << n << ": " << out.status().ToString();
  }
  TempDir dir;
  WriteBytes(dir / "img.gz", Bytes(gz.begin(), gz.end() - 5));
  WriteBytes(dir / "lab", tiny.labels);
  EXPECT_EQ(LoadIdx(dir / "img.gz", dir / "lab").status().reason(), "dataset-gzip-truncated");
}

TEST(GzipTest, CorruptionIsDetected) {
  const TinyIdx tiny;
  const Bytes gz = Gzip(tiny.images);
  // The CRC-32 (first 4 of the last 8 bytes) and the size (last 4).
  for (std::size_t pos : {gz.size() - 8, gz.size() - 1}) {
    Bytes bad = gz;
    bad[pos] ^= 0x01;
    EXPECT_EQ(GunzipIfCompressed(bad, "t").status().reason(), "dataset-gzip-corrupt") << pos;
  }
  // Every byte of the compressed body: the stream must fail or the CRC must.
  std::size_t detected = 0;
  for (std::size_t pos = 10; pos < gz.size() - 8; ++pos) {
    Bytes bad = gz;
    bad[pos] ^= 0x55;
    auto out = GunzipIfCompressed(bad, "t");
    if (!out.ok()) {
      EXPECT_TRUE(out.status().reason() == "dataset-gzip-corrupt" || out.status().reason() == "dataset-gzip-truncated")
          << out.status().ToString();
      ++detected;
    } else {
      ADD_FAILURE() << "flip at " << pos << " went unnoticed";
    }
  }
  EXPECT_EQ(detected, gz.size() - 18);
  // Garbage after the stream.
  Bytes tail = gz;
  tail.push_back(0x42);
  tail.push_back(0x43);
  EXPECT_EQ(GunzipIfCompressed(tail, "t").status().reason(), "dataset-gzip-corrupt");
}

TEST(GzipTest, ConcatenatedMembersAndPlainData) {
  const Bytes a = {1, 2, 3};
  const Bytes b = {4, 5};
  Bytes two = Gzip(a);
  const Bytes gb = Gzip(b);
  two.insert(two.end(), gb.begin(), gb.end());
  auto out = GunzipIfCompressed(two, "t");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, (Bytes{1, 2, 3, 4, 5}));
  // Not gzip: returned unchanged.
  EXPECT_EQ(*GunzipIfCompressed({0x1f, 0x00, 7}, "t"), (Bytes{0x1f, 0x00, 7}));
  // A large, highly compressible input grows the output buffer many times.
  Bytes big(3u << 20, 0x11);
  auto big_out = GunzipIfCompressed(Gzip(big), "t");
  ASSERT_TRUE(big_out.ok());
  EXPECT_EQ(*big_out, big);
}

TEST(FashionMnistTest, RealTestSplitIfInstalled) {
  const std::filesystem::path dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir / "t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Debian package dataset-fashion-mnist is not installed (" << dir << " missing)";
  }
  auto d = LoadMnistLike(dir, "t10k");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->size(), 10000u);
  EXPECT_EQ(d->input_shape(), (kernels::Shape{28, 28}));
  EXPECT_EQ(d->num_classes(), 10u);
  std::map<float, int> per_class;
  for (std::uint64_t i = 0; i < d->size(); ++i) per_class[d->target(i)[0]]++;
  ASSERT_EQ(per_class.size(), 10u);
  for (const auto& [label, count] : per_class) {
    EXPECT_TRUE(label >= 0.0f && label <= 9.0f) << label;
    EXPECT_EQ(count, 1000) << "class " << label;  // the test split is balanced
  }
  float lo = 1.0f, hi = 0.0f;
  for (std::uint64_t i = 0; i < 100; ++i)
    for (float v : d->input(i)) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 1.0f);
  // The commitment a bounty on this split names; pins every pixel and label.
  // (Also computed independently in Python from docs/formats.md.)
  EXPECT_EQ(d->Root().Hex(), "8d7b129d65a8a67197f07eccca4b4131a1879b29964a6b7ed16a9aa4e8320618");
}

// ---- CIFAR-10 ----------------------------------------------------------------------

Bytes CifarRecord(std::uint8_t label, std::uint8_t base) {
  Bytes r = {label};
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 1024; ++p) r.push_back(static_cast<std::uint8_t>(base + c * 50 + p % 7));
  return r;
}

TEST(Cifar10Test, ParsesRecordsChannelMajor) {
  Bytes data = CifarRecord(3, 10);
  const Bytes second = CifarRecord(9, 0);
  data.insert(data.end(), second.begin(), second.end());
  auto d = ParseCifar10(data);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ(d->input_shape(), (kernels::Shape{3, 32, 32}));
  EXPECT_EQ(d->num_classes(), 10u);
  EXPECT_EQ(d->target(0)[0], 3.0f);
  EXPECT_EQ(d->target(1)[0], 9.0f);
  const auto x = d->input(0);
  EXPECT_EQ(x[0], 10.0f / 255.0f);           // R, pixel 0
  EXPECT_EQ(x[1024], 60.0f / 255.0f);        // G, pixel 0
  EXPECT_EQ(x[2048 + 6], 116.0f / 255.0f);   // B, pixel 6
}

TEST(Cifar10Test, RejectsBadFiles) {
  const Bytes rec = CifarRecord(1, 0);
  EXPECT_EQ(ParseCifar10({}).status().reason(), "dataset-empty");
  for (std::size_t n : {std::size_t{1}, std::size_t{100}, rec.size() - 1, rec.size() + 1})  {
    Bytes cut = rec;
    cut.resize(n);
    EXPECT_EQ(ParseCifar10(cut).status().reason(), "dataset-truncated") << n;
  }
  Bytes bad = rec;
  bad[0] = 10;
  EXPECT_EQ(ParseCifar10(bad).status().reason(), "dataset-bad-label");
}

TEST(Cifar10Test, LoadsSeveralFiles) {
  TempDir dir;
  WriteBytes(dir / "data_batch_1.bin", CifarRecord(1, 0));
  WriteBytes(dir / "data_batch_2.bin", CifarRecord(2, 5));
  const std::vector<std::filesystem::path> files = {dir / "data_batch_1.bin", dir / "data_batch_2.bin"};
  auto d = LoadCifar10(files);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ(d->target(1)[0], 2.0f);
  // A truncated file is named in the error even if the total would be whole.
  Bytes cut = CifarRecord(1, 0);
  cut.resize(3000);
  WriteBytes(dir / "bad.bin", cut);
  const std::vector<std::filesystem::path> bad = {dir / "bad.bin", dir / "data_batch_2.bin"};
  const Status st = LoadCifar10(bad).status();
  EXPECT_EQ(st.reason(), "dataset-truncated");
  EXPECT_NE(st.detail().find("bad.bin"), std::string::npos);
}

// ---- text ----------------------------------------------------------------------------

TEST(TextWindowsTest, NextByteTargets) {
  auto d = TextWindows(AsBytes("hello world"), 4);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->size(), 2u);  // (11 - 1) / 4
  EXPECT_EQ(d->num_classes(), 256u);
  EXPECT_EQ(d->input_shape(), kernels::Shape{4});
  auto as_string = [](std::span<const float> v) {
    std::string s;
    for (float f : v) s.push_back(static_cast<char>(static_cast<int>(f)));
    return s;
  };
  EXPECT_EQ(as_string(d->input(0)), "hell");
  EXPECT_EQ(as_string(d->target(0)), "ello");
  EXPECT_EQ(as_string(d->input(1)), "o wo");
  EXPECT_EQ(as_string(d->target(1)), " wor");
}

TEST(TextWindowsTest, EdgeCasesAndFiles) {
  EXPECT_EQ(TextWindows(AsBytes("abc"), 0).status().reason(), "dataset-bad-window");
  EXPECT_EQ(TextWindows(AsBytes("abcd"), 4).status().reason(), "dataset-empty");
  EXPECT_EQ(TextWindows({}, 4).status().reason(), "dataset-empty");
  ASSERT_TRUE(TextWindows(AsBytes("abcde"), 4).ok());
  // Bytes above 127 stay 128..255.
  const Bytes high = {0xff, 0x80, 0x00};
  auto d = TextWindows(high, 2);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->input(0)[0], 255.0f);
  EXPECT_EQ(d->target(0)[1], 0.0f);

  TempDir dir;
  WriteBytes(dir / "corpus.txt", AsBytes("0123456789"));
  auto f = LoadTextWindows(dir / "corpus.txt", 3);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->size(), 3u);
  EXPECT_EQ(f->name(), "corpus.txt");
  EXPECT_EQ(LoadTextWindows(dir / "missing.txt", 3).status().reason(), "file-not-found");
}

// ---- synthetic ------------------------------------------------------------------------

TEST(SyntheticTest, DeterministicAndLearnableShape) {
  const std::uint64_t seed = vt::test::TestSeed();
  const Dataset a = SyntheticClassification(seed, 400, 8, 4);
  const Dataset b = SyntheticClassification(seed, 400, 8, 4);
  ASSERT_EQ(a.size(), 400u);
  EXPECT_EQ(a.Root(), b.Root());
  EXPECT_NE(SyntheticClassification(seed + 1, 400, 8, 4).Root(), a.Root());
  std::set<float> labels;
  for (std::uint64_t i = 0; i < a.size(); ++i) {
    labels.insert(a.target(i)[0]);
    for (float v : a.input(i)) ASSERT_TRUE(v >= -1.0f && v < 1.0f) << v;
  }
  // argmax of 4 random linear scores over 400 uniform inputs: every class occurs.
  EXPECT_EQ(labels, (std::set<float>{0, 1, 2, 3}));
  // A prefix of a larger set is the smaller set (element-addressed randomness).
  const Dataset longer = SyntheticClassification(seed, 401, 8, 4);
  EXPECT_EQ(longer.EncodeExample(399), a.EncodeExample(399));
}

TEST(SyntheticTest, GoldenFirstExample) {
  // Pins the Philox streams and mapping; any change alters every job's data.
  const Dataset d = SyntheticClassification(7, 1, 4, 3);
  EXPECT_EQ(ToHex(d.EncodeExample(0)), "000104f8c5abbe40c5db3c6091debe90e1ad3e00000000803f");
}

// ---- commitment -------------------------------------------------------------------------

TEST(DatasetRootTest, ExampleEncodingAndRoot) {
  Dataset d("t", {2}, {}, 3);
  const float x0[] = {1.0f, -0.0f};
  const float y0[] = {2.0f};
  d.Add(x0, y0);
  const float x1[] = {0.5f, 0.25f};
  const float y1[] = {0.0f};
  d.Add(x1, y1);
  // f32 tensor [2]: 00 01 02 | 0000803f 00000080 ; f32 tensor []: 00 00 | 00000040
  EXPECT_EQ(ToHex(d.EncodeExample(0)), "000102" "0000803f" "00000080" "0000" "00000040");
  EXPECT_EQ(d.EncodeExample(0), [&] {
    Writer w;
    kernels::EncodeTensor(w, d.Get(0).input);
    kernels::EncodeTensor(w, d.Get(0).target);
    return std::move(w).Take();
  }());
  const std::vector<Hash256> leaves = {crypto::MerkleLeafHash(d.EncodeExample(0)),
                                       crypto::MerkleLeafHash(d.EncodeExample(1))};
  EXPECT_EQ(d.Root(), crypto::MerkleRoot(leaves));
  EXPECT_EQ(d.Tree().root(), d.Root());
  const auto proof = d.Tree().Prove(1);
  EXPECT_TRUE(crypto::VerifyMerkleProof(d.Root(), leaves[1], proof).ok());
}

TEST(DatasetRootTest, VerifyDetectsAnyChange) {
  const Dataset d = SyntheticClassification(11, 50, 6, 3);
  const Hash256 root = d.Root();
  EXPECT_TRUE(VerifyDataset(d, root).ok());

  // One example's label changed.
  Dataset changed("x", d.input_shape(), d.target_shape(), 3);
  for (std::uint64_t i = 0; i < d.size(); ++i) {
    const float label = d.target(i)[0] + (i == 17 ? 1.0f : 0.0f);
    changed.Add(d.input(i), std::span<const float>(&label, 1));
  }
  const Status st = VerifyDataset(changed, root);
  EXPECT_TRUE(st.is_invalid());
  EXPECT_EQ(st.reason(), "dataset-root-mismatch");
  EXPECT_NE(st.detail().find(root.Hex()), std::string::npos);

  // Same examples, one missing at the end.
  Dataset shorter("x", d.input_shape(), d.target_shape(), 3);
  for (std::uint64_t i = 0; i + 1 < d.size(); ++i) shorter.Add(d.input(i), d.target(i));
  EXPECT_EQ(VerifyDataset(shorter, root).reason(), "dataset-root-mismatch");
  // Two examples swapped: order is committed.
  Dataset swapped("x", d.input_shape(), d.target_shape(), 3);
  for (std::uint64_t i = 0; i < d.size(); ++i) {
    const std::uint64_t j = i == 0 ? 1 : i == 1 ? 0 : i;
    swapped.Add(d.input(j), d.target(j));
  }
  EXPECT_EQ(VerifyDataset(swapped, root).reason(), "dataset-root-mismatch");
}

}  // namespace
}  // namespace vt::worker
