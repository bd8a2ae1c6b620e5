// Conv2d (im2col + GEMM) and 2-D pooling, NCHW.
//
// Conv2dForward — x [N,Ci,H,W], w [Co,Ci,KH,KW], b [Co] → y [N,Co,OH,OW].
//   For each image n in order: col = im2col(x[n]), a [Ci·KH·KW, OH·OW]
//   matrix with row q = (ci·KH + kh)·KW + kw and column p = oh·OW + ow,
//   col[q][p] = x[n, ci, oh·sh − ph + kh, ow·sw − pw + kw] (0 outside);
//   y[n] = w[Co, Ci·KH·KW] · col: each element a repops GEMM element
//   (sequential over q from +0), then y = y + b[co] (bias last).
// Conv2dBackward — outputs dx, dw, db in that order.
//   dw = Σ_n dy[n]·col(n)ᵀ: each element sequential over (n, p) — image 0's
//        p = 0..OH·OW−1 first, then image 1's, … (GemmArgs::accumulate);
//   dcol = wᵀ·dy[n] (sequential over co); dx[n] = col2im(dcol): dx starts at
//        +0 and each element receives its contributions in increasing (q, p)
//        order;
//   db[co] = TreeSum over j = n·OH·OW + p of dy[n, co, p].
// MaxPool2d — y = the first maximum in window order (kh, kw row-major,
//   padding excluded); a NaN replaces the current maximum (PyTorch's rule,
//   so NaN propagates). Backward: dx starts at +0; per (n, c) plane, for the
//   outputs in row-major order, dx[argmax] += dy (the same argmax rule).
// AvgPool2d — y = (Σ over the valid window positions in row-major order,
//   from +0) / (KH·KW). Backward: per plane, for the outputs in row-major
//   order, g = dy / (KH·KW) is added to every valid position of its window in
//   row-major order (dx starts at +0).
// Rounded mode runs the same sequences in fp64 (OpenBLAS dgemm for the GEMMs)
// and rounds the outputs in the order above.
// Certified mode: every GEMM output and sum above is the correctly rounded
// exact value (kernels/certified.h): y = CR(Σ w·col + b); dw = CR(Σ over all
// (n, p)); dx element = CR(Σ over its (co, kh, kw) contributions of w·dy)
// (DyToCol); db = CR(Σ dy); avgpool y = CR(Σ window / (KH·KW)); the pooling
// backwards give each dx element CR(Σ of the contributions it receives).

#include "kernels/ops/conv.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "kernels/ops/op_util.h"
#include "kernels/simd_clones.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

struct ConvGeometry {
  std::int64_t n = 0, ci = 0, h = 0, w = 0;
  std::int64_t co = 0, kh = 0, kw = 0;
  std::int64_t oh = 0, ow = 0;
  std::int64_t ckk = 0, ohw = 0;
};

Status CheckSpatial(std::int64_t stride_h, std::int64_t stride_w, std::int64_t pad_h, std::int64_t pad_w) {
  if (stride_h < 1 || stride_w < 1 || stride_h > kMaxSpatialAttr || stride_w > kMaxSpatialAttr) {
    return BadAttribute("stride must be in [1, 2^20]");
  }
  if (pad_h < 0 || pad_w < 0 || pad_h > kMaxSpatialAttr || pad_w > kMaxSpatialAttr) {
    return BadAttribute("padding must be in [0, 2^20]");
  }
  return Status::Ok();
}

Status ConvGeometryFor(const Tensor& x, const Tensor& w, const Conv2dParams& p, ConvGeometry* g) {
  VT_TRY(CheckInput(x, "conv2d x"));
  VT_TRY(CheckInput(w, "conv2d w"));
  if (x.rank() != 4 || w.rank() != 4) return ShapeMismatch("conv2d needs x [N,Ci,H,W] and w [Co,Ci,KH,KW]");
  if (x.dim(1) != w.dim(1)) {
    return ShapeMismatch("conv2d channels: x " + ShapeToString(x.shape()) + ", w " + ShapeToString(w.shape()));
  }
  VT_TRY(CheckSpatial(p.stride_h, p.stride_w, p.pad_h, p.pad_w));
  g->n = x.dim(0);
  g->ci = x.dim(1);
  g->h = x.dim(2);
  g->w = x.dim(3);
  g->co = w.dim(0);
  g->kh = w.dim(2);
  g->kw = w.dim(3);
  g->oh = OutExtent(g->h, g->kh, p.stride_h, p.pad_h);
  g->ow = OutExtent(g->w, g->kw, p.stride_w, p.pad_w);
  if (g->oh < 1 || g->ow < 1) return ShapeMismatch("conv2d kernel larger than the padded input");
  if (!ProductWithin({g->ci, g->kh, g->kw}, &g->ckk) || !ProductWithin({g->oh, g->ow}, &g->ohw)) {
    return TooLarge("conv2d geometry");
  }
  std::int64_t col = 0, out = 0;
  if (!ProductWithin({g->ckk, g->ohw}, &col) || !ProductWithin({g->n, g->co, g->ohw}, &out)) {
    return TooLarge("conv2d im2col buffer or output");
  }
  return Status::Ok();
}

// ⌈a / b⌉ for a ≥ 0, b ≥ 1.
std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The output columns [first, second) whose window puts kernel column kw on
// an input column inside the row: iw = ow·stride_w − pad_w + kw ∈ [0, w).
std::pair<std::int64_t, std::int64_t> InBoundsColumns(const ConvGeometry& g, const Conv2dParams& p, std::int64_t kw) {
  const std::int64_t ow0 = std::min(g.ow, CeilDiv(std::max<std::int64_t>(p.pad_w - kw, 0), p.stride_w));
  const std::int64_t ow1 = std::max(ow0, std::min(g.ow, CeilDiv(std::max<std::int64_t>(g.w + p.pad_w - kw, 0), p.stride_w)));
  return {ow0, ow1};
}

// Kernel offset (dr, dc) of a stride-1 convolution whose output rows are as
// wide as the input's (there may be more or fewer of them than input rows):
// output position k = i·w + j meets plane position k + shift, shift =
// dr·w + dc, where row i + dr and column j + dc lie inside the h × w plane.
// Those positions are one run, [first, last), less the columns [z0, z1) of
// each of its rows that the shift carries across a row end. im2col copies
// the run (ShiftedPlane), col2im adds it (ShiftedAdd).
struct ShiftedRun {
  std::int64_t i0 = 0, i1 = 0;       // output rows whose input row lies inside the plane
  std::int64_t first = 0, last = 0;  // rows [i0, i1) less the |dc| values read past the plane's ends
  std::int64_t shift = 0;
  std::int64_t z0 = 0, z1 = 0;  // each row's wrapped columns
  bool empty = true;            // no output position meets the plane
};

ShiftedRun ShiftedRunFor(const ConvGeometry& g, std::int64_t dr, std::int64_t dc) {
  ShiftedRun r;
  const std::int64_t w = g.w;
  r.i0 = std::clamp<std::int64_t>(-dr, 0, g.oh);
  r.i1 = std::clamp<std::int64_t>(g.h - dr, r.i0, g.oh);
  r.empty = r.i1 == r.i0 || std::abs(dc) >= w;
  r.first = r.i0 * w + std::max<std::int64_t>(-dc, 0);
  r.last = r.i1 * w - std::max<std::int64_t>(dc, 0);
  r.shift = dr * w + dc;
  r.z0 = dc > 0 ? w - dc : 0;
  r.z1 = dc > 0 ? w : -dc;
  return r;
}

// out[i·w + j] = plane[(i + dr)·w + j + dc] where that lies inside the
// plane, 0 elsewhere, for the g.oh output rows i: Im2Col's row for kernel
// offset (dr, dc) (see ShiftedRun).
void ShiftedPlane(const float* plane, const ConvGeometry& g, std::int64_t dr, std::int64_t dc, float* out) {
  const ShiftedRun r = ShiftedRunFor(g, dr, dc);
  const std::int64_t w = g.w;
  std::fill(out, out + r.i0 * w, 0.0f);
  std::fill(out + r.i1 * w, out + g.oh * w, 0.0f);
  if (r.empty) {
    std::fill(out + r.i0 * w, out + r.i1 * w, 0.0f);
    return;
  }
  // libc's copy runs at the CPU's full vector width; this file is built for
  // the baseline, whose 16-byte loop held im2col to a store per four values
  // (8 % of cnn-fashion's native step). The values read past a row end are
  // then the wrapped columns, zeroed; those the run leaves out too.
  std::memcpy(out + r.first, plane + r.first + r.shift,
              static_cast<std::size_t>(r.last - r.first) * sizeof(float));
  // Usually one column per row (a 3 × 3 window's pad of 1): a store, not a
  // memset call per row (std::fill's, 1.9 % of cnn-fashion's native step).
  if (r.z1 - r.z0 == 1) {
    for (std::int64_t i = r.i0; i < r.i1; ++i) out[i * w + r.z0] = 0.0f;
  } else if (r.z1 > r.z0) {
    for (std::int64_t i = r.i0; i < r.i1; ++i) std::fill(out + i * w + r.z0, out + i * w + r.z1, 0.0f);
  }
}

