#pragma once
// Training jobs: the JSON job file a user writes, the protocol::JobSpec it
// becomes (canonically encoded: its JobHash names the job in bounties and
// commitments), and the dataset the job trains on.
//
// Job file (JSON; unknown keys are errors, "job-unknown-option", so a typo
// never silently falls back to a default):
//
//   {
//     "model": "mlp-tiny",                            a preset (kernels/graph/model.h), or
//     "model": {"preset": "gpt-tiny", "dropout": 0},  a preset with fields overridden, or
//     "model": {"family": "mlp", "input_dim": 16, "hidden": [32], "classes": 4,
//               "activation": "relu"},                 every field of one family:
//        mlp: input_dim, hidden, classes, activation (relu|gelu)
//        cnn: in_channels, height, width, channels, blocks, stem_pool, classes
//        gpt: vocab, context, layers, heads, d_model, dropout
//     "optimizer": {"kind": "adamw"|"sgd", "lr", "min_lr", "schedule":
//                   "constant"|"cosine"|"linear", "warmup_steps", "total_steps",
//                   "momentum", "nesterov", "beta1", "beta2", "eps",
//                   "weight_decay", "clip_norm"}        (absent fields: OptimizerSpec defaults)
//     "dataset": {"kind": "synthetic", "seed", "count", "input_dim", "classes"}
//              | {"kind": "synthetic-text", "seed", "bytes", "window"}
//              | {"kind": "idx", "dir", "split" ("train"|"t10k"), "limit"}
//              | {"kind": "cifar10", "files": [...], "limit"}
//              | {"kind": "text", "path", "window"},
//     "dataset_root": "<64 hex>",   optional: the dataset must hash to it
//     "seed": 0, "batch_size": 8, "steps": 100, "checkpoint_interval": 10,
//     "mode": "repops" | "rounded" | "native",
//     "init": "weights.safetensors",   optional: start from these weights (fine-tuning;
//                                      worker/model_weights.h) instead of the seeded init
//     "rounding": {"bits": 32, "tau": 0.0625,        rounded mode only: the default τ in b-bit ulps
//                  "tau_table": {"matmul/512x768,768x2304": 64}   (or "tau_q16": 4096), and per-node τ
//                  (or "tau_table": "path")}        (tau_q16 by node key, kernels/calibration.h; a path
//                                                    names a canonical TauTable file, vt-calibrate --out)
//   }
//
// Relative dataset paths are relative to the job file's directory. Where the
// data lives is not part of the job hash; what it is (its Merkle root and
// size) is.
//
// Failures are Status::Invalid with these reasons (plus the kernels model /
// optimizer reasons, e.g. "model-unknown-preset", "optim-bad-lr", and the
// protocol "job-*" reasons of ValidateJobSpec):
//   job-bad-json         not JSON, or a key twice in one object
//   job-unknown-option   a key the schema does not have (the detail lists the known ones)
//   job-bad-option       a value of the wrong type or range, a missing required key
//   job-dataset-mismatch the dataset's examples do not fit the model's batch shapes
// and dataset-root-mismatch when the data does not hash to dataset_root.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/calibration.h"
#include "kernels/graph/model.h"
#include "kernels/mode.h"
#include "protocol/types.h"
#include "worker/dataset.h"
#include "worker/state.h"

namespace vt::worker {

// Where a job's examples come from (not hashed: the root is).
struct DatasetSource {
  enum class Kind : std::uint8_t { kSynthetic, kSyntheticText, kIdx, kCifar10, kText };
  Kind kind = Kind::kSynthetic;
  std::uint64_t seed = 0;       // synthetic kinds
  std::uint64_t count = 0;      // synthetic: examples; synthetic-text: bytes of text
  std::int64_t input_dim = 0;   // synthetic
  std::uint32_t classes = 0;    // synthetic
  std::uint32_t window = 0;     // text kinds: context length T
  std::filesystem::path path;   // idx: directory; text: file
  std::string split;            // idx
  std::vector<std::filesystem::path> files;  // cifar10
  std::uint64_t limit = 0;      // idx, cifar10: keep the first `limit` examples (0 = all)
  bool operator==(const DatasetSource&) const = default;
};

std::string_view DatasetKindName(DatasetSource::Kind kind);

// A parsed job: the protocol spec plus the decoded parts and where the data is.
struct Job {
  protocol::JobSpec spec;  // dataset_root / dataset_size are zero until ResolveDataset
  kernels::graph::ModelSpec model;
  kernels::graph::OptimizerSpec optimizer;
  kernels::RoundingSpec rounding;  // meaningful in rounded mode; tau_q16 = tau_table.DefaultTau()
  kernels::TauTable tau_table;     // rounded mode: per-node τ (normalized, = spec.tau_table decoded)
  DatasetSource dataset;
  std::optional<Hash256> expected_dataset_root;  // "dataset_root" of the file
  // Bring your own initial weights: the file's "init" (resolved against the
  // job file's directory) and, once loaded (LoadInitialWeights, or from a
  // bounty's initial blob), the state h_0 is. Unset: the seeded init. Not
  // part of the job hash: a bounty's initial_state names h_0.
  std::filesystem::path init_path;
  std::shared_ptr<const TrainingState> initial_state;

