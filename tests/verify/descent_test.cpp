// The element-level descent (verify/descent.h) played between an honest
// party and a liar on real linear layers, in repops mode (fp32 partial sums)
// and in certified mode (exact partial sums): level 4 walks the output's
// chunk trees (crypto::MerkleWalk), both reveal the chunk where it ends, the
// first differing value is the disputed one; level 5b walks the two parties'
// partial-sum trees of that value to one step, judged from one value of x
// and one of W opened against their tensor hashes. Properties: the walk ends
// at the leftmost differing value, every proof has its tree's length, the
// honest party always has its move, and it always wins; no message of the
// game is larger than 64 KiB.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/arith_hd.h"
#include "kernels/certified.h"
#include "kernels/chunk_tree.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/tensor.h"
#include "protocol/types.h"
#include "tests/support/partial_leaves.h"
#include "tests/support/random_values.h"
#include "tests/support/test_seed.h"
#include "verify/descent.h"
#include "verify/element.h"

namespace vt::verify {
namespace {

using crypto::MerkleWalk;
using WalkParty = crypto::MerkleWalk::Party;

float RandomValue(std::mt19937_64& rng) { return test::RandomFp32(rng, -12, 6); }

struct Linear {
  std::int64_t rows = 0, k = 0, n = 0;
  kernels::Tensor x, w, b, y;
  kernels::Tensor dy, dx, dw;  // linear_backward on dy (random), x, w
};

Linear RandomLinear(std::mt19937_64& rng, kernels::Mode mode = kernels::Mode::kRepops) {
  Linear l;
  l.rows = 1 + static_cast<std::int64_t>(rng() % 40);
  l.k = 1 + static_cast<std::int64_t>(rng() % 200);
  l.n = 1 + static_cast<std::int64_t>(rng() % 50);
  l.x = kernels::Tensor({l.rows, l.k});
  l.w = kernels::Tensor({l.n, l.k});
  l.b = kernels::Tensor({l.n});
  for (float& v : l.x.values()) v = RandomValue(rng);
  for (float& v : l.w.values()) v = RandomValue(rng);
  for (float& v : l.b.values()) v = RandomValue(rng);
  kernels::ExecConfig config;
  config.mode = mode;
  const kernels::OpContext ctx(config);
  std::vector<kernels::Tensor> out;
  const std::vector<const kernels::Tensor*> in{&l.x, &l.w, &l.b};
  EXPECT_TRUE(kernels::RunOp(ctx, kernels::OpKind::kLinear, {}, in, out).ok());
  l.y = std::move(out.at(0));
  l.dy = kernels::Tensor({l.rows, l.n});
  for (float& v : l.dy.values()) v = RandomValue(rng);
  std::vector<kernels::Tensor> grads;
  const std::vector<const kernels::Tensor*> bin{&l.dy, &l.x, &l.w};
  EXPECT_TRUE(kernels::RunOp(ctx, kernels::OpKind::kLinearBackward, {}, bin, grads).ok());
  l.dx = std::move(grads.at(0));
  l.dw = std::move(grads.at(1));
  return l;
}

// One dot-rule output of the layer: linear's y, or linear_backward's dx or dw.
struct DotCase {
  std::uint16_t kind = 0;
  std::uint32_t slot = 0;
  std::vector<const kernels::Tensor*> inputs;
  const kernels::Tensor* out = nullptr;
};

DotCase CaseOf(const Linear& l, int which) {
  const auto k = [](kernels::OpKind o) { return static_cast<std::uint16_t>(o); };
  if (which == 0) return {k(kernels::OpKind::kLinear), 0, {&l.x, &l.w, &l.b}, &l.y};
  if (which == 1) return {k(kernels::OpKind::kLinearBackward), 0, {&l.dy, &l.x, &l.w}, &l.dx};
  return {k(kernels::OpKind::kLinearBackward), 1, {&l.dy, &l.x, &l.w}, &l.dw};
}

DotElement ElementOf(const DotCase& c, std::int64_t e) {
  std::vector<kernels::Shape> shapes;
  for (const kernels::Tensor* t : c.inputs) shapes.push_back(t->shape());
  auto d = DotElementAt(c.kind, c.slot, e, shapes);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return *d;
}

std::vector<float> Factors(const kernels::Tensor& t, std::int64_t first, std::int64_t stride, std::int64_t k) {
  std::vector<float> v;
  for (std::int64_t m = 0; m < k; ++m) v.push_back(t[first + m * stride]);
  return v;
}

// The honest partial sums of value e (fp32 in repops mode, exact in
// certified mode), and its epilogue's bias.
template <class Leaf = float>
std::vector<Leaf> HonestPartials(const DotCase& c, const DotElement& d) {
  const std::vector<float> a = Factors(*c.inputs[d.a_input], d.a_first, d.a_stride, d.k);
  const std::vector<float> b = Factors(*c.inputs[d.b_input], d.b_first, d.b_stride, d.k);
  if constexpr (std::is_same_v<Leaf, float>) {
    return RepopsDotPartials(a, b);
  } else {
    return CertifiedDotPartials(a, b);
  }
}
std::optional<float> BiasOf(const DotCase& c, const DotElement& d) {
  if (!d.bias_input) return std::nullopt;
  return (*c.inputs[*d.bias_input])[d.bias_index];
}

// What a party holds for the disputed node: its output and, on demand, the
// partial sums of one value.
template <class Leaf = float>
struct Side {
  kernels::Tensor y;
  std::vector<Leaf> partials;  // of the disputed value, once known
};

template <class Leaf>
using Leaves = test::PartialLeaves<Leaf>;

std::size_t SizeOf(const crypto::MerkleProof& p) { return EncodeToBytes(p).size(); }
std::size_t SizeOf(const kernels::ChunkOpening& o) { return o.values.size() * 4 + 32 + SizeOf(o.proof); }

// Plays both walks; returns whether the honest side (A) won. Checks every
// property on the way.
template <class Leaf>
void PlayAndCheck(const DotCase& c, const Side<Leaf>& honest, Side<Leaf> liar, std::size_t& max_message,
                  bool& honest_won, std::size_t& moves) {
  using L = Leaves<Leaf>;
  const kernels::Tensor& out = *c.out;
  const Hash256 ha = honest.y.Hash(), hb = liar.y.Hash();
  ASSERT_NE(ha, hb);
  // Level 4: each party reveals its chunk root (checked against its output
  // hash), then the walk.
  const auto ta = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(honest.y.values(), 1));
  const auto tb = crypto::MerkleTree::FromLeafHashes(kernels::ChunkLeafHashes(liar.y.values(), 1));
  ASSERT_EQ(kernels::TensorHashFromRoot(out.shape(), ta.root()), ha);
  ASSERT_EQ(kernels::TensorHashFromRoot(out.shape(), tb.root()), hb);
  auto walk = MerkleWalk::Start(ta.leaf_count(), ta.root(), tb.root());
  ASSERT_TRUE(walk.ok()) << walk.status().ToString();
  while (walk->phase() != MerkleWalk::Phase::kDone) {
    ASSERT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kA, ta).ok()) << "the honest party always has a move";
    ASSERT_TRUE(crypto::RespondHonestly(*walk, WalkParty::kB, tb).ok());
  }
  const std::int64_t chunk = static_cast<std::int64_t>(walk->disputed_leaf());
  EXPECT_LE(walk->moves(), ta.shape().height());
  moves += walk->moves();
  const kernels::ChunkOpening ca = kernels::OpenChunk(honest.y, chunk, 1);
  const kernels::ChunkOpening cb = kernels::OpenChunk(liar.y, chunk, 1);
  EXPECT_EQ(ca.proof.siblings.size(), ta.shape().ProofLength(static_cast<std::uint64_t>(chunk)));
  max_message = std::max({max_message, SizeOf(ca), SizeOf(cb)});
  auto e = DisputedValue(out.shape(), chunk, ha, ca, hb, cb);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  // The leftmost differing value.
  std::int64_t first = 0;
  while (SameBits(honest.y[first], liar.y[first])) ++first;
  ASSERT_EQ(*e, first);
  // A tampered reveal is refused.
  kernels::ChunkOpening forged = cb;
  forged.values[0] = std::nextafter(forged.values[0], INFINITY);
  EXPECT_EQ(DisputedValue(out.shape(), chunk, ha, ca, hb, forged).status().reason(), "elem-bad-chunk");

  // Level 5b over the value's partial sums.
  const DotElement el = ElementOf(c, *e);
  const std::optional<float> bias = BiasOf(c, el);
  const std::vector<Leaf> hp = HonestPartials<Leaf>(c, el);
  ASSERT_TRUE(SameBits(L::Value(hp.back(), bias), honest.y[*e])) << "the rule is the kernel's";
  const std::vector<Leaf>& lp = liar.partials;
  const auto pa = PartialsTree(hp), pb = PartialsTree(lp);
  const std::uint64_t kk = static_cast<std::uint64_t>(el.k);
  // Posting: ends checked. The liar's p_K must be the one its value needs
  // (p_K + bias = its y[e]); a liar that cannot make the ends meet has no
  // valid post and loses on its clock.
  ASSERT_TRUE(CheckPartialsEnds(pa.root(), kk, hp.back(), pa.Prove(0), pa.Prove(kk)).ok());
  const bool liar_ends_ok = CheckPartialsEnds(pb.root(), kk, lp.back(), pb.Prove(0), pb.Prove(kk)).ok() &&
                            L::Same(lp[0], PartialLeafKind<Leaf>::Start());
  if (!liar_ends_ok) {
    honest_won = true;
    return;
  }
  StepVerdict v;
  if (pa.root() == pb.root()) {
    // Same sums: the disputed step is the epilogue.
    v = JudgeDotEpilogue(hp.back(), bias, honest.y[*e], liar.y[*e]);
  } else {
    auto w5 = MerkleWalk::Start(pa.leaf_count(), pa.root(), pb.root());
    ASSERT_TRUE(w5.ok());
    while (w5->phase() != MerkleWalk::Phase::kDone) {
      ASSERT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kA, pa).ok()) << "the honest party always has a move";
      ASSERT_TRUE(crypto::RespondHonestly(*w5, WalkParty::kB, pb).ok());
    }
    moves += w5->moves();
    EXPECT_LE(w5->moves(), pa.shape().height());
    const std::uint64_t m1 = w5->disputed_leaf();
    ASSERT_GE(m1, 1u) << "p_0 is the rule's start for both";
    std::uint64_t want = 0;
    while (L::Same(hp[want], lp[want])) ++want;
    ASSERT_EQ(m1, want) << "the leftmost differing partial sum";
    const std::uint64_t m = m1 - 1;
    // The final transaction: agreed p_m (proof against either root), both
    // p_{m+1} (each against its own root), the m-th factors opened.
    ASSERT_TRUE(crypto::VerifyMerkleProof(pb.root(), PartialLeafHash(hp[m]), pb.Prove(m)).ok()) << "agreed";
    const kernels::Tensor& ta_in = *c.inputs[el.a_input];
    const kernels::Tensor& tb_in = *c.inputs[el.b_input];
    const std::int64_t ia = el.AIndex(static_cast<std::int64_t>(m)), ib = el.BIndex(static_cast<std::int64_t>(m));
    const ValueOpening xo = OpenValue(ta_in, ia);
    const ValueOpening wo = OpenValue(tb_in, ib);
    auto xm = VerifyValue(ta_in.Hash(), ta_in.shape(), ia, xo);
    auto wm = VerifyValue(tb_in.Hash(), tb_in.shape(), ib, wo);
    ASSERT_TRUE(xm.ok() && wm.ok());
    max_message =
        std::max(max_message, SizeOf(xo.chunk) + SizeOf(wo.chunk) +
                                  3 * (PartialLeafKind<Leaf>::Encode(hp[m]).size() + SizeOf(pa.Prove(m))));
    v = JudgeDotStep(hp[m], *xm, *wm, hp[m1], lp[m1]);
    // The same verdict as the referee's claim (every proof and opening
    // checked), and a claim with a changed next leaf is refused.
    DotStepClaimOf<Leaf> claim{m, hp[m], pa.Prove(m), {hp[m1], lp[m1]}, {pa.Prove(m1), pb.Prove(m1)}, xo, wo};
    const DotFactors factors{ta_in.Hash(),  tb_in.Hash(), ta_in.shape(),
                             tb_in.shape(), std::nullopt, std::nullopt};
    auto judged = JudgeDotStepClaim(el, factors, {pa.root(), pb.root()}, claim);
    ASSERT_TRUE(judged.ok()) << judged.status().ToString();
    EXPECT_EQ(judged->a_right, v.a_right);
    EXPECT_EQ(judged->b_right, v.b_right);
    claim.next[0] = lp[m1];
    EXPECT_EQ(JudgeDotStepClaim(el, factors, {pa.root(), pb.root()}, claim).status().reason(),
              "elem-bad-step");
  }
  EXPECT_FALSE(v.a_right && v.b_right) << "two different values cannot both be the step";
  honest_won = v.a_right && !v.b_right;
}

