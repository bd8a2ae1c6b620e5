#pragma once
// The pointwise and row element rules of the element-level descent
// (docs/referee.md, "Level 5"): value e of a node output re-executed from the
// few input values it depends on, by running the node's own operator
// (kernels RunOp, repops, one thread) on those values alone — one value of
// each input for a pointwise operator, the values of the windows covering
// e for a pooling's backward (the "row" rule). The kernel is the same code, so
// the value is the node's value wherever the operator's value at e depends
// only on those inputs (verify_element_rules_test checks it for every value
// of random nodes of each operator in the table). The dot rule is in
// verify/descent.h.
//
// The caller opens each slice against its agreed tensor hash
// (verify/descent.h VerifyValue, one chunk per 256 values) and charges the
// slices' bytes and the operator's flops first.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::verify {

// The values of one input that value e depends on: [first, first + count)
// of its row-major values, re-executed with `shape`.
// A slice with `output_slot` ≥ 0 is of the node's own output of that slot
// instead of an input: a value the level-4 walk agreed on before (see
// SlotWalkOrder). Such slices come after the inputs' slices.
// A gathered slice (`row_from` ≥ 0: embedding's weight) starts at
// row·row_stride + first, where row is the value the plan's slice
// `row_from` read — an index into a table of `rows` rows (ResolveSlice).
struct InputSlice {
  std::int64_t first = 0;
  std::int64_t count = 0;  // 0: the input is not read
  kernels::Shape shape;
  std::int32_t output_slot = -1;
  std::int32_t row_from = -1;
  std::int64_t row_stride = 0, rows = 0;
};

// A gathered slice with its row read: an ordinary slice. Invalid
// "bad-index" (the kernel's reason: the operator fails on its inputs) when
// the value is not a row of the table (kernels::IsRowIndex); every other
// slice is returned as it is.
Result<InputSlice> ResolveSlice(const InputSlice& slice, float row_value);

struct ElementPlan {
  std::vector<InputSlice> inputs;  // one per node input, in order, then own-output slices
  std::int64_t out_offset = 0;     // e's position in the re-executed output slot
  std::int64_t channel_values = 0;  // batch-norm: N·H·W, the values of a channel (dx reads their sums)
};

// The rule for output `slot`, value `e` of an `op_kind` node with these input
// shapes:
//   pointwise: relu, relu_backward, gelu, gelu_backward, add, sgd, adamw (every slot),
//              dropout_backward, reshape (a copy), lr_schedule (no inputs: the attributes alone)
//              clip_grad_norm's g'_i (g_i at e and the node's own norm: after it in SlotWalkOrder),
//              dropout's y (x at e and the node's own keep at e: dropout_backward's expression),
//              dropout's keep (no input read; ReexecuteElement with the node's RNG address)
//   gather:    embedding's y[p, j] (indices, weight [V, D]): the index at p (of the
//              batch: verify/batch_opening.h) and weight[index, j] (a gathered slice)
//   batch-norm: batchnorm2d_train's y (x at e, γ, β at its channel c, the node's own mean
//              and rstd at c: slots 3, 4, walked first) and running_mean' (running_mean at c,
//              own mean at c); batchnorm2d_backward's dx (dy, x at e, γ, mean, rstd at c, the
//              node's own dγ, dβ at c: slots 1, 2) — the kernels' expressions (kernels/ops/norm.h)
//   layer-norm: layernorm's y (x at e, γ, β at its column k, the node's own mean and rstd
//              at its row: slots 1, 2, walked first) — the kernel's expression (kernels::NormValue)
// (Softmax's and layer-norm's other row values are the reduction rule's,
// verify/reduce_rule.h: one value a step at any row width.)
// Invalid "elem-no-rule" otherwise, "elem-bad-index" for e outside the output.
Result<ElementPlan> PlanElement(std::uint16_t op_kind, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes);

// The order in which level 4 looks for the first differing output slot of
// an `op_kind` node with `num_outputs` outputs: a slot that other slots'
// element rules read (clip_grad_norm's norm, dropout's keep, attention's att:
// verify::DotElementAt's kOwnOutput factor; batch-norm's mean and rstd, its
// backward's dγ and dβ) comes before them; otherwise
// slot order. The referee walks the first slot in this order whose roots
// differ, so every own-output slice a plan names is agreed.
std::vector<std::uint32_t> SlotWalkOrder(std::uint16_t op_kind, std::uint32_t num_outputs);

