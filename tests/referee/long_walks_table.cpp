// Table 6: a party's answer over the longest reduction walks — GPT-2 small's
// clip norm and loss, 10^8 leaves, and attention_backward's dk at key 0,
// whose walk recomputes every later row's dS (3.4·10^7 leaves; in rounded
// mode with its β's leaves after them) — with its leaves kept as runs
// (verify::Partials): the pass that computes them once, what it then holds
// against holding the leaves (before: twice, the answer's and the tree's
// copy), and what one whole game's moves recompute: the walk's reveals down
// to a random disputed leaf d, the reveal of leaves d−1 and d, and the final
// claim's operand leaves, each with its proof.

#include "tests/referee/long_walks_table.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/encoding.h"
#include "kernels/mode.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor.h"
#include "verify/element_game.h"
#include "verify/partials.h"
#include "verify/reduce_rule.h"

namespace vt::referee_bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  kernels::OpKind kind;
  kernels::OpAttrs attrs;
  std::vector<kernels::Tensor> inputs;
  std::uint32_t slot = 0;
  std::int64_t value = 0;
};

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

Case ClipNorm(std::mt19937_64& rng, std::int64_t params) {
  std::normal_distribution<float> g(0.0f, 1e-3f);
  kernels::Tensor grads({params});
  for (float& v : grads.values()) v = g(rng);
  Case c{"clip norm, " + std::to_string(params) + " gradients",
         kernels::OpKind::kClipGradNorm,
         kernels::ClipGradNormAttrs(1.0f),
         {},
         1};
  c.inputs.push_back(std::move(grads));
  return c;
}

Case Loss(std::mt19937_64& rng, std::int64_t rows, std::int64_t classes) {
  std::normal_distribution<float> x(0.0f, 2.0f);
  kernels::Tensor logits({rows, classes}), labels({rows});
  for (float& v : logits.values()) v = x(rng);
  for (float& v : labels.values()) v = static_cast<float>(rng() % static_cast<std::uint64_t>(classes));
  Case c{"loss, " + std::to_string(rows) + " x " + std::to_string(classes) + " logits",
         kernels::OpKind::kCrossEntropy,
         {},
         {},
         0};
  c.inputs.push_back(std::move(logits));
  c.inputs.push_back(std::move(labels));
  return c;
}

// attention_backward's dk[u = 0, i = 0] of head 0 (B = 1): every row t ≥ 0
// recomputes its dP, r_t and dS_t0.
Case AttentionKey(std::mt19937_64& rng, std::int64_t t_count, std::int64_t heads, std::int64_t d) {
  std::normal_distribution<float> x(0.0f, 1.0f);
  const std::int64_t c = heads * d;
  kernels::Tensor dy({1, t_count, c}), qkv({1, t_count, 3 * c}), att({1, heads, t_count, t_count});
  for (float& v : dy.values()) v = x(rng) * 1e-3f;
  for (float& v : qkv.values()) v = x(rng);
  // Causal rows of probabilities: uniform over u ≤ t (the kernel accepts any att).
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t t = 0; t < t_count; ++t)
      for (std::int64_t u = 0; u <= t; ++u)
        att[(h * t_count + t) * t_count + u] = 1.0f / static_cast<float>(t + 1);
  Case k{"attention_backward dk[0, 0], T " + std::to_string(t_count) + ", D " + std::to_string(d),
         kernels::OpKind::kAttentionBackward,
         kernels::AttentionAttrs(heads),
         {},
         0,
         c};
  k.inputs.push_back(std::move(dy));
  k.inputs.push_back(std::move(qkv));
  k.inputs.push_back(std::move(att));
  return k;
}