template <class Leaf>
void PlayPlantedCheats() {
  using L = Leaves<Leaf>;
  std::mt19937_64 rng(test::TestSeed());
  std::size_t games = 0, max_message = 0, epilogue = 0, steps = 0;
  std::array<std::size_t, 3> per_case{};
  for (int trial = 0; trial < 150; ++trial) {
    const Linear l = RandomLinear(rng, L::kMode);
    const int which = trial % 3;  // linear y, linear_backward dx, linear_backward dw
    const DotCase c = CaseOf(l, which);
    Side<Leaf> honest{*c.out, {}};
    Side<Leaf> liar{*c.out, {}};
    // The cheat: one value of the output, anywhere.
    const std::int64_t e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(c.out->numel()));
    const DotElement el = ElementOf(c, e);
    const std::vector<Leaf> hp = HonestPartials<Leaf>(c, el);
    const std::vector<float> fa = Factors(*c.inputs[el.a_input], el.a_first, el.a_stride, el.k);
    const std::vector<float> fb = Factors(*c.inputs[el.b_input], el.b_first, el.b_stride, el.k);
    std::vector<Leaf> lp = hp;
    const std::optional<float> bias = BiasOf(c, el);
    switch (rng() % 3) {
      case 0:  // sums honest, value off by an ulp (an epilogue lie)
        liar.y[e] = std::nextafter((*c.out)[e], INFINITY);
        break;
      case 1: {  // sums leave the honest ones at a random step, then follow the steps
        const std::size_t from = 1 + rng() % static_cast<std::size_t>(el.k);
        lp[from] = L::Nudge(lp[from], RandomValue(rng));
        for (std::size_t m = from + 1; m < lp.size(); ++m) lp[m] = L::Step(lp[m - 1], fa[m - 1], fb[m - 1]);
        liar.y[e] = L::Value(lp.back(), bias);
        break;
      }
      default: {  // sums made up from a random step on
        const std::size_t from = 1 + rng() % static_cast<std::size_t>(el.k);
        for (std::size_t m = from; m < lp.size(); ++m) lp[m] = L::MadeUp(RandomValue(rng));
        liar.y[e] = L::Value(lp.back(), bias);
        break;
      }
    }
    if (SameBits(liar.y[e], (*c.out)[e])) continue;  // the lie did not reach the output
    liar.partials = lp;
    bool won = false;
    std::size_t moves = 0;
    PlayAndCheck(c, honest, liar, max_message, won, moves);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_TRUE(won) << "trial " << trial << ": cheat at " << e;
    (PartialsTree(hp).root() == PartialsTree(lp).root() ? epilogue : steps) += 1;
    ++per_case[static_cast<std::size_t>(which)];
    ++games;
  }
  EXPECT_GT(games, 100u);
  for (std::size_t n : per_case) EXPECT_GT(n, 25u) << "each of y, dx, dw";
  EXPECT_GT(epilogue, 10u);
  EXPECT_GT(steps, 40u);
  EXPECT_LE(max_message, 64u * 1024) << "every message of the game fits 64 KiB";
  std::printf("[games] %zu (epilogue %zu, step %zu), largest message %zu B\n", games, epilogue, steps,
              max_message);
}