// col[q][p] for one image (rows q of channel range [c0, c1)); row q starts
// at col + q·ld (ld ≥ ohw: several images' columns side by side).
// (fp32 in every mode: rounded mode's GEMMs widen it as they read it.)
void Im2Col(const float* x, const ConvGeometry& g, const Conv2dParams& p, std::int64_t c0, std::int64_t c1,
            float* col, std::int64_t ld) {
  const std::int64_t kk = g.kh * g.kw;
  // Stride 1 with rows as wide as the input's ("same" padding, the usual
  // 3 × 3 / pad 1): row q is the plane shifted by (kh − pad_h) rows and
  // (kw − pad_w) columns, so its in-bounds part is one contiguous copy, and
  // only the columns the shift wraps across row ends are zeroed after it.
  // (Row by row, 14 values at a time, cnn-fashion's im2col took 15 % of its
  // step.)
  const bool shifted_copy = p.stride_h == 1 && p.stride_w == 1 && g.ow == g.w;
  for (std::int64_t c = c0; c < c1; ++c) {
    const float* plane = x + c * g.h * g.w;
    for (std::int64_t r = 0; r < kk; ++r) {
      const std::int64_t kh = r / g.kw, kw = r % g.kw;
      float* row = col + (c * kk + r) * ld;
      if (shifted_copy) {
        ShiftedPlane(plane, g, kh - p.pad_h, kw - p.pad_w, row);
        continue;
      }
      // The windows whose column lands inside the row, [ow0, ow1); zeros
      // outside it (no bounds test per element: a stride-1 row is a copy).
      const auto [ow0, ow1] = InBoundsColumns(g, p, kw);
      for (std::int64_t oh = 0; oh < g.oh; ++oh) {
        const std::int64_t ih = oh * p.stride_h - p.pad_h + kh;
        float* out = row + oh * g.ow;
        if (ih < 0 || ih >= g.h) {
          std::fill(out, out + g.ow, 0.0f);
          continue;
        }
        const std::int64_t base = ih * g.w + kw - p.pad_w;  // + ow·stride: the element read
        std::fill(out, out + ow0, 0.0f);
        if (p.stride_w == 1) {
          for (std::int64_t ow = ow0; ow < ow1; ++ow) out[ow] = plane[base + ow];
        } else {
          for (std::int64_t ow = ow0; ow < ow1; ++ow) out[ow] = plane[base + ow * p.stride_w];
        }
        std::fill(out + ow1, out + g.ow, 0.0f);
      }
    }
  }
}

// Element (q, pos) of one image's Im2Col matrix, read straight from x:
// the input under kernel offset q = (c, kh, kw) of window pos = (oh, ow),
// 0 in the padding.
float Im2ColValue(const float* x, const ConvGeometry& g, const Conv2dParams& p, std::int64_t q,
                  std::int64_t pos) {
  const std::int64_t kk = g.kh * g.kw;
  const std::int64_t c = q / kk, kh = q % kk / g.kw, kw = q % g.kw;
  const std::int64_t ih = pos / g.ow * p.stride_h - p.pad_h + kh;
  const std::int64_t iw = pos % g.ow * p.stride_w - p.pad_w + kw;
  if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return 0.0f;
  return x[(c * g.h + ih) * g.w + iw];
}

// dst[k] = dst[k] + src[k], k < n, at the CPU's vector width (Col2Im's
// runs; this file is otherwise built for the baseline).
VT_SIMD_CLONES void AddRun(float* __restrict dst, const float* __restrict src, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = dst[k] + src[k];
}
VT_SIMD_CLONES void AddRun(double* __restrict dst, const double* __restrict src, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) dst[k] = dst[k] + src[k];
}

// plane[k + shift] += in[k] for every output position k that meets the
// plane: Col2Im's adds for kernel offset (dr, dc) (ShiftedPlane's
// transpose; see ShiftedRun). The run is added at once; the values of the
// wrapped columns, which it adds into too, are put back afterwards exactly
// as they were. (Row by row, 14 values at a time, col2im took 6 % of
// cnn-fashion's native step.) `saved` holds at least g.ohw values.
template <class T>
void ShiftedAdd(const T* in, const ConvGeometry& g, std::int64_t dr, std::int64_t dc, T* plane, T* saved) {
  const ShiftedRun r = ShiftedRunFor(g, dr, dc);
  if (r.empty) return;
  const std::int64_t w = g.w;
  std::int64_t count = 0;  // at most one per output position
  for (std::int64_t i = r.i0; i < r.i1; ++i) {
    for (std::int64_t k = i * w + r.z0; k < i * w + r.z1; ++k) {
      if (k >= r.first && k < r.last) saved[count++] = plane[k + r.shift];
    }
  }
  AddRun(plane + r.first + r.shift, in + r.first, r.last - r.first);
  std::int64_t next = 0;
  for (std::int64_t i = r.i0; i < r.i1; ++i) {
    for (std::int64_t k = i * w + r.z0; k < i * w + r.z1; ++k) {
      if (k >= r.first && k < r.last) plane[k + r.shift] = saved[next++];
    }
  }
}

// dx[c] += dcol rows of channel c, in increasing (q, p) order; dx zeroed by
// the caller. `scratch` holds g.ohw values per channel (ShiftedAdd's;
// allocated by the calling thread, see ColumnTreeSum).
template <class T>
void Col2Im(const T* dcol, const ConvGeometry& g, const Conv2dParams& p, std::int64_t c0, std::int64_t c1,
            T* dx, T* scratch) {
  const std::int64_t kk = g.kh * g.kw;
  const bool shifted_add = p.stride_h == 1 && p.stride_w == 1 && g.ow == g.w;  // as in Im2Col
  for (std::int64_t c = c0; c < c1; ++c) {
    T* plane = dx + c * g.h * g.w;
    for (std::int64_t r = 0; r < kk; ++r) {
      const std::int64_t kh = r / g.kw, kw = r % g.kw;
      const T* row = dcol + (c * kk + r) * g.ohw;
      if (shifted_add) {
        ShiftedAdd(row, g, kh - p.pad_h, kw - p.pad_w, plane, scratch + c * g.ohw);
        continue;
      }
      // Only the windows [ow0, ow1) put kw inside the row; distinct windows
      // hit distinct columns, so each value still gets one term per (q, oh).
      const auto [ow0, ow1] = InBoundsColumns(g, p, kw);
      for (std::int64_t oh = 0; oh < g.oh; ++oh) {
        const std::int64_t ih = oh * p.stride_h - p.pad_h + kh;
        if (ih < 0 || ih >= g.h) continue;
        const std::int64_t base = ih * g.w + kw - p.pad_w;  // + ow·stride: the element written
        const T* in = row + oh * g.ow;
        if (p.stride_w == 1) {
          for (std::int64_t ow = ow0; ow < ow1; ++ow) plane[base + ow] = plane[base + ow] + in[ow];
        } else {
          for (std::int64_t ow = ow0; ow < ow1; ++ow) {
            plane[base + ow * p.stride_w] = plane[base + ow * p.stride_w] + in[ow];
          }
        }
      }
    }
  }
}

// Certified mode runs the per-image GEMMs of a convolution for a group of
// images at once, their columns side by side: one GEMM of G·(pixels)
// columns instead of G GEMMs, so the weights are widened to fp64 and normed
// once and dgemm sees a wider matrix. Each output is the correctly rounded
// value however GEMMs are grouped. The fp32 weight gradient groups images
// the same way (ConvBackwardFp32), its sums continued from group to group.
// A group's scratch stays under kGroupValues floats per buffer: 1 MiB, the
// size of a core's L2, whose fp64 copy stays in the next level. (Groups of
// 2^22 values — all 16 images of cnn-fashion's second convolution at once —
// made its certified step 12–18 % slower on a 1 MiB-L2 AMD EPYC, 1 and 2
// threads, docs/kernels.md; its repops weight gradients 5 % slower on one
// thread.)
constexpr std::int64_t kGroupValues = std::int64_t{1} << 16;

