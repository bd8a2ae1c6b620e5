#pragma once
// Which OpenBLAS kernels this process runs, and whether a faster set exists.
//
// OpenBLAS picks its kernels once, at load time, from the CPU model it
// recognises. On a CPU it does not recognise (a VM that masks the model in
// CPUID) it falls back to its generic SSE3 "Prescott" kernels, 3-5x slower
// than the AVX2 / AVX-512 ones the CPU can run. Native mode's sgemm, the
// rounded trainer's dgemm and certified mode's fast path all run there.
// Every core type gives a valid run: repops never calls OpenBLAS, certified
// results are the same under all of them, and a rounded trainer's log
// replays bit for bit under any (the cross-core tests); only which values a
// rounded trainer logs may differ. OPENBLAS_CORETYPE, set before the process
// starts, forces a kernel set.

#include <string>
#include <string_view>

#include "kernels/mode.h"

namespace vt::kernels {

// The OPENBLAS_CORETYPE that would give this CPU faster kernels than the
// `core` OpenBLAS chose ("SkylakeX" with AVX-512F, "Haswell" with AVX2 and
// FMA), or empty: the core already uses AVX2 or better, the CPU has neither,
// or the user forced a core (`env_set`).
std::string BlasCoreAdviceFor(std::string_view core, bool has_avx512f, bool has_avx2_fma, bool env_set);

// The core OpenBLAS chose in this process (openblas_get_corename).
std::string BlasCoreName();

// BlasCoreAdviceFor this process and CPU.
std::string BlasCoreAdvice();

// Whether a recording rounded trainer whose GEMMs run on `device` runs the
// canonical reference GEMM (ExecConfig::f64_reference) for `choice`.
// kAuto: on the CPU where OpenBLAS runs its generic kernels on a CPU with
// AVX-512F (`advice` = "SkylakeX", from BlasCoreAdvice), whose SSE3 dgemm
// our 8-lane reference kernel outruns (docs/kernels.md, "Sixth pass") —
// unless GemmF64 runs our own fp64 fma GEMM there (`own_f64_gemm`,
// kernels/matmul.h WidenedF64GemmAvailable), which outruns both; GemmF64
// elsewhere, and always on a GPU (the reference runs on the CPU only). The
// choice changes which values the trainer logs, never whether a replay
// accepts them.
bool TrainerRecordsOnReferenceFor(F64Gemm choice, Device device, std::string_view advice, bool own_f64_gemm);
bool TrainerRecordsOnReference(F64Gemm choice, Device device);

}  // namespace vt::kernels
