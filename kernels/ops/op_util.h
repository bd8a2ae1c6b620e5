#pragma once
// Internal to kernels/ops (not a public header): input validation, the three
// arithmetic policies behind the modes, the fixed reduction tree and the fp64
// output buffers of rounded mode. Every operator is written once as a
// template over a policy M:
//
//   M = NativeMath  T = float   libm, OpenBLAS sgemm
//   M = RepopsMath  T = float   common/detmath.h, GemmRepops (fixed order)
//   M = F64Math     T = double  kernels/f64_math.h (fixed-sequence fp64, no
//                               libm), OpenBLAS dgemm — or the canonical
//                               GemmF64Reference when config.f64_reference
//                               (every replay); the outputs are then rounded
//                               by ctx.RoundOutput
//   M = CertifiedMath T = float kernels/ops/certified_math.h, CertifiedGemm
//                               and the certified reductions (SumOf, MeanOf,
//                               DotOf, …: the correctly rounded exact value,
//                               kernels/certified.h)
//
// so the operation order written in an operator's source is the same in all
// modes; only precision, transcendental functions and the GEMM differ.

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__SSE2__)
#include <immintrin.h>
#endif

#include "common/detmath.h"
#include "common/result.h"
#include "kernels/certified.h"
#include "kernels/f64_math.h"
#include "kernels/matmul.h"
#include "kernels/op_context.h"
#include "kernels/ops/certified_math.h"
#include "kernels/ops/native_math.h"
#include "kernels/ops/repops_math.h"
#include "kernels/parallel.h"
#include "kernels/tensor.h"

namespace vt::kernels::opsdetail {

// ---- limits (protocol constants: an operator rejects anything larger) -------

inline constexpr int kMaxRank = 8;
// Elements of any tensor an operator reads, writes or allocates as scratch.
// INT32_MAX keeps every GEMM dimension and leading dimension inside the
// 32-bit integers of the BLAS interface.
inline constexpr std::int64_t kMaxElements = 2147483647;
// Spatial attributes (kernel, stride, padding) and other small integers.
inline constexpr std::int64_t kMaxSpatialAttr = std::int64_t{1} << 20;

// ---- stable reject reasons ----------------------------------------------------

inline Status ShapeMismatch(std::string detail) { return Status::Invalid("shape-mismatch", detail); }
inline Status BadAttribute(std::string detail) { return Status::Invalid("bad-attribute", detail); }
inline Status TooLarge(std::string detail) { return Status::Invalid("too-large", detail); }
inline Status BadIndex(std::string detail) { return Status::Invalid("bad-index", detail); }

// Every tensor an operator reads: rank ≤ kMaxRank, every dimension ≥ 1 (empty
// tensors are rejected: no training step has one, and it keeps every size
// computation below free of division by zero and overflow), the product of
// the dimensions ≤ kMaxElements and equal to the number of stored values.
inline Status CheckInput(const Tensor& t, std::string_view name) {
  if (t.rank() > kMaxRank) return ShapeMismatch(std::string(name) + ": rank above 8");
  std::int64_t n = 1;
  for (std::int64_t d : t.shape()) {
    if (d < 1) return Status::Invalid("empty-tensor", std::string(name) + " has a dimension < 1: " + ShapeToString(t.shape()));
    if (d > kMaxElements || n > kMaxElements / d) return TooLarge(std::string(name) + ": " + ShapeToString(t.shape()));
    n *= d;
  }
  if (n != t.numel()) return ShapeMismatch(std::string(name) + ": value count differs from its shape");
  return Status::Ok();
}

// Checked product of non-negative factors; false on overflow past kMaxElements.
inline bool ProductWithin(std::initializer_list<std::int64_t> factors, std::int64_t* out) {
  std::int64_t n = 1;
  for (std::int64_t f : factors) {
    if (f < 0) return false;
    if (f != 0 && n > kMaxElements / f) return false;
    n *= f;
  }
  *out = n;
  return true;
}

// An output or scratch shape: every dimension ≥ 1 and at most kMaxElements in all.
inline Status CheckOutputShape(const Shape& shape, std::string_view name) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 1) return ShapeMismatch(std::string(name) + ": empty output " + ShapeToString(shape));
    if (d > kMaxElements || n > kMaxElements / d) return TooLarge(std::string(name) + ": " + ShapeToString(shape));
    n *= d;
  }
  return Status::Ok();
}

// Product of shape[begin, end) (inputs are validated, so it cannot overflow).
inline std::int64_t Prod(const Shape& shape, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t i = begin; i < end && i < shape.size(); ++i) n *= shape[i];
  return n;
}

inline Status CheckSameShape(const Tensor& a, const Tensor& b, std::string_view what) {
  if (a.shape() != b.shape()) {
    return ShapeMismatch(std::string(what) + ": " + ShapeToString(a.shape()) + " vs " + ShapeToString(b.shape()));
  }
  return Status::Ok();
}

inline Status CheckShapeIs(const Tensor& t, const Shape& want, std::string_view name) {
  if (t.shape() != want) {
    return ShapeMismatch(std::string(name) + " must be " + ShapeToString(want) + ", got " + ShapeToString(t.shape()));
  }
  return Status::Ok();
}

// A finite float attribute in [lo, hi] (NaN fails every comparison).
inline bool InRange(float v, float lo, float hi) { return v >= lo && v <= hi; }

// ---- policies -------------------------------------------------------------------

