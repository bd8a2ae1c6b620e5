#pragma once
// The vt-worker commands: each takes a Config parsed by main.cpp and returns
// the process exit code (0 success, 1 failure — including an audit that
// finds a divergence; usage errors (2) are main.cpp's).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace vt::worker::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Common {
  bool json = false;
  int threads = 1;  // main.cpp defaults it to every core
  std::string simd = "auto";
  std::string device = "cpu";  // where GEMMs run: cpu or cuda (kernels/device.h)
  bool progress = true;
};

struct TrainConfig {
  Common common;
  std::filesystem::path job;
  std::filesystem::path out;
  bool resume = false;
  std::optional<std::uint64_t> resume_step;
  std::optional<std::uint64_t> stop_at_step;
  std::filesystem::path key;  // default <out>/worker.key, created when absent
  std::string passphrase_env = "VT_PASSPHRASE";
  std::uint64_t bounty_id = 0;
  std::string adversary;  // TEST ONLY
  std::string fp64_gemm = "auto";  // rounded jobs: kernels/mode.h F64Gemm
};

struct AuditConfig {
  Common common;
  std::filesystem::path job;
  std::filesystem::path solver;
  std::filesystem::path commitment;  // default <solver>/commitment.bin
  std::filesystem::path out;         // the challenger's own run (default: none)
  bool no_logs = false;
  bool locate = false;
  std::string solver_adversary;  // TEST ONLY: how the (cheating) solver answers --locate questions
};

struct InspectConfig {
  Common common;
  std::filesystem::path path;
  bool tensors = false;
};

struct ExportConfig {
  Common common;
  std::filesystem::path run;
  std::filesystem::path out;
  std::optional<std::uint64_t> checkpoint;
  std::optional<std::uint64_t> step;
  bool include_optimizer = false;
};

struct DisputeConfig {
  Common common;
  std::string what;  // steps | records | inputs | exec
  std::filesystem::path job;
  std::filesystem::path run;
  std::filesystem::path logs;  // default: the run itself
  std::uint64_t checkpoint = 1;
  std::uint64_t step = 0;
  std::uint64_t node = 0;
  std::filesystem::path inputs;  // exec: a node-inputs file; inputs: where to write it
  std::string adversary;         // TEST ONLY
};

int RunTrain(const TrainConfig& config);
int RunAudit(const AuditConfig& config);
int RunInspect(const InspectConfig& config);
int RunExport(const ExportConfig& config);
int RunDispute(const DisputeConfig& config);

}  // namespace vt::worker::cli
