// The blocked GEMM driver (GotoBLAS-style loops, fixed per-element order;
// see kernels/gemm_blocked.h) and the portable scalar repops micro-kernel.

#include "kernels/gemm_blocked.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/arith_hd.h"
#include "kernels/parallel.h"

namespace vt::kernels::detail {
namespace {

// Cache blocking, for fp32 packs (fp64 ones take half the k block, so every
// block keeps its size in bytes). KC×NR B panels stay in L1 while a column
// of A tiles streams past; an MC×KC block of A lives in L2; a KC×NC block of
// B in L2/L3.
#ifndef VT_GEMM_KC
#define VT_GEMM_KC 1024
#define VT_GEMM_MC 192
#define VT_GEMM_NC 4096
#define VT_GEMM_NGROUP 192
#endif
constexpr std::int64_t kKc = VT_GEMM_KC;
constexpr std::int64_t kMc = VT_GEMM_MC;
constexpr std::int64_t kNc = VT_GEMM_NC;
// Column groups handed to one task (a multiple of every NR).
constexpr std::int64_t kNGroup = VT_GEMM_NGROUP;
constexpr double kMinWorkPerThread = 1 << 17;
// Largest micro-kernel tile (the partial-tile buffer).
constexpr int kMaxTileRows = 32;
constexpr int kMaxTileCols = 128;

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// A per-thread scratch buffer (one per Role and element type), grown on
// demand and reused across calls.
enum class Role { kAPack, kBPack };
template <typename T, Role>
T* ThreadScratch(std::size_t count) {
  thread_local std::unique_ptr<T, AlignedFree> buf;
  thread_local std::size_t cap = 0;
  if (cap < count) {
    const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    buf.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    cap = bytes / sizeof(T);
  }
  return buf.get();
}

#if defined(__SSE2__)
// Four fp32 values into a pack of T (widened for double).
inline void StoreFour(float* dst, __m128 v) { _mm_storeu_ps(dst, v); }
inline void StoreFour(double* dst, __m128 v) {
  _mm_storeu_pd(dst, _mm_cvtps_pd(v));
  _mm_storeu_pd(dst + 2, _mm_cvtps_pd(_mm_movehl_ps(v, v)));
}
// The low two fp32 values of v likewise.
inline void StoreTwo(float* dst, __m128 v) { _mm_storel_pi(reinterpret_cast<__m64*>(dst), v); }
inline void StoreTwo(double* dst, __m128 v) { _mm_storeu_pd(dst, _mm_cvtps_pd(v)); }
#endif

// A stored operand: op(X)(r, c) = trans ? p[c·ld + r] : p[r·ld + c], or,
// with a row table (non-transposed B only), p[rows[r] + c].
template <typename In>
struct View {
  const In* p;
  std::int64_t ld;
  bool trans;
  const std::int64_t* rows = nullptr;
};

// Both operands are packed into panels of w lanes (MR rows of A, NR columns
// of B): panel q holds out[q·kc·w + p·w + lane] for p < kc, lanes past the end
// zero. Copies only (widened to T), no arithmetic.

// w consecutive fp32 values into a pack of T, w = kW where kW > 0.
// Constant sizes let the compiler inline the copy (no libc call) and
// vectorise the widening; the same-type copy is a memcpy, which the
// compiler inlines at a constant size (std::copy is a memmove, which GCC
// left to libc: a call per 16 values took 4 % of cnn-fashion's repops step).
template <int kW, typename In, typename T>
inline void CopyLanesOf(const In* src, std::int64_t w, T* dst) {
  if constexpr (kW == 0) {
    std::copy(src, src + w, dst);
  } else if constexpr (std::is_same_v<In, T>) {
    std::memcpy(dst, src, kW * sizeof(T));
#if defined(__SSE2__)
  } else if constexpr (std::is_same_v<In, float> && std::is_same_v<T, double> && kW % 2 == 0) {
    // Spelled out: GCC widened 6 lanes through a stack spill.
    int x = 0;
    for (; x + 4 <= kW; x += 4) StoreFour(dst + x, _mm_loadu_ps(src + x));
    if constexpr (kW % 4 == 2) {
      const __m128i two = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + x));  // may alias
      _mm_storeu_pd(dst + x, _mm_cvtps_pd(_mm_castsi128_ps(two)));
    }
#endif
  } else {
    std::copy(src, src + kW, dst);
  }
}

