// Weights in and out (worker/model_weights.h): PyTorch names, the tied GPT
// head and batch-norm counters; a client's own initial weights checked
// tensor by tensor (every way of getting one tensor wrong names that tensor);
// a run started from them has h_0 = their state and differs from the seeded
// run; an initial state a malicious client publishes directly is refused
// when the job cannot train from it.
#include "worker/model_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include "tests/support/test_seed.h"
#include "tests/worker/train_fixtures.h"
#include "worker/checkpoint_store.h"

namespace vt::worker {
namespace {

using test::Family;
namespace graph = kernels::graph;

TrainingState Seeded(const Job& job) {
  auto s = InitialStateOf(job);
  if (!s.ok()) throw std::runtime_error(s.status().ToString());
  return std::move(s).value();
}

// A state whose parameters differ from the seeded init (as trained weights do).
TrainingState Perturbed(const Job& job, std::uint64_t seed) {
  TrainingState s = Seeded(job);
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  std::normal_distribution<float> noise(0.0f, 0.1f);
  for (auto& [name, t] : s.tensors)
    if (name.rfind("opt.", 0) != 0)
      for (float& v : t.values()) v += noise(rng);
  return s;
}

SafetensorsContents RoundTrip(const TensorMap& tensors) {
  auto d = DecodeSafetensors(EncodeSafetensors(tensors));
  if (!d.ok()) throw std::runtime_error(d.status().ToString());
  return std::move(d).value();
}

TEST(ModelWeights, TorchNamesFollowTheEquivalentModules) {
  EXPECT_EQ(TorchName(graph::ModelFamily::kMlp, "fc.0.weight"), "fc.0.weight");
  EXPECT_EQ(TorchName(graph::ModelFamily::kCnn, "blocks.0.bn1.running_var"), "blocks.0.bn1.running_var");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "wte.weight"), "transformer.wte.weight");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "h.3.attn.qkv.bias"), "transformer.h.3.attn.c_attn.bias");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "h.0.attn.proj.weight"), "transformer.h.0.attn.c_proj.weight");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "h.11.mlp.fc.weight"), "transformer.h.11.mlp.c_fc.weight");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "h.1.mlp.proj.bias"), "transformer.h.1.mlp.c_proj.bias");
  EXPECT_EQ(TorchName(graph::ModelFamily::kGpt, "ln_f.weight"), "transformer.ln_f.weight");
}

TEST(ModelWeights, ExportHasParametersBuffersAndAliasesButNoOptimizerState) {
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    SCOPED_TRACE(std::string(test::FamilyName(f)));
    const LoadedJob job = test::MakeJob(f, "repops");
    TrainingState s = Perturbed(job.job, 1);
    s.step = 6;
    auto out = ModelWeightsForTorch(job.job.model, s);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    auto params = graph::ParamSpecs(job.job.model);
    std::size_t aliases = 0;
    for (const auto& [name, t] : *out) {
      EXPECT_EQ(name.rfind("opt.", 0), std::string::npos) << name;
      if (name.find("num_batches_tracked") != std::string::npos) {
        ++aliases;
        EXPECT_EQ(t.numel(), 1);
        EXPECT_EQ(t[0], 6.0f) << "one training forward per step";
      }
    }
    if (f == Family::kGpt) {
      ++aliases;
      ASSERT_TRUE(out->count("lm_head.weight"));
      EXPECT_TRUE(out->at("lm_head.weight").BitwiseEqual(s.tensors.at("wte.weight"))) << "tied head";
    }
    if (f == Family::kCnn) {
      EXPECT_EQ(aliases, 3u) << "one counter per batch norm (stem, bn1, bn2)";
    }
    EXPECT_EQ(out->size(), params->size() + aliases);
  }
}

