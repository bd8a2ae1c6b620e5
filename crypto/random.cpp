#include "crypto/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace vt::crypto {

Status FillOsRandom(std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    // getrandom returns at most 32 MiB per call and may be interrupted by a
    // signal before the entropy pool is ready; loop until everything is filled.
    const ssize_t n = getrandom(out.data() + done, out.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error("os-random-failed", std::string("getrandom: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

}  // namespace vt::crypto