// Lanes contiguous in the source (A transposed, B not): element (p, x) at
// src[(p0 + p)·ld + x0 + x], or src[rows[p0 + p] + x0 + x] with a row table.
// Rows are walked in blocks of kRowBlock across all panels, so reads stay
// sequential and the source pages in the TLB, instead of one strided pass
// over all k rows per panel. The width is a constant kW (0: w), so a row's
// copy is a few instructions without a branch on w or on the row table
// (choosing them per row was 17 % of this function's samples in
// mlp-fashion's rounded step).
template <int kW, typename In, typename T>
void PackContiguousLanesOf(const In* src, std::int64_t ld, const std::int64_t* rows, std::int64_t p0,
                           std::int64_t kc, std::int64_t x0, std::int64_t count, int w_arg, T* out) {
  constexpr std::int64_t kRowBlock = 16;
  const std::int64_t w = kW > 0 ? kW : w_arg;
  for (std::int64_t pb = 0; pb < kc; pb += kRowBlock) {
    const std::int64_t pe = std::min(kc, pb + kRowBlock);
    for (std::int64_t q = 0; q < count; q += w) {
      const std::int64_t valid = std::min<std::int64_t>(w, count - q);
      T* panel = out + q * kc;
      if (valid == w && rows == nullptr) {
        const In* row = src + (p0 + pb) * ld + x0 + q;
        for (std::int64_t p = pb; p < pe; ++p, row += ld) CopyLanesOf<kW>(row, w, panel + p * w);
        continue;
      }
      for (std::int64_t p = pb; p < pe; ++p) {
        const In* row = src + (rows != nullptr ? rows[p0 + p] : (p0 + p) * ld) + x0 + q;
        T* dst = panel + p * w;
        if (valid == w) {
          CopyLanesOf<kW>(row, w, dst);
        } else {
          std::int64_t x = 0;
          for (; x < valid; ++x) dst[x] = row[x];
          for (; x < w; ++x) dst[x] = T(0);
        }
      }
    }
  }
}
template <typename In, typename T>
void PackContiguousLanes(const In* src, std::int64_t ld, const std::int64_t* rows, std::int64_t p0,
                         std::int64_t kc, std::int64_t x0, std::int64_t count, int w, T* out) {
  switch (w) {
    case 6:  // the AVX2 kernels' MR
      return PackContiguousLanesOf<6>(src, ld, rows, p0, kc, x0, count, w, out);
    case 8:
      return PackContiguousLanesOf<8>(src, ld, rows, p0, kc, x0, count, w, out);
    case 12:  // the AVX-512 fp64 kernel's MR
      return PackContiguousLanesOf<12>(src, ld, rows, p0, kc, x0, count, w, out);
    case 16:
      return PackContiguousLanesOf<16>(src, ld, rows, p0, kc, x0, count, w, out);
    case 24:
      return PackContiguousLanesOf<24>(src, ld, rows, p0, kc, x0, count, w, out);
    case 32:
      return PackContiguousLanesOf<32>(src, ld, rows, p0, kc, x0, count, w, out);
    default:
      return PackContiguousLanesOf<0>(src, ld, rows, p0, kc, x0, count, w, out);
  }
}

