// BatchNorm2d and LayerNorm.
//
// T is fp32 (native, repops) or fp64 (rounded); Sqrt is IEEE sqrt (correctly
// rounded, hence identical everywhere); TreeSum is the fixed tree of
// op_util.h. Parallelism only over channels (batchnorm) or rows (layernorm).
//
// BatchNorm2dTrain, per channel c over its n = N·H·W values x_j, j = n_idx·H·W + hw:
//   mean = TreeSum(x_j) / n
//   ssq  = TreeSum((x_j − mean)·(x_j − mean))
//   var = ssq / n;  var_unbiased = ssq / (n − 1);  rstd = 1 / Sqrt(var + eps)
//   y_j  = ((x_j − mean)·rstd)·gamma + beta
//   running_mean' = (1 − m)·running_mean + m·mean
//   running_var'  = (1 − m)·running_var + m·var_unbiased      (m = momentum)
//   outputs: y, running_mean', running_var', saved_mean = mean, saved_rstd = rstd
// BatchNorm2dEval: rstd = 1 / Sqrt(running_var + eps);
//   y = ((x − running_mean)·rstd)·gamma + beta
// BatchNorm2dBackward, per channel, x̂_j = (x_j − mean)·rstd:
//   dbeta = TreeSum(dy_j);  dgamma = TreeSum(dy_j·x̂_j)
//   dx_j = ((gamma·rstd) / n)·((n·dy_j − dbeta) − x̂_j·dgamma)
//   outputs: dx, dgamma, dbeta
// LayerNormForward, per row r of C values:
//   mean = TreeSum(x_c) / C;  var = TreeSum((x_c − mean)·(x_c − mean)) / C
//   rstd = 1 / Sqrt(var + eps);  y_c = ((x_c − mean)·rstd)·gamma_c + beta_c
//   outputs: y, mean [R], rstd [R]
// LayerNormBackward, x̂ = (x − mean)·rstd, g_c = dy_c·gamma_c:
//   a = TreeSum(g_c) / C;  b = TreeSum(g_c·x̂_c) / C
//   dx_c = ((g_c − a) − x̂_c·b)·rstd
//   dgamma_c = TreeSum over rows of dy·x̂;  dbeta_c = TreeSum over rows of dy
//   outputs: dx, dgamma, dbeta
// Certified mode: every TreeSum above, with its division, is instead the
// correctly rounded exact value (op_util.h SumOf/MeanOf/DotOf/MeanDotOf):
// mean = CR(Σx/n), var = CR(Σd²/n), var_unbiased = CR(Σd²/(n−1)) with d the
// fp32 x − mean, dgamma = CR(Σ dy·x̂), b = CR(Σ g·x̂ / C), …

#include "kernels/ops/norm.h"

#include <cmath>

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

Status CheckBatchNormParams(const BatchNormParams& p) {
  if (!(std::isfinite(p.eps) && p.eps > 0.0f)) return BadAttribute("batchnorm eps must be finite and > 0");
  if (!InRange(p.momentum, 0.0f, 1.0f)) return BadAttribute("batchnorm momentum must be in [0, 1]");
  return Status::Ok();
}

Status CheckChannelVectors(const Tensor& x, std::initializer_list<std::pair<const Tensor*, const char*>> vectors) {
  VT_TRY(CheckInput(x, "batchnorm x"));
  if (x.rank() != 4) return ShapeMismatch("batchnorm needs x [N,C,H,W]");
  for (const auto& [t, name] : vectors) {
    VT_TRY(CheckInput(*t, name));
    VT_TRY(CheckShapeIs(*t, {x.dim(1)}, name));
  }
  return Status::Ok();
}

}  // namespace

