#include "worker/model_weights.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

namespace vt::worker {
namespace {

namespace graph = kernels::graph;
using graph::ModelFamily;

// One table for the renaming, applied in order to "." + name + ".": the
// GPT names of nanoGPT's `GPT` module (transformer.{wte,wpe,h,ln_f},
// attn.c_attn / c_proj, mlp.c_fc / c_proj). MLP and CNN names already are
// the attribute paths of their PyTorch modules.
struct Rename {
  ModelFamily family;
  const char* ours;
  const char* torch;
};
constexpr Rename kRenames[] = {
    {ModelFamily::kGpt, ".attn.qkv.", ".attn.c_attn."},
    {ModelFamily::kGpt, ".attn.proj.", ".attn.c_proj."},
    {ModelFamily::kGpt, ".mlp.fc.", ".mlp.c_fc."},
    {ModelFamily::kGpt, ".mlp.proj.", ".mlp.c_proj."},
};
struct Prefix {
  ModelFamily family;
  const char* torch;
};
constexpr Prefix kPrefixes[] = {{ModelFamily::kGpt, "transformer."}};

// Aliases PyTorch's state_dict carries besides the tensors we hold.
constexpr const char* kGptTiedHead = "lm_head.weight";  // = transformer.wte.weight
constexpr const char* kBatchNormCount = "num_batches_tracked";
constexpr const char* kRunningMean = ".running_mean";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "stem.bn.num_batches_tracked" for "stem.bn.running_mean"; nullopt otherwise.
std::optional<std::string> BatchNormCountOf(const std::string& name) {
  if (!EndsWith(name, kRunningMean)) return std::nullopt;
  return name.substr(0, name.size() - std::strlen(kRunningMean)) + "." + kBatchNormCount;
}

Status Mismatch(const char* reason, const std::string& detail) {
  return Status::Invalid(reason, detail);
}

}  // namespace

std::string TorchName(ModelFamily family, const std::string& name) {
  std::string n = "." + name + ".";
  for (const Rename& r : kRenames) {
    if (r.family != family) continue;
    const std::string ours = r.ours;
    for (std::size_t at = n.find(ours); at != std::string::npos; at = n.find(ours, at + 1))
      n.replace(at, ours.size(), r.torch);
  }
  n = n.substr(1, n.size() - 2);
  for (const Prefix& p : kPrefixes)
    if (p.family == family) n = p.torch + n;
  return n;
}

Result<TensorMap> ModelWeightsForTorch(const graph::ModelSpec& model, const TrainingState& state) {
  VT_ASSIGN_OR_RETURN(std::vector<graph::TensorSpec> specs, graph::ParamSpecs(model));
  TensorMap out;
  for (const graph::TensorSpec& s : specs) {
    auto it = state.tensors.find(s.name);
    if (it == state.tensors.end())
      return Status::Invalid("state-no-such-tensor", "the state has no tensor " + s.name + " of its model");
    out.emplace(TorchName(model.family(), s.name), it->second);
    // BatchNorm2d counts its training forwards; one per step here.
    if (auto count = BatchNormCountOf(s.name))
      out.emplace(*count, kernels::Tensor({}, {static_cast<float>(state.step)}));
  }
  if (model.family() == ModelFamily::kGpt) out.emplace(kGptTiedHead, out.at(TorchName(model.family(), "wte.weight")));
  return out;
}

Result<TrainingState> StateFromWeights(const graph::ModelSpec& model, const SafetensorsContents& file,
                                       TrainingState seeded) {
  VT_ASSIGN_OR_RETURN(std::vector<graph::TensorSpec> specs, graph::ParamSpecs(model));
  std::map<std::string, std::string> expected;  // file name -> our name
  std::map<std::string, std::string> aliases;   // alias -> the file name it must equal ("" = ignored)
  for (const graph::TensorSpec& s : specs) {
    expected.emplace(TorchName(model.family(), s.name), s.name);
    if (auto count = BatchNormCountOf(s.name)) aliases.emplace(*count, "");
  }
  if (model.family() == ModelFamily::kGpt) aliases.emplace(kGptTiedHead, TorchName(model.family(), "wte.weight"));

  // Our own names are accepted too (a file written by an older export).
  auto find = [&](const std::string& torch, const std::string& ours) -> const kernels::Tensor* {
    if (auto it = file.tensors.find(torch); it != file.tensors.end()) return &it->second;
    if (auto it = file.tensors.find(ours); it != file.tensors.end()) return &it->second;
    return nullptr;
  };
  for (const auto& [name, tensor] : file.tensors) {
    (void)tensor;
    if (expected.count(name) || aliases.count(name)) continue;
    bool ours = false;
    for (const auto& [torch, own] : expected) ours = ours || own == name;
    if (!ours)
      return Mismatch("weights-unknown-tensor", "the file has a tensor '" + name +
                                                    "' that the job's model does not (is it weights of another model?)");
  }
  for (const graph::TensorSpec& s : specs) {
    const std::string torch = TorchName(model.family(), s.name);
    const kernels::Tensor* t = find(torch, s.name);
    if (t == nullptr)
      return Mismatch("weights-missing-tensor", "the file has no tensor '" + torch + "' " +
                                                    kernels::ShapeToString(s.shape) + " of the job's model");
    const std::string key = file.tensors.count(torch) ? torch : s.name;
    if (auto d = file.dtypes.find(key); d != file.dtypes.end() && d->second != "F32")
      return Mismatch("weights-bad-dtype", "tensor '" + key + "' is " + d->second +
                                               "; initial weights must be F32 (convert with .float())");
    if (t->shape() != s.shape)
      return Mismatch("weights-bad-shape", "tensor '" + key + "' has shape " + kernels::ShapeToString(t->shape()) +
                                               ", the job's model needs " + kernels::ShapeToString(s.shape));
    for (float v : t->values())
      if (!std::isfinite(v)) return Mismatch("weights-not-finite", "tensor '" + key + "' holds a NaN or infinity");
    seeded.tensors[s.name] = *t;
  }
  for (const auto& [alias, of] : aliases) {
    auto it = file.tensors.find(alias);
    if (it == file.tensors.end() || of.empty()) continue;
    const kernels::Tensor* target = find(of, "wte.weight");
    if (target == nullptr || !it->second.BitwiseEqual(*target))
      return Mismatch("weights-tied-mismatch",
                      "'" + alias + "' differs from '" + of + "': the model ties them, they must be equal");
  }
  return seeded;
}

std::map<std::string, std::string> WeightsMetadata(const Hash256& job_hash, const Hash256& state_hash,
                                                   std::uint64_t step, std::optional<std::uint64_t> bounty_id) {
  std::map<std::string, std::string> m{{"format", "pt"},
                                       {"veritrain.job_hash", job_hash.Hex()},
                                       {"veritrain.state_hash", state_hash.Hex()},
                                       {"veritrain.step", std::to_string(step)}};
  if (bounty_id) m["veritrain.bounty_id"] = std::to_string(*bounty_id);
  return m;
}

}  // namespace vt::worker