// Lanes strided in the source (A not transposed, B transposed): element
// (p, x) at src[(x0 + x)·ld + p0 + p]; each lane's k run is contiguous. A
// transpose, walking p outermost so the writes stay within a few cache
// lines and each lane is read sequentially: for 4 values of p at a time,
// lanes go 4 at a time (a 4 × 4 block through SSE registers), then 2 at a
// time (two lanes interleaved), and a last odd lane one by one; a partial
// panel's lanes past the end are zero vectors. (w = 6, the AVX2 kernels'
// MR: lanes 4 and 5 went one value at a time, 23 % of this function's
// samples in cnn-fashion's native step; all 6 had, 58 % in mlp-fashion's
// rounded one. Partial panels went value by value, 36 % after that.)
template <typename In, typename T>
void PackStridedLanes(const In* src, std::int64_t ld, std::int64_t p0, std::int64_t kc, std::int64_t x0,
                      std::int64_t count, int w, T* out) {
  for (std::int64_t q = 0; q < count; q += w) {
    const std::int64_t valid = std::min<std::int64_t>(w, count - q);
    T* panel = out + q * kc;
    const In* lanes = src + (x0 + q) * ld + p0;
    // Values [pb, pe) of lanes [xb, w) one by one (zero past `valid`).
    const auto scalar = [&](std::int64_t pb, std::int64_t pe, std::int64_t xb) {
      for (std::int64_t p = pb; p < pe; ++p) {
        T* dst = panel + p * w;
        std::int64_t x = xb;
        for (; x < valid; ++x) dst[x] = T(lanes[x * ld + p]);
        for (; x < w; ++x) dst[x] = T(0);
      }
    };
    std::int64_t p = 0;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<In, float>) {  // fp64 sources take the scalar copy
      const std::int64_t quads = w / 4 * 4;                    // lanes that go 4 at a time
      const std::int64_t pairs = quads + (w - quads) / 2 * 2;  // then 2 at a time
      // Lane x's values p .. p + 3; zeros past `valid` (a partial panel:
      // the stem convolution's weight gradient packs 9 valid lanes of 16).
      const auto four = [&](std::int64_t x, std::int64_t at) {
        return x < valid ? _mm_loadu_ps(lanes + x * ld + at) : _mm_setzero_ps();
      };
      for (; p + 4 <= kc; p += 4) {
        for (std::int64_t x = 0; x < quads; x += 4) {
          __m128 r0 = four(x + 0, p), r1 = four(x + 1, p), r2 = four(x + 2, p), r3 = four(x + 3, p);
          _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
          StoreFour(panel + (p + 0) * w + x, r0);
          StoreFour(panel + (p + 1) * w + x, r1);
          StoreFour(panel + (p + 2) * w + x, r2);
          StoreFour(panel + (p + 3) * w + x, r3);
        }
        for (std::int64_t x = quads; x < pairs; x += 2) {
          const __m128 lo = _mm_unpacklo_ps(four(x, p), four(x + 1, p));  // (x, p), (x + 1, p), (x, p + 1), …
          const __m128 hi = _mm_unpackhi_ps(four(x, p), four(x + 1, p));  // the same for p + 2, p + 3
          StoreTwo(panel + (p + 0) * w + x, lo);
          StoreTwo(panel + (p + 1) * w + x, _mm_movehl_ps(lo, lo));
          StoreTwo(panel + (p + 2) * w + x, hi);
          StoreTwo(panel + (p + 3) * w + x, _mm_movehl_ps(hi, hi));
        }
        if (pairs < w) scalar(p, p + 4, pairs);  // an odd width's last lane
      }
    }
#endif
    scalar(p, kc, 0);
  }
}

// Rows [i0, i0+rows) × k range [p0, p0+kc) of op(A) into MR-row panels.
template <typename In, typename T>
void PackA(const View<In>& a, std::int64_t i0, std::int64_t rows, std::int64_t p0, std::int64_t kc, int mr,
           T* out) {
  if (a.trans) {
    PackContiguousLanes(a.p, a.ld, nullptr, p0, kc, i0, rows, mr, out);
  } else {
    PackStridedLanes(a.p, a.ld, p0, kc, i0, rows, mr, out);
  }
}

// k range [p0, p0+kc) × columns [j0, j0+cols) of op(B) into NR-column panels.
template <typename In, typename T>
void PackB(const View<In>& b, std::int64_t p0, std::int64_t kc, std::int64_t j0, std::int64_t cols, int nr,
           T* out) {
  if (b.trans) {
    PackStridedLanes(b.p, b.ld, p0, kc, j0, cols, nr, out);
  } else {
    PackContiguousLanes(b.p, b.ld, b.rows, p0, kc, j0, cols, nr, out);
  }
}

// One tile, full or partial (partial tiles go through a local buffer so the
// micro-kernel always sees MR×NR; padding lanes never touch real outputs).
template <typename T>
void RunTile(const MicroKernelOf<T>& kern, std::int64_t kc, const T* ap, const T* bp, T* c, std::int64_t ldc,
             std::int64_t rows, std::int64_t cols, bool load_c) {
  if (rows == kern.mr && cols == kern.nr) {
    kern.fn(kc, ap, bp, c, ldc, load_c);
    return;
  }
  alignas(64) T tile[kMaxTileRows * kMaxTileCols];
  if (load_c) {  // (otherwise the kernel writes the whole tile without reading it)
    for (std::int64_t r = 0; r < kern.mr; ++r) {
      for (std::int64_t j = 0; j < kern.nr; ++j)
        tile[r * kern.nr + j] = r < rows && j < cols ? c[r * ldc + j] : T(0);
    }
  }
  kern.fn(kc, ap, bp, tile, kern.nr, load_c);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::memcpy(c + r * ldc, tile + r * kern.nr, static_cast<std::size_t>(cols) * sizeof(T));
  }
}

}  // namespace