struct NativeMath {
  using T = float;
  static constexpr bool kRounded = false;
  static constexpr bool kFixedOrder = false;
  static constexpr bool kCertified = false;
  static float Exp(float x) { return std::exp(x); }
  static float Log(float x) { return std::log(x); }
  static float Tanh(float x) { return std::tanh(x); }
  static float Cos(float x) { return std::cos(x); }
  static float Sqrt(float x) { return std::sqrt(x); }
  // exp of the exact difference, on vectors (kernels/ops/native_math.h).
  static void ExpShifted(const float* in, float m, float* out, std::int64_t n) {
    nativemath::ExpShifted(in, m, out, n);
  }
  static void Gemm(const ExecConfig& c, const GemmArgs& g, const float* a, const float* b, float* out) {
    GemmNative(c, g, a, b, out);
  }
};

struct RepopsMath {
  using T = float;
  static constexpr bool kRounded = false;
  static constexpr bool kFixedOrder = true;
  static constexpr bool kCertified = false;
  static float Exp(float x) { return detmath::Exp(x); }
  static float Log(float x) { return detmath::Log(x); }
  static float Tanh(float x) { return detmath::Tanh(x); }
  static float Cos(float x) { return detmath::Cos(x); }
  static float Sqrt(float x) { return detmath::Sqrt(x); }  // IEEE correctly rounded
  // Exp(in[i] − m) and Tanh element by element, on vectors (the same bits).
  static void ExpShifted(const float* in, float m, float* out, std::int64_t n) {
    repopsmath::ExpShifted(in, m, out, n);
  }
  static void TanhArray(const float* x, float* out, std::int64_t n) { repopsmath::TanhArray(x, out, n); }
  static void Gemm(const ExecConfig& c, const GemmArgs& g, const float* a, const float* b, float* out) {
    GemmRepops(c, g, a, b, out);
  }
};

struct F64Math {
  using T = double;
  static constexpr bool kRounded = true;
  static constexpr bool kFixedOrder = false;
  static constexpr bool kCertified = false;
  // Never libm: its last bit differs between vendors (kernels/f64_math.h).
  static double Exp(double x) { return f64::Exp(x); }
  static double Log(double x) { return f64::Log(x); }
  static double Tanh(double x) { return f64::Tanh(x); }
  static double Cos(double x) { return f64::Cos(x); }
  static double Sqrt(double x) { return std::sqrt(x); }  // IEEE correctly rounded
  template <class In>
  static void ExpShifted(const In* in, double m, double* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = Exp(static_cast<double>(in[i]) - m);
  }
  // On fp64 operands, or fp32 tensors widened by the GEMM itself (no copies).
  static void Gemm(const ExecConfig& c, const GemmArgs& g, const double* a, const double* b, double* out) {
    GemmF64Rounded(c, g, a, b, out);
  }
  static void Gemm(const ExecConfig& c, const GemmArgs& g, const float* a, const float* b, double* out) {
    GemmF64Rounded(c, g, a, b, out);
  }
};

// Certified mode (docs/kernels.md "Certified mode"): fp32 values; every GEMM
// output and every reduction is the correctly rounded exact value
// (kernels/certified.h), element-wise code is the same IEEE fp32 sequence as
// repops, transcendentals come from the one file kernels/ops/certified_math.h.
struct CertifiedMath {
  using T = float;
  static constexpr bool kRounded = false;
  static constexpr bool kFixedOrder = false;
  static constexpr bool kCertified = true;
  static float Exp(float x) { return certmath::Exp(x); }
  static float Log(float x) { return certmath::Log(x); }
  static float Tanh(float x) { return certmath::Tanh(x); }
  static float Cos(float x) { return certmath::Cos(x); }
  static float Sqrt(float x) { return detmath::Sqrt(x); }  // IEEE correctly rounded
  // The differences, then Exp and Tanh of a whole array (certmath's array
  // forms: the same bits as Exp and Tanh per element).
  static void ExpShifted(const float* in, float m, float* out, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] - m;
    certmath::ExpArray(out, out, n);
  }
  static void TanhArray(const float* x, float* out, std::int64_t n) { certmath::TanhArray(x, out, n); }
  // g.accumulate: c's current values are an exact term of each output.
  static void Gemm(const ExecConfig& c, const GemmArgs& g, const float* a, const float* b, float* out) {
    CertifiedGemm(c, g, a, b, out);
  }
};

// Each policy's M::ExpShifted(in, m, out, n) is out[i] = M::Exp(T(in[i]) − m)
// for i < n (`in` may be `out`), element by element or on vectors with the
// same bits — in every mode but native, which evaluates exp of the exact
// difference (kernels/ops/native_math.h).
//
// Modes whose Tanh has an array form with the bits of M::Tanh per element.
template <class M>
concept HasTanhArray = requires(const float* x, float* out, std::int64_t n) {
  M::TanhArray(x, out, n);
};

// Runs f(NativeMath{}) / f(RepopsMath{}) / f(F64Math{}) / f(CertifiedMath{})
// for ctx's mode.
template <class F>
Status DispatchMode(const OpContext& ctx, F&& f) {
  switch (ctx.mode()) {
    case Mode::kNative:
      return f(NativeMath{});
    case Mode::kRepops:
      return f(RepopsMath{});
    case Mode::kRounded:
      if (ctx.rounding() == nullptr) {
        return Status::Error("rounding-state-missing", "rounded mode needs a NodeRounding in the OpContext");
      }
      return f(F64Math{});
    case Mode::kCertified:
      return f(CertifiedMath{});
  }
  return Status::Invalid("bad-mode", "unknown execution mode");
}

