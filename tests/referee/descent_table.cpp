// The element-level descent priced on a step graph (docs/referee.md,
// "Element-level descent"). A model, not a measurement: from each node's
// declared shapes and the per-operator element rules below it computes how
// many walk rounds the two new levels take, how large the largest
// transaction is and what the referee computes at the end. The byte and
// round formulas are those of the design; no dispute is played.

#include "tests/referee/descent_table.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <optional>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/graph/model.h"
#include "kernels/graph/step_graph.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor_codec.h"
#include "protocol/state.h"
#include "verify/batch_opening.h"
#include "verify/descent.h"
#include "verify/element_game.h"
#include "verify/element_rules.h"
#include "verify/reduce_rule.h"

namespace vt::referee_bench {
namespace {

namespace graph = kernels::graph;
using kernels::OpKind;
using kernels::Shape;

// The design's constants.
// fp32 values per leaf of a tensor's chunk tree: the implemented commitment (kernels/chunk_tree.h).
constexpr std::uint64_t kChunk = static_cast<std::uint64_t>(kernels::kChunkValues);
constexpr std::uint64_t kHashBytes = 32;
constexpr std::uint64_t kTxBudget = 64 * 1024;
constexpr std::uint64_t kTxEnvelope = 1024;  // game id, record, header proof, signature, …
constexpr std::uint64_t kWalkRevealBytes = 250;  // one reveal of two child hashes (table 2)

unsigned CeilLog2(std::uint64_t n) { return n <= 1 ? 0 : static_cast<unsigned>(std::bit_width(n - 1)); }
std::uint64_t Numel(const Shape& s) {
  std::uint64_t n = 1;
  for (std::int64_t d : s) n *= static_cast<std::uint64_t>(d);
  return n;
}
std::uint64_t Rows(const Shape& s) { return s.empty() ? 1 : Numel(s) / static_cast<std::uint64_t>(s.back()); }
std::uint64_t Last(const Shape& s) { return s.empty() ? 1 : static_cast<std::uint64_t>(s.back()); }

// Height of the chunk tree over n values, and the bytes that open one value
// (its chunk and the siblings) or a contiguous run of `len` values.
unsigned TreeHeight(std::uint64_t n) { return CeilLog2((n + kChunk - 1) / kChunk); }
// A chunk opening carries the chunk root too (kernels::ChunkOpening).
std::uint64_t OpenOne(std::uint64_t n) { return kChunk * 4 + 8 + kHashBytes * (TreeHeight(n) + 1); }
std::uint64_t OpenRun(std::uint64_t n, std::uint64_t len) {
  return ((len + kChunk - 1) / kChunk + 1) * kChunk * 4 + 16 + 2 * kHashBytes * TreeHeight(n);
}
// One partial result (fp64) of a fixed-order computation of `k` steps, in
// the tree over its k+1 values.
std::uint64_t OpenPartial(std::uint64_t k) { return 8 + 8 + kHashBytes * CeilLog2(k + 1); }

// How the referee judges one output element of an operator.
enum class Rule : std::uint8_t {
  kPointwise,  // one value of each input at the element's position (or a gathered one)
  kRow,        // a row of `length` positions of each input, `width` values per position
  kDot,        // a fixed-order sum of `length` products: bisect the partial sums to one step
  kReduction,  // a fixed-order sum (TreeSum) of `length` terms: bisect the tree to one addition
};
struct ElementRule {
  Rule rule = Rule::kPointwise;
  std::uint64_t length = 1;
  std::uint64_t width = 1;
  std::uint64_t inputs = 0;  // values opened per input position: 0 = one from every input
  const char* name() const {
    switch (rule) {
      case Rule::kPointwise:
        return "pointwise";
      case Rule::kRow:
        return "row";
      case Rule::kDot:
        return "dot";
      case Rule::kReduction:
        return "reduction";
    }
    return "?";
  }
};

// The element rule of output `slot` of a node (docs/kernels.md operator table).
ElementRule RuleOf(const graph::Node& node, const std::vector<Shape>& in, std::size_t slot) {
  const auto& ints = node.attrs.ints;
  switch (node.kind) {
    case OpKind::kMatMul:  // c = op(a)·op(b): K = a's inner dim
      return {Rule::kDot, static_cast<std::uint64_t>(ints.at(0) ? in[0][in[0].size() - 2] : in[0].back())};
    case OpKind::kMatMulBackward:  // da: K = dc's last dim; db: all rows of dc
      return {Rule::kDot, slot == 0 ? Last(in[0]) : Rows(in[0])};
    case OpKind::kLinear:  // y = x·Wᵀ + b: K in-features, the bias one more term
      return {Rule::kDot, Last(in[0]) + 1};
    case OpKind::kLinearBackward:  // dx: K = N; dW: K = R; db: TreeSum over R
      if (slot == 0) return {Rule::kDot, Last(in[0])};
      return {slot == 1 ? Rule::kDot : Rule::kReduction, Rows(in[0])};
    case OpKind::kConv2d:
      return {Rule::kDot, Numel(in[1]) / static_cast<std::uint64_t>(in[1][0]) + 1};
    case OpKind::kConv2dBackward:
      if (slot == 0) return {Rule::kDot, static_cast<std::uint64_t>(in[2][0] * in[2][2] * in[2][3])};
      return {slot == 1 ? Rule::kDot : Rule::kReduction, Numel(in[0]) / static_cast<std::uint64_t>(in[0][1])};
    case OpKind::kLayerNorm:  // y: x, γ, β and the agreed mean, rstd; mean, rstd: TreeSums over the row
      return slot == 0 ? ElementRule{Rule::kPointwise} : ElementRule{Rule::kReduction, Last(in[0])};
    case OpKind::kSoftmax:  // the row's max scan and its TreeSum of exponentials
      return {Rule::kReduction, 2 * Last(in[0])};
    case OpKind::kSoftmaxBackward:  // the row's TreeSum of dy·y
      return {Rule::kReduction, Last(in[0])};
    case OpKind::kCrossEntropyBackward:
      return {Rule::kRow, Last(in[1])};
    case OpKind::kLayerNormBackward:  // dx: two TreeSums over the row; dγ, dβ: TreeSum over the rows
      return slot == 0 ? ElementRule{Rule::kReduction, 2 * Last(in[1])}
                       : ElementRule{Rule::kReduction, Rows(in[1])};
    case OpKind::kCrossEntropy:  // the mean over rows of a row statistic over the vocabulary
      return {Rule::kReduction, Rows(in[0])};
    case OpKind::kEmbeddingBackward:  // dW[v] sums dy over the positions holding token v
      return {Rule::kReduction, Numel(in[1])};
    case OpKind::kAttention: {
      // qkv [B, T, 3C]: att (slot 1) is a softmax row over T scores, each a
      // dot of the head dim; y (slot 0) the att-weighted sum of T value rows.
      const std::uint64_t t = static_cast<std::uint64_t>(in[0][1]);
      const std::uint64_t dh = Last(in[0]) / 3 / static_cast<std::uint64_t>(ints.at(0));
      return slot == 1 ? ElementRule{Rule::kRow, t, dh} : ElementRule{Rule::kDot, t};
    }
    case OpKind::kAttentionBackward: {  // dq/dk/dv: sums over T of products with head-dim rows
      const std::uint64_t t = static_cast<std::uint64_t>(in[1][1]);
      return {Rule::kDot, t};
    }
    case OpKind::kSum:
    case OpKind::kMean:
      return {Rule::kReduction, ints.at(0) < 0 ? Numel(in[0]) : static_cast<std::uint64_t>(in[0][ints[0]])};
    case OpKind::kClipGradNorm: {  // norm (last slot): TreeSum of every square; g'_i pointwise
      if (slot + 1 < node.num_outputs()) return {Rule::kPointwise, 1, 1, 2};  // g_i and the agreed norm
      std::uint64_t total = 0;
      for (const Shape& s : in) total += Numel(s);
      return {Rule::kReduction, total};
    }
    case OpKind::kBatchNorm2dTrain:
    case OpKind::kBatchNorm2dBackward:
      return {Rule::kReduction, Numel(in[0]) / static_cast<std::uint64_t>(in[0][1])};
    default:  // element-wise, gathers, pools (a window), optimizers, reshapes
      return {Rule::kPointwise};
  }
}

struct Price {
  std::uint64_t rounds = 0;    // level 5 walk rounds
  std::uint64_t tx_bytes = 0;  // the final (arbitration) transaction
  std::uint64_t flops = 0;     // the referee's arithmetic
  std::uint64_t hashes = 0;    // the referee's SHA-256 compressions (proofs)
};

Price PriceOf(const ElementRule& r, const std::vector<Shape>& in, std::uint64_t out_numel) {
  Price p;
  const std::uint64_t opened = r.inputs != 0 ? r.inputs : in.size();
  std::uint64_t largest_input = 1;
  for (const Shape& s : in) largest_input = std::max(largest_input, Numel(s));
  const unsigned h_in = TreeHeight(largest_input);
  const unsigned h_out = TreeHeight(out_numel);
  switch (r.rule) {
    case Rule::kPointwise:
      p.tx_bytes = kTxEnvelope + OpenOne(out_numel) + opened * OpenOne(largest_input);
      p.flops = 64;  // AdamW, the costliest element-wise update
      p.hashes = (opened + 1) * (h_in + 2);
      break;
    case Rule::kRow: {
      const std::uint64_t row_bytes = opened * OpenRun(largest_input, r.length * r.width) + OpenOne(out_numel);
      if (kTxEnvelope + row_bytes <= kTxBudget) {
        p.tx_bytes = kTxEnvelope + row_bytes;
        p.flops = 16 * r.length * r.width;
        p.hashes = opened * ((r.length * r.width) / kChunk + 2 * h_in + 2);
        break;
      }
      // Too long to send: the row's statistics (max, Σexp, …) are fixed-order
      // reductions; bisect them, then judge the element from agreed statistics.
      p.rounds = CeilLog2(r.length + 1);
      p.tx_bytes = kTxEnvelope + 2 * OpenPartial(r.length) + 2 * OpenRun(largest_input, r.width) + OpenOne(out_numel);
      p.flops = 4 * r.width + 16;
      p.hashes = 2 * (CeilLog2(r.length + 1) + 1) + 2 * (r.width / kChunk + 2 * h_in + 2) + h_out + 2;
      break;
    }
    case Rule::kDot:
    case Rule::kReduction:
      // Partial results p_0 … p_K committed by each party for this element
      // only; the walk ends at agreed p_m, disputed p_{m+1}; the referee opens
      // both, the m-th input value(s), and does one step.
      p.rounds = CeilLog2(r.length + 1);
      p.tx_bytes = kTxEnvelope + 2 * OpenPartial(r.length) + 2 * OpenOne(largest_input) + OpenOne(out_numel);
      p.flops = 2;
      p.hashes = 2 * (CeilLog2(r.length + 1) + 1) + 3 * (h_in + 2);
      break;
  }
  return p;
}

// ---- table 4b: the implemented rules, sized with the real openings ---------------------

// Bytes of the chunk openings (kernels::ChunkOpening: values, root, proof)
// that carry values [first, first + count) of a tensor of n values, and the
// SHA-256 compressions that check them (a 1 KiB leaf is 17, a node 2).
struct Opened {
  std::uint64_t bytes = 0;
  std::uint64_t sha = 0;
};
Opened OpenSlice(std::uint64_t n, std::uint64_t first, std::uint64_t count) {
  Opened o;
  const std::uint64_t chunks = (n + kChunk - 1) / kChunk;
  const crypto::MerkleShape shape(chunks);
  for (std::uint64_t c = first / kChunk; c <= (first + count - 1) / kChunk; ++c) {
    const std::uint64_t values = std::min(kChunk, n - c * kChunk);
    const unsigned siblings = shape.ProofLength(c);
    o.bytes += values * 4 + kHashBytes + 16 + kHashBytes * siblings;
    o.sha += (values * 4 + 64) / 64 + 1 + 2 * siblings;
  }
  return o;
}
// One partial result of `leaf` bytes as a move carries it (a dot step's
// verify::PartialLeaf: a tag and fp32 bits, or an exact sum in certified mode; a
// reduction step's fp32 bits) and its proof in a tree of k+1 leaves; its
// hash is one SHA-256 compression over an fp32 leaf, two over an exact one.
Opened OpenPartialLeaf(std::uint64_t k, std::uint64_t leaf) {
  const unsigned siblings = crypto::MerkleShape(k + 1).ProofLength(k);
  return {leaf + 16 + kHashBytes * siblings, (leaf + 9 + 63) / 64 + 1 + 2ull * siblings};
}

struct Implemented {
  std::uint64_t tx_bytes = 0;  // the largest transaction of levels 4 and 5 for this output
  std::uint64_t flops = 0;     // the referee's arithmetic at the end
  std::uint64_t sha = 0;       // and its SHA-256 compressions
  std::uint64_t l5 = 0;        // partial-result walk rounds
};

// The output's worst sampled value under the implemented rule, or nullopt
// where verify/ has no rule for it yet.
// What opening one example of the batch costs a final move (verify/
// batch_opening.h): the header of h_t with its proof, the example's leaf and
// its proof in a dataset of up to 2^32 examples.
struct BatchPrice {
  std::uint64_t header = 0, example = 0;
};

BatchPrice BatchPriceOf(const graph::StepGraph& g) {
  const protocol::StateHeader header{~0ull, ~0ull, ~0ull, ~0ull, g.state_names};
  const auto proof = [](std::uint64_t siblings) { return 16 + 32 * siblings; };
  BatchPrice p;
  p.header = protocol::EncodeStateHeader(header).size() + proof(std::bit_width(g.state_names.size() + 1));
  for (const Shape& b : g.batch_shapes)
    p.example += kernels::EncodeTensor(kernels::Tensor(Shape(b.begin() + 1, b.end()))).size();
  p.example += proof(32);
  return p;
}

std::optional<Implemented> ImplementedPrice(const graph::Node& node, const std::vector<Shape>& in,
                                            std::size_t slot, std::uint64_t out_numel,
                                            const BatchPrice& batch, kernels::Mode mode) {
  std::optional<Implemented> worst;
  const std::uint16_t kind = static_cast<std::uint16_t>(node.kind);
  // Whether the job's mode plays a rule of this kind here (verify::CheckRuleInMode).
  const auto plays = [&](verify::ElementKind rule) {
    return verify::CheckRuleInMode(static_cast<std::uint8_t>(mode), rule, kind).ok();
  };
  const Opened chunk_reveal = OpenSlice(out_numel, 0, 1);  // level 4 ends with each party's chunk
  for (std::uint64_t e : {std::uint64_t{0}, out_numel / 2 + kChunk / 3, out_numel - 1}) {
    if (e >= out_numel) continue;
    Implemented p;
    const auto at = static_cast<std::int64_t>(e);
    if (auto dot =
            verify::DotElementAt(kind, EncodeToBytes(node.attrs), static_cast<std::uint32_t>(slot), at, in);
        dot.ok() && verify::DotRuleJudges(static_cast<std::uint8_t>(mode), kind, EncodeToBytes(node.attrs),
                                          static_cast<std::uint32_t>(slot), at, in)) {
      if (!plays(verify::ElementKind::kDot)) return std::nullopt;
      const std::uint64_t k = static_cast<std::uint64_t>(dot->k);
      const Opened leaf = OpenPartialLeaf(k, verify::PartialLeafBytes(static_cast<std::uint8_t>(mode)));
      const auto factor_numel = [&](std::uint32_t i) {
        return i >= verify::kOwnOutput ? Numel(node.output_shapes.at(i - verify::kOwnOutput)) : Numel(in.at(i));
      };
      // A factor of the batch (the first layer's x) travels in its example.
      const auto factor = [&](std::uint32_t i, std::int64_t index) {
        if (i < verify::kOwnOutput && node.inputs.at(i).source == graph::NodeInputSource::kBatch)
          return Opened{batch.header + batch.example, 0};
        return OpenSlice(factor_numel(i), static_cast<std::uint64_t>(index), 1);
      };
      const Opened a = factor(dot->a_input, dot->AIndex(dot->k - 1));
      // A padding tap (−1) opens nothing; price the last real one's opening anyway.
      const Opened b = factor(dot->b_input, std::max<std::int64_t>(dot->BIndex(dot->k - 1), 0));
      // The final step: agreed p_m, both p_{m+1}, the two factors; posting
      // a partials root: the root and two leaves.
      p.tx_bytes = kTxEnvelope + std::max(3 * leaf.bytes + a.bytes + b.bytes, kHashBytes + 2 * leaf.bytes);
      p.sha = 3 * leaf.sha + a.sha + b.sha;
      p.flops = 2;
      if (mode == kernels::Mode::kRounded) {
        // Three fp64 sums a step; the epilogue opens the bias and the node's
        // log at the value: its root and at most two entries, each proven in
        // a tree of at most one entry an output value.
        p.flops = 6;
        std::uint64_t values = 0;
        for (const Shape& o : node.output_shapes) values += Numel(o);
        const std::uint64_t entry = 9 + 16 + kHashBytes * CeilLog2(values);
        const Opened bias = dot->bias_input ? OpenSlice(Numel(in.at(*dot->bias_input)), 0, 1) : Opened{};
        p.tx_bytes = std::max(p.tx_bytes, kTxEnvelope + kHashBytes + 2 * entry + bias.bytes);
      }
      p.l5 = crypto::MerkleShape(k + 1).height();
    } else if (auto red =
                   verify::ReduceRuleAt(static_cast<std::uint8_t>(mode), kind, EncodeToBytes(node.attrs),
                                        static_cast<std::uint32_t>(slot), at, in);
               red.ok() || red.status().reason() == "elem-mode-no-rule") {
      // The mode's reduction rule (certified: the exact sums, where it covers
      // the value; rounded: fp64 sums, a clip's gradients over its norm's).
      if (!red.ok()) return std::nullopt;
      // The final addition: its operand leaves (two, for a combination) or
      // the term's values, and both next leaves; posting: root and two leaves.
      const auto job_mode = static_cast<std::uint8_t>(mode);
      const std::uint64_t steps = red->Steps();
      const Opened leaf = OpenPartialLeaf(steps, verify::PartialLeafBytes(job_mode));
      // The most any one step reads: a scan step's values, a term's, or a
      // final step's (cross-entropy's: a logit, dloss and the label from its example).
      Opened term;
      for (std::uint64_t at_leaf :
           {std::uint64_t{1}, steps, std::uint64_t{1} + static_cast<std::uint64_t>(red->scan_count),
            red->BlockSteps()}) {
        auto step_reads = verify::StepReadsAt(*red, at_leaf - 1);
        if (!step_reads.ok()) continue;
        Opened reads;
        for (const verify::StepRead& r : *step_reads) {
          const auto own = verify::OwnOutputSlot(r.input);  // batch-norm's mean
          if (!own && node.inputs.at(r.input).source == graph::NodeInputSource::kBatch) {
            reads.bytes += batch.header + batch.example;
            continue;
          }
          const std::uint64_t of = own ? Numel(node.output_shapes.at(*own)) : Numel(in[r.input]);
          const Opened o = OpenSlice(of, static_cast<std::uint64_t>(r.index), 1);
          reads.bytes += o.bytes;
          reads.sha += o.sha;
        }
        if (reads.bytes > term.bytes) term = reads;
      }
      // At most two operand leaves and the reads (a shifted term or the final step has both).
      const Opened operands{2 * leaf.bytes + term.bytes, 2 * leaf.sha + term.sha};
      p.tx_bytes = kTxEnvelope + std::max(2 * leaf.bytes + operands.bytes, kHashBytes + 2 * leaf.bytes);
      p.sha = 2 * leaf.sha + operands.sha;
      p.flops = 2;
      for (const verify::ReduceSegment& seg : red->segments) {
        if (seg.term == verify::ReduceTerm::kNormProduct || seg.term == verify::ReduceTerm::kSquaredDeviation)
          p.flops = std::max<std::uint64_t>(p.flops, 4);
        if (seg.term == verify::ReduceTerm::kScaledNormProduct) p.flops = std::max<std::uint64_t>(p.flops, 5);
      }
      p.l5 = crypto::MerkleShape(steps + 1).height();
    } else if (auto plan = verify::PlanElement(kind, EncodeToBytes(node.attrs),
                                               static_cast<std::uint32_t>(slot), at, in);
               plan.ok() && plays(verify::ElementKind::kPlan)) {
      Opened all;
      std::vector<Shape> slice_shapes;
      bool own_output = false;
      for (std::size_t i = 0; i < plan->inputs.size(); ++i) {
        const verify::InputSlice& is = plan->inputs[i];
        own_output = own_output || is.output_slot >= 0;
        slice_shapes.push_back(is.shape);
        if (is.count == 0) continue;
        if (is.output_slot < 0 && node.inputs.at(i).source == graph::NodeInputSource::kBatch) {
          all.bytes +=
              batch.header + verify::BatchPositionsOf(in[i], is.first, is.count).size() * batch.example;
          continue;
        }
        const std::uint64_t of = is.output_slot >= 0
                                     ? Numel(node.output_shapes.at(static_cast<std::size_t>(is.output_slot)))
                                     : Numel(in[i]);
        const Opened o =
            OpenSlice(of, static_cast<std::uint64_t>(is.first), static_cast<std::uint64_t>(is.count));
        all.bytes += o.bytes;
        all.sha += o.sha;
      }
      p.tx_bytes = kTxEnvelope + all.bytes;
      p.sha = all.sha;
      // An own-output rule (clip's g') is the kernel's expression on the values: a few flops.
      p.flops = own_output ? 4 : kernels::OpFlops(node.kind, node.attrs, slice_shapes);
    } else {
      return std::nullopt;
    }
    p.tx_bytes = std::max(p.tx_bytes, kTxEnvelope + chunk_reveal.bytes);
    if (!worst || p.tx_bytes > worst->tx_bytes) worst = p;
  }
  return worst;
}

}  // namespace

void DescentTable(const std::vector<std::pair<std::string, std::int64_t>>& presets, std::uint64_t level12_moves) {
  std::printf("\n4. Element-level descent (design, docs/referee.md): output trees of %llu-value chunks, transactions "
              "<= %llu KiB\n",
              static_cast<unsigned long long>(kChunk), static_cast<unsigned long long>(kTxBudget / 1024));
  std::printf("%-11s %4s %5s | %-24s %9s %5s | %-34s %5s | %-24s %8s %9s %8s | %6s %6s\n", "model", "B", "nodes",
              "largest output", "values", "lvl4", "deepest element (rule, K)", "lvl5", "largest tx at", "bytes",
              "ref flops", "ref SHA", "rounds", "moves");
  for (const auto& [preset, batch] : presets) {
    auto model = graph::ModelPreset(preset);
    if (!model.ok()) {
      std::fprintf(stderr, "%s: %s\n", preset.c_str(), model.status().ToString().c_str());
      continue;
    }
    graph::OptimizerSpec opt;
    opt.clip_norm = 1.0f;
    auto shapes = graph::BatchShapes(*model, batch);
    if (!shapes.ok()) continue;
    auto g = graph::BuildStepGraph(*model, opt, 0, *shapes);
    if (!g.ok()) continue;
    std::uint64_t max_out = 0, max_l4 = 0, max_l5 = 0, max_tx = 0, max_flops = 0, max_hashes = 0, max_rounds = 0;
    std::string max_out_name, deep_name, max_tx_name;
    for (std::size_t i = 0; i < g->nodes.size(); ++i) {
      const graph::Node& node = g->nodes[i];
      const std::vector<Shape> in = graph::NodeInputShapes(*g, i);
      for (std::size_t s = 0; s < node.num_outputs(); ++s) {
        const std::uint64_t n = Numel(node.output_shapes[s]);
        const ElementRule rule = RuleOf(node, in, s);
        const Price price = PriceOf(rule, in, n);
        const std::uint64_t l4 = TreeHeight(n) + 1;  // the chunk walk, then one reveal of the chunk
        if (n > max_out) {
          max_out = n;
          max_out_name = node.name;
        }
        max_l4 = std::max<std::uint64_t>(max_l4, l4);
        if (price.tx_bytes > max_tx) {
          max_tx = price.tx_bytes;
          max_tx_name = node.name;
        }
        max_flops = std::max(max_flops, price.flops);
        max_hashes = std::max(max_hashes, price.hashes);
        if (l4 + price.rounds > max_rounds) {
          max_rounds = l4 + price.rounds;
          max_l5 = price.rounds;
          deep_name = node.name + " (" + rule.name() + ", " + std::to_string(rule.length) + ")";
        }
      }
    }
    // Moves for N = 2^30: levels 1-2 (table 2), level 3 (two roots, a reveal
    // per round each), the record reveals, then the new levels along the
    // deepest element: the chunk walk and the chunk reveal (two per round),
    // two partial-result roots and their walk, and one arbitration.
    const std::uint64_t l3_rounds = CeilLog2(g->nodes.size() + 1);
    const std::uint64_t moves = level12_moves + 2 + 2 * l3_rounds + 2 + 2 * max_rounds + 2 + 1;
    const std::uint64_t rounds = 32 + l3_rounds + max_rounds;
    std::printf("%-11s %4lld %5zu | %-24s %9llu %5llu | %-34s %5llu | %-24s %8llu %9llu %8llu | %6llu %6llu\n",
                preset.c_str(), static_cast<long long>(batch), g->nodes.size(), max_out_name.substr(0, 24).c_str(),
                static_cast<unsigned long long>(max_out), static_cast<unsigned long long>(max_l4),
                deep_name.substr(0, 34).c_str(), static_cast<unsigned long long>(max_l5),
                max_tx_name.substr(0, 24).c_str(), static_cast<unsigned long long>(max_tx),
                static_cast<unsigned long long>(max_flops),
                static_cast<unsigned long long>(max_hashes), static_cast<unsigned long long>(rounds),
                static_cast<unsigned long long>(moves));
  }
  std::printf("lvl4: rounds of the walk over the largest output's chunk tree (+1 chunk reveal); deepest element:\n"
              "the output value whose descent (lvl4 + lvl5) is longest, lvl5 its bisection over partial results;\n"
              "largest tx: of either new level over every node and output (incl. %llu B envelope; walk reveals are\n"
              "~%llu B); ref flops / SHA: the referee's arithmetic and SHA-256 compressions at the worst element;\n"
              "rounds / moves: the whole game at N = 2^30 along the deepest element (levels 1-2: 32 rounds, %llu txs;\n"
              "table 2). A price model of the design over the real step graph; no game is played.\n",
              static_cast<unsigned long long>(kTxEnvelope), static_cast<unsigned long long>(kWalkRevealBytes),
              static_cast<unsigned long long>(level12_moves));
}

Result<RuleCoverage> ImplementedCoverage(const std::string& preset, std::int64_t batch, kernels::Mode mode) {
  VT_ASSIGN_OR_RETURN(graph::ModelSpec model, graph::ModelPreset(preset));
  graph::OptimizerSpec opt;
  opt.clip_norm = 1.0f;
  VT_ASSIGN_OR_RETURN(auto shapes, graph::BatchShapes(model, batch));
  VT_ASSIGN_OR_RETURN(graph::StepGraph g, graph::BuildStepGraph(model, opt, 0, shapes));
  RuleCoverage c;
  const BatchPrice batch_price = BatchPriceOf(g);
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const graph::Node& node = g.nodes[i];
    const std::vector<Shape> in = graph::NodeInputShapes(g, i);
    for (std::size_t s = 0; s < node.num_outputs(); ++s) {
      ++c.outputs;
      const std::uint64_t n = Numel(node.output_shapes[s]);
      const auto p = n == 0 ? std::nullopt : ImplementedPrice(node, in, s, n, batch_price, mode);
      if (!p) {
        // clip_grad_norm has one output per gradient: counted together.
        const std::string slot_key = node.num_outputs() > 8 ? "/*" : "/" + std::to_string(s);
        ++c.unruled[std::string(kernels::OpKindName(node.kind)) + slot_key];
        continue;
      }
      ++c.ruled;
      if (p->tx_bytes > c.max_tx) {
        c.max_tx = p->tx_bytes;
        c.max_tx_name = node.name;
      }
      c.max_flops = std::max(c.max_flops, p->flops);
      c.max_sha = std::max(c.max_sha, p->sha);
      c.max_l4 = std::max<std::uint64_t>(c.max_l4, TreeHeight(n));
      c.max_l5 = std::max(c.max_l5, p->l5);
    }
  }
  return c;
}