// A grouped GEMM's operand or result buffer (or the backward's im2col of
// every image), reused by the calling thread from one call to the next
// (fresh multi-megabyte buffers cost more in page faults and zero-filling
// than the copies into them). Contents are unspecified: every user writes
// what it reads. `slot` names the buffer.
float* GroupScratch(int slot, std::int64_t values) {
  thread_local std::vector<float> buffers[5];
  std::vector<float>& buffer = buffers[slot];
  if (buffer.size() < static_cast<std::size_t>(values)) buffer.resize(static_cast<std::size_t>(values));
  return buffer.data();
}

std::atomic<std::int64_t> g_images_per_group_for_testing{0};

std::int64_t ImagesPerGroup(std::int64_t values_per_image, std::int64_t images) {
  const std::int64_t forced = g_images_per_group_for_testing.load(std::memory_order_relaxed);
  const std::int64_t by_size =
      forced > 0 ? forced : kGroupValues / std::max<std::int64_t>(values_per_image, 1);
  return std::clamp<std::int64_t>(by_size, 1, std::max<std::int64_t>(images, 1));
}

// out[(n0 + i)·rows·cols + r·cols + p] = grouped[r·(G·cols) + i·cols + p]:
// a group's side-by-side result back to image-major layout.
void ScatterGroup(const float* grouped, std::int64_t rows, std::int64_t cols, std::int64_t group,
                  float* out) {
  for (std::int64_t i = 0; i < group; ++i) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* src = grouped + r * group * cols + i * cols;
      std::copy(src, src + cols, out + (i * rows + r) * cols);
    }
  }
}

// Certified mode's input gradient needs each dx element as ONE exact dot
// product (col2im would round partial sums): dx[n][ci][pos] =
// CR(Σ_{co,kh,kw} w[co][ci][kh][kw]·dy[n][co][oh][ow]) over the (oh, ow) whose
// window puts (kh, kw) on pos. As a GEMM: dx[n] = wr · dycol with
// wr[ci][(co·KH + kh)·KW + kw] = w[co][ci][kh][kw] and dycol[(co,kh,kw)][pos]
// = that dy value, or 0 where no window does (an exact zero term).
// Row q of one image's dycol starts at dycol + q·ld (ld ≥ h·w).
void DyToCol(const float* dy, const ConvGeometry& g, const Conv2dParams& p, std::int64_t q0, std::int64_t q1,
             float* dycol, std::int64_t ld) {
  const std::int64_t hw = g.h * g.w, kk = g.kh * g.kw;
  for (std::int64_t q = q0; q < q1; ++q) {
    const std::int64_t co = q / kk, kh = (q % kk) / g.kw, kw = q % g.kw;
    const float* plane = dy + co * g.ohw;
    float* row = dycol + q * ld;
    // Scattered like Im2Col reads: for a fixed (kh, kw), distinct windows
    // (oh, ow) put it on distinct positions, and every other one is 0.
    std::fill(row, row + hw, 0.0f);
    const auto [ow0, ow1] = InBoundsColumns(g, p, kw);
    for (std::int64_t oh = 0; oh < g.oh; ++oh) {
      const std::int64_t ih = oh * p.stride_h - p.pad_h + kh;
      if (ih < 0 || ih >= g.h) continue;
      const float* in = plane + oh * g.ow;
      const std::int64_t base = ih * g.w + kw - p.pad_w;  // + ow·stride: the element written
      for (std::int64_t ow = ow0; ow < ow1; ++ow) row[base + ow * p.stride_w] = in[ow];
    }
  }
}

// Conv2dBackward in certified mode: dx by DyToCol (above); dw = CR(one exact
// sum over every (n, p)): the images are pieces of one certified GEMM;
// db[co] = CR(Σ_{n,p} dy).
Status Conv2dBackwardCertified(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                               Tensor& dw, Tensor& db, const ConvGeometry& g, const Conv2dParams& params) {
  const std::int64_t hw = g.h * g.w, x_image = g.ci * hw, kq = g.co * g.kh * g.kw;
  std::int64_t cols_all = 0, dycol_size = 0;
  if (!ProductWithin({g.n, g.ckk, g.ohw}, &cols_all) ||
      !ProductWithin({std::max(kq, g.ci), hw}, &dycol_size)) {
    return TooLarge("conv2d certified scratch");
  }
  const std::int64_t group = ImagesPerGroup(dycol_size, g.n);
  float* const cols = GroupScratch(4, cols_all);  // every value written by Im2Col
  float* const dycol = GroupScratch(0, kq * hw * group);
  float* const dx_group = GroupScratch(1, g.ci * hw * group);
  std::vector<float> wr(static_cast<std::size_t>(g.ci * kq));
  const float* wd = w.data();
  for (std::int64_t co = 0; co < g.co; ++co) {
    for (std::int64_t ci = 0; ci < g.ci; ++ci) {
      for (std::int64_t r = 0; r < g.kh * g.kw; ++r) {
        wr[static_cast<std::size_t>(ci * kq + co * g.kh * g.kw + r)] = wd[(co * g.ci + ci) * g.kh * g.kw + r];
      }
    }
  }
  std::vector<CertGemmPiece> dw_pieces;
  for (std::int64_t n = 0; n < g.n; ++n) {
    float* col = cols + n * g.ckk * g.ohw;
    ParallelFor(ctx.threads(), g.ci, [&](std::int64_t c0, std::int64_t c1) {
      Im2Col(x.data() + n * x_image, g, params, c0, c1, col, g.ohw);
    });
    dw_pieces.push_back(CertGemmPiece{MakeGemm(g.co, g.ckk, g.ohw, false, g.ohw, true, g.ohw, g.ckk),
                                      dy.data() + n * g.co * g.ohw, col});
  }
  CertifiedGemmPieces(ctx.config(), g.co, g.ckk, dw_pieces, dw.data(), g.ckk, false);
  // dx of a group of images: wr · [dycol_n0 | dycol_n0+1 | …].
  for (std::int64_t n0 = 0; n0 < g.n; n0 += group) {
    const std::int64_t images = std::min(group, g.n - n0), ld = images * hw;
    for (std::int64_t i = 0; i < images; ++i) {
      ParallelFor(ctx.threads(), kq, [&](std::int64_t q0, std::int64_t q1) {
        DyToCol(dy.data() + (n0 + i) * g.co * g.ohw, g, params, q0, q1, dycol + i * hw, ld);
      });
    }
    CertifiedGemm(ctx.config(), MakeGemm(g.ci, ld, kq, false, kq, false, ld, ld), wr.data(), dycol, dx_group);
    ScatterGroup(dx_group, g.ci, hw, images, dx.data() + n0 * x_image);
  }
  const auto dy_rows = ChannelMajor(ctx.threads(), dy.data(), g.n, g.co, g.ohw);
  ParallelFor(ctx.threads(), g.co, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* row = dy_rows.get() + c * g.n * g.ohw;
      db.data()[c] = CertifiedSum(g.n * g.ohw, [&](std::int64_t j) { return row[j]; });
    }
  });
  return Status::Ok();
}

// A convolution's GEMM in mode M. Native mode takes the repops GEMM on the
// CPU too: for a convolution's small products (16 × 196 × 144 in
// cnn-fashion) it is faster than OpenBLAS here, and native promises no order.
template <class M, class T>
void ConvGemm(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, T* c) {
  if constexpr (std::is_same_v<M, NativeMath>) {
    if (config.device == Device::kCpu) return GemmRepops(config, g, a, b, c);
  }
  M::Gemm(config, g, a, b, c);
}

// Conv2dForward's fp32 path for a stride-1 convolution on the CPU, without
// an im2col copy: im2col's row (c, kh, kw) is plane c of a zero-padded copy
// of the image (Hp × Wp, Hp = H + 2·pad_h, Wp = W + 2·pad_w) read from
// offset kh·Wp + kw, so GemmRepopsRows reads it through a row table. Each
// output row is computed Wp values wide; the last KW − 1 of them (windows
// past the row's end) are dropped. Every kept value is the GEMM element
// im2col + GemmRepops gives — the same products of the same values (the
// padding's +0 included) in the same order — and the bias is added after
// it, as there. Nullopt where the padded copy would not pay: strides, a
// CUDA device, or rows the KW − 1 dropped values would more than double.
// (cnn-fashion: im2col's copies and the partial tiles of its 196-column
// GEMMs were most of its convolutions' forward time; Wp = 16 makes 224
// columns, whole tiles.)
struct PaddedRows {
  std::int64_t hp = 0, wp = 0, cols = 0;  // padded plane; GEMM columns OH·Wp
  std::int64_t image = 0;                 // ci planes of Hp × Wp, then KW zeros (the last row's overhang)
  std::vector<std::int64_t> rows;         // im2col row q's offset in the padded image
};

