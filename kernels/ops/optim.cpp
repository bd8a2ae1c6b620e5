// Optimizers, gradient clipping, learning-rate schedules. T = fp32 (native,
// repops) or fp64 (rounded); element formulas in op_arith.h:
//
// SgdStep (per element): g = grad + wd·p; b' = mu·b + g;
//   u = nesterov ? g + mu·b' : b'; p' = p − lr·u.       Outputs p', b'.
// AdamWStep: constants c1 = 1 − β1, c2 = 1 − β2, bc1 = 1 − β1^t,
//   bc2 = 1 − β2^t with β^t by binary exponentiation (PowInt: a fixed
//   sequence of multiplications, never pow()), decay = 1 − lr·wd; per element
//   m' = β1·m + c1·g; v' = β2·v + (c2·g)·g;
//   p' = p·decay − lr·((m'/bc1) / (Sqrt(v'/bc2) + eps)).  Outputs p', m', v'.
// ClipGradNorm: s_i = TreeSum of g² over tensor i (block sums in parallel);
//   total = CombinePairwise(s_0..s_{n−1}) (the same halving tree over the
//   tensor list); norm = Sqrt(total); c = max_norm / (norm + 1e-6);
//   scale = c < 1 ? c : 1; g_i' = g_i·scale.  Outputs g_0'..g_{n−1}', norm [1].
// LrSchedule (step ≥ 0):
//   step < warmup:  lr = (base·(step + 1)) / warmup
//   constant:       lr = base
//   otherwise:      q = total ≤ warmup ? 1 : (min(step, total) − warmup) / (total − warmup)
//     cosine:       lr = min + (base − min)·(0.5·(1 + Cos(π·q)))   (detmath Cos in repops)
//     linear:       lr = min + (base − min)·(1 − q)
//   integers are converted to T once (IEEE round-to-nearest).  Output lr [1].

#include "kernels/ops/optim.h"

#include <cmath>

#include "kernels/ops/op_arith.h"
#include "kernels/ops/op_util.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

constexpr std::int64_t kMaxStep = std::int64_t{1} << 62;

bool FiniteNonNegative(float v) { return std::isfinite(v) && v >= 0.0f; }

Status CheckParamSet(std::initializer_list<std::pair<const Tensor*, const char*>> tensors, const Tensor& lr) {
  const Tensor* first = tensors.begin()->first;
  for (const auto& [t, name] : tensors) {
    VT_TRY(CheckInput(*t, name));
    VT_TRY(CheckSameShape(*t, *first, name));
  }
  VT_TRY(CheckInput(lr, "optimizer lr"));
  if (lr.numel() != 1) return ShapeMismatch("optimizer lr must hold one value");
  return Status::Ok();
}

}  // namespace

Status SgdStep(const OpContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& momentum_buf,
               const Tensor& lr, const SgdParams& params, Tensor& new_param, Tensor& new_momentum_buf) {
  if (!InRange(params.momentum, 0.0f, 1.0f)) return BadAttribute("sgd momentum must be in [0, 1]");
  if (!FiniteNonNegative(params.weight_decay)) return BadAttribute("sgd weight decay must be finite and >= 0");
  if (params.nesterov && params.momentum <= 0.0f) return BadAttribute("nesterov needs momentum > 0");
  VT_TRY(CheckParamSet({{&param, "sgd param"}, {&grad, "sgd grad"}, {&momentum_buf, "sgd momentum"}}, lr));
  new_param.Resize(param.shape());
  new_momentum_buf.Resize(param.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* po = outs.Bind(new_param);
    T* bo = outs.Bind(new_momentum_buf);
    const T lr_t = static_cast<T>(lr[0]), mu = static_cast<T>(params.momentum),
            wd = static_cast<T>(params.weight_decay);
    const float *p = param.data(), *g = grad.data(), *b = momentum_buf.data();
    ParallelFor(ctx.threads(), param.numel(), [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const SgdResult<T> r = SgdElement<T>(static_cast<T>(p[i]), static_cast<T>(g[i]), static_cast<T>(b[i]), lr_t,
                                             mu, wd, params.nesterov);
        po[i] = r.param;
        bo[i] = r.buf;
      }
    });
    return outs.Commit(ctx);
  });
}

