// CUDA kernels and cuBLAS calls behind kernels/cuda/device.h.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/arith_hd.h"
#include "kernels/certify_hd.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/module.h"

namespace vt::kernels::cuda {
namespace {

Status CudaError(cudaError_t e, const char* what) {
  return Status::Error("cuda-error", std::string(what) + ": " + cudaGetErrorString(e));
}

#define VT_CUDA_TRY(expr)                                      \
  do {                                                         \
    const cudaError_t vt_cuda_e_ = (expr);                     \
    if (vt_cuda_e_ != cudaSuccess) return CudaError(vt_cuda_e_, #expr); \
  } while (0)

#define VT_CUBLAS_TRY(expr)                                                              \
  do {                                                                                   \
    const cublasStatus_t vt_cublas_s_ = (expr);                                          \
    if (vt_cublas_s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      return Status::Error("cuda-error", std::string(#expr) + ": cublas status " +       \
                                             std::to_string(static_cast<int>(vt_cublas_s_))); \
    }                                                                                    \
  } while (0)

// A device buffer freed on scope exit.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (m_ptr != nullptr) cudaFree(m_ptr);
  }
  Status Allocate(std::size_t count) {
    m_count = count;
    if (count == 0) return Status::Ok();
    VT_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&m_ptr), count * sizeof(T)));
    return Status::Ok();
  }
  Status Upload(const T* host) {
    if (m_count == 0) return Status::Ok();
    VT_CUDA_TRY(cudaMemcpy(m_ptr, host, m_count * sizeof(T), cudaMemcpyHostToDevice));
    return Status::Ok();
  }
  Status Download(T* host) const {
    if (m_count == 0) return Status::Ok();
    VT_CUDA_TRY(cudaMemcpy(host, m_ptr, m_count * sizeof(T), cudaMemcpyDeviceToHost));
    return Status::Ok();
  }
  T* get() const { return m_ptr; }

 private:
  T* m_ptr = nullptr;
  std::size_t m_count = 0;
};

// Elements a row-major operand spans (rows × ld, the last row only to its
// used columns).
std::size_t Span(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>((rows - 1) * ld + cols);
}

struct Operands {
  std::size_t a, b, c;
};
Operands Sizes(const GemmArgs& g) {
  return {g.trans_a ? Span(g.k, g.m, g.lda) : Span(g.m, g.k, g.lda),
          g.trans_b ? Span(g.n, g.k, g.ldb) : Span(g.k, g.n, g.ldb), Span(g.m, g.n, g.ldc)};
}

Status Require() {
  if (!CudaAvailable()) return Status::Error("cuda-unavailable", CudaDescription());
  return Status::Ok();
}

constexpr int kTile = 16;

// Repops GEMM: one thread per C element, tiles of A and B staged in shared
// memory. Each thread walks p = 0..k−1 in order (tile by tile, and inside a
// tile only over real p — zero padding is never added, since +0 would turn a
// −0 accumulator into +0), applying hd::RepopsStep.
__global__ void RepopsGemmKernel(GemmArgs g, const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.y) * kTile + ty;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kTile + tx;
  const bool inside = i < g.m && j < g.n;
  float acc = (inside && g.accumulate) ? c[i * g.ldc + j] : 0.0f;
  for (std::int64_t p0 = 0; p0 < g.k; p0 += kTile) {
    const std::int64_t pa = p0 + tx, pb = p0 + ty;
    float av = 0.0f, bv = 0.0f;
    if (i < g.m && pa < g.k) av = g.trans_a ? a[pa * g.lda + i] : a[i * g.lda + pa];
    if (pb < g.k && j < g.n) bv = g.trans_b ? b[j * g.ldb + pb] : b[pb * g.ldb + j];
    as[ty][tx] = av;
    bs[ty][tx] = bv;
    __syncthreads();
    const int limit = g.k - p0 < kTile ? static_cast<int>(g.k - p0) : kTile;
    for (int pp = 0; pp < limit; ++pp) acc = hd::RepopsStep(acc, as[ty][pp], bs[pp][tx]);
    __syncthreads();
  }
  if (inside) c[i * g.ldc + j] = acc;
}

