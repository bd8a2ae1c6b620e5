// Job files: strict JSON → protocol::JobSpec and the kernels graph specs.

#include "worker/job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/philox.h"
#include "common/random.h"
#include "kernels/graph/step_graph.h"
#include "worker/file_io.h"
#include "worker/model_weights.h"
#include "worker/safetensors.h"

namespace vt::worker {

namespace {

using nlohmann::json;
namespace graph = kernels::graph;

// Philox tensor id of SyntheticText, beside the data-order (0xFFFF0000) and
// synthetic-classification (0xFFFF0001/2) streams of worker/.
constexpr std::uint32_t kSyntheticTextStream = 0xFFFF0010u;

Status BadOption(const std::string& where, const std::string& what) {
  return Status::Invalid("job-bad-option", where + ": " + what);
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Every key of `obj` must be one of `known`.
Status CheckKeys(const json& obj, const std::string& where, const std::vector<std::string>& known) {
  if (!obj.is_object()) return BadOption(where, "expected an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      return Status::Invalid("job-unknown-option", where + ": unknown option '" + it.key() + "' (known: " +
                                                       Join(known) + ")");
    }
  }
  return Status::Ok();
}

std::string Path(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

template <typename T>
Status GetUnsigned(const json& obj, const std::string& where, const std::string& key, T& out,
                   std::uint64_t max = std::numeric_limits<T>::max(), std::uint64_t min = 0) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_number_unsigned()) {
    return BadOption(Path(where, key), "expected a non-negative integer");
  }
  const auto v = it->get<std::uint64_t>();
  if (v > max || v < min) {
    return BadOption(Path(where, key), "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  out = static_cast<T>(v);
  return Status::Ok();
}

Status GetInt64(const json& obj, const std::string& where, const std::string& key, std::int64_t& out) {
  std::uint64_t v = static_cast<std::uint64_t>(std::max<std::int64_t>(out, 0));
  VT_TRY(GetUnsigned(obj, where, key, v, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
  out = static_cast<std::int64_t>(v);
  return Status::Ok();
}

Status GetFloat(const json& obj, const std::string& where, const std::string& key, float& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_number()) return BadOption(Path(where, key), "expected a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
    return BadOption(Path(where, key), "not a finite binary32 number");
  }
  out = static_cast<float>(v);
  return Status::Ok();
}

Status GetBool(const json& obj, const std::string& where, const std::string& key, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_boolean()) return BadOption(Path(where, key), "expected true or false");
  out = it->get<bool>();
  return Status::Ok();
}

Status GetString(const json& obj, const std::string& where, const std::string& key, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (!it->is_string()) return BadOption(Path(where, key), "expected a string");
  out = it->get<std::string>();
  return Status::Ok();
}

Status Require(const json& obj, const std::string& where, const std::string& key) {
  if (!obj.contains(key)) return BadOption(Path(where, key), "required");
  return Status::Ok();
}

// ---- model --------------------------------------------------------------------

const std::vector<std::string> kMlpKeys = {"input_dim", "hidden", "classes", "activation"};
const std::vector<std::string> kCnnKeys = {"in_channels", "height", "width", "channels", "blocks", "stem_pool",
                                           "classes"};
const std::vector<std::string> kGptKeys = {"vocab", "context", "layers", "heads", "d_model", "dropout"};

std::vector<std::string> WithExtra(std::vector<std::string> keys, const std::string& extra) {
  keys.insert(keys.begin(), extra);
  return keys;
}

Status ApplyMlp(const json& obj, graph::MlpSpec& m) {
  const std::string w = "model";
  VT_TRY(GetInt64(obj, w, "input_dim", m.input_dim));
  VT_TRY(GetInt64(obj, w, "classes", m.classes));
  if (auto it = obj.find("hidden"); it != obj.end()) {
    if (!it->is_array()) return BadOption("model.hidden", "expected an array of widths");
    m.hidden.clear();
    for (const json& h : *it) {
      if (!h.is_number_unsigned()) return BadOption("model.hidden", "widths are positive integers");
      m.hidden.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(h.get<std::uint64_t>(), 1ull << 62)));
    }
  }
  std::string act;
  VT_TRY(GetString(obj, w, "activation", act));
  if (act == "relu") {
    m.activation = graph::Activation::kRelu;
  } else if (act == "gelu") {
    m.activation = graph::Activation::kGelu;
  } else if (!act.empty()) {
    return BadOption("model.activation", "'" + act + "' is not relu or gelu");
  }
  return Status::Ok();
}

Status ApplyCnn(const json& obj, graph::CnnSpec& m) {
  const std::string w = "model";
  VT_TRY(GetInt64(obj, w, "in_channels", m.in_channels));
  VT_TRY(GetInt64(obj, w, "height", m.height));
  VT_TRY(GetInt64(obj, w, "width", m.width));
  VT_TRY(GetInt64(obj, w, "channels", m.channels));
  VT_TRY(GetInt64(obj, w, "blocks", m.blocks));
  VT_TRY(GetBool(obj, w, "stem_pool", m.stem_pool));
  VT_TRY(GetInt64(obj, w, "classes", m.classes));
  return Status::Ok();
}

Status ApplyGpt(const json& obj, graph::GptSpec& m) {
  const std::string w = "model";
  VT_TRY(GetInt64(obj, w, "vocab", m.vocab));
  VT_TRY(GetInt64(obj, w, "context", m.context));
  VT_TRY(GetInt64(obj, w, "layers", m.layers));
  VT_TRY(GetInt64(obj, w, "heads", m.heads));
  VT_TRY(GetInt64(obj, w, "d_model", m.d_model));
  VT_TRY(GetFloat(obj, w, "dropout", m.dropout));
  return Status::Ok();
}

Status PresetError(const std::string& name) {
  std::vector<std::string> names;
  for (std::string_view n : graph::ModelPresetNames()) names.emplace_back(n);
  return Status::Invalid("model-unknown-preset", "no model preset named '" + name + "' (presets: " + Join(names) + ")");
}

Result<graph::ModelSpec> ParseModel(const json& j) {
  if (j.is_string()) {
    auto preset = graph::ModelPreset(j.get<std::string>());
    if (!preset.ok()) return PresetError(j.get<std::string>());
    return preset;
  }
  if (!j.is_object()) return BadOption("model", "expected a preset name or an object");
  graph::ModelSpec model;
  if (j.contains("preset")) {
    std::string name;
    VT_TRY(GetString(j, "model", "preset", name));
    auto preset = graph::ModelPreset(name);
    if (!preset.ok()) return PresetError(name);
    model = *preset;
  } else {
    VT_TRY(Require(j, "model", "family"));
    std::string family;
    VT_TRY(GetString(j, "model", "family", family));
    if (family == "mlp") {
      model.arch = graph::MlpSpec{};
    } else if (family == "cnn") {
      model.arch = graph::CnnSpec{};
    } else if (family == "gpt") {
      model.arch = graph::GptSpec{};
    } else {
      return Status::Invalid("job-unknown-option", "model.family: unknown family '" + family + "' (known: mlp, cnn, gpt)");
    }
  }
  const std::string head = j.contains("preset") ? "preset" : "family";
  if (auto* m = std::get_if<graph::MlpSpec>(&model.arch)) {
    VT_TRY(CheckKeys(j, "model (mlp)", WithExtra(kMlpKeys, head)));
    if (!j.contains("preset")) {
      for (const char* k : {"input_dim", "classes"}) VT_TRY(Require(j, "model", k));
    }
    VT_TRY(ApplyMlp(j, *m));
  } else if (auto* c = std::get_if<graph::CnnSpec>(&model.arch)) {
    VT_TRY(CheckKeys(j, "model (cnn)", WithExtra(kCnnKeys, head)));
    if (!j.contains("preset")) {
      for (const char* k : {"in_channels", "height", "width", "channels", "classes"}) VT_TRY(Require(j, "model", k));
    }
    VT_TRY(ApplyCnn(j, *c));
  } else if (auto* g = std::get_if<graph::GptSpec>(&model.arch)) {
    VT_TRY(CheckKeys(j, "model (gpt)", WithExtra(kGptKeys, head)));
    if (!j.contains("preset")) {
      for (const char* k : {"vocab", "context", "layers", "heads", "d_model"}) VT_TRY(Require(j, "model", k));
    }
    VT_TRY(ApplyGpt(j, *g));
  }
  VT_TRY(graph::ValidateModelSpec(model));
  return model;
}

// ---- optimizer ------------------------------------------------------------------

Result<graph::OptimizerSpec> ParseOptimizer(const json& j) {
  graph::OptimizerSpec o;
  if (j.is_null()) return o;
  const std::string w = "optimizer";
  VT_TRY(CheckKeys(j, w,
                   {"kind", "lr", "min_lr", "schedule", "warmup_steps", "total_steps", "momentum", "nesterov", "beta1",
                    "beta2", "eps", "weight_decay", "clip_norm"}));
  std::string kind;
  VT_TRY(GetString(j, w, "kind", kind));
  if (kind == "sgd") {
    o.kind = graph::OptimizerKind::kSgd;
  } else if (kind == "adamw" || kind.empty()) {
    o.kind = graph::OptimizerKind::kAdamW;
  } else {
    return Status::Invalid("job-unknown-option", "optimizer.kind: unknown optimizer '" + kind + "' (known: sgd, adamw)");
  }
  std::string schedule;
  VT_TRY(GetString(j, w, "schedule", schedule));
  if (schedule == "constant" || schedule.empty()) {
    o.schedule = kernels::LrScheduleKind::kConstant;
  } else if (schedule == "cosine") {
    o.schedule = kernels::LrScheduleKind::kCosine;
  } else if (schedule == "linear") {
    o.schedule = kernels::LrScheduleKind::kLinear;
  } else {
    return Status::Invalid("job-unknown-option",
                           "optimizer.schedule: unknown schedule '" + schedule + "' (known: constant, cosine, linear)");
  }
  VT_TRY(GetFloat(j, w, "lr", o.lr));
  VT_TRY(GetFloat(j, w, "min_lr", o.min_lr));
  VT_TRY(GetInt64(j, w, "warmup_steps", o.warmup_steps));
  VT_TRY(GetInt64(j, w, "total_steps", o.total_steps));
  VT_TRY(GetFloat(j, w, "momentum", o.momentum));
  VT_TRY(GetBool(j, w, "nesterov", o.nesterov));
  VT_TRY(GetFloat(j, w, "beta1", o.beta1));
  VT_TRY(GetFloat(j, w, "beta2", o.beta2));
  VT_TRY(GetFloat(j, w, "eps", o.eps));
  VT_TRY(GetFloat(j, w, "weight_decay", o.weight_decay));
  VT_TRY(GetFloat(j, w, "clip_norm", o.clip_norm));
  VT_TRY(graph::ValidateOptimizerSpec(o));
  return o;
}

// ---- dataset --------------------------------------------------------------------

std::filesystem::path Resolve(const std::filesystem::path& base, const std::string& p) {
  std::filesystem::path path(p);
  if (path.is_relative() && !base.empty()) return base / path;
  return path;
}

Result<DatasetSource> ParseDataset(const json& j, const std::filesystem::path& base) {
  const std::string w = "dataset";
  if (!j.is_object()) return BadOption(w, "expected an object with a \"kind\"");
  VT_TRY(Require(j, w, "kind"));
  std::string kind;
  VT_TRY(GetString(j, w, "kind", kind));
  DatasetSource d;
  if (kind == "synthetic") {
    d.kind = DatasetSource::Kind::kSynthetic;
    VT_TRY(CheckKeys(j, w + " (synthetic)", {"kind", "seed", "count", "input_dim", "classes"}));
    for (const char* k : {"count", "input_dim", "classes"}) VT_TRY(Require(j, w, k));
    VT_TRY(GetUnsigned(j, w, "seed", d.seed));
    VT_TRY(GetUnsigned(j, w, "count", d.count, std::uint64_t{1} << 32, 1));
    VT_TRY(GetUnsigned(j, w, "input_dim", d.input_dim, graph::kMaxDim, 1));
    VT_TRY(GetUnsigned(j, w, "classes", d.classes, 1u << 20, 2));
  } else if (kind == "synthetic-text") {
    d.kind = DatasetSource::Kind::kSyntheticText;
    VT_TRY(CheckKeys(j, w + " (synthetic-text)", {"kind", "seed", "bytes", "window"}));
    for (const char* k : {"bytes", "window"}) VT_TRY(Require(j, w, k));
    VT_TRY(GetUnsigned(j, w, "seed", d.seed));
    VT_TRY(GetUnsigned(j, w, "bytes", d.count, std::uint64_t{1} << 32, 2));
    VT_TRY(GetUnsigned(j, w, "window", d.window, graph::kMaxDim, 1));
  } else if (kind == "idx") {
    d.kind = DatasetSource::Kind::kIdx;
    VT_TRY(CheckKeys(j, w + " (idx)", {"kind", "dir", "split", "limit"}));
    VT_TRY(Require(j, w, "dir"));
    std::string dir;
    VT_TRY(GetString(j, w, "dir", dir));
    d.path = Resolve(base, dir);
    d.split = "train";
    VT_TRY(GetString(j, w, "split", d.split));
    if (d.split != "train" && d.split != "t10k") return BadOption("dataset.split", "must be \"train\" or \"t10k\"");
    VT_TRY(GetUnsigned(j, w, "limit", d.limit));
  } else if (kind == "cifar10") {
    d.kind = DatasetSource::Kind::kCifar10;
    VT_TRY(CheckKeys(j, w + " (cifar10)", {"kind", "files", "limit"}));
    VT_TRY(Require(j, w, "files"));
    const json& files = j.at("files");
    if (!files.is_array() || files.empty()) return BadOption("dataset.files", "expected a non-empty array of paths");
    for (const json& f : files) {
      if (!f.is_string()) return BadOption("dataset.files", "expected paths");
      d.files.push_back(Resolve(base, f.get<std::string>()));
    }
    VT_TRY(GetUnsigned(j, w, "limit", d.limit));
  } else if (kind == "text") {
    d.kind = DatasetSource::Kind::kText;
    VT_TRY(CheckKeys(j, w + " (text)", {"kind", "path", "window"}));
    for (const char* k : {"path", "window"}) VT_TRY(Require(j, w, k));
    std::string path;
    VT_TRY(GetString(j, w, "path", path));
    d.path = Resolve(base, path);
    VT_TRY(GetUnsigned(j, w, "window", d.window, graph::kMaxDim, 1));
  } else {
    return Status::Invalid("job-unknown-option", "dataset.kind: unknown kind '" + kind +
                                                     "' (known: synthetic, synthetic-text, idx, cifar10, text)");
  }
  return d;
}

json DatasetToJson(const DatasetSource& d) {
  json j;
  j["kind"] = std::string(DatasetKindName(d.kind));
  switch (d.kind) {
    case DatasetSource::Kind::kSynthetic:
      j["seed"] = d.seed;
      j["count"] = d.count;
      j["input_dim"] = d.input_dim;
      j["classes"] = d.classes;
      break;
    case DatasetSource::Kind::kSyntheticText:
      j["seed"] = d.seed;
      j["bytes"] = d.count;
      j["window"] = d.window;
      break;
    case DatasetSource::Kind::kIdx:
      j["dir"] = d.path.string();
      j["split"] = d.split;
      j["limit"] = d.limit;
      break;
    case DatasetSource::Kind::kCifar10: {
      json files = json::array();
      for (const auto& f : d.files) files.push_back(f.string());
      j["files"] = files;
      j["limit"] = d.limit;
      break;
    }
    case DatasetSource::Kind::kText:
      j["path"] = d.path.string();
      j["window"] = d.window;
      break;
  }
  return j;
}

json ModelToJson(const graph::ModelSpec& model) {
  json j;
  std::visit(
      [&j](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, graph::MlpSpec>) {
          j["family"] = "mlp";
          j["input_dim"] = m.input_dim;
          j["hidden"] = m.hidden;
          j["classes"] = m.classes;
          j["activation"] = m.activation == graph::Activation::kRelu ? "relu" : "gelu";
        } else if constexpr (std::is_same_v<M, graph::CnnSpec>) {
          j["family"] = "cnn";
          j["in_channels"] = m.in_channels;
          j["height"] = m.height;
          j["width"] = m.width;
          j["channels"] = m.channels;
          j["blocks"] = m.blocks;
          j["stem_pool"] = m.stem_pool;
          j["classes"] = m.classes;
        } else {
          j["family"] = "gpt";
          j["vocab"] = m.vocab;
          j["context"] = m.context;
          j["layers"] = m.layers;
          j["heads"] = m.heads;
          j["d_model"] = m.d_model;
          j["dropout"] = m.dropout;
        }
      },
      model.arch);
  return j;
}

