// Job files: parsing, clear errors, canonical spec, datasets against roots.

#include <gtest/gtest.h>

#include "tests/worker/train_fixtures.h"
#include "worker/job.h"

namespace vt::worker {
namespace {

namespace graph = kernels::graph;

std::string Base(const std::string& model, const std::string& extra = "") {
  return R"({"model": )" + model +
         R"(, "dataset": {"kind": "synthetic", "seed": 1, "count": 32, "input_dim": 16, "classes": 4},
             "batch_size": 4, "steps": 10, "checkpoint_interval": 5)" +
         extra + "}";
}

Status ParseError(const std::string& text) {
  auto job = ParseJobJson(text);
  return job.ok() ? Status::Ok() : job.status();
}

TEST(JobTest, PresetAndDefaults) {
  auto job = ParseJobJson(Base(R"("mlp-tiny")"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const auto* mlp = std::get_if<graph::MlpSpec>(&job->model.arch);
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->input_dim, 16);
  EXPECT_EQ(mlp->hidden, std::vector<std::int64_t>{32});
  EXPECT_EQ(job->optimizer, graph::OptimizerSpec{});
  EXPECT_EQ(job->mode(), kernels::Mode::kRepops);
  EXPECT_EQ(job->spec.model, graph::EncodeModelSpec(job->model));
  EXPECT_EQ(job->spec.optimizer, graph::EncodeOptimizerSpec(job->optimizer));
  EXPECT_EQ(job->spec.rounding_bits, 32);
  EXPECT_TRUE(job->spec.tau_table.empty());
  EXPECT_EQ(job->spec.num_steps, 10u);
  EXPECT_EQ(job->spec.checkpoint_interval, 5u);
}

TEST(JobTest, PresetWithOverrideAndFullFamilyObject) {
  auto gpt = ParseJobJson(Base(R"({"preset": "gpt-tiny", "dropout": 0, "layers": 3})"));
  ASSERT_TRUE(gpt.ok()) << gpt.status().ToString();
  const auto& g = std::get<graph::GptSpec>(gpt->model.arch);
  EXPECT_EQ(g.dropout, 0.0f);
  EXPECT_EQ(g.layers, 3);
  EXPECT_EQ(g.d_model, 64);  // from the preset

  auto cnn = ParseJobJson(Base(
      R"({"family": "cnn", "in_channels": 1, "height": 4, "width": 4, "channels": 2, "blocks": 1, "classes": 3})"));
  ASSERT_TRUE(cnn.ok()) << cnn.status().ToString();
  const auto& c = std::get<graph::CnnSpec>(cnn->model.arch);
  EXPECT_EQ(c.height, 4);
  EXPECT_FALSE(c.stem_pool);
  EXPECT_EQ(c.classes, 3);
}

TEST(JobTest, UnknownModelOptionNamesTheKeyAndTheKnownOnes) {
  const Status s = ParseError(Base(R"({"preset": "mlp-tiny", "hiden": [8]})"));
  EXPECT_EQ(s.reason(), "job-unknown-option");
  EXPECT_NE(s.detail().find("'hiden'"), std::string::npos) << s.detail();
  EXPECT_NE(s.detail().find("hidden"), std::string::npos) << s.detail();
}

TEST(JobTest, EveryUnknownOrWrongThingIsAClearError) {
  struct Case {
    std::string text;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {Base(R"("mlp-huge")"), "model-unknown-preset"},
      {Base(R"({"family": "rnn"})"), "job-unknown-option"},
      {Base(R"("mlp-tiny")", R"(, "colour": 1)"), "job-unknown-option"},
      {Base(R"("mlp-tiny")", R"(, "optimizer": {"kind": "adamw", "momentum_typo": 1})"), "job-unknown-option"},
      {Base(R"("mlp-tiny")", R"(, "optimizer": {"kind": "lion"})"), "job-unknown-option"},
      {Base(R"("mlp-tiny")", R"(, "mode": "fast")"), "job-unknown-option"},
      {Base(R"("mlp-tiny")", R"(, "rounding": {"bits": 24})"), "job-bad-option"},  // not a rounded job
      {Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"tau": 0.3})"), "job-bad-option"},
      {Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"bits": 20})"), "job-bad-option"},
      {Base(R"({"family": "mlp", "input_dim": 16, "hidden": [0], "classes": 4})"), "model-bad-dim"},
      {Base(R"({"family": "mlp", "hidden": [4], "classes": 4})"), "job-bad-option"},  // input_dim missing
      {Base(R"("mlp-tiny")", R"(, "optimizer": {"lr": -1})"), "optim-bad-lr"},
      {Base(R"("mlp-tiny")", R"(, "seed": "7")"), "job-bad-option"},
      {Base(R"("mlp-tiny")", R"(, "seed": -7)"), "job-bad-option"},
      {Base(R"("mlp-tiny")", R"(, "dataset_root": "abc")"), "job-bad-option"},
      {R"({"model": "mlp-tiny", "dataset": {"kind": "tarball"}, "batch_size": 4, "steps": 1, "checkpoint_interval": 1})",
       "job-unknown-option"},
      {R"({"model": "mlp-tiny", "batch_size": 4, "steps": 1, "checkpoint_interval": 1})", "job-bad-option"},
      {R"({"model": "mlp-tiny", "model": "mlp-tiny"})", "job-bad-json"},
      {R"({"model": )", "job-bad-json"},
      {R"([1, 2])", "job-bad-option"},
  };
  for (const Case& c : cases) {
    const Status s = ParseError(c.text);
    EXPECT_EQ(s.reason(), c.reason) << c.text << " → " << s.ToString();
    EXPECT_TRUE(s.is_invalid()) << c.text;
  }
}