__global__ void RoundKernel(int bits, std::uint32_t tau_q16, const double* __restrict__ exact,
                            float* __restrict__ out, std::uint8_t* __restrict__ flags, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const hd::GridPos g = hd::Locate(exact[i], bits);
  if (g.special != 0) {
    out[i] = hd::FloatFromBits(hd::SpecialBits(g));
    flags[i] = 0;
    return;
  }
  const bool away = hd::NearestIsAway(g);
  out[i] = hd::FloatFromBits(hd::NeighbourBits(g, away));
  const bool near = tau_q16 != 0 && hd::WithinTau(g, tau_q16, 0);
  flags[i] = static_cast<std::uint8_t>((near ? 1 : 0) | (hd::AwayToUp(g, away) ? 2 : 0));
}

cublasHandle_t Handle() {
  // One handle per host thread (cuBLAS handles are not for concurrent use).
  thread_local cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
    return h;
  }();
  return handle;
}

}  // namespace

bool CudaAvailable() {
  // Asked once per process: every offloaded GEMM checks it (Require), and
  // the device count does not change while the process runs.
  static const bool available = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return available;
}

std::string CudaDescription() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("CUDA runtime: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA device";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "device 0 (properties unavailable)";
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

Status GemmRepopsCuda(const GemmArgs& g, const float* a, const float* b, float* c) {
  if (g.m <= 0 || g.n <= 0) return Status::Ok();
  VT_TRY(Require());
  const Operands n = Sizes(g);
  DeviceBuffer<float> da, db, dc;
  VT_TRY(da.Allocate(n.a));
  VT_TRY(db.Allocate(n.b));
  VT_TRY(dc.Allocate(n.c));
  VT_TRY(da.Upload(a));
  VT_TRY(db.Upload(b));
  VT_TRY(dc.Upload(c));  // accumulate reads C; padding between rows is preserved either way
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((g.n + kTile - 1) / kTile), static_cast<unsigned>((g.m + kTile - 1) / kTile));
  RepopsGemmKernel<<<grid, block>>>(g, da.get(), db.get(), dc.get());
  VT_CUDA_TRY(cudaGetLastError());
  VT_CUDA_TRY(cudaDeviceSynchronize());
  return dc.Download(c);
}

namespace {

// Row-major C = op(A)·op(B) (+ C when g.accumulate) on device buffers laid
// out as g says: column-major Cᵀ = op(B)ᵀ·op(A)ᵀ for cuBLAS. g.k > 0.
template <typename T, typename Gemm>
Status CallGemm(cublasHandle_t handle, const GemmArgs& g, const T* da, const T* db, T* dc, Gemm gemm) {
  const T alpha = 1, beta = g.accumulate ? 1 : 0;
  VT_CUBLAS_TRY(gemm(handle, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                     static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha, db,
                     static_cast<int>(g.ldb), da, static_cast<int>(g.lda), &beta, dc, static_cast<int>(g.ldc)));
  return Status::Ok();
}

Result<cublasHandle_t> RequireHandle() {
  VT_TRY(Require());
  cublasHandle_t handle = Handle();
  if (handle == nullptr) return Status::Error("cuda-error", "cublasCreate failed");
  return handle;
}

template <typename T, typename Gemm>
Status CublasGemm(const GemmArgs& g, const T* a, const T* b, T* c, Gemm gemm) {
  if (g.m <= 0 || g.n <= 0) return Status::Ok();
  VT_TRY(Require());
  if (g.k <= 0) {
    // An empty sum: C = 0, or C unchanged when accumulating. (cuBLAS would
    // refuse the leading dimensions of empty operands, which may be 0.)
    if (!g.accumulate) {
      for (std::int64_t i = 0; i < g.m; ++i) {
        for (std::int64_t j = 0; j < g.n; ++j) c[i * g.ldc + j] = T(0);
      }
    }
    return Status::Ok();
  }
  VT_ASSIGN_OR_RETURN(cublasHandle_t handle, RequireHandle());
  const Operands n = Sizes(g);
  DeviceBuffer<T> da, db, dc;
  VT_TRY(da.Allocate(n.a));
  VT_TRY(db.Allocate(n.b));
  VT_TRY(dc.Allocate(n.c));
  VT_TRY(da.Upload(a));
  VT_TRY(db.Upload(b));
  VT_TRY(dc.Upload(c));
  VT_TRY(CallGemm(handle, g, da.get(), db.get(), dc.get(), gemm));
  VT_CUDA_TRY(cudaDeviceSynchronize());
  return dc.Download(c);
}

}  // namespace