TEST(VerifyDescent, AnHonestPartyWinsEveryElementGameAgainstAPlantedCheat) { PlayPlantedCheats<float>(); }

// Certified mode: the same games over exact partial sums (81-byte leaves);
// the rule's value CR(p_K + bias) is the certified kernel's, bit for bit.
TEST(VerifyDescent, CertifiedExactPartialSumsSettleEveryGameLikeRepops) { PlayPlantedCheats<ExactPartial>(); }

// A liar as challenger: the honest solver's output is right, the challenger
// claims a different value somewhere; the same walks judge for the solver.
// Past kPartialsKeptWhole values the partials tree keeps only its upper
// levels: the same root, the same end proofs CheckPartialsEnds accepts, the
// same proof of any leaf as the tree over every leaf hash.
TEST(VerifyDescent, ALargePartialsTreeIsTheSameTreeKeptInPart) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x7ee);
  std::uniform_real_distribution<float> d(-4, 4);
  std::vector<float> p(kPartialsKeptWhole + 1 + rng() % 3000);
  for (float& x : p) x = d(rng);
  p[0] = +0.0f;
  std::vector<Hash256> leaves;
  for (float x : p) leaves.push_back(PartialLeafHash(x));
  const crypto::MerkleTree whole = crypto::MerkleTree::FromLeafHashes(leaves);
  const crypto::MerkleTree tree = PartialsTree(p);
  ASSERT_EQ(tree.root(), whole.root());
  const std::uint64_t k = p.size() - 1;
  EXPECT_TRUE(CheckPartialsEnds(tree.root(), k, p.back(), tree.Prove(0), tree.Prove(k)).ok());
  for (int i = 0; i < 50; ++i) {
    const std::uint64_t leaf = rng() % p.size();
    EXPECT_EQ(tree.Prove(leaf), whole.Prove(leaf)) << leaf;
  }
}

