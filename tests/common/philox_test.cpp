#include "common/philox.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "common/philox_blocks.h"
#include "tests/support/test_seed.h"

namespace vt {
namespace {

struct Kat {
  PhiloxBlock ctr;
  PhiloxKey key;
  PhiloxBlock expected;
};

// Known-answer vectors of Random123 (Salmon et al.), "philox4x32 10" lines:
// the first three from Random123's kat_vectors file (tests/kat_vectors in
// https://github.com/DEShawResearch/random123, also in its kat_cpp test as
// dokat<philox4x32_prf<10>>), the rest from the extended vector set shipped as
// examples/kat_vectors in github.com/girving/random123-manual (commit 61e8479).
// Columns there: counter words 0-3, key words 0-1, expected output words 0-3.
constexpr Kat kKats[] = {
    {{{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
     {{0x00000000, 0x00000000}},
     {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
    {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0xffffffff, 0xffffffff}},
     {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
    {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0xa4093822, 0x299f31d0}},
     {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
    {{{0x00000001, 0x00000000, 0x00000000, 0x00000000}},
     {{0x00000001, 0x00000000}},
     {{0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}}},
    {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0x00000000, 0xffffffff}},
     {{0x08f7720c, 0x845ee9e0, 0x502ccd3d, 0xa9a00e27}}},
    {{{0x00000000, 0x00000000, 0x00000000, 0x80000000}},
     {{0x00000000, 0x80000000}},
     {{0xf7a0b371, 0xe51dc93d, 0x56ce135d, 0x1d4b5580}}},
};

constexpr bool Same(const PhiloxBlock& a, const PhiloxBlock& b) {
  for (int i = 0; i < 4; ++i)
    if (a.v[i] != b.v[i]) return false;
  return true;
}

// The generator is usable in constant expressions (and so in device code).
static_assert(Same(Philox4x32(kKats[0].key, kKats[0].ctr), kKats[0].expected));

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    const PhiloxBlock out = Philox4x32(k.key, k.ctr);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out.v[i], k.expected.v[i]) << "counter " << k.ctr.v[0] << " word " << i;
  }
}

TEST(Philox, AddressingLayout) {
  const PhiloxKey key = PhiloxKeyFromSeed(0x0123456789abcdefull);
  EXPECT_EQ(key.k[0], 0x89abcdefu);
  EXPECT_EQ(key.k[1], 0x01234567u);
  const PhiloxBlock ctr = PhiloxCounter(/*step=*/7, /*tensor=*/3, /*block=*/0x0000000500000009ull);
  EXPECT_EQ(ctr.v[0], 9u);
  EXPECT_EQ(ctr.v[1], 5u);
  EXPECT_EQ(ctr.v[2], 3u);
  EXPECT_EQ(ctr.v[3], 7u);
  EXPECT_TRUE(Same(PhiloxStreamBlock(key, 7, 3, 0x0000000500000009ull), Philox4x32(key, ctr)));
  // Word w is lane w % 4 of block w / 4.
  const PhiloxBlock b = PhiloxStreamBlock(key, 7, 3, 10);
  for (std::uint64_t lane = 0; lane < 4; ++lane) EXPECT_EQ(PhiloxWord(key, 7, 3, 40 + lane), b.v[lane]);
  // Golden word: pins the addressing scheme itself (docs/formats.md, "Randomness
  // (Philox streams)"), not just Philox.
  EXPECT_EQ(PhiloxWord(key, 7, 3, 12345), 0x34eec96cu);
}

TEST(Philox, StreamMatchesWordAddressing) {
  const std::uint64_t seed = test::TestSeed();
  std::mt19937_64 rng(seed);
  for (int iter = 0; iter < 50; ++iter) {
    const auto step = static_cast<std::uint32_t>(rng());
    const auto tensor = static_cast<std::uint32_t>(rng());
    const std::uint64_t first = rng() % 1000;  // also starts that are not block-aligned
    PhiloxStream s(seed, step, tensor, first);
    const PhiloxKey key = PhiloxKeyFromSeed(seed);
    for (std::uint64_t i = 0; i < 9; ++i) ASSERT_EQ(s.NextU32(), PhiloxWord(key, step, tensor, first + i));
    const std::uint64_t w = s.position();
    EXPECT_EQ(w, first + 9);
    const std::uint64_t both = s.NextU64();
    EXPECT_EQ(both,
              PhiloxWord(key, step, tensor, w) | std::uint64_t{PhiloxWord(key, step, tensor, w + 1)} << 32);
  }
}

TEST(Philox, StreamsAreDistinct) {
  // Neighbouring seeds, steps, tensors and blocks must not share outputs.
  std::set<std::uint32_t> firsts;
  int count = 0;
  for (std::uint64_t seed : {0ull, 1ull, 1ull << 32})
    for (std::uint32_t step : {0u, 1u})
      for (std::uint32_t tensor : {0u, 1u})
        for (std::uint64_t block : {0ull, 1ull, 1ull << 32}) {
          firsts.insert(PhiloxStreamBlock(PhiloxKeyFromSeed(seed), step, tensor, block).v[0]);
          ++count;
        }
  EXPECT_EQ(firsts.size(), static_cast<std::size_t>(count));
}

TEST(Philox, OutputBitsBalanced) {
  // Each output bit is set about half the time over 2^16 counters.
  const PhiloxKey key = PhiloxKeyFromSeed(test::TestSeed());
  int ones[32] = {};
  constexpr int kN = 1 << 16;
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t w = PhiloxWord(key, 0, 0, static_cast<std::uint64_t>(i));
    for (int b = 0; b < 32; ++b) ones[b] += (w >> b) & 1;
  }
  for (int b = 0; b < 32; ++b) EXPECT_NEAR(ones[b], kN / 2, 1000) << "bit " << b;  // ~7.8 sigma
}

// The batch function is the stream, block for block, on its vector path and
// its scalar one: random keys, steps and tensors, counts around the vector
// width, and first blocks where the low counter word wraps into the high one.
TEST(Philox, StreamBlocksAreTheStreamsBlocks) {
  std::mt19937_64 rng(test::TestSeed() ^ 0x9b10c5);
  int checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const PhiloxKey key = PhiloxKeyFromSeed(rng());
    const auto step = static_cast<std::uint32_t>(rng()), tensor = static_cast<std::uint32_t>(rng());
    const std::size_t count = rng() % 40;
    const std::uint64_t first = trial % 3 == 0   ? (std::uint64_t{1} << 32) - rng() % 20
                                : trial % 3 == 1 ? rng() % 1000
                                                 : rng();
    std::vector<PhiloxBlock> got(count), scalar(count);
    PhiloxStreamBlocks(key, step, tensor, first, count, got.data());
    detail::PhiloxStreamBlocksScalar(key, step, tensor, first, count, scalar.data());
    for (std::size_t i = 0; i < count; ++i) {
      const PhiloxBlock want = PhiloxStreamBlock(key, step, tensor, first + i);
      for (int w = 0; w < 4; ++w) {
        ASSERT_EQ(got[i].v[w], want.v[w]) << "block " << first + i << " word " << w;
        ASSERT_EQ(scalar[i].v[w], want.v[w]) << "scalar, block " << first + i << " word " << w;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace vt
