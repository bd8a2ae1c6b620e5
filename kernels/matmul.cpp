#include "kernels/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/arith_hd.h"
#include "kernels/certified.h"
#include "kernels/device.h"
#include "kernels/gemm_blocked.h"
#include "kernels/gemm_f64_reference.h"
#include "kernels/gemm_f64_reference_tile.h"
#include "kernels/parallel.h"
#include "kernels/simd_clones.h"

// OpenBLAS's pthread build (Debian's default) exports this: it joins its
// worker threads, which it starts again on its next threaded call (the path
// it takes after a fork). Weak: other builds (OpenMP) lack it.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace vt::kernels {

namespace {

// OpenBLAS's pthread build starts its worker threads as the library loads,
// and each spins on sched_yield for its thread timeout (2^28 cycles: ~0.13 s
// of a core on the development machine) before it sleeps — whether or not
// OpenBLAS is ever called. On two cores that took the second core from a
// short `vt-worker train`'s checkpoint writer. Repops never calls OpenBLAS,
// and native and rounded mode start the threads again on their first
// threaded call, so stop them once, before main runs (libraries' constructors
// run before ours: OpenBLAS has started them by then).
void StopBlasThreads() {
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
}
[[maybe_unused]] const bool g_blas_threads_stopped = [] {
  StopBlasThreads();
  return true;
}();

// Before each OpenBLAS call: its thread count is process-global, so set it
// only when it changes; threaded, it wants the cores our idle pool workers
// spin on, so they park. Setting the count starts the stopped workers again,
// even a count of one, whose calls never use them: then they are stopped
// again (each spun ~0.1 s of the other core at a one-thread job's first
// native or OpenBLAS call).
void BeforeBlasCall(int threads) {
  static std::atomic<int> current{-1};
  const int want = threads < 1 ? 1 : threads;
  if (current.exchange(want) != want) {
    openblas_set_num_threads(want);
    if (want == 1) StopBlasThreads();
  }
  if (want > 1) ParkIdleWorkers();
}

}  // namespace

detail::MicroKernel RepopsKernelFor(Simd simd) {
  switch (ResolveSimd(simd)) {
    case Simd::kAvx512: {
      const detail::MicroKernel k = detail::Avx512MicroKernel();
      if (k.fn != nullptr) return k;
      [[fallthrough]];
    }
    case Simd::kAvx2: {
      const detail::MicroKernel k = detail::Avx2MicroKernel();
      if (k.fn != nullptr) return k;
      break;
    }
    default:
      break;
  }
  return detail::ScalarMicroKernel();
}

Simd RepopsSimdUsed(Simd requested) {
  const std::string_view name = RepopsKernelFor(requested).name;
  if (name == "avx512") return Simd::kAvx512;
  if (name == "avx2") return Simd::kAvx2;
  return Simd::kScalar;
}

void GemmRepops(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c) {
  if (config.device != Device::kCpu && device::OffloadRepops(g, a, b, c)) return;
  detail::GemmBlocked(RepopsKernelFor(config.simd), config.threads, g, a, b, c);
}

void GemmRepopsRows(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b,
                    const std::int64_t* b_rows, float* c) {
  assert(!g.trans_b);
  detail::GemmBlocked(RepopsKernelFor(config.simd), config.threads, g, a, b, c, b_rows);
}

