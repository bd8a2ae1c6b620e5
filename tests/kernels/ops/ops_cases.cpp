// The operator case table and its fp64 reference implementations.
//
// The references are deliberately naive: plain loops in double over the
// textbook definition of each operator, sharing no code with kernels/ops.

#include "tests/kernels/ops/ops_cases.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <tuple>

#include "common/philox.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/reduce.h"

namespace vt::kernels::testing {

namespace {

T64 Zeros(const Shape& s) {
  T64 t;
  t.shape = s;
  t.v.assign(static_cast<std::size_t>(NumElements(s)), 0.0);
  return t;
}

std::int64_t Prod(const Shape& s, std::size_t b, std::size_t e) {
  std::int64_t n = 1;
  for (std::size_t i = b; i < e && i < s.size(); ++i) n *= s[i];
  return n;
}

// ---- references ------------------------------------------------------------------

T64 RefMatMul(const T64& a, const T64& b, bool ta, bool tb) {
  const std::size_t r = a.shape.size();
  const std::int64_t ra = a.shape[r - 2], ca = a.shape[r - 1];
  const std::int64_t rb = b.shape[b.shape.size() - 2], cb = b.shape.back();
  const std::int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
  const std::int64_t batch = Prod(a.shape, 0, r - 2);
  const bool shared = b.shape.size() == 2;
  Shape os(a.shape.begin(), a.shape.end() - 2);
  os.push_back(m);
  os.push_back(n);
  T64 out = Zeros(os);
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    const std::int64_t ab = bi * ra * ca, bb = shared ? 0 : bi * rb * cb;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double av = ta ? a.v[ab + p * ca + i] : a.v[ab + i * ca + p];
          const double bv = tb ? b.v[bb + j * cb + p] : b.v[bb + p * cb + j];
          s += av * bv;
        }
        out.v[(bi * m + i) * n + j] = s;
      }
    }
  }
  return out;
}

T64 RefLinear(const std::vector<T64>& in) {
  const T64 &x = in[0], &w = in[1];
  const std::int64_t n = w.shape[0], k = w.shape[1], rows = x.numel() / k;
  Shape ys = x.shape;
  ys.back() = n;
  T64 y = Zeros(ys);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) s += x.v[r * k + p] * w.v[j * k + p];
      y.v[r * n + j] = s + (in.size() > 2 ? in[2].v[j] : 0.0);
    }
  }
  return y;
}

T64 RefConv(const std::vector<T64>& in, std::int64_t sh, std::int64_t sw, std::int64_t ph, std::int64_t pw) {
  const T64 &x = in[0], &w = in[1];
  const std::int64_t n = x.shape[0], ci = x.shape[1], h = x.shape[2], wd = x.shape[3];
  const std::int64_t co = w.shape[0], kh = w.shape[2], kw = w.shape[3];
  const std::int64_t oh = (h + 2 * ph - kh) / sh + 1, ow = (wd + 2 * pw - kw) / sw + 1;
  T64 y = Zeros({n, co, oh, ow});
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t o = 0; o < co; ++o)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j) {
          double s = in.size() > 2 ? in[2].v[o] : 0.0;
          for (std::int64_t c = 0; c < ci; ++c)
            for (std::int64_t a = 0; a < kh; ++a)
              for (std::int64_t e = 0; e < kw; ++e) {
                const std::int64_t ih = i * sh - ph + a, iw = j * sw - pw + e;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                s += x.v[((b * ci + c) * h + ih) * wd + iw] * w.v[((o * ci + c) * kh + a) * kw + e];
              }
          y.v[((b * co + o) * oh + i) * ow + j] = s;
        }
  return y;
}

