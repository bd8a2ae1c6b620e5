#pragma once
// Matrix multiplication in the three modes, plus the raw GEMM entry points
// that other operators (linear, conv2d via im2col, attention) build on.
//
// repops order (the definition of the result): every output element
// C[i][j] = fma-free sequential sum over p = 0..k-1 of A[i][p]*B[p][j],
// accumulated in fp32 left to right starting from +0.0f (or from the existing
// C value when accumulating). Parallelism and SIMD lanes only ever split
// different (i, j); the k loop is never split or reordered.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/tensor.h"

namespace vt::kernels {

// Row-major views: element (r, c) of a non-transposed matrix X is X[r*ld + c];
// trans_x means the stored matrix is Xᵀ (so element (r, c) is X[c*ld + r]).
struct GemmArgs {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;  // C += A·B instead of C = A·B
};

// Strides of op(X) for a stored row-major X with leading dimension ld:
// element (r, c) of op(X) is X[r·row + c·col] (the layout rule above).
struct GemmStrides {
  std::int64_t row, col;
};
inline GemmStrides OperandStrides(bool trans, std::int64_t ld) {
  return trans ? GemmStrides{1, ld} : GemmStrides{ld, 1};
}

// Fixed-order fp32 GEMM (bitwise identical for every threads/simd choice, and
// on a CUDA device: config.device, kernels/device.h).
void GemmRepops(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c);
// GemmRepops with op(B) given by a row table: B not transposed (g.trans_b
// false, g.ldb unused), row p's n values at b + b_rows[p]. The same order
// and bits as GemmRepops on that matrix stored row-major. A convolution's
// im2col matrix is such a table over its (padded) input: row (c, kh, kw)
// starts at plane c shifted by (kh, kw), so no im2col copy is made. CPU
// only (config.device is ignored).
void GemmRepopsRows(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b,
                    const std::int64_t* b_rows, float* c);
// The definition itself: a plain triple loop over hd::RepopsDot (tests and
// tools compare every fast path with it bitwise).
void GemmRepopsReference(const GemmArgs& g, const float* a, const float* b, float* c);
// The SIMD path GemmRepops takes for a requested Simd on this CPU/build.
Simd RepopsSimdUsed(Simd requested);
// OpenBLAS sgemm (cuBLAS on a CUDA config.device): the native baseline.
void GemmNative(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c);
// The fastest fp64 GEMM here on fp64 operands: on a CPU our fma kernel
// (GemmWidenedF64's, reading fp64 operands) where config.simd resolves to
// AVX-512, or AVX2 with FMA, and the build has it, else OpenBLAS dgemm;
// cuBLAS on a CUDA config.device. The working precision of a rounded trainer and the
// certified fast path (its bits depend on the kernel, device and, for
// OpenBLAS, core type and threads: one honest fp64 evaluation).
void GemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c);
// What GemmF64 runs on the CPU for `simd` (for messages and benchmarks).
std::string_view GemmF64CpuName(Simd simd);
// The fp64 value of op(A)·op(B) for fp32 operands a and b (C fp64, row
// stride g.ldc; g.accumulate adds to it): every product exact, the sums
// rounded in an order of the kernel's choosing (fma, blocking, threads) —
// certified mode's fast path on a CPU, which accepts any order. Our fma
// kernel for `simd` (AVX-512 or AVX2), which widens the operands as it packs
// them (no fp64 copies). Precondition: WidenedF64GemmAvailable(simd)
// (elsewhere the caller widens the operands for GemmF64).
void GemmWidenedF64(Simd simd, int threads, const GemmArgs& g, const float* a, const float* b, double* c);
// Whether GemmWidenedF64 runs here for `simd`: it resolves to AVX-512, or to
// AVX2 on a CPU with FMA, and the build has the kernel.
bool WidenedF64GemmAvailable(Simd simd);
// TEST ONLY: other honest fp64 summation orders. A nonzero seed makes every
// fp64 fast path sum in a pseudo-random order drawn fresh for each call:
// GemmF64 (rounded mode's vendor GEMM and the certified fast path) over a
// random permutation of k in random split-K chunks whose sums are added in a
// random order, and the certified reductions likewise. It stands for the
// order another machine's BLAS may take: what must not depend on the order
// (certified values; a rounded trainer's outputs and log as its replay
// judges them) is tested under it. 0 = off.
void SetF64ShuffleSeedForTesting(std::uint64_t seed);
std::uint64_t F64ShuffleSeed();
struct ShuffledOrder {
  std::vector<std::int64_t> order;   // a permutation of [0, n)
  std::vector<std::int64_t> splits;  // increasing chunk ends in `order`, last = n
  std::vector<std::size_t> combine;  // the order in which chunk sums are added
};
ShuffledOrder DrawShuffledOrder(std::int64_t n);
// The canonical fp64 GEMM of rounded mode's reference evaluation
// (docs/kernels.md, "The canonical reference"): every output element
// C[i][j] = (accumulate ? C[i][j] : +0) + a(i,0)·b(0,j) + a(i,1)·b(1,j) + …,
// sequential over p = 0..k−1, each product and each sum rounded to fp64, no
// fma — the repops definition in fp64. Threads and SIMD lanes split outputs
// only (on AVX-512 and AVX2 the blocked driver of the repops GEMM with a
// multiply-then-add fp64 kernel of 8 or 4 lanes; elsewhere a 2-lane tile
// kernel), so the bits are the same on every machine and for every thread
// count.
void GemmF64Reference(int threads, const GemmArgs& g, const double* a, const double* b, double* c);
// The same on fp32 operands, widened as they are read (the same values, so
// the same bits as on fp64 copies; no copies made). Rounded mode's operators
// hand their fp32 tensors to every fp64 GEMM function below this way.
void GemmF64Reference(int threads, const GemmArgs& g, const float* a, const float* b, double* c);
// TEST ONLY: GemmF64Reference on the path `simd` resolves to here (kScalar:
// the 2-lane tile), so a test can hold every path this CPU runs to the
// definition.
void GemmF64ReferenceOnSimdForTesting(Simd simd, int threads, const GemmArgs& g, const double* a,
                                      const double* b, double* c);