void ImplementedRulesTable(const std::vector<std::pair<std::string, std::int64_t>>& presets) {
  std::printf("\n4b. Element-level rules implemented in verify/ (descent.h: dot of linear, linear_backward dx/dW,\n"
              "matmul, conv2d y and dW; element_rules.h: pointwise, row; reduce_rule.h: TreeSum reductions), sized\n"
              "with the real chunk openings (%llu-value chunks, exact proof lengths, worst of three sampled values\n"
              "per output), the step graph's shapes only (no step is run)\n",
              static_cast<unsigned long long>(kChunk));
  std::printf("%-11s %4s %-9s | %14s | %-26s %8s | %9s %8s | %5s %5s\n", "model", "B", "mode",
              "outputs ruled", "largest tx at", "bytes", "ref flops", "ref SHA", "lvl4", "lvl5");
  std::vector<std::pair<std::string, RuleCoverage>> rows;
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified})
    for (const auto& [preset, batch] : presets) {
      auto c = ImplementedCoverage(preset, batch, mode);
      if (!c.ok()) continue;
      const std::string name(kernels::ModeName(mode));
      std::printf("%-11s %4lld %-9s | %6llu / %5llu | %-26s %8llu | %9llu %8llu | %5llu %5llu\n",
                  preset.c_str(), static_cast<long long>(batch), name.c_str(),
                  static_cast<unsigned long long>(c->ruled), static_cast<unsigned long long>(c->outputs),
                  c->max_tx_name.substr(0, 26).c_str(), static_cast<unsigned long long>(c->max_tx),
                  static_cast<unsigned long long>(c->max_flops), static_cast<unsigned long long>(c->max_sha),
                  static_cast<unsigned long long>(c->max_l4), static_cast<unsigned long long>(c->max_l5));
      rows.emplace_back(preset + " " + name, std::move(c).value());
    }
  std::printf("outputs ruled: node outputs whose values verify/ can judge today, of all; largest tx: the largest\n"
              "transaction of levels 4-5 among them (incl. a %llu B envelope); lvl4 / lvl5: walk rounds over the\n"
              "largest ruled output's chunk tree and the longest ruled partial-sum tree. The others still end in\n"
              "node-level arbitration:\n",
              static_cast<unsigned long long>(kTxEnvelope));
  for (const auto& [preset, c] : rows) {
    std::printf("  %-21s", preset.c_str());
    for (const auto& [what, count] : c.unruled) std::printf(" %s x%llu", what.c_str(), static_cast<unsigned long long>(count));
    std::printf("\n");
  }
}

}  // namespace vt::referee_bench
