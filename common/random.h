#pragma once
// Random values derived from Philox words with integer operations, exact IEEE
// arithmetic and common/detmath.h only, so every platform, compiler and GPU
// produces the same bits.
//
// Element-addressed (VT_HD, for kernels): element e of stream (key, step, tensor)
//   UniformAt  uses word e;  NormalAt uses words 2e and 2e+1.
// Sequential (host, PhiloxStream) functions consume the same words in the same
// way, so the i-th NextUniformFloat / NextNormal of a fresh stream equals
// UniformAt / NormalAt of element i.

#include <cstdint>
#include <vector>

#include "common/detmath.h"
#include "common/hd.h"
#include "common/philox.h"

namespace vt {

// [0, 1): the top 24 bits times 2^-24, so every value is exact in float.
VT_HD constexpr float UniformFloatFromBits(std::uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// (0, 1]: for logarithms.
VT_HD constexpr float UniformFloatOpen0FromBits(std::uint32_t x) {
  return static_cast<float>((x >> 8) + 1) * (1.0f / 16777216.0f);
}

// [0, 1): the top 53 bits times 2^-53.
VT_HD constexpr double UniformDoubleFromBits(std::uint64_t x) {
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

struct NormalPair {
  float z0, z1;
};

// Box-Muller: u1 in (0, 1], u2 in [0, 1); r = sqrt(-2 ln u1), angle 2*pi*u2.
// |z| <= sqrt(-2 ln 2^-24) ~= 5.77: the tails beyond are cut (irrelevant for
// initialisation and noise; stated so nobody relies on them).
VT_HD inline NormalPair BoxMuller(std::uint32_t a, std::uint32_t b) {
  const float r = detmath::Sqrt(-2.0f * detmath::Log(UniformFloatOpen0FromBits(a)));
  const float theta = 6.28318530717958648f * UniformFloatFromBits(b);
  return {r * detmath::Cos(theta), r * detmath::Sin(theta)};
}

VT_HD inline float UniformAt(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t element) {
  return UniformFloatFromBits(PhiloxWord(key, step, tensor, element));
}

// Standard normal sample of one element (the cosine half of Box-Muller).
VT_HD inline float NormalAt(PhiloxKey key, std::uint32_t step, std::uint32_t tensor, std::uint64_t element) {
  const PhiloxBlock block = PhiloxStreamBlock(key, step, tensor, element / 2);
  const unsigned lane = static_cast<unsigned>(element % 2) * 2;
  return BoxMuller(block.v[lane], block.v[lane + 1]).z0;
}

// ---- sequential helpers (host) ------------------------------------------------

float NextUniformFloat(PhiloxStream& s);    // one word
double NextUniformDouble(PhiloxStream& s);  // two words
float NextNormal(PhiloxStream& s);          // two words (z0 of Box-Muller)

// Uniform in [0, n) without modulo bias, n >= 1: draw w (one word if n <= 2^32,
// else two) until w < limit, the largest multiple of n the draw can reach,
// then return w % n. How many words it used depends only on the stream.
std::uint64_t NextUniformInt(PhiloxStream& s, std::uint64_t n);

// A permutation of [0, n) by Fisher-Yates: for i = n-1 down to 1, swap item i
// with item NextUniformInt(s, i + 1).
std::vector<std::uint64_t> Permutation(PhiloxStream& s, std::uint64_t n);
inline std::vector<std::uint64_t> Permutation(std::uint64_t seed, std::uint32_t step, std::uint32_t tensor,
                                              std::uint64_t n) {
  PhiloxStream s(seed, step, tensor);
  return Permutation(s, n);
}

}  // namespace vt