Status GemmNativeCuda(const GemmArgs& g, const float* a, const float* b, float* c) {
  return CublasGemm<float>(g, a, b, c, cublasSgemm);
}

Status GemmF64Cuda(const GemmArgs& g, const double* a, const double* b, double* c) {
  return CublasGemm<double>(g, a, b, c, cublasDgemm);
}

// ---- certified GEMM fast path ------------------------------------------------------

namespace {

constexpr int kNoBits = 1 << 20;  // the line has no nonzero element (as on the CPU)

// x (rows × cols, row stride ld) → compact fp64 (exact: fp32 ⊂ fp64).
__global__ void WidenKernel(const float* __restrict__ x, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                            double* __restrict__ out) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  out[e] = static_cast<double>(x[(e / cols) * ld + e % cols]);
}

// Per line l < lines (element p at x[l·line_stride + p·elem_stride], p < k):
// the 2-norm, summed in fp64 (any order is covered by the certificate's
// (1 + 2^-16) factor), and the smallest LowBitExponent of a nonzero element.
__global__ void LineStatsKernel(const float* __restrict__ x, std::int64_t lines, std::int64_t k,
                                std::int64_t line_stride, std::int64_t elem_stride, double* __restrict__ norm,
                                int* __restrict__ lsb) {
  const std::int64_t l = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (l >= lines) return;
  double sq = 0.0;
  int low = kNoBits;
  for (std::int64_t p = 0; p < k; ++p) {
    const float v = x[l * line_stride + p * elem_stride];
    const double d = static_cast<double>(v);
    sq = sq + d * d;
    if (v != 0.0f) {
      const int e = LowBitExponent(v);
      low = e < low ? e : low;
    }
  }
  norm[l] = sqrt(sq);
  lsb[l] = low;
}

// The certificate per output (kernels/certify_hd.h, the CPU's own code):
// a certified output is written to c, the others are flagged and keep c's
// value (c0) for the exact path on the host.
__global__ void CertifyKernel(std::int64_t m, std::int64_t n, const double* __restrict__ c64,
                              const double* __restrict__ row_norm, const double* __restrict__ col_norm,
                              const int* __restrict__ row_lsb, const int* __restrict__ col_lsb, double half,
                              bool accumulate, float* __restrict__ c, std::int64_t ldc,
                              std::uint8_t* __restrict__ slow) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= m * n) return;
  const std::int64_t i = e / n, j = e % n;
  float out = 0.0f;
  const bool certified = CertifyGemmOutput(c64[e], row_norm[i], col_norm[j], accumulate ? c[i * ldc + j] : 0.0f,
                                           row_lsb[i] + col_lsb[j], half, &out);
  if (certified) c[i * ldc + j] = out;
  slow[e] = certified ? 0 : 1;
}

constexpr int kBlock = 256;
unsigned Blocks(std::int64_t count) { return static_cast<unsigned>((count + kBlock - 1) / kBlock); }

}  // namespace