Status BatchNorm2dTrain(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                        const Tensor& running_mean, const Tensor& running_var, Tensor& y, Tensor& new_running_mean,
                        Tensor& new_running_var, Tensor& saved_mean, Tensor& saved_rstd,
                        const BatchNormParams& params) {
  VT_TRY(CheckBatchNormParams(params));
  VT_TRY(CheckChannelVectors(x, {{&gamma, "batchnorm gamma"},
                                 {&beta, "batchnorm beta"},
                                 {&running_mean, "batchnorm running_mean"},
                                 {&running_var, "batchnorm running_var"}}));
  const std::int64_t nb = x.dim(0), c_count = x.dim(1), hw = x.dim(2) * x.dim(3);
  const std::int64_t n = nb * hw;
  if (n < 2) return ShapeMismatch("batchnorm training needs more than one value per channel");
  y.Resize(x.shape());
  for (Tensor* t : {&new_running_mean, &new_running_var, &saved_mean, &saved_rstd}) t->Resize({c_count});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    T* rmo = outs.Bind(new_running_mean);
    T* rvo = outs.Bind(new_running_var);
    T* mo = outs.Bind(saved_mean);
    T* ro = outs.Bind(saved_rstd);
    const float* xd = x.data();
    const T eps = static_cast<T>(params.eps), mom = static_cast<T>(params.momentum);
    const auto channel = [&](std::int64_t c, const std::array<const float*, 1>& rows) {
      const float* xc = rows[0];  // x_j, j = n_idx·H·W + hw
      const T mean = MeanOf<M>(n, [&](std::int64_t j) { return static_cast<T>(xc[j]); });
      auto dev = [&](std::int64_t j) { return static_cast<T>(xc[j]) - mean; };
      T var, var_unbiased;
      if constexpr (M::kCertified) {
        // CR(Σd²/n) and CR(Σd²/(n−1)): each one rounding of the exact value.
        var = MeanDotOf<M>(n, dev, dev, n);
        var_unbiased = MeanDotOf<M>(n, dev, dev, n - 1);
      } else {
        const T ssq = TreeSum<T>(n, [&](std::int64_t j) {
          const T d = dev(j);
          return d * d;
        });
        var = ssq / static_cast<T>(n);
        var_unbiased = ssq / static_cast<T>(n - 1);
      }
      const T rstd = NormRstd<M>(var, eps);
      const T g = static_cast<T>(gamma[c]), b = static_cast<T>(beta[c]);
      for (std::int64_t i = 0; i < nb; ++i) {
        const std::int64_t base = (i * c_count + c) * hw;
        for (std::int64_t p = 0; p < hw; ++p) {
          yo[base + p] = NormValue(static_cast<T>(xc[i * hw + p]), mean, rstd, g, b);
        }
      }
      rmo[c] = BatchNormRunning(static_cast<T>(running_mean[c]), mean, mom);
      rvo[c] = BatchNormRunning(static_cast<T>(running_var[c]), var_unbiased, mom);
      mo[c] = mean;
      ro[c] = rstd;
    };
    ForEachChannelRow<1>(ctx.threads(), {xd}, nb, c_count, hw, channel);
    return outs.Commit(ctx);
  });
}

Status BatchNorm2dEval(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var, Tensor& y,
                       const BatchNormParams& params) {
  VT_TRY(CheckBatchNormParams(params));
  VT_TRY(CheckChannelVectors(x, {{&gamma, "batchnorm gamma"},
                                 {&beta, "batchnorm beta"},
                                 {&running_mean, "batchnorm running_mean"},
                                 {&running_var, "batchnorm running_var"}}));
  const std::int64_t nb = x.dim(0), c_count = x.dim(1), hw = x.dim(2) * x.dim(3);
  y.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const T eps = static_cast<T>(params.eps);
    ParallelFor(ctx.threads(), nb * c_count, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const std::int64_t c = pl % c_count;
        const T mean = static_cast<T>(running_mean[c]);
        const T rstd = NormRstd<M>(static_cast<T>(running_var[c]), eps);
        const T g = static_cast<T>(gamma[c]), b = static_cast<T>(beta[c]);
        const float* in = x.data() + pl * hw;
        T* out = yo + pl * hw;
        for (std::int64_t p = 0; p < hw; ++p) out[p] = NormValue(static_cast<T>(in[p]), mean, rstd, g, b);
      }
    });
    return outs.Commit(ctx);
  });
}

Status BatchNorm2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& saved_mean, const Tensor& saved_rstd, Tensor& dx, Tensor& dgamma,
                           Tensor& dbeta) {
  VT_TRY(CheckChannelVectors(x, {{&gamma, "batchnorm gamma"},
                                 {&saved_mean, "batchnorm saved_mean"},
                                 {&saved_rstd, "batchnorm saved_rstd"}}));
  VT_TRY(CheckInput(dy, "batchnorm dy"));
  VT_TRY(CheckSameShape(dy, x, "batchnorm dy vs x"));
  const std::int64_t nb = x.dim(0), c_count = x.dim(1), hw = x.dim(2) * x.dim(3);
  const std::int64_t n = nb * hw;
  dx.Resize(x.shape());
  dgamma.Resize({c_count});
  dbeta.Resize({c_count});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    T* dgo = outs.Bind(dgamma);
    T* dbo = outs.Bind(dbeta);
    const float* xd = x.data();
    const float* dyd = dy.data();
    const auto channel = [&](std::int64_t c, const std::array<const float*, 2>& rows) {
      const float* xc = rows[0];  // j = n_idx·H·W + hw
      const float* dyc = rows[1];
      const T mean = static_cast<T>(saved_mean[c]), rstd = static_cast<T>(saved_rstd[c]);
      const T sum_dy = SumOf<M>(n, [&](std::int64_t j) { return static_cast<T>(dyc[j]); });
      const T sum_dy_xhat = DotOf<M>(
          n, [&](std::int64_t j) { return static_cast<T>(dyc[j]); },
          [&](std::int64_t j) { return (static_cast<T>(xc[j]) - mean) * rstd; });
      const T g = static_cast<T>(gamma[c]);
      for (std::int64_t i = 0; i < nb; ++i) {
        const std::int64_t base = (i * c_count + c) * hw;
        for (std::int64_t p = 0; p < hw; ++p) {
          dxo[base + p] = BatchNormGradValue(static_cast<T>(dyc[i * hw + p]), static_cast<T>(xc[i * hw + p]),
                                             g, mean, rstd, sum_dy_xhat, sum_dy, n);
        }
      }
      dgo[c] = sum_dy_xhat;
      dbo[c] = sum_dy;
    };
    ForEachChannelRow<2>(ctx.threads(), {xd, dyd}, nb, c_count, hw, channel);
    return outs.Commit(ctx);
  });
}