namespace {
// The blocked driver's fp64 kernels for a requested Simd on this CPU: the fma
// one (GemmWidenedF64, GemmF64) and the mul-then-add one (GemmF64Reference);
// fn null where the CPU or the build lacks one (the AVX2 fma kernel also
// needs FMA); `name`: what GemmF64 runs, for messages.
struct F64Kernels {
  detail::F64Kernel fma, reference;
  std::string_view name = "OpenBLAS dgemm";
};
const F64Kernels& F64KernelsFor(Simd simd) {
  static const F64Kernels avx512{detail::Avx512FmaKernel(), detail::Avx512ReferenceKernel(),
                                 "veritrain's AVX-512 fp64 GEMM"};
  static const F64Kernels avx2 =
      CpuHasFma()
          ? F64Kernels{detail::Avx2FmaKernel(), detail::Avx2ReferenceKernel(), "veritrain's AVX2 fp64 GEMM"}
          : F64Kernels{{}, detail::Avx2ReferenceKernel()};
  static const F64Kernels none{};
  switch (ResolveSimd(simd)) {
    case Simd::kAvx512:
      if (avx512.fma.fn != nullptr) return avx512;
      [[fallthrough]];
    case Simd::kAvx2:
      return avx2;
    default:
      return none;
  }
}
}  // namespace

bool WidenedF64GemmAvailable(Simd simd) { return F64KernelsFor(simd).fma.fn != nullptr; }

std::string_view GemmF64CpuName(Simd simd) {
  const F64Kernels& kernels = F64KernelsFor(simd);
  return kernels.fma.fn != nullptr ? kernels.name : F64Kernels{}.name;
}

void GemmWidenedF64(Simd simd, int threads, const GemmArgs& g, const float* a, const float* b, double* c) {
  assert(WidenedF64GemmAvailable(simd));
  detail::GemmBlocked(F64KernelsFor(simd).fma, threads, g, a, b, c);
}

void GemmNative(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c) {
  if (g.m <= 0 || g.n <= 0) return;
  if (config.device != Device::kCpu && device::OffloadNative(g, a, b, c)) return;
  BeforeBlasCall(config.threads);
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.m), static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0f, a,
              static_cast<blasint>(g.lda), b, static_cast<blasint>(g.ldb), g.accumulate ? 1.0f : 0.0f, c,
              static_cast<blasint>(g.ldc));
}

namespace {

// The fastest fp64 GEMM for config: cuBLAS on a CUDA config.device; on the
// CPU our fma kernel (kernels/gemm_blocked.h) where config.simd resolves to
// AVX-512 or AVX2 with FMA, else OpenBLAS dgemm.
void FastGemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c) {
  if (config.device != Device::kCpu && device::OffloadF64(g, a, b, c)) return;
  if (WidenedF64GemmAvailable(config.simd)) {
    detail::GemmBlocked(F64KernelsFor(config.simd).fma, config.threads, g, a, b, c);
    return;
  }
  BeforeBlasCall(config.threads);
  cblas_dgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.m), static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0, a,
              static_cast<blasint>(g.lda), b, static_cast<blasint>(g.ldb), g.accumulate ? 1.0 : 0.0, c,
              static_cast<blasint>(g.ldc));
}

std::atomic<std::uint64_t> g_f64_shuffle_seed{0};

// TEST ONLY: C (+)= op(A)·op(B) summed over a random permutation of p, in
// random split-K chunks (one dgemm each), the chunk products added in a
// random order.
void ShuffledGemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b,
                     double* c) {
  const ShuffledOrder o = DrawShuffledOrder(g.k);
  const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
  const std::int64_t a_row = sa.row, a_col = sa.col, b_row = sb.row, b_col = sb.col;
  std::vector<std::vector<double>> parts;
  std::int64_t begin = 0;
  for (std::int64_t end : o.splits) {
    const std::int64_t kk = end - begin;
    std::vector<double> ap(static_cast<std::size_t>(g.m * kk)), bp(static_cast<std::size_t>(kk * g.n));
    for (std::int64_t q = 0; q < kk; ++q) {
      const std::int64_t p = o.order[static_cast<std::size_t>(begin + q)];
      for (std::int64_t i = 0; i < g.m; ++i)
        ap[static_cast<std::size_t>(i * kk + q)] = a[i * a_row + p * a_col];
      for (std::int64_t j = 0; j < g.n; ++j)
        bp[static_cast<std::size_t>(q * g.n + j)] = b[p * b_row + j * b_col];
    }
    std::vector<double>& part = parts.emplace_back(static_cast<std::size_t>(g.m * g.n));
    FastGemmF64(config, GemmArgs{g.m, g.n, kk, false, false, kk, g.n, g.n, false}, ap.data(), bp.data(),
                part.data());
    begin = end;
  }
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      double s = g.accumulate ? c[i * g.ldc + j] : 0.0;
      for (std::size_t idx : o.combine) s = s + parts[idx][static_cast<std::size_t>(i * g.n + j)];
      c[i * g.ldc + j] = s;
    }
  }
}

}  // namespace

