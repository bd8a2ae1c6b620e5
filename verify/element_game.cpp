#include "verify/element_game.h"

#include <algorithm>
#include <bit>
#include <string>
#include <tuple>
#include <type_traits>

#include "common/detmath.h"
#include "kernels/mode.h"
#include "kernels/ops/registry.h"
#include "verify/batch_opening.h"
#include "verify/certified_sum.h"
#include "verify/element.h"
#include "verify/state_walk.h"

namespace vt::verify {
namespace {

Result<crypto::MerkleProof> GetProof(Reader& r) { return crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}); }

constexpr auto kRepops = static_cast<std::uint8_t>(kernels::Mode::kRepops);
constexpr auto kRounded = static_cast<std::uint8_t>(kernels::Mode::kRounded);
constexpr auto kCertified = static_cast<std::uint8_t>(kernels::Mode::kCertified);

// Whether the mode plays any value rule (CheckRuleInMode), not only the assemble node's walk.
bool PlaysValueRules(std::uint8_t job_mode) {
  return job_mode == kRepops || job_mode == kRounded || job_mode == kCertified;
}

// The wire tags of PartialLeaf's alternatives, in its order.
enum class LeafTag : std::uint8_t { kFp32 = 0, kExact = 1, kFp64Sums = 2, kFp64 = 3 };

// The leaf a job's mode plays in rule `kind` (PartialLeaf's alternative index).
std::size_t LeafIndexOf(std::uint8_t job_mode, ElementKind kind) {
  if (job_mode == kCertified) return 1;
  if (job_mode == kRounded) return kind == ElementKind::kReduce ? 3 : 2;
  return 0;
}

}  // namespace

Status CheckRuleInMode(std::uint8_t job_mode, ElementKind kind, std::uint16_t op_kind) {
  if (kind == ElementKind::kState || job_mode == kRepops || job_mode == kCertified) return Status::Ok();
  if (job_mode == kRounded && kind == ElementKind::kPlan && ReexecutesRoundedValue(op_kind))
    return Status::Ok();
  if (job_mode == kRounded && kind == ElementKind::kDot && RoundedDotRuleCovers(op_kind)) return Status::Ok();
  if (job_mode == kRounded && kind == ElementKind::kReduce && RoundedReduceRuleCovers(op_kind))
    return Status::Ok();
  return Status::Invalid("elem-mode-no-rule", "this rounded value has no element rule: arbitrated whole");
}

bool RoundedReduceRuleCovers(std::uint16_t op_kind) {
  using kernels::OpKind;
  for (OpKind k : {OpKind::kSum, OpKind::kMean, OpKind::kLinearBackward, OpKind::kConv2dBackward,
                   OpKind::kLayerNorm, OpKind::kLayerNormBackward, OpKind::kSoftmax, OpKind::kSoftmaxBackward,
                   OpKind::kBatchNorm2dBackward, OpKind::kBatchNorm2dTrain, OpKind::kClipGradNorm,
                   OpKind::kCrossEntropy, OpKind::kCrossEntropyBackward, OpKind::kEmbeddingBackward,
                   OpKind::kAvgPool2d, OpKind::kMaxPool2d, OpKind::kAttention, OpKind::kAttentionBackward})
    if (op_kind == static_cast<std::uint16_t>(k)) return true;
  return false;
}

bool RoundedDotRuleCovers(std::uint16_t op_kind) {
  using kernels::OpKind;
  for (OpKind k :
       {OpKind::kLinear, OpKind::kLinearBackward, OpKind::kMatMul, OpKind::kConv2d, OpKind::kConv2dBackward})
    if (op_kind == static_cast<std::uint16_t>(k)) return true;
  return false;
}

std::uint64_t LogPositionOf(std::span<const Shape> output_shapes, std::uint32_t slot, std::int64_t e) {
  std::uint64_t position = static_cast<std::uint64_t>(e);
  for (std::uint32_t s = 0; s < slot && s < output_shapes.size(); ++s)
    position += static_cast<std::uint64_t>(kernels::NumElements(output_shapes[s]));
  return position;
}

ElementMode ElementModeOf(std::uint8_t job_mode, std::uint8_t rounding_bits) {
  const auto mode = static_cast<kernels::Mode>(job_mode);
  if (mode != kernels::Mode::kRounded) return ElementMode(mode);
  return ElementMode(kernels::RoundingSpec{rounding_bits, 0}, std::nullopt);
}

namespace {

// Whether an element reads the node's own outputs: a rounded kernel reads
// its own unrounded fp64 value there, which no record holds.
bool ReadsOwnOutput(const ReduceElement& el) {
  const auto own = [](const std::vector<TermOperand>& reads) {
    return std::any_of(reads.begin(), reads.end(),
                       [](const TermOperand& o) { return o.input >= kOwnOutput; });
  };
  return own(el.scan_reads) || own(el.final_reads) || own(el.outer_reads) ||
         std::any_of(el.segments.begin(), el.segments.end(),
                     [&](const ReduceSegment& s) { return own(s.operands); });
}

// The description as the job's mode plays it (certified: its sums exact,
// verify/certified_sum.h; rounded: fp64 sums, where the kernel's are the
// rule's — not over a GEMM's dot products, which rounded mode leaves to
// vendor dgemm, unless the description carries the kernel's β for them
// (ReduceSlack), nor over the node's own outputs).
Status PlayInMode(std::uint8_t job_mode, std::uint16_t op_kind, ReduceElement& element) {
  VT_TRY(CheckRuleInMode(job_mode, ElementKind::kReduce, op_kind));
  element.exact = job_mode == kCertified;
  element.fp64 = job_mode == kRounded;
  const bool vendor_dots =
      (element.scan == ReduceScan::kDot || element.attention_grad) && element.slack == ReduceSlack::kNone;
  if (element.fp64 && (vendor_dots || ReadsOwnOutput(element)))
    return Status::Invalid("elem-mode-no-rule",
                           "this rounded value's sum is not the rule's: arbitrated whole");
  return Status::Ok();
}

}  // namespace

