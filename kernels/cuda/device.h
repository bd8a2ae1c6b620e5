#pragma once
// The CUDA variants of the kernels, callable from plain C++ (this header has
// no CUDA types). Built into the shared library vt_kernels_cuda only when
// VERITRAIN_CUDA is on; kernels/device.cpp reaches them through the module
// table (kernels/cuda/module.h), GPU tests link the library directly.
//
// All entry points take and return host memory (they copy to and from the
// device), and fail with Status::Error("cuda-unavailable") when no device
// exists, or ("cuda-error", detail) on a CUDA/cuBLAS failure.
//
// Determinism: GemmRepopsCuda computes every output element with the same
// per-step arithmetic as the CPU (hd::RepopsStep in kernels/arith_hd.h, with
// __fmul_rn/__fadd_rn, compiled with --fmad=false), over p = 0..k−1 in order,
// one thread per element — bitwise equal to GemmRepops on the CPU.
// RoundToBitsCuda runs the same b-bit rounding (hd::Locate & co.) on the
// device. cuBLAS sgemm/dgemm are the native / rounded-mode working-precision
// paths, with whatever order cuBLAS picks.

#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"
#include "kernels/matmul.h"
#include "kernels/mode.h"

namespace vt::kernels::cuda {

// True when the CUDA runtime works and at least one device is present.
bool CudaAvailable();
// Why not (or the device's name when available).
std::string CudaDescription();

Status GemmRepopsCuda(const GemmArgs& g, const float* a, const float* b, float* c);
Status GemmNativeCuda(const GemmArgs& g, const float* a, const float* b, float* c);
Status GemmF64Cuda(const GemmArgs& g, const double* a, const double* b, double* c);

// The certified GEMM's fast path (kernels/certified.h) on the device, for
// one GEMM with k > 0 (g.accumulate: c holds c0): widening to fp64, the row
// and column norms and low bits, cuBLAS dgemm and the certificate
// (kernels/certify_hd.h) all run there. Every output the certificate decides
// is written to c; the others get slow[i·n + j] = 1 and keep c's value, for
// the exact path on the host. half = CertSumBound(terms, 1.0).
Status CertifiedGemmFastCuda(const GemmArgs& g, const float* a, const float* b, float* c, double half,
                             std::uint8_t* slow);

// Rounds `exact` to the b-bit grid on the device. flags[i] bit 0: the value
// is within τ·u of its rounding boundary (a trainer would log it); bit 1: the
// nearest neighbour is the upper one (the logged direction).
Status RoundToBitsCuda(const RoundingSpec& spec, std::span<const double> exact, std::span<float> out,
                       std::span<std::uint8_t> flags);

}  // namespace vt::kernels::cuda
