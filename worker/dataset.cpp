#include "worker/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <climits>
#include <cstring>
#include <limits>
#include <string>

#include "common/encoding.h"
#include "common/random.h"
#include "worker/file_io.h"
#include "kernels/tensor_codec.h"

namespace vt::worker {

namespace {

constexpr std::uint64_t kMaxDecompressedBytes = std::uint64_t{4} << 30;  // 4 GiB
constexpr std::uint64_t kMaxExamples = std::uint64_t{1} << 32;
constexpr std::uint32_t kSyntheticInputStream = 0xFFFF0001u;
constexpr std::uint32_t kSyntheticTeacherStream = 0xFFFF0002u;

// x / 255 for every byte value, computed once (exactly rounded division).
const std::array<float, 256>& ByteToUnit() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[static_cast<std::size_t>(i)] = static_cast<float>(i) / 255.0f;
    return t;
  }();
  return table;
}

std::string Str(std::uint64_t v) { return std::to_string(v); }

}  // namespace

// ---- Dataset -----------------------------------------------------------------------

Dataset::Dataset(std::string name, kernels::Shape input_shape, kernels::Shape target_shape,
                 std::uint32_t num_classes)
    : m_name(std::move(name)),
      m_input_shape(std::move(input_shape)),
      m_target_shape(std::move(target_shape)),
      m_num_classes(num_classes),
      m_input_numel(kernels::NumElements(m_input_shape)),
      m_target_numel(kernels::NumElements(m_target_shape)) {}

void Dataset::Add(std::span<const float> input, std::span<const float> target) {
  assert(static_cast<std::int64_t>(input.size()) == m_input_numel);
  assert(static_cast<std::int64_t>(target.size()) == m_target_numel);
  m_inputs.insert(m_inputs.end(), input.begin(), input.end());
  m_targets.insert(m_targets.end(), target.begin(), target.end());
  ++m_size;
}

void Dataset::Reserve(std::uint64_t n) {
  m_inputs.reserve(static_cast<std::size_t>(n * static_cast<std::uint64_t>(m_input_numel)));
  m_targets.reserve(static_cast<std::size_t>(n * static_cast<std::uint64_t>(m_target_numel)));
}

std::span<const float> Dataset::input(std::uint64_t i) const {
  assert(i < m_size);
  const auto n = static_cast<std::size_t>(m_input_numel);
  return std::span<const float>(m_inputs).subspan(static_cast<std::size_t>(i) * n, n);
}

std::span<const float> Dataset::target(std::uint64_t i) const {
  assert(i < m_size);
  const auto n = static_cast<std::size_t>(m_target_numel);
  return std::span<const float>(m_targets).subspan(static_cast<std::size_t>(i) * n, n);
}

Example Dataset::Get(std::uint64_t i) const {
  const auto in = input(i);
  const auto tg = target(i);
  return Example{kernels::Tensor(m_input_shape, std::vector<float>(in.begin(), in.end())),
                 kernels::Tensor(m_target_shape, std::vector<float>(tg.begin(), tg.end()))};
}

Bytes Dataset::EncodeExample(std::uint64_t i) const {
  Writer w;
  kernels::EncodeTensor(w, m_input_shape, input(i));
  kernels::EncodeTensor(w, m_target_shape, target(i));
  return std::move(w).Take();
}

namespace {
std::vector<Hash256> ExampleLeafHashes(const Dataset& d) {
  std::vector<Hash256> leaves;
  leaves.reserve(static_cast<std::size_t>(d.size()));
  for (std::uint64_t i = 0; i < d.size(); ++i) leaves.push_back(crypto::MerkleLeafHash(d.EncodeExample(i)));
  return leaves;
}
}  // namespace

Hash256 Dataset::Root() const { return crypto::MerkleRoot(ExampleLeafHashes(*this)); }

crypto::MerkleTree Dataset::Tree() const { return crypto::MerkleTree::FromLeafHashes(ExampleLeafHashes(*this)); }

Status VerifyDataset(const Dataset& dataset, const Hash256& expected_root) {
  const Hash256 root = dataset.Root();
  if (root != expected_root) {
    return Status::Invalid("dataset-root-mismatch", "dataset '" + dataset.name() + "' has root " + root.Hex() +
                                                        ", expected " + expected_root.Hex());
  }
  return Status::Ok();
}

// ---- gzip ------------------------------------------------------------------------

