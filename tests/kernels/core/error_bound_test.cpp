// The error-bounded logging region of rounded mode (kernels/rounding.h,
// kernels/matmul.h GemmSlackF64): β bounds how far two honest fp64
// evaluations of a GEMM output can differ, whatever their summation order;
// the logging region and the replay check widen to it; a forged entry
// outside the widened window is still rejected.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

// Full 24-bit significands at magnitudes 2^-8..2, either sign (products use
// all 48 bits, so fp64 partial sums round).
float FullPrecision(std::mt19937_64& rng) {
  const std::uint64_t w = rng();
  const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
  const int e = -static_cast<int>((w >> 23) % 9);
  return std::ldexp(((w >> 32) & 1) != 0 ? -frac : frac, e);
}

// Honest fp64 evaluation orders of Σ a_p·b_p.
double Sequential(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t p = 0; p < a.size(); ++p) s = s + a[p] * b[p];
  return s;
}
double Reversed(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t p = a.size(); p-- > 0;) s = s + a[p] * b[p];
  return s;
}
double Fma(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t p = 0; p < a.size(); ++p) s = std::fma(a[p], b[p], s);
  return s;
}
double Blocked(const std::vector<double>& a, const std::vector<double>& b, std::size_t lanes) {
  std::vector<double> acc(lanes, 0.0);
  for (std::size_t p = 0; p < a.size(); ++p) acc[p % lanes] = acc[p % lanes] + a[p] * b[p];
  double s = 0;
  for (double x : acc) s = s + x;
  return s;
}
double Pairwise(const double* prod, std::size_t n) {
  if (n == 1) return prod[0];
  return Pairwise(prod, n / 2) + Pairwise(prod + n / 2, n - n / 2);
}

// Dot products built to cancel to near zero: the last term cancels the
// (rounded) sum of the others, so the result is tiny next to the terms and
// its fp64 value depends on the summation order by many of its own ulps.
TEST(ErrorBoundTest, CancellingDotProductsDivergeWithinBeta) {
  const std::uint64_t seed = test::TestSeed() ^ 0xbe7a;
  std::mt19937_64 rng(seed);
  constexpr std::int64_t kM = 64, kK = 768;
  std::vector<double> a(static_cast<std::size_t>(kM * kK)), bcol(static_cast<std::size_t>(kK));
  for (auto& x : bcol) x = FullPrecision(rng);
  bcol.back() = 1.0;
  for (std::int64_t i = 0; i < kM; ++i) {
    double partial = 0;
    for (std::int64_t p = 0; p + 1 < kK; ++p) {
      a[static_cast<std::size_t>(i * kK + p)] = FullPrecision(rng);
      partial += a[static_cast<std::size_t>(i * kK + p)] * bcol[static_cast<std::size_t>(p)];
    }
    // The closing term: −partial rounded to fp32 (inputs are fp32 values),
    // plus a small offset so the exact sum is near, not at, zero.
    a[static_cast<std::size_t>(i * kK + kK - 1)] =
        static_cast<float>(-partial) + std::ldexp(1.0, -20 - static_cast<int>(i % 8));
  }
  const GemmArgs g{kM, 1, kK, false, false, kK, 1, 1, false};
  std::vector<double> beta(kM);
  GemmSlackF64(g, a.data(), bcol.data(), beta.data());

  // Every honest order, including OpenBLAS dgemm at 1 and 2 threads.
  std::vector<std::vector<double>> results;
  for (int threads : {1, 2}) {
    ExecConfig c;
    c.threads = threads;
    std::vector<double> out(kM);
    GemmF64(c, g, a.data(), bcol.data(), out.data());
    results.push_back(out);
  }
  for (int order = 0; order < 6; ++order) {
    std::vector<double> out(kM);
    for (std::int64_t i = 0; i < kM; ++i) {
      const std::vector<double> row(a.begin() + i * kK, a.begin() + (i + 1) * kK);
      std::vector<double> prod(kK);
      for (std::int64_t p = 0; p < kK; ++p)
        prod[static_cast<std::size_t>(p)] =
            row[static_cast<std::size_t>(p)] * bcol[static_cast<std::size_t>(p)];
      switch (order) {
        case 0:
          out[i] = Sequential(row, bcol);
          break;
        case 1:
          out[i] = Reversed(row, bcol);
          break;
        case 2:
          out[i] = Fma(row, bcol);
          break;
        case 3:
          out[i] = Blocked(row, bcol, 4);
          break;
        case 4:
          out[i] = Blocked(row, bcol, 8);
          break;
        default:
          out[i] = Pairwise(prod.data(), prod.size());
          break;
      }
    }
    results.push_back(out);
  }
  double max_ratio = 0, max_ulps = 0;
  for (std::int64_t i = 0; i < kM; ++i) {
    const RoundingRegion r = ClassifyRounding(results[0][i], RoundingSpec{32, 0});
    const double u = static_cast<double>(r.up) - static_cast<double>(r.down);
    for (const auto& x : results) {
      for (const auto& y : results) {
        const double d = std::fabs(x[i] - y[i]);
        ASSERT_LE(d, beta[i]) << "row " << i << " seed " << seed;
        max_ratio = std::max(max_ratio, d / beta[i]);
        max_ulps = std::max(max_ulps, d / u);
      }
    }
  }
  std::printf("[cancelling dot products, K=%lld] max divergence %.3g fp32 ulp, %.3g of beta (seed %llu)\n",
              static_cast<long long>(kK), max_ulps, max_ratio, static_cast<unsigned long long>(seed));
  // The test means something: the orders diverge by far more than the default τ.
  EXPECT_GT(max_ulps, 16.0 / 65536.0) << "expected the orders to diverge beyond tau = 2^-12 ulp";
}