// Elements of GemmF64Reference, the same bits, many at once: for each e,
//   out[e] = (g.accumulate ? out[e] : +0) + a(i,0)·b(0,j) + a(i,1)·b(1,j) + …
// sequential over p, no fma, with (i, j) = (elements[e].i, elements[e].j)
// and op(A), op(B) read from a + a_offset, b + b_offset (a batch item's or
// an image's operands). What a recording trainer rounds instead of its
// vendor values where β reaches the u/4 cap (kernels/ops/op_util.h
// SetReference). Evaluated with p outermost over groups of elements, so a
// strided factor (a column of a row-major matrix) is read once per group
// rather than one cache line per term per element; threads split groups.
// Elements asking for a large share of one product's outputs (not
// accumulating, no batch offsets) are computed as the whole product by
// GemmF64Reference instead.
struct GemmElement {
  std::int64_t i = 0, j = 0;
  std::int64_t a_offset = 0, b_offset = 0;
};
void GemmF64ReferenceElements(int threads, const GemmArgs& g, const double* a, const double* b,
                              std::span<const GemmElement> elements, double* out);
void GemmF64ReferenceElements(int threads, const GemmArgs& g, const float* a, const float* b,
                              std::span<const GemmElement> elements, double* out);
// The elements at `positions` of a dense row-major result (ldc = n) of GEMM
// g, batched: position t·m·n + i·n + j is element (i, j) of batch item t,
// whose op(A) starts at a + t·a_stride and op(B) at b + t·b_stride.
std::vector<GemmElement> DenseGemmElements(std::span<const std::size_t> positions, const GemmArgs& g,
                                           std::int64_t a_stride = 0, std::int64_t b_stride = 0);
// Rounded mode: the reference function (kernels/rounding.h ReferenceFn) of
// such a result, GemmF64ReferenceElements at the asked-for positions.
ReferenceFn GemmReference(int threads, const GemmArgs& g, const double* a, const double* b,
                          std::int64_t a_stride = 0, std::int64_t b_stride = 0);
ReferenceFn GemmReference(int threads, const GemmArgs& g, const float* a, const float* b,
                          std::int64_t a_stride = 0, std::int64_t b_stride = 0);
// The same sum over factors read through a(p), b(p) (an operand formed on
// the fly, e.g. conv2d's im2col column): init + a(0)·b(0) + a(1)·b(1) + ….
template <class GetA, class GetB>
double F64ReferenceDot(std::int64_t k, const GetA& a, const GetB& b, double init = 0.0) {
  double s = init;
  for (std::int64_t p = 0; p < k; ++p) s = s + static_cast<double>(a(p)) * static_cast<double>(b(p));
  return s;
}
// Rounded mode's GEMM: GemmF64Reference when config.f64_reference (every
// replay of a log, the arbiter), else GemmF64.
void GemmF64Rounded(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c);
// The same bits on fp32 operands: GemmF64Reference's or GemmWidenedF64's
// widening (the fma kernel GemmF64 runs on fp64 operands here) without fp64
// copies of the operands; for OpenBLAS dgemm, a CUDA device or the test
// shuffle, GemmF64 on fp64 copies.
void GemmF64Rounded(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, double* c);
// Whether GemmF64Rounded on fp32 operands runs veritrain's own kernels here
// (the reference or the widened fma GEMM), which may run one thread each
// inside ParallelFor bodies; OpenBLAS's thread count is process-global.
bool GemmF64RoundedIsOurs(const ExecConfig& config);

