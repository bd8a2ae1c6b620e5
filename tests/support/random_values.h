#pragma once
// Random fp32 test values across many binades: a uniform mantissa in
// (−1, 1) scaled by 2^e, e uniform in [min_exp, max_exp], both signs.

#include <cmath>
#include <random>

namespace vt::test {

inline float RandomFp32(std::mt19937_64& rng, int min_exp, int max_exp) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(min_exp, max_exp);
  return std::ldexp(mant(rng), exp(rng));
}

}  // namespace vt::test
