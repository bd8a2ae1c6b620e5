#pragma once
// VT_SIMD_CLONES: a hot loop compiled for AVX-512, AVX2 and the baseline,
// the clone chosen at load time by the CPU (GCC and clang target_clones).
// Put it on a plain function only: clang multiversions no template, so a
// template's loop goes in an always_inline body that a plain function per
// instantiation calls. The clones give the same bits wherever the loop's
// operations are IEEE + − × ÷ √, exact conversions and integer arithmetic:
// nothing is contracted (-ffp-contract=off everywhere) and nothing calls
// libm.

#if defined(__x86_64__) && !defined(__CUDACC__)
#define VT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VT_SIMD_CLONES
#endif