TEST(ErrorBoundTest, SlackWidensTheRegionUpToAQuarterUlp) {
  const RoundingSpec spec{32, 16};  // τ = 2^-12
  // x = 1 + 2^-24 (the midpoint between 1 and 1 + 2^-23) + d: u = 2^-23.
  const double m = 1.0 + 0x1p-24, u = 0x1p-23;
  const double x = m + 0x1p-10 * u;  // 2^-10 ulp from the boundary: outside τ·u = 2^-12 u
  EXPECT_FALSE(ClassifyRounding(x, spec).near_boundary);
  EXPECT_FALSE(ClassifyRounding(x, spec).within_replay_window);
  EXPECT_FALSE(ClassifyRounding(x, spec, 0x1.8p-11 * u).near_boundary);        // β < distance
  EXPECT_TRUE(ClassifyRounding(x, spec, 0x1.8p-11 * u).within_replay_window);  // 2β > distance
  EXPECT_TRUE(ClassifyRounding(x, spec, 0x1p-9 * u).near_boundary);
  // β is capped at u/4: a value 0.3 ulp from the boundary is never logged,
  // and the outer window (2 × u/4) takes every value of the interval.
  const double far = m + 0.3 * u;
  EXPECT_FALSE(ClassifyRounding(far, spec, 1.0).near_boundary);
  EXPECT_TRUE(ClassifyRounding(far, spec, 1.0).within_replay_window);
  EXPECT_TRUE(ClassifyRounding(m + 0.2 * u, spec, 1.0).near_boundary);
  // NaN or negative slack is no slack; specials never have a region.
  EXPECT_FALSE(ClassifyRounding(x, spec, std::nan("")).within_replay_window);
  EXPECT_FALSE(ClassifyRounding(x, spec, -1.0).within_replay_window);
  EXPECT_FALSE(ClassifyRounding(INFINITY, spec, 1.0).near_boundary);
  // Subnormal fp32 magnitudes: u = 2^-149, the boundary at 2^-150 above a grid value.
  const double sub = 0x1p-140 + 0x1p-150 + 0x1p-160;
  EXPECT_FALSE(ClassifyRounding(sub, spec).near_boundary);
  EXPECT_TRUE(ClassifyRounding(sub, spec, 0x1p-159).near_boundary);
  EXPECT_FALSE(ClassifyRounding(sub, spec, 0x1p-161).near_boundary);
}