void SetF64ShuffleSeedForTesting(std::uint64_t seed) { g_f64_shuffle_seed.store(seed); }
std::uint64_t F64ShuffleSeed() { return g_f64_shuffle_seed.load(std::memory_order_relaxed); }

ShuffledOrder DrawShuffledOrder(std::int64_t n) {
  // A fresh stream per call from the seed and a call counter (test only: the
  // point is orders that differ from call to call and from the default).
  static std::atomic<std::uint64_t> calls{0};
  std::mt19937_64 rng(F64ShuffleSeed() * 0x9e3779b97f4a7c15ull + calls.fetch_add(1));
  ShuffledOrder o;
  o.order.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) o.order[static_cast<std::size_t>(i)] = i;
  std::shuffle(o.order.begin(), o.order.end(), rng);
  const std::int64_t chunks =
      n <= 1
          ? 1
          : 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(std::min<std::int64_t>(n, 8)));
  for (std::int64_t c = 1; c < chunks; ++c) {
    o.splits.push_back(
        1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(std::max<std::int64_t>(n - 1, 1))));
  }
  o.splits.push_back(n);
  std::sort(o.splits.begin(), o.splits.end());
  o.combine.resize(o.splits.size());
  for (std::size_t i = 0; i < o.combine.size(); ++i) o.combine[i] = i;
  std::shuffle(o.combine.begin(), o.combine.end(), rng);
  return o;
}

void GemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c) {
  if (g.m <= 0 || g.n <= 0) return;
  if (F64ShuffleSeed() != 0) {
    ShuffledGemmF64(config, g, a, b, c);
  } else {
    FastGemmF64(config, g, a, b, c);
  }
}

namespace detail {
RefKernel RefKernelBaseline() { return MakeRefKernel<2, 4, 2>(); }
}  // namespace detail

