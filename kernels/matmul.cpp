#include "kernels/matmul.h"

#include <cblas.h>

#include <atomic>
#include <cassert>
#include <vector>

#include "kernels/arith_hd.h"
#include "kernels/gemm_repops.h"
#include "kernels/parallel.h"

namespace vt::kernels {

namespace {

// OpenBLAS's thread count is process-global; set it only when it changes.
void SetBlasThreads(int threads) {
  static std::atomic<int> current{-1};
  const int want = threads < 1 ? 1 : threads;
  if (current.exchange(want) != want) openblas_set_num_threads(want);
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
  detail::GemmRepopsBlocked(RepopsKernelFor(config.simd), config.threads, g, a, b, c);
}

void GemmNative(const ExecConfig& config, const GemmArgs& g, const float* a, const float* b, float* c) {
  if (g.m <= 0 || g.n <= 0) return;
  SetBlasThreads(config.threads);
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.m), static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0f, a,
              static_cast<blasint>(g.lda), b, static_cast<blasint>(g.ldb), g.accumulate ? 1.0f : 0.0f, c,
              static_cast<blasint>(g.ldc));
}

void GemmF64(const ExecConfig& config, const GemmArgs& g, const double* a, const double* b, double* c) {
  if (g.m <= 0 || g.n <= 0) return;
  SetBlasThreads(config.threads);
  cblas_dgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(g.m), static_cast<blasint>(g.n), static_cast<blasint>(g.k), 1.0, a,
              static_cast<blasint>(g.lda), b, static_cast<blasint>(g.ldb), g.accumulate ? 1.0 : 0.0, c,
              static_cast<blasint>(g.ldc));
}

void GemmRepopsReference(const GemmArgs& g, const float* a, const float* b, float* c) {
  const std::int64_t a_row = g.trans_a ? 1 : g.lda, a_col = g.trans_a ? g.lda : 1;
  const std::int64_t b_row = g.trans_b ? 1 : g.ldb, b_col = g.trans_b ? g.ldb : 1;
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
      const std::vector<double> a64(a.values().begin(), a.values().end());
      const std::vector<double> b64(b.values().begin(), b.values().end());
      std::vector<double> c64(static_cast<std::size_t>(out.numel()));
      for (std::int64_t i = 0; i < plan.batch; ++i) {
        GemmF64(config, plan.args, a64.data() + i * plan.a_stride, b64.data() + i * plan.b_stride,
                c64.data() + i * plan.c_stride);
      }
      return ctx.RoundOutput(c64, out.values());
    }
  }
  return Status::Error("unknown-mode");
}

}  // namespace vt::kernels