// The acceptance rule (hd::AcceptsEntry), judged at the replayer's value as
// the reference: an entry naming the non-nearest neighbour is accepted only
// within w = β of the boundary, one naming the nearest within 2w.
TEST(ErrorBoundTest, ReplayJudgesEntriesByTheAcceptanceRule) {
  const RoundingSpec spec{32, 16};
  const double m = 1.0 + 0x1p-24, u = 0x1p-23, beta = 0x1p-8 * u;
  // Recording: logged only within β. Above m the nearest neighbour is up.
  const std::vector<double> values = {m + 0.5 * beta, m + 1.5 * beta, m + 3.0 * beta};
  const std::vector<double> slack(values.size(), beta);
  NodeRounding rec = NodeRounding::Record(spec);
  std::vector<float> out(values.size());
  ASSERT_TRUE(rec.Round(values, out, slack).ok());
  ASSERT_EQ(rec.log().entries.size(), 1u);
  EXPECT_EQ(rec.log().entries[0].position, 0u);
  EXPECT_TRUE(rec.log().entries[0].up);
  EXPECT_EQ(rec.logged_by_slack(), 1u);
  // A replayer whose value lies on the other side (honest divergence < β)
  // follows the entry.
  {
    NodeRounding rep = NodeRounding::Replay(spec, rec.log());
    const std::vector<double> other = {m - 0.4 * beta, m + 1.5 * beta, m + 3.0 * beta};
    std::vector<float> replayed(other.size());
    ASSERT_TRUE(rep.Round(other, replayed, slack).ok());
    ASSERT_TRUE(rep.Finish().ok());
    EXPECT_EQ(std::bit_cast<std::uint32_t>(replayed[0]), std::bit_cast<std::uint32_t>(out[0]));
  }
  const auto verdict = [&](std::uint64_t position, bool up, bool with_slack) {
    NodeRounding rep = NodeRounding::Replay(spec, RoundingLog{{LogEntry{position, up}}});
    std::vector<float> replayed(values.size());
    const Status s = with_slack ? rep.Round(values, replayed, slack) : rep.Round(values, replayed);
    return s.ok() ? std::string("ok") : s.reason();
  };
  const std::string outside = "log-entry-outside-region";
  // Within w: both neighbours are accepted (the value is genuinely ambiguous).
  EXPECT_EQ(verdict(0, true, true), "ok");
  EXPECT_EQ(verdict(0, false, true), "ok");
  // Between w and 2w: only the nearest one (an honest trainer within w of m
  // may have logged it); the other is a steering attempt.
  EXPECT_EQ(verdict(1, true, true), "ok");
  EXPECT_EQ(verdict(1, false, true), outside);
  // Past 2w: no entry at all, nor at 1.5β when the replayer has no β.
  EXPECT_EQ(verdict(2, true, true), outside);
  EXPECT_EQ(verdict(2, false, true), outside);
  EXPECT_EQ(verdict(1, true, false), outside);
}

TEST(ErrorBoundTest, MatMulReplaysNaiveOrderOnZeroMeanInputsAtDefaultTau) {
  // OpenBLAS records; a party summing each output naively in fp64 replays.
  const std::uint64_t seed = test::TestSeed() ^ 0x2e40;
  std::mt19937_64 rng(seed);
  constexpr std::int64_t kM = 48, kK = 768, kN = 96;
  Tensor a({kM, kK}), b({kK, kN});
  for (float& x : a.values()) x = FullPrecision(rng);
  for (float& x : b.values()) x = FullPrecision(rng);
  ExecConfig config;
  config.mode = Mode::kRounded;
  config.threads = 2;
  ASSERT_EQ(config.rounding.tau_q16, kDefaultTauQ16);
  NodeRounding rec = NodeRounding::Record(config.rounding);
  Tensor out;
  ASSERT_TRUE(MatMul(OpContext(config, &rec), a, b, out).ok());
  std::vector<double> naive(static_cast<std::size_t>(kM * kN)), reversed(naive.size());
  for (std::int64_t i = 0; i < kM; ++i) {
    for (std::int64_t j = 0; j < kN; ++j) {
      double s = 0, r = 0;
      for (std::int64_t p = 0; p < kK; ++p) s = s + static_cast<double>(a[i * kK + p]) * b[p * kN + j];
      for (std::int64_t p = kK; p-- > 0;) r = r + static_cast<double>(a[i * kK + p]) * b[p * kN + j];
      naive[static_cast<std::size_t>(i * kN + j)] = s;
      reversed[static_cast<std::size_t>(i * kN + j)] = r;
    }
  }
  const std::vector<double> a64(a.values().begin(), a.values().end()),
      b64(b.values().begin(), b.values().end());
  std::vector<double> slack(naive.size());
  GemmSlackF64(GemmArgs{kM, kN, kK, false, false, kK, kN, kN, false}, a64.data(), b64.data(), slack.data());
  for (const auto* other : {&naive, &reversed}) {
    NodeRounding rep = NodeRounding::Replay(config.rounding, rec.log());
    std::vector<float> replayed(other->size());
    ASSERT_TRUE(rep.Round(*other, replayed, slack).ok()) << "seed " << seed;
    ASSERT_TRUE(rep.Finish().ok());
    for (std::size_t i = 0; i < replayed.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(replayed[i]),
                std::bit_cast<std::uint32_t>(out[static_cast<std::int64_t>(i)]))
          << i << " seed " << seed;
    }
  }
  std::printf("[zero-mean %lldx%lldx%lld] logged %zu of %lld (%zu by beta)\n", static_cast<long long>(kM),
              static_cast<long long>(kK), static_cast<long long>(kN), rec.log().entries.size(),
              static_cast<long long>(kM * kN), static_cast<std::size_t>(rec.logged_by_slack()));
}