T64 RefPool(const T64& x, const Pool2dParams& p, bool max) {
  const std::int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
  const std::int64_t oh = (h + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const std::int64_t ow = (w + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  T64 y = Zeros({x.shape[0], x.shape[1], oh, ow});
  for (std::int64_t pl = 0; pl < planes; ++pl)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY, sum = 0;
        for (std::int64_t a = 0; a < p.kernel_h; ++a)
          for (std::int64_t e = 0; e < p.kernel_w; ++e) {
            const std::int64_t ih = i * p.stride_h - p.pad_h + a, iw = j * p.stride_w - p.pad_w + e;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const double v = x.v[(pl * h + ih) * w + iw];
            best = std::max(best, v);
            sum += v;
          }
        y.v[(pl * oh + i) * ow + j] = max ? best : sum / static_cast<double>(p.kernel_h * p.kernel_w);
      }
  return y;
}

std::vector<T64> RefBatchNorm(const std::vector<T64>& in, double eps, double mom, bool train) {
  const T64& x = in[0];
  const std::int64_t n = x.shape[0], c = x.shape[1], hw = x.shape[2] * x.shape[3];
  const double count = static_cast<double>(n * hw);
  T64 y = Zeros(x.shape), rm = Zeros({c}), rv = Zeros({c}), mean = Zeros({c}), rstd = Zeros({c});
  for (std::int64_t ch = 0; ch < c; ++ch) {
    double mu = 0, var = 0;
    if (train) {
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t p = 0; p < hw; ++p) mu += x.v[(b * c + ch) * hw + p];
      mu /= count;
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t p = 0; p < hw; ++p) var += std::pow(x.v[(b * c + ch) * hw + p] - mu, 2);
      const double ssq = var;
      var = ssq / count;
      rm.v[ch] = (1 - mom) * in[3].v[ch] + mom * mu;
      rv.v[ch] = (1 - mom) * in[4].v[ch] + mom * ssq / (count - 1);
    } else {
      mu = in[3].v[ch];
      var = in[4].v[ch];
    }
    const double rs = 1.0 / std::sqrt(var + eps);
    mean.v[ch] = mu;
    rstd.v[ch] = rs;
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t p = 0; p < hw; ++p) {
        const std::int64_t i = (b * c + ch) * hw + p;
        y.v[i] = (x.v[i] - mu) * rs * in[1].v[ch] + in[2].v[ch];
      }
  }
  if (!train) return {y};
  return {y, rm, rv, mean, rstd};
}

std::vector<T64> RefLayerNorm(const std::vector<T64>& in, double eps) {
  const T64& x = in[0];
  const std::int64_t c = x.shape.back(), rows = x.numel() / c;
  T64 y = Zeros(x.shape), mean = Zeros({rows}), rstd = Zeros({rows});
  for (std::int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (std::int64_t i = 0; i < c; ++i) mu += x.v[r * c + i];
    mu /= static_cast<double>(c);
    for (std::int64_t i = 0; i < c; ++i) var += std::pow(x.v[r * c + i] - mu, 2);
    var /= static_cast<double>(c);
    const double rs = 1.0 / std::sqrt(var + eps);
    for (std::int64_t i = 0; i < c; ++i) y.v[r * c + i] = (x.v[r * c + i] - mu) * rs * in[1].v[i] + in[2].v[i];
    mean.v[r] = mu;
    rstd.v[r] = rs;
  }
  return {y, mean, rstd};
}

T64 RefSoftmaxRows(const T64& x) {
  const std::int64_t k = x.shape.back(), rows = x.numel() / k;
  T64 y = Zeros(x.shape);
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (std::int64_t i = 0; i < k; ++i) m = std::max(m, x.v[r * k + i]);
    for (std::int64_t i = 0; i < k; ++i) s += std::exp(x.v[r * k + i] - m);
    for (std::int64_t i = 0; i < k; ++i) y.v[r * k + i] = std::exp(x.v[r * k + i] - m) / s;
  }
  return y;
}

std::vector<T64> RefAttention(const T64& qkv, std::int64_t heads) {
  const std::int64_t b = qkv.shape[0], t = qkv.shape[1], c = qkv.shape[2] / 3, d = c / heads;
  T64 y = Zeros({b, t, c}), att = Zeros({b, heads, t, t});
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto at = [&](std::int64_t bi, std::int64_t ti, std::int64_t part, std::int64_t h, std::int64_t i) {
    return qkv.v[(bi * t + ti) * 3 * c + part * c + h * d + i];
  };
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t ti = 0; ti < t; ++ti) {
        std::vector<double> s(static_cast<std::size_t>(ti + 1));
        double m = -INFINITY, z = 0;
        for (std::int64_t u = 0; u <= ti; ++u) {
          double dot = 0;
          for (std::int64_t i = 0; i < d; ++i) dot += at(bi, ti, 0, h, i) * at(bi, u, 1, h, i);
          s[u] = dot * scale;
          m = std::max(m, s[u]);
        }
        for (std::int64_t u = 0; u <= ti; ++u) z += std::exp(s[u] - m);
        for (std::int64_t u = 0; u <= ti; ++u) {
          const double p = std::exp(s[u] - m) / z;
          att.v[((bi * heads + h) * t + ti) * t + u] = p;
          for (std::int64_t i = 0; i < d; ++i) y.v[(bi * t + ti) * c + h * d + i] += p * at(bi, u, 2, h, i);
        }
      }
  return {y, att};
}