const char* ScheduleName(kernels::LrScheduleKind k) {
  switch (k) {
    case kernels::LrScheduleKind::kConstant:
      return "constant";
    case kernels::LrScheduleKind::kCosine:
      return "cosine";
    case kernels::LrScheduleKind::kLinear:
      return "linear";
  }
  return "constant";
}

json OptimizerToJson(const graph::OptimizerSpec& o) {
  json j;
  j["kind"] = o.kind == graph::OptimizerKind::kSgd ? "sgd" : "adamw";
  j["lr"] = o.lr;
  j["min_lr"] = o.min_lr;
  j["schedule"] = ScheduleName(o.schedule);
  j["warmup_steps"] = o.warmup_steps;
  j["total_steps"] = o.total_steps;
  j["momentum"] = o.momentum;
  j["nesterov"] = o.nesterov;
  j["beta1"] = o.beta1;
  j["beta2"] = o.beta2;
  j["eps"] = o.eps;
  j["weight_decay"] = o.weight_decay;
  j["clip_norm"] = o.clip_norm;
  return j;
}

// Parses with duplicate-key detection (nlohmann keeps the last value silently).
Result<json> ParseStrictJson(std::string_view text) {
  std::vector<std::set<std::string>> seen;
  std::string duplicate;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        seen.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!seen.empty()) seen.pop_back();
        break;
      case json::parse_event_t::key:
        if (!seen.empty() && !seen.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid("job-bad-json", "the job file is not valid JSON");
  if (!duplicate.empty()) return Status::Invalid("job-bad-json", "key '" + duplicate + "' appears twice in one object");
  return j;
}

}  // namespace