// ---- Rounded mode: the error bound β of fp64 GEMM outputs ------------------
// For any evaluation of c = Σ_{p<K} a_p·b_p in fp64 — any summation order,
// blocking, split-k or fma use (whatever BLAS another party runs) —
// |fl(c) − c| ≤ γ_K Σ|a_p b_p| ≤ γ_K ‖a‖₂‖b‖₂, γ_K = K·2^-53/(1 − K·2^-53).
// Two honest evaluations therefore differ by at most
//   β = 2γ_K·(1 + 2^-16)·‖a‖₂‖b‖₂   (the factor covers the norms' own rounding),
// computed from the row norms of op(A) and the column norms of op(B) in a
// fixed order (sequential over p, fp64, correctly rounded sqrt), so every
// party gets the same bits. Accumulated GEMMs (C += A·B over pieces) are one
// summation of all K_total terms: add every piece's squared norms and use
// K_total. A bias added afterwards in fp64 counts as one more term of
// magnitude |bias|. docs/kernels.md, "Error-bounded logging region".

// 2γ_terms·(1 + 2^-16); +inf when terms·2^-53 ≥ 1/2 (never for K < 2^31).
double GemmSlackFactor(std::int64_t terms);
// Adds the squared 2-norms of the m rows of op(A) to row_sq[0..m) and of the
// n columns of op(B) to col_sq[0..n) (each sequential over p from its current value).
void GemmNormsSq(const GemmArgs& g, const double* a, const double* b, double* row_sq, double* col_sq);
void GemmNormsSq(const GemmArgs& g, const float* a, const float* b, double* row_sq, double* col_sq);
// β of one output value from the norms of its two factor vectors and its
// bias's magnitude (0 without one): factor·(a_norm·b_norm + abs_bias).
// WriteGemmSlack's expression, and the element level's for one value.
inline double GemmSlackValue(double factor, double a_norm, double b_norm, double abs_bias) {
  return factor * (a_norm * b_norm + abs_bias);
}
// Which index of an output its bias is per: the column j (linear: bias[j])
// or the row i (conv2d's output channels: bias[i]).
enum class BiasPer : std::uint8_t { kColumn, kRow };
// slack[i·ld + j] = GemmSlackValue(factor, sqrt(row_sq[i]), sqrt(col_sq[j]), |bias[j]|)
// (|bias[i]| per row), factor = GemmSlackFactor(terms + (bias ? 1 : 0)); bias may be null (0).
void WriteGemmSlack(std::int64_t m, std::int64_t n, std::int64_t terms, const double* row_sq,
                    const double* col_sq, double* slack, std::int64_t ld, const double* bias = nullptr,
                    BiasPer per = BiasPer::kColumn);
// The same with no bias or one per row, `col_norm` (n values) as scratch: no
// allocation, so it may run inside a ParallelFor body.
void WriteGemmSlackInScratch(std::int64_t m, std::int64_t n, std::int64_t terms, const double* row_sq,
                             const double* col_sq, double* col_norm, double* slack, std::int64_t ld,
                             const double* row_bias = nullptr);
// One GEMM: GemmNormsSq + WriteGemmSlack with terms = g.k into slack (ldc layout).
void GemmSlackF64(const GemmArgs& g, const double* a, const double* b, double* slack,
                  const double* bias = nullptr, BiasPer per = BiasPer::kColumn);
void GemmSlackF64(const GemmArgs& g, const float* a, const float* b, double* slack,
                  const double* bias = nullptr, BiasPer per = BiasPer::kColumn);

struct MatMulOptions {
  bool trans_a = false;
  bool trans_b = false;
};

// out[..., m, n] = op(a)[..., m, k] · op(b)[..., k, n]. `a` may be batched
// (rank ≥ 2, leading dims are batch); `b` is rank 2 (shared) or has the same
// batch dims as `a`. Shape mismatches are Status::Invalid "shape-mismatch".
// `out` is resized (and must not alias `a` or `b`). Rounded mode rounds the
// whole output once, in row-major order, through ctx.RoundOutput with the
// GEMM error bound β (GemmSlackF64) per value.
Status MatMul(const OpContext& ctx, const Tensor& a, const Tensor& b, Tensor& out,
              MatMulOptions options = {});

}  // namespace vt::kernels