Result<ReduceElement> ReduceRuleAt(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs,
                                   std::uint32_t slot, std::int64_t e, std::span<const Shape> input_shapes) {
  // Rounded values whose kernel reads its own unrounded statistic (a clip's
  // norm; a norm's mean, rstd, dγ or dβ): its sums, not the agreed statistic.
  Result<ReduceElement> described = Status::Invalid("elem-no-reduce-rule");
  if (job_mode == kRounded) described = RoundedElementAt(op_kind, attrs, slot, e, input_shapes);
  if (!described.ok() && described.status().reason() == "elem-no-reduce-rule")
    described = ReduceElementAt(op_kind, attrs, slot, e, input_shapes);
  VT_ASSIGN_OR_RETURN(ReduceElement element, std::move(described));
  VT_TRY(PlayInMode(job_mode, op_kind, element));
  return element;
}

Result<StepVerdict> JudgeReduceStepClaim(const ReduceElement& element, std::span<const InputTensor> inputs,
                                         const std::array<Hash256, 2>& roots, const ReduceMoveClaim& claim,
                                         const OpenedBatch* batch, std::span<const InputTensor> own) {
  return std::visit(
      [&]<class Leaf>(const Leaf& left) -> Result<StepVerdict> {
        const Leaf* next_a = std::get_if<Leaf>(&claim.next[0]);
        const Leaf* next_b = std::get_if<Leaf>(&claim.next[1]);
        const Leaf* right = claim.right ? std::get_if<Leaf>(&claim.right->first) : nullptr;
        if (next_a == nullptr || next_b == nullptr || (claim.right && right == nullptr))
          return Status::Invalid("elem-wrong-leaf", "partial results of two kinds in one claim");
        if (std::is_same_v<Leaf, ExactPartial> != element.exact)
          return Status::Invalid("elem-wrong-leaf", "the leaves are not the sum's kind");
        if constexpr (std::is_same_v<Leaf, RoundedPartial>) {
          return Status::Invalid("elem-wrong-leaf", "a reduction's leaves are no dot product's");
        } else if constexpr (std::is_same_v<Leaf, float> || std::is_same_v<Leaf, double>) {
          ReduceStepClaimOf<Leaf> typed;
          typed.m = claim.m;
          typed.left = left;
          typed.left_proof = claim.left_proof;
          if (right != nullptr)
            std::tie(typed.right, typed.right_proof) = std::pair{*right, claim.right->second};
          typed.next = {*next_a, *next_b};
          typed.next_proof = claim.next_proof;
          typed.reads = claim.reads;
          return JudgeReduceStepClaim(element, inputs, roots, typed, batch, own);
        } else {
          std::optional<std::pair<ExactPartial, crypto::MerkleProof>> typed_right;
          if (right != nullptr) typed_right.emplace(*right, claim.right->second);
          const CertifiedSumStepClaim typed{
              claim.m,          left,       claim.left_proof, typed_right, {*next_a, *next_b},
              claim.next_proof, claim.reads};
          return JudgeCertifiedSumStepClaim(element, inputs, roots, typed, batch, own);
        }
      },
      claim.left);
}

Result<StepVerdict> JudgeReduceEpilogue(const ReduceElement& element, const PartialLeaf& p_k, float y_a,
                                        float y_b, const RoundedEpilogue* rounded) {
  return std::visit(
      [&]<class Leaf>(const Leaf& sum) -> Result<StepVerdict> {
        if ((rounded != nullptr) != std::is_same_v<Leaf, double>)
          return Status::Invalid("elem-wrong-leaf",
                                 "a rounded sum's epilogue needs the job's rounding and log");
        if constexpr (std::is_same_v<Leaf, RoundedPartial>) {
          return Status::Invalid("elem-wrong-leaf", "a reduction's leaves are no dot product's");
        } else if constexpr (std::is_same_v<Leaf, double>) {
          // With a slack, p_K is its fold and the value's leaf was opened apart.
          if (rounded->value_leaf.has_value() != (element.slack != ReduceSlack::kNone))
            return Status::Invalid("elem-wrong-leaf", "the value's leaf goes with a slack");
          return JudgeRoundedReduceEpilogue(element, rounded->value_leaf.value_or(sum), sum, rounded->spec,
                                            rounded->logged, y_a, y_b);
        } else if constexpr (std::is_same_v<Leaf, float>) {
          if (element.fp64 || element.exact) return Status::Invalid("elem-wrong-leaf", "not the sum's kind");
          return JudgeReduceEpilogue(element, sum, y_a, y_b);
        } else {
          return JudgeCertifiedSumEpilogue(element, sum, y_a, y_b);
        }
      },
      p_k);
}

