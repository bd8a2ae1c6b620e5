// AVX-512 tile kernel of GemmF64Reference: 8-lane fp64 vectors, an 8×16
// tile. This translation unit alone is compiled with -mavx512f; the body is
// the shared one of gemm_f64_reference_tile.h (same bits as the baseline).

#include "kernels/gemm_f64_reference.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include "kernels/gemm_f64_reference_tile.h"

namespace vt::kernels::detail {
RefKernel RefKernelAvx512() { return MakeRefKernel<8, 8, 2>(); }
}  // namespace vt::kernels::detail

#else
namespace vt::kernels::detail {
RefKernel RefKernelAvx512() { return {}; }
}  // namespace vt::kernels::detail
#endif