Status CertifiedGemmFastCuda(const GemmArgs& g, const float* a, const float* b, float* c, double half,
                             std::uint8_t* slow) {
  if (g.m <= 0 || g.n <= 0) return Status::Ok();
  if (g.k <= 0) return Status::Error("cuda-error", "CertifiedGemmFastCuda needs k > 0");
  VT_ASSIGN_OR_RETURN(cublasHandle_t handle, RequireHandle());
  const Operands n = Sizes(g);
  const std::int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
  const std::int64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
  const std::int64_t mn = g.m * g.n;
  DeviceBuffer<float> da, db, dc;
  DeviceBuffer<double> a64, b64, c64, row_norm, col_norm;
  DeviceBuffer<int> row_lsb, col_lsb;
  DeviceBuffer<std::uint8_t> dslow;
  VT_TRY(da.Allocate(n.a));
  VT_TRY(db.Allocate(n.b));
  VT_TRY(dc.Allocate(n.c));
  VT_TRY(a64.Allocate(static_cast<std::size_t>(a_rows * a_cols)));
  VT_TRY(b64.Allocate(static_cast<std::size_t>(b_rows * b_cols)));
  VT_TRY(c64.Allocate(static_cast<std::size_t>(mn)));
  VT_TRY(row_norm.Allocate(static_cast<std::size_t>(g.m)));
  VT_TRY(col_norm.Allocate(static_cast<std::size_t>(g.n)));
  VT_TRY(row_lsb.Allocate(static_cast<std::size_t>(g.m)));
  VT_TRY(col_lsb.Allocate(static_cast<std::size_t>(g.n)));
  VT_TRY(dslow.Allocate(static_cast<std::size_t>(mn)));
  VT_TRY(da.Upload(a));
  VT_TRY(db.Upload(b));
  VT_TRY(dc.Upload(c));  // c0 when accumulating; the padding between rows either way
  WidenKernel<<<Blocks(a_rows * a_cols), kBlock>>>(da.get(), a_rows, a_cols, g.lda, a64.get());
  WidenKernel<<<Blocks(b_rows * b_cols), kBlock>>>(db.get(), b_rows, b_cols, g.ldb, b64.get());
  if (g.accumulate) WidenKernel<<<Blocks(mn), kBlock>>>(dc.get(), g.m, g.n, g.ldc, c64.get());
  LineStatsKernel<<<Blocks(g.m), kBlock>>>(da.get(), g.m, g.k, g.trans_a ? 1 : g.lda, g.trans_a ? g.lda : 1,
                                            row_norm.get(), row_lsb.get());
  LineStatsKernel<<<Blocks(g.n), kBlock>>>(db.get(), g.n, g.k, g.trans_b ? g.ldb : 1, g.trans_b ? 1 : g.ldb,
                                            col_norm.get(), col_lsb.get());
  VT_CUDA_TRY(cudaGetLastError());
  GemmArgs g64 = g;
  g64.lda = a_cols;
  g64.ldb = b_cols;
  g64.ldc = g.n;
  VT_TRY(CallGemm(handle, g64, a64.get(), b64.get(), c64.get(), cublasDgemm));
  CertifyKernel<<<Blocks(mn), kBlock>>>(g.m, g.n, c64.get(), row_norm.get(), col_norm.get(), row_lsb.get(),
                                        col_lsb.get(), half, g.accumulate, dc.get(), g.ldc, dslow.get());
  VT_CUDA_TRY(cudaGetLastError());
  VT_CUDA_TRY(cudaDeviceSynchronize());
  VT_TRY(dc.Download(c));
  return dslow.Download(slow);
}

Status RoundToBitsCuda(const RoundingSpec& spec, std::span<const double> exact, std::span<float> out,
                       std::span<std::uint8_t> flags) {
  VT_TRY(spec.Validate());
  if (out.size() != exact.size() || flags.size() != exact.size()) {
    return Status::Error("rounding-size-mismatch", "exact, out and flags must have the same size");
  }
  if (exact.empty()) return Status::Ok();
  VT_TRY(Require());
  DeviceBuffer<double> dx;
  DeviceBuffer<float> dout;
  DeviceBuffer<std::uint8_t> dflags;
  VT_TRY(dx.Allocate(exact.size()));
  VT_TRY(dout.Allocate(exact.size()));
  VT_TRY(dflags.Allocate(exact.size()));
  VT_TRY(dx.Upload(exact.data()));
  const std::int64_t n = static_cast<std::int64_t>(exact.size());
  constexpr int kThreads = 256;
  RoundKernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads>>>(spec.bits, spec.tau_q16, dx.get(),
                                                                                 dout.get(), dflags.get(), n);
  VT_CUDA_TRY(cudaGetLastError());
  VT_CUDA_TRY(cudaDeviceSynchronize());
  VT_TRY(dout.Download(out.data()));
  return dflags.Download(flags.data());
}

}  // namespace vt::kernels::cuda

extern "C" const vt::kernels::cuda::ModuleApi* vt_cuda_module() {
  using namespace vt::kernels::cuda;
  static const ModuleApi api{kModuleAbi,    CudaAvailable,  CudaDescription,      GemmRepopsCuda,
                             GemmNativeCuda, GemmF64Cuda,    CertifiedGemmFastCuda};
  return &api;
}