std::optional<PaddedRows> PaddedRowsFor(const OpContext& ctx, const ConvGeometry& g, const Conv2dParams& p) {
  if (p.stride_h != 1 || p.stride_w != 1 || ctx.config().device != Device::kCpu || g.kw - 1 > g.ow) {
    return std::nullopt;
  }
  PaddedRows r;
  r.hp = g.h + 2 * p.pad_h;
  r.wp = g.w + 2 * p.pad_w;  // = OW + KW − 1
  std::int64_t planes = 0;
  if (!ProductWithin({g.ci, r.hp, r.wp}, &planes) || !ProductWithin({g.oh, r.wp}, &r.cols))
    return std::nullopt;
  r.image = planes + g.kw;
  r.rows.resize(static_cast<std::size_t>(g.ckk));
  for (std::int64_t c = 0; c < g.ci; ++c) {
    for (std::int64_t kh = 0; kh < g.kh; ++kh) {
      for (std::int64_t kw = 0; kw < g.kw; ++kw) {
        r.rows[static_cast<std::size_t>((c * g.kh + kh) * g.kw + kw)] = (c * r.hp + kh) * r.wp + kw;
      }
    }
  }
  return r;
}

// y = w · im2col(x) + b for every image, through `padded` (see PaddedRows).
// Images run side by side (ForEachItem), each slot with its own padded image
// and output rows: per image the GEMM is small (16 × 224 × 144 in
// cnn-fashion), and split between threads it took longer than on one.
void ConvForwardByRows(const OpContext& ctx, const ConvGeometry& g, const Conv2dParams& p,
                       const PaddedRows& padded, const float* x, const float* w, const Tensor* b, float* y) {
  const std::int64_t wide_size = g.co * padded.cols;
  const int slots = ItemSlots<RepopsMath>(ctx, g.n, padded.image + wide_size);
  // Zeroed here: the borders of a padded image stay +0.
  ChunkScratch<float> images(slots, padded.image), wides(slots, wide_size);
  const GemmArgs gy = MakeGemm(g.co, padded.cols, g.ckk, false, g.ckk, false, 0, padded.cols);
  ForEachItem<RepopsMath>(
      ctx, g.n,
      [&](const ExecConfig& cfg, int slot, std::int64_t n) {
        float* const image = images[slot];
        float* const wide = wides[slot];
        for (std::int64_t c = 0; c < g.ci; ++c) {
          const float* plane = x + (n * g.ci + c) * g.h * g.w;
          float* out = image + (c * padded.hp + p.pad_h) * padded.wp + p.pad_w;
          for (std::int64_t ih = 0; ih < g.h; ++ih)
            std::copy(plane + ih * g.w, plane + (ih + 1) * g.w, out + ih * padded.wp);
        }
        GemmRepopsRows(cfg, gy, w, image, padded.rows.data(), wide);
        for (std::int64_t c = 0; c < g.co; ++c) {
          const float bias = b != nullptr ? (*b)[c] : 0.0f;
          for (std::int64_t oh = 0; oh < g.oh; ++oh) {
            const float* in = wide + c * padded.cols + oh * padded.wp;
            float* out = y + ((n * g.co + c) * g.oh + oh) * g.ow;
            if (b != nullptr) {
              for (std::int64_t ow = 0; ow < g.ow; ++ow) out[ow] = in[ow] + bias;
            } else {
              std::copy(in, in + g.ow, out);
            }
          }
        }
      },
      padded.image + wide_size);
}

// Conv2dForward in rounded mode: images side by side, each slot with its own
// im2col scratch (as ConvBackwardRounded: one thread each only where the
// fp64 GEMM is ours). The bias is per row (channel) here:
// β = γ_{K+1}·(‖w row‖‖col column‖ + |b|), linear's expression (the element
// rule's: verify::RoundedLinearSlack), w's row norms computed once.
template <class M>
void ConvForwardRounded(const OpContext& ctx, const ConvGeometry& g, const Conv2dParams& params, const float* x,
                        const float* wa, const Tensor* b, Outputs<double>& outs, double* yo) {
  const bool side_by_side = GemmF64RoundedIsOurs(ctx.config());
  ExecConfig inner = ctx.config();  // each GEMM's
  if (side_by_side) inner.threads = 1;
  const GemmArgs gy = MakeGemm(g.co, g.ohw, g.ckk, false, g.ckk, false, g.ohw, g.ohw);
  std::vector<double> w_row_sq(static_cast<std::size_t>(g.co), 0.0), bias;
  GemmNormsSq(MakeGemm(g.co, 0, g.ckk, false, g.ckk, false, 0, 0), wa, nullptr, w_row_sq.data(), nullptr);
  if (b != nullptr) bias.assign(b->values().begin(), b->values().end());
  double* const sy = outs.Slack(yo);
  const int slots = side_by_side ? ItemSlots<RepopsMath>(ctx, g.n, (g.ckk + 4) * g.ohw) : 1;
  ChunkScratch<float> cols(slots, g.ckk * g.ohw);
  ChunkScratch<double> col_sq(slots, g.ohw), col_norm(slots, g.ohw);
  ParallelForChunks(slots, g.n, [&](std::int64_t slot, std::int64_t n0, std::int64_t n1) {
    for (std::int64_t n = n0; n < n1; ++n) {
      Im2Col(x + n * g.ci * g.h * g.w, g, params, 0, g.ci, cols[slot], g.ohw);
      double* const yn = yo + n * g.co * g.ohw;
      ConvGemm<M>(inner, gy, wa, cols[slot], yn);
      std::fill(col_sq[slot], col_sq[slot] + g.ohw, 0.0);
      GemmNormsSq(MakeGemm(0, g.ohw, g.ckk, false, 0, false, g.ohw, 0), nullptr, cols[slot], nullptr, col_sq[slot]);
      WriteGemmSlackInScratch(g.co, g.ohw, g.ckk, w_row_sq.data(), col_sq[slot], col_norm[slot],
                              sy + n * g.co * g.ohw, g.ohw, b != nullptr ? bias.data() : nullptr);
      for (std::int64_t c = 0; c < (b != nullptr ? g.co : 0); ++c) {
        double* const row = yn + c * g.ohw;
        for (std::int64_t p = 0; p < g.ohw; ++p) row[p] = row[p] + bias[static_cast<std::size_t>(c)];
      }
    }
  });
}

// Conv2dBackward's fp32 path (repops, and native, whose convolution GEMMs
// are ours on the CPU: ConvGemm); dx zeroed by the caller, dy_rows is dy
// channel-major ([co][n·ohw], ChannelMajor), gdcol one image's wᵀ·dy.
//   dw: each element is one sequential sum over (n, p), images in order. As
//     the image-by-image GEMMs continued by accumulate, but several images
//     at a time: their im2col matrices side by side make one GEMM whose k
//     runs over their columns, dy_rows being op(A) as stored — the same
//     products in the same order, so the same bits, in fewer and larger
//     GEMMs; each thread runs those of its chunk of input channels (the
//     chunk's columns of dw: the split changes no sum).
//   dx: each image's wᵀ·dy and col2im, images side by side (ForEachItem),
//     each slot with its own scratch. (Image by image, the threads split
//     GEMMs of 144 × 196 × 16 and cnn-fashion's convolution backwards took
//     longer on two threads than on one.)
template <class M>
void ConvBackwardFp32(const OpContext& ctx, const ConvGeometry& g, const Conv2dParams& p, const float* x,
                      const float* w, const float* dy, const float* dy_rows, const GemmArgs& gdcol, float* dx,
                      float* dw) {
  const std::int64_t x_image = g.ci * g.h * g.w, kk = g.kh * g.kw;
  // dw by chunks of input channels, one chunk per thread: a chunk's im2col
  // rows are its own columns of dw, so the core that writes them packs them
  // for the GEMM. (Im2col and GEMM split apart, each core packed rows the
  // other had written; where the two cores share no cache that doubled the
  // packs' and copies' time, and cnn-fashion's step ran no faster on two
  // threads than on one.)
  const std::int64_t chunks = ParallelChunks(ctx.threads(), g.ci);
  const std::int64_t chunk_rows = (g.ci + chunks - 1) / chunks * kk;  // the largest chunk's
  const std::int64_t group = ImagesPerGroup(chunk_rows * g.ohw, g.n);
  const std::int64_t stride = (chunk_rows * g.ohw * group + 31) / 32 * 32;  // 128-byte apart
  float* const cols = GroupScratch(4, stride * chunks);  // every value read written by Im2Col
  ExecConfig per_chunk = ctx.config();
  if (chunks > 1) per_chunk.threads = 1;
  ParallelForChunks(ctx.threads(), g.ci, [&](std::int64_t chunk, std::int64_t c0, std::int64_t c1) {
    float* const col = cols + chunk * stride;
    for (std::int64_t n0 = 0; n0 < g.n; n0 += group) {
      const std::int64_t images = std::min(group, g.n - n0), ld = images * g.ohw;
      for (std::int64_t image = 0; image < images; ++image) {
        Im2Col(x + (n0 + image) * x_image + c0 * g.h * g.w, g, p, 0, c1 - c0, col + image * g.ohw, ld);
      }
      const GemmArgs gdw = MakeGemm(g.co, (c1 - c0) * kk, ld, false, g.n * g.ohw, true, ld, g.ckk, n0 > 0);
      ConvGemm<M>(per_chunk, gdw, dy_rows + n0 * g.ohw, col, dw + c0 * kk);
    }
  });
  const std::int64_t per_slot = (g.ckk + g.ci) * g.ohw;
  const int slots = ItemSlots<RepopsMath>(ctx, g.n, per_slot);
  ChunkScratch<float> dcols(slots, g.ckk * g.ohw), sums(slots, g.ci * g.ohw);
  ForEachItem<RepopsMath>(
      ctx, g.n,
      [&](const ExecConfig& cfg, int slot, std::int64_t n) {
        ConvGemm<M>(cfg, gdcol, w, dy + n * g.co * g.ohw, dcols[slot]);
        Col2Im(dcols[slot], g, p, 0, g.ci, dx + n * x_image, sums[slot]);
      },
      per_slot);
}