Result<Bytes> GunzipIfCompressed(Bytes data, std::string_view what) {
  if (data.size() < 2 || data[0] != 0x1f || data[1] != 0x8b) return data;

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return Status::Error("out-of-memory", "zlib inflateInit2 failed");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};

  // The trailer's ISIZE (size mod 2^32) is a hint only: bounded by deflate's
  // maximum ratio so a damaged trailer cannot make us allocate gigabytes.
  std::uint64_t hint = 0;
  if (data.size() >= 4) {
    const std::size_t n = data.size();
    hint = std::uint64_t{data[n - 4]} | std::uint64_t{data[n - 3]} << 8 | std::uint64_t{data[n - 2]} << 16 |
           std::uint64_t{data[n - 1]} << 24;
  }
  hint = std::min<std::uint64_t>({hint, static_cast<std::uint64_t>(data.size()) * 1032, kMaxDecompressedBytes});
  Bytes out(static_cast<std::size_t>(std::max<std::uint64_t>(hint, 1 << 16)));
  std::size_t out_pos = 0;
  std::size_t in_pos = 0;  // bytes handed to zlib so far
  const std::string name(what);

  for (;;) {
    if (zs.avail_in == 0 && in_pos < data.size()) {
      const std::size_t chunk = std::min<std::size_t>(data.size() - in_pos, 1u << 30);
      zs.next_in = data.data() + in_pos;
      zs.avail_in = static_cast<uInt>(chunk);
      in_pos += chunk;
    }
    if (out_pos == out.size()) {
      if (out.size() >= kMaxDecompressedBytes)
        return Status::Invalid("dataset-too-large", name + ": decompresses to more than 4 GiB");
      out.resize(static_cast<std::size_t>(
          std::min<std::uint64_t>(kMaxDecompressedBytes, static_cast<std::uint64_t>(out.size()) * 2)));
    }
    zs.next_out = out.data() + out_pos;
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - out_pos, 1u << 30));
    const uInt before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out_pos += before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      const std::size_t pos = static_cast<std::size_t>(zs.next_in - data.data());
      if (pos == data.size()) break;
      // Another gzip member may follow (gzip files may be concatenated).
      if (data.size() - pos >= 2 && data[pos] == 0x1f && data[pos + 1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      return Status::Invalid("dataset-gzip-corrupt", name + ": " + Str(data.size() - pos) +
                                                         " bytes of garbage after the gzip stream");
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR) {
      if (zs.avail_in == 0 && in_pos == data.size())
        return Status::Invalid("dataset-gzip-truncated", name + ": the gzip stream ends early");
      continue;  // the output buffer was full: grow it
    }
    if (rc == Z_MEM_ERROR) return Status::Error("out-of-memory", name + ": zlib ran out of memory");
    return Status::Invalid("dataset-gzip-corrupt", name + ": " + (zs.msg != nullptr ? zs.msg : "inflate failed"));
  }
  out.resize(out_pos);
  return out;
}

Result<Bytes> ReadMaybeGzip(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Bytes raw, ReadFile(path));
  return GunzipIfCompressed(std::move(raw), path.string());
}

// ---- IDX ---------------------------------------------------------------------------

namespace {

struct IdxFile {
  std::vector<std::uint64_t> dims;  // dims[0] = count
  ByteSpan payload;
};

Result<IdxFile> ParseIdxHeader(ByteSpan bytes, std::string_view what) {
  const std::string name(what);
  if (bytes.size() < 4) return Status::Invalid("dataset-truncated", name + ": shorter than the IDX magic");
  if (bytes[0] != 0 || bytes[1] != 0)
    return Status::Invalid("dataset-bad-magic", name + ": not an IDX file (first bytes are not 00 00)");
  if (bytes[2] != 0x08) {
    return Status::Invalid("dataset-bad-magic",
                           name + ": IDX element type 0x" + ToHex(bytes.subspan(2, 1)) + " is not unsigned byte (0x08)");
  }
  const std::size_t rank = bytes[3];
  if (rank == 0) return Status::Invalid("dataset-size-mismatch", name + ": IDX rank 0");
  const std::size_t header = 4 + 4 * rank;
  if (bytes.size() < header) return Status::Invalid("dataset-truncated", name + ": IDX header cut short");
  IdxFile f;
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::uint8_t* p = bytes.data() + 4 + 4 * i;
    const std::uint64_t d = std::uint64_t{p[0]} << 24 | std::uint64_t{p[1]} << 16 | std::uint64_t{p[2]} << 8 | p[3];
    f.dims.push_back(d);
    if (d != 0 && total > kMaxDecompressedBytes / d)
      return Status::Invalid("dataset-too-large", name + ": IDX dimensions promise more than 4 GiB");
    total *= d;
  }
  const std::uint64_t have = bytes.size() - header;
  if (have < total) {
    return Status::Invalid("dataset-truncated",
                           name + ": IDX header promises " + Str(total) + " bytes of data, file has " + Str(have));
  }
  if (have > total) {
    return Status::Invalid("dataset-size-mismatch",
                           name + ": " + Str(have - total) + " bytes after the " + Str(total) + " bytes of data");
  }
  f.payload = bytes.subspan(header);
  return f;
}

}  // namespace