namespace {

// GemmF64Reference on operands of type In (fp64, or fp32 widened as they are
// packed: the same values, so the same bits).
template <class In>
void GemmF64ReferenceOf(Simd simd, int threads, const GemmArgs& g, const In* a, const In* b, double* c) {
  if (g.m <= 0 || g.n <= 0) return;
  // On AVX-512 or AVX2: the blocked driver with the mul-then-add kernel (the
  // same sequence per output, cache-blocked and on 8 or 4 lanes).
  if (const detail::F64Kernel& blocked = F64KernelsFor(simd).reference; blocked.fn != nullptr) {
    detail::GemmBlocked(blocked, threads, g, a, b, c);
    return;
  }
  // Elsewhere the baseline tile kernel, unblocked.
  static const detail::RefKernel kern = detail::RefKernelBaseline();
  const std::int64_t mr = kern.mr, nr = kern.nr;
  const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
  const std::int64_t a_row = sa.row, a_col = sa.col, b_row = sb.row, b_col = sb.col;
  const std::int64_t k = g.k < 0 ? 0 : g.k;
  // op(B) packed once into column panels of nr: panel q holds
  // bpack[q·k·nr + p·nr + lane] (zero past n). Copies only.
  const std::int64_t panels = (g.n + nr - 1) / nr;
  std::vector<double> bpack(static_cast<std::size_t>(panels * k * nr), 0.0);
  for (std::int64_t q = 0; q < panels; ++q) {
    double* dst = bpack.data() + q * k * nr;
    for (std::int64_t lane = 0; lane < nr && q * nr + lane < g.n; ++lane) {
      const In* src = b + (q * nr + lane) * b_col;
      for (std::int64_t p = 0; p < k; ++p) dst[p * nr + lane] = src[p * b_row];
    }
  }
  const std::int64_t row_tiles = (g.m + mr - 1) / mr;
  // One A panel of scratch per chunk, allocated here: no allocation inside
  // a pool worker.
  const int chunks = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, row_tiles)));
  std::vector<double> apack(static_cast<std::size_t>(chunks * k * mr), 0.0);
  ParallelFor(chunks, chunks, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t chunk = c0; chunk < c1; ++chunk) {
      double* ap = apack.data() + chunk * k * mr;
      for (std::int64_t t = row_tiles * chunk / chunks; t < row_tiles * (chunk + 1) / chunks; ++t) {
        const std::int64_t i0 = t * mr;
        const std::int64_t rows = std::min(mr, g.m - i0);
        for (std::int64_t r = 0; r < mr; ++r) {
          if (r >= rows) {
            for (std::int64_t p = 0; p < k; ++p) ap[p * mr + r] = 0.0;
            continue;
          }
          const In* src = a + (i0 + r) * a_row;
          for (std::int64_t p = 0; p < k; ++p) ap[p * mr + r] = src[p * a_col];
        }
        for (std::int64_t q = 0; q < panels; ++q) {
          const std::int64_t cols = std::min(nr, g.n - q * nr);
          kern.fn(k, ap, bpack.data() + q * k * nr, c + i0 * g.ldc + q * nr, g.ldc, rows, cols, g.accumulate);
        }
      }
    }
  });
}

}  // namespace

void GemmF64Reference(int threads, const GemmArgs& g, const double* a, const double* b, double* c) {
  GemmF64ReferenceOf(Simd::kAuto, threads, g, a, b, c);
}
void GemmF64Reference(int threads, const GemmArgs& g, const float* a, const float* b, double* c) {
  GemmF64ReferenceOf(Simd::kAuto, threads, g, a, b, c);
}
void GemmF64ReferenceOnSimdForTesting(Simd simd, int threads, const GemmArgs& g, const double* a,
                                      const double* b, double* c) {
  GemmF64ReferenceOf(simd, threads, g, a, b, c);
}

