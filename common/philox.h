#pragma once
// Philox-4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw,
// "Parallel random numbers: as easy as 1, 2, 3" (SC'11), as in Random123.
// A keyed bijection of a 128-bit counter: no hidden state, so the random value
// for (seed, step, tensor, element) is a pure function, the same on the CPU
// and on a GPU (VT_HD), and any element can be recomputed on its own.
//
// Addressing used throughout veritrain (docs/formats.md, "Randomness
// (Philox streams)"):
//   key     = (seed mod 2^32, seed >> 32)
//   counter = (block mod 2^32, block >> 32, tensor, step)
//   word w of stream (seed, step, tensor) = lane w % 4 of block w / 4.

#include <cstdint>

#include "common/hd.h"

namespace vt {

struct PhiloxKey {
  std::uint32_t k[2];
};

// Counter in, random words out.
struct PhiloxBlock {
  std::uint32_t v[4];
};

// Philox4x32-10's constants (also common/philox_blocks.cpp's vector lanes).
inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;  // multipliers
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;  // Weyl key increments
inline constexpr int kPhiloxRounds = 10;

VT_HD constexpr PhiloxBlock Philox4x32(PhiloxKey key, PhiloxBlock ctr) {
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      key.k[0] += kPhiloxW0;
      key.k[1] += kPhiloxW1;
    }
    const std::uint64_t p0 = static_cast<std::uint64_t>(kPhiloxM0) * ctr.v[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kPhiloxM1) * ctr.v[2];
    ctr = PhiloxBlock{
        {static_cast<std::uint32_t>(p1 >> 32) ^ ctr.v[1] ^ key.k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ ctr.v[3] ^ key.k[1], static_cast<std::uint32_t>(p0)}};
  }
  return ctr;
}

VT_HD constexpr PhiloxKey PhiloxKeyFromSeed(std::uint64_t seed) {
  return PhiloxKey{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
}

VT_HD constexpr PhiloxBlock PhiloxCounter(std::uint32_t step, std::uint32_t tensor, std::uint64_t block) {
  return PhiloxBlock{
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), tensor, step}};
}

// Block `block` of stream (key, step, tensor): four consecutive words.
VT_HD constexpr PhiloxBlock PhiloxStreamBlock(PhiloxKey key, std::uint32_t step, std::uint32_t tensor,
                                              std::uint64_t block) {
  return Philox4x32(key, PhiloxCounter(step, tensor, block));
}

// Word `word` of stream (key, step, tensor). Kernels that need several
// consecutive words should take a whole PhiloxStreamBlock instead.
VT_HD constexpr std::uint32_t PhiloxWord(PhiloxKey key, std::uint32_t step, std::uint32_t tensor,
                                         std::uint64_t word) {
  return PhiloxStreamBlock(key, step, tensor, word / 4).v[word % 4];
}

// Sequential reader of one stream (host code: permutations, rejection
// sampling). Its i-th word is PhiloxWord(key, step, tensor, first_word + i).
class PhiloxStream {
 public:
  PhiloxStream(std::uint64_t seed, std::uint32_t step, std::uint32_t tensor, std::uint64_t first_word = 0)
      : m_key(PhiloxKeyFromSeed(seed)), m_step(step), m_tensor(tensor), m_word(first_word) {}

  std::uint32_t NextU32() {
    if (m_word % 4 == 0 || !m_have_block) {
      m_block = PhiloxStreamBlock(m_key, m_step, m_tensor, m_word / 4);
      m_have_block = true;
    }
    return m_block.v[m_word++ % 4];
  }
  // Two words, the first one low.
  std::uint64_t NextU64() {
    const std::uint64_t lo = NextU32();
    return lo | static_cast<std::uint64_t>(NextU32()) << 32;
  }
  // Index of the next word (counts how much of the stream was used).
  std::uint64_t position() const { return m_word; }
  PhiloxKey key() const { return m_key; }

 private:
  PhiloxKey m_key;
  std::uint32_t m_step;
  std::uint32_t m_tensor;
  std::uint64_t m_word;
  PhiloxBlock m_block{};
  bool m_have_block = false;
};

}  // namespace vt
