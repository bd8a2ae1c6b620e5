#pragma once
// The safetensors file format (https://github.com/huggingface/safetensors),
// how the final weights leave veritrain:
//
//   u64 LE  N                 length of the header
//   N bytes header            JSON object, UTF-8, may be padded with spaces:
//     { "<name>": {"dtype": "F32", "shape": [d0, …], "data_offsets": [begin, end]}, …,
//       "__metadata__": {"<key>": "<string value>", …} }
//   data                      the tensors' bytes, little-endian, row-major;
//                             offsets are relative to the start of data
//
// Writing: tensors in name order, packed without gaps, compact JSON with keys
// sorted, the header padded with spaces to a multiple of 8 bytes (so the data
// is 8-byte aligned, as the reference implementation does).
//
// Reading is strict and rejects, with Status::Invalid:
//   safetensors-truncated          shorter than 8 bytes or than the header length
//   safetensors-bad-header-length  header length above 100 MB
//   safetensors-bad-header         not a JSON object, or an entry of the wrong form
//                                  (missing/extra keys, bad shape, empty name, bad metadata)
//   safetensors-duplicate-name     a key twice in any JSON object
//   safetensors-unsupported-dtype  a dtype other than F32, F16, BF16 (those two are
//                                  widened to F32 exactly)
//   safetensors-bad-offsets        begin > end, end beyond the data, or a length that
//                                  is not numel × element size
//   safetensors-overlap            two tensors share bytes
//   safetensors-hole               bytes of the data belong to no tensor (incl. trailing)

#include <filesystem>
#include <map>
#include <string>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/tensor.h"

namespace vt::worker {

inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

using TensorMap = std::map<std::string, kernels::Tensor>;

struct SafetensorsContents {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"; empty when absent
  std::map<std::string, std::string> dtypes;    // each tensor's dtype in the file (before widening)
};

// Precondition: tensor names are non-empty and not "__metadata__".
Bytes EncodeSafetensors(const TensorMap& tensors, const std::map<std::string, std::string>& metadata = {});
Result<SafetensorsContents> DecodeSafetensors(ByteSpan file);

// Atomic (worker/file_io.h WriteFileAtomic); file-system errors are Status::Error.
Status SaveSafetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});
Result<SafetensorsContents> LoadSafetensors(const std::filesystem::path& path);

}  // namespace vt::worker