Result<std::optional<double>> OpenValueLeaf(const ReduceElement& element, const Hash256& root,
                                            const std::optional<LeafOpening>& opening) {
  constexpr std::string_view kReason = "elem-bad-leaf";
  if ((element.slack != ReduceSlack::kNone) != opening.has_value())
    return Status::Invalid(kReason, opening ? "this epilogue opens no leaf" : "open the value's leaf");
  if (!opening) return std::optional<double>();
  const double* value = std::get_if<double>(&opening->first);
  if (value == nullptr) return Status::Invalid("elem-wrong-leaf", "a rounded sum's leaves are fp64");
  VT_TRY(CheckPartialLeaf(kReason, root, *value, opening->second, element.ValueSteps(), element.Steps() + 1));
  return std::optional<double>(*value);
}

RoundedEpilogue RoundedReduceEpilogueOf(std::uint16_t op_kind, std::uint8_t bits, std::uint32_t node_tau_q16,
                                        std::optional<bool> logged) {
  const bool tau_applies = !kernels::OpFp64IsExact(static_cast<kernels::OpKind>(op_kind));
  return RoundedEpilogue{0, kernels::RoundingSpec{bits, tau_applies ? node_tau_q16 : 0}, logged,
                         std::nullopt};
}

Status CheckLeafKind(std::uint8_t job_mode, ElementKind kind, const PartialLeaf& leaf) {
  static constexpr const char* kNames[] = {"an fp32 partial result", "an exact partial sum",
                                           "a rounded dot product's (fp64) partial result",
                                           "an fp64 partial sum"};
  const std::size_t want = LeafIndexOf(job_mode, kind);
  if (leaf.index() != want)
    return Status::Invalid("elem-wrong-leaf",
                           std::string(kNames[leaf.index()]) + " where the job's mode plays " + kNames[want]);
  return Status::Ok();
}

std::uint64_t PartialLeafBytes(std::uint8_t job_mode) {
  static constexpr std::uint64_t kBytes[] = {sizeof(float), sizeof(ExactPartial), 3 * sizeof(double),
                                             sizeof(double)};
  return 1 + std::max(kBytes[LeafIndexOf(job_mode, ElementKind::kDot)],
                      kBytes[LeafIndexOf(job_mode, ElementKind::kReduce)]);
}

Status CheckPartialsEnds(const Hash256& root, std::uint64_t k, const PartialLeaf& p_k,
                         const crypto::MerkleProof& first, const crypto::MerkleProof& last) {
  return std::visit([&](const auto& leaf) { return CheckPartialsEnds(root, k, leaf, first, last); }, p_k);
}

Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots,
                                      const DotStepClaimOf<PartialLeaf>& claim, const OpenedBatch* batch) {
  return std::visit(
      [&]<class Leaf>(const Leaf& p_m) -> Result<StepVerdict> {
        const Leaf* next_a = std::get_if<Leaf>(&claim.next[0]);
        const Leaf* next_b = std::get_if<Leaf>(&claim.next[1]);
        if (next_a == nullptr || next_b == nullptr)
          return Status::Invalid("elem-wrong-leaf", "partial sums of two kinds in one claim");
        if constexpr (std::is_same_v<Leaf, double>) {
          return Status::Invalid("elem-wrong-leaf", "an fp64 sum is no dot product's leaf");
        } else {
          const DotStepClaimOf<Leaf> typed{claim.m,          p_m,     claim.p_m_proof, {*next_a, *next_b},
                                           claim.next_proof, claim.a, claim.b};
          return JudgeDotStepClaim(element, factors, roots, typed, batch);
        }
      },
      claim.p_m);
}

Result<StepVerdict> JudgeDotEpilogue(const PartialLeaf& p_k, std::optional<float> bias, float y_a, float y_b,
                                     const RoundedEpilogue* rounded) {
  return std::visit(
      [&]<class Leaf>(const Leaf& leaf) -> Result<StepVerdict> {
        if ((rounded != nullptr) != std::is_same_v<Leaf, RoundedPartial>)
          return Status::Invalid("elem-wrong-leaf", "a rounded epilogue needs the job's rounding and log");
        if constexpr (std::is_same_v<Leaf, RoundedPartial>) {
          return JudgeRoundedDotEpilogue(leaf, bias, rounded->k, rounded->spec, rounded->logged, y_a, y_b);
        } else if constexpr (std::is_same_v<Leaf, double>) {
          return Status::Invalid("elem-wrong-leaf", "an fp64 sum is no dot product's leaf");
        } else {
          return JudgeDotEpilogue(leaf, bias, y_a, y_b);
        }
      },
      p_k);
}

bool IsBatchInput(std::span<const protocol::InputRef> inputs, std::uint32_t input) {
  return input < inputs.size() && inputs[input].source == protocol::InputSource::kBatch;
}

namespace {

// Whether the job's mode describes value e itself (a rounded kernel's own
// description, RoundedElementAt), before any dot rule.
bool ModeDescribes(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                   std::int64_t e, std::span<const Shape> input_shapes) {
  return job_mode == kRounded && RoundedElementAt(op_kind, attrs, slot, e, input_shapes).ok();
}

}  // namespace

bool DotRuleJudges(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                   std::int64_t e, std::span<const Shape> input_shapes) {
  return !ModeDescribes(job_mode, op_kind, attrs, slot, e, input_shapes) &&
         DotElementAt(op_kind, attrs, slot, e, input_shapes).ok();
}