T64 RefTranspose(const T64& x, std::int64_t d0, std::int64_t d1) {
  Shape ys = x.shape;
  std::swap(ys[d0], ys[d1]);
  T64 y = Zeros(ys);
  const std::size_t r = x.shape.size();
  std::vector<std::int64_t> idx(r, 0);
  for (std::int64_t lin = 0; lin < x.numel(); ++lin) {
    std::int64_t rem = lin;
    for (std::size_t i = r; i-- > 0;) {
      idx[i] = rem % x.shape[i];
      rem /= x.shape[i];
    }
    std::swap(idx[d0], idx[d1]);
    std::int64_t out = 0;
    for (std::size_t i = 0; i < r; ++i) out = out * ys[i] + idx[i];
    y.v[out] = x.v[lin];
  }
  return y;
}

T64 RefReduce(const T64& x, std::int64_t axis, bool mean) {
  if (axis < 0) {
    double s = 0;
    for (double v : x.v) s += v;
    T64 y = Zeros({1});
    y.v[0] = mean ? s / static_cast<double>(x.numel()) : s;
    return y;
  }
  const std::size_t ax = static_cast<std::size_t>(axis);
  const std::int64_t outer = Prod(x.shape, 0, ax), n = x.shape[ax], inner = Prod(x.shape, ax + 1, x.shape.size());
  Shape ys = x.shape;
  ys.erase(ys.begin() + axis);
  if (ys.empty()) ys.push_back(1);
  T64 y = Zeros(ys);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += x.v[(o * n + j) * inner + i];
      y.v[o * inner + i] = mean ? s / static_cast<double>(n) : s;
    }
  return y;
}

T64 RefCrossEntropy(const T64& logits, const T64& labels) {
  const std::int64_t k = logits.shape.back(), rows = labels.numel();
  double total = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (std::int64_t i = 0; i < k; ++i) m = std::max(m, logits.v[r * k + i]);
    for (std::int64_t i = 0; i < k; ++i) s += std::exp(logits.v[r * k + i] - m);
    total += m + std::log(s) - logits.v[r * k + static_cast<std::int64_t>(labels.v[r])];
  }
  T64 y = Zeros({1});
  y.v[0] = total / static_cast<double>(rows);
  return y;
}

double RefLr(const LrScheduleParams& p, std::int64_t step) {
  const double base = p.base_lr, lo = p.min_lr;
  if (step < p.warmup_steps) return base * static_cast<double>(step + 1) / static_cast<double>(p.warmup_steps);
  if (p.kind == LrScheduleKind::kConstant) return base;
  const double q = p.total_steps <= p.warmup_steps
                       ? 1.0
                       : static_cast<double>(std::min(step, p.total_steps) - p.warmup_steps) /
                             static_cast<double>(p.total_steps - p.warmup_steps);
  if (p.kind == LrScheduleKind::kCosine) return lo + (base - lo) * 0.5 * (1 + std::cos(std::numbers::pi * q));
  return lo + (base - lo) * (1 - q);
}

// ---- case builders ---------------------------------------------------------------------

InputSpec In(Shape s, Gen g = Gen::kUniform, double param = 0) { return InputSpec{std::move(s), g, param}; }
Src Dy() { return Src{Src::kDy, 0}; }
Src FwdIn(int i) { return Src{Src::kInput, i}; }
Src FwdOut(int i) { return Src{Src::kOutput, i}; }

GradSpec Grad(OpKind bwd, OpAttrs attrs, std::vector<Src> sources, std::vector<int> wrt, std::vector<int> outs,
              int output = 0) {
  GradSpec g;
  g.backward = bwd;
  g.attrs = std::move(attrs);
  g.sources = std::move(sources);
  g.wrt = std::move(wrt);
  g.grad_outputs = std::move(outs);
  g.output = output;
  return g;
}

OpCase Case(std::string name, OpKind kind, OpAttrs attrs, std::vector<InputSpec> inputs, RefFn ref,
            std::vector<int> shape_bound = {}) {
  OpCase c;
  c.name = std::move(name);
  c.kind = kind;
  c.attrs = std::move(attrs);
  c.inputs = std::move(inputs);
  c.reference = std::move(ref);
  c.shape_bound = std::move(shape_bound);
  return c;
}

