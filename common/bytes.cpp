#include "common/bytes.h"

#include <openssl/crypto.h>

#include <algorithm>

namespace vt {

std::string ToHex(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.resize(bytes.size() * 2);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<Bytes> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return Status::Invalid("hex-odd-length", "hex string has an odd length");
  Bytes out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status::Invalid("hex-bad-digit", "non-hex character in hex string");
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return out;
}

Result<Hash256> Hash256::FromHex(std::string_view hex) {
  if (hex.size() != 2 * kSize) return Status::Invalid("hash-bad-length", "a hash is 64 hex digits");
  auto bytes = vt::FromHex(hex);
  if (!bytes.ok()) return bytes.status();
  Hash256 h;
  std::copy(bytes->begin(), bytes->end(), h.bytes.begin());
  return h;
}

bool Hash256::IsZero() const {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

void SecureWipe(void* data, std::size_t size) { OPENSSL_cleanse(data, size); }

}  // namespace vt
