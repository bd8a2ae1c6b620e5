#include "verify/element_rules.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <string>

#include "common/encoding.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/embedding.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/optim.h"
#include "kernels/ops/reduce.h"
#include "kernels/ops/registry.h"
#include "verify/element.h"
#include "verify/reduce_rule.h"

namespace vt::verify {
namespace {

using kernels::OpKind;

bool Is(std::uint16_t op_kind, std::initializer_list<OpKind> kinds) {
  return std::any_of(kinds.begin(), kinds.end(), [&](OpKind k) { return static_cast<std::uint16_t>(k) == op_kind; });
}

std::int64_t Last(const kernels::Shape& s) { return s.empty() ? 1 : s.back(); }

// The operators whose rounded values ReexecuteElement re-executes: RunOp
// evaluates them value by value, so the slices' fp64 reference is the
// node's, and each output value has one position among the slices'
// outputs; embedding and reshape are copies, rounded as the kernel commits
// them, and dropout's keep a draw (RoundedCopy), its y dropout_backward's
// expression; the poolings' backwards are the kernels' per-value sums over
// the covering windows in fp64 (kernels AvgPoolGradAt<double>), rounded once.
// clang-format off
constexpr OpKind kRoundedElementwise[] = {
    OpKind::kRelu,        OpKind::kReluBackward,      OpKind::kGelu,              OpKind::kGeluBackward,
    OpKind::kAdd,         OpKind::kSgd,               OpKind::kAdamW,             OpKind::kDropoutBackward,
    OpKind::kSumBackward, OpKind::kLrSchedule,        OpKind::kEmbedding,         OpKind::kReshape,
    OpKind::kDropout,     OpKind::kAvgPool2dBackward, OpKind::kMaxPool2dBackward};
// clang-format on

// A rounded value of an operator exact in fp64 (kernels OpFp64IsExact):
// its fp64 reference rounded to the job's bits — τ off, β = 0, so any log
// entry at it is refused (kernels::ApplyLogEntry).
Result<float> RoundedExact(const ElementMode& mode, double ref) {
  return RoundAsLogged(ref, kernels::RoundingSpec{mode.spec.bits, /*tau_q16=*/0}, /*slack=*/0.0, mode.logged);
}

// A value the kernel computes exactly and commits (a copy, a 0/1 draw):
// itself, rounded in rounded mode.
Result<float> RoundedCopy(const ElementMode& mode, float v) {
  if (mode.mode != kernels::Mode::kRounded) return v;
  return RoundedExact(mode, v);
}

Status NoRoundedRule() {
  return Status::Invalid("elem-no-rule",
                         "this rounded value has no element rule yet: its node is arbitrated whole");
}

// Rounded mode: the operator on the slices with the canonical fp64 reference
// (a replaying NodeRounding turns it on), every value rounded to nearest but
// value e, which follows the log's entry there (kernels::ApplyLogEntry, the
// replay's own rule). Positions count the slices' outputs in slot order.
Result<float> ReexecuteRounded(const ElementMode& mode, OpKind kind, const kernels::OpAttrs& attrs,
                               std::uint32_t slot, std::int64_t offset,
                               std::span<const kernels::Tensor* const> in) {
  VT_TRY(mode.spec.Validate());
  kernels::ExecConfig config;
  config.mode = kernels::Mode::kRounded;
  config.threads = 1;
  config.rounding = mode.spec;
  const auto run = [&](kernels::RoundingLog log) -> Result<std::vector<kernels::Tensor>> {
    kernels::NodeRounding rounding = kernels::NodeRounding::Replay(mode.spec, std::move(log));
    std::vector<kernels::Tensor> out;
    VT_TRY(kernels::RunOp(kernels::OpContext(config, &rounding), kind, attrs, in, out));
    VT_TRY(rounding.Finish());
    return out;
  };
  VT_ASSIGN_OR_RETURN(std::vector<kernels::Tensor> out, run({}));
  if (slot >= out.size() || offset >= out[slot].numel())
    return Status::Invalid("elem-bad-slice", "no such output");
  if (!mode.logged) return out[slot][offset];
  auto position = static_cast<std::uint64_t>(offset);
  for (std::uint32_t s = 0; s < slot; ++s) position += static_cast<std::uint64_t>(out[s].numel());
  VT_ASSIGN_OR_RETURN(out, run(kernels::RoundingLog{{kernels::LogEntry{position, *mode.logged}}}));
  return out[slot][offset];
}

}  // namespace

Result<ElementPlan> PlanElement(std::uint16_t op_kind, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes) {
  ElementPlan plan;
  if (Is(op_kind, {OpKind::kLrSchedule})) {
    // No inputs: the value is a function of the attributes (the step) alone.
    if (e != 0 || !input_shapes.empty()) return Status::Invalid("elem-bad-index");
    return plan;
  }
  if (input_shapes.empty()) return Status::Invalid("elem-no-rule");
  const kernels::Shape& first = input_shapes[0];
  const std::int64_t numel = kernels::NumElements(first);
  if (Is(op_kind, {OpKind::kRelu, OpKind::kReluBackward, OpKind::kGelu, OpKind::kGeluBackward, OpKind::kAdd,
                   OpKind::kSgd, OpKind::kAdamW, OpKind::kDropoutBackward, OpKind::kReshape})) {
    // Every output has the first input's shape; a one-value input (the
    // learning rate) is read whole.
    if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    for (const kernels::Shape& s : input_shapes) {
      const std::int64_t n = kernels::NumElements(s);
      if (n != numel && n != 1) return Status::Invalid("elem-no-rule", "an input is neither elementwise nor a scalar");
      plan.inputs.push_back(InputSlice{n == numel ? e : 0, 1, {1}});
    }
    plan.out_offset = 0;
    return plan;
  }
  if (Is(op_kind, {OpKind::kEmbedding}) && slot == 0 && input_shapes.size() == 2 &&
      input_shapes[1].size() == 2) {
    // y[p, j] = weight[idx[p], j]: the index, then the one weight value its row holds.
    const std::int64_t rows = input_shapes[1][0], d = input_shapes[1][1];
    if (d < 1 || e < 0 || e >= numel * d) return Status::Invalid("elem-bad-index");
    plan.inputs = {InputSlice{e / d, 1, {1}}, InputSlice{e % d, 1, {1}, -1, 0, d, rows}};
    return plan;
  }
  if (Is(op_kind, {OpKind::kClipGradNorm}) && slot < input_shapes.size()) {
    // g'_i[e] = g_i[e]·scale(norm): one value of input `slot`, the norm (own output slot n).
    if (e < 0 || e >= kernels::NumElements(input_shapes[slot])) return Status::Invalid("elem-bad-index");
    for (std::size_t i = 0; i < input_shapes.size(); ++i)
      plan.inputs.push_back(i == slot ? InputSlice{e, 1, {1}} : InputSlice{0, 0, {0}});
    plan.inputs.push_back(InputSlice{0, 1, {1}, static_cast<std::int32_t>(input_shapes.size())});
    return plan;
  }
  if (Is(op_kind, {OpKind::kBatchNorm2dTrain, OpKind::kBatchNorm2dBackward}) && input_shapes.size() == 5 &&
      first.size() == 4 && first[1] > 0 && first[2] * first[3] > 0) {
    // Per channel c = (e / HW) mod C, the channel's statistics read from the
    // node's own agreed outputs (walked first: SlotWalkOrder):
    //   train y[e]        x[e], gamma[c], beta[c]; own mean[c], rstd[c] (slots 3, 4)
    //   train running_mean'[c]   running_mean[c]; own mean[c]
    //   backward dx[e]    dy[e], x[e], gamma[c], mean[c], rstd[c]; own dγ[c], dβ[c] (slots 1, 2)
    // (The other slots are the reduction rule's.)
    const bool train = Is(op_kind, {OpKind::kBatchNorm2dTrain});
    const std::int64_t ch = first[1], hw = first[2] * first[3];
    plan.channel_values = first[0] * hw;
    if (train && plan.channel_values < 2) return Status::Invalid("elem-no-rule", "the kernel refuses this x");
    const InputSlice none{0, 0, {0}};
    const auto one = [](std::int64_t at, std::int32_t own = -1) { return InputSlice{at, 1, {1}, own}; };
    if (train && slot == 0) {
      if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
      const std::int64_t c = (e / hw) % ch;
      plan.inputs = {one(e), one(c), one(c), none, none, one(c, 3), one(c, 4)};
      return plan;
    }
    if (train && slot == 1) {
      if (e < 0 || e >= ch) return Status::Invalid("elem-bad-index");
      plan.inputs = {none, none, none, one(e), none, one(e, 3)};
      return plan;
    }
    if (!train && slot == 0) {
      if (e < 0 || e >= numel || input_shapes[1] != first) return Status::Invalid("elem-bad-index");
      const std::int64_t c = (e / hw) % ch;
      plan.inputs = {one(e), one(e), one(c), one(c), one(c), one(c, 1), one(c, 2)};
      return plan;
    }
    return Status::Invalid("elem-no-rule", "the reduction rule's");
  }
  if (Is(op_kind, {OpKind::kDropout}) && slot == 1 && input_shapes.size() == 1) {
    // keep[e]: the Philox word at e of the node's stream, no input read
    // (ReexecuteElement with the node's RNG address).
    if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    plan.inputs = {InputSlice{0, 0, {0}}};
    plan.out_offset = e;
    return plan;
  }
  if (Is(op_kind, {OpKind::kDropout}) && slot == 0 && input_shapes.size() == 1) {
    // y[e] = keep[e] ≠ 0 ? x[e]·s : +0: x at e and the node's own keep at e (walked first).
    if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    plan.inputs = {InputSlice{e, 1, {1}}, InputSlice{e, 1, {1}, 1}};
    return plan;
  }
  if (Is(op_kind, {OpKind::kLayerNorm}) && slot == 0 && input_shapes.size() == 3) {
    // y[r, k] (x, gamma, beta): x at e, γ and β at k, the node's own agreed
    // mean and rstd at r (slots 1, 2: walked first, SlotWalkOrder).
    const std::int64_t c = Last(first);
    if (c <= 0 || e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    const std::int64_t r = e / c, k = e % c;
    plan.inputs = {InputSlice{e, 1, {1}}, InputSlice{k, 1, {1}}, InputSlice{k, 1, {1}},
                   InputSlice{r, 1, {1}, 1}, InputSlice{r, 1, {1}, 2}};
    return plan;
  }
  return Status::Invalid("elem-no-rule");
}

Result<InputSlice> ResolveSlice(const InputSlice& slice, float row_value) {
  if (slice.row_from < 0) return slice;
  if (!kernels::IsRowIndex(row_value, slice.rows))
    return Status::Invalid("bad-index", "index " + std::to_string(row_value) + " is not a row of the table");
  InputSlice s = slice;
  s.first = static_cast<std::int64_t>(row_value) * slice.row_stride + slice.first;
  s.row_from = -1;
  return s;
}

namespace {

// The plane rows [r0, r1] that max-pooling windows h0..h1 (one axis) span, clamped to the plane.
std::pair<std::int64_t, std::int64_t> MaxPoolRows(const kernels::Pool2dParams& p, std::int64_t h,
                                                  std::int64_t h0, std::int64_t h1) {
  return {std::max<std::int64_t>(0, h0 * p.stride_h - p.pad_h),
          std::min(h - 1, h1 * p.stride_h - p.pad_h + p.kernel_h - 1)};
}

Result<ElementPlan> PlanWithAttrs(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                  std::span<const kernels::Shape> input_shapes) {
  // (The poolings' y is the reduction rule's: a scan over the window, verify/reduce_rule.h.)
  const bool pool_back = Is(op_kind, {OpKind::kMaxPool2dBackward, OpKind::kAvgPool2dBackward});
  const bool sum_back = Is(op_kind, {OpKind::kSumBackward});
  const bool att = Is(op_kind, {OpKind::kAttention}) && slot == 1;
  const bool conv_dx = Is(op_kind, {OpKind::kConv2dBackward}) && slot == 0;
  if (conv_dx) {
    // dx[n, ci, ih, iw] that no kernel tap reaches (a stride past the
    // kernel): col2im adds nothing to its +0, read from nothing. Every other
    // value is the reduction rule's (verify/reduce_rule.h).
    auto reached = ConvInputGradReached(attrs, e, input_shapes);
    if (!reached.ok() && reached.status().reason() == "elem-bad-index") return reached.status();
    if (!reached.ok()) return Status::Invalid("elem-no-rule", "conv2d_backward");
    if (*reached) return Status::Invalid("elem-no-rule", "the reduction rule's");
    ElementPlan plan;
    for (const kernels::Shape& s : input_shapes) plan.inputs.push_back(InputSlice{0, 0, s});
    return plan;
  }
  if (!att && ((!pool_back && !sum_back) || slot != 0)) return PlanElement(op_kind, slot, e, input_shapes);
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok()) return Status::Invalid("elem-no-rule", "attributes");
  const std::vector<std::int64_t>& ints = decoded->ints;
  ElementPlan plan;
  if (att) {
    // att[b, h, t, u] above the diagonal (u > t) is the causal mask's +0,
    // read from nothing; at u ≤ t it is a reduction (verify/reduce_rule.h:
    // the scores' walk and their softmax).
    if (ints.size() != 1 || input_shapes.size() != 1 || input_shapes[0].size() != 3)
      return Status::Invalid("elem-no-rule", "attention");
    const kernels::Shape& qkv = input_shapes[0];
    const std::int64_t nb = qkv[0], t_count = qkv[1], heads = ints[0];
    if (heads < 1 || t_count < 1) return Status::Invalid("elem-no-rule", "attention");
    if (e < 0 || e >= nb * heads * t_count * t_count) return Status::Invalid("elem-bad-index");
    if (e % t_count <= (e / t_count) % t_count)
      return Status::Invalid("elem-no-rule", "the reduction rule's");
    plan.inputs = {InputSlice{0, 0, qkv}};
    return plan;
  }
  if (sum_back) {
    // dx[o, j, i] = dy[o, i] (x viewed as [outer, n, inner] at the axis): one
    // value of dy, re-executed on a one-value x of x's rank.
    if (ints.size() != 1 || input_shapes.size() != 2) return Status::Invalid("elem-no-rule", "sum_backward");
    const kernels::Shape& x = input_shapes[1];
    const std::int64_t axis = ints[0], numel = kernels::NumElements(x);
    if (e < 0 || e >= numel) return Status::Invalid("elem-bad-index");
    std::int64_t n = numel, inner = 1;
    if (axis != kernels::kReduceAll) {
      if (axis < 0 || axis >= static_cast<std::int64_t>(x.size())) return Status::Invalid("elem-no-rule");
      n = x[static_cast<std::size_t>(axis)];
      inner = kernels::NumElements(kernels::Shape(x.begin() + axis + 1, x.end()));
    }
    const kernels::Shape ones(x.size(), 1);
    auto dy_shape = kernels::ReducedShape(ones, axis);
    if (!dy_shape.ok()) return Status::Invalid("elem-no-rule", "sum_backward axis");
    plan.inputs = {InputSlice{(e / (n * inner)) * inner + e % inner, 1, *dy_shape}, InputSlice{e, 1, ones}};
    return plan;
  }
  // The poolings' backward: dx at (ih, iw) of its plane is the kernel's
  // per-value sum over the windows covering it (kernels::AvgPoolGradAt,
  // MaxPoolGradAt): the dy rows of those windows and, for max pooling, the
  // x rows they span (each window's maximum); none: +0, nothing read. An
  // unread x still carries its plane's shape; out_offset = ih·W + iw.
  auto params = kernels::Pool2dParamsOf(*decoded);
  if (!params.ok() || input_shapes.size() != 2 || input_shapes.back().size() != 4)
    return Status::Invalid("elem-no-rule", "pool");
  const kernels::Pool2dParams& p = *params;
  const kernels::Shape& x = input_shapes.back();
  const std::int64_t h = x[2], w = x[3], planes = x[0] * x[1];
  const std::int64_t oh = kernels::OutExtent(h, p.kernel_h, p.stride_h, p.pad_h);
  const std::int64_t ow = kernels::OutExtent(w, p.kernel_w, p.stride_w, p.pad_w);
  if (h < 1 || w < 1 || oh < 1 || ow < 1) return Status::Invalid("elem-no-rule", "pool");
  if (e < 0 || e >= planes * h * w) return Status::Invalid("elem-bad-index");
  const std::int64_t plane = e / (h * w), at = e % (h * w), ih = at / w, iw = at % w;
  const auto [h0, h1] = kernels::CoveringWindows(ih, p.kernel_h, p.stride_h, p.pad_h, oh);
  const auto [w0, w1] = kernels::CoveringWindows(iw, p.kernel_w, p.stride_w, p.pad_w, ow);
  const bool covered = h0 <= h1 && w0 <= w1;
  const std::int64_t dy_rows = covered ? h1 - h0 + 1 : 0;
  plan.out_offset = at;
  plan.inputs = {InputSlice{plane * oh * ow + h0 * ow, dy_rows * ow, {1, 1, dy_rows, ow}},
                 InputSlice{0, 0, {1, 1, h, w}}};
  if (Is(op_kind, {OpKind::kMaxPool2dBackward}) && covered) {
    const auto [r0, r1] = MaxPoolRows(p, h, h0, h1);
    plan.inputs[1] = InputSlice{plane * h * w + r0 * w, (r1 - r0 + 1) * w, {1, 1, h, w}};
    // Each covering window's maximum is taken anew: its cost must stay within the charge.
    const std::uint64_t flops = static_cast<std::uint64_t>(dy_rows * (w1 - w0 + 1) * p.kernel_h * p.kernel_w);
    const std::uint64_t values = static_cast<std::uint64_t>(plan.inputs[0].count + plan.inputs[1].count);
    if (flops > kElementFlopsPerValue * values)
      return Status::Invalid("elem-too-costly",
                             std::to_string(flops) + " flops on " + std::to_string(values) + " values read");
  }
  return plan;
}

}  // namespace

Result<ElementPlan> PlanElement(std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot, std::int64_t e,
                                std::span<const kernels::Shape> input_shapes) {
  return PlanWithAttrs(op_kind, attrs, slot, e, input_shapes);
}

Result<float> ReexecuteElement(const ElementMode& mode, std::uint16_t op_kind, ByteSpan attrs,
                               std::uint32_t slot, const ElementPlan& plan,
                               std::span<const std::vector<float>> slice_values,
                               const kernels::RngAddress& rng) {
  if (!Is(op_kind, {OpKind::kDropout}) || slot != 1)
    return ReexecuteElement(mode, op_kind, attrs, slot, plan, slice_values);
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok() || decoded->floats.size() != 1)
    return Status::Invalid("elem-bad-slice", "dropout attributes");
  if (rng.step > 0xFFFFFFFFull || rng.node > 0xFFFFFFFFull)
    return Status::Invalid("bad-rng-address", "dropout needs step and node below 2^32");
  const float p = decoded->Float(0);
  if (!(p >= 0.0f && p < 1.0f)) return Status::Invalid("bad-attribute", "dropout p must be in [0, 1)");
  // The kernel's own draw (kernels/ops/elementwise.h).
  return RoundedCopy(mode, kernels::DropoutKeep(rng.seed, static_cast<std::uint32_t>(rng.step),
                                                static_cast<std::uint32_t>(rng.node),
                                                static_cast<std::uint64_t>(plan.out_offset), p)
                               ? 1.0f
                               : 0.0f);
}

