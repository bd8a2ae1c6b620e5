// Job files: parsing, clear errors, canonical spec, datasets against roots.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/encoding.h"
#include "kernels/calibration.h"
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
  // The canonical kernels TauTable with one "*" (default) entry.
  auto table = kernels::DecodeJobTauTable(custom->spec.tau_table);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->entries().size(), 1u);
  EXPECT_EQ(table->DefaultTau(), 8192u);
  EXPECT_EQ(back->tau_table, *table);
  // Backward compatible: "tau": 0.0625 (the old default) is now a "*" entry.
  auto legacy =
      ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"bits": 32, "tau": 0.0625})"));
  ASSERT_TRUE(legacy.ok()) << legacy.status().ToString();
  EXPECT_EQ(legacy->rounding.tau_q16, kernels::kLegacyTauQ16);
  EXPECT_FALSE(legacy->spec.tau_table.empty());
  // The built-in default, however given, is the empty table: one job, one hash.
  auto explicit_default =
      ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"tau_q16": 16})"));
  ASSERT_TRUE(explicit_default.ok());
  EXPECT_TRUE(explicit_default->spec.tau_table.empty());
  EXPECT_EQ(explicit_default->Hash(), plain->Hash());
}

TEST(JobTest, PerNodeTauTableInlineAndFromFile) {
  // Inline entries by node key; an entry equal to the default is dropped.
  auto inline_table = ParseJobJson(Base(
      R"("mlp-tiny")",
      R"(, "mode": "rounded", "rounding": {"tau_q16": 32, "tau_table": {"linear/8x16,32x16,32": 64, "relu/8x32": 32}})"));
  ASSERT_TRUE(inline_table.ok()) << inline_table.status().ToString();
  EXPECT_EQ(inline_table->rounding.tau_q16, 32u);
  EXPECT_EQ(inline_table->tau_table.Lookup("linear/8x16,32x16,32"), 64u);
  EXPECT_EQ(inline_table->tau_table.Lookup("relu/8x32"), 32u);
  EXPECT_EQ(inline_table->tau_table.Lookup("gelu/1"), 32u);
  EXPECT_EQ(inline_table->tau_table.entries().size(), 2u);  // "*" and the linear entry
  protocol::JobSpec spec = inline_table->spec;
  spec.dataset_size = 32;
  auto back = JobFromSpec(spec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tau_table, inline_table->tau_table);
  // The normal form keeps the table.
  auto again = ParseJobJson(JobToJson(*inline_table));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->spec.tau_table, inline_table->spec.tau_table);

  // A canonical TauTable file (vt-calibrate --out), relative to the job file.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "vt_job_tau_table_test";
  std::filesystem::create_directories(dir);
  kernels::TauTable file_table;
  file_table.Set("*", 48);
  file_table.Set("matmul/2x3,3x4", 100);
  const Bytes bytes = EncodeToBytes(file_table);
  {
    std::ofstream f(dir / "taus.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  auto from_file = ParseJobJson(
      Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"tau_table": "taus.bin"})"), dir);
  ASSERT_TRUE(from_file.ok()) << from_file.status().ToString();
  EXPECT_EQ(from_file->tau_table, file_table);
  EXPECT_EQ(from_file->rounding.tau_q16, 48u);
  // A default given twice, a bad value, a corrupt file.
  EXPECT_EQ(ParseJobJson(Base(R"("mlp-tiny")",
                              R"(, "mode": "rounded", "rounding": {"tau_q16": 16, "tau_table": "taus.bin"})"),
                         dir)
                .status()
                .reason(),
            "job-bad-option");
  EXPECT_EQ(
      ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"tau_table": {"a": 16385}})"))
          .status()
          .reason(),
      "job-bad-option");
  {
    std::ofstream f(dir / "bad.bin", std::ios::binary);
    f << "xyz";
  }
  EXPECT_EQ(
      ParseJobJson(Base(R"("mlp-tiny")", R"(, "mode": "rounded", "rounding": {"tau_table": "bad.bin"})"), dir)
          .status()
          .reason(),
      "job-bad-tau-table");
  std::filesystem::remove_all(dir);
}

TEST(JobTest, JobTauTableIsStrictAndCanonical) {
  using kernels::DecodeJobTauTable;
  EXPECT_TRUE(DecodeJobTauTable({}).ok());
  EXPECT_EQ(DecodeJobTauTable(*FromHex("00")).status().reason(),
            "job-bad-tau-table");  // empty table, not as ""
  kernels::TauTable t;
  t.Set("*", 16);  // = the built-in default
  EXPECT_EQ(DecodeJobTauTable(EncodeToBytes(t)).status().reason(), "job-bad-tau-table");
  t.Set("*", 32);
  t.Set("relu/4", 32);  // = the table's default
  EXPECT_EQ(DecodeJobTauTable(EncodeToBytes(t)).status().reason(), "job-bad-tau-table");
  EXPECT_EQ(NormalizeTauTable(t).entries().size(), 1u);
  t.Set("relu/4", 64);
  Bytes ok = EncodeToBytes(t);
  ASSERT_TRUE(DecodeJobTauTable(ok).ok());
  ok.push_back(0);
  EXPECT_EQ(DecodeJobTauTable(ok).status().reason(), "job-bad-tau-table");  // trailing byte
  EXPECT_EQ(DecodeJobTauTable(*FromHex("01"
                                       "012a"
                                       "818001"))
                .status()
                .reason(),
            "job-bad-tau-table");  // > cap
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
      EXPECT_EQ(from_spec->tau_table, loaded.job.tau_table);
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
