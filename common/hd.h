#pragma once
// VT_HD marks functions that CUDA kernels call from device code as well as the
// CPU: the same source defines the result on both (docs/style.md, "Kernels").
// Device code that relies on an exact operation order must be compiled with
// `--fmad=false` (nvcc's counterpart of -ffp-contract=off), since nvcc fuses
// a*b+c into an fma by default.

#if defined(__CUDACC__)
#define VT_HD __host__ __device__
#else
#define VT_HD
#endif