Result<Dataset> ParseIdx(ByteSpan images, ByteSpan labels, std::uint64_t limit) {
  VT_ASSIGN_OR_RETURN(IdxFile img, ParseIdxHeader(images, "images"));
  VT_ASSIGN_OR_RETURN(IdxFile lab, ParseIdxHeader(labels, "labels"));
  if (img.dims.size() < 2)
    return Status::Invalid("dataset-size-mismatch", "images: IDX rank " + Str(img.dims.size()) + ", expected >= 2");
  if (lab.dims.size() != 1)
    return Status::Invalid("dataset-size-mismatch", "labels: IDX rank " + Str(lab.dims.size()) + ", expected 1");
  if (img.dims[0] != lab.dims[0]) {
    return Status::Invalid("dataset-count-mismatch",
                           Str(img.dims[0]) + " images but " + Str(lab.dims[0]) + " labels");
  }
  std::uint64_t count = img.dims[0];
  if (count > kMaxExamples) return Status::Invalid("dataset-too-large", "more than 2^32 examples");
  if (limit > 0) count = std::min(count, limit);
  if (count == 0) return Status::Invalid("dataset-empty", "IDX files hold no examples");

  kernels::Shape shape;
  for (std::size_t i = 1; i < img.dims.size(); ++i) shape.push_back(static_cast<std::int64_t>(img.dims[i]));
  const std::uint8_t max_label = *std::max_element(lab.payload.begin(), lab.payload.begin() + static_cast<std::ptrdiff_t>(count));
  Dataset d("idx", shape, {}, static_cast<std::uint32_t>(max_label) + 1);
  d.Reserve(count);
  const auto& unit = ByteToUnit();
  const auto per = static_cast<std::size_t>(d.input_numel());
  std::vector<float> pixels(per);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* src = img.payload.data() + i * per;
    for (std::size_t j = 0; j < per; ++j) pixels[j] = unit[src[j]];
    const float label = static_cast<float>(lab.payload[i]);
    d.Add(pixels, std::span<const float>(&label, 1));
  }
  return d;
}

Result<Dataset> LoadIdx(const std::filesystem::path& images, const std::filesystem::path& labels,
                        std::uint64_t limit) {
  VT_ASSIGN_OR_RETURN(Bytes img, ReadMaybeGzip(images));
  VT_ASSIGN_OR_RETURN(Bytes lab, ReadMaybeGzip(labels));
  auto parsed = ParseIdx(img, lab, limit);
  if (!parsed.ok()) return parsed.status().WithContext(images.string() + " + " + labels.string());
  Dataset d = std::move(parsed).value();
  return d;
}

Result<Dataset> LoadMnistLike(const std::filesystem::path& dir, std::string_view split, std::uint64_t limit) {
  auto pick = [&](const std::string& base) {
    const std::filesystem::path gz = dir / (base + ".gz");
    return std::filesystem::exists(gz) ? gz : dir / base;
  };
  const std::string s(split);
  return LoadIdx(pick(s + "-images-idx3-ubyte"), pick(s + "-labels-idx1-ubyte"), limit);
}

// ---- CIFAR-10 ------------------------------------------------------------------------

namespace {
constexpr std::size_t kCifarPixels = 3 * 32 * 32;
constexpr std::size_t kCifarRecord = 1 + kCifarPixels;
}  // namespace