template <class Leaf>
void Row(const Case& c, const verify::ReduceElement& el, const char* mode, std::mt19937_64& rng) {
  const auto start = Clock::now();
  auto p = verify::Partials<Leaf>::Compute(el, verify::TensorValues(c.inputs));
  if (!p.ok()) {
    std::printf("| %s | %s | %s |\n", c.name.c_str(), mode, p.status().ToString().c_str());
    return;
  }
  const double build = Seconds(start);
  const std::uint64_t n = p->size();
  const crypto::MerkleTree& tree = p->tree();
  const double held = static_cast<double>(p->HeldBytes()) / 1e6;
  // Before: the leaves held by the answer and, past 2^16, copied for the
  // tree, which kept the levels from 8 up (below 2^16: every level).
  const auto leaves = static_cast<double>(n);
  const double before =
      (n <= verify::kPartialsKeptWhole ? leaves * sizeof(Leaf) + 2 * leaves * 32
                                       : 2 * leaves * sizeof(Leaf) + 2 * leaves / 256 * 32) /
      1e6;

  // One game's moves against a liar who differs from leaf d on.
  const std::uint64_t d = 1 + rng() % (n - 1);
  const std::uint64_t by_the_pass = p->RecomputedSteps();
  const auto game = Clock::now();
  std::size_t reveals = 0;
  for (unsigned level = tree.shape().height(); level >= 1; --level) {
    const crypto::MerkleNodeId node{level, d >> level};
    if (tree.shape().Kind(node) != crypto::MerkleNodeKind::kPair) continue;
    (void)tree.Children(node);
    ++reveals;
  }
  for (std::uint64_t i : {d - 1, d}) {
    (void)(*p)[i];
    (void)tree.Prove(i);
  }
  const verify::ReduceStep st = verify::ReduceStepAt(el, d).value();
  (void)(*p)[st.left];
  (void)tree.Prove(st.left);
  if (st.reads_right) {
    (void)(*p)[st.right];
    (void)tree.Prove(st.right);
  }
  const double moves = Seconds(game);
  std::printf(
      "| %s | %s | %llu | %.1f s (%.0f ns a leaf; %.2f steps recomputed a leaf) | %.1f MB | %.0f MB | %zu + "
      "3 | %llu "
      "steps, %.1f ms |\n",
      c.name.c_str(), mode, static_cast<unsigned long long>(n), build, build / static_cast<double>(n) * 1e9,
      static_cast<double>(by_the_pass) / static_cast<double>(n), held, before, reveals,
      static_cast<unsigned long long>(p->RecomputedSteps() - by_the_pass), moves * 1e3);
}

}  // namespace

void LongWalksTable(bool quick, bool gpt2) {
  std::printf(
      "\n6. A party's answer over the longest reduction walks (verify::Partials: runs of 256 leaves, each "
      "kept as its\n"
      "   first leaf and subtree hash, recomputed by the referee's step when a move asks; one pass computes "
      "them)\n"
      "   'before': every leaf held twice (the answer's and the tree's copy) with the same kept tree "
      "levels.\n"
      "   A game: the walk's reveals down to a random leaf d, leaves d-1 and d, the final claim's "
      "operands.\n\n");
  std::printf(
      "| value | mode | leaves | the one pass | held | before | game reveals | recomputed by the game |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::mt19937_64 rng(6);
  std::vector<Case> cases;
  if (gpt2) {
    cases.push_back(AttentionKey(rng, 1024, 12, 64));
    cases.push_back(ClipNorm(rng, 124439808));
    cases.push_back(Loss(rng, 1024, 50257));
  } else if (quick) {
    cases.push_back(AttentionKey(rng, 32, 2, 16));
    cases.push_back(ClipNorm(rng, std::int64_t{1} << 17));
    cases.push_back(Loss(rng, 4, 2048));
  } else {
    cases.push_back(AttentionKey(rng, 256, 2, 64));
    cases.push_back(ClipNorm(rng, std::int64_t{1} << 23));
    cases.push_back(Loss(rng, 64, 50257));
  }
  for (const Case& c : cases) {
    std::vector<kernels::Shape> shapes;
    for (const kernels::Tensor& t : c.inputs) shapes.push_back(t.shape());
    for (const kernels::Mode mode :
         {kernels::Mode::kRepops, kernels::Mode::kRounded, kernels::Mode::kCertified}) {
      auto el = verify::ReduceRuleAt(static_cast<std::uint8_t>(mode), static_cast<std::uint16_t>(c.kind),
                                     EncodeToBytes(c.attrs), c.slot, c.value, shapes);
      if (!el.ok()) {
        std::printf("| %s | %s | %s |\n", c.name.c_str(), std::string(kernels::ModeName(mode)).c_str(),
                    el.status().ToString().c_str());
        continue;
      }
      if (el->exact) {
        Row<verify::ExactPartial>(c, *el, "certified", rng);
      } else if (el->fp64) {
        Row<double>(c, *el, "rounded", rng);
      } else {
        Row<float>(c, *el, "repops", rng);
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace vt::referee_bench