std::string_view DatasetKindName(DatasetSource::Kind kind) {
  switch (kind) {
    case DatasetSource::Kind::kSynthetic:
      return "synthetic";
    case DatasetSource::Kind::kSyntheticText:
      return "synthetic-text";
    case DatasetSource::Kind::kIdx:
      return "idx";
    case DatasetSource::Kind::kCifar10:
      return "cifar10";
    case DatasetSource::Kind::kText:
      return "text";
  }
  return "unknown";
}

kernels::TauTable NormalizeTauTable(const kernels::TauTable& table) {
  // One job, one encoding: drop what the lookup would give anyway.
  kernels::TauTable out;
  const std::uint32_t fallback = table.DefaultTau();
  if (fallback != kernels::kDefaultTauQ16) out.Set(std::string(kernels::kTauDefaultKey), fallback);
  for (const auto& [key, tau] : table.entries()) {
    if (key != kernels::kTauDefaultKey && tau != fallback) out.Set(key, tau);
  }
  return out;
}

namespace {

// "tau_table": {"<key>": tau_q16, …} inline, or "<path>" of a file holding the
// canonical TauTable bytes (what vt-calibrate --out writes).
Status ParseTauTableOption(const json& v, const std::filesystem::path& base_dir, kernels::TauTable& table) {
  if (v.is_string()) {
    std::filesystem::path path = v.get<std::string>();
    if (path.is_relative()) path = base_dir / path;
    VT_ASSIGN_OR_RETURN(Bytes bytes, ReadFile(path));
    auto decoded = DecodeExact<kernels::TauTable>(bytes);
    if (!decoded.ok())
      return Status::Invalid("job-bad-tau-table", path.string() + ": " + decoded.status().ToString());
    table = std::move(decoded).value();
    return Status::Ok();
  }
  if (!v.is_object())
    return BadOption("rounding.tau_table", "an object {key: tau_q16} or the path of a table file");
  for (const auto& [key, tau] : v.items()) {
    if (key.empty() || key.size() > 256) return BadOption("rounding.tau_table", "keys are 1..256 bytes");
    if (!tau.is_number_unsigned() || tau.get<std::uint64_t>() > kernels::kMaxTauQ16) {
      return BadOption("rounding.tau_table", key + ": tau_q16 must be an integer in [0, 16384]");
    }
    table.Set(key, static_cast<std::uint32_t>(tau.get<std::uint64_t>()));
  }
  return Status::Ok();
}

}  // namespace

