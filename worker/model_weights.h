#pragma once
// A model's weights as people exchange them: safetensors files whose tensor
// names are those of an equivalent PyTorch module (docs/models.md, "PyTorch
// names"), in both directions —
//   * out: the parameters and buffers of a training state (no optimizer
//     state), renamed, plus the aliases PyTorch's state_dict also carries
//     (GPT's tied `lm_head.weight`, batch norms' `num_batches_tracked`), so
//     that `safetensors.torch.load_file` + `load_state_dict(strict=True)`
//     work on the equivalent module;
//   * in: a client's own initial weights ("bring your own", e.g. a model a
//     previous bounty trained): every parameter and buffer must be in the
//     file under its PyTorch name (or its own name), with the model's shape,
//     as F32, finite; the rest of h_0 (optimizer state, step, cursor) is the
//     job's seeded initial state. The first mismatch, in name order, is the
//     error:
//       weights-missing-tensor   a parameter/buffer the file does not have
//       weights-unknown-tensor   a tensor the model does not have (wrong model?)
//       weights-bad-shape        a tensor of another shape
//       weights-bad-dtype        F16 / BF16 (would be widened: not what was trained)
//       weights-not-finite       a NaN or infinity
//       weights-tied-mismatch    an alias (lm_head.weight) that differs from its tensor

#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "kernels/graph/model.h"
#include "worker/safetensors.h"
#include "worker/state.h"

namespace vt::worker {

// Our state-tensor name → the PyTorch state_dict name (identity for MLP and CNN).
std::string TorchName(kernels::graph::ModelFamily family, const std::string& name);

// The model's parameters and buffers of `state`, by PyTorch name, with aliases.
Result<TensorMap> ModelWeightsForTorch(const kernels::graph::ModelSpec& model, const TrainingState& state);

// `seeded` (the job's seeded h_0) with every parameter and buffer replaced by
// the file's. Checks as above.
Result<TrainingState> StateFromWeights(const kernels::graph::ModelSpec& model, const SafetensorsContents& file,
                                       TrainingState seeded);

// The safetensors metadata `vt bounty result` and `vt-worker export` write.
std::map<std::string, std::string> WeightsMetadata(const Hash256& job_hash, const Hash256& state_hash,
                                                   std::uint64_t step, std::optional<std::uint64_t> bounty_id = {});

}  // namespace vt::worker