namespace {

// Elements [i0, i1). The outputs are fresh buffers, distinct from the
// inputs and from each other: restrict says so, and the loop vectorises
// (seven pointers are more than the compiler versions a loop for).
template <class M, class T>
[[gnu::always_inline]] inline void AdamWBody(const float* __restrict p, const float* __restrict g,
                                             const float* __restrict m, const float* __restrict v,
                                             T* __restrict new_p, T* __restrict new_m, T* __restrict new_v,
                                             const AdamWConstants<T>& k, std::int64_t i0, std::int64_t i1) {
  for (std::int64_t i = i0; i < i1; ++i) {
    const AdamWResult<T> r = AdamWElement<M, T>(static_cast<T>(p[i]), static_cast<T>(g[i]),
                                                static_cast<T>(m[i]), static_cast<T>(v[i]), k);
    new_p[i] = r.param;
    new_m[i] = r.m;
    new_v[i] = r.v;
  }
}

// The loop once per policy, each a plain function with ISA clones
// (kernels/simd_clones.h). Its division and square root dominate the
// optimizer step; AVX-512 does 8 fp64 (16 fp32) of
// them per instruction where the baseline does 2 (4).
#define VT_ADAMW_RANGE(NAME, M)                                                                         \
  VT_SIMD_CLONES void NAME(const float* p, const float* g, const float* m, const float* v, M::T* new_p, \
                           M::T* new_m, M::T* new_v, const AdamWConstants<M::T>& k, std::int64_t i0,    \
                           std::int64_t i1) {                                                           \
    AdamWBody<M>(p, g, m, v, new_p, new_m, new_v, k, i0, i1);                                           \
  }
VT_ADAMW_RANGE(AdamWRangeNative, NativeMath)
VT_ADAMW_RANGE(AdamWRangeRepops, RepopsMath)
VT_ADAMW_RANGE(AdamWRangeCertified, CertifiedMath)
#undef VT_ADAMW_RANGE

// Rounded mode: output `which` (0 p', 1 m', 2 v') of elements [i0, i1)
// into out[i − i0], one output per pass (RoundInPieces rounds the outputs in
// order); m' and v' without p''s division and square root.
VT_SIMD_CLONES void AdamWOutputF64(std::size_t which, const float* __restrict p, const float* __restrict g,
                                   const float* __restrict m, const float* __restrict v,
                                   double* __restrict out, const AdamWConstants<double>& k, std::int64_t i0,
                                   std::int64_t i1) {
  switch (which) {
    case 0:
      for (std::int64_t i = i0; i < i1; ++i) {
        out[i - i0] = AdamWElement<F64Math, double>(p[i], g[i], m[i], v[i], k).param;
      }
      break;
    case 1:
      for (std::int64_t i = i0; i < i1; ++i) out[i - i0] = AdamWMoments<double>(g[i], m[i], v[i], k).m;
      break;
    default:
      for (std::int64_t i = i0; i < i1; ++i) out[i - i0] = AdamWMoments<double>(g[i], m[i], v[i], k).v;
      break;
  }
}

// Policy M's loop.
template <class M>
auto AdamWRangeOf() {
  if constexpr (std::is_same_v<M, NativeMath>) {
    return &AdamWRangeNative;
  } else if constexpr (std::is_same_v<M, RepopsMath>) {
    return &AdamWRangeRepops;
  } else {
    static_assert(std::is_same_v<M, CertifiedMath>);
    return &AdamWRangeCertified;
  }
}

}  // namespace

Status AdamWStep(const OpContext& ctx, const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                 const Tensor& lr, const AdamWParams& params, Tensor& new_param, Tensor& new_m, Tensor& new_v) {
  if (!InRange(params.beta1, 0.0f, 1.0f) || params.beta1 == 1.0f || !InRange(params.beta2, 0.0f, 1.0f) ||
      params.beta2 == 1.0f) {
    return BadAttribute("adamw betas must be in [0, 1)");
  }
  if (!(std::isfinite(params.eps) && params.eps > 0.0f)) return BadAttribute("adamw eps must be finite and > 0");
  if (!FiniteNonNegative(params.weight_decay)) return BadAttribute("adamw weight decay must be finite and >= 0");
  if (params.step < 1 || params.step > kMaxStep) return BadAttribute("adamw step must be in [1, 2^62]");
  VT_TRY(CheckParamSet({{&param, "adamw param"}, {&grad, "adamw grad"}, {&m, "adamw m"}, {&v, "adamw v"}}, lr));
  new_param.Resize(param.shape());
  new_m.Resize(param.shape());
  new_v.Resize(param.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    AdamWConstants<T> k;
    k.beta1 = static_cast<T>(params.beta1);
    k.beta2 = static_cast<T>(params.beta2);
    k.c1 = T(1) - k.beta1;
    k.c2 = T(1) - k.beta2;
    const auto t = static_cast<std::uint64_t>(params.step);
    k.bc1 = T(1) - PowInt(k.beta1, t);
    k.bc2 = T(1) - PowInt(k.beta2, t);
    k.lr = static_cast<T>(lr[0]);
    k.decay = T(1) - k.lr * static_cast<T>(params.weight_decay);
    k.eps = static_cast<T>(params.eps);
    if constexpr (M::kRounded) {
      Tensor* const outputs[] = {&new_param, &new_m, &new_v};
      return RoundInPieces(ctx, outputs,
                           [&](std::size_t which, std::int64_t i0, std::int64_t i1, double* out) {
                             ParallelFor(ctx.threads(), i1 - i0, [&](std::int64_t j0, std::int64_t j1) {
                               AdamWOutputF64(which, param.data(), grad.data(), m.data(), v.data(), out + j0,
                                              k, i0 + j0, i0 + j1);
                             });
                           });
    } else {
      ParallelFor(ctx.threads(), param.numel(), [&](std::int64_t i0, std::int64_t i1) {
        AdamWRangeOf<M>()(param.data(), grad.data(), m.data(), v.data(), new_param.data(), new_m.data(),
                          new_v.data(), k, i0, i1);
      });
      return Status::Ok();
    }
  });
}

