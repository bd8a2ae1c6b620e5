// Fuzz target for the safetensors reader (worker/safetensors.h), which reads
// files a client brings (initial weights). Properties: no crash, no
// unbounded allocation, rejections are Invalid; what it accepts encodes
// again to a file that decodes to the same tensors and metadata.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_util.h"
#include "worker/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vt;
  auto file = worker::DecodeSafetensors(ByteSpan(data, size));
  if (!file.ok()) {
    fuzz::CheckRejection(file.status(), "safetensors rejection is not Invalid");
    return 0;
  }
  const Bytes again = worker::EncodeSafetensors(file->tensors, file->metadata);
  auto back = worker::DecodeSafetensors(again);
  fuzz::Check(back.ok(), "re-encoded safetensors do not decode");
  fuzz::Check(back->metadata == file->metadata, "metadata differs after a round trip");
  fuzz::Check(back->tensors.size() == file->tensors.size(), "tensor count differs after a round trip");
  for (const auto& [name, t] : file->tensors) {
    const auto it = back->tensors.find(name);
    fuzz::Check(it != back->tensors.end() && it->second.shape() == t.shape() && it->second.Hash() == t.Hash(),
                "tensor differs after a round trip");
  }
  return 0;
}
