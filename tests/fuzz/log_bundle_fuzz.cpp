// Fuzz target for what a challenger unpacks from a solver: the log bundle
// (worker/log_bundle.h), the interval log file inside it and the rounding
// log a node's arbitration carries. Byte 0 picks the decoder. Properties:
// no crash, no unbounded allocation, rejections are Invalid, a rejected
// bundle writes nothing.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "kernels/rounding.h"
#include "tests/fuzz/fuzz_util.h"
#include "worker/log_bundle.h"
#include "worker/run_dir.h"

namespace {

const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vt-log-bundle-fuzz-XXXXXX").string();
    const char* made = mkdtemp(tmpl.data());
    vt::fuzz::Check(made != nullptr, "mkdtemp failed");
    return std::filesystem::path(made);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vt;
  if (size == 0) return 0;
  const ByteSpan in(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      const std::filesystem::path run = ScratchDir() / "run";
      auto manifest = worker::ImportLogBundle(in, run);
      if (!manifest.ok()) {
        fuzz::CheckRejection(manifest.status(), "log bundle rejection is not Invalid");
        fuzz::Check(!std::filesystem::exists(run / "run.json"), "a rejected bundle wrote a manifest");
      }
      std::error_code ec;
      std::filesystem::remove_all(run, ec);
      break;
    }
    case 1: {
      auto logs = worker::DecodeIntervalLogFile(in);
      if (!logs.ok()) fuzz::CheckRejection(logs.status(), "interval log rejection is not Invalid");
      break;
    }
    default: {
      auto log = kernels::DecodeRoundingLog(in);
      if (!log.ok()) {
        fuzz::CheckRejection(log.status(), "rounding log rejection is not Invalid");
        break;
      }
      auto again = kernels::DecodeRoundingLog(kernels::EncodeRoundingLog(*log));
      fuzz::Check(again.ok() && kernels::HashRoundingLog(*again) == kernels::HashRoundingLog(*log),
                  "rounding log differs after a round trip");
      break;
    }
  }
  return 0;
}
