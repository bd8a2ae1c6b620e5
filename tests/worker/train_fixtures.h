#pragma once
// Tiny jobs of the three model families for the training, audit, dispute and
// adversary tests: a few steps of a few examples, so every test runs in
// milliseconds to a second.

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kernels/graph/step_graph.h"
#include "tests/worker/test_util.h"
#include "worker/commitment.h"
#include "worker/job.h"
#include "worker/run_dir.h"
#include "worker/trainer.h"

namespace vt::worker::test {

enum class Family { kMlp, kCnn, kGpt };

inline std::string_view FamilyName(Family f) {
  switch (f) {
    case Family::kMlp:
      return "mlp";
    case Family::kCnn:
      return "cnn";
    case Family::kGpt:
      return "gpt";
  }
  return "?";
}

// N = 8 steps with a checkpoint every 3: checkpoints at 0, 3, 6 and 8 (the
// last interval is short on purpose).
inline std::string JobJson(Family f, std::string_view mode, std::uint64_t steps = 8, std::uint64_t interval = 3) {
  std::string model, optimizer, dataset, batch;
  switch (f) {
    case Family::kMlp:
      model = R"("mlp-tiny")";
      optimizer = R"({"kind": "adamw", "lr": 0.01, "weight_decay": 0.01})";
      dataset = R"({"kind": "synthetic", "seed": 11, "count": 64, "input_dim": 16, "classes": 4})";
      batch = "8";
      break;
    case Family::kCnn:
      model = R"("cnn-tiny")";
      optimizer = R"({"kind": "sgd", "lr": 0.05, "momentum": 0.9})";
      dataset = R"({"kind": "synthetic", "seed": 12, "count": 32, "input_dim": 64, "classes": 4})";
      batch = "4";
      break;
    case Family::kGpt:
      model = R"({"preset": "gpt-tiny", "d_model": 32, "layers": 1, "context": 16})";
      optimizer = R"({"kind": "adamw", "lr": 0.003, "schedule": "cosine", "warmup_steps": 2, "total_steps": 8, "clip_norm": 1.0})";
      dataset = R"({"kind": "synthetic-text", "seed": 13, "bytes": 1024, "window": 16})";
      batch = "2";
      break;
  }
  return std::string("{\"model\": ") + model + ", \"optimizer\": " + optimizer + ", \"dataset\": " + dataset +
         ", \"seed\": 5, \"batch_size\": " + batch + ", \"steps\": " + std::to_string(steps) +
         ", \"checkpoint_interval\": " + std::to_string(interval) + ", \"mode\": \"" + std::string(mode) + "\"}";
}

// A parsed job with its dataset, resolved (dataset root and size filled in).
inline LoadedJob MakeJob(Family f, std::string_view mode, std::uint64_t steps = 8, std::uint64_t interval = 3) {
  auto job = ParseJobJson(JobJson(f, mode, steps, interval));
  if (!job.ok()) throw std::runtime_error("job: " + job.status().ToString());
  auto data = LoadJobDataset(*job);
  if (!data.ok()) throw std::runtime_error("dataset: " + data.status().ToString());
  Status s = ResolveDataset(*job, *data);
  if (!s.ok()) throw std::runtime_error("resolve: " + s.ToString());
  return LoadedJob{std::move(job).value(), std::move(data).value()};
}

inline RunManifest ManifestOf(const std::filesystem::path& dir) {
  auto run = RunDir::Open(dir, false);
  if (!run.ok()) throw std::runtime_error(run.status().ToString());
  auto m = run->LoadManifest();
  if (!m.ok()) throw std::runtime_error(m.status().ToString());
  return *m;
}

inline Bytes ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline kernels::graph::StepGraph GraphOf(const Job& job, std::uint64_t step) {
  auto shapes = kernels::graph::BatchShapes(job.model, static_cast<std::int64_t>(job.spec.batch_size));
  auto g = kernels::graph::BuildStepGraph(job.model, job.optimizer, step, *shapes);
  if (!g.ok()) throw std::runtime_error(g.status().ToString());
  return *g;
}

// A solver's complete run with a signed commitment (also saved as
// commitment.bin in the run directory).
struct SolverRun {
  LoadedJob job;
  TempDir dir;
  RunManifest manifest;
  protocol::Commitment commitment;

  SolverRun(Family f, const char* mode, int threads = 1, kernels::F64Gemm f64_gemm = kernels::F64Gemm::kAuto)
      : job(MakeJob(f, mode)) {
    TrainOptions options;
    options.threads = threads;
    options.f64_gemm = f64_gemm;
    auto summary = Train(job.job, job.dataset, dir.path(), options);
    if (!summary.ok()) throw std::runtime_error(summary.status().ToString());
    manifest = summary->manifest;
    auto c = BuildCommitment(1, job.job.spec, manifest);
    auto key = crypto::SecretKey::Generate();
    if (!c.ok() || !key.ok() || !SignCommitment(*c, *key).ok()) throw std::runtime_error("commitment");
    commitment = *c;
    if (!SaveCommitment(dir / "commitment.bin", commitment).ok()) throw std::runtime_error("save");
  }
  RunDir Run() const { return std::move(RunDir::Open(dir.path(), false)).value(); }
};

}  // namespace vt::worker::test