inline GemmArgs MakeGemm(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a, std::int64_t lda,
                         bool trans_b, std::int64_t ldb, std::int64_t ldc, bool accumulate = false) {
  GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.accumulate = accumulate;
  return g;
}

// Whether GEMMs of policy M may run inside ParallelFor bodies (one thread
// each). Only the repops GEMM is ours; OpenBLAS's thread count is global, so
// native and fp64 GEMMs run one after the other with the job's threads.
template <class M>
inline constexpr bool kGemmInsideParallelFor = std::is_same_v<M, RepopsMath>;

// Runs fn(config, slot, i) for every i in [0, count), where each i does
// independent work (typically GEMMs on disjoint outputs). Repops spreads the
// items over ItemSlots() slots run in parallel, with single-threaded GEMMs
// inside; otherwise (and always for the OpenBLAS policies, whose thread count
// is process-global) one slot runs the items in order with the job's threads
// inside each GEMM. Results never depend on the choice. Callers allocate
// per-slot scratch before the call (`slot` < ItemSlots()), so no allocation
// happens inside a pool worker.
inline constexpr std::int64_t kSlotScratchBudget = std::int64_t{1} << 26;  // elements, all slots together

template <class M>
int ItemSlots(const OpContext& ctx, std::int64_t count, std::int64_t scratch_per_slot = 0) {
  if constexpr (kGemmInsideParallelFor<M>) {
    std::int64_t slots = std::min(ctx.threads(), 64);
    if (scratch_per_slot > 0) slots = std::min(slots, kSlotScratchBudget / scratch_per_slot);
    if (slots > 1 && count >= slots) return static_cast<int>(slots);
  }
  (void)ctx;
  (void)count;
  (void)scratch_per_slot;
  return 1;
}

template <class M, class Fn>
void ForEachItem(const OpContext& ctx, std::int64_t count, const Fn& fn, std::int64_t scratch_per_slot = 0) {
  const int slots = ItemSlots<M>(ctx, count, scratch_per_slot);
  if (slots == 1) {
    for (std::int64_t i = 0; i < count; ++i) fn(ctx.config(), 0, i);
    return;
  }
  ExecConfig one = ctx.config();
  one.threads = 1;
  ParallelFor(slots, slots, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      for (std::int64_t i = count * s / slots; i < count * (s + 1) / slots; ++i) fn(one, static_cast<int>(s), i);
    }
  });
}

// The GEMM operands of a policy: fp32 tensors are used in place, rounded mode
// works on fp64 copies.
template <class T>
const T* Operand(const Tensor& t, std::vector<T>& scratch) {
  if constexpr (std::is_same_v<T, float>) {
    (void)scratch;
    return t.data();
  } else {
    scratch.assign(t.values().begin(), t.values().end());
    return scratch.data();
  }
}

// A ReferenceFn from the reference value of one element, `value(i)`,
// evaluated for each asked-for element, the elements split over threads
// (for references that are not GEMM elements alone, e.g. conv2d's im2col
// dot read straight from x).
template <class Value>
ReferenceFn EachValue(int threads, Value value) {
  return [threads, value](std::span<const std::size_t> positions, std::span<double> values) {
    ParallelFor(threads, static_cast<std::int64_t>(positions.size()), [&](std::int64_t k0, std::int64_t k1) {
      for (std::int64_t k = k0; k < k1; ++k) values[k] = value(positions[k]);
    });
  };
}

// TEST ONLY: rounded mode's Bind fills each fp64 buffer with
// kUnwrittenBits and Commit fails with "output-value-unwritten" where one
// is left, so a test proves that every operator writes every value (Bind
// does not zero). The pattern is a NaN that no fp32 input or IEEE
// operation makes: its low 29 payload bits are not all zero, which a
// float → double conversion leaves zero, and arithmetic only passes an
// input NaN's payload on or makes the default NaN.
inline std::atomic<bool> g_check_unwritten_for_testing{false};
inline constexpr std::uint64_t kUnwrittenBits = 0x7FF8DEADBEEF0001ull;
inline void SetUnwrittenCheckForTesting(bool on) { g_check_unwritten_for_testing.store(on); }
// Under the test switch: `values` filled with the pattern (Prepare), then
// "output-value-unwritten" where one is left (Check); nothing otherwise.
inline void PrepareUnwrittenCheck(std::span<double> values) {
  if (g_check_unwritten_for_testing.load(std::memory_order_relaxed)) {
    std::fill(values.begin(), values.end(), std::bit_cast<double>(kUnwrittenBits));
  }
}
inline Status CheckAllWritten(std::span<const double> values) {
  if (!g_check_unwritten_for_testing.load(std::memory_order_relaxed)) return Status::Ok();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::bit_cast<std::uint64_t>(values[i]) == kUnwrittenBits) {
      return Status::Error(
          "output-value-unwritten",
          "value " + std::to_string(i) + " of " + std::to_string(values.size()) + " was never written");
    }
  }
  return Status::Ok();
}