namespace {

// From this share of one product's outputs on (1/kDenseFromShare), its
// elements are computed as the whole product by the blocked GemmF64Reference
// and copied out: per output that runs 20–60× faster than the grouped
// element loop (measured 1024 × 768 outputs, k = 768 to 50257, both B
// layouts, two threads: break-even at 1–3 % of the outputs). GPT-2's head
// backward (dX, k = 50257) asks for ~8 % of its outputs. Only for one
// product (no batch offsets), not accumulating, and at most
// kDenseMaxOutputs outputs of scratch.
constexpr std::int64_t kDenseFromShare = 32;
constexpr std::int64_t kDenseMaxOutputs = std::int64_t{1} << 23;  // 64 MiB of fp64

bool ElementsAsWholeProduct(const GemmArgs& g, std::span<const GemmElement> elements) {
  if (g.accumulate || g.m <= 0 || g.n <= 0 || g.m > kDenseMaxOutputs / g.n) return false;
  if (static_cast<std::int64_t>(elements.size()) * kDenseFromShare < g.m * g.n) return false;
  return std::all_of(elements.begin(), elements.end(),
                     [](const GemmElement& e) { return e.a_offset == 0 && e.b_offset == 0; });
}

template <class In>
void GemmF64ReferenceElementsOf(int threads, const GemmArgs& g, const In* a, const In* b,
                                std::span<const GemmElement> elements, double* out) {
  if (ElementsAsWholeProduct(g, elements)) {
    GemmArgs whole = g;
    whole.ldc = g.n;
    std::vector<double> c(static_cast<std::size_t>(g.m * g.n));
    GemmF64Reference(threads, whole, a, b, c.data());
    for (std::size_t e = 0; e < elements.size(); ++e) {
      out[e] = c[static_cast<std::size_t>(elements[e].i * g.n + elements[e].j)];
    }
    return;
  }
  const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
  const std::int64_t a_row = sa.row, a_step = sa.col, b_col = sb.col, b_step = sb.row;
  // A group's accumulators and offsets fit in L1, and its factors' cache
  // lines in L2, where a contiguous factor's line serves 8 consecutive p.
  constexpr std::int64_t kGroup = 512;
  const auto count = static_cast<std::int64_t>(elements.size());
  const std::int64_t groups = (count + kGroup - 1) / kGroup;
  ParallelFor(threads, groups, [&](std::int64_t g0, std::int64_t g1) {
    std::int64_t a_at[kGroup], b_at[kGroup];
    double acc[kGroup];
    for (std::int64_t group = g0; group < g1; ++group) {
      const std::int64_t e0 = group * kGroup, size = std::min(kGroup, count - e0);
      for (std::int64_t e = 0; e < size; ++e) {
        const GemmElement& el = elements[static_cast<std::size_t>(e0 + e)];
        a_at[e] = el.a_offset + el.i * a_row;
        b_at[e] = el.b_offset + el.j * b_col;
        acc[e] = g.accumulate ? out[e0 + e] : 0.0;
      }
      for (std::int64_t p = 0; p < g.k; ++p) {
        const In* ap = a + p * a_step;
        const In* bp = b + p * b_step;
        for (std::int64_t e = 0; e < size; ++e) {
          acc[e] = acc[e] + static_cast<double>(ap[a_at[e]]) * static_cast<double>(bp[b_at[e]]);
        }
      }
      std::copy(acc, acc + size, out + e0);
    }
  });
}

}  // namespace

void GemmF64ReferenceElements(int threads, const GemmArgs& g, const double* a, const double* b,
                              std::span<const GemmElement> elements, double* out) {
  GemmF64ReferenceElementsOf(threads, g, a, b, elements, out);
}
void GemmF64ReferenceElements(int threads, const GemmArgs& g, const float* a, const float* b,
                              std::span<const GemmElement> elements, double* out) {
  GemmF64ReferenceElementsOf(threads, g, a, b, elements, out);
}

std::vector<GemmElement> DenseGemmElements(std::span<const std::size_t> positions, const GemmArgs& g,
                                           std::int64_t a_stride, std::int64_t b_stride) {
  assert(g.ldc == g.n);
  const auto n = static_cast<std::size_t>(g.n), per = static_cast<std::size_t>(g.m) * n;
  std::vector<GemmElement> elements(positions.size());
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const std::size_t e = positions[k], item = e / per;
    elements[k] =
        GemmElement{static_cast<std::int64_t>(e % per / n), static_cast<std::int64_t>(e % n),
                    static_cast<std::int64_t>(item) * a_stride, static_cast<std::int64_t>(item) * b_stride};
  }
  return elements;
}

namespace {
template <class In>
ReferenceFn GemmReferenceOf(int threads, const GemmArgs& g, const In* a, const In* b, std::int64_t a_stride,
                            std::int64_t b_stride) {
  assert(!g.accumulate);
  return [=](std::span<const std::size_t> positions, std::span<double> values) {
    GemmF64ReferenceElements(threads, g, a, b, DenseGemmElements(positions, g, a_stride, b_stride),
                             values.data());
  };
}
}  // namespace