TEST(JobTest, RoundedModeCarriesBitsAndTau) {
  auto plain = ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded")"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->spec.mode, 2);
  EXPECT_EQ(plain->spec.rounding_bits, 32);
  // The default τ travels as an empty table (what the referee supports).
  EXPECT_TRUE(plain->spec.tau_table.empty());

  auto custom = ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"bits": 28, "tau": 0.125})"));
  ASSERT_TRUE(custom.ok()) << custom.status().ToString();
  EXPECT_EQ(custom->spec.rounding_bits, 28);
  EXPECT_EQ(custom->rounding.tau_q16, 8192u);
  EXPECT_FALSE(custom->spec.tau_table.empty());
  protocol::JobSpec spec = custom->spec;
  spec.dataset_size = 32;  // what ResolveDataset would fill in
  auto back = JobFromSpec(spec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rounding.bits, 28);
  EXPECT_EQ(back->rounding.tau_q16, 8192u);
  EXPECT_EQ(DecodeTauTable(custom->spec.tau_table).value_or(0), 8192u);
  EXPECT_EQ(DecodeTauTable(EncodeTauTable(1u << 15)).status().reason(), "job-bad-tau-table");  // above the cap
  EXPECT_EQ(DecodeTauTable(EncodeTauTable(kernels::RoundingSpec{}.tau_q16)).status().reason(),
            "job-bad-tau-table");  // the default is the empty table
  Bytes trailing = EncodeTauTable(100);
  trailing.push_back(0);
  EXPECT_EQ(DecodeTauTable(trailing).status().reason(), "job-bad-tau-table");
}

TEST(JobTest, NormalFormAndSpecRoundTrip) {
  for (test::Family f : {test::Family::kMlp, test::Family::kCnn, test::Family::kGpt}) {
    for (const char* mode : {"native", "repops", "rounded"}) {
      LoadedJob loaded = test::MakeJob(f, mode);
      // The normal form parses back to the same spec (dataset root included).
      auto again = ParseJobJson(JobToJson(loaded.job));
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      ASSERT_TRUE(ResolveDataset(*again, loaded.dataset).ok());
      EXPECT_EQ(again->spec, loaded.job.spec) << test::FamilyName(f) << " " << mode;
      EXPECT_EQ(again->Hash(), loaded.job.Hash());
      // The canonical spec alone gives back model, optimizer and rounding.
      auto from_spec = JobFromSpec(loaded.job.spec);
      ASSERT_TRUE(from_spec.ok()) << from_spec.status().ToString();
      EXPECT_EQ(from_spec->model, loaded.job.model);
      EXPECT_EQ(from_spec->optimizer, loaded.job.optimizer);
      EXPECT_EQ(from_spec->rounding.tau_q16, loaded.job.rounding.tau_q16);
      auto decoded = protocol::DecodeJobSpec(protocol::EncodeJobSpec(loaded.job.spec));
      ASSERT_TRUE(decoded.ok());
      EXPECT_EQ(*decoded, loaded.job.spec);
    }
  }
}

