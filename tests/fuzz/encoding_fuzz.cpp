// Fuzz target for the canonical decoder (common/encoding.h): arbitrary bytes
// go through a composite schema that uses every Reader feature; whatever is
// accepted must re-encode to exactly the input bytes (one value, one encoding).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/encoding.h"

namespace {

enum class Kind : std::uint8_t { kA = 0, kB = 1, kC = 2, kD = 3 };

struct Message {
  Kind kind = Kind::kA;
  std::uint64_t nonce = 0;
  std::int64_t delta = 0;
  bool flag = false;
  vt::Bytes payload;
  std::string name;
  std::vector<vt::Hash256> parents;
  std::optional<std::uint32_t> limit;
  std::vector<std::uint64_t> sizes;
  std::uint16_t tail = 0;
};

void Encode(vt::Writer& w, const Message& m) {
  w.PutEnum(m.kind);
  w.PutVarint(m.nonce);
  w.PutI64(m.delta);
  w.PutBool(m.flag);
  w.PutBytes(m.payload);
  w.PutString(m.name);
  w.PutVector(m.parents);
  w.PutOptional(m.limit, &vt::Writer::PutU32);
  w.PutVector(m.sizes, &vt::Writer::PutVarint);
  w.PutU16(m.tail);
}

vt::Result<Message> Decode(vt::Reader& r, vt::DecodeAs<Message>) {
  Message m;
  VT_ASSIGN_OR_RETURN(m.kind, r.GetEnum(Kind::kD));
  VT_ASSIGN_OR_RETURN(m.nonce, r.GetVarint());
  VT_ASSIGN_OR_RETURN(m.delta, r.GetI64());
  VT_ASSIGN_OR_RETURN(m.flag, r.GetBool());
  VT_ASSIGN_OR_RETURN(m.payload, r.GetBytes(256));
  VT_ASSIGN_OR_RETURN(m.name, r.GetString(32));
  VT_ASSIGN_OR_RETURN(m.parents, r.GetVector<vt::Hash256>(8));
  VT_ASSIGN_OR_RETURN(m.limit, r.GetOptional<std::uint32_t>(&vt::Reader::GetU32));
  VT_ASSIGN_OR_RETURN(m.sizes, r.GetVector<std::uint64_t>(&vt::Reader::GetVarint, 16));
  VT_ASSIGN_OR_RETURN(m.tail, r.GetU16());
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const vt::ByteSpan in(data, size);
  auto decoded = vt::DecodeExact<Message>(in);
  if (!decoded.ok()) {
    // Input can only be invalid, never a local error, and always carries a code.
    if (!decoded.status().is_invalid() || decoded.status().reason().rfind("enc-", 0) != 0) {
      std::fprintf(stderr, "unexpected status %s\n", decoded.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  const vt::Bytes again = vt::EncodeToBytes(*decoded);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) {
    std::fprintf(stderr, "not canonical: %s re-encodes as %s\n", vt::ToHex(in).c_str(),
                 vt::ToHex(again).c_str());
    std::abort();
  }
  return 0;
}