Result<ElementChoice> ChooseElementRule(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs,
                                        std::uint32_t slot, std::int64_t e,
                                        std::span<const protocol::InputRef> inputs,
                                        std::span<const Shape> input_shapes) {
  ElementChoice choice;
  const auto add = [&](std::uint32_t input) {
    if (auto own = OwnOutputSlot(input)) {
      choice.own_slots.push_back(*own);
    } else {
      choice.opened_inputs.push_back(input);
    }
  };
  if (auto dot = DotElementAt(op_kind, attrs, slot, e, input_shapes);
      dot.ok() && !ModeDescribes(job_mode, op_kind, attrs, slot, e, input_shapes)) {
    // A factor of the batch (the first layer's x) comes from one example a
    // step (DotStepBatchPositions); the other factor and the bias by hash.
    choice.kind = ElementKind::kDot;
    for (std::uint32_t f : {dot->a_input, dot->b_input}) {
      if (IsBatchInput(inputs, f)) {
        choice.batch_inputs.push_back(f);
        ++choice.batch_examples;  // one value: one example
      } else {
        add(f);
      }
    }
    if (dot->bias_input) add(*dot->bias_input);
  } else if (auto reduce_at = ReduceRuleAt(job_mode, op_kind, attrs, slot, e, input_shapes);
             reduce_at.ok() || reduce_at.status().reason() == "elem-mode-no-rule") {
    // The mode's reduction rule (certified: its sums exact; rounded: fp64).
    VT_TRY(reduce_at.status());
    const ReduceElement& reduce = *reduce_at;
    // Any step may be disputed: every input a segment's operand reads
    // (clip's norm: one input a segment), the scan's and the final step's.
    // A batch input is read through one example a step.
    choice.kind = ElementKind::kReduce;
    std::vector<std::uint32_t> reads;
    for (const ReduceSegment& seg : reduce.segments)
      for (const TermOperand& op : seg.operands) reads.push_back(op.input);
    for (const TermOperand& op : reduce.scan_reads) reads.push_back(op.input);
    for (const TermOperand& op : reduce.outer_reads) reads.push_back(op.input);
    if (reduce.attention_grad) reads.insert(reads.end(), {0, 1, 2});  // dy, qkv, att
    for (const TermOperand& op : reduce.final_reads) {
      // A gathered value of the batch: its example is known only from the value that names it.
      if (op.gather_from >= 0 && IsBatchInput(inputs, op.input))
        return Status::Invalid("elem-no-rule", "a gathered batch read");
      reads.push_back(op.input);
    }
    for (std::uint32_t i : reads) {
      if (IsBatchInput(inputs, i)) {
        // A step reads one value of each of its operands: at most one example each.
        choice.batch_inputs.push_back(i);
        ++choice.batch_examples;
      } else {
        add(i);
      }
    }
  } else if (auto plan = PlanElement(op_kind, attrs, slot, e, input_shapes); plan.ok()) {
    choice.kind = ElementKind::kPlan;
    std::int64_t chunks = 0;
    for (std::uint32_t i = 0; i < plan->inputs.size(); ++i) {
      const InputSlice& s = plan->inputs[i];
      if (s.count == 0) continue;  // not read: nothing opened
      if (s.output_slot >= 0) {
        choice.own_slots.push_back(static_cast<std::uint32_t>(s.output_slot));
      } else if (IsBatchInput(inputs, i)) {
        // Values of the batch: its examples, no chunks (PlanBatchPositions).
        if (s.row_from >= 0) return Status::Invalid("elem-no-rule", "a gathered batch slice");
        choice.batch_inputs.push_back(i);
        continue;
      } else {
        choice.opened_inputs.push_back(i);
      }
      chunks += SliceChunks(s);
    }
    choice.batch_examples = static_cast<std::int64_t>(PlanBatchPositions(*plan, inputs, input_shapes).size());
    if (chunks > kMaxOpenedChunks || choice.batch_examples > kMaxOpenedExamples ||
        choice.opened_inputs.size() + choice.own_slots.size() + choice.batch_inputs.size() > kMaxOpenedInputs)
      return Status::Invalid(
          "elem-too-wide",
          std::to_string(chunks) + " chunks, " + std::to_string(choice.batch_examples) + " examples to open");
  } else {
    return Status::Invalid("elem-no-rule", plan.status().ToString());
  }
  VT_TRY(CheckRuleInMode(job_mode, choice.kind, op_kind));
  for (auto* list : {&choice.opened_inputs, &choice.own_slots, &choice.batch_inputs}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  for (std::uint32_t i : choice.opened_inputs) {
    // The batch has no tensor hash to open a value against (VerifyInputHash).
    if (i >= inputs.size() || IsBatchInput(inputs, i))
      return Status::Invalid("elem-batch-input", "input " + std::to_string(i));
  }
  return choice;
}

std::vector<std::uint64_t> PlanBatchPositions(const ElementPlan& plan,
                                              std::span<const protocol::InputRef> inputs,
                                              std::span<const Shape> input_shapes) {
  std::vector<std::uint64_t> positions;
  for (std::size_t i = 0; i < plan.inputs.size() && i < inputs.size() && i < input_shapes.size(); ++i) {
    const InputSlice& s = plan.inputs[i];
    if (s.count == 0 || s.output_slot >= 0 || !IsBatchInput(inputs, static_cast<std::uint32_t>(i))) continue;
    for (std::uint64_t k : BatchPositionsOf(input_shapes[i], s.first, s.count)) positions.push_back(k);
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return positions;
}

std::vector<std::uint64_t> DotStepBatchPositions(const DotElement& element, std::uint64_t m,
                                                 std::span<const protocol::InputRef> inputs,
                                                 std::span<const Shape> input_shapes) {
  std::vector<std::uint64_t> positions;
  const auto m_index = static_cast<std::int64_t>(m);
  for (const auto& [input, index] : {std::pair{element.a_input, element.AIndex(m_index)},
                                     std::pair{element.b_input, element.BIndex(m_index)}}) {
    if (index < 0 || !IsBatchInput(inputs, input) || input >= input_shapes.size())
      continue;  // a padding tap, the node's own output or a hashed input
    for (std::uint64_t k : BatchPositionsOf(input_shapes[input], index, 1)) positions.push_back(k);
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return positions;
}

std::vector<std::uint64_t> StepBatchPositions(std::span<const StepRead> reads,
                                              std::span<const protocol::InputRef> inputs,
                                              std::span<const Shape> input_shapes) {
  std::vector<std::uint64_t> positions;
  // A batch read is never gathered (ChooseElementRule): its index is known.
  for (const StepRead& r : reads) {
    if (r.input >= input_shapes.size() || !IsBatchInput(inputs, r.input)) continue;
    for (std::uint64_t k : BatchPositionsOf(input_shapes[r.input], r.index, 1)) positions.push_back(k);
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  return positions;
}

std::optional<std::uint32_t> OwnOutputSlot(std::uint32_t factor_input) {
  if (factor_input < kOwnOutput) return std::nullopt;
  return factor_input - kOwnOutput;
}

Result<std::vector<Shape>> NodeInputShapes(const StepGraph& graph, const NodeSpec& node) {
  std::vector<Shape> shapes;
  shapes.reserve(node.inputs.size());
  for (const protocol::InputRef& ref : node.inputs) {
    const std::vector<std::vector<std::int64_t>>* table = nullptr;
    std::size_t index = ref.index;
    switch (ref.source) {
      case protocol::InputSource::kState: table = &graph.state_shapes; break;
      case protocol::InputSource::kBatch: table = &graph.batch_shapes; break;
      case protocol::InputSource::kNode:
        if (ref.index < graph.nodes.size()) table = &graph.nodes[ref.index].output_shapes;
        index = ref.slot;
        break;
    }
    if (table == nullptr || index >= table->size()) return Status::Error("graph-invalid", "input shape not declared");
    shapes.push_back((*table)[index]);
  }
  return shapes;
}

Result<std::uint32_t> FirstDifferingSlot(std::uint16_t op_kind, const protocol::NodeRecord& a,
                                         const protocol::NodeRecord& b) {
  const std::size_t n = std::min(a.output_hashes.size(), b.output_hashes.size());
  for (std::uint32_t s : SlotWalkOrder(op_kind, static_cast<std::uint32_t>(n)))
    if (s < n && a.output_hashes[s] != b.output_hashes[s]) return s;
  return Status::Invalid("elem-same-outputs");
}

Result<DescentStart> StartDescent(std::uint8_t job_mode, const StepGraph& graph, std::uint64_t node_index,
                                  const protocol::NodeRecord& a, const protocol::NodeRecord& b) {
  DescentStart d;
  if (node_index >= graph.nodes.size()) {
    // The assemble node: its walk needs no rule, in any mode (verify/state_walk.h).
    d.assemble = true;
    d.num_state_tensors = graph.num_state_tensors;
    d.chunks = StateLeafCount(graph.num_state_tensors);
    return d;
  }
  // Before any rule: a mode with none is refused whatever the node.
  if (!PlaysValueRules(job_mode))
    return Status::Invalid("elem-mode-no-rule", "the job's mode plays no value rule");
  const NodeSpec& spec = graph.nodes[node_index];
  VT_ASSIGN_OR_RETURN(d.slot, FirstDifferingSlot(spec.op_kind, a, b));
  VT_ASSIGN_OR_RETURN(d.input_shapes, NodeInputShapes(graph, spec));
  if (d.slot >= spec.output_shapes.size()) return Status::Error("graph-invalid", "output shape not declared");
  VT_ASSIGN_OR_RETURN(ElementChoice choice, ChooseElementRule(job_mode, spec.op_kind, spec.attrs, d.slot, 0,
                                                              spec.inputs, d.input_shapes));
  d.num_state_tensors = graph.num_state_tensors;
  d.output_shapes = spec.output_shapes;
  d.chunks = ChunkCountOf(d.output_shapes[d.slot]);
  d.tau_q16 = spec.tau_q16;
  if (d.chunks == 0) return Status::Invalid("elem-no-rule", "an empty output");
  return d;
}

namespace {

// The values of output `slot` whose rules read the most, or have the most
// partial results: the first and the last; for an NCHW output (a
// convolution's dx, a pooling's y or dx) the middle of the first image's
// first plane, whose windows the border does not clip; for
// attention_backward's dqkv [B, T, 3C] dq at the last row (its tree grows
// with t) and dk at the first column (it grows with T − u).
std::vector<std::int64_t> WidestValues(const NodeSpec& node, std::span<const Shape> input_shapes,
                                       std::uint32_t slot) {
  const Shape& out = node.output_shapes[slot];
  const std::int64_t n = kernels::NumElements(out);
  std::vector<std::int64_t> values = {0, n - 1};
  if (out.size() == 4) values.push_back(out[2] / 2 * out[3] + out[3] / 2);
  if (static_cast<kernels::OpKind>(node.op_kind) == kernels::OpKind::kAttentionBackward && out.size() == 3 &&
      input_shapes.size() == 3 && input_shapes[0].size() == 3) {
    const std::int64_t t_count = out[1], c3 = out[2], c = input_shapes[0][2];
    values.insert(values.end(), {(t_count - 1) * c3, c});
  }
  std::erase_if(values, [&](std::int64_t e) { return e < 0 || e >= n; });
  return values;
}

}  // namespace

Result<DescentBound> BoundDescent(std::uint8_t job_mode, const StepGraph& graph) {
  DescentBound bound;
  // Levels above `leaves` leaves (none for an empty tensor: nothing to walk or open).
  const auto height = [](std::uint64_t leaves) -> std::uint64_t {
    if (leaves == 0) return 0;
    return crypto::MerkleShape::IsValidLeafCount(leaves) ? crypto::MerkleShape(leaves).height() : 64;
  };
  // The assemble node's walk, in every mode: its root, the walk, the final opening.
  const std::uint64_t state_height = height(StateLeafCount(graph.num_state_tensors));
  bound.moves = 2 + state_height;
  bound.chunk_height = state_height;
  bound.header_opening = true;
  bound.opening_height = std::max(state_height, height(graph.nodes.size() + 1));
  bound.final_openings = 1;  // its final move opens one input by its hash (or the header of h_t)
  if (!PlaysValueRules(job_mode)) return bound;
  for (const NodeSpec& node : graph.nodes) {
    VT_ASSIGN_OR_RETURN(std::vector<Shape> shapes, NodeInputShapes(graph, node));
    for (std::uint32_t slot = 0; slot < node.output_shapes.size(); ++slot) {
      auto choice = ChooseElementRule(job_mode, node.op_kind, node.attrs, slot, 0, node.inputs, shapes);
      if (!choice.ok()) continue;
      const std::uint64_t chunks = ChunkCountOf(node.output_shapes[slot]);
      if (chunks == 0) continue;
      std::uint64_t values = 0;  // the node's outputs: its log has at most one entry each
      for (const Shape& out : node.output_shapes)
        values += static_cast<std::uint64_t>(kernels::NumElements(out));
      bound.log_height = std::max(bound.log_height, height(values));
      // Terms + 1 leaves, for the rules with partial results: the most over
      // the slot's widest values (a value without such a rule counts none).
      std::uint64_t partials = 0;
      const std::vector<std::int64_t> widest = WidestValues(node, shapes, slot);
      for (std::int64_t e : widest) {
        auto at = ChooseElementRule(job_mode, node.op_kind, node.attrs, slot, e, node.inputs, shapes);
        if (at.ok() && at->kind == ElementKind::kDot) {
          VT_ASSIGN_OR_RETURN(DotElement el, DotElementAt(node.op_kind, node.attrs, slot, e, shapes));
          partials = std::max(partials, static_cast<std::uint64_t>(el.k) + 1);
        } else if (at.ok() && at->kind == ElementKind::kReduce) {
          VT_ASSIGN_OR_RETURN(ReduceElement el,
                              ReduceRuleAt(job_mode, node.op_kind, node.attrs, slot, e, shapes));
          partials = std::max(partials, el.Steps() + 1);
        }
      }
      for (std::int64_t e : widest) {
        auto deciding = BoundDecidingMove(job_mode, node, shapes, slot, e);
        if (!deciding.ok()) continue;  // no rule at the last value: not covered (ElementCoversNode)
        // A value past the caps has no deciding move (ChooseElementRule's elem-too-wide).
        bound.final_chunks = std::max(
            bound.final_chunks, std::min(deciding->chunks, static_cast<std::uint64_t>(kMaxOpenedChunks)));
        bound.final_openings = std::max(bound.final_openings, deciding->openings);
        bound.batch_examples =
            std::max(bound.batch_examples,
                     std::min(deciding->examples, static_cast<std::uint64_t>(kMaxOpenedExamples)));
      }
      bound.value_rules = true;
      bound.leaf_bytes = PartialLeafBytes(job_mode);
      const std::uint64_t hc = height(chunks), hp = partials == 0 ? 0 : height(partials);
      bound.moves = std::max(bound.moves, 4 + hc + hp);
      bound.chunk_height = std::max(bound.chunk_height, hc);
      bound.partials_height = std::max(bound.partials_height, hp);
      std::uint64_t shape_bytes = 0;
      for (const Shape& in : shapes) {
        bound.chunk_height = std::max(bound.chunk_height, height(ChunkCountOf(in)));
        shape_bytes += 8 * (in.size() + 1);
      }
      for (const Shape& out : node.output_shapes) shape_bytes += 8 * (out.size() + 1);
      bound.shape_bytes = std::max(bound.shape_bytes, shape_bytes + 8 * (node.output_shapes[slot].size() + 1));
    }
  }
  return bound;
}

Result<DecidingMoveBound> BoundDecidingMove(std::uint8_t job_mode, const NodeSpec& node,
                                            std::span<const Shape> input_shapes, std::uint32_t slot,
                                            std::int64_t e) {
  VT_ASSIGN_OR_RETURN(ElementChoice choice, ChooseElementRule(job_mode, node.op_kind, node.attrs, slot, e,
                                                              node.inputs, input_shapes));
  DecidingMoveBound bound;
  bound.kind = choice.kind;
  bound.openings = choice.opened_inputs.size();
  if (choice.kind != ElementKind::kPlan) {
    bound.examples = static_cast<std::uint64_t>(choice.batch_examples);
    return bound;
  }
  VT_ASSIGN_OR_RETURN(ElementPlan plan, PlanElement(node.op_kind, node.attrs, slot, e, input_shapes));
  for (std::size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputSlice& s = plan.inputs[i];
    if (s.count <= 0) continue;
    const bool own = s.output_slot >= 0;
    if (!own && i >= input_shapes.size()) return Status::Invalid("elem-bad-slice", "no such input");
    if (own && static_cast<std::size_t>(s.output_slot) >= node.output_shapes.size())
      return Status::Invalid("elem-bad-slice", "no such output");
    const Shape& tensor = own ? node.output_shapes[static_cast<std::size_t>(s.output_slot)] : input_shapes[i];
    const auto count = static_cast<std::uint64_t>(s.count);
    if (!own && IsBatchInput(node.inputs, static_cast<std::uint32_t>(i))) {
      const std::uint64_t examples = tensor.empty() ? 0 : static_cast<std::uint64_t>(tensor[0]);
      if (examples == 0) continue;
      const std::uint64_t per = static_cast<std::uint64_t>(kernels::NumElements(tensor)) / examples;
      if (per == 0) continue;
      bound.examples += std::min(examples, (count + per - 2) / per + 1);
      continue;
    }
    const std::uint64_t chunks = static_cast<std::uint64_t>(kChunkValues);
    bound.chunks += std::min<std::uint64_t>(ChunkCountOf(tensor), (count + chunks - 2) / chunks + 1);
  }
  return bound;
}

bool ElementCoversNode(std::uint8_t job_mode, const StepGraph& graph, std::uint64_t node_index) {
  if (node_index == graph.nodes.size())
    return crypto::MerkleShape::IsValidLeafCount(StateLeafCount(graph.num_state_tensors));
  if (node_index > graph.nodes.size()) return false;
  const NodeSpec& node = graph.nodes[node_index];
  auto shapes = NodeInputShapes(graph, node);
  if (!shapes.ok() || node.output_shapes.empty()) return false;
  for (std::uint32_t slot = 0; slot < node.output_shapes.size(); ++slot) {
    const std::int64_t numel = kernels::NumElements(node.output_shapes[slot]);
    if (numel <= 0) return false;
    for (std::int64_t e : {std::int64_t{0}, numel - 1}) {
      // A rule there, and no value between whose slices, wherever they
      // start, would open more than a deciding move may.
      auto deciding = BoundDecidingMove(job_mode, node, *shapes, slot, e);
      if (!deciding.ok() || deciding->chunks > static_cast<std::uint64_t>(kMaxOpenedChunks) ||
          deciding->examples > static_cast<std::uint64_t>(kMaxOpenedExamples))
        return false;
    }
  }
  return true;
}

Status CheckChunkRoot(const Hash256& output_hash, const Shape& shape, const Hash256& root) {
  if (kernels::TensorHashFromRoot(shape, root) != output_hash)
    return Status::Invalid("elem-bad-chunk-root", "not the root of the record's output hash");
  return Status::Ok();
}

std::uint64_t ChunkCountOf(const Shape& shape) {
  return static_cast<std::uint64_t>(kernels::ChunkCount(kernels::NumElements(shape)));
}

Result<std::vector<float>> VerifySlice(const Hash256& tensor_hash, const Shape& shape, const InputSlice& slice,
                                       std::span<const ChunkOpening> chunks) {
  const std::int64_t numel = kernels::NumElements(shape);
  if (slice.count < 0 || slice.first < 0 || slice.first + slice.count > numel)
    return Status::Invalid("elem-bad-slice", "slice outside the tensor");
  if (slice.count == 0) {  // an input the rule does not read
    if (!chunks.empty()) return Status::Invalid("elem-bad-slice", "an unread input takes no chunk");
    return std::vector<float>{};
  }
  const std::int64_t c0 = slice.first / kernels::kChunkValues;
  const std::int64_t c1 = (slice.first + slice.count - 1) / kernels::kChunkValues;
  if (static_cast<std::int64_t>(chunks.size()) != c1 - c0 + 1)
    return Status::Invalid("elem-bad-slice", "expected " + std::to_string(c1 - c0 + 1) + " chunks");
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(slice.count));
  for (std::int64_t c = c0; c <= c1; ++c) {
    const ChunkOpening& chunk = chunks[static_cast<std::size_t>(c - c0)];
    const std::int64_t lo = std::max(slice.first, c * kernels::kChunkValues);
    const std::int64_t hi = std::min(slice.first + slice.count, (c + 1) * kernels::kChunkValues);
    // VerifyValue checks the whole chunk against the tensor hash; the other
    // values of the slice in it are then read from the checked chunk.
    VT_TRY(VerifyValue(tensor_hash, shape, lo, ValueOpening{chunk}).status());
    for (std::int64_t i = lo; i < hi; ++i)
      values.push_back(chunk.values[static_cast<std::size_t>(i - c * kernels::kChunkValues)]);
  }
  return values;
}

std::int64_t SliceChunks(const InputSlice& slice) {
  if (slice.count <= 0) return 0;
  return (slice.first + slice.count - 1) / kernels::kChunkValues - slice.first / kernels::kChunkValues + 1;
}

std::vector<ChunkOpening> OpenSlice(const kernels::Tensor& t, const InputSlice& slice) {
  std::vector<ChunkOpening> chunks;
  if (slice.count <= 0) return chunks;
  const std::int64_t c0 = slice.first / kernels::kChunkValues;
  const std::int64_t c1 = (slice.first + slice.count - 1) / kernels::kChunkValues;
  for (std::int64_t c = c0; c <= c1; ++c) chunks.push_back(kernels::OpenChunk(t, c, 1));
  return chunks;
}

StepVerdict JudgeElementValue(float value, float y_a, float y_b) { return ValueVerdict(value, y_a, y_b); }

void Encode(Writer& w, const InputHashOpening& v) {
  w.PutU32(v.input);
  w.PutHash(v.tensor_hash);
  crypto::Encode(w, v.proof);
  w.PutOptional(v.producer, [](Writer& out, const protocol::NodeRecord& rec) { protocol::Encode(out, rec); });
}

Result<InputHashOpening> Decode(Reader& r, DecodeAs<InputHashOpening>) {
  InputHashOpening v;
  VT_ASSIGN_OR_RETURN(v.input, r.GetU32());
  VT_ASSIGN_OR_RETURN(v.tensor_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.producer, r.GetOptional<protocol::NodeRecord>(
                                      [](Reader& rr) { return protocol::Decode(rr, DecodeAs<protocol::NodeRecord>{}); }));
  return v;
}

void Encode(Writer& w, const PartialLeaf& v) {
  if (const float* f = std::get_if<float>(&v)) {
    w.PutEnum(LeafTag::kFp32);
    w.PutU32(detmath::FloatBits(*f));
    return;
  }
  if (const RoundedPartial* r = std::get_if<RoundedPartial>(&v)) {
    w.PutEnum(LeafTag::kFp64Sums);
    for (double d : {r->dot, r->a_sq, r->b_sq}) w.PutU64(std::bit_cast<std::uint64_t>(d));
    return;
  }
  if (const double* d = std::get_if<double>(&v)) {
    w.PutEnum(LeafTag::kFp64);
    w.PutU64(std::bit_cast<std::uint64_t>(*d));
    return;
  }
  w.PutEnum(LeafTag::kExact);
  w.PutFixed(std::get<ExactPartial>(v));
}

Result<PartialLeaf> Decode(Reader& r, DecodeAs<PartialLeaf>) {
  VT_ASSIGN_OR_RETURN(const LeafTag tag, r.GetEnum(LeafTag::kFp64));
  switch (tag) {
    case LeafTag::kFp32: {
      VT_ASSIGN_OR_RETURN(std::uint32_t bits, r.GetU32());
      return PartialLeaf{detmath::BitsFloat(bits)};
    }
    case LeafTag::kExact: {
      VT_ASSIGN_OR_RETURN(ByteSpan bytes, r.GetFixed(sizeof(ExactPartial)));
      ExactPartial p;
      std::copy(bytes.begin(), bytes.end(), p.begin());
      return PartialLeaf{p};
    }
    case LeafTag::kFp64Sums: {
      RoundedPartial p;
      for (double* d : {&p.dot, &p.a_sq, &p.b_sq}) {
        VT_ASSIGN_OR_RETURN(std::uint64_t bits, r.GetU64());
        *d = std::bit_cast<double>(bits);
      }
      return PartialLeaf{p};
    }
    case LeafTag::kFp64: {
      VT_ASSIGN_OR_RETURN(std::uint64_t bits, r.GetU64());
      return PartialLeaf{std::bit_cast<double>(bits)};
    }
  }
  return Status::Invalid("enc-unknown-enum", "partial-sum leaf tag");
}

void EncodeChunk(Writer& w, const ChunkOpening& v) {
  w.PutVector(v.values, [](Writer& out, float f) { out.PutU32(detmath::FloatBits(f)); });
  w.PutHash(v.root);
  crypto::Encode(w, v.proof);
}

Result<ChunkOpening> DecodeChunk(Reader& r) {
  ChunkOpening v;
  VT_ASSIGN_OR_RETURN(v.values, r.GetVector<float>(
                                    [](Reader& rr) -> Result<float> {
                                      VT_ASSIGN_OR_RETURN(std::uint32_t bits, rr.GetU32());
                                      return detmath::BitsFloat(bits);
                                    },
                                    static_cast<std::size_t>(kernels::kChunkValues)));
  VT_ASSIGN_OR_RETURN(v.root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.proof, GetProof(r));
  return v;
}

void Encode(Writer& w, const ValueOpening& v) { EncodeChunk(w, v.chunk); }
Result<ValueOpening> Decode(Reader& r, DecodeAs<ValueOpening>) {
  VT_ASSIGN_OR_RETURN(ChunkOpening c, DecodeChunk(r));
  return ValueOpening{std::move(c)};
}

}  // namespace vt::verify