// Output buffers of one operator invocation. In the fp32 modes an output is
// written in place; in rounded mode into an fp64 buffer that Commit() rounds
// into the tensor through ctx.RoundOutput, in Bind order — which is the
// operator's documented output order (log positions run over the outputs
// concatenated in that order). Rounded mode: an output whose values come from
// a vendor GEMM also has a β buffer (Slack), the per-value error bound that
// widens its logging region (kernels/rounding.h); outputs without one are
// computed by our own fixed-order loops (β = 0).
template <class T>
class Outputs {
 public:
  // The buffer an operator writes `t`'s values into: t's own in the fp32
  // modes, a fresh fp64 one in rounded mode, rounded into t by Commit. Its
  // contents are unspecified (rounded mode: uninitialised — an operator
  // writes every value; zeroing the fp64 buffers cost more than the
  // optimizer's arithmetic).
  T* Bind(Tensor& t) {
    if constexpr (std::is_same_v<T, float>) {
      return t.data();
    } else {
      const auto n = static_cast<std::size_t>(t.numel());
      Bound& b = m_bound.emplace_back(Bound{&t, std::make_unique_for_overwrite<double[]>(n), n, {}, {}});
      PrepareUnwrittenCheck({b.storage.get(), n});
      return b.storage.get();
    }
  }
  // Like Bind, but the buffer starts zeroed in every mode (scatter-add targets).
  T* BindZeroed(Tensor& t) {
    T* p = Bind(t);
    std::fill_n(p, t.numel(), T(0));
    return p;
  }
  // Rounded mode: the β buffer (zeroed on first use, same layout) of the
  // output whose Bind buffer is `buffer`; null in the fp32 modes.
  double* Slack(const T* buffer) {
    if constexpr (std::is_same_v<T, float>) {
      (void)buffer;
      return nullptr;
    } else {
      for (Bound& b : m_bound) {
        if (b.storage.get() != buffer) continue;
        if (b.slack.empty()) b.slack.assign(b.size, 0.0);
        return b.slack.data();
      }
      assert(false && "Slack of an unbound buffer");
      return nullptr;
    }
  }
  // Rounded mode: `fn` (a ReferenceFn, kernels/rounding.h) gives the
  // canonical reference values of elements of the output whose Bind buffer
  // is `buffer` — GemmF64ReferenceElements and the operator's own fp64 steps
  // after it, the bits a replay computes there. A trainer on its vendor
  // GEMM rounds the values past what a log entry repairs from it
  // (NodeRounding::Round); without one RunOp records the whole node again.
  // `fn` runs after the operator's work, on the calling thread: reads
  // only. Nothing in the fp32 modes.
  template <class Fn>
  void SetReference(const T* buffer, Fn fn) {
    if constexpr (std::is_same_v<T, double>) {
      for (Bound& b : m_bound) {
        if (b.storage.get() == buffer) b.reference = std::move(fn);
      }
    } else {
      (void)buffer, (void)fn;
    }
  }
  Status Commit(const OpContext& ctx) {
    if constexpr (std::is_same_v<T, double>) {
      for (Bound& b : m_bound) {
        VT_TRY(CheckAllWritten({b.storage.get(), b.size}));
        VT_TRY(ctx.RoundOutput(std::span<const double>(b.storage.get(), b.size), b.tensor->values(), b.slack,
                               b.reference ? &b.reference : nullptr));
      }
    } else {
      (void)ctx;
    }
    return Status::Ok();
  }

 private:
  struct Bound {
    Tensor* tensor;
    std::unique_ptr<double[]> storage;  // the exact values
    std::size_t size;
    std::vector<double> slack;  // empty: β = 0
    ReferenceFn reference;      // empty: none
  };
  std::deque<Bound> m_bound;  // deque: stable addresses
};

// ---- rounded mode in pieces ----------------------------------------------------------
//
// Outputs whose fp64 values would be large are computed and rounded in
// pieces: each piece goes through ctx.RoundOutput (which continues the
// node's positions) before the next is computed. Every value, β, reference
// and log entry is the one a single piece would give; only the memory
// differs — a GPT-2 vocabulary's logits, or AdamW's update of its
// embedding, never exist in fp64 at once (docs/kernels.md, "Rounded mode's
// memory").
struct RoundPieces {
  std::int64_t values;         // element-wise outputs (2^16 cost AdamW 1.9x in round trips to the threads)
  std::int64_t row_values;     // outputs made by rows (GEMMs, row softmaxes): about this many values,
  std::int64_t gemm_min_rows;  // but a GEMM piece has at least this many rows (each packs op(B) again)
};
inline constexpr RoundPieces kRoundPieces{std::int64_t{1} << 20, std::int64_t{1} << 22, 256};
// TEST ONLY: other piece sizes (each ≥ 1), so that small tensors are
// rounded in many pieces; nullopt restores kRoundPieces. Set it while no
// operator runs.
void SetRoundPiecesForTesting(std::optional<RoundPieces> pieces);
RoundPieces RoundPiecesNow();

// fp64 values an operator writes whole before they are read (its outputs
// before rounding, their β): grown to fit, never zero-filled — a fill of
// memory about to be overwritten cost 4 % of mlp-fashion's rounded step.
// PrepareUnwrittenCheck and CheckAllWritten hold the operators to "whole"
// in the tests.
class F64Scratch {
 public:
  double* Reserve(std::size_t n) {
    if (n > m_size) {
      m_data = std::make_unique_for_overwrite<double[]>(n);
      m_size = n;
    }
    return m_data.get();
  }

 private:
  std::unique_ptr<double[]> m_data;
  std::size_t m_size = 0;
};