bool ReexecutesRoundedValue(std::uint16_t op_kind) {
  // Attention's only plan is the causal mask's +0, conv2d_backward's the
  // dx values no tap reaches (PlanWithAttrs).
  return Is(op_kind, {OpKind::kAttention, OpKind::kConv2dBackward}) ||
         std::ranges::find(kRoundedElementwise, static_cast<OpKind>(op_kind)) !=
             std::end(kRoundedElementwise);
}

std::vector<std::uint32_t> SlotWalkOrder(std::uint16_t op_kind, std::uint32_t num_outputs) {
  std::vector<std::uint32_t> order;
  if (Is(op_kind, {OpKind::kClipGradNorm}) && num_outputs > 0) order.push_back(num_outputs - 1);  // the norm first
  if (Is(op_kind, {OpKind::kDropout, OpKind::kAttention}) && num_outputs == 2) order.push_back(1);  // keep, att before y
  if (Is(op_kind, {OpKind::kBatchNorm2dTrain}) && num_outputs == 5)
    order = {3, 4};  // mean, rstd before the rest
  if (Is(op_kind, {OpKind::kBatchNorm2dBackward}) && num_outputs == 3) order = {1, 2};  // dγ, dβ before dx
  if (Is(op_kind, {OpKind::kLayerNorm}) && num_outputs == 3) order = {1, 2};            // mean, rstd before y
  for (std::uint32_t s = 0; s < num_outputs; ++s) {
    if (std::find(order.begin(), order.end(), s) == order.end()) order.push_back(s);
  }
  return order;
}