std::vector<OpCase> BuildCases() {
  std::vector<OpCase> cases;
  auto add = [&](OpCase c) -> OpCase& {
    cases.push_back(std::move(c));
    return cases.back();
  };

  // matmul: shared b; batched with both transposes; transposed a with shared b.
  for (auto [name, as, bs, ta, tb] : std::vector<std::tuple<std::string, Shape, Shape, bool, bool>>{
           {"matmul", {2, 3, 4}, {4, 5}, false, false},
           {"matmul_tt_batched", {2, 4, 3}, {2, 5, 4}, true, true},
           {"matmul_ta_shared", {2, 4, 3}, {4, 5}, true, false},
           {"matmul_tb_shared", {3, 2, 4}, {5, 4}, false, true}}) {
    add(Case(name, OpKind::kMatMul, MatMulAttrs(ta, tb), {In(as), In(bs)},
             [ta = ta, tb = tb](const std::vector<T64>& in) { return std::vector<T64>{RefMatMul(in[0], in[1], ta, tb)}; },
             {0, 1}))
        .grad = Grad(OpKind::kMatMulBackward, MatMulAttrs(ta, tb), {Dy(), FwdIn(0), FwdIn(1)}, {0, 1}, {0, 1});
  }
  add(Case("linear", OpKind::kLinear, {}, {In({2, 3, 4}), In({5, 4}), In({5})},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefLinear(in)}; }, {0, 1, 2}))
      .grad = Grad(OpKind::kLinearBackward, {}, {Dy(), FwdIn(0), FwdIn(1)}, {0, 1, 2}, {0, 1, 2});
  add(Case("linear_nobias", OpKind::kLinear, {}, {In({3, 4}), In({2, 4})},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefLinear(in)}; }, {0, 1}))
      .grad = Grad(OpKind::kLinearBackward, {}, {Dy(), FwdIn(0), FwdIn(1)}, {0, 1}, {0, 1});
  add(Case("linear_big", OpKind::kLinear, {}, {In({37, 67}), In({45, 67}), In({45})},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefLinear(in)}; }, {0, 1, 2}));

  {
    Conv2dParams p{1, 1, 1, 1};
    add(Case("conv2d", OpKind::kConv2d, Conv2dAttrs(p), {In({2, 3, 5, 5}), In({4, 3, 3, 3}), In({4})},
             [](const std::vector<T64>& in) { return std::vector<T64>{RefConv(in, 1, 1, 1, 1)}; }, {0, 1, 2}))
        .grad = Grad(OpKind::kConv2dBackward, Conv2dAttrs(p), {Dy(), FwdIn(0), FwdIn(1)}, {0, 1, 2}, {0, 1, 2});
    Conv2dParams q{2, 1, 0, 1};
    add(Case("conv2d_stride_nobias", OpKind::kConv2d, Conv2dAttrs(q), {In({1, 2, 6, 5}), In({3, 2, 2, 3})},
             [](const std::vector<T64>& in) { return std::vector<T64>{RefConv(in, 2, 1, 0, 1)}; }, {0, 1}))
        .grad = Grad(OpKind::kConv2dBackward, Conv2dAttrs(q), {Dy(), FwdIn(0), FwdIn(1)}, {0, 1}, {0, 1});
    add(Case("conv2d_big", OpKind::kConv2d, Conv2dAttrs(p), {In({2, 8, 9, 9}), In({16, 8, 3, 3}), In({16})},
             [](const std::vector<T64>& in) { return std::vector<T64>{RefConv(in, 1, 1, 1, 1)}; }, {0, 1, 2}));
    // A convolution case with its gradient case, the reference at the same
    // strides and padding; with a bias of one value per output channel.
    const auto conv_case = [&](const char* name, Conv2dParams cp, Shape x, Shape w, bool bias) {
      std::vector<InputSpec> inputs = {In(x), In(w)};
      std::vector<int> grads = {0, 1};
      if (bias) {
        inputs.push_back(In({w[0]}));
        grads.push_back(2);
      }
      add(Case(
              name, OpKind::kConv2d, Conv2dAttrs(cp), inputs,
              [cp](const std::vector<T64>& in) {
                return std::vector<T64>{RefConv(in, cp.stride_h, cp.stride_w, cp.pad_h, cp.pad_w)};
              },
              grads))
          .grad = Grad(OpKind::kConv2dBackward, Conv2dAttrs(cp), {Dy(), FwdIn(0), FwdIn(1)}, grads, grads);
    };
    // Stride 1 with output rows as wide as the input's: im2col's shifted
    // copies, for shifts of up to two rows and columns (5 × 5), none (1 × 1),
    // and planes narrower than the shift.
    const Conv2dParams p2{1, 1, 2, 2}, p0{1, 1, 0, 0};
    conv_case("conv2d_5x5_same", p2, {1, 2, 7, 6}, {3, 2, 5, 5}, true);
    conv_case("conv2d_1x1", p0, {2, 3, 4, 5}, {2, 3, 1, 1}, true);
    conv_case("conv2d_narrow", p, {2, 2, 1, 2}, {2, 2, 3, 3}, false);
    conv_case("conv2d_column", p2, {1, 1, 3, 1}, {2, 1, 5, 5}, true);
    // Rows as wide as the input's but more (kernel 1 × 3, pad 1 × 1) or
    // fewer (3 × 3, pad 0 × 1) of them than input rows.
    conv_case("conv2d_taller", p, {2, 2, 4, 5}, {3, 2, 1, 3}, true);
    conv_case("conv2d_shorter", {1, 1, 0, 1}, {1, 2, 6, 4}, {2, 2, 3, 3}, false);
  }
  {
    // A pooling case with its gradient case and the reference; max pooling
    // on distinct values (a tie would make the argmax the order's choice).
    const auto pool_case = [&](const char* name, bool max, Pool2dParams pp, Shape x) {
      const OpKind fwd = max ? OpKind::kMaxPool2d : OpKind::kAvgPool2d;
      const OpKind bwd = max ? OpKind::kMaxPool2dBackward : OpKind::kAvgPool2dBackward;
      add(Case(name, fwd, Pool2dAttrs(pp), {max ? In(x, Gen::kDistinct) : In(x)},
               [pp, max](const std::vector<T64>& in) { return std::vector<T64>{RefPool(in[0], pp, max)}; },
               {0}))
          .grad = Grad(bwd, Pool2dAttrs(pp), {Dy(), FwdIn(0)}, {0}, {0});
    };
    const Pool2dParams p{3, 3, 2, 2, 1, 1}, q{2, 2, 2, 2, 0, 0};
    pool_case("maxpool2d", true, p, {2, 2, 5, 5});
    pool_case("avgpool2d", false, p, {2, 2, 5, 5});
    pool_case("maxpool2d_2x2", true, q, {1, 3, 4, 6});
    // Windows that tile the plane, with a row and a column past the last
    // whole window; and a global pool (one window).
    pool_case("avgpool2d_2x2", false, q, {1, 3, 5, 7});
    pool_case("avgpool2d_global", false, {4, 6, 4, 6, 0, 0}, {2, 3, 4, 6});
  }
  {
    BatchNormParams p{1e-5f, 0.1f};
    std::vector<InputSpec> bn_in = {In({3, 2, 2, 3}), In({2}, Gen::kPositive), In({2}), In({2}),
                                    In({2}, Gen::kPositive)};
    add(Case("batchnorm2d_train", OpKind::kBatchNorm2dTrain, BatchNormAttrs(p), bn_in,
             [](const std::vector<T64>& in) { return RefBatchNorm(in, static_cast<double>(1e-5f), static_cast<double>(0.1f), true); },
             {0, 1, 2, 3, 4}))
        .grad = Grad(OpKind::kBatchNorm2dBackward, {}, {Dy(), FwdIn(0), FwdIn(1), FwdOut(3), FwdOut(4)}, {0, 1, 2},
                     {0, 1, 2});
    add(Case("batchnorm2d_eval", OpKind::kBatchNorm2dEval, BatchNormAttrs(p), bn_in,
             [](const std::vector<T64>& in) { return RefBatchNorm(in, static_cast<double>(1e-5f), 0.1, false); },
             {0, 1, 2, 3, 4}));
  }
  add(Case("layernorm", OpKind::kLayerNorm, LayerNormAttrs(1e-5f), {In({2, 3, 6}), In({6}, Gen::kPositive), In({6})},
           [](const std::vector<T64>& in) { return RefLayerNorm(in, static_cast<double>(1e-5f)); }, {0, 1, 2}))
      .grad = Grad(OpKind::kLayerNormBackward, {}, {Dy(), FwdIn(0), FwdIn(1), FwdOut(1), FwdOut(2)}, {0, 1, 2},
                   {0, 1, 2});
  add(Case("embedding", OpKind::kEmbedding, {}, {In({2, 3}, Gen::kIndex, 5), In({5, 4})},
           [](const std::vector<T64>& in) {
             const std::int64_t d = in[1].shape[1];
             Shape ys = in[0].shape;
             ys.push_back(d);
             T64 y = Zeros(ys);
             for (std::int64_t p = 0; p < in[0].numel(); ++p)
               for (std::int64_t j = 0; j < d; ++j) y.v[p * d + j] = in[1].v[static_cast<std::int64_t>(in[0].v[p]) * d + j];
             return std::vector<T64>{y};
           },
           {1}))
      .grad = Grad(OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(5), {Dy(), FwdIn(0)}, {1}, {0});
  add(Case("relu", OpKind::kRelu, {}, {In({3, 5}, Gen::kAwayFromZero)},
           [](const std::vector<T64>& in) {
             T64 y = in[0];
             for (double& v : y.v) v = std::max(v, 0.0);
             return std::vector<T64>{y};
           }))
      .grad = Grad(OpKind::kReluBackward, {}, {Dy(), FwdIn(0)}, {0}, {0});
  add(Case("gelu", OpKind::kGelu, {}, {In({3, 5}, Gen::kWide)},
           [](const std::vector<T64>& in) {
             T64 y = in[0];
             for (double& x : y.v) x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
             return std::vector<T64>{y};
           }))
      .grad = Grad(OpKind::kGeluBackward, {}, {Dy(), FwdIn(0)}, {0}, {0});
  add(Case("softmax", OpKind::kSoftmax, {}, {In({3, 7}, Gen::kWide)},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefSoftmaxRows(in[0])}; }))
      .grad = Grad(OpKind::kSoftmaxBackward, {}, {Dy(), FwdOut(0)}, {0}, {0});
  add(Case("attention", OpKind::kAttention, AttentionAttrs(2), {In({2, 5, 24})},
           [](const std::vector<T64>& in) { return RefAttention(in[0], 2); }, {0}))
      .grad = Grad(OpKind::kAttentionBackward, AttentionAttrs(2), {Dy(), FwdIn(0), FwdOut(1)}, {0}, {0});
  add(Case("attention_big", OpKind::kAttention, AttentionAttrs(4), {In({2, 33, 96})},
           [](const std::vector<T64>& in) { return RefAttention(in[0], 4); }, {0}));
  {
    OpCase& c = add(Case("dropout", OpKind::kDropout, DropoutAttrs(0.25f), {In({4, 9})}, nullptr));
    const RngAddress rng = c.rng;
    c.reference = [rng](const std::vector<T64>& in) {
      T64 y = in[0], keep = in[0];
      for (std::int64_t e = 0; e < y.numel(); ++e) {
        const bool k = DropoutKeep(rng.seed, static_cast<std::uint32_t>(rng.step), static_cast<std::uint32_t>(rng.node),
                                   static_cast<std::uint64_t>(e), 0.25f);
        keep.v[e] = k ? 1.0 : 0.0;
        y.v[e] = k ? in[0].v[e] / (1.0 - static_cast<double>(0.25f)) : 0.0;
      }
      return std::vector<T64>{y, keep};
    };
    c.grad = Grad(OpKind::kDropoutBackward, DropoutAttrs(0.25f), {Dy(), FwdOut(1)}, {0}, {0});
  }
  add(Case("add", OpKind::kAdd, {}, {In({3, 4}), In({3, 4})},
           [](const std::vector<T64>& in) {
             T64 y = in[0];
             for (std::int64_t i = 0; i < y.numel(); ++i) y.v[i] += in[1].v[i];
             return std::vector<T64>{y};
           },
           {0, 1}))
      .grad = Grad(OpKind::kAddBackward, {}, {Dy()}, {0, 1}, {0, 1});
  add(Case("reshape", OpKind::kReshape, ReshapeAttrs({4, 6}), {In({2, 3, 4})},
           [](const std::vector<T64>& in) {
             T64 y = in[0];
             y.shape = {4, 6};
             return std::vector<T64>{y};
           },
           {0}))
      .grad = Grad(OpKind::kReshape, ReshapeAttrs({2, 3, 4}), {Dy()}, {0}, {0});
  add(Case("transpose", OpKind::kTranspose, TransposeAttrs(1, 3), {In({2, 3, 4, 5})},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefTranspose(in[0], 1, 3)}; }))
      .grad = Grad(OpKind::kTranspose, TransposeAttrs(1, 3), {Dy()}, {0}, {0});
  for (auto [name, kind, bwd, axis, mean] : std::vector<std::tuple<std::string, OpKind, OpKind, std::int64_t, bool>>{
           {"sum_all", OpKind::kSum, OpKind::kSumBackward, kReduceAll, false},
           {"sum_axis1", OpKind::kSum, OpKind::kSumBackward, 1, false},
           {"sum_axis2", OpKind::kSum, OpKind::kSumBackward, 2, false},
           {"mean_all", OpKind::kMean, OpKind::kMeanBackward, kReduceAll, true},
           {"mean_axis0", OpKind::kMean, OpKind::kMeanBackward, 0, true}}) {
    OpCase& c = add(Case(name, kind, ReduceAttrs(axis), {In({3, 70, 5})},
                         [axis = axis, mean = mean](const std::vector<T64>& in) {
                           return std::vector<T64>{RefReduce(in[0], axis, mean)};
                         }));
    c.grad = Grad(bwd, ReduceAttrs(axis), {Dy(), FwdIn(0)}, {0}, {0});
    c.atol = 1e-4;  // fp32 sums of up to 1050 terms of magnitude ≤ 1 may cancel to ~0
  }
  add(Case("cross_entropy", OpKind::kCrossEntropy, {}, {In({2, 3, 5}, Gen::kWide), In({2, 3}, Gen::kIndex, 5)},
           [](const std::vector<T64>& in) { return std::vector<T64>{RefCrossEntropy(in[0], in[1])}; }, {0, 1}))
      .grad = Grad(OpKind::kCrossEntropyBackward, {}, {Dy(), FwdIn(0), FwdIn(1)}, {0}, {0});

  for (bool nesterov : {false, true}) {
    SgdParams p{0.9f, 0.01f, nesterov};
    add(Case(nesterov ? "sgd_nesterov" : "sgd", OpKind::kSgd, SgdAttrs(p),
             {In({4, 5}), In({4, 5}), In({4, 5}), In({1}, Gen::kConstant, 0.1)},
             [p](const std::vector<T64>& in) {
               T64 np = in[0], nb = in[2];
               const double mu = p.momentum, wd = p.weight_decay, lr = in[3].v[0];
               for (std::int64_t i = 0; i < np.numel(); ++i) {
                 const double g = in[1].v[i] + wd * in[0].v[i];
                 nb.v[i] = mu * in[2].v[i] + g;
                 const double u = p.nesterov ? g + mu * nb.v[i] : nb.v[i];
                 np.v[i] = in[0].v[i] - lr * u;
               }
               return std::vector<T64>{np, nb};
             },
             {0, 1, 2, 3}));
  }
  {
    AdamWParams p{0.9f, 0.999f, 1e-8f, 0.01f, 3};
    add(Case("adamw", OpKind::kAdamW, AdamWAttrs(p),
             {In({4, 5}), In({4, 5}), In({4, 5}), In({4, 5}, Gen::kSmallPositive), In({1}, Gen::kConstant, 0.01)},
             [p](const std::vector<T64>& in) {
               T64 np = in[0], nm = in[2], nv = in[3];
               const double b1 = p.beta1, b2 = p.beta2, eps = p.eps, wd = p.weight_decay, lr = in[4].v[0];
               const double bc1 = 1 - std::pow(b1, static_cast<double>(p.step));
               const double bc2 = 1 - std::pow(b2, static_cast<double>(p.step));
               for (std::int64_t i = 0; i < np.numel(); ++i) {
                 const double g = in[1].v[i];
                 nm.v[i] = b1 * in[2].v[i] + (1 - b1) * g;
                 nv.v[i] = b2 * in[3].v[i] + (1 - b2) * g * g;
                 np.v[i] = in[0].v[i] * (1 - lr * wd) - lr * (nm.v[i] / bc1) / (std::sqrt(nv.v[i] / bc2) + eps);
               }
               return std::vector<T64>{np, nm, nv};
             },
             {0, 1, 2, 3, 4}));
  }
  for (auto [name, max_norm] : std::vector<std::pair<std::string, float>>{{"clip_active", 0.5f}, {"clip_inactive", 100.0f}}) {
    add(Case(name, OpKind::kClipGradNorm, ClipGradNormAttrs(max_norm), {In({3, 4}), In({70}), In({2, 2, 2})},
             [max_norm = max_norm](const std::vector<T64>& in) {
               double ss = 0;
               for (const T64& t : in)
                 for (double v : t.v) ss += v * v;
               const double norm = std::sqrt(ss);
               const double scale = std::min(1.0, static_cast<double>(max_norm) / (norm + 1e-6));
               std::vector<T64> out;
               for (const T64& t : in) {
                 T64 o = t;
                 for (double& v : o.v) v *= scale;
                 out.push_back(o);
               }
               T64 n = Zeros({1});
               n.v[0] = norm;
               out.push_back(n);
               return out;
             }));
  }
  for (auto [name, kind, step] : std::vector<std::tuple<std::string, LrScheduleKind, std::int64_t>>{
           {"lr_constant_warmup", LrScheduleKind::kConstant, 3},
           {"lr_cosine", LrScheduleKind::kCosine, 47},
           {"lr_cosine_end", LrScheduleKind::kCosine, 150},
           {"lr_linear", LrScheduleKind::kLinear, 61}}) {
    LrScheduleParams p{kind, 10, 100, 3e-4f, 1e-5f};
    add(Case(name, OpKind::kLrSchedule, LrScheduleAttrs(p, step), {},
             [p, step = step](const std::vector<T64>&) {
               T64 y = Zeros({1});
               y.v[0] = RefLr(p, step);
               return std::vector<T64>{y};
             }));
  }
  return cases;
}

}  // namespace