// Conv2dBackward's values and β in rounded mode, split as the fp32 path
// splits them: dw by chunks of input channels, each chunk's fp64 GEMMs
// continued by accumulate image by image; dx image by image, images side by
// side, each slot with its own scratch. (Image by image with every step
// split between the threads, a two-thread rounded step of cnn-fashion took
// 1.6x its one-thread time.) Both run one thread each only where the fp64
// GEMM is ours (GemmF64RoundedIsOurs); otherwise one after the other with
// the job's threads inside each GEMM. The same operations per value: the
// same bits either way.
// β: dw is one sum over all (n, p) (accumulated GEMMs); each dx element is a
// sum of products w·dy over co and its window positions, so
// β = 2γ_{Co·KH·KW}·Σ_contributions ‖w[:, q]‖‖dy[n][:, p]‖, summed by the
// same col2im as the values.
template <class M>
void ConvBackwardRounded(const OpContext& ctx, const ConvGeometry& g, const Conv2dParams& params,
                         const float* x, const float* wa, const float* dya, const GemmArgs& gdcol,
                         Outputs<double>& outs, double* dxo, double* dwo) {
  const std::int64_t x_image = g.ci * g.h * g.w, kk = g.kh * g.kw;
  const bool side_by_side = GemmF64RoundedIsOurs(ctx.config());
  const int threads = side_by_side ? ctx.threads() : 1;
  ExecConfig inner = ctx.config();  // each GEMM's
  if (side_by_side) inner.threads = 1;
  // Columns of op(A) = wᵀ rows: ‖w[:, q]‖² via GemmNormsSq's row norms of wᵀ.
  std::vector<double> w_col_sq(static_cast<std::size_t>(g.ckk), 0.0);
  GemmNormsSq(MakeGemm(g.ckk, 0, g.co, true, g.ckk, false, 0, 0), wa, nullptr, w_col_sq.data(), nullptr);

  // dw, and its β's norms: dy's rows (chunk 0 adds them; the other chunks'
  // norms pass has no rows) and im2col's rows (each chunk its own).
  const std::int64_t chunks = ParallelChunks(threads, g.ci);
  ChunkScratch<float> cols(chunks, (g.ci + chunks - 1) / chunks * kk * g.ohw);
  std::vector<double> dw_row_sq(static_cast<std::size_t>(g.co), 0.0), dw_col_sq(static_cast<std::size_t>(g.ckk), 0.0);
  ParallelForChunks(threads, g.ci, [&](std::int64_t chunk, std::int64_t c0, std::int64_t c1) {
    float* const col = cols[chunk];
    const std::int64_t q0 = c0 * kk, q1 = c1 * kk;
    for (std::int64_t n = 0; n < g.n; ++n) {
      const float* dyn = dya + n * g.co * g.ohw;
      Im2Col(x + n * x_image + c0 * g.h * g.w, g, params, 0, c1 - c0, col, g.ohw);
      const GemmArgs gdw = MakeGemm(g.co, q1 - q0, g.ohw, false, g.ohw, true, g.ohw, g.ckk, n > 0);
      ConvGemm<M>(inner, gdw, dyn, col, dwo + q0);
      GemmArgs norms = gdw;
      if (chunk > 0) norms.m = 0;
      GemmNormsSq(norms, dyn, col, dw_row_sq.data(), dw_col_sq.data() + q0);
    }
  });
  WriteGemmSlack(g.co, g.ckk, g.n * g.ohw, dw_row_sq.data(), dw_col_sq.data(), outs.Slack(dwo), g.ckk);

  // dx and its β, image by image.
  double* const sx = outs.Slack(dxo);
  const std::int64_t per_slot = (2 * g.ckk + g.ci + 2) * g.ohw;
  const int slots = side_by_side ? ItemSlots<RepopsMath>(ctx, g.n, per_slot) : 1;
  ChunkScratch<double> dcols(slots, g.ckk * g.ohw), slack_cols(slots, g.ckk * g.ohw);
  ChunkScratch<double> sums(slots, g.ci * g.ohw), dy_col_sq(slots, g.ohw), col_norm(slots, g.ohw);
  ParallelForChunks(slots, g.n, [&](std::int64_t slot, std::int64_t n0, std::int64_t n1) {
    for (std::int64_t n = n0; n < n1; ++n) {
      const float* dyn = dya + n * g.co * g.ohw;
      ConvGemm<M>(inner, gdcol, wa, dyn, dcols[slot]);
      Col2Im(dcols[slot], g, params, 0, g.ci, dxo + n * x_image, sums[slot]);
      double* const dy_sq = dy_col_sq[slot];
      std::fill(dy_sq, dy_sq + g.ohw, 0.0);
      GemmNormsSq(MakeGemm(0, g.ohw, g.co, false, 0, false, g.ohw, 0), nullptr, dyn, nullptr, dy_sq);
      WriteGemmSlackInScratch(g.ckk, g.ohw, g.co * kk, w_col_sq.data(), dy_sq, col_norm[slot], slack_cols[slot],
                              g.ohw);
      Col2Im(slack_cols[slot], g, params, 0, g.ci, sx + n * x_image, sums[slot]);
    }
  });
}

}  // namespace