Result<Dataset> ParseCifar10(ByteSpan records, std::uint64_t limit) {
  if (records.empty()) return Status::Invalid("dataset-empty", "CIFAR-10 data holds no records");
  if (records.size() % kCifarRecord != 0) {
    return Status::Invalid("dataset-truncated", "CIFAR-10 data of " + Str(records.size()) +
                                                    " bytes is not a whole number of 3073-byte records");
  }
  std::uint64_t count = records.size() / kCifarRecord;
  if (limit > 0) count = std::min(count, limit);
  Dataset d("cifar10", {3, 32, 32}, {}, 10);
  d.Reserve(count);
  const auto& unit = ByteToUnit();
  std::vector<float> pixels(kCifarPixels);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* rec = records.data() + i * kCifarRecord;
    if (rec[0] > 9)
      return Status::Invalid("dataset-bad-label", "CIFAR-10 record " + Str(i) + " has label " + Str(rec[0]));
    for (std::size_t j = 0; j < kCifarPixels; ++j) pixels[j] = unit[rec[1 + j]];
    const float label = static_cast<float>(rec[0]);
    d.Add(pixels, std::span<const float>(&label, 1));
  }
  return d;
}

Result<Dataset> LoadCifar10(std::span<const std::filesystem::path> files, std::uint64_t limit) {
  Bytes all;
  for (const auto& f : files) {
    VT_ASSIGN_OR_RETURN(Bytes part, ReadMaybeGzip(f));
    // Each file must hold whole records on its own, or the error would point
    // at the wrong place.
    if (part.size() % kCifarRecord != 0) {
      return Status::Invalid("dataset-truncated", f.string() + ": " + Str(part.size()) +
                                                      " bytes is not a whole number of 3073-byte records");
    }
    all.insert(all.end(), part.begin(), part.end());
  }
  return ParseCifar10(all, limit);
}

// ---- text --------------------------------------------------------------------------

Result<Dataset> TextWindows(ByteSpan text, std::uint32_t window, std::string name) {
  if (window == 0) return Status::Invalid("dataset-bad-window", "window length 0");
  const std::uint64_t count = text.size() < 1 ? 0 : (text.size() - 1) / window;
  if (count == 0) {
    return Status::Invalid("dataset-empty", name + ": " + Str(text.size()) + " bytes hold no window of " +
                                                Str(std::uint64_t{window} + 1) + " bytes");
  }
  if (count > kMaxExamples) return Status::Invalid("dataset-too-large", "more than 2^32 windows");
  const auto t = static_cast<std::int64_t>(window);
  Dataset d(std::move(name), {t}, {t}, 256);
  d.Reserve(count);
  std::vector<float> in(window), tg(window);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint8_t* p = text.data() + i * window;
    for (std::uint32_t j = 0; j < window; ++j) {
      in[j] = static_cast<float>(p[j]);
      tg[j] = static_cast<float>(p[j + 1]);
    }
    d.Add(in, tg);
  }
  return d;
}

Result<Dataset> LoadTextWindows(const std::filesystem::path& path, std::uint32_t window) {
  VT_ASSIGN_OR_RETURN(Bytes text, ReadFile(path));
  return TextWindows(text, window, path.filename().string());
}

// ---- synthetic -----------------------------------------------------------------------

Dataset SyntheticClassification(std::uint64_t seed, std::uint64_t count, std::int64_t input_dim,
                                std::uint32_t num_classes) {
  assert(input_dim > 0 && num_classes > 0);
  const PhiloxKey key = PhiloxKeyFromSeed(seed);
  const auto d = static_cast<std::uint64_t>(input_dim);
  std::vector<float> teacher(static_cast<std::size_t>(d * num_classes));
  for (std::uint64_t e = 0; e < teacher.size(); ++e) teacher[e] = NormalAt(key, 0, kSyntheticTeacherStream, e);

  Dataset out("synthetic", {input_dim}, {}, num_classes);
  out.Reserve(count);
  std::vector<float> x(static_cast<std::size_t>(d));
  for (std::uint64_t i = 0; i < count; ++i) {
    for (std::uint64_t j = 0; j < d; ++j) x[j] = 2.0f * UniformAt(key, 0, kSyntheticInputStream, i * d + j) - 1.0f;
    std::uint32_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::uint32_t c = 0; c < num_classes; ++c) {
      double score = 0.0;
      for (std::uint64_t j = 0; j < d; ++j) score += static_cast<double>(teacher[c * d + j]) * static_cast<double>(x[j]);
      if (score > best_score) {
        best_score = score;
        best = c;
      }
    }
    const float label = static_cast<float>(best);
    out.Add(x, std::span<const float>(&label, 1));
  }
  return out;
}

}  // namespace vt::worker