// What the referee charges a plan's re-execution: this many flops a value
// read (open-element; AdamW, the costliest element-wise update, takes
// fewer). max_pool2d_backward's plan, whose covering windows' maxima are
// taken anew, is refused where that costs more, so the charge always
// covers the work.
inline constexpr std::uint64_t kElementFlopsPerValue = 64;

// The same with the node's canonical attributes, which these rules also need:
//   row:       the poolings' backwards (the dy rows of the windows covering e;
//              max pooling also the x rows they span)
//   pointwise: attention's att above the diagonal (u > t: the mask's +0,
//              nothing read; below it, the reduction rule's)
//   pointwise: conv2d_backward's dx where no kernel tap reaches (a stride
//              past the kernel: col2im's +0, nothing read; the others, the
//              reduction rule's: ConvInputGradReached)
//   pointwise: sum_backward (dy at the reduced position)
// Every other operator: as above. Invalid "elem-too-costly" for a max
// pooling's backward whose windows take more than kElementFlopsPerValue
// flops a value read.
Result<ElementPlan> PlanElement(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes);

// The job's mode as a value's re-execution needs it. Rounded mode also needs
// the node's rounding spec (the job's bits, the node's τ: verify::NodeSpec)
// and what the solver's log says at the value's position (the node's outputs
// concatenated; kernels::OpenLogAt): the direction logged, or none.
struct ElementMode {
  ElementMode(kernels::Mode m) : mode(m) {}  // NOLINT: repops and certified need nothing else
  ElementMode(kernels::RoundingSpec rounding_spec, std::optional<bool> logged_up)
      : mode(kernels::Mode::kRounded), spec(rounding_spec), logged(logged_up) {}
  kernels::Mode mode;
  kernels::RoundingSpec spec;
  std::optional<bool> logged;
};

// Whether ReexecuteElement re-executes a rounded value of `op_kind` (the
// element-wise operators and the poolings' backwards below, attention's
// att above the diagonal and the dx values of a convolution no tap
// reaches). Each is exact in fp64 (kernels OpFp64IsExact: w = 0; the
// +0 read from nothing — its β 0 — lies u/2 from its boundary, beyond
// 2w for every τ ≤ kernels::kMaxTauQ16), so the acceptance rule rejects
// every entry at its values: the value is the reference rounded to
// nearest, whatever the log holds, and the element level plays it without
// opening the log (a challenger's replay skips such an entry: kernels
// ReplaySkippingInvalid).
bool ReexecutesRoundedValue(std::uint16_t op_kind);

// Runs the operator (canonical attributes `attrs`) in the job's `mode` on
// the slices' values and returns value e (clip_grad_norm's g'_i:
// g_i·kernels::ClipGradScale(norm), the kernel's expression). Repops and
// certified mode share every element-wise expression; the poolings'
// backwards sum their windows in repops order, or exactly and rounded once
// in certified mode (kernels::CertifiedAvgPoolGradAt), in fp64 and rounded
// once in rounded mode. Rounded mode runs the
// operators that RunOp evaluates element by element (relu, gelu and their
// backwards, add, sgd, adamw, dropout_backward, sum_backward, lr_schedule) on
// the slices with the canonical fp64 reference, rounding value e as the
// log says (kernels::ApplyLogEntry: Invalid "log-entry-outside-region" when
// the acceptance rule rejects the entry — the solver's log is wrong) and
// every other value to nearest; its other rules are not written yet
// ("elem-no-rule": a rounded norm's values are the reduction rule's,
// verify/reduce_rule.h RoundedElementAt). Invalid "elem-bad-slice" when a slice has the wrong
// count, or the operator's own reason.
Result<float> ReexecuteElement(const ElementMode& mode, std::uint16_t op_kind, ByteSpan attrs,
                               std::uint32_t slot, const ElementPlan& plan,
                               std::span<const std::vector<float>> slice_values);

// The same for an operator that draws from the node's RNG stream (seed, step
// t, node index i — the executor's address): dropout's keep mask (slot 1),
// kernels::DropoutKeep at e. Every other output: as above. Invalid
// "bad-rng-address" for a step or node ≥ 2^32.
Result<float> ReexecuteElement(const ElementMode& mode, std::uint16_t op_kind, ByteSpan attrs,
                               std::uint32_t slot, const ElementPlan& plan,
                               std::span<const std::vector<float>> slice_values,
                               const kernels::RngAddress& rng);

}  // namespace vt::verify