// Rounded mode: `out` in consecutive pieces of `piece` values, each through
// `buffer` (grown to fit): fill(i0, i1, dst) writes values [i0, i1) to
// dst[0, i1 − i0), then they are rounded (β = 0, no reference function).
template <class Fill>
Status RoundOutputInPieces(const OpContext& ctx, Tensor& out, std::int64_t piece, F64Scratch& buffer,
                           const Fill& fill) {
  const std::int64_t n = out.numel();
  double* const data =
      buffer.Reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, std::min(piece, n))));
  for (std::int64_t i0 = 0; i0 < n; i0 += piece) {
    const auto size = static_cast<std::size_t>(std::min(piece, n - i0));
    const std::span<double> values(data, size);
    PrepareUnwrittenCheck(values);
    fill(i0, i0 + static_cast<std::int64_t>(size), values.data());
    VT_TRY(CheckAllWritten(values));
    VT_TRY(ctx.RoundOutput(values, out.values().subspan(static_cast<std::size_t>(i0), size)));
  }
  return Status::Ok();
}

// Rounded mode, element-wise outputs in order: fill(o, i0, i1, dst) writes
// output o's fp64 values [i0, i1) to dst[0, i1 − i0) (β = 0: fixed-order
// fp64 arithmetic, no reference function).
template <class Fill>
Status RoundInPieces(const OpContext& ctx, std::span<Tensor* const> outputs, const Fill& fill) {
  F64Scratch buffer;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    VT_TRY(RoundOutputInPieces(ctx, *outputs[o], RoundPiecesNow().values, buffer,
                               [&](std::int64_t i0, std::int64_t i1, double* dst) { fill(o, i0, i1, dst); }));
  }
  return Status::Ok();
}

// Rounded mode, one output made by rows of `row_len` values, in order:
// fill(r0, r1, dst) writes rows [r0, r1) to dst (β = 0, no reference).
template <class FillRows>
Status RoundRowsInPieces(const OpContext& ctx, Tensor& out, std::int64_t row_len, const FillRows& fill) {
  if (row_len <= 0 || out.numel() == 0) return ctx.RoundOutput({}, out.values());
  const std::int64_t rows_per = std::max<std::int64_t>(1, RoundPiecesNow().row_values / row_len);
  F64Scratch buffer;
  return RoundOutputInPieces(
      ctx, out, rows_per * row_len, buffer,
      [&](std::int64_t i0, std::int64_t i1, double* dst) { fill(i0 / row_len, i1 / row_len, dst); });
}

// Rounded mode: out (m × n, dense) = op(A)·op(B) (+ bias[j] per column, in
// fp64 after the sum), computed (M::Gemm of F64Math), bounded (GemmSlackF64's
// β: the norms once, for all rows) and rounded with its reference function
// (GemmReference's elements, then the bias) in pieces of whole rows.
// g.accumulate is false and g.ldc = g.n.
Status RoundGemmByRows(const OpContext& ctx, const GemmArgs& g, const float* a, const float* b,
                       const float* bias, std::span<float> out);

// Rounded mode: β of policy M's GEMM outputs (kernels/matmul.h GemmSlackF64)
// written to `slack` (ldc layout); nothing in the fp32 modes.
// `bias` (fp32, may be null): added afterwards, per column (n values) or per row (m).
template <class M, class In>
void GemmSlack(const GemmArgs& g, const In* a, const In* b, double* slack, const float* bias = nullptr,
               BiasPer per = BiasPer::kColumn) {
  if constexpr (M::kRounded) {
    if (bias == nullptr) {
      GemmSlackF64(g, a, b, slack);
    } else {
      const std::vector<double> b64(bias, bias + (per == BiasPer::kRow ? g.m : g.n));
      GemmSlackF64(g, a, b, slack, b64.data(), per);
    }
  } else {
    (void)g, (void)a, (void)b, (void)slack, (void)bias, (void)per;
  }
}

// ---- the fixed reduction tree ------------------------------------------------------
//
// TreeSum(n, get) is THE reduction order of every repops reduction (and the
// fp64 order of rounded mode): the terms get(0..n-1) are cut into blocks of
// kTreeBlock consecutive terms; each block is summed left to right starting
// from +0; the block sums are combined pairwise by halving the block list,
// the left half taking the extra block when the count is odd:
//   S(blocks[0..b)) = b == 1 ? blocks[0] : S(first ⌈b/2⌉) + S(the rest).
// The tree depends only on n, never on the thread count.

inline constexpr std::int64_t kTreeBlock = 64;

template <class T>
T CombinePairwise(const T* s, std::int64_t count) {
  if (count <= 0) return T(0);
  if (count == 1) return s[0];
  const std::int64_t h = (count + 1) / 2;
  return CombinePairwise(s, h) + CombinePairwise(s + h, count - h);
}

// CombinePairwise over s[0], s[stride], s[2·stride], …
template <class T>
T CombineStrided(const T* s, std::int64_t stride, std::int64_t count) {
  if (count <= 0) return T(0);
  if (count == 1) return s[0];
  const std::int64_t h = (count + 1) / 2;
  return CombineStrided(s, stride, h) + CombineStrided(s + h * stride, stride, count - h);
}