TEST(VerifyDescent, ALyingChallengerLosesAtTheElement) {
  std::mt19937_64 rng(test::TestSeed() ^ 0xc4a1);
  std::size_t games = 0, max_message = 0;
  for (int trial = 0; trial < 45; ++trial) {
    const Linear l = RandomLinear(rng);
    const DotCase c = CaseOf(l, trial % 3);
    Side<> liar{*c.out, {}};
    const std::int64_t e = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(c.out->numel()));
    const DotElement el = ElementOf(c, e);
    std::vector<float> lp = HonestPartials(c, el);
    lp.back() = std::nextafter(lp.back(), -INFINITY);
    liar.y[e] = RepopsLinearValue(lp.back(), BiasOf(c, el));
    if (SameBits(liar.y[e], (*c.out)[e])) continue;
    liar.partials = lp;
    bool won = false;
    std::size_t moves = 0;
    PlayAndCheck(c, Side<>{*c.out, {}}, liar, max_message, won, moves);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_TRUE(won);
    ++games;
  }
  EXPECT_GT(games, 30u);
}

// An input opened by its hash alone, through its producer's record in the
// node tree: the agreed hash opens, anything else is refused.
TEST(VerifyDescent, AnInputHashOpensOnlyThroughAnEarlierProducersRecord) {
  std::mt19937_64 rng(test::TestSeed());
  kernels::Tensor out = kernels::Tensor({3, 5});
  for (float& v : out.values()) v = RandomValue(rng);
  protocol::NodeRecord producer;
  producer.op_kind = static_cast<std::uint16_t>(kernels::OpKind::kRelu);
  producer.output_hashes = {Hash256{}, out.Hash()};
  std::vector<Hash256> leaves(6);
  for (std::size_t i = 0; i < leaves.size(); ++i) leaves[i] = crypto::MerkleLeafHash(Bytes{std::uint8_t(i)});
  leaves[1] = protocol::NodeRecordHash(producer);
  const auto tree = crypto::MerkleTree::FromLeafHashes(leaves);
  const InputHashContext at{Hash256{}, 0, tree.root(), leaves.size(), 3};
  const protocol::InputRef ref{protocol::InputSource::kNode, 1, 1};
  const std::string which = "input 0";
  EXPECT_TRUE(VerifyInputHash(at, ref, out.Hash(), tree.Prove(1), producer, which).ok());
  kernels::Tensor other = out;
  other[7] = std::nextafter(other[7], INFINITY);
  EXPECT_EQ(VerifyInputHash(at, ref, other.Hash(), tree.Prove(1), producer, which).reason(),
            "arb-bad-input-tensor");
  EXPECT_EQ(VerifyInputHash(at, ref, out.Hash(), tree.Prove(1), std::nullopt, which).reason(),
            "arb-bad-producer");
  EXPECT_EQ(VerifyInputHash(at, ref, out.Hash(), tree.Prove(2), producer, which).reason(),
            "arb-bad-producer");
  InputHashContext later = at;
  later.node_index = 1;  // the producer must come before the disputed node
  EXPECT_EQ(VerifyInputHash(later, ref, out.Hash(), tree.Prove(1), producer, which).reason(),
            "arb-bad-producer");
  protocol::NodeRecord forged = producer;
  forged.output_hashes[1] = other.Hash();
  EXPECT_EQ(VerifyInputHash(at, ref, other.Hash(), tree.Prove(1), forged, which).reason(),
            "arb-bad-producer");
  EXPECT_EQ(VerifyInputHash(at, {protocol::InputSource::kBatch, 0, 0}, out.Hash(), tree.Prove(1), std::nullopt,
                            which).reason(),
            "arb-bad-input-tensor");
}

}  // namespace
}  // namespace vt::verify