Status Conv2dForward(const OpContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y,
                     const Conv2dParams& params) {
  ConvGeometry g;
  VT_TRY(ConvGeometryFor(x, w, params, &g));
  if (b != nullptr) {
    VT_TRY(CheckInput(*b, "conv2d b"));
    VT_TRY(CheckShapeIs(*b, {g.co}, "conv2d b"));
  }
  y.Resize({g.n, g.co, g.oh, g.ow});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const float* wa = w.data();  // fp32 in every mode (see Conv2dBackward)
    if constexpr (M::kCertified) {
      // y = CR(Σ w·col + b) (the bias one more exact term of each output),
      // a group of images a GEMM: w · [col_n0 | col_n0+1 | …].
      const std::int64_t group = ImagesPerGroup(std::max(g.ckk, g.co) * g.ohw, g.n);
      float* const cols = GroupScratch(2, g.ckk * g.ohw * group);
      float* const y_group = GroupScratch(3, g.co * g.ohw * group);
      for (std::int64_t n0 = 0; n0 < g.n; n0 += group) {
        const std::int64_t images = std::min(group, g.n - n0), ld = images * g.ohw;
        for (std::int64_t i = 0; i < images; ++i) {
          ParallelFor(ctx.threads(), g.ci, [&](std::int64_t c0, std::int64_t c1) {
            Im2Col(x.data() + (n0 + i) * g.ci * g.h * g.w, g, params, c0, c1, cols + i * g.ohw, ld);
          });
        }
        GemmArgs gy = MakeGemm(g.co, ld, g.ckk, false, g.ckk, false, ld, ld);
        if (b != nullptr) {
          for (std::int64_t c = 0; c < g.co; ++c)
            std::fill(y_group + c * ld, y_group + (c + 1) * ld, (*b)[c]);
          gy.accumulate = true;
        }
        M::Gemm(ctx.config(), gy, wa, cols, y_group);
        ScatterGroup(y_group, g.co, g.ohw, images, yo + n0 * g.co * g.ohw);
      }
      return outs.Commit(ctx);
    }
    if constexpr (M::kRounded) {
      ConvForwardRounded<M>(ctx, g, params, x.data(), wa, b, outs, yo);
    } else if (std::optional<PaddedRows> padded = PaddedRowsFor(ctx, g, params)) {
      ConvForwardByRows(ctx, g, params, *padded, x.data(), wa, b, yo);
    } else {
      std::vector<float> col(static_cast<std::size_t>(g.ckk * g.ohw));
      for (std::int64_t n = 0; n < g.n; ++n) {
        const float* xn = x.data() + n * g.ci * g.h * g.w;
        ParallelFor(ctx.threads(), g.ci, [&](std::int64_t c0, std::int64_t c1) {
          Im2Col(xn, g, params, c0, c1, col.data(), g.ohw);
        });
        T* yn = yo + n * g.co * g.ohw;
        const GemmArgs gy = MakeGemm(g.co, g.ohw, g.ckk, false, g.ckk, false, g.ohw, g.ohw);
        ConvGemm<M>(ctx.config(), gy, wa, col.data(), yn);
        if (b != nullptr) {
          ParallelFor(ctx.threads(), g.co, [&](std::int64_t c0, std::int64_t c1) {
            for (std::int64_t c = c0; c < c1; ++c) {
              const T bias = static_cast<T>((*b)[c]);
              T* row = yn + c * g.ohw;
              for (std::int64_t p = 0; p < g.ohw; ++p) row[p] = row[p] + bias;
            }
          });
        }
      }
    }
    if constexpr (M::kRounded) {
      // Element (n, c, pos)'s reference: its GEMM dot over the im2col
      // column of window pos, then the bias as above.
      outs.SetReference(yo, EachValue(ctx.threads(), [&](std::size_t e) {
                          const auto i = static_cast<std::int64_t>(e);
                          const std::int64_t n = i / (g.co * g.ohw), c = i / g.ohw % g.co, pos = i % g.ohw;
                          const float* xn = x.data() + n * g.ci * g.h * g.w;
                          const T dot = F64ReferenceDot(
                              g.ckk, [&](std::int64_t q) { return wa[c * g.ckk + q]; },
                              [&](std::int64_t q) { return Im2ColValue(xn, g, params, q, pos); });
                          return b != nullptr ? dot + static_cast<T>((*b)[c]) : dot;
                        }));
    }
    return outs.Commit(ctx);
  });
}

Status Conv2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, const Tensor& w, Tensor& dx,
                      Tensor& dw, Tensor& db, const Conv2dParams& params) {
  ConvGeometry g;
  VT_TRY(ConvGeometryFor(x, w, params, &g));
  VT_TRY(CheckInput(dy, "conv2d dy"));
  VT_TRY(CheckShapeIs(dy, {g.n, g.co, g.oh, g.ow}, "conv2d dy"));
  dx.Resize(x.shape());
  dw.Resize(w.shape());
  db.Resize({g.co});
  if (ctx.mode() == Mode::kCertified) return Conv2dBackwardCertified(ctx, dy, x, w, dx, dw, db, g, params);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* dxo = outs.BindZeroed(dx);
    T* dwo = outs.Bind(dw);
    T* dbo = outs.Bind(db);
    // The fp32 operands in every mode: rounded mode's GEMMs widen them as
    // they read (kernels/matmul.h), the same bits as fp64 copies, which made
    // its fp64 packing 13 % of cnn-fashion's rounded step.
    const float* wa = w.data();
    const float* dya = dy.data();
    const std::int64_t x_image = g.ci * g.h * g.w;
    // dcol = wᵀ·dy of one image (col2im then sums it into dx).
    const GemmArgs gdcol = MakeGemm(g.ckk, g.ohw, g.co, true, g.ckk, false, g.ohw, g.ohw);
    const auto dy_rows = ChannelMajor(ctx.threads(), dy.data(), g.n, g.co, g.ohw);
    if constexpr (!M::kRounded) {
      ConvBackwardFp32<M>(ctx, g, params, x.data(), wa, dya, dy_rows.get(), gdcol, dxo, dwo);
    } else {
      ConvBackwardRounded<M>(ctx, g, params, x.data(), wa, dya, gdcol, outs, dxo, dwo);
      // dw[co][q]'s reference: one dot over (n, p), images in order, each
      // image's im2col row q read straight from x — continued output row by
      // output row, so finding a term's input takes no division (per term,
      // cnn-fashion's 18 capped weights a step took 7 % of its rounded step).
      outs.SetReference(dwo, EachValue(ctx.threads(), [&](std::size_t e) {
                          const std::int64_t co = static_cast<std::int64_t>(e) / g.ckk,
                                             q = static_cast<std::int64_t>(e) % g.ckk;
                          const std::int64_t kk = g.kh * g.kw, c = q / kk, kh = q % kk / g.kw, kw = q % g.kw;
                          double sum = 0.0;
                          for (std::int64_t n = 0; n < g.n; ++n) {
                            const float* plane = x.data() + n * x_image + c * g.h * g.w;
                            for (std::int64_t oh = 0; oh < g.oh; ++oh) {
                              const float* dy_row = dya + (n * g.co + co) * g.ohw + oh * g.ow;
                              const std::int64_t ih = oh * params.stride_h - params.pad_h + kh;
                              const bool row_inside = ih >= 0 && ih < g.h;
                              sum = F64ReferenceDot(
                                  g.ow, [&](std::int64_t ow) { return dy_row[ow]; },
                                  [&](std::int64_t ow) {
                                    const std::int64_t iw = ow * params.stride_w - params.pad_w + kw;
                                    return row_inside && iw >= 0 && iw < g.w ? plane[ih * g.w + iw] : 0.0f;
                                  },
                                  sum);
                            }
                          }
                          return sum;
                        }));
      // dx's reference: Col2Im's sum for one input element — +0, then for
      // each kernel offset in order the dcol value of the one window that
      // puts it there (if any), that value being the GEMM element of wᵀ·dy.
      outs.SetReference(dxo, [&](std::span<const std::size_t> positions, std::span<double> values) {
        std::vector<GemmElement> terms;       // every asked-for element's dcol values, in order
        std::vector<std::size_t> first_term;  // element k's are [first_term[k], first_term[k + 1])
        first_term.reserve(positions.size() + 1);
        for (const std::size_t e : positions) {
          first_term.push_back(terms.size());
          const auto i = static_cast<std::int64_t>(e);
          const std::int64_t n = i / x_image, c = i % x_image / (g.h * g.w);
          const std::int64_t ih = i % (g.h * g.w) / g.w, iw = i % g.w;
          for (std::int64_t r = 0; r < g.kh * g.kw; ++r) {
            const std::int64_t th = ih + params.pad_h - r / g.kw, tw = iw + params.pad_w - r % g.kw;
            if (th < 0 || tw < 0 || th % params.stride_h != 0 || tw % params.stride_w != 0) continue;
            const std::int64_t oh = th / params.stride_h, ow = tw / params.stride_w;
            if (oh >= g.oh || ow >= g.ow) continue;
            terms.push_back(GemmElement{c * g.kh * g.kw + r, oh * g.ow + ow, 0, n * g.co * g.ohw});
          }
        }
        first_term.push_back(terms.size());
        std::vector<double> term_values(terms.size());
        GemmF64ReferenceElements(ctx.threads(), gdcol, wa, dya, terms, term_values.data());
        for (std::size_t k = 0; k < positions.size(); ++k) {
          T sum = 0.0;
          for (std::size_t t = first_term[k]; t < first_term[k + 1]; ++t) sum = sum + term_values[t];
          values[k] = sum;
        }
      });
    }
    ParallelFor(ctx.threads(), g.co, [&](std::int64_t c0, std::int64_t c1) {
      for (std::int64_t c = c0; c < c1; ++c) {
        const float* row = dy_rows.get() + c * g.n * g.ohw;
        dbo[c] = TreeSum<T>(g.n * g.ohw, [&](std::int64_t j) { return static_cast<T>(row[j]); });
      }
    });
    return outs.Commit(ctx);
  });
}

// ---- pooling -------------------------------------------------------------------