TEST(ErrorBoundTest, AccumulatedPiecesUseTheTotalLength) {
  // Two accumulated pieces = one GEMM over the concatenated k.
  std::mt19937_64 rng(7);
  constexpr std::int64_t kM = 3, kN = 4, kK = 10;
  std::vector<double> a(kM * 2 * kK), b(2 * kK * kN);
  for (auto& x : a) x = FullPrecision(rng);
  for (auto& x : b) x = FullPrecision(rng);
  std::vector<double> whole(kM * kN);
  GemmSlackF64(GemmArgs{kM, kN, 2 * kK, false, false, 2 * kK, kN, kN, false}, a.data(), b.data(),
               whole.data());
  std::vector<double> row_sq(kM, 0.0), col_sq(kN, 0.0), pieces(kM * kN);
  GemmNormsSq(GemmArgs{kM, kN, kK, false, false, 2 * kK, kN, kN, false}, a.data(), b.data(), row_sq.data(),
              col_sq.data());
  GemmNormsSq(GemmArgs{kM, kN, kK, false, false, 2 * kK, kN, kN, true}, a.data() + kK, b.data() + kK * kN,
              row_sq.data(), col_sq.data());
  WriteGemmSlack(kM, kN, 2 * kK, row_sq.data(), col_sq.data(), pieces.data(), kN);
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(pieces[i], whole[i], whole[i] * 1e-14);
  EXPECT_GT(GemmSlackFactor(2 * kK), GemmSlackFactor(kK));
  EXPECT_TRUE(std::isinf(GemmSlackFactor(std::int64_t{1} << 53)));
}