ReferenceFn GemmReference(int threads, const GemmArgs& g, const double* a, const double* b,
                          std::int64_t a_stride, std::int64_t b_stride) {
  return GemmReferenceOf(threads, g, a, b, a_stride, b_stride);
}
ReferenceFn GemmReference(int threads, const GemmArgs& g, const float* a, const float* b,
                          std::int64_t a_stride, std::int64_t b_stride) {
  return GemmReferenceOf(threads, g, a, b, a_stride, b_stride);
}

void GemmF64Rounded(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c) {
  if (config.f64_reference) {
    GemmF64Reference(config.threads, g, a, b, c);
  } else {
    GemmF64(config, g, a, b, c);
  }
}

namespace {
// The fp64 copy of op(X)'s storage (rows × cols of op(X), leading dimension ld).
std::vector<double> WidenOperand(const float* x, bool trans, std::int64_t ld, std::int64_t rows,
                                 std::int64_t cols) {
  const std::int64_t stored_rows = trans ? cols : rows, stored_cols = trans ? rows : cols;
  if (stored_rows <= 0 || stored_cols <= 0) return {};
  return std::vector<double>(x, x + (stored_rows - 1) * ld + stored_cols);
}

// GemmF64's own choice, made before it would be handed fp64 copies: our
// fma kernel widens as it packs (FastGemmF64 runs it on the widened values).
bool WidenedF64GemmChosen(const ExecConfig& config) {
  return config.device == Device::kCpu && F64ShuffleSeed() == 0 && WidenedF64GemmAvailable(config.simd);
}
}  // namespace

bool GemmF64RoundedIsOurs(const ExecConfig& config) {
  return config.f64_reference || WidenedF64GemmChosen(config);
}

void GemmF64Rounded(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, double* c) {
  if (g.m <= 0 || g.n <= 0) return;
  if (config.f64_reference) {
    GemmF64Reference(config.threads, g, a, b, c);
    return;
  }
  if (WidenedF64GemmChosen(config)) {
    GemmWidenedF64(config.simd, config.threads, g, a, b, c);
    return;
  }
  const std::vector<double> a64 = WidenOperand(a, g.trans_a, g.lda, g.m, g.k);
  const std::vector<double> b64 = WidenOperand(b, g.trans_b, g.ldb, g.k, g.n);
  GemmF64(config, g, a64.data(), b64.data(), c);
}

void GemmRepopsReference(const GemmArgs& g, const float* a, const float* b, float* c) {
  const GemmStrides sa = OperandStrides(g.trans_a, g.lda), sb = OperandStrides(g.trans_b, g.ldb);
  const std::int64_t a_row = sa.row, a_col = sa.col, b_row = sb.row, b_col = sb.col;
  for (std::int64_t i = 0; i < g.m; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      float& out = c[i * g.ldc + j];
      const float init = g.accumulate ? out : 0.0f;
      out = hd::RepopsDot(a + i * a_row, a_col, b + j * b_col, b_row, g.k, init);
    }
  }
}

