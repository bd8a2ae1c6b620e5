#pragma once
// What re-executing one operator in certified mode costs, per operator class
// (docs/kernels.md "Certified mode" → "Price"). The arbiter runs the exact
// path only (kernels ExecConfig::certified_exact_only), and an adversary
// chooses the inputs, so each class is priced at its worst case:
//   GEMM-like  (matmul, linear, conv2d, attention and their backwards): every
//              product through the exact accumulator (kExactFlops) and every
//              output rounded from it (kExactOutputs);
//   reduction  (sum, mean, norms, pools' sums, embedding_backward, the sums
//              inside layernorm/batchnorm/softmax/cross-entropy): every term
//              on the slow path (kExactTerms: inputs that cancel, e.g. a 2^60
//              pair, force it) and every reduced value rounded (kExactOutputs);
//   element-wise (relu, add, dropout, SGD/AdamW updates, reshapes): a plain
//              per-output cost (kExactElements) plus the flops at the repops
//              rate (kFlops);
//   transcendental (gelu, softmax's and cross-entropy's exp/log, the
//              schedule's cos): every call on common/crmath.h's double-double
//              slow path (kExactTranscendentals).
// Counts come from the operator's flop estimate (kernels OpFlops) and its
// declared output count only — no tensor is read — so the bond minimums bound
// the charge exactly (contract_vm/arbitration_cost.h). Each count is an upper
// bound: a row's divisor is at most the flops OpFlops counts per term or call.

#include <cstdint>
#include <span>
#include <vector>

namespace vt::verify {

// The certified work of one operator node, in the units of verify::Cost.
struct CertifiedWork {
  std::uint64_t exact_flops = 0;      // Cost::kExactFlops
  std::uint64_t rounded_outputs = 0;  // Cost::kExactOutputs
  std::uint64_t terms = 0;            // Cost::kExactTerms
  std::uint64_t elements = 0;         // Cost::kExactElements
  std::uint64_t transcendentals = 0;  // Cost::kExactTranscendentals
  std::uint64_t plain_flops = 0;      // Cost::kFlops (repops rate)
  bool operator==(const CertifiedWork&) const = default;
};

// The one table (certified_price.cpp). An op kind not in it is charged as if
// it were every class at once (never cheaper than any listed one).
// `input_shapes` and `attr_ints` (the node's OpAttrs ints) serve attention
// only, whose softmax exps (b·heads·t·t) are far fewer than its flops / 5.
CertifiedWork CertifiedWorkOf(std::uint16_t op_kind, std::uint64_t flops, std::uint64_t outputs,
                              std::span<const std::vector<std::int64_t>> input_shapes = {},
                              std::span<const std::int64_t> attr_ints = {}) noexcept;
// Whether the table lists `op_kind` (a test checks every operator of the presets is).
bool HasCertifiedPrice(std::uint16_t op_kind) noexcept;

}  // namespace vt::verify