Status ClipGradNorm(const OpContext& ctx, std::span<const Tensor* const> grads, float max_norm,
                    std::span<Tensor> outputs) {
  if (!(std::isfinite(max_norm) && max_norm > 0.0f)) return BadAttribute("clip max_norm must be finite and > 0");
  if (grads.empty()) return Status::Invalid("bad-input-count", "clip needs at least one gradient");
  if (outputs.size() != grads.size() + 1) return Status::Invalid("bad-output-count", "clip needs grads + 1 outputs");
  for (const Tensor* g : grads) {
    if (g == nullptr) return Status::Invalid("null-input", "clip gradient is null");
    VT_TRY(CheckInput(*g, "clip gradient"));
  }
  for (std::size_t i = 0; i < grads.size(); ++i) outputs[i].Resize(grads[i]->shape());
  Tensor& norm_out = outputs[grads.size()];
  norm_out.Resize({1});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    T norm;
    if constexpr (M::kCertified) {
      // norm = CR(sqrt(Σ over every tensor of Σ g²)): one exact sum.
      std::vector<std::int64_t> offset(grads.size() + 1, 0);
      for (std::size_t i = 0; i < grads.size(); ++i) offset[i + 1] = offset[i] + grads[i]->numel();
      // The reduction reads e in increasing order (a search only when it
      // leaves the current tensor: the slow path starts again from 0).
      std::size_t current = 0;
      auto get = [&](std::int64_t e) {
        if (e < offset[current] || e >= offset[current + 1]) {
          current =
              static_cast<std::size_t>(std::upper_bound(offset.begin(), offset.end(), e) - offset.begin()) -
              1;
        }
        return grads[current]->data()[e - offset[current]];
      };
      norm = CertifiedNorm(offset.back(), get);
    } else {
      std::vector<T> sums(grads.size());
      for (std::size_t i = 0; i < grads.size(); ++i) {
        const float* g = grads[i]->data();
        sums[i] = ParallelTreeSum<T>(ctx.threads(), grads[i]->numel(), [&](std::int64_t j) {
          const T v = static_cast<T>(g[j]);
          return v * v;
        });
      }
      norm = M::Sqrt(CombinePairwise(sums.data(), static_cast<std::int64_t>(sums.size())));
    }
    const T scale = ClipGradScale(static_cast<T>(max_norm), norm);
    // Values [j0, j1) of output o (the clipped gradients, then the norm) into out[0, j1 − j0).
    const auto values = [&](std::size_t o, std::int64_t j0, std::int64_t j1, T* out) {
      if (o == grads.size()) {
        out[0] = norm;
        return;
      }
      const float* g = grads[o]->data() + j0;
      ParallelFor(ctx.threads(), j1 - j0, [=](std::int64_t a, std::int64_t b) {
        for (std::int64_t j = a; j < b; ++j) out[j] = static_cast<T>(g[j]) * scale;
      });
    };
    if constexpr (M::kRounded) {
      // Every gradient of the model: never in fp64 at once.
      std::vector<Tensor*> all;
      for (Tensor& t : outputs) all.push_back(&t);
      return RoundInPieces(ctx, all, values);
    } else {
      for (std::size_t o = 0; o <= grads.size(); ++o) values(o, 0, outputs[o].numel(), outputs[o].data());
      return Status::Ok();
    }
  });
}

Status LrSchedule(const OpContext& ctx, const LrScheduleParams& params, std::int64_t step, Tensor& lr) {
  if (params.kind != LrScheduleKind::kConstant && params.kind != LrScheduleKind::kCosine &&
      params.kind != LrScheduleKind::kLinear) {
    return BadAttribute("unknown learning-rate schedule");
  }
  if (step < 0 || step > kMaxStep || params.warmup_steps < 0 || params.warmup_steps > kMaxStep ||
      params.total_steps < 0 || params.total_steps > kMaxStep) {
    return BadAttribute("schedule steps must be in [0, 2^62]");
  }
  if (!FiniteNonNegative(params.base_lr) || !FiniteNonNegative(params.min_lr)) {
    return BadAttribute("learning rates must be finite and >= 0");
  }
  lr.Resize({1});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* out = outs.Bind(lr);
    const T base = static_cast<T>(params.base_lr), lo = static_cast<T>(params.min_lr);
    const std::int64_t warmup = params.warmup_steps, total = params.total_steps;
    T value;
    if (step < warmup) {
      value = (base * static_cast<T>(step + 1)) / static_cast<T>(warmup);
    } else if (params.kind == LrScheduleKind::kConstant) {
      value = base;
    } else {
      const T q = total <= warmup ? T(1)
                                  : static_cast<T>(std::min(step, total) - warmup) / static_cast<T>(total - warmup);
      if (params.kind == LrScheduleKind::kCosine) {
        const T pi = static_cast<T>(3.14159265358979323846);
        value = lo + (base - lo) * (T(0.5) * (T(1) + M::Cos(pi * q)));
      } else {
        value = lo + (base - lo) * (T(1) - q);
      }
    }
    out[0] = value;
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