// out → safetensors → in gives back exactly the parameters and buffers, with
// the seeded optimizer state and scalars: so the state hash of weights a
// bounty trained is h_0 of a bounty that continues from them.
TEST(ModelWeights, ExportThenImportRestoresTheModelTensorsBitForBit) {
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    SCOPED_TRACE(std::string(test::FamilyName(f)));
    const LoadedJob job = test::MakeJob(f, "repops");
    const TrainingState trained = Perturbed(job.job, 2);
    auto file = RoundTrip(*ModelWeightsForTorch(job.job.model, trained));
    auto back = StateFromWeights(job.job.model, file, Seeded(job.job));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    const TrainingState seeded = Seeded(job.job);
    for (const auto& [name, t] : back->tensors) {
      const bool opt = name.rfind("opt.", 0) == 0;
      EXPECT_TRUE(t.BitwiseEqual(opt ? seeded.tensors.at(name) : trained.tensors.at(name))) << name;
    }
    EXPECT_NE(StateHash(*back), StateHash(seeded));
    EXPECT_TRUE(CheckInitialState(job.job, *back).ok());
  }
}

// Every single-tensor defect is refused and names the tensor.
TEST(ModelWeights, EveryWrongTensorIsNamed) {
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    SCOPED_TRACE(std::string(test::FamilyName(f)));
    const LoadedJob job = test::MakeJob(f, "repops");
    const TensorMap good = *ModelWeightsForTorch(job.job.model, Perturbed(job.job, 3));
    std::mt19937_64 rng(vt::test::TestSeed());
    for (const auto& [name, t] : good) {
      if (name == "lm_head.weight" || name.find("num_batches_tracked") != std::string::npos) continue;
      // Missing.
      TensorMap m = good;
      m.erase(name);
      auto r = StateFromWeights(job.job.model, RoundTrip(m), Seeded(job.job));
      ASSERT_FALSE(r.ok()) << name;
      EXPECT_EQ(r.status().reason(), "weights-missing-tensor");
      EXPECT_NE(r.status().detail().find(name), std::string::npos) << r.status().detail();
      // Wrong shape: one more element in a random dimension (or a new one).
      m = good;
      kernels::Shape shape = t.shape();
      if (shape.empty()) shape.push_back(1);
      shape[rng() % shape.size()] += 1;
      m[name] = kernels::Tensor(shape);
      r = StateFromWeights(job.job.model, RoundTrip(m), Seeded(job.job));
      ASSERT_FALSE(r.ok()) << name;
      EXPECT_EQ(r.status().reason(), "weights-bad-shape");
      EXPECT_NE(r.status().detail().find(name), std::string::npos);
      // Not finite.
      m = good;
      m[name][static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(t.numel()))] =
          rng() % 2 ? std::nanf("") : INFINITY;
      r = StateFromWeights(job.job.model, RoundTrip(m), Seeded(job.job));
      ASSERT_FALSE(r.ok()) << name;
      EXPECT_EQ(r.status().reason(), "weights-not-finite");
      // F16 in the file (we would have to widen it: not the weights trained).
      SafetensorsContents half = RoundTrip(good);
      half.dtypes[name] = "F16";
      r = StateFromWeights(job.job.model, half, Seeded(job.job));
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().reason(), "weights-bad-dtype");
    }
    TensorMap extra = good;
    extra["decoder.weight"] = kernels::Tensor({2});
    auto r = StateFromWeights(job.job.model, RoundTrip(extra), Seeded(job.job));
    EXPECT_EQ(r.status().reason(), "weights-unknown-tensor");
    EXPECT_NE(r.status().detail().find("decoder.weight"), std::string::npos);
    if (f == Family::kGpt) {
      TensorMap untied = good;
      untied["lm_head.weight"][0] += 1.0f;
      r = StateFromWeights(job.job.model, RoundTrip(untied), Seeded(job.job));
      EXPECT_EQ(r.status().reason(), "weights-tied-mismatch");
    }
  }
}

TEST(ModelWeights, WeightsOfAnotherModelAreRefused) {
  const LoadedJob mlp = test::MakeJob(Family::kMlp, "repops");
  const LoadedJob gpt = test::MakeJob(Family::kGpt, "repops");
  auto file = RoundTrip(*ModelWeightsForTorch(gpt.job.model, Seeded(gpt.job)));
  auto r = StateFromWeights(mlp.job.model, file, Seeded(mlp.job));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "weights-unknown-tensor");
}