// acc + term with acc as the instruction's first operand. Where both are
// NaN, x86 returns the first operand's NaN, and the tree's definition takes
// the sum's; the compiler treats + as commutative and may emit `term + acc`
// (it did, once BlockSums' chains lived in registers:
// TreeSum.EqualsTheDefinitionWithInfinitiesAndNaNs caught it), so the order
// is written in the instruction itself: scalars, and vectors whose lane c
// is chain c's sum. VT_ADD_IN_ORDER is the instruction in the encoding of
// the code around it (VEX where AVX is on, so no SSE/AVX transition),
// acc %0 and the term %1 ("x": xmm0–15, which both encode).
template <class T>
inline T AddToSum(T acc, T term) {
  return acc + term;  // (other CPUs: no order is promised there)
}
#if defined(__x86_64__) && defined(__SSE2__)
#if defined(__AVX__)
#define VT_ADD_IN_ORDER(op) "v" op " %1, %0, %0"
#else
#define VT_ADD_IN_ORDER(op) op " %1, %0"
#endif
inline float AddToSum(float acc, float term) {
  asm(VT_ADD_IN_ORDER("addss") : "+x"(acc) : "xm"(term));
  return acc;
}
inline double AddToSum(double acc, double term) {
  asm(VT_ADD_IN_ORDER("addsd") : "+x"(acc) : "xm"(term));
  return acc;
}
inline __m128 AddToSum(__m128 acc, __m128 term) {
  asm(VT_ADD_IN_ORDER("addps") : "+x"(acc) : "x"(term));
  return acc;
}
inline __m128d AddToSum(__m128d acc, __m128d term) {
  asm(VT_ADD_IN_ORDER("addpd") : "+x"(acc) : "x"(term));
  return acc;
}
#undef VT_ADD_IN_ORDER
#endif

// The block sums of get(begin .. begin+n): sums[b] = the terms of block b
// added left to right from +0. One block's sum is a chain of dependent adds
// (latency-bound), so eight blocks are summed side by side, one chain per
// vector lane, and their adds overlap in the pipeline. Every block still
// sees exactly its own sequence. (With the chains in a plain array, GCC
// kept them on the stack — a load and a store per term — and batch norm's
// statistics took 14 % of cnn-fashion's repops step.)
inline constexpr int kBlockChains = 8;

// Eight chains: sums[c] = block c's sum, block c's term i = term(c, i).
template <class T, class Term>
void EightChains(const Term& term, T* sums) {
#if defined(__x86_64__) && defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (std::int64_t i = 0; i < kTreeBlock; ++i) {
      const __m128 tlo = _mm_setr_ps(term(0, i), term(1, i), term(2, i), term(3, i));
      const __m128 thi = _mm_setr_ps(term(4, i), term(5, i), term(6, i), term(7, i));
      lo = AddToSum(lo, tlo);
      hi = AddToSum(hi, thi);
    }
    _mm_storeu_ps(sums, lo);
    _mm_storeu_ps(sums + 4, hi);
    return;
  } else if constexpr (std::is_same_v<T, double>) {
    __m128d acc[4] = {_mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd(), _mm_setzero_pd()};
    for (std::int64_t i = 0; i < kTreeBlock; ++i) {
      const __m128d t0 = _mm_setr_pd(term(0, i), term(1, i)), t1 = _mm_setr_pd(term(2, i), term(3, i));
      const __m128d t2 = _mm_setr_pd(term(4, i), term(5, i)), t3 = _mm_setr_pd(term(6, i), term(7, i));
      acc[0] = AddToSum(acc[0], t0);
      acc[1] = AddToSum(acc[1], t1);
      acc[2] = AddToSum(acc[2], t2);
      acc[3] = AddToSum(acc[3], t3);
    }
    for (int v = 0; v < 4; ++v) _mm_storeu_pd(sums + 2 * v, acc[v]);
    return;
  }
#endif
  T acc[kBlockChains] = {};
  for (std::int64_t i = 0; i < kTreeBlock; ++i) {
    for (int c = 0; c < kBlockChains; ++c) acc[c] = AddToSum(acc[c], term(c, i));
  }
  std::copy(acc, acc + kBlockChains, sums);
}

template <class T, class Get>
void BlockSums(std::int64_t begin, std::int64_t n, const Get& get, T* sums) {
  const std::int64_t full = n / kTreeBlock, blocks = (n + kTreeBlock - 1) / kTreeBlock;
  std::int64_t b = 0;
  for (; b + kBlockChains <= full; b += kBlockChains) {
    const std::int64_t base = begin + b * kTreeBlock;
    EightChains<T>(
        [&](int chain, std::int64_t i) { return static_cast<T>(get(base + chain * kTreeBlock + i)); },
        sums + b);
  }
  for (; b < blocks; ++b) {
    const std::int64_t first = begin + b * kTreeBlock, len = std::min(kTreeBlock, n - b * kTreeBlock);
    T acc = T(0);
    for (std::int64_t i = 0; i < len; ++i) acc = AddToSum(acc, static_cast<T>(get(first + i)));
    sums[b] = acc;
  }
}

// Ranges of up to this many blocks have their block sums computed at once
// (on the stack) and combined by CombinePairwise, which halves the block
// list exactly as TreeSumRange's recursion does.
inline constexpr std::int64_t kTreeStackBlocks = 64;

template <class T, class Get>
T TreeSumRange(std::int64_t begin, std::int64_t n, const Get& get) {
  const std::int64_t blocks = (n + kTreeBlock - 1) / kTreeBlock;
  if (blocks <= kTreeStackBlocks) {  // one block (or none) included: CombinePairwise returns it (or +0)
    T sums[kTreeStackBlocks];
    BlockSums<T>(begin, n, get, sums);
    return CombinePairwise(sums, blocks);
  }
  const std::int64_t left = (blocks + 1) / 2 * kTreeBlock;
  return TreeSumRange<T>(begin, left, get) + TreeSumRange<T>(begin + left, n - left, get);
}