Result<float> ReexecuteElement(const ElementMode& mode, std::uint16_t op_kind, ByteSpan attrs,
                               std::uint32_t slot, const ElementPlan& plan,
                               std::span<const std::vector<float>> slice_values) {
  const bool certified = mode.mode == kernels::Mode::kCertified;
  const bool rounded = mode.mode == kernels::Mode::kRounded;
  if (mode.mode != kernels::Mode::kRepops && !certified && !rounded)
    return Status::Invalid("elem-no-rule", "native values are not re-executed");
  if (slice_values.size() != plan.inputs.size())
    return Status::Invalid("elem-bad-slice", "one slice per input");
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    if (static_cast<std::int64_t>(slice_values[i].size()) != plan.inputs[i].count)
      return Status::Invalid("elem-bad-slice", "input " + std::to_string(i) + " has the wrong count");
  }
  auto decoded = DecodeExact<kernels::OpAttrs>(attrs);
  if (!decoded.ok()) return Status::Invalid("elem-bad-slice", decoded.status().ToString());
  auto kind = kernels::OpKindFromValue(op_kind);
  if (!kind.ok()) return kind.status();
  if (rounded && !ReexecutesRoundedValue(op_kind)) return NoRoundedRule();
  if (*kind == OpKind::kClipGradNorm) {
    // g'_i = g_i·scale(norm), the norm agreed (an own-output slice): the
    // kernel's own expression on the two values.
    if (plan.inputs.empty() || plan.inputs.back().output_slot < 0 || decoded->floats.size() != 1 ||
        slot >= plan.inputs.size() - 1 || plan.inputs[slot].count != 1)
      return Status::Invalid("elem-bad-slice", "clip_grad_norm");
    return slice_values[slot][0] * kernels::ClipGradScale(decoded->Float(0), slice_values.back()[0]);
  }
  if (*kind == OpKind::kBatchNorm2dTrain || *kind == OpKind::kBatchNorm2dBackward ||
      *kind == OpKind::kLayerNorm) {
    // The norm kernels' own expressions (kernels/ops/norm.h) on the values
    // read, in PlanElement's order.
    std::vector<float> v;
    for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
      if (plan.inputs[i].count == 1) v.push_back(slice_values[i][0]);
    }
    if (*kind != OpKind::kBatchNorm2dBackward) {
      // The kernel refuses these attributes (eps; batch-norm's momentum too): the node has no value.
      const bool layer = *kind == OpKind::kLayerNorm;
      const bool valid = decoded->ints.empty() && decoded->floats.size() == (layer ? 1u : 2u) &&
                         std::isfinite(decoded->Float(0)) && decoded->Float(0) > 0.0f &&
                         (layer || (decoded->Float(1) >= 0.0f && decoded->Float(1) <= 1.0f));
      if (!valid)
        return Status::Invalid("bad-attribute", layer ? "layernorm eps" : "batchnorm eps and momentum");
      if (slot == 0 && v.size() == 5)
        return kernels::NormValue(v[0], v[3], v[4], v[1], v[2]);  // x, γ, β, mean, rstd
      if (!layer && slot == 1 && v.size() == 2)
        return kernels::BatchNormRunning(v[0], v[1], decoded->Float(1));  // running, mean
    }
    if (*kind == OpKind::kBatchNorm2dBackward && slot == 0 && v.size() == 7)  // dy, x, γ, mean, rstd, dγ, dβ
      return kernels::BatchNormGradValue(v[0], v[1], v[2], v[3], v[4], v[5], v[6], plan.channel_values);
    return Status::Invalid("elem-bad-slice", "norm");
  }
  if ((*kind == OpKind::kAvgPool2dBackward || *kind == OpKind::kMaxPool2dBackward) && slot == 0) {
    // The kernel's own per-value sum over the covering windows (PlanElement's slices).
    auto params = kernels::Pool2dParamsOf(*decoded);
    if (!params.ok() || plan.inputs.size() != 2 || plan.inputs[0].shape.size() != 4 ||
        plan.inputs[1].shape.size() != 4)
      return Status::Invalid("elem-bad-slice", "pool backward");
    const kernels::Pool2dParams& p = *params;
    const std::int64_t h = plan.inputs[1].shape[2], w = plan.inputs[1].shape[3], ow = plan.inputs[0].shape[3];
    if (h < 1 || w < 1 || ow < 1) return Status::Invalid("elem-bad-slice", "pool backward");
    const std::int64_t oh = kernels::OutExtent(h, p.kernel_h, p.stride_h, p.pad_h);
    const std::int64_t ih = plan.out_offset / w, iw = plan.out_offset % w;
    const std::pair<std::int64_t, std::int64_t> windows =
        kernels::CoveringWindows(ih, p.kernel_h, p.stride_h, p.pad_h, oh);
    const std::int64_t h0 = windows.first,
                       h1 = windows.second;  // (a lambda reads them: no structured binding)
    // Every index below lies in its slice: PlanElement sized them, their counts were checked.
    const std::vector<float>& dy = slice_values[0];
    const auto dy_at = [&](std::int64_t o_h, std::int64_t o_w) {
      return dy[static_cast<std::size_t>((o_h - h0) * ow + o_w)];
    };
    if (*kind == OpKind::kAvgPool2dBackward) {
      if (rounded) return RoundedExact(mode, kernels::AvgPoolGradAt<double>(p, oh, ow, ih, iw, dy_at));
      return certified ? kernels::CertifiedAvgPoolGradAt(p, oh, ow, ih, iw, dy_at)
                       : kernels::AvgPoolGradAt<float>(p, oh, ow, ih, iw, dy_at);
    }
    if (h1 < h0) return rounded ? RoundedExact(mode, +0.0) : +0.0f;
    const std::int64_t r0 = MaxPoolRows(p, h, h0, h1).first;
    const std::vector<float>& xs = slice_values[1];
    const auto x_at = [&](std::int64_t r, std::int64_t c) {
      return xs[static_cast<std::size_t>((r - r0) * w + c)];
    };
    if (rounded)
      return RoundedExact(mode, kernels::MaxPoolGradAt<double>(p, h, w, oh, ow, ih, iw, x_at, dy_at));
    return certified ? kernels::CertifiedMaxPoolGradAt(p, h, w, oh, ow, ih, iw, x_at, dy_at)
                     : kernels::MaxPoolGradAt<float>(p, h, w, oh, ow, ih, iw, x_at, dy_at);
  }
  if ((*kind == OpKind::kAttention && slot == 1) || (*kind == OpKind::kConv2dBackward && slot == 0)) {
    // Attention above the diagonal, a strided convolution's dx no tap
    // reaches: the kernel writes +0 whatever its inputs hold.
    if (plan.inputs.empty() ||
        std::any_of(plan.inputs.begin(), plan.inputs.end(), [](const InputSlice& s) { return s.count != 0; }))
      return Status::Invalid("elem-bad-slice", "a value read from nothing");
    return RoundedCopy(mode, +0.0f);
  }
  if (*kind == OpKind::kDropout && slot == 0) {
    // The forward's y is dropout_backward's expression on (x, keep): run that kernel on the two values.
    if (plan.inputs.size() != 2 || plan.inputs[0].count != 1 || plan.inputs[1].output_slot != 1)
      return Status::Invalid("elem-bad-slice", "dropout");
    const kernels::Tensor x({1}, slice_values[0]), keep({1}, slice_values[1]);
    const std::vector<const kernels::Tensor*> in{&x, &keep};
    if (rounded) return ReexecuteRounded(mode, OpKind::kDropoutBackward, *decoded, 0, 0, in);
    kernels::ExecConfig config;
    config.mode = mode.mode;
    config.threads = 1;
    std::vector<kernels::Tensor> out;
    VT_TRY(kernels::RunOp(kernels::OpContext(config), OpKind::kDropoutBackward, *decoded, in, out));
    return out.at(0)[0];
  }
  std::vector<kernels::Tensor> tensors;
  tensors.reserve(plan.inputs.size());
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    if (plan.inputs[i].output_slot >= 0 || plan.inputs[i].count == 0)
      return Status::Invalid("elem-bad-slice", "the operator reads every input");
    tensors.emplace_back(plan.inputs[i].shape, slice_values[i]);
  }
  if (*kind == OpKind::kEmbedding) {
    // A copy of the gathered weight value (its row was checked when the
    // slice was resolved).
    if (tensors.size() != 2 || tensors[1].numel() != 1 || slot != 0)
      return Status::Invalid("elem-bad-slice", "embedding");
    if (!kernels::IsRowIndex(tensors[0][0], plan.inputs[1].rows))
      return Status::Invalid("bad-index", "embedding index");
    return RoundedCopy(mode, tensors[1][0]);
  }
  if (*kind == OpKind::kReshape) {
    // A copy: value e of the output is value e of the input (the node's
    // shapes were checked when its record was built).
    if (tensors.size() != 1 || tensors[0].numel() != 1) return Status::Invalid("elem-bad-slice", "reshape");
    return RoundedCopy(mode, tensors[0][0]);
  }
  std::vector<const kernels::Tensor*> in;
  for (const kernels::Tensor& t : tensors) in.push_back(&t);
  if (rounded) return ReexecuteRounded(mode, *kind, *decoded, slot, plan.out_offset, in);
  kernels::ExecConfig config;
  config.mode = mode.mode;
  config.threads = 1;
  const kernels::OpContext ctx(config);
  std::vector<kernels::Tensor> out;
  VT_TRY(kernels::RunOp(ctx, *kind, *decoded, in, out));
  if (slot >= out.size() || plan.out_offset >= out[slot].numel())
    return Status::Invalid("elem-bad-slice", "no such output");
  return out[slot][plan.out_offset];
}

}  // namespace vt::verify
