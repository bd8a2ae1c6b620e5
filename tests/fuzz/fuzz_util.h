#pragma once
// Shared checks of the fuzz targets: a violated property aborts (libFuzzer
// then saves the input), and every decoder must be canonical — whatever it
// accepts re-encodes to exactly the bytes it came from.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "common/encoding.h"

namespace vt::fuzz {

inline void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: property violated: %s\n", what);
    std::abort();
  }
}

// Rejections are Invalid (bad input), never Error (a local failure).
inline void CheckRejection(const Status& s, const char* what) { Check(s.is_invalid(), what); }

template <typename T>
Result<T> RoundTrip(ByteSpan bytes, const char* what) {
  Result<T> decoded = DecodeExact<T>(bytes);
  if (!decoded.ok()) {
    CheckRejection(decoded.status(), what);
    return decoded;
  }
  const Bytes again = EncodeToBytes(*decoded);
  Check(again.size() == bytes.size() && std::equal(again.begin(), again.end(), bytes.begin()), what);
  return decoded;
}

}  // namespace vt::fuzz