Result<Job> ParseJobJson(std::string_view text, const std::filesystem::path& base_dir) {
  VT_ASSIGN_OR_RETURN(json j, ParseStrictJson(text));
  if (!j.is_object()) return BadOption("job", "the job file must be a JSON object");
  VT_TRY(CheckKeys(j, "job",
                   {"version", "model", "optimizer", "dataset", "dataset_root", "seed", "batch_size", "steps",
                    "checkpoint_interval", "mode", "rounding", "init"}));
  for (const char* k : {"model", "dataset", "batch_size", "steps", "checkpoint_interval"}) VT_TRY(Require(j, "", k));
  Job job;
  VT_TRY(GetUnsigned(j, "", "version", job.spec.version));
  VT_ASSIGN_OR_RETURN(job.model, ParseModel(j.at("model")));
  VT_ASSIGN_OR_RETURN(job.optimizer, ParseOptimizer(j.contains("optimizer") ? j.at("optimizer") : json()));
  VT_ASSIGN_OR_RETURN(job.dataset, ParseDataset(j.at("dataset"), base_dir));
  if (j.contains("dataset_root")) {
    std::string hex;
    VT_TRY(GetString(j, "", "dataset_root", hex));
    auto root = Hash256::FromHex(hex);
    if (!root.ok()) return BadOption("dataset_root", "expected 64 hex digits");
    job.expected_dataset_root = *root;
  }
  if (j.contains("init")) {
    std::string init;
    VT_TRY(GetString(j, "", "init", init));
    if (init.empty()) return BadOption("init", "expected the path of a safetensors file");
    job.init_path = std::filesystem::path(init).is_absolute() ? std::filesystem::path(init) : base_dir / init;
  }
  VT_TRY(GetUnsigned(j, "", "seed", job.spec.seed));
  VT_TRY(GetUnsigned(j, "", "batch_size", job.spec.batch_size, graph::kMaxDim, 1));
  VT_TRY(GetUnsigned(j, "", "steps", job.spec.num_steps, std::uint64_t{1} << 62, 1));
  VT_TRY(GetUnsigned(j, "", "checkpoint_interval", job.spec.checkpoint_interval, std::uint64_t{1} << 62, 1));
  std::string mode_name = "repops";
  VT_TRY(GetString(j, "", "mode", mode_name));
  auto mode = kernels::ParseMode(mode_name);
  if (!mode.ok()) {
    return Status::Invalid("job-unknown-option", "mode: unknown mode '" + mode_name + "' (known: native, repops, rounded, certified)");
  }
  job.spec.mode = static_cast<std::uint8_t>(*mode);
  if (j.contains("rounding")) {
    if (*mode != kernels::Mode::kRounded) return BadOption("rounding", "only a rounded-mode job has rounding options");
    const json& r = j.at("rounding");
    VT_TRY(CheckKeys(r, "rounding", {"bits", "tau", "tau_q16", "tau_table"}));
    int bits = job.rounding.bits;
    VT_TRY(GetUnsigned(r, "rounding", "bits", bits, kernels::kMaxRoundingBits, kernels::kMinRoundingBits));
    job.rounding.bits = bits;
    if (r.contains("tau") && r.contains("tau_q16")) return BadOption("rounding", "give tau or tau_q16, not both");
    if (r.contains("tau")) {
      float tau = 0;
      VT_TRY(GetFloat(r, "rounding", "tau", tau));
      const double q = static_cast<double>(tau) * 65536.0;
      if (!(q >= 0.0) || q > kernels::kMaxTauQ16 || q != std::floor(q)) {
        return BadOption("rounding.tau", "must be a multiple of 2^-16 in [0, 1/4]");
      }
      job.rounding.tau_q16 = static_cast<std::uint32_t>(q);
    }
    VT_TRY(GetUnsigned(r, "rounding", "tau_q16", job.rounding.tau_q16, kernels::kMaxTauQ16));
    kernels::TauTable table;
    if (r.contains("tau_table")) VT_TRY(ParseTauTableOption(r.at("tau_table"), base_dir, table));
    const bool given_default = r.contains("tau") || r.contains("tau_q16");
    if (given_default && table.Contains(kernels::kTauDefaultKey)) {
      return BadOption("rounding",
                       "give the default tau as rounding.tau(_q16) or as a \"*\" entry, not both");
    }
    if (given_default) table.Set(std::string(kernels::kTauDefaultKey), job.rounding.tau_q16);
    job.tau_table = NormalizeTauTable(table);
    job.rounding.tau_q16 = job.tau_table.DefaultTau();
  }
  if (*mode == kernels::Mode::kRounded) {
    VT_TRY(job.rounding.Validate());
    job.spec.rounding_bits = static_cast<std::uint8_t>(job.rounding.bits);
    // The canonical job tau table: empty bytes when every node uses the
    // built-in default τ (kernels/calibration.h EncodeJobTauTable).
    job.spec.tau_table = kernels::EncodeJobTauTable(job.tau_table);
  }
  job.spec.model = graph::EncodeModelSpec(job.model);
  job.spec.optimizer = graph::EncodeOptimizerSpec(job.optimizer);
  return job;
}