  kernels::Mode mode() const { return static_cast<kernels::Mode>(spec.mode); }
  // JobHash(spec). Meaningful after ResolveDataset.
  Hash256 Hash() const { return protocol::JobHash(spec); }
};

// Parses a job file's text. `base_dir` resolves relative dataset paths.
Result<Job> ParseJobJson(std::string_view text, const std::filesystem::path& base_dir = {});
// Reads and parses a job file. Error "file-not-found" / "file-read-failed".
Result<Job> LoadJobFile(const std::filesystem::path& path);
// The job a canonical spec describes (e.g. one read back from a run
// directory): decodes model, optimizer and τ table. The dataset source is
// left empty; ResolveDataset then needs one from a job file.
Result<Job> JobFromSpec(const protocol::JobSpec& spec);

// The job file in normal form: every field explicit, the model as a full
// family object, dataset_root filled in once known. ParseJobJson of it gives
// the same spec.
std::string JobToJson(const Job& job, int indent = 2);

// Loads (or generates) the job's dataset, its examples in the shape the model
// reads (a [28, 28] image becomes [784] for an MLP: same values, same order),
// which is the shape they are committed in.
Result<Dataset> LoadJobDataset(const Job& job);
// Fills spec.dataset_root and spec.dataset_size from `dataset`, checks the
// root against the file's dataset_root (and against a spec that already has
// one: dataset-root-mismatch), checks that the examples fit the model
// (job-dataset-mismatch) and validates the complete spec.
Status ResolveDataset(Job& job, const Dataset& dataset);
// LoadJobFile + LoadJobDataset + ResolveDataset (+ LoadInitialWeights of its "init").
struct LoadedJob {
  Job job;
  Dataset dataset;
};
Result<LoadedJob> LoadJobWithDataset(const std::filesystem::path& path);

// h_0 of the job: `initial_state` when set, else the seeded init of its
// model and optimizer (kernels/graph/model.h InitState).
Result<TrainingState> InitialStateOf(const Job& job, int threads = 1);
// A client's initial state is one the job can train from: the seeded
// state's tensor names and shapes, step, RNG counter and data cursor, and
// finite values. Invalid "job-bad-initial-state" naming the first difference.
Status CheckInitialState(const Job& job, const TrainingState& state);
// Reads a safetensors file of initial weights (worker/model_weights.h
// StateFromWeights: names, shapes, F32, the first mismatch named) and sets
// job.initial_state.
Status LoadInitialWeights(Job& job, const std::filesystem::path& weights);

// The execution configuration of a job on this machine.
kernels::ExecConfig ExecConfigFor(const Job& job, int threads = 1, kernels::Simd simd = kernels::Simd::kAuto,
                                  kernels::Device device = kernels::Device::kCpu);

// The τ table of a rounded job in its one canonical form: a "*" entry only
// when the default τ differs from kernels::kDefaultTauQ16, and no entry equal
// to the default. JobSpec::tau_table = kernels::EncodeJobTauTable of it
// (empty bytes for the empty table); docs/formats.md, "TauTable".
kernels::TauTable NormalizeTauTable(const kernels::TauTable& table);

// A deterministic byte "text" for language-model tests and benchmarks: words
// drawn from a small fixed vocabulary by a Philox stream keyed by `seed`,
// separated by spaces, so that next-byte prediction is learnable.
Bytes SyntheticText(std::uint64_t seed, std::uint64_t bytes);

}  // namespace vt::worker