namespace {

struct MatMulPlan {
  std::int64_t batch = 1;   // number of separate GEMMs
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t a_stride = 0, b_stride = 0, c_stride = 0;  // elements between batches
  GemmArgs args;
  Shape out_shape;
};

Result<MatMulPlan> Plan(const Tensor& a, const Tensor& b, MatMulOptions options) {
  if (a.rank() < 2 || b.rank() < 2) {
    return Status::Invalid("shape-mismatch", "matmul operands need rank >= 2");
  }
  const std::int64_t a_rows = a.dim(-2), a_cols = a.dim(-1);
  const std::int64_t b_rows = b.dim(-2), b_cols = b.dim(-1);
  const std::int64_t m = options.trans_a ? a_cols : a_rows;
  const std::int64_t k = options.trans_a ? a_rows : a_cols;
  const std::int64_t kb = options.trans_b ? b_cols : b_rows;
  const std::int64_t n = options.trans_b ? b_rows : b_cols;
  if (k != kb) {
    return Status::Invalid("shape-mismatch", "inner dimensions differ: " + ShapeToString(a.shape()) + " x " +
                                                 ShapeToString(b.shape()));
  }
  const bool shared_b = b.rank() == 2;
  if (!shared_b) {
    if (b.rank() != a.rank() ||
        !std::equal(a.shape().begin(), a.shape().end() - 2, b.shape().begin())) {
      return Status::Invalid("shape-mismatch", "batch dimensions differ: " + ShapeToString(a.shape()) +
                                                   " x " + ShapeToString(b.shape()));
    }
  }
  MatMulPlan plan;
  plan.out_shape.assign(a.shape().begin(), a.shape().end() - 2);
  plan.out_shape.push_back(m);
  plan.out_shape.push_back(n);
  const std::int64_t batch = NumElements(Shape(a.shape().begin(), a.shape().end() - 2));
  plan.m = m;
  plan.n = n;
  plan.k = k;
  plan.args.trans_a = options.trans_a;
  plan.args.trans_b = options.trans_b;
  plan.args.lda = a_cols;
  plan.args.ldb = b_cols;
  plan.args.ldc = n;
  if (shared_b && !options.trans_a) {
    // A stack of row-major [m, k] matrices times one B is a single GEMM with
    // batch·m rows (results per element do not depend on this in repops and
    // rounded mode).
    plan.batch = 1;
    plan.m = batch * m;
  } else {
    plan.batch = batch;
    plan.a_stride = a_rows * a_cols;
    plan.b_stride = shared_b ? 0 : b_rows * b_cols;
    plan.c_stride = m * n;
  }
  plan.args.m = plan.m;
  plan.args.n = n;
  plan.args.k = k;
  return plan;
}

}  // namespace

double GemmSlackFactor(std::int64_t terms) {
  const double nu = static_cast<double>(terms) * 0x1p-53;
  if (!(nu < 0.5)) return std::numeric_limits<double>::infinity();
  return 2.0 * (nu / (1.0 - nu)) * (1.0 + 0x1p-16);
}

namespace {

// One row of β: out[j] = GemmSlackValue(factor, row_norm, col_norm[j], the
// bias magnitude: col_bias[j] where given, else row_bias). A store per
// value, the bulk of β's cost, so it has ISA clones.
VT_SIMD_CLONES void WriteSlackRow(double factor, double row_norm, const double* col_norm, double row_bias,
                                  const double* col_bias, double* out, std::int64_t n) {
  if (col_bias == nullptr) {
    for (std::int64_t j = 0; j < n; ++j) out[j] = GemmSlackValue(factor, row_norm, col_norm[j], row_bias);
    return;
  }
  for (std::int64_t j = 0; j < n; ++j) out[j] = GemmSlackValue(factor, row_norm, col_norm[j], col_bias[j]);
}

// WriteGemmSlack's rows; col_norm (n values) is scratch, col_bias |bias| per
// column where the bias is.
void WriteGemmSlackRows(std::int64_t m, std::int64_t n, std::int64_t terms, const double* row_sq,
                        const double* col_sq, double* col_norm, double* slack, std::int64_t ld,
                        const double* bias, BiasPer per, const double* col_bias) {
  const double factor = GemmSlackFactor(terms + (bias != nullptr ? 1 : 0));
  for (std::int64_t j = 0; j < n; ++j) col_norm[j] = std::sqrt(col_sq[j]);
  for (std::int64_t i = 0; i < m; ++i) {
    const double row_bias = bias != nullptr && per == BiasPer::kRow ? std::fabs(bias[i]) : 0.0;
    WriteSlackRow(factor, std::sqrt(row_sq[i]), col_norm, row_bias, col_bias, slack + i * ld, n);
  }
}

}  // namespace