Result<Job> LoadJobFile(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Bytes bytes, ReadFile(path));
  const std::string text(bytes.begin(), bytes.end());
  auto job = ParseJobJson(text, path.parent_path());
  if (!job.ok()) return job.status().WithContext("job file " + path.string());
  return job;
}

Result<Job> JobFromSpec(const protocol::JobSpec& spec) {
  VT_TRY(protocol::ValidateJobSpec(spec));
  Job job;
  job.spec = spec;
  VT_ASSIGN_OR_RETURN(job.model, graph::DecodeModelSpec(spec.model));
  VT_ASSIGN_OR_RETURN(job.optimizer, graph::DecodeOptimizerSpec(spec.optimizer));
  if (job.mode() == kernels::Mode::kRounded) {
    job.rounding.bits = spec.rounding_bits;
    VT_ASSIGN_OR_RETURN(job.tau_table, kernels::DecodeJobTauTable(spec.tau_table));
    job.rounding.tau_q16 = job.tau_table.DefaultTau();
  }
  job.expected_dataset_root = spec.dataset_root;
  return job;
}

std::string JobToJson(const Job& job, int indent) {
  json j;
  j["version"] = job.spec.version;
  j["model"] = ModelToJson(job.model);
  j["optimizer"] = OptimizerToJson(job.optimizer);
  j["dataset"] = DatasetToJson(job.dataset);
  if (!job.spec.dataset_root.IsZero()) {
    j["dataset_root"] = job.spec.dataset_root.Hex();
  } else if (job.expected_dataset_root) {
    j["dataset_root"] = job.expected_dataset_root->Hex();
  }
  j["seed"] = job.spec.seed;
  j["batch_size"] = job.spec.batch_size;
  j["steps"] = job.spec.num_steps;
  j["checkpoint_interval"] = job.spec.checkpoint_interval;
  j["mode"] = std::string(kernels::ModeName(job.mode()));
  if (!job.init_path.empty()) j["init"] = job.init_path.string();
  if (job.mode() == kernels::Mode::kRounded) {
    j["rounding"] = json{{"bits", job.rounding.bits}, {"tau_q16", job.rounding.tau_q16}};
    json entries = json::object();
    for (const auto& [key, tau] : job.tau_table.entries()) {
      if (key != kernels::kTauDefaultKey) entries[key] = tau;
    }
    if (!entries.empty()) j["rounding"]["tau_table"] = std::move(entries);
  }
  return j.dump(indent);
}

