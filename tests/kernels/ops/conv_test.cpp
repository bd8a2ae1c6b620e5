// The repops convolution computes every value by its definition, however
// the work is split: images side by side or one after another, weight
// gradients over one GEMM per image or per group of images
// (SetConvImagesPerGroupForTesting), any thread count. The definitions, in
// fp32, each sum sequential from +0:
//   y[n][o][p]   = (Σ_q w[o][q]·col_n[q][p]) + b[o]
//   dw[o][q]     = Σ_n Σ_p dy[n][o][p]·col_n[q][p]        (images in order)
//   dcol_n[q][p] = Σ_o w[o][q]·dy[n][o][p]
//   dx[n][c][i]  = +0 + dcol_n[c·KK + r][p_r(i)] for each kernel offset r in
//                  order whose window p_r(i) puts it on input i
// where col_n[q][p] is image n's input under kernel offset q of window p
// (+0 in the padding).

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/op_context.h"
#include "kernels/ops/conv.h"
#include "kernels/tensor.h"
#include "tests/support/test_seed.h"

namespace vt::kernels {
namespace {

struct Shape {
  std::int64_t n, ci, h, w, co, kh, kw;
  Conv2dParams p;
  std::int64_t oh() const { return (h + 2 * p.pad_h - kh) / p.stride_h + 1; }
  std::int64_t ow() const { return (w + 2 * p.pad_w - kw) / p.stride_w + 1; }
};

Tensor Values(std::mt19937_64& rng, std::vector<std::int64_t> shape) {
  Tensor t(shape);
  std::normal_distribution<float> normal;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const auto pick = rng() % 16;
    t.data()[i] = pick == 0 ? -0.0f : pick == 1 ? 0.0f : pick == 2 ? 1e-40f : normal(rng);
  }
  return t;
}

// The definitions above, element by element.
struct Definition {
  const Shape& s;
  const Tensor &x, &w, &b, &dy;

  float Col(std::int64_t n, std::int64_t q, std::int64_t p) const {
    const std::int64_t kk = s.kh * s.kw, c = q / kk, kh = q % kk / s.kw, kw = q % s.kw;
    const std::int64_t ih = p / s.ow() * s.p.stride_h - s.p.pad_h + kh;
    const std::int64_t iw = p % s.ow() * s.p.stride_w - s.p.pad_w + kw;
    if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) return 0.0f;
    return x[((n * s.ci + c) * s.h + ih) * s.w + iw];
  }
  std::int64_t Ckk() const { return s.ci * s.kh * s.kw; }
  std::int64_t Ohw() const { return s.oh() * s.ow(); }
  float Y(std::int64_t n, std::int64_t o, std::int64_t p) const {
    float sum = 0.0f;
    for (std::int64_t q = 0; q < Ckk(); ++q) sum = sum + w[o * Ckk() + q] * Col(n, q, p);
    return sum + b[o];
  }
  float Dw(std::int64_t o, std::int64_t q) const {
    float sum = 0.0f;
    for (std::int64_t n = 0; n < s.n; ++n)
      for (std::int64_t p = 0; p < Ohw(); ++p) sum = sum + dy[(n * s.co + o) * Ohw() + p] * Col(n, q, p);
    return sum;
  }
  float Dcol(std::int64_t n, std::int64_t q, std::int64_t p) const {
    float sum = 0.0f;
    for (std::int64_t o = 0; o < s.co; ++o) sum = sum + w[o * Ckk() + q] * dy[(n * s.co + o) * Ohw() + p];
    return sum;
  }
  float Dx(std::int64_t n, std::int64_t c, std::int64_t ih, std::int64_t iw) const {
    float sum = 0.0f;
    for (std::int64_t r = 0; r < s.kh * s.kw; ++r) {
      const std::int64_t th = ih + s.p.pad_h - r / s.kw, tw = iw + s.p.pad_w - r % s.kw;
      if (th < 0 || tw < 0 || th % s.p.stride_h != 0 || tw % s.p.stride_w != 0) continue;
      const std::int64_t oh = th / s.p.stride_h, ow = tw / s.p.stride_w;
      if (oh >= s.oh() || ow >= s.ow()) continue;
      sum = sum + Dcol(n, c * s.kh * s.kw + r, oh * s.ow() + ow);
    }
    return sum;
  }
};

class ConvRepops : public ::testing::Test {
 protected:
  void TearDown() override { SetConvImagesPerGroupForTesting(0); }
};

TEST_F(ConvRepops, EveryValueIsItsDefinitionHoweverTheWorkIsSplit) {
  std::mt19937_64 rng(test::TestSeed());
  const Shape shapes[] = {
      {5, 3, 6, 6, 4, 3, 3, {1, 1, 1, 1}},  // "same" 3 × 3: the padded row table, shifted copies and adds
      {3, 2, 7, 5, 3, 3, 3, {2, 1, 1, 1}},  // strided rows: im2col
      {4, 3, 5, 4, 2, 1, 1, {1, 1, 0, 0}},  // 1 × 1
      {2, 2, 4, 3, 2, 3, 3, {1, 1, 0, 0}},  // no padding, a window as wide as the input
      {1, 1, 3, 9, 5, 2, 4, {1, 2, 0, 1}},  // one image
  };
  for (const Shape& s : shapes) {
    const Tensor x = Values(rng, {s.n, s.ci, s.h, s.w}), w = Values(rng, {s.co, s.ci, s.kh, s.kw});
    const Tensor b = Values(rng, {s.co}), dy = Values(rng, {s.n, s.co, s.oh(), s.ow()});
    const Definition def{s, x, w, b, dy};
    for (const int threads : {1, 2, 3}) {
      for (const std::int64_t group : {0, 1, 2}) {
        SCOPED_TRACE("shape " + std::to_string(&s - shapes) + ", threads " + std::to_string(threads) +
                     ", images per group " + std::to_string(group));
        SetConvImagesPerGroupForTesting(group);
        ExecConfig config;
        config.mode = Mode::kRepops;
        config.threads = threads;
        const OpContext ctx(config);
        Tensor y, dx, dw, db;
        ASSERT_TRUE(Conv2dForward(ctx, x, w, &b, y, s.p).ok());
        ASSERT_TRUE(Conv2dBackward(ctx, dy, x, w, dx, dw, db, s.p).ok());
        int wrong = 0;
        const auto expect = [&](float got, float want, const char* what, std::int64_t at) {
          if (std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want) || ++wrong > 3) return;
          ADD_FAILURE() << what << "[" << at << "] = " << got << ", its definition " << want;
        };
        for (std::int64_t e = 0; e < y.numel(); ++e)
          expect(y[e], def.Y(e / (s.co * def.Ohw()), e / def.Ohw() % s.co, e % def.Ohw()), "y", e);
        for (std::int64_t e = 0; e < dw.numel(); ++e)
          expect(dw[e], def.Dw(e / def.Ckk(), e % def.Ckk()), "dw", e);
        for (std::int64_t e = 0; e < dx.numel(); ++e) {
          const std::int64_t hw = s.h * s.w;
          expect(dx[e], def.Dx(e / (s.ci * hw), e / hw % s.ci, e % hw / s.w, e % s.w), "dx", e);
        }
        EXPECT_EQ(wrong, 0);
      }
    }
  }
}

}  // namespace
}  // namespace vt::kernels