TEST(JobTest, EveryFieldChangesTheJobHash) {
  const LoadedJob base = test::MakeJob(test::Family::kMlp, "repops");
  const Hash256 h = base.job.Hash();
  const std::vector<std::string> variants = {
      test::JobJson(test::Family::kMlp, "rounded"),
      test::JobJson(test::Family::kMlp, "native"),
      test::JobJson(test::Family::kMlp, "repops", 9),
      test::JobJson(test::Family::kMlp, "repops", 8, 4),
  };
  for (const std::string& v : variants) {
    auto job = ParseJobJson(v);
    ASSERT_TRUE(job.ok());
    auto data = LoadJobDataset(*job);
    ASSERT_TRUE(ResolveDataset(*job, *data).ok());
    EXPECT_NE(job->Hash(), h) << v;
  }
  std::string seed = test::JobJson(test::Family::kMlp, "repops");
  seed.replace(seed.find("\"seed\": 5"), 9, "\"seed\": 6");
  auto job = ParseJobJson(seed);
  auto data = LoadJobDataset(*job);
  ASSERT_TRUE(ResolveDataset(*job, *data).ok());
  EXPECT_NE(job->Hash(), h);
}

TEST(JobTest, DatasetMustMatchItsRootAndTheModel) {
  LoadedJob loaded = test::MakeJob(test::Family::kMlp, "repops");
  const Hash256 root = loaded.job.spec.dataset_root;
  EXPECT_EQ(root, loaded.dataset.Root());
  EXPECT_EQ(loaded.job.spec.dataset_size, 64u);

  std::string wrong_root = test::JobJson(test::Family::kMlp, "repops");
  wrong_root.insert(wrong_root.size() - 1, ", \"dataset_root\": \"" + std::string(64, 'a') + "\"");
  auto job = ParseJobJson(wrong_root);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  auto data = LoadJobDataset(*job);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(ResolveDataset(*job, *data).reason(), "dataset-root-mismatch");

  std::string right_root = test::JobJson(test::Family::kMlp, "repops");
  right_root.insert(right_root.size() - 1, ", \"dataset_root\": \"" + root.Hex() + "\"");
  job = ParseJobJson(right_root);
  data = LoadJobDataset(*job);
  EXPECT_TRUE(ResolveDataset(*job, *data).ok());

  // Examples of 10 features do not fit an MLP of input 16.
  auto misfit = ParseJobJson(Base(R"("mlp-tiny")").replace(Base(R"("mlp-tiny")").find("\"input_dim\": 16"), 15,
                                                              "\"input_dim\": 10"));
  ASSERT_TRUE(misfit.ok());
  data = LoadJobDataset(*misfit);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(ResolveDataset(*misfit, *data).reason(), "job-dataset-mismatch");
}

TEST(JobTest, ExamplesAreCommittedInTheModelsShape) {
  // 64 synthetic features become [1, 8, 8] images for cnn-tiny; the values
  // and their order are unchanged.
  LoadedJob cnn = test::MakeJob(test::Family::kCnn, "repops");
  EXPECT_EQ(cnn.dataset.input_shape(), (kernels::Shape{1, 8, 8}));
  const Dataset flat = SyntheticClassification(12, 32, 64, 4);
  for (std::uint64_t i : {0u, 7u, 31u}) {
    const auto a = cnn.dataset.input(i);
    const auto b = flat.input(i);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
  LoadedJob gpt = test::MakeJob(test::Family::kGpt, "repops");
  EXPECT_EQ(gpt.dataset.input_shape(), (kernels::Shape{16}));
  EXPECT_EQ(gpt.dataset.size(), (1024u - 1) / 16);
}

TEST(JobTest, LoadJobFileResolvesRelativePathsAndReportsMissingFiles) {
  test::TempDir dir;
  const std::string text = std::string("hello veritrain ").append(200, 'x');
  test::WriteBytes(dir / "corpus.txt", AsBytes(text));
  const std::string job_text = R"({"model": {"preset": "gpt-tiny", "context": 8, "d_model": 16, "layers": 1},
      "dataset": {"kind": "text", "path": "corpus.txt", "window": 8},
      "batch_size": 2, "steps": 2, "checkpoint_interval": 1})";
  test::WriteBytes(dir / "job.json", AsBytes(job_text));
  auto loaded = LoadJobWithDataset(dir / "job.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->dataset.size(), (text.size() - 1) / 8);

  EXPECT_EQ(LoadJobFile(dir / "missing.json").status().reason(), "file-not-found");
  std::filesystem::remove(dir / "corpus.txt");
  EXPECT_EQ(LoadJobWithDataset(dir / "job.json").status().reason(), "file-not-found");
}

TEST(JobTest, SyntheticTextIsDeterministic) {
  EXPECT_EQ(SyntheticText(3, 500), SyntheticText(3, 500));
  EXPECT_NE(SyntheticText(3, 500), SyntheticText(4, 500));
  EXPECT_EQ(SyntheticText(3, 77).size(), 77u);
}

}  // namespace
}  // namespace vt::worker