Bytes SyntheticText(std::uint64_t seed, std::uint64_t bytes) {
  static constexpr std::string_view kWords[] = {
      "the",  "a",     "model", "trains", "on",    "data",   "and",   "every", "step", "is",     "checked",
      "by",   "an",    "honest", "party", "who",   "replays", "it",   "with",  "the",  "same",   "logs",
      "so",   "cheat", "loses", "its",    "bond",  "while",  "good",  "work",  "gets", "paid",   "today"};
  PhiloxStream stream(seed, 0, kSyntheticTextStream, 0);
  Bytes out;
  out.reserve(bytes);
  while (out.size() < bytes) {
    const std::string_view w = kWords[NextUniformInt(stream, std::size(kWords))];
    for (char c : w) {
      if (out.size() == bytes) break;
      out.push_back(static_cast<std::uint8_t>(c));
    }
    if (out.size() < bytes) out.push_back(static_cast<std::uint8_t>(NextUniformInt(stream, 8) == 0 ? '.' : ' '));
  }
  return out;
}

namespace {

Result<Dataset> LoadSource(const DatasetSource& d) {
  switch (d.kind) {
    case DatasetSource::Kind::kSynthetic:
      return SyntheticClassification(d.seed, d.count, d.input_dim, d.classes);
    case DatasetSource::Kind::kSyntheticText: {
      const Bytes text = SyntheticText(d.seed, d.count);
      return TextWindows(text, d.window, "synthetic-text");
    }
    case DatasetSource::Kind::kIdx:
      return LoadMnistLike(d.path, d.split, d.limit);
    case DatasetSource::Kind::kCifar10:
      return LoadCifar10(d.files, d.limit);
    case DatasetSource::Kind::kText:
      return LoadTextWindows(d.path, d.window);
  }
  return Status::Invalid("job-bad-option", "dataset kind");
}

}  // namespace