template <typename In, typename T>
void GemmBlocked(const MicroKernelOf<T>& kern, int threads, const GemmArgs& g, const In* a, const In* b, T* c,
                 const std::int64_t* b_rows) {
  const std::int64_t m = g.m, n = g.n, k = g.k;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!g.accumulate) {
      for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * g.ldc, c + i * g.ldc + n, T(0));
    }
    return;
  }
  // Small products are not worth waking threads for (~2^17 multiply-adds is
  // tens of microseconds, about the cost of a pool round trip).
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work < static_cast<double>(threads) * kMinWorkPerThread) {
    threads = std::max(1, static_cast<int>(work / kMinWorkPerThread));
  }
  const View<In> av{a, g.lda, g.trans_a};
  assert(b_rows == nullptr || !g.trans_b);
  const View<In> bv{b, g.ldb, g.trans_b, b_rows};
  const int mr = kern.mr, nr = kern.nr;
  assert(mr > 0 && nr > 0 && mr <= kMaxTileRows && nr <= kMaxTileCols && kNGroup % nr == 0);
  // k blocks of (nearly) equal size, none longer than the k block (which
  // keeps its size in bytes): a short tail block would cost a full extra
  // pass over C for little work.
  constexpr std::int64_t kKcT =
      kKc * static_cast<std::int64_t>(sizeof(float)) / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t k_blocks = (k + kKcT - 1) / kKcT;
  const std::int64_t kc_step = (k + k_blocks - 1) / k_blocks;
  // Row blocks of (nearly) equal size, none over kMc rows, and as many as a
  // multiple of the threads when there are enough: each thread's share of
  // the tasks then holds the same number of rows (with blocks of kMc and a
  // short last one, two threads on 1024 rows split 576 : 448).
  std::int64_t row_blocks = (m + kMc - 1) / kMc;
  if (threads > 1 && row_blocks >= threads) row_blocks = (row_blocks + threads - 1) / threads * threads;
  const std::int64_t mc_step = ((m + row_blocks - 1) / row_blocks + mr - 1) / mr * mr;
  row_blocks = (m + mc_step - 1) / mc_step;

  // The tiles of rows [ic, ic + mc) and columns [jr0, jr1) of the block
  // (jc, pc), from a packed A block and the block's packed B panels.
  const auto run_tiles = [&](const T* a_pack, const T* b_pack, std::int64_t ic, std::int64_t mc,
                             std::int64_t jc, std::int64_t jr0, std::int64_t jr1, std::int64_t kc,
                             bool load_c) {
    for (std::int64_t jr = jr0; jr < jr1; jr += nr) {
      const std::int64_t cols = std::min<std::int64_t>(nr, jr1 - jr);
      const T* bp = b_pack + jr * kc;
      for (std::int64_t ir = 0; ir < mc; ir += mr) {
        const std::int64_t rows = std::min<std::int64_t>(mr, mc - ir);
        RunTile(kern, kc, a_pack + ir * kc, bp, c + (ic + ir) * g.ldc + jc + jr, g.ldc, rows, cols, load_c);
      }
    }
  };

  // One row block (a small batch, a convolution's weight gradient): each
  // thread takes whole panels of columns and runs every k block of them
  // itself, packing its own B panels and the (small) A. One parallel region
  // per GEMM instead of two per k block, and no thread reads panels another
  // packed: split the usual way, cnn-fashion's weight gradients (16 × 144 ×
  // 3136) ran slower on two threads than on one. The same tiles with the
  // same k blocks in the same order: the same bits.
  if (threads > 1 && row_blocks == 1) {
    ParallelFor(threads, (n + nr - 1) / nr, [&](std::int64_t q0, std::int64_t q1) {
      const std::int64_t j0 = q0 * nr, j1 = std::min(n, q1 * nr);
      T* a_pack = ThreadScratch<T, Role::kAPack>(static_cast<std::size_t>(kMc * kc_step + mr * kc_step));
      for (std::int64_t jc = j0; jc < j1; jc += kNc) {
        const std::int64_t nc = std::min(kNc, j1 - jc);
        T* b_pack =
            ThreadScratch<T, Role::kBPack>(static_cast<std::size_t>(kc_step * ((nc + nr - 1) / nr * nr)));
        for (std::int64_t pc = 0; pc < k; pc += kc_step) {
          const std::int64_t kc = std::min(kc_step, k - pc);
          PackB(bv, pc, kc, jc, nc, nr, b_pack);
          PackA(av, 0, m, pc, kc, mr, a_pack);
          run_tiles(a_pack, b_pack, 0, m, jc, 0, nc, kc, g.accumulate || pc > 0);
        }
      }
    });
    return;
  }

  for (std::int64_t jc = 0; jc < n; jc += kNc) {
    const std::int64_t nc = std::min(kNc, n - jc);
    const std::int64_t nc_padded = (nc + nr - 1) / nr * nr;
    // Column groups of kNGroup, narrower (whole panels) when there are fewer
    // row blocks than threads, so a product with few rows (a small batch)
    // still spreads over the threads.
    std::int64_t ngroup = kNGroup;
    if (row_blocks < threads) {
      const std::int64_t per_block = (threads + row_blocks - 1) / row_blocks;
      ngroup = std::min(kNGroup,
                        std::max<std::int64_t>(nr, ((nc + per_block - 1) / per_block + nr - 1) / nr * nr));
    }
    const std::int64_t col_groups = (nc + ngroup - 1) / ngroup;
    for (std::int64_t pc = 0; pc < k; pc += kc_step) {
      const std::int64_t kc = std::min(kc_step, k - pc);
      const bool load_c = g.accumulate || pc > 0;

      // Pack this KC×NC block of B (shared by all tasks), in parallel over panels.
      T* b_pack = ThreadScratch<T, Role::kBPack>(static_cast<std::size_t>(kc * nc_padded));
      const std::int64_t b_panels = nc_padded / nr;
      ParallelFor(threads, b_panels, [&](std::int64_t q0, std::int64_t q1) {
        PackB(bv, pc, kc, jc + q0 * nr, std::min(nc, q1 * nr) - q0 * nr, nr, b_pack + q0 * nr * kc);
      });

      // Tasks: (row block of MC) × (column group), row-block major so that
      // consecutive tasks of one thread reuse its packed A block.
      ParallelFor(threads, row_blocks * col_groups, [&](std::int64_t t0, std::int64_t t1) {
        T* a_pack = ThreadScratch<T, Role::kAPack>(static_cast<std::size_t>(kMc * kc + mr * kc));
        std::int64_t packed_block = -1;
        for (std::int64_t t = t0; t < t1; ++t) {
          const std::int64_t ib = t / col_groups, cg = t % col_groups;
          const std::int64_t ic = ib * mc_step;
          const std::int64_t mc = std::min(mc_step, m - ic);
          if (packed_block != ib) {
            PackA(av, ic, mc, pc, kc, mr, a_pack);
            packed_block = ib;
          }
          const std::int64_t j_begin = cg * ngroup;
          run_tiles(a_pack, b_pack, ic, mc, jc, j_begin, std::min(nc, j_begin + ngroup), kc, load_c);
        }
      });
    }
  }
}

