#pragma once
// What the worker's element-answer tests share: random operands over a
// chosen exponent range, the transaction bound every game message must
// respect, and the encoded sizes of the messages they measure against it.

#include <cmath>
#include <cstddef>
#include <random>
#include <utility>

#include "common/encoding.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/tensor.h"
#include "verify/descent.h"

namespace vt::worker::element_test {

inline constexpr std::size_t kMaxTx = 64 * 1024;  // the element level's per-transaction target

// Values m·2^e with m uniform in (−1, 1) and e uniform in [lo, hi].
struct ExponentRange {
  int lo = 0, hi = 0;
};

inline float RandomValue(std::mt19937_64& rng, ExponentRange range) {
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exp(range.lo, range.hi);
  return std::ldexp(mant(rng), exp(rng));
}

inline kernels::Tensor RandomTensor(std::mt19937_64& rng, ExponentRange range, kernels::Shape shape,
                                    bool positive = false) {
  kernels::Tensor t(std::move(shape));
  for (float& v : t.values()) v = positive ? std::fabs(RandomValue(rng, range)) : RandomValue(rng, range);
  return t;
}

inline std::size_t SizeOf(const crypto::MerkleProof& p) { return EncodeToBytes(p).size(); }
inline std::size_t SizeOf(const kernels::ChunkOpening& o) {
  return o.values.size() * 4 + 32 + SizeOf(o.proof);
}
template <class Leaf>
std::size_t SizeOf(const verify::DotStepClaimOf<Leaf>& c) {
  return 8 + 3 * sizeof(Leaf) + SizeOf(c.p_m_proof) + SizeOf(c.next_proof[0]) + SizeOf(c.next_proof[1]) +
         SizeOf(c.a.chunk) + SizeOf(c.b.chunk);
}

}  // namespace vt::worker::element_test
