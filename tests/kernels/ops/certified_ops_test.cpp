// Certified mode through the operator registry (RunOp):
// * every operator of the case table: bitwise identical for 1/2/3 threads and
//   under deliberately shuffled fp64 orders, and within the case tolerance of
//   the fp64 reference;
// * the GEMM and reduction outputs of linear, matmul_backward (shared B,
//   transposed A: accumulated over the batch), conv2d and its backward
//   (stride 2, padding: dx gathers overlapping windows; the batch's GEMMs
//   grouped in each way), overlapping max/avg
//   pool backwards, embedding_backward, clip_grad_norm's norm, sum/mean:
//   bit for bit the correctly rounded exact value, from an independent MPFR
//   reference written here from the definitions in docs/kernels.md.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "common/philox.h"
#include "kernels/certified.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/registry.h"
#include "tests/kernels/certified_reference.h"
#include "tests/kernels/ops/ops_cases.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::testing {
namespace {

using certref::Big;
using certref::ToFloat;

ExecConfig Certified(int threads) {
  ExecConfig c;
  c.mode = Mode::kCertified;
  c.threads = threads;
  return c;
}

std::vector<std::string> Names() {
  std::vector<std::string> out;
  for (const OpCase& c : AllCases()) out.push_back(c.name);
  return out;
}

const OpCase& Find(const std::string& name) {
  for (const OpCase& c : AllCases()) {
    if (c.name == name) return c;
  }
  std::abort();
}

std::uint32_t NameSalt(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (char ch : name) h = (h ^ static_cast<std::uint8_t>(ch)) * 16777619u;
  return h;
}

class OpCertified : public ::testing::TestWithParam<std::string> {};

TEST_P(OpCertified, BitwiseAcrossThreadsAndShuffledOrdersAndNearTheReference) {
  const OpCase& c = Find(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), NameSalt(c.name));
  const RunResult base = RunNode(Certified(1), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(base.status.ok()) << base.status.ToString();
  EXPECT_TRUE(base.log.entries.empty());
  for (int threads : {2, 3}) {
    for (std::uint64_t seed : {0u, 17u}) {
      SetF64ShuffleSeedForTesting(seed);
      const RunResult r = RunNode(Certified(threads), c.kind, c.attrs, Pointers(inputs), c.rng);
      SetF64ShuffleSeedForTesting(0);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      ASSERT_EQ(r.outputs.size(), base.outputs.size());
      for (std::size_t o = 0; o < r.outputs.size(); ++o) {
        EXPECT_TRUE(r.outputs[o].BitwiseEqual(base.outputs[o]))
            << "output " << o << " threads " << threads << " shuffle " << seed;
      }
    }
  }
  std::vector<T64> in64;
  for (const Tensor& t : inputs) in64.push_back(ToT64(t));
  const std::vector<T64> ref = c.reference(in64);
  ASSERT_EQ(ref.size(), base.outputs.size());
  for (std::size_t o = 0; o < ref.size(); ++o) {
    int failures = 0;
    for (std::int64_t i = 0; i < ref[o].numel(); ++i) {
      const double want = ref[o].v[static_cast<std::size_t>(i)], got = base.outputs[o][i];
      if (!(std::fabs(got - want) <= c.atol + c.rtol * std::fabs(want)) && ++failures <= 3) {
        ADD_FAILURE() << c.name << " output " << o << "[" << i << "]: " << got << " vs " << want;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpCertified, ::testing::ValuesIn(Names()),
                         [](const auto& p) { return p.param; });

// ---- exact outputs against MPFR ------------------------------------------------------

std::vector<float> Values(std::uint32_t stream, std::int64_t count) {
  PhiloxStream s(4321, 1, stream);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) {
    const std::uint32_t w = s.NextU32();
    const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
    x = std::ldexp((w >> 31) != 0 ? -frac : frac, -static_cast<int>((w >> 23) % 12u));
  }
  return v;
}

Tensor Make(const Shape& shape, std::uint32_t stream) {
  Tensor t(shape);
  const std::vector<float> v = Values(stream, t.numel());
  std::copy(v.begin(), v.end(), t.values().begin());
  return t;
}

std::vector<Tensor> RunCertified(OpKind kind, const OpAttrs& attrs, const std::vector<const Tensor*>& in, int threads = 2) {
  const RunResult r = RunNode(Certified(threads), kind, attrs, in, RngAddress{});
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  return r.outputs;
}

std::uint32_t Bits(float x) { return std::bit_cast<std::uint32_t>(x); }

// Compares every element of `got` with want(i) bit for bit.
template <class Want>
void ExpectExact(const Tensor& got, const Want& want, const char* what) {
  int bad = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const float w = want(i);
    if (Bits(got[i]) != Bits(w) && ++bad <= 3) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << w;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

TEST(OpCertifiedExact, LinearWithBiasAndItsBackward) {
  const std::int64_t r = 7, k = 33, n = 5;
  Tensor x = Make({r, k}, 1), w = Make({n, k}, 2), b = Make({n}, 3), dy = Make({r, n}, 4);
  // Make some outputs cancel against the bias: b[0] = −(x·w)[0][0] rounded.
  const auto y0 = RunCertified(OpKind::kLinear, {}, {&x, &w});
  b[0] = -y0[0][0];
  const auto y = RunCertified(OpKind::kLinear, {}, {&x, &w, &b});
  ExpectExact(y[0], [&](std::int64_t e) {
    Big s;
    s.Add(b[e % n]);
    for (std::int64_t p = 0; p < k; ++p) s.AddProduct(x[(e / n) * k + p], w[(e % n) * k + p]);
    return ToFloat(s.v());
  }, "linear y");
  const auto g = RunCertified(OpKind::kLinearBackward, {}, {&dy, &x, &w});
  ExpectExact(g[0], [&](std::int64_t e) {  // dx[i][p] = Σ_j dy[i][j]·w[j][p]
    Big s;
    for (std::int64_t j = 0; j < n; ++j) s.AddProduct(dy[(e / k) * n + j], w[j * k + e % k]);
    return ToFloat(s.v());
  }, "linear dx");
  ExpectExact(g[1], [&](std::int64_t e) {  // dW[j][p] = Σ_i dy[i][j]·x[i][p]
    Big s;
    for (std::int64_t i = 0; i < r; ++i) s.AddProduct(dy[i * n + e / k], x[i * k + e % k]);
    return ToFloat(s.v());
  }, "linear dW");
  ExpectExact(g[2], [&](std::int64_t e) {
    Big s;
    for (std::int64_t i = 0; i < r; ++i) s.Add(dy[i * n + e]);
    return ToFloat(s.v());
  }, "linear db");
}

TEST(OpCertifiedExact, MatMulBackwardSharedTransposedAIsOneSumOverTheBatch) {
  const std::int64_t batch = 3, m = 4, k = 6, n = 5;
  Tensor a = Make({batch, k, m}, 11), b = Make({k, n}, 12), dc = Make({batch, m, n}, 13);  // trans_a
  const auto g = RunCertified(OpKind::kMatMulBackward, MatMulAttrs(true, false), {&dc, &a, &b});
  ExpectExact(g[1], [&](std::int64_t e) {  // dB[p][j] = Σ_{t,i} op(A_t)[i][p]·dC_t[i][j]
    const std::int64_t p = e / n, j = e % n;
    Big s;
    for (std::int64_t t = 0; t < batch; ++t)
      for (std::int64_t i = 0; i < m; ++i) s.AddProduct(a[t * k * m + p * m + i], dc[t * m * n + i * n + j]);
    return ToFloat(s.v());
  }, "matmul_backward dB");
}

// Over a batch of 3: one GEMM for all images, groups of 2 + 1, and one GEMM
// per image (SetConvImagesPerGroupForTesting) give the same exact values.
class OpCertifiedConvGroups : public ::testing::TestWithParam<std::int64_t> {
 protected:
  void TearDown() override { SetConvImagesPerGroupForTesting(0); }
};

INSTANTIATE_TEST_SUITE_P(ImagesPerGroup, OpCertifiedConvGroups, ::testing::Values(0, 2, 1));

TEST_P(OpCertifiedConvGroups, Conv2dStridedPaddedAndItsBackward) {
  SetConvImagesPerGroupForTesting(GetParam());
  Conv2dParams p;
  p.stride_h = 2, p.stride_w = 1, p.pad_h = 1, p.pad_w = 1;
  const std::int64_t nb = 3, ci = 3, h = 7, wd = 6, co = 4, kh = 3, kw = 3;
  const std::int64_t oh = (h + 2 - kh) / 2 + 1, ow = (wd + 2 - kw) / 1 + 1;
  Tensor x = Make({nb, ci, h, wd}, 21), w = Make({co, ci, kh, kw}, 22), b = Make({co}, 23);
  Tensor dy = Make({nb, co, oh, ow}, 24);
  auto X = [&](std::int64_t n, std::int64_t c, std::int64_t i, std::int64_t j) -> float {
    return (i < 0 || i >= h || j < 0 || j >= wd) ? 0.0f : x[((n * ci + c) * h + i) * wd + j];
  };
  auto W = [&](std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) { return w[((o * ci + c) * kh + i) * kw + j]; };
  const auto y = RunCertified(OpKind::kConv2d, Conv2dAttrs(p), {&x, &w, &b});
  ExpectExact(y[0], [&](std::int64_t e) {
    const std::int64_t q = e % ow, r = (e / ow) % oh, o = (e / (ow * oh)) % co, n = e / (ow * oh * co);
    Big s;
    s.Add(b[o]);
    for (std::int64_t c = 0; c < ci; ++c)
      for (std::int64_t i = 0; i < kh; ++i)
        for (std::int64_t j = 0; j < kw; ++j) s.AddProduct(W(o, c, i, j), X(n, c, r * 2 - 1 + i, q - 1 + j));
    return ToFloat(s.v());
  }, "conv2d y");
  const auto g = RunCertified(OpKind::kConv2dBackward, Conv2dAttrs(p), {&dy, &x, &w});
  ExpectExact(g[0], [&](std::int64_t e) {  // dx[n][c][i][j] = Σ w·dy over the windows covering (i, j)
    const std::int64_t j = e % wd, i = (e / wd) % h, c = (e / (wd * h)) % ci, n = e / (wd * h * ci);
    Big s;
    for (std::int64_t o = 0; o < co; ++o)
      for (std::int64_t r = 0; r < oh; ++r)
        for (std::int64_t q = 0; q < ow; ++q) {
          const std::int64_t di = i - (r * 2 - 1), dj = j - (q - 1);
          if (di >= 0 && di < kh && dj >= 0 && dj < kw) s.AddProduct(W(o, c, di, dj), dy[((n * co + o) * oh + r) * ow + q]);
        }
    return ToFloat(s.v());
  }, "conv2d dx");
  ExpectExact(g[1], [&](std::int64_t e) {  // dW[o][c][i][j] = Σ_{n,r,q} dy·x
    const std::int64_t j = e % kw, i = (e / kw) % kh, c = (e / (kw * kh)) % ci, o = e / (kw * kh * ci);
    Big s;
    for (std::int64_t n = 0; n < nb; ++n)
      for (std::int64_t r = 0; r < oh; ++r)
        for (std::int64_t q = 0; q < ow; ++q) s.AddProduct(dy[((n * co + o) * oh + r) * ow + q], X(n, c, r * 2 - 1 + i, q - 1 + j));
    return ToFloat(s.v());
  }, "conv2d dW");
  ExpectExact(g[2], [&](std::int64_t o) {
    Big s;
    for (std::int64_t n = 0; n < nb; ++n)
      for (std::int64_t e = 0; e < oh * ow; ++e) s.Add(dy[(n * co + o) * oh * ow + e]);
    return ToFloat(s.v());
  }, "conv2d db");
}

// Pooling and its backwards against MPFR, with windows that overlap (max
// pool backward's gather) and windows that do not (its one-term fast path),
// padded so that some positions lie under no window, and with −0 among the
// gradients (an exact zero sum is +0).
TEST(OpCertifiedExact, PoolBackwardsAndAvgPool) {
  Pool2dParams overlapping;
  overlapping.kernel_h = 3, overlapping.kernel_w = 3, overlapping.stride_h = 2, overlapping.stride_w = 1;
  overlapping.pad_h = 1, overlapping.pad_w = 1;
  Pool2dParams apart;  // stride ≥ kernel: the fast path
  apart.kernel_h = 2, apart.kernel_w = 3, apart.stride_h = 3, apart.stride_w = 3, apart.pad_h = 1,
  apart.pad_w = 1;
  for (const Pool2dParams& p : {overlapping, apart}) {
    const std::int64_t h = 7, wd = 5;
    const std::int64_t oh = (h + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
    const std::int64_t ow = (wd + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
    const std::int64_t area = p.kernel_h * p.kernel_w;
    Tensor x = Make({1, 2, h, wd}, 31), dy = Make({1, 2, oh, ow}, 32);
    for (std::int64_t e = 0; e < dy.numel(); e += 3) dy[e] = -0.0f;
    // The input under window (r, q) at offset (i, j), or nothing (padding).
    const auto at = [&](std::int64_t r, std::int64_t q, std::int64_t i,
                        std::int64_t j) -> std::optional<std::int64_t> {
      const std::int64_t ii = r * p.stride_h - p.pad_h + i, jj = q * p.stride_w - p.pad_w + j;
      if (ii < 0 || ii >= h || jj < 0 || jj >= wd) return std::nullopt;
      return ii * wd + jj;
    };
    const auto avg = RunCertified(OpKind::kAvgPool2d, Pool2dAttrs(p), {&x});
    ExpectExact(
        avg[0],
        [&](std::int64_t e) {
          const std::int64_t q = e % ow, r = (e / ow) % oh, c = e / (ow * oh);
          Big s;
          for (std::int64_t i = 0; i < p.kernel_h; ++i)
            for (std::int64_t j = 0; j < p.kernel_w; ++j) {
              if (const auto pos = at(r, q, i, j)) s.Add(x[c * h * wd + *pos]);
            }
          mpfr_div_ui(s.v(), s.v(), static_cast<unsigned long>(area), MPFR_RNDN);  // 1200 bits: see RefReduce
          return ToFloat(s.v());
        },
        "avgpool y");
    const auto davg = RunCertified(OpKind::kAvgPool2dBackward, Pool2dAttrs(p), {&dy, &x});
    const auto dmax = RunCertified(OpKind::kMaxPool2dBackward, Pool2dAttrs(p), {&dy, &x});
    // Window argmax by the documented rule: first maximum in window order.
    auto argmax = [&](std::int64_t c, std::int64_t r, std::int64_t q) {
      std::int64_t best = -1;
      for (std::int64_t i = 0; i < p.kernel_h; ++i)
        for (std::int64_t j = 0; j < p.kernel_w; ++j) {
          const auto pos = at(r, q, i, j);
          if (pos && (best < 0 || x[c * h * wd + *pos] > x[c * h * wd + best])) best = *pos;
        }
      return best;
    };
    auto gather = [&](std::int64_t e, bool max) {
      const std::int64_t c = e / (h * wd), pos = e % (h * wd);
      Big s;
      for (std::int64_t r = 0; r < oh; ++r)
        for (std::int64_t q = 0; q < ow; ++q)
          for (std::int64_t i = 0; i < p.kernel_h; ++i)
            for (std::int64_t j = 0; j < p.kernel_w; ++j) {
              if (at(r, q, i, j) != pos) continue;
              const float g = dy[(c * oh + r) * ow + q];
              if (max) {
                if (argmax(c, r, q) == pos) s.Add(g);
              } else {
                s.Add(g / static_cast<float>(area));
              }
            }
      return ToFloat(s.v());
    };
    const std::string what = p.stride_h >= p.kernel_h ? " (windows apart)" : " (overlapping)";
    ExpectExact(
        davg[0], [&](std::int64_t e) { return gather(e, false); }, ("avgpool dx" + what).c_str());
    ExpectExact(
        dmax[0], [&](std::int64_t e) { return gather(e, true); }, ("maxpool dx" + what).c_str());
  }
}

TEST(OpCertifiedExact, EmbeddingBackwardClipNormAndReductions) {
  const std::int64_t positions = 40, d = 6, vocab = 5;
  Tensor idx({positions});
  for (std::int64_t i = 0; i < positions; ++i) idx[i] = static_cast<float>((i * 7) % 4);  // row 4 unused
  Tensor dy = Make({positions, d}, 41);
  const auto dw = RunCertified(OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(vocab), {&dy, &idx});
  ExpectExact(dw[0], [&](std::int64_t e) {
    Big s;
    for (std::int64_t i = 0; i < positions; ++i) {
      if (static_cast<std::int64_t>(idx[i]) == e / d) s.Add(dy[i * d + e % d]);
    }
    return ToFloat(s.v());
  }, "embedding dW");

  Tensor g0 = Make({13, 7}, 51), g1 = Make({29}, 52);
  const auto clip = RunCertified(OpKind::kClipGradNorm, ClipGradNormAttrs(0.5f), {&g0, &g1});
  ExpectExact(clip[2], [&](std::int64_t) {
    Big s;
    for (float v : g0.values()) s.AddProduct(v, v);
    for (float v : g1.values()) s.AddProduct(v, v);
    mpfr_sqrt(s.v(), s.v(), MPFR_RNDN);
    return ToFloat(s.v());
  }, "clip norm");

  Tensor x = Make({6, 9, 4}, 61);
  const auto sum1 = RunCertified(OpKind::kSum, ReduceAttrs(1), {&x});
  const auto mean_all = RunCertified(OpKind::kMean, ReduceAttrs(-1), {&x});
  ExpectExact(sum1[0], [&](std::int64_t e) {
    Big s;
    for (std::int64_t j = 0; j < 9; ++j) s.Add(x[(e / 4) * 36 + j * 4 + e % 4]);
    return ToFloat(s.v());
  }, "sum axis 1");
  ExpectExact(mean_all[0], [&](std::int64_t) {
    Big s;
    for (float v : x.values()) s.Add(v);
    mpfr_div_ui(s.v(), s.v(), static_cast<unsigned long>(x.numel()), MPFR_RNDN);
    return ToFloat(s.v());
  }, "mean all");
}

}  // namespace
}  // namespace vt::kernels::testing