namespace {

struct PoolGeometry {
  std::int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
};

Status PoolGeometryFor(const Tensor& x, const Pool2dParams& p, PoolGeometry* g) {
  VT_TRY(CheckInput(x, "pool2d x"));
  if (x.rank() != 4) return ShapeMismatch("pool2d needs x [N,C,H,W]");
  VT_TRY(CheckPool2dParams(p));
  g->planes = x.dim(0) * x.dim(1);
  g->h = x.dim(2);
  g->w = x.dim(3);
  g->oh = OutExtent(g->h, p.kernel_h, p.stride_h, p.pad_h);
  g->ow = OutExtent(g->w, p.kernel_w, p.stride_w, p.pad_w);
  if (g->oh < 1 || g->ow < 1) return ShapeMismatch("pool kernel larger than the padded input");
  std::int64_t out = 0;
  if (!ProductWithin({g->planes, g->oh, g->ow}, &out)) return TooLarge("pool2d output");
  return Status::Ok();
}

// The maxima of output row o_h's windows, all at once: WindowArgmax's rule
// (the first position, then each later one PoolMaxReplaces admits, in
// row-major window order) applied to every window of the row together, one
// window position at a time, so the loop over the windows vectorises.
// best[o] is window o's maximum and which[o] its position's offset from
// the window's first, kh·w + kw (so placing it takes no division; a plane
// of fewer than 2^31 values).
// Only for unpadded pooling, where every window lies inside the plane.
// (One window at a time, cnn-fashion's 2 × 2 stem pool took 7 % of its step
// forward and 8 % backward.)
void RowWindowMax(const Pool2dParams& p, std::int64_t w, std::int64_t o_h, std::int64_t ow,
                  const float* plane, float* best, std::int32_t* which) {
  assert(p.pad_h == 0 && p.pad_w == 0);
  const float* top = plane + o_h * p.stride_h * w;
  const std::int64_t sw = p.stride_w;
  for (std::int64_t o = 0; o < ow; ++o) {
    best[o] = top[o * sw];
    which[o] = 0;
  }
  for (std::int64_t kh = 0; kh < p.kernel_h; ++kh) {
    for (std::int64_t kw = kh == 0 ? 1 : 0; kw < p.kernel_w; ++kw) {
      const float* src = top + kh * w + kw;
      const auto r = static_cast<std::int32_t>(kh * w + kw);
      for (std::int64_t o = 0; o < ow; ++o) {
        const float v = src[o * sw];
        const bool take = PoolMaxReplaces(best[o], v);
        best[o] = take ? v : best[o];
        which[o] = take ? r : which[o];
      }
    }
  }
}

// RowWindowMax's output rows, one per chunk of ParallelForChunks over
// `planes`; none for padded pooling, which takes the general loop.
struct RowWindowScratch {
  RowWindowScratch(int threads, std::int64_t planes, std::int64_t ow, bool used)
      : best(used ? ChunkScratch<float>(ParallelChunks(threads, planes), ow) : ChunkScratch<float>()),
        which(used ? ChunkScratch<std::int32_t>(ParallelChunks(threads, planes), ow)
                   : ChunkScratch<std::int32_t>()) {}
  ChunkScratch<float> best;
  ChunkScratch<std::int32_t> which;
};

// Certified pooling backward: out[pos] = CR(Σ contribution(oh, ow, pos) over
// the windows covering pos) for every position of one plane; a contribution
// is an fp32 value or an exact zero.
template <class Contribution>
void GatherCertified(const PoolGeometry& g, const Pool2dParams& p, float* out, const Contribution& contribution) {
  // CoveringWindows' [first, last] as [oh0, oh1), none when empty.
  const auto range = [](std::pair<std::int64_t, std::int64_t> r) {
    return std::pair{r.first, std::max(r.first, r.second + 1)};
  };
  for (std::int64_t ih = 0; ih < g.h; ++ih) {
    // (Plain variables: a lambda below reads them, and clang refuses capturing structured bindings.)
    const std::pair<std::int64_t, std::int64_t> rows =
        range(CoveringWindows(ih, p.kernel_h, p.stride_h, p.pad_h, g.oh));
    const std::int64_t oh0 = rows.first, oh1 = rows.second;
    for (std::int64_t iw = 0; iw < g.w; ++iw) {
      const std::pair<std::int64_t, std::int64_t> cols =
          range(CoveringWindows(iw, p.kernel_w, p.stride_w, p.pad_w, g.ow));
      const std::int64_t ow0 = cols.first, ow1 = cols.second;
      const std::int64_t nw = ow1 - ow0, pos = ih * g.w + iw;
      out[pos] = CertifiedSum((oh1 - oh0) * nw, [&](std::int64_t t) {
        return contribution(oh0 + t / std::max<std::int64_t>(nw, 1), ow0 + t % std::max<std::int64_t>(nw, 1), pos);
      });
    }
  }
}

}  // namespace

void SetConvImagesPerGroupForTesting(std::int64_t images) { g_images_per_group_for_testing.store(images); }

Status CheckPool2dParams(const Pool2dParams& p) {
  if (p.kernel_h < 1 || p.kernel_w < 1 || p.kernel_h > kMaxSpatialAttr || p.kernel_w > kMaxSpatialAttr) {
    return BadAttribute("pool kernel must be in [1, 2^20]");
  }
  VT_TRY(CheckSpatial(p.stride_h, p.stride_w, p.pad_h, p.pad_w));
  if (p.pad_h > p.kernel_h / 2 || p.pad_w > p.kernel_w / 2) {
    return BadAttribute("pool padding must be at most half the kernel");
  }
  return Status::Ok();
}

Status MaxPool2dForward(const OpContext& ctx, const Tensor& x, Tensor& y, const Pool2dParams& params) {
  PoolGeometry g;
  VT_TRY(PoolGeometryFor(x, params, &g));
  y.Resize({x.dim(0), x.dim(1), g.oh, g.ow});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const bool rows =
        params.pad_h == 0 && params.pad_w == 0 && g.h * g.w <= std::numeric_limits<std::int32_t>::max();
    RowWindowScratch scratch(ctx.threads(), g.planes, g.ow, rows);
    ParallelForChunks(ctx.threads(), g.planes, [&](std::int64_t chunk, std::int64_t p0, std::int64_t p1) {
      float* const best = scratch.best[chunk];
      std::int32_t* const which = scratch.which[chunk];
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* plane = x.data() + pl * g.h * g.w;
        const auto x_at = [&](std::int64_t ih, std::int64_t iw) { return plane[ih * g.w + iw]; };
        T* out = yo + pl * g.oh * g.ow;
        for (std::int64_t oh = 0; oh < g.oh; ++oh) {
          if (rows) {
            RowWindowMax(params, g.w, oh, g.ow, plane, best, which);
            for (std::int64_t ow = 0; ow < g.ow; ++ow) out[oh * g.ow + ow] = static_cast<T>(best[ow]);
            continue;
          }
          for (std::int64_t ow = 0; ow < g.ow; ++ow) {
            const std::int64_t idx = WindowArgmax(params, g.h, g.w, oh, ow, x_at);
            out[oh * g.ow + ow] = idx < 0 ? T(0) : static_cast<T>(plane[idx]);  // idx ≥ 0 (see WindowArgmax)
          }
        }
      }
    });
    return outs.Commit(ctx);
  });
}