Result<Dataset> LoadJobDataset(const Job& job) {
  VT_ASSIGN_OR_RETURN(Dataset data, LoadSource(job.dataset));
  // Examples are committed in the shape the model reads them (the referee
  // stacks committed examples into the batch as they are): a 28×28 image
  // for an MLP of input 784 becomes a [784] example. Same values, same order.
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes, graph::BatchShapes(job.model, 1));
  const kernels::Shape input(shapes[0].begin() + 1, shapes[0].end());
  const kernels::Shape target(shapes[1].begin() + 1, shapes[1].end());
  if ((data.input_shape() == input && data.target_shape() == target) ||
      data.input_numel() != kernels::NumElements(input) || data.target_numel() != kernels::NumElements(target)) {
    return data;  // already fitting, or not fitting at all (ResolveDataset says so)
  }
  Dataset fitted(data.name(), input, target, data.num_classes());
  fitted.Reserve(data.size());
  for (std::uint64_t i = 0; i < data.size(); ++i) fitted.Add(data.input(i), data.target(i));
  return fitted;
}

Status ResolveDataset(Job& job, const Dataset& dataset) {
  if (dataset.size() == 0) return Status::Invalid("dataset-empty", "the dataset has no examples");
  if (job.spec.batch_size > dataset.size())
    return Status::Invalid("job-dataset-mismatch",
                           "batch_size " + std::to_string(job.spec.batch_size) + " exceeds the dataset's " +
                               std::to_string(dataset.size()) +
                               " examples: lower batch_size or give more data (dataset limit/count)");
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Shape> shapes,
                      graph::BatchShapes(job.model, static_cast<std::int64_t>(job.spec.batch_size)));
  const kernels::Shape input(shapes[0].begin() + 1, shapes[0].end());
  const kernels::Shape target(shapes[1].begin() + 1, shapes[1].end());
  if (dataset.input_shape() != input || dataset.target_shape() != target) {
    return Status::Invalid("job-dataset-mismatch",
                           "examples of " + kernels::ShapeToString(dataset.input_shape()) + " → " +
                               kernels::ShapeToString(dataset.target_shape()) + " do not fit the model's batch " +
                               kernels::ShapeToString(shapes[0]) + " → " + kernels::ShapeToString(shapes[1]));
  }
  std::int64_t classes = 0;
  if (const auto* m = std::get_if<graph::MlpSpec>(&job.model.arch)) classes = m->classes;
  if (const auto* c = std::get_if<graph::CnnSpec>(&job.model.arch)) classes = c->classes;
  if (const auto* g = std::get_if<graph::GptSpec>(&job.model.arch)) classes = g->vocab;
  if (dataset.num_classes() > static_cast<std::uint64_t>(classes)) {
    return Status::Invalid("job-dataset-mismatch", "the dataset has " + std::to_string(dataset.num_classes()) +
                                                       " classes, the model " + std::to_string(classes));
  }
  const Hash256 root = dataset.Root();
  // VerifyDataset recomputes the root: call it only to word the mismatch.
  if (job.expected_dataset_root && *job.expected_dataset_root != root) {
    VT_TRY(VerifyDataset(dataset, *job.expected_dataset_root));
  }
  if (!job.spec.dataset_root.IsZero() && job.spec.dataset_root != root) {
    VT_TRY(VerifyDataset(dataset, job.spec.dataset_root));
  }
  job.spec.dataset_root = root;
  job.spec.dataset_size = dataset.size();
  VT_TRY(protocol::ValidateJobSpec(job.spec));
  return Status::Ok();
}

