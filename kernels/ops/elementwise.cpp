// Element-wise operators. Each output element is one fixed expression of the
// corresponding input elements (T = fp32 in native/repops, fp64 in rounded):
//
//   Relu:          y = x > 0 ? x : (x is NaN ? x : +0)
//   ReluBackward:  dx = x > 0 ? dy : +0
//   Gelu:          y = (0.5·x)·(1 + t), t = Tanh(c·(x + 0.044715·((x·x)·x))),
//                  c = sqrt(2/π); Tanh of the mode's policy
//   GeluBackward:  dx = dy·(0.5·(1 + t) + ((0.5·x)·(1 − t·t))·(c·(1 + 0.134145·(x·x))))
//                  (native mode: the same functions on vectors in fp64,
//                  kernels/ops/native_math.h, within 1 ulp of the exact value)
//   Dropout:       s = 1 / (1 − p) in T; y = keep ? x·s : +0;
//                  keep(e) = Philox word (seed, step, node, e) ≥ ⌊p·2^32⌋
//                  (the word of stream (key = seed, step, tensor = node) at
//                  index e; common/philox.h); outputs y, keep
//   DropoutBackward: dx = keep ≠ 0 ? dy·s : +0
//   Add:           y = a + b;   AddBackward: da = dy, db = dy
// Parallel over elements only.

#include "kernels/ops/elementwise.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/philox.h"
#include "common/philox_blocks.h"
#include "kernels/ops/certified_math.h"
#include "kernels/ops/op_arith.h"
#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

// out[i] = f(i) for every element, in parallel. Each chunk runs a private
// copy of f, so (with f capturing its pointers by value) no store to out can
// alias what f reads and the loop vectorises; f reads both sides of a
// select unconditionally, so the select is a blend, not a branch that
// mispredicts on every other ReLU or dropout mask value.
template <class T, class F>
void MapElements(const OpContext& ctx, std::int64_t n, T* out, const F& f) {
  ParallelFor(ctx.threads(), n, [&](std::int64_t i0, std::int64_t i1) {
    const F local = f;
    T* const o = out;
    for (std::int64_t i = i0; i < i1; ++i) o[i] = local(i);
  });
}

// The one output y[i] = f(i) (in the policy's T): in place in the fp32
// modes; in rounded mode computed and rounded in pieces (RoundInPieces), so
// a large output (the embedding's gradient accumulation) never exists in
// fp64 at once.
template <class M, class F>
Status MapOutput(const OpContext& ctx, Tensor& y, const F& f) {
  if constexpr (M::kRounded) {
    Tensor* const outputs[] = {&y};
    return RoundInPieces(ctx, outputs, [&](std::size_t, std::int64_t i0, std::int64_t i1, double* dst) {
      MapElements(ctx, i1 - i0, dst, [=](std::int64_t i) { return f(i0 + i); });
    });
  } else {
    MapElements(ctx, y.numel(), y.data(), f);
    return Status::Ok();
  }
}

Status CheckDropoutP(float p) {
  if (!InRange(p, 0.0f, 1.0f) || p == 1.0f) return BadAttribute("dropout p must be in [0, 1)");
  return Status::Ok();
}

std::uint32_t DropThreshold(float p) {
  return static_cast<std::uint32_t>(std::floor(static_cast<double>(p) * 4294967296.0));
}

}  // namespace

Status ReluForward(const OpContext& ctx, const Tensor& x, Tensor& y) {
  VT_TRY(CheckInput(x, "relu x"));
  y.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* xd = x.data();
    MapElements(ctx, x.numel(), yo, [=](std::int64_t i) {
      const T v = static_cast<T>(xd[i]);
      return v > T(0) ? v : (std::isnan(v) ? v : T(0));
    });
    return outs.Commit(ctx);
  });
}