Status MaxPool2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx,
                         const Pool2dParams& params) {
  PoolGeometry g;
  VT_TRY(PoolGeometryFor(x, params, &g));
  VT_TRY(CheckInput(dy, "maxpool dy"));
  VT_TRY(CheckShapeIs(dy, {x.dim(0), x.dim(1), g.oh, g.ow}, "maxpool dy"));
  dx.Resize(x.shape());
  if (ctx.mode() == Mode::kCertified) {
    // dx[pos] = CR(Σ dy over the windows whose maximum is at pos).
    if (params.stride_h >= params.kernel_h && params.stride_w >= params.kernel_w) {
      // Windows that do not overlap (the usual 2 × 2, stride 2): a position
      // lies under at most one window, so its sum has one term — the
      // window's dy where it is that window's maximum (CR of one term,
      // CertifiedSum's own rule), an exact zero (+0) everywhere else — or
      // none (+0). The same values and counts as the gather below.
      ParallelFor(ctx.threads(), g.planes, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t pl = p0; pl < p1; ++pl) {
          const float* plane = x.data() + pl * g.h * g.w;
          const float* grad = dy.data() + pl * g.oh * g.ow;
          const auto x_at = [&](std::int64_t ih, std::int64_t iw) { return plane[ih * g.w + iw]; };
          float* out = dx.data() + pl * g.h * g.w;
          std::fill(out, out + g.h * g.w, 0.0f);
          for (std::int64_t oh = 0; oh < g.oh; ++oh) {
            for (std::int64_t ow = 0; ow < g.ow; ++ow) {
              const std::int64_t idx = WindowArgmax(params, g.h, g.w, oh, ow, x_at);  // ≥ 0
              out[idx] = CertifiedSum(1, [&](std::int64_t) { return grad[oh * g.ow + ow]; });
            }
          }
          CountCertified(CertKind::kSum, static_cast<std::uint64_t>(g.h * g.w - g.oh * g.ow), 0);
        }
      });
      return Status::Ok();
    }
    // Each window's maximum once per plane (a value is covered by several),
    // in one plane of scratch per chunk.
    ChunkScratch<std::int64_t> argmaxes(ParallelChunks(ctx.threads(), g.planes), g.oh * g.ow);
    ParallelForChunks(ctx.threads(), g.planes, [&](std::int64_t chunk, std::int64_t p0, std::int64_t p1) {
      std::int64_t* const argmax = argmaxes[chunk];
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* plane = x.data() + pl * g.h * g.w;
        const auto x_at = [&](std::int64_t ih, std::int64_t iw) { return plane[ih * g.w + iw]; };
        for (std::int64_t oh = 0; oh < g.oh; ++oh) {
          for (std::int64_t ow = 0; ow < g.ow; ++ow) {
            argmax[oh * g.ow + ow] = WindowArgmax(params, g.h, g.w, oh, ow, x_at);
          }
        }
        const float* grad = dy.data() + pl * g.oh * g.ow;
        GatherCertified(g, params, dx.data() + pl * g.h * g.w,
                        [&](std::int64_t oh, std::int64_t ow, std::int64_t pos) {
                          return argmax[oh * g.ow + ow] == pos ? grad[oh * g.ow + ow] : 0.0f;
                        });
      }
    });
    return Status::Ok();
  }
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dxo = outs.BindZeroed(dx);
    // Scattered window by window in row-major order: each value receives
    // its windows' dy in the order kernels::MaxPoolGradAt (the element
    // rule's per-value form) adds them; computing the maximum once a window
    // keeps this 4× cheaper than gathering (2 × 2 windows).
    const bool rows =
        params.pad_h == 0 && params.pad_w == 0 && g.h * g.w <= std::numeric_limits<std::int32_t>::max();
    RowWindowScratch scratch(ctx.threads(), g.planes, g.ow, rows);
    ParallelForChunks(ctx.threads(), g.planes, [&](std::int64_t chunk, std::int64_t p0, std::int64_t p1) {
      float* const best = scratch.best[chunk];
      std::int32_t* const which = scratch.which[chunk];
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* plane = x.data() + pl * g.h * g.w;
        const float* grad = dy.data() + pl * g.oh * g.ow;
        const auto x_at = [&](std::int64_t ih, std::int64_t iw) { return plane[ih * g.w + iw]; };
        T* out = dxo + pl * g.h * g.w;
        for (std::int64_t oh = 0; oh < g.oh; ++oh) {
          if (rows) {
            RowWindowMax(params, g.w, oh, g.ow, plane, best, which);
            for (std::int64_t ow = 0; ow < g.ow; ++ow) {
              const std::int64_t idx = oh * params.stride_h * g.w + ow * params.stride_w + which[ow];
              out[idx] = out[idx] + static_cast<T>(grad[oh * g.ow + ow]);
            }
            continue;
          }
          for (std::int64_t ow = 0; ow < g.ow; ++ow) {
            const std::int64_t idx = WindowArgmax(params, g.h, g.w, oh, ow, x_at);
            if (idx >= 0) out[idx] = out[idx] + static_cast<T>(grad[oh * g.ow + ow]);
          }
        }
      }
    });
    return outs.Commit(ctx);
  });
}

Status AvgPool2dForward(const OpContext& ctx, const Tensor& x, Tensor& y, const Pool2dParams& params) {
  PoolGeometry g;
  VT_TRY(PoolGeometryFor(x, params, &g));
  y.Resize({x.dim(0), x.dim(1), g.oh, g.ow});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    const T area = static_cast<T>(params.kernel_h * params.kernel_w);
    ParallelFor(ctx.threads(), g.planes, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* plane = x.data() + pl * g.h * g.w;
        T* out = yo + pl * g.oh * g.ow;
        for (std::int64_t oh = 0; oh < g.oh; ++oh) {
          for (std::int64_t ow = 0; ow < g.ow; ++ow) {
            if constexpr (M::kCertified) {
              // CR(Σ window / (KH·KW)), padding positions exact zeros.
              out[oh * g.ow + ow] = CertifiedMean(params.kernel_h * params.kernel_w, [&](std::int64_t t) {
                const std::int64_t ih = oh * params.stride_h - params.pad_h + t / params.kernel_w;
                const std::int64_t iw = ow * params.stride_w - params.pad_w + t % params.kernel_w;
                return (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) ? 0.0f : plane[ih * g.w + iw];
              });
              continue;
            }
            T sum = T(0);
            for (std::int64_t kh = 0; kh < params.kernel_h; ++kh) {
              const std::int64_t ih = oh * params.stride_h - params.pad_h + kh;
              if (ih < 0 || ih >= g.h) continue;
              for (std::int64_t kw = 0; kw < params.kernel_w; ++kw) {
                const std::int64_t iw = ow * params.stride_w - params.pad_w + kw;
                if (iw >= 0 && iw < g.w) sum = sum + static_cast<T>(plane[ih * g.w + iw]);
              }
            }
            out[oh * g.ow + ow] = sum / area;
          }
        }
      }
    });
    return outs.Commit(ctx);
  });
}

Status AvgPool2dBackward(const OpContext& ctx, const Tensor& dy, const Tensor& x, Tensor& dx,
                         const Pool2dParams& params) {
  PoolGeometry g;
  VT_TRY(PoolGeometryFor(x, params, &g));
  VT_TRY(CheckInput(dy, "avgpool dy"));
  VT_TRY(CheckShapeIs(dy, {x.dim(0), x.dim(1), g.oh, g.ow}, "avgpool dy"));
  dx.Resize(x.shape());
  if (ctx.mode() == Mode::kCertified) {
    // dx[pos] = CR(Σ over the windows covering pos of g), g = dy / (KH·KW) in fp32.
    const float area = static_cast<float>(params.kernel_h * params.kernel_w);
    ParallelFor(ctx.threads(), g.planes, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* grad = dy.data() + pl * g.oh * g.ow;
        GatherCertified(g, params, dx.data() + pl * g.h * g.w, [&](std::int64_t oh, std::int64_t ow, std::int64_t) {
          return grad[oh * g.ow + ow] / area;
        });
      }
    });
    return Status::Ok();
  }
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* dxo = outs.Bind(dx);
    if (params.stride_h == params.kernel_h && params.stride_w == params.kernel_w && params.pad_h == 0 &&
        params.pad_w == 0) {
      // The windows tile the plane (a global pool is one window): each value
      // lies in one window, or in none past the last whole one, so its sum
      // is +0 + that window's share, or +0. (AvgPoolGradAt's window search
      // per value — integer divisions — took 4 % of cnn-fashion's step.)
      const T area = static_cast<T>(params.kernel_h * params.kernel_w);
      ParallelFor(ctx.threads(), g.planes, [&](std::int64_t p0, std::int64_t p1) {
        for (std::int64_t pl = p0; pl < p1; ++pl) {
          const float* grad = dy.data() + pl * g.oh * g.ow;
          T* out = dxo + pl * g.h * g.w;
          std::fill(out, out + g.h * g.w, T(0));
          for (std::int64_t oh = 0; oh < g.oh; ++oh) {
            for (std::int64_t ow = 0; ow < g.ow; ++ow) {
              const T share = T(0) + static_cast<T>(grad[oh * g.ow + ow]) / area;
              for (std::int64_t ih = oh * params.kernel_h; ih < (oh + 1) * params.kernel_h; ++ih) {
                T* row = out + ih * g.w + ow * params.kernel_w;
                std::fill(row, row + params.kernel_w, share);
              }
            }
          }
        }
      });
      return outs.Commit(ctx);
    }
    // Each value gathers its windows' shares in row-major window order — the
    // order in which scattering the windows one after another adds them.
    ParallelFor(ctx.threads(), g.planes, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t pl = p0; pl < p1; ++pl) {
        const float* grad = dy.data() + pl * g.oh * g.ow;
        const auto dy_at = [&](std::int64_t oh, std::int64_t ow) { return grad[oh * g.ow + ow]; };
        T* out = dxo + pl * g.h * g.w;
        for (std::int64_t ih = 0; ih < g.h; ++ih)
          for (std::int64_t iw = 0; iw < g.w; ++iw)
            out[ih * g.w + iw] = AvgPoolGradAt<T>(params, g.oh, g.ow, ih, iw, dy_at);
      }
    });
    return outs.Commit(ctx);
  });
}

}  // namespace vt::kernels