TEST(ErrorBoundTest, ExactOperatorsRoundWithoutTau) {
  // a + b of fp32 values is exact in fp64; with a = 1 and b = 2^-24·odd the
  // sum is an exact fp32 tie. No honest party can disagree, so the add node
  // (OpFp64IsExact) logs nothing; nor does gelu, whose tanh is the
  // fixed-sequence fp64 one (no libm); τ still applies to a vendor GEMM.
  EXPECT_TRUE(OpFp64IsExact(OpKind::kAdd));
  EXPECT_TRUE(OpFp64IsExact(OpKind::kAdamW));
  EXPECT_TRUE(OpFp64IsExact(OpKind::kSoftmaxBackward));
  EXPECT_TRUE(OpFp64IsExact(OpKind::kGelu));
  EXPECT_TRUE(OpFp64IsExact(OpKind::kCrossEntropy));
  EXPECT_TRUE(OpFp64IsExact(OpKind::kLrSchedule));
  EXPECT_FALSE(OpFp64IsExact(OpKind::kLinear));
  EXPECT_FALSE(OpFp64IsExact(OpKind::kAttentionBackward));
  Tensor a({64}), b({64});
  for (std::int64_t i = 0; i < 64; ++i) {
    a[i] = 1.0f;
    b[i] = static_cast<float>(2 * i + 1) * 0x1p-24f;
  }
  ExecConfig config;
  config.mode = Mode::kRounded;
  const Tensor* in[] = {&a, &b};
  {
    NodeRounding rec = NodeRounding::Record(config.rounding);
    std::vector<Tensor> out;
    ASSERT_TRUE(RunOp(OpContext(config, &rec), OpKind::kAdd, {}, in, out).ok());
    EXPECT_TRUE(rec.log().entries.empty());
    // The same values rounded with τ (what the add did before) log the ties.
    std::vector<double> sums(64);
    for (std::int64_t i = 0; i < 64; ++i) sums[static_cast<std::size_t>(i)] = 1.0 + static_cast<double>(b[i]);
    NodeRounding with_tau = NodeRounding::Record(config.rounding);
    std::vector<float> rounded(64);
    ASSERT_TRUE(with_tau.Round(sums, rounded).ok());
    EXPECT_GT(with_tau.log().entries.size(), 0u);
  }
  {
    // gelu logs nothing even at τ = 1/4 (which would log about half of all
    // values of an operator τ applies to).
    ExecConfig wide = config;
    wide.rounding.tau_q16 = kMaxTauQ16;
    NodeRounding rec = NodeRounding::Record(wide.rounding);
    std::vector<Tensor> out;
    const Tensor* g_in[] = {&b};
    ASSERT_TRUE(RunOp(OpContext(wide, &rec), OpKind::kGelu, {}, g_in, out).ok());
    EXPECT_TRUE(rec.log().entries.empty());
  }
}