template void GemmBlocked(const MicroKernel&, int, const GemmArgs&, const float*, const float*, float*,
                          const std::int64_t*);
template void GemmBlocked(const F64Kernel&, int, const GemmArgs&, const float*, const float*, double*,
                          const std::int64_t*);
template void GemmBlocked(const F64Kernel&, int, const GemmArgs&, const double*, const double*, double*,
                          const std::int64_t*);

// ---- scalar micro-kernel ---------------------------------------------------------
namespace {

constexpr int kScalarMr = 4;
constexpr int kScalarNr = 8;

void ScalarKernel(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc,
                  bool load_c) {
  float acc[kScalarMr][kScalarNr];
  for (int r = 0; r < kScalarMr; ++r) {
    for (int j = 0; j < kScalarNr; ++j) acc[r][j] = load_c ? c[r * ldc + j] : 0.0f;
  }
  for (std::int64_t p = 0; p < kc; ++p) {
    const float* arow = ap + p * kScalarMr;
    const float* brow = bp + p * kScalarNr;
    for (int r = 0; r < kScalarMr; ++r) {
      for (int j = 0; j < kScalarNr; ++j) {
        acc[r][j] = hd::RepopsStep(acc[r][j], arow[r], brow[j]);
      }
    }
  }
  for (int r = 0; r < kScalarMr; ++r) {
    for (int j = 0; j < kScalarNr; ++j) c[r * ldc + j] = acc[r][j];
  }
}

}  // namespace

MicroKernel ScalarMicroKernel() { return {kScalarMr, kScalarNr, &ScalarKernel, "scalar"}; }

}  // namespace vt::kernels::detail
