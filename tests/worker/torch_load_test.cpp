// The weights veritrain writes load into the equivalent PyTorch modules
// (tools/torch_modules.py) with load_state_dict(strict=True): every name and
// shape matches, aliases included — and runs one forward pass. Needs
// /usr/bin/python3 with torch (Debian python3-torch; the script reads
// safetensors itself where the package is absent); skips with a message
// otherwise.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/worker/train_fixtures.h"
#include "worker/model_weights.h"

#ifndef VT_TORCH_MODULES
#error "VT_TORCH_MODULES must name tools/torch_modules.py"
#endif

namespace vt::worker {
namespace {

using test::Family;

bool HaveTorch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

TEST(TorchLoad, ExportedWeightsLoadStrictlyIntoTheEquivalentModules) {
  if (!HaveTorch()) GTEST_SKIP() << "/usr/bin/python3 has no torch (apt-get install python3-torch): skipped";
  test::TempDir dir;
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    SCOPED_TRACE(std::string(test::FamilyName(f)));
    const LoadedJob job = test::MakeJob(f, "repops");
    auto state = InitialStateOf(job.job);
    ASSERT_TRUE(state.ok());
    auto tensors = ModelWeightsForTorch(job.job.model, *state);
    ASSERT_TRUE(tensors.ok());
    const auto weights = dir / (std::string(test::FamilyName(f)) + ".safetensors");
    const auto model = dir / (std::string(test::FamilyName(f)) + ".json");
    ASSERT_TRUE(SaveSafetensors(weights, *tensors).ok());
    {
      std::ofstream(model) << nlohmann::json::parse(JobToJson(job.job))["model"].dump();
    }
    const std::string cmd =
        "/usr/bin/python3 " + std::string(VT_TORCH_MODULES) + " " + model.string() + " " + weights.string();
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
  }
}

}  // namespace
}  // namespace vt::worker