template <class T, class Get>
T TreeSum(std::int64_t n, const Get& get) {
  return TreeSumRange<T>(0, n, get);
}

// The same value as TreeSum, with the block sums computed in parallel.
template <class T, class Get>
T ParallelTreeSum(int threads, std::int64_t n, const Get& get) {
  if (n <= kTreeBlock * 8 || threads <= 1) return TreeSum<T>(n, get);
  const std::int64_t blocks = (n + kTreeBlock - 1) / kTreeBlock;
  std::vector<T> sums(static_cast<std::size_t>(blocks));
  ParallelFor(threads, blocks, [&](std::int64_t b0, std::int64_t b1) {
    const std::int64_t begin = b0 * kTreeBlock;
    BlockSums<T>(begin, std::min(b1 * kTreeBlock, n) - begin, get, sums.data() + b0);
  });
  return CombinePairwise(sums.data(), blocks);
}

// Per-column TreeSum over the rows of an R×C matrix given by get(r, c):
// out[c] = TreeSum(R, r ↦ get(r, c)), computed block-row by block-row so the
// inner loop runs along contiguous columns.
template <class T, class Get>
void ColumnTreeSum(int threads, std::int64_t rows, std::int64_t cols, const Get& get, T* out) {
  const std::int64_t blocks = (rows + kTreeBlock - 1) / kTreeBlock;
  // Allocated here, not in the parallel body: an allocation failure must
  // surface as std::bad_alloc in the calling thread (RunOp turns it into a
  // Status), never inside a pool worker.
  std::vector<T> sums(static_cast<std::size_t>(blocks * cols));
  ParallelFor(threads, cols, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      T* acc = sums.data() + b * cols;
      for (std::int64_t c = c0; c < c1; ++c) acc[c] = T(0);
      const std::int64_t r_end = std::min(rows, (b + 1) * kTreeBlock);
      for (std::int64_t r = b * kTreeBlock; r < r_end; ++r) {
        for (std::int64_t c = c0; c < c1; ++c) acc[c] = acc[c] + static_cast<T>(get(r, c));
      }
    }
    for (std::int64_t c = c0; c < c1; ++c) {
      // CombinePairwise over column c's block sums (stride cols).
      out[c] = CombineStrided(sums.data() + c, cols, blocks);
    }
  });
}

// x [N, C, L] as [C, N·L]: row c holds channel c's values in (n, p) order —
// the term order of every per-channel reduction (batch norm's statistics, a
// convolution's bias gradient) — so those reductions read one contiguous
// row instead of dividing each term's index by L; for a convolution's weight
// gradient the whole copy is a GEMM operand (operators that need one
// channel at a time take ForEachChannelRow below). Allocated here, in the
// calling thread (see ColumnTreeSum), and not zero-filled: every value is
// copied in (the fill was 1.5 % of cnn-fashion's native step).
// Channel c of x [N, C, L] into row[0, N·L), in (n, p) order.
inline void GatherChannel(const float* x, std::int64_t nb, std::int64_t channels, std::int64_t len,
                          std::int64_t c, float* row) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float* src = x + (i * channels + c) * len;
    std::copy(src, src + len, row + i * len);
  }
}

inline std::unique_ptr<float[]> ChannelMajor(int threads, const float* x, std::int64_t nb,
                                             std::int64_t channels, std::int64_t len) {
  auto rows = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(nb * channels * len));
  ParallelFor(threads, channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) GatherChannel(x, nb, channels, len, c, rows.get() + c * nb * len);
  });
  return rows;
}

// Calls fn(c, rows) for every channel c of the [N, C, L] tensors `xs`, where
// rows[i] is xs[i]'s channel c in (n, p) order — ChannelMajor's row c, for
// operators that read one channel at a time. Each is gathered just before
// fn, into a buffer of the calling slot that stays in L1/L2; ChannelMajor's
// whole copies went out to L3 and were read back from there (batch norm's
// two: 5 % of cnn-fashion's native step). Each of up to `threads` slots
// takes a contiguous range of channels; the buffers are allocated here, in
// the calling thread (see ColumnTreeSum).
template <std::size_t kInputs, class Fn>
void ForEachChannelRow(int threads, const std::array<const float*, kInputs>& xs, std::int64_t nb,
                       std::int64_t channels, std::int64_t len, const Fn& fn) {
  const std::int64_t n = nb * len, per_slot = std::ssize(xs) * n;
  const std::int64_t slots = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(channels, 1));
  const auto buffers = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(slots * per_slot));
  ParallelFor(static_cast<int>(slots), slots, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      std::array<const float*, kInputs> rows;
      for (std::int64_t c = channels * s / slots; c < channels * (s + 1) / slots; ++c) {
        for (std::size_t k = 0; k < kInputs; ++k) {
          float* row = buffers.get() + s * per_slot + static_cast<std::int64_t>(k) * n;
          GatherChannel(xs[k], nb, channels, len, c, row);
          rows[k] = row;
        }
        fn(c, rows);
      }
    }
  });
}

// ---- the reductions of a policy ------------------------------------------------------
//
// Operators write their reductions through these, so one source serves every
// mode: the fixed tree in native/repops/rounded (exactly the expression
// TreeSum(...) [/ n] they replace), the correctly rounded exact value in
// certified mode (kernels/certified.h). Getters return T values; products are
// given as two getters so that certified mode sums the exact products.