Result<LoadedJob> LoadJobWithDataset(const std::filesystem::path& path) {
  VT_ASSIGN_OR_RETURN(Job job, LoadJobFile(path));
  auto dataset = LoadJobDataset(job);
  if (!dataset.ok()) return dataset.status().WithContext("dataset of job " + path.string());
  VT_TRY(ResolveDataset(job, *dataset));
  if (!job.init_path.empty()) VT_TRY(LoadInitialWeights(job, job.init_path));
  return LoadedJob{std::move(job), std::move(dataset).value()};
}

Result<TrainingState> InitialStateOf(const Job& job, int threads) {
  if (job.initial_state) return *job.initial_state;
  VT_ASSIGN_OR_RETURN(graph::NamedTensors init, graph::InitState(job.model, job.optimizer, job.spec.seed, threads));
  TrainingState state;
  for (std::size_t i = 0; i < init.names.size(); ++i) state.tensors.emplace(init.names[i], std::move(init.tensors[i]));
  return state;
}

Status CheckInitialState(const Job& job, const TrainingState& state) {
  Job seeded_job = job;
  seeded_job.initial_state = nullptr;
  VT_ASSIGN_OR_RETURN(TrainingState seeded, InitialStateOf(seeded_job));
  auto bad = [](const std::string& what) { return Status::Invalid("job-bad-initial-state", what); };
  if (state.step != seeded.step || state.rng_counter != seeded.rng_counter || !(state.cursor == seeded.cursor))
    return bad("the initial state must be at step 0 with the job's RNG counter and data cursor");
  if (state.tensors.size() != seeded.tensors.size())
    return bad("the initial state has " + std::to_string(state.tensors.size()) + " tensors, the job's model " +
               std::to_string(seeded.tensors.size()));
  for (const auto& [name, t] : seeded.tensors) {
    auto it = state.tensors.find(name);
    if (it == state.tensors.end()) return bad("the initial state has no tensor " + name);
    if (it->second.shape() != t.shape())
      return bad("tensor " + name + " has shape " + kernels::ShapeToString(it->second.shape()) + ", the model needs " +
                 kernels::ShapeToString(t.shape()));
    for (float v : it->second.values())
      if (!std::isfinite(v)) return bad("tensor " + name + " holds a NaN or infinity");
  }
  return Status::Ok();
}

Status LoadInitialWeights(Job& job, const std::filesystem::path& weights) {
  if (!std::filesystem::exists(weights))
    return Status::Invalid("file-not-found", "initial weights " + weights.string() +
                                                 " do not exist (the job's \"init\" or --init names them)");
  VT_ASSIGN_OR_RETURN(SafetensorsContents file, LoadSafetensors(weights));
  Job seeded_job = job;
  seeded_job.initial_state = nullptr;
  VT_ASSIGN_OR_RETURN(TrainingState seeded, InitialStateOf(seeded_job));
  auto state = StateFromWeights(job.model, file, std::move(seeded));
  if (!state.ok()) return state.status().WithContext("initial weights " + weights.string());
  job.initial_state = std::make_shared<const TrainingState>(std::move(state).value());
  return Status::Ok();
}

kernels::ExecConfig ExecConfigFor(const Job& job, int threads, kernels::Simd simd, kernels::Device device) {
  kernels::ExecConfig config;
  config.device = device;
  config.mode = job.mode();
  config.threads = std::max(threads, 1);
  config.simd = simd;
  if (job.mode() == kernels::Mode::kRounded) config.rounding = job.rounding;
  return config;
}

}  // namespace vt::worker