Status ReluBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx) {
  VT_TRY(CheckInput(x, "relu x"));
  VT_TRY(CheckInput(dy, "relu dy"));
  VT_TRY(CheckSameShape(dy, x, "relu dy vs x"));
  dx.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    const float* xd = x.data();
    const float* g = dy.data();
    MapElements(ctx, x.numel(), dxo, [=](std::int64_t i) {
      // dy's bits under a mask (+0 where x ≤ 0 or NaN): GCC kept an fp32
      // test selecting fp64 values as a branch, mispredicted on every other
      // value, and rounded mode's ReLU backward took 15 % of cnn-fashion's
      // rounded step (24× native's).
      using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
      const Bits keep = Bits(0) - static_cast<Bits>(xd[i] > 0.0f);
      return std::bit_cast<T>(std::bit_cast<Bits>(static_cast<T>(g[i])) & keep);
    });
    return outs.Commit(ctx);
  });
}

Status GeluForward(const OpContext& ctx, const Tensor& x, Tensor& y) {
  VT_TRY(CheckInput(x, "gelu x"));
  y.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* xd = x.data();
    if constexpr (std::is_same_v<M, NativeMath>) {
      ParallelFor(ctx.threads(), x.numel(),
                  [&](std::int64_t i0, std::int64_t i1) { nativemath::Gelu(xd + i0, yo + i0, i1 - i0); });
    } else if constexpr (HasTanhArray<M>) {
      // GeluValue with the tanh of a whole range at once (the same bits).
      ParallelFor(ctx.threads(), x.numel(), [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) yo[i] = GeluInner(xd[i]);
        M::TanhArray(yo + i0, yo + i0, i1 - i0);
        for (std::int64_t i = i0; i < i1; ++i) yo[i] = GeluFromTanh(xd[i], yo[i]);
      });
    } else {
      MapElements(ctx, x.numel(), yo, [=](std::int64_t i) { return GeluValue<M, T>(static_cast<T>(xd[i])); });
    }
    return outs.Commit(ctx);
  });
}

Status GeluBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx) {
  VT_TRY(CheckInput(x, "gelu x"));
  VT_TRY(CheckInput(dy, "gelu dy"));
  VT_TRY(CheckSameShape(dy, x, "gelu dy vs x"));
  dx.Resize(x.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    const float* xd = x.data();
    const float* g = dy.data();
    if constexpr (std::is_same_v<M, NativeMath>) {
      ParallelFor(ctx.threads(), x.numel(), [&](std::int64_t i0, std::int64_t i1) {
        nativemath::GeluBackward(g + i0, xd + i0, dxo + i0, i1 - i0);
      });
    } else if constexpr (HasTanhArray<M>) {
      // GeluDerivative with the tanh of a whole range at once.
      ParallelFor(ctx.threads(), x.numel(), [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) dxo[i] = GeluInner(xd[i]);
        M::TanhArray(dxo + i0, dxo + i0, i1 - i0);
        for (std::int64_t i = i0; i < i1; ++i) dxo[i] = g[i] * GeluDerivativeFromTanh(xd[i], dxo[i]);
      });
    } else {
      MapElements(ctx, x.numel(), dxo, [=](std::int64_t i) {
        return static_cast<T>(g[i]) * GeluDerivative<M, T>(static_cast<T>(xd[i]));
      });
    }
    return outs.Commit(ctx);
  });
}

bool DropoutKeep(std::uint64_t seed, std::uint32_t step, std::uint32_t node, std::uint64_t element, float p) {
  return PhiloxWord(PhiloxKeyFromSeed(seed), step, node, element) >= DropThreshold(p);
}