namespace {

Status CheckLayerNorm(const Tensor& x, const Tensor& gamma, const Tensor* beta) {
  VT_TRY(CheckInput(x, "layernorm x"));
  VT_TRY(CheckInput(gamma, "layernorm gamma"));
  if (x.rank() < 1) return ShapeMismatch("layernorm needs x [..., C]");
  VT_TRY(CheckShapeIs(gamma, {x.dim(-1)}, "layernorm gamma"));
  if (beta != nullptr) {
    VT_TRY(CheckInput(*beta, "layernorm beta"));
    VT_TRY(CheckShapeIs(*beta, {x.dim(-1)}, "layernorm beta"));
  }
  return Status::Ok();
}

}  // namespace

Status LayerNormForward(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                        Tensor& mean, Tensor& rstd, float eps) {
  if (!(std::isfinite(eps) && eps > 0.0f)) return BadAttribute("layernorm eps must be finite and > 0");
  VT_TRY(CheckLayerNorm(x, gamma, &beta));
  const std::int64_t c_count = x.dim(-1);
  const std::int64_t rows = Prod(x.shape(), 0, x.shape().size() - 1);
  y.Resize(x.shape());
  mean.Resize({rows});
  rstd.Resize({rows});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    T* mo = outs.Bind(mean);
    T* ro = outs.Bind(rstd);
    const T eps_t = static_cast<T>(eps);
    ParallelFor(ctx.threads(), rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* in = x.data() + r * c_count;
        const T mu = MeanOf<M>(c_count, [&](std::int64_t c) { return static_cast<T>(in[c]); });
        auto dev = [&](std::int64_t c) { return static_cast<T>(in[c]) - mu; };
        const T var = MeanDotOf<M>(c_count, dev, dev, c_count);
        const T rs = NormRstd<M>(var, eps_t);
        T* out = yo + r * c_count;
        for (std::int64_t c = 0; c < c_count; ++c) {
          out[c] =
              NormValue(static_cast<T>(in[c]), mu, rs, static_cast<T>(gamma[c]), static_cast<T>(beta[c]));
        }
        mo[r] = mu;
        ro[r] = rs;
      }
    });
    return outs.Commit(ctx);
  });
}

Status LayerNormBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                         const Tensor& mean, const Tensor& rstd, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  VT_TRY(CheckLayerNorm(x, gamma, nullptr));
  VT_TRY(CheckInput(dy, "layernorm dy"));
  VT_TRY(CheckSameShape(dy, x, "layernorm dy vs x"));
  const std::int64_t c_count = x.dim(-1);
  const std::int64_t rows = Prod(x.shape(), 0, x.shape().size() - 1);
  VT_TRY(CheckInput(mean, "layernorm mean"));
  VT_TRY(CheckInput(rstd, "layernorm rstd"));
  VT_TRY(CheckShapeIs(mean, {rows}, "layernorm mean"));
  VT_TRY(CheckShapeIs(rstd, {rows}, "layernorm rstd"));
  dx.Resize(x.shape());
  dgamma.Resize({c_count});
  dbeta.Resize({c_count});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    T* dgo = outs.Bind(dgamma);
    T* dbo = outs.Bind(dbeta);
    const float* xd = x.data();
    const float* dyd = dy.data();
    auto xhat = [&](std::int64_t r, std::int64_t c) {
      return LayerNormXhat(static_cast<T>(xd[r * c_count + c]), static_cast<T>(mean[r]),
                           static_cast<T>(rstd[r]));
    };
    ParallelFor(ctx.threads(), rows, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* g_in = dyd + r * c_count;
        auto g = [&](std::int64_t c) { return static_cast<T>(g_in[c]) * static_cast<T>(gamma[c]); };
        const T a = MeanOf<M>(c_count, g);
        const T b = MeanDotOf<M>(c_count, g, [&](std::int64_t c) { return xhat(r, c); }, c_count);
        const T rs = static_cast<T>(rstd[r]);
        T* out = dxo + r * c_count;
        for (std::int64_t c = 0; c < c_count; ++c) out[c] = LayerNormGradValue(g(c), xhat(r, c), a, b, rs);
      }
    });
    ColumnDotOf<M>(ctx.threads(), rows, c_count,
                   [&](std::int64_t r, std::int64_t c) { return static_cast<T>(dyd[r * c_count + c]); }, xhat, dgo);
    ColumnSumOf<M>(ctx.threads(), rows, c_count,
                   [&](std::int64_t r, std::int64_t c) { return static_cast<T>(dyd[r * c_count + c]); }, dbo);
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