const std::vector<OpCase>& AllCases() {
  static const std::vector<OpCase> cases = BuildCases();
  return cases;
}

std::vector<OpCase> GradientCases() {
  std::vector<OpCase> out;
  for (const OpCase& c : AllCases()) {
    if (c.grad) out.push_back(c);
  }
  return out;
}

std::vector<Tensor> MakeInputs(const OpCase& c, std::uint64_t seed, std::uint32_t salt) {
  constexpr double kFill = 0.9618033988749895;
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    PhiloxStream rng(seed, salt, static_cast<std::uint32_t>(i));
    Tensor t(spec.shape);
    const std::int64_t n = t.numel();
    // (u >> 8)·2^-24: 24 random bits, an exact float in [0, 1).
    auto unit = [&] { return static_cast<double>(rng.NextU32() >> 8) * (1.0 / 16777216.0); };
    if (spec.gen == Gen::kDistinct) {
      std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
      std::iota(perm.begin(), perm.end(), 0);
      for (std::int64_t k = n - 1; k > 0; --k) std::swap(perm[k], perm[rng.NextU32() % static_cast<std::uint32_t>(k + 1)]);
      for (std::int64_t k = 0; k < n; ++k) t[k] = static_cast<float>(-1.0 + (2.0 * perm[k] + 1.0) / static_cast<double>(n));
    } else {
      for (std::int64_t k = 0; k < n; ++k) {
        double v = 0;
        switch (spec.gen) {
          // The factor fills the low mantissa bits: values on a coarse
          // binary grid would make sums land exactly on rounding midpoints.
          case Gen::kUniform: v = (2 * unit() - 1) * kFill; break;
          case Gen::kWide: v = (8 * unit() - 4) * kFill; break;
          case Gen::kPositive: v = 0.5 + unit(); break;
          case Gen::kAwayFromZero: {
            const double m = 0.1 + 0.9 * unit();
            v = (rng.NextU32() & 1u) ? m : -m;
            break;
          }
          case Gen::kIndex: v = static_cast<double>(rng.NextU32() % static_cast<std::uint32_t>(spec.param)); break;
          case Gen::kSmallPositive: v = 0.01 + 0.1 * unit(); break;
          case Gen::kConstant: v = spec.param; break;
          case Gen::kDistinct: break;
        }
        t[k] = static_cast<float>(v);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

T64 ToT64(const Tensor& t) {
  T64 r;
  r.shape = t.shape();
  r.v.assign(t.values().begin(), t.values().end());
  return r;
}

RunResult RunNode(const ExecConfig& config, OpKind kind, const OpAttrs& attrs, const std::vector<const Tensor*>& inputs,
              const RngAddress& rng, const RoundingLog* replay) {
  RunResult r;
  std::optional<NodeRounding> rounding;
  if (config.mode == Mode::kRounded) {
    rounding.emplace(replay != nullptr ? NodeRounding::Replay(config.rounding, *replay)
                                       : NodeRounding::Record(config.rounding));
  }
  OpContext ctx(config, rounding ? &*rounding : nullptr, rng);
  r.status = RunOp(ctx, kind, attrs, inputs, r.outputs);
  if (r.status.ok() && rounding) {
    r.status = rounding->Finish();
    r.log = rounding->log();
  }
  return r;
}

std::vector<const Tensor*> Pointers(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : tensors) p.push_back(&t);
  return p;
}

}  // namespace vt::kernels::testing