// The honest limit (docs/kernels.md): an output that cancels to far below
// its terms has β at the u/4 cap, and another honest order of the same fp64
// sum may round it elsewhere by more than any entry repairs. The attack is
// no attack at all — an honest trainer whose BLAS sums in another order
// (F64 shuffle: random permutation, random split-K) must still be accepted
// by every replay, bit for bit, and so never lose a dispute over it.
TEST(ErrorBoundTest, HonestTrainerAtTheCapIsAcceptedInAnyOrder) {
  const std::uint64_t seed = test::TestSeed() ^ 0xca9;
  std::mt19937_64 rng(seed);
  constexpr std::int64_t kM = 64, kK = 768, kN = 8;
  // x·wᵀ with row i of x cancelling against row 0 of w: its last term is the
  // negated (fp32-rounded) sum of the others, so y[i][0] is the fp32
  // rounding residual, about 2^-24 of the terms.
  Tensor x({kM, kK}), w({kN, kK}), bias({kN});
  for (float& v : w.values()) v = FullPrecision(rng);
  w[kK - 1] = 1.0f;
  for (float& v : bias.values()) v = 0.0f;
  for (std::int64_t i = 0; i < kM; ++i) {
    double partial = 0;
    for (std::int64_t p = 0; p + 1 < kK; ++p) {
      x[i * kK + p] = FullPrecision(rng);
      partial += static_cast<double>(x[i * kK + p]) * w[p];
    }
    x[i * kK + kK - 1] = static_cast<float>(-partial);
  }
  Tensor wt;  // w as the [K, N] right operand of matmul
  ExecConfig config;
  config.mode = Mode::kRounded;
  {
    NodeRounding r = NodeRounding::Record(config.rounding);
    std::vector<Tensor> out;
    const Tensor* in[] = {&w};
    ASSERT_TRUE(RunOp(OpContext(config, &r), OpKind::kTranspose, TransposeAttrs(0, 1), in, out).ok());
    wt = out[0];
  }
  // The same sums as a 1×1 convolution of 64 = 8×8 positions over K input
  // channels (its im2col GEMM, K = Ci): x's row i is position i's channels.
  Tensor image({1, kK, 8, 8}), kernel({kN, kK, 1, 1});
  for (std::int64_t i = 0; i < kM; ++i) {
    for (std::int64_t p = 0; p < kK; ++p) image[p * kM + i] = x[i * kK + p];
  }
  std::copy(w.values().begin(), w.values().end(), kernel.values().begin());
  // conv2d_backward's dW[co][ci] sums dy[co]·x[ci] over positions: with
  // dy[0] = w's row 0 and x[ci] = x's row ci laid over K = 768 positions,
  // dW[0][:] cancels the same way.
  Tensor positions({1, kM, 24, 32}), grad({1, kN, 24, 32}), kernel_bwd({kN, kM, 1, 1});
  for (std::int64_t i = 0; i < kM; ++i) {
    for (std::int64_t p = 0; p < kK; ++p) positions[i * kK + p] = x[i * kK + p];
  }
  std::copy(w.values().begin(), w.values().end(), grad.values().begin());
  for (float& v : kernel_bwd.values()) v = FullPrecision(rng);
  // matmul_backward of C = A[64, 8]·B[8, 768] with dC = x:
  // dA = dC·Bᵀ, and with B = w, dA[i][0] = Σ_j x[i][j]·w[0][j] cancels.
  Tensor a_small({kM, kN});
  for (float& v : a_small.values()) v = FullPrecision(rng);
  struct Node {
    const char* name;
    OpKind kind;
    OpAttrs attrs;
    std::vector<const Tensor*> inputs;
  };
  const Node nodes[] = {
      {"matmul", OpKind::kMatMul, MatMulAttrs(false, false), {&x, &wt}},
      {"linear", OpKind::kLinear, {}, {&x, &w, &bias}},
      {"conv2d", OpKind::kConv2d, Conv2dAttrs(Conv2dParams{}), {&image, &kernel, &bias}},
      {"conv2d_backward",
       OpKind::kConv2dBackward,
       Conv2dAttrs(Conv2dParams{}),
       {&grad, &positions, &kernel_bwd}},
      {"matmul_backward", OpKind::kMatMulBackward, MatMulAttrs(false, false), {&x, &a_small, &w}}};
  std::uint64_t capped = 0, rerecorded = 0, logged = 0, from_reference = 0;
  // Each node both ways a trainer repairs the capped values: per value from
  // the operator's reference functions, and — with the functions ignored
  // (the test switch), as for an operator that has none — by recording the
  // whole node again on the reference.
  for (const bool functions : {true, false}) {
    for (const Node& node : nodes) {
      for (std::uint64_t order = 1; order <= 4; ++order) {
        NodeRounding rec = NodeRounding::Record(config.rounding);
        std::vector<Tensor> trained;
        SetF64ShuffleSeedForTesting(seed * 8 + order);
        NodeRounding::SetReferencesIgnoredForTesting(!functions);
        const Status st = RunOp(OpContext(config, &rec), node.kind, node.attrs, node.inputs, trained);
        NodeRounding::SetReferencesIgnoredForTesting(false);
        SetF64ShuffleSeedForTesting(0);
        ASSERT_TRUE(st.ok()) << st.ToString();
        capped += rec.slack_capped();
        rerecorded += rec.reference_records();
        logged += rec.log().entries.size();
        from_reference += rec.reference_values();
        EXPECT_EQ(rec.reference_records(), functions ? 0u : 1u) << node.name;
        EXPECT_EQ(rec.reference_values() > 0, functions) << node.name;
        NodeRounding rep = NodeRounding::Replay(config.rounding, rec.log());
        std::vector<Tensor> replayed;
        const Status rs = RunOp(OpContext(config, &rep), node.kind, node.attrs, node.inputs, replayed);
        ASSERT_TRUE(rs.ok()) << node.name << " order " << order << ": " << rs.ToString() << " seed " << seed;
        ASSERT_TRUE(rep.Finish().ok());
        for (std::size_t o = 0; o < trained.size(); ++o) {
          EXPECT_TRUE(replayed[o].BitwiseEqual(trained[o]))
              << node.name << " order " << order << " seed " << seed;
        }
      }
    }
  }
  std::printf(
      "[honest limit, %lldx%lldx%lld] capped values %llu, rounded from a reference function %llu, "
      "nodes recorded again %llu of 40, entries %llu\n",
      static_cast<long long>(kM), static_cast<long long>(kK), static_cast<long long>(kN),
      static_cast<unsigned long long>(capped), static_cast<unsigned long long>(from_reference),
      static_cast<unsigned long long>(rerecorded), static_cast<unsigned long long>(logged));
  // The case is the honest limit: every cancelling output is capped.
  EXPECT_GE(capped, 40u * kM);
  EXPECT_GE(from_reference, 20u * kM);
  EXPECT_EQ(rerecorded, 20u);
}

}  // namespace
}  // namespace vt::kernels