// A job file's "init" trains from the weights: checkpoint 0 of the run is
// their state; the run differs from the seeded one.
TEST(ModelWeights, JobInitStartsTheRunFromTheWeights) {
  test::TempDir dir;
  const LoadedJob base = test::MakeJob(Family::kMlp, "repops", 4, 2);
  const TrainingState start = Perturbed(base.job, 4);
  ASSERT_TRUE(SaveSafetensors(dir / "w.safetensors", *ModelWeightsForTorch(base.job.model, start)).ok());
  std::string json = test::JobJson(Family::kMlp, "repops", 4, 2);
  json.insert(1, "\"init\": \"w.safetensors\", ");
  {
    std::ofstream(dir / "job.json") << json;
  }
  auto loaded = LoadJobWithDataset(dir / "job.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->job.initial_state);
  EXPECT_EQ(loaded->job.Hash(), base.job.Hash()) << "the weights are not part of the job hash";
  auto h0 = InitialStateOf(loaded->job);
  ASSERT_TRUE(h0.ok());
  auto a = Train(loaded->job, loaded->dataset, dir / "from-weights");
  auto b = Train(base.job, base.dataset, dir / "seeded");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->manifest.checkpoints.front().state_hash, StateHash(*h0));
  EXPECT_NE(a->manifest.checkpoints.front().state_hash, b->manifest.checkpoints.front().state_hash);
  EXPECT_NE(a->manifest.checkpoints.back().state_hash, b->manifest.checkpoints.back().state_hash);

  // Missing file: named, with where it was looked for.
  std::string missing = test::JobJson(Family::kMlp, "repops", 4, 2);
  missing.insert(1, "\"init\": \"nope.safetensors\", ");
  {
    std::ofstream(dir / "job2.json") << missing;
  }
  auto bad = LoadJobWithDataset(dir / "job2.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().reason(), "file-not-found");
  EXPECT_NE(bad.status().detail().find("nope.safetensors"), std::string::npos);
}

// What a malicious client could publish as an initial blob directly (not
// through the CLI): the daemons refuse to train from it before claiming.
TEST(ModelWeights, InitialStatesTheJobCannotTrainFromAreRefused) {
  const LoadedJob job = test::MakeJob(Family::kCnn, "repops");
  const TrainingState good = Perturbed(job.job, 5);
  ASSERT_TRUE(CheckInitialState(job.job, good).ok());
  std::vector<std::pair<std::string, TrainingState>> bad;
  TrainingState s = good;
  s.step = 3;
  bad.push_back({"not at step 0", s});
  s = good;
  s.tensors.erase(s.tensors.begin());
  bad.push_back({"a tensor missing", s});
  s = good;
  s.tensors["extra"] = kernels::Tensor({1});
  bad.push_back({"an extra tensor", s});
  s = good;
  s.tensors.begin()->second = kernels::Tensor({1, 2, 3});
  bad.push_back({"a wrong shape", s});
  s = good;
  s.tensors.rbegin()->second[0] = std::nanf("");
  bad.push_back({"a NaN", s});
  s = good;
  s.cursor.epoch += 1;
  bad.push_back({"another data cursor", s});
  for (const auto& [what, st] : bad) {
    const Status r = CheckInitialState(job.job, st);
    EXPECT_EQ(r.reason(), "job-bad-initial-state") << what;
  }
}

TEST(JobErrors, BatchLargerThanTheDatasetSaysWhatToChange) {
  std::string json = test::JobJson(Family::kMlp, "repops");
  const std::string from = "\"batch_size\": 8", to = "\"batch_size\": 65";
  json.replace(json.find(from), from.size(), to);
  auto job = ParseJobJson(json);
  ASSERT_TRUE(job.ok());
  auto data = LoadJobDataset(*job);
  ASSERT_TRUE(data.ok());
  const Status s = ResolveDataset(*job, *data);
  EXPECT_EQ(s.reason(), "job-dataset-mismatch");
  EXPECT_NE(s.detail().find("batch_size 65 exceeds the dataset's 64 examples"), std::string::npos) << s.detail();
}

}  // namespace
}  // namespace vt::worker