Status DropoutForward(const OpContext& ctx, const Tensor& x, float p, Tensor& y, Tensor& keep) {
  VT_TRY(CheckInput(x, "dropout x"));
  VT_TRY(CheckDropoutP(p));
  const RngAddress& rng = ctx.rng();
  if (rng.step > 0xFFFFFFFFull || rng.node > 0xFFFFFFFFull) {
    return Status::Invalid("bad-rng-address", "dropout needs step and node below 2^32");
  }
  y.Resize(x.shape());
  keep.Resize(x.shape());
  const PhiloxKey key = PhiloxKeyFromSeed(rng.seed);
  const auto step = static_cast<std::uint32_t>(rng.step), node = static_cast<std::uint32_t>(rng.node);
  const std::uint32_t threshold = DropThreshold(p);
  // The mask first (fp32, exact 0/1 in every mode), four elements per Philox
  // block, the blocks generated a batch at a time (common/philox_blocks.h).
  float* kd = keep.data();
  const std::int64_t n = x.numel();
  ParallelFor(ctx.threads(), (n + 3) / 4, [&](std::int64_t b0, std::int64_t b1) {
    constexpr std::int64_t kBatch = 64;
    PhiloxBlock words[kBatch];
    for (std::int64_t batch = b0; batch < b1; batch += kBatch) {
      const std::int64_t count = std::min(kBatch, b1 - batch);
      PhiloxStreamBlocks(key, step, node, static_cast<std::uint64_t>(batch), static_cast<std::size_t>(count),
                         words);
      for (std::int64_t blk = batch; blk < batch + count; ++blk) {
        for (std::int64_t lane = 0; lane < 4 && blk * 4 + lane < n; ++lane) {
          kd[blk * 4 + lane] = words[blk - batch].v[lane] >= threshold ? 1.0f : 0.0f;
        }
      }
    }
  });
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    T* ko = outs.Bind(keep);  // in rounded mode the fp64 buffer of the mask
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    const float* xd = x.data();
    if constexpr (!std::is_same_v<T, float>) {
      for (std::int64_t i = 0; i < n; ++i) ko[i] = static_cast<T>(kd[i]);
    } else {
      (void)ko;
    }
    MapElements(ctx, n, yo, [=](std::int64_t i) {
      const T v = static_cast<T>(xd[i]) * scale;
      return kd[i] != 0.0f ? v : T(0);
    });
    return outs.Commit(ctx);
  });
}

Status DropoutBackward(const OpContext& ctx, const Tensor& dy, const Tensor& keep, float p, Tensor& dx) {
  VT_TRY(CheckInput(dy, "dropout dy"));
  VT_TRY(CheckInput(keep, "dropout keep"));
  VT_TRY(CheckSameShape(dy, keep, "dropout dy vs keep"));
  VT_TRY(CheckDropoutP(p));
  dx.Resize(dy.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    const float* g = dy.data();
    const float* kd = keep.data();
    MapElements(ctx, dy.numel(), dxo, [=](std::int64_t i) {
      const T v = static_cast<T>(g[i]) * scale;
      return kd[i] != 0.0f ? v : T(0);
    });
    return outs.Commit(ctx);
  });
}

Status AddForward(const OpContext& ctx, const Tensor& a, const Tensor& b, Tensor& y) {
  VT_TRY(CheckInput(a, "add a"));
  VT_TRY(CheckInput(b, "add b"));
  VT_TRY(CheckSameShape(a, b, "add a vs b"));
  y.Resize(a.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    const float* ad = a.data();
    const float* bd = b.data();
    return MapOutput<M>(ctx, y,
                        [=](std::int64_t i) { return static_cast<T>(ad[i]) + static_cast<T>(bd[i]); });
  });
}

Status AddBackward(const OpContext& ctx, const Tensor& dy, Tensor& da, Tensor& db) {
  VT_TRY(CheckInput(dy, "add dy"));
  da.Resize(dy.shape());
  db.Resize(dy.shape());
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dao = outs.Bind(da);
    T* dbo = outs.Bind(db);
    const float* g = dy.data();
    MapElements(ctx, dy.numel(), dao, [=](std::int64_t i) { return static_cast<T>(g[i]); });
    MapElements(ctx, dy.numel(), dbo, [=](std::int64_t i) { return static_cast<T>(g[i]); });
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
