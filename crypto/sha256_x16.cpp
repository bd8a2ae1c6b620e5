#include "crypto/sha256_x16.h"

#include <cstdlib>

#if defined(__x86_64__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics (vprord, the unpacks) start from
// _mm512_undefined_epi32(), which it reports as uninitialized once they are
// inlined into a target function (a known false positive: every lane is
// written).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define VT_SHA256_X16 1
#endif

namespace vt::crypto::detail {

#if VT_SHA256_X16

bool Sha256x16Available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return ok;
}

namespace {

#define VT_X16 __attribute__((target("avx512f,avx512bw")))

using V = __m512i;  // one 32-bit word of each of the 16 lanes

VT_X16 inline V Add(V a, V b) { return _mm512_add_epi32(a, b); }
// vpternlogd truth tables over (x, y, z) = (0xF0, 0xCC, 0xAA).
VT_X16 inline V Xor3(V x, V y, V z) { return _mm512_ternarylogic_epi32(x, y, z, 0x96); }
VT_X16 inline V Ch(V x, V y, V z) { return _mm512_ternarylogic_epi32(x, y, z, 0xCA); }
VT_X16 inline V Maj(V x, V y, V z) { return _mm512_ternarylogic_epi32(x, y, z, 0xE8); }
VT_X16 inline V BigSigma0(V x) {
  return Xor3(_mm512_ror_epi32(x, 2), _mm512_ror_epi32(x, 13), _mm512_ror_epi32(x, 22));
}
VT_X16 inline V BigSigma1(V x) {
  return Xor3(_mm512_ror_epi32(x, 6), _mm512_ror_epi32(x, 11), _mm512_ror_epi32(x, 25));
}
VT_X16 inline V SmallSigma0(V x) {
  return Xor3(_mm512_ror_epi32(x, 7), _mm512_ror_epi32(x, 18), _mm512_srli_epi32(x, 3));
}
VT_X16 inline V SmallSigma1(V x) {
  return Xor3(_mm512_ror_epi32(x, 17), _mm512_ror_epi32(x, 19), _mm512_srli_epi32(x, 10));
}

// x, opaque to the optimiser: a sum is computed in the grouping written
// (GCC's reassociation would otherwise regroup the round's sums into longer
// chains).
VT_X16 inline V AsIs(V x) {
  asm("" : "+v"(x));
  return x;
}

// Round i with kw = K_i + W_i on the working variables v: a..h are
// v[(0 − i) mod 8] .. v[(7 − i) mod 8], so that the new a and e land where
// h and d were and nothing moves.
// Every vector instruction here has a latency of 2 cycles on the development
// machine, so the sums are grouped for the shortest chains from e and a to
// the next ones (3 instructions each, not 5 and 4): h, d and kw are known
// rounds ahead, Ch and Maj take one instruction, Σ two.
VT_X16 inline void Round(V (&v)[8], int i, V kw) {
  const V &a = v[(0 - i) & 7], &b = v[(1 - i) & 7], &c = v[(2 - i) & 7];
  const V &e = v[(4 - i) & 7], &f = v[(5 - i) & 7], &g = v[(6 - i) & 7];
  V &d = v[(3 - i) & 7], &h = v[(7 - i) & 7];
  const V hkw = Add(h, kw);
  const V dhkw = AsIs(Add(d, hkw));
  const V ch = Ch(e, f, g), s1 = BigSigma1(e);
  const V t1 = Add(AsIs(Add(hkw, ch)), s1);
  d = Add(AsIs(Add(dhkw, ch)), s1);
  h = Add(AsIs(Add(t1, Maj(a, b, c))), BigSigma0(a));
}

// w[t] ← word t (big-endian) of every lane's block: the 16 blocks loaded as
// rows and transposed, 32-bit and 64-bit unpacks transposing 4×4 words
// inside each 128-bit quarter, two rounds of 128-bit shuffles the 4×4
// quarters (80 instructions a block). One vpgatherdd per word instead was
// measured at 0.55× the leaf throughput from L2 (0.85× from a 16 MiB
// buffer, before chunk_hash.cpp prefetched).
VT_X16 inline void LoadTransposed(const unsigned char* const (&block)[kX16Lanes], V (&w)[16]) {
  const V bswap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
  V r[16], u[16];
  // Unrolled (GCC does not fully unroll 16-trip loops at -O2), so that r and
  // u are registers, not stack arrays.
#pragma GCC unroll 16
  for (int l = 0; l < 16; ++l) r[l] = _mm512_shuffle_epi8(_mm512_loadu_si512(block[l]), bswap);
#pragma GCC unroll 8
  for (int l = 0; l < 16; l += 2) {
    u[l] = _mm512_unpacklo_epi32(r[l], r[l + 1]);
    u[l + 1] = _mm512_unpackhi_epi32(r[l], r[l + 1]);
  }
  // Rows 4g..4g+3: r[4g + j] holds, in quarter q, word 4q + j of those rows.
#pragma GCC unroll 4
  for (int g = 0; g < 16; g += 4) {
    r[g] = _mm512_unpacklo_epi64(u[g], u[g + 2]);
    r[g + 1] = _mm512_unpackhi_epi64(u[g], u[g + 2]);
    r[g + 2] = _mm512_unpacklo_epi64(u[g + 1], u[g + 3]);
    r[g + 3] = _mm512_unpackhi_epi64(u[g + 1], u[g + 3]);
  }
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const V p0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), p1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
    const V p2 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44),
            p3 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
    w[j] = _mm512_shuffle_i32x4(p0, p2, 0x88);
    w[4 + j] = _mm512_shuffle_i32x4(p0, p2, 0xDD);
    w[8 + j] = _mm512_shuffle_i32x4(p1, p3, 0x88);
    w[12 + j] = _mm512_shuffle_i32x4(p1, p3, 0xDD);
  }
}

VT_X16 void Compress(Sha256x16State& state, const unsigned char* const (&block)[kX16Lanes]) {
  V w[16];
  LoadTransposed(block, w);
  V v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm512_load_si512(state.h[i]);
  // K through a pointer the optimiser cannot see into, so that adding K_i is
  // a vpaddd with a broadcast memory operand, not a broadcast from an
  // immediate (two more instructions) in every round.
  const std::uint32_t* round = kSha256Round;
  asm("" : "+r"(round));
  // Fully unrolled: every index is a constant, so w (the schedule's 16-word
  // window) and v live in registers.
#pragma GCC unroll 64
  for (int i = 0; i < 64; ++i) {
    if (i >= 16) {
      w[i & 15] = Add(Add(w[i & 15], SmallSigma0(w[(i + 1) & 15])),
                      Add(w[(i + 9) & 15], SmallSigma1(w[(i + 14) & 15])));
    }
    Round(v, i, Add(w[i & 15], _mm512_set1_epi32(static_cast<int>(round[i]))));
  }
  for (int i = 0; i < 8; ++i) {
    _mm512_store_si512(state.h[i], Add(_mm512_load_si512(state.h[i]), v[i]));
  }
}

#undef VT_X16

}  // namespace

void Sha256x16Compress(Sha256x16State& state, const unsigned char* const (&block)[kX16Lanes]) {
  Compress(state, block);
}

#else  // not x86-64: no kernel, never dispatched to

bool Sha256x16Available() { return false; }
void Sha256x16Compress(Sha256x16State&, const unsigned char* const (&)[kX16Lanes]) { std::abort(); }

#endif

}  // namespace vt::crypto::detail