void WriteGemmSlack(std::int64_t m, std::int64_t n, std::int64_t terms, const double* row_sq,
                    const double* col_sq, double* slack, std::int64_t ld, const double* bias, BiasPer per) {
  const auto un = static_cast<std::size_t>(n);
  const bool per_column = bias != nullptr && per == BiasPer::kColumn;
  std::vector<double> col_norm(un), col_bias(per_column ? un : 0);
  for (std::size_t j = 0; j < col_bias.size(); ++j) col_bias[j] = std::fabs(bias[j]);
  WriteGemmSlackRows(m, n, terms, row_sq, col_sq, col_norm.data(), slack, ld, bias, per,
                     per_column ? col_bias.data() : nullptr);
}

void WriteGemmSlackInScratch(std::int64_t m, std::int64_t n, std::int64_t terms, const double* row_sq,
                             const double* col_sq, double* col_norm, double* slack, std::int64_t ld,
                             const double* row_bias) {
  WriteGemmSlackRows(m, n, terms, row_sq, col_sq, col_norm, slack, ld, row_bias, BiasPer::kRow, nullptr);
}

namespace {
template <class In>
void GemmSlackOf(const GemmArgs& g, const In* a, const In* b, double* slack, const double* bias,
                 BiasPer per) {
  std::vector<double> row_sq(static_cast<std::size_t>(g.m), 0.0), col_sq(static_cast<std::size_t>(g.n), 0.0);
  GemmNormsSq(g, a, b, row_sq.data(), col_sq.data());
  WriteGemmSlack(g.m, g.n, g.k, row_sq.data(), col_sq.data(), slack, g.ldc, bias, per);
}
}  // namespace

void GemmSlackF64(const GemmArgs& g, const double* a, const double* b, double* slack, const double* bias,
                  BiasPer per) {
  GemmSlackOf(g, a, b, slack, bias, per);
}
void GemmSlackF64(const GemmArgs& g, const float* a, const float* b, double* slack, const double* bias,
                  BiasPer per) {
  GemmSlackOf(g, a, b, slack, bias, per);
}

Status MatMul(const OpContext& ctx, const Tensor& a, const Tensor& b, Tensor& out, MatMulOptions options) {
  VT_ASSIGN_OR_RETURN(MatMulPlan plan, Plan(a, b, options));
  out.Resize(plan.out_shape);
  const ExecConfig& config = ctx.config();
  switch (config.mode) {
    case Mode::kNative:
    case Mode::kRepops:
      for (std::int64_t i = 0; i < plan.batch; ++i) {
        const float* pa = a.data() + i * plan.a_stride;
        const float* pb = b.data() + i * plan.b_stride;
        float* pc = out.data() + i * plan.c_stride;
        if (config.mode == Mode::kNative) {
          GemmNative(config, plan.args, pa, pb, pc);
        } else {
          GemmRepops(config, plan.args, pa, pb, pc);
        }
      }
      return Status::Ok();
    case Mode::kRounded: {
      std::vector<double> c64(static_cast<std::size_t>(out.numel()));
      std::vector<double> slack(c64.size());
      for (std::int64_t i = 0; i < plan.batch; ++i) {
        const float* pa = a.data() + i * plan.a_stride;
        const float* pb = b.data() + i * plan.b_stride;
        GemmF64Rounded(config, plan.args, pa, pb, c64.data() + i * plan.c_stride);
        GemmSlackF64(plan.args, pa, pb, slack.data() + i * plan.c_stride);
      }
      const ReferenceFn reference =
          GemmReference(config.threads, plan.args, a.data(), b.data(), plan.a_stride, plan.b_stride);
      return ctx.RoundOutput(c64, out.values(), slack, &reference);
    }
    case Mode::kCertified:
      for (std::int64_t i = 0; i < plan.batch; ++i) {
        CertifiedGemm(config, plan.args, a.data() + i * plan.a_stride, b.data() + i * plan.b_stride,
                      out.data() + i * plan.c_stride);
      }
      return Status::Ok();
  }
  return Status::Error("unknown-mode");
}

}  // namespace vt::kernels