template <class M, class Get>
typename M::T SumOf(std::int64_t n, const Get& get) {
  if constexpr (M::kCertified) {
    return CertifiedSum(n, get);
  } else {
    return TreeSum<typename M::T>(n, get);
  }
}

// (Σ get) / n
template <class M, class Get>
typename M::T MeanOf(std::int64_t n, const Get& get) {
  using T = typename M::T;
  if constexpr (M::kCertified) {
    return CertifiedMean(n, get);
  } else {
    return TreeSum<T>(n, get) / static_cast<T>(n);
  }
}

// Σ ga·gb
template <class M, class GA, class GB>
typename M::T DotOf(std::int64_t n, const GA& ga, const GB& gb) {
  using T = typename M::T;
  if constexpr (M::kCertified) {
    return CertifiedDot(n, ga, gb);
  } else {
    return TreeSum<T>(n, [&](std::int64_t i) { return ga(i) * gb(i); });
  }
}

// (Σ ga·gb) / divisor
template <class M, class GA, class GB>
typename M::T MeanDotOf(std::int64_t n, const GA& ga, const GB& gb, std::int64_t divisor) {
  using T = typename M::T;
  if constexpr (M::kCertified) {
    return CertifiedMeanDot(n, ga, gb, divisor);
  } else {
    return TreeSum<T>(n, [&](std::int64_t i) { return ga(i) * gb(i); }) / static_cast<T>(divisor);
  }
}

// Certified column sums (kind kSum, term(r, c) an fp32 value) or dots (kDot,
// term an exact product of two): every column's fp64 sum and Σ|term| in one
// pass in row order over all columns at once (a column at a time reads
// memory a row apart, and its chains cannot be vectorised across columns),
// each certified by the bound (CertifySum: any order is within it);
// a column the bound leaves open is reduced again on its own by `alone`
// (CertifiedSum or CertifiedDot: the exactness test, then the exact path),
// which counts it. Under the test-only shuffled order (F64ShuffleSeed) every
// column is `alone`'s, whose fast path then sums in a random order.
template <class Term, class Alone>
void CertifiedColumns(int threads, std::int64_t rows, std::int64_t cols, CertKind kind, const Term& term,
                      const Alone& alone, float* out) {
  if (F64ShuffleSeed() != 0) {
    ParallelFor(threads, cols, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) out[c] = alone(c);
    });
    return;
  }
  std::vector<double> sum(static_cast<std::size_t>(cols), 0.0), abs_sum(static_cast<std::size_t>(cols), 0.0);
  std::atomic<std::int64_t> decided{0};
  ParallelFor(threads, cols, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = c0; c < c1; ++c) {
        const double t = term(r, c);
        sum[static_cast<std::size_t>(c)] += t;
        abs_sum[static_cast<std::size_t>(c)] += std::fabs(t);
      }
    }
    std::int64_t mine = 0;
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::size_t cu = static_cast<std::size_t>(c);
      if (CertifySum(sum[cu], CertSumBound(rows, abs_sum[cu]), false, &out[c])) {
        ++mine;
      } else {
        out[c] = alone(c);
      }
    }
    decided.fetch_add(mine, std::memory_order_relaxed);
  });
  CountCertified(kind, static_cast<std::uint64_t>(decided.load()), 0);
}

// out[c] = Σ_r get(r, c) (and, with gb, Σ_r ga(r, c)·gb(r, c)) for an R×C matrix.
template <class M, class Get>
void ColumnSumOf(int threads, std::int64_t rows, std::int64_t cols, const Get& get, typename M::T* out) {
  if constexpr (M::kCertified) {
    CertifiedColumns(
        threads, rows, cols, CertKind::kSum,
        [&](std::int64_t r, std::int64_t c) { return static_cast<double>(static_cast<float>(get(r, c))); },
        [&](std::int64_t c) { return CertifiedSum(rows, [&](std::int64_t r) { return get(r, c); }); }, out);
  } else {
    ColumnTreeSum<typename M::T>(threads, rows, cols, get, out);
  }
}

template <class M, class GA, class GB>
void ColumnDotOf(int threads, std::int64_t rows, std::int64_t cols, const GA& ga, const GB& gb,
                 typename M::T* out) {
  if constexpr (M::kCertified) {
    CertifiedColumns(
        threads, rows, cols, CertKind::kDot,
        [&](std::int64_t r, std::int64_t c) {
          return static_cast<double>(static_cast<float>(ga(r, c))) *
                 static_cast<double>(static_cast<float>(gb(r, c)));
        },
        [&](std::int64_t c) {
          return CertifiedDot(
              rows, [&](std::int64_t r) { return ga(r, c); }, [&](std::int64_t r) { return gb(r, c); });
        },
        out);
  } else {
    ColumnTreeSum<typename M::T>(threads, rows, cols, [&](std::int64_t r, std::int64_t c) { return ga(r, c) * gb(r, c); }, out);
  }
}

// x^n for integer n ≥ 0 by binary exponentiation, in T: a fixed sequence of
// multiplications (never std::pow, whose last bit differs between libms).
// result = 1; base = x; for each bit of n from the lowest: if set,
// result = result·base; then base = base·base (skipped after the top bit).
template <class T>
T PowInt(T x, std::uint64_t n) {
  T result = T(1);
  T base = x;
  while (n != 0) {
    if ((n & 1u) != 0) result = result * base;
    n >>= 1;
    if (n != 0) base = base * base;
  }
  return result;
}

}  // namespace vt::kernels::opsdetail
