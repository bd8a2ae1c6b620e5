#include "worker/safetensors.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/file_io.h"

namespace vt::worker {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

using Json = nlohmann::json;
constexpr std::size_t kMaxRank = 32;

Status Bad(std::string_view reason, const std::string& detail) { return Status::Invalid(reason, detail); }

// IEEE binary16 → binary32, exact for every value (subnormals, inf, NaN payloads).
float HalfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 → 127
  } else if (mant == 0) {
    bits = sign;  // ±0
  } else {
    // Subnormal half: normalise the mantissa.
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

float Bf16ToFloat(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

struct Entry {
  std::string name;
  int elem_size = 4;
  std::string dtype;
  kernels::Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

Result<std::uint64_t> GetUnsigned(const Json& v, const std::string& what) {
  if (!v.is_number_unsigned()) return Bad("safetensors-bad-header", what + " is not a non-negative integer");
  return v.get<std::uint64_t>();
}

Result<Entry> ParseEntry(const std::string& name, const Json& v, std::uint64_t data_size) {
  if (name.empty()) return Bad("safetensors-bad-header", "a tensor has an empty name");
  if (!v.is_object() || v.size() != 3 || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
    return Bad("safetensors-bad-header", "tensor '" + name + "' needs exactly dtype, shape and data_offsets");
  Entry e;
  e.name = name;
  const Json& dtype = v["dtype"];
  if (!dtype.is_string()) return Bad("safetensors-bad-header", "tensor '" + name + "': dtype is not a string");
  e.dtype = dtype.get<std::string>();
  if (e.dtype == "F32") e.elem_size = 4;
  else if (e.dtype == "F16" || e.dtype == "BF16") e.elem_size = 2;
  else return Bad("safetensors-unsupported-dtype", "tensor '" + name + "' has dtype " + e.dtype + " (F32, F16, BF16 only)");

  const Json& shape = v["shape"];
  if (!shape.is_array() || shape.size() > kMaxRank)
    return Bad("safetensors-bad-header", "tensor '" + name + "': shape is not an array of rank <= 32");
  std::uint64_t numel = 1;
  bool overflow = false;
  for (const Json& d : shape) {
    VT_ASSIGN_OR_RETURN(std::uint64_t dim, GetUnsigned(d, "tensor '" + name + "': a dimension"));
    if (dim > static_cast<std::uint64_t>(INT64_MAX)) overflow = true;
    e.shape.push_back(static_cast<std::int64_t>(dim));
    if (dim != 0 && numel > UINT64_MAX / 8 / dim) overflow = true;
    else numel *= dim;
  }
  if (std::find(e.shape.begin(), e.shape.end(), 0) != e.shape.end()) {
    numel = 0;
    overflow = false;
  }

  const Json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    return Bad("safetensors-bad-header", "tensor '" + name + "': data_offsets is not [begin, end]");
  VT_ASSIGN_OR_RETURN(e.begin, GetUnsigned(offsets[0], "tensor '" + name + "': begin offset"));
  VT_ASSIGN_OR_RETURN(e.end, GetUnsigned(offsets[1], "tensor '" + name + "': end offset"));
  if (e.begin > e.end || e.end > data_size) {
    return Bad("safetensors-bad-offsets", "tensor '" + name + "': offsets [" + std::to_string(e.begin) + ", " +
                                              std::to_string(e.end) + "] outside the " + std::to_string(data_size) +
                                              " data bytes");
  }
  if (overflow || e.end - e.begin != numel * static_cast<std::uint64_t>(e.elem_size)) {
    return Bad("safetensors-bad-offsets", "tensor '" + name + "': " + std::to_string(e.end - e.begin) +
                                              " bytes do not hold shape " + kernels::ShapeToString(e.shape) + " of " +
                                              e.dtype);
  }
  return e;
}

}  // namespace

Bytes EncodeSafetensors(const TensorMap& tensors, const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    assert(!name.empty() && name != "__metadata__");
    const std::uint64_t size = static_cast<std::uint64_t>(t.numel()) * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // `replace` keeps dump() from throwing on invalid UTF-8 (names are ours and valid).
  std::string text = header.dump(-1, ' ', false, Json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' ');

  Bytes out;
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& [name, t] : tensors) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(t.data());
    out.insert(out.end(), p, p + t.numel() * static_cast<std::int64_t>(sizeof(float)));
  }
  return out;
}

Result<SafetensorsContents> DecodeSafetensors(ByteSpan file) {
  if (file.size() < 8) return Bad("safetensors-truncated", "file of " + std::to_string(file.size()) + " bytes");
  std::uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<std::uint64_t>(file[static_cast<std::size_t>(i)]) << (8 * i);
  if (header_len > kMaxSafetensorsHeader)
    return Bad("safetensors-bad-header-length", "header length " + std::to_string(header_len) + " above 100 MB");
  if (header_len > file.size() - 8) {
    return Bad("safetensors-truncated", "header length " + std::to_string(header_len) + " but only " +
                                            std::to_string(file.size() - 8) + " bytes follow");
  }
  const auto* hbegin = reinterpret_cast<const char*>(file.data() + 8);
  const auto* hend = hbegin + header_len;
  if (header_len == 0 || *hbegin != '{') return Bad("safetensors-bad-header", "header does not start with '{'");

  // nlohmann keeps the last of duplicate keys silently; catch them while parsing.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == Json::parse_event_t::key && !open_objects.empty() && parsed.is_string()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  const Json header = Json::parse(hbegin, hend, on_event, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return Bad("safetensors-bad-header", "header is not a JSON object");
  if (!duplicate.empty()) return Bad("safetensors-duplicate-name", "key '" + duplicate + "' appears twice");

  const ByteSpan data = file.subspan(8 + header_len);
  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return Bad("safetensors-bad-header", "__metadata__ is not an object");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) return Bad("safetensors-bad-header", "__metadata__ value of '" + k + "' is not a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    VT_ASSIGN_OR_RETURN(Entry e, ParseEntry(name, value, data.size()));
    entries.push_back(std::move(e));
  }

  // The data must be exactly covered: sorted by offset, each tensor starts
  // where the previous one ended.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  std::uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin < covered)
      return Bad("safetensors-overlap", "tensor '" + e->name + "' overlaps the tensor before it");
    if (e->begin > covered)
      return Bad("safetensors-hole", "bytes [" + std::to_string(covered) + ", " + std::to_string(e->begin) +
                                         ") belong to no tensor");
    covered = e->end;
  }
  if (covered != data.size())
    return Bad("safetensors-hole", std::to_string(data.size() - covered) + " data bytes after the last tensor");

  for (const Entry& e : entries) {
    const std::uint8_t* src = data.data() + e.begin;
    const std::size_t numel = static_cast<std::size_t>((e.end - e.begin) / static_cast<std::uint64_t>(e.elem_size));
    auto tensor = kernels::Tensor::ForOverwrite(e.shape);
    if (!tensor.ok())
      return Bad("safetensors-bad-header", "tensor '" + e.name + "': " + tensor.status().detail());
    float* values = tensor->data();  // numel values: the header check above
    if (e.dtype == "F32") {
      if (numel != 0) std::memcpy(values, src, numel * sizeof(float));
    } else {
      const bool bf16 = e.dtype == "BF16";
      for (std::size_t i = 0; i < numel; ++i) {
        const auto h = static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
        values[i] = bf16 ? Bf16ToFloat(h) : HalfToFloat(h);
      }
    }
    out.tensors.emplace(e.name, std::move(tensor).value());
    out.dtypes.emplace(e.name, e.dtype);
  }
  return out;
}

Status SaveSafetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  return WriteFileAtomic(path, EncodeSafetensors(tensors, metadata));
}

Result<SafetensorsContents> LoadSafetensors(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Bytes file, ReadFile(path));
  auto decoded = DecodeSafetensors(file);
  if (!decoded.ok()) return decoded.status().WithContext(path.string());
  return decoded;
}

}  // namespace vt::worker
