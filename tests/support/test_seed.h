#pragma once
// The seed of every randomised test. A failure prints its seed; export
// VT_TEST_SEED=<n> to replay exactly that run (secp256k1's --seed habit).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace vt::test {

inline std::uint64_t TestSeed() {
  // A function-local static: computed and printed once per process.
  static const std::uint64_t seed = [] {
    std::uint64_t s = 0;
    const char* env = std::getenv("VT_TEST_SEED");
    char* end = nullptr;
    if (env != nullptr && *env != '\0') {
      s = std::strtoull(env, &end, 0);
      if (*end != '\0') {
        std::fprintf(stderr, "[seed] VT_TEST_SEED=%s is not a number\n", env);
        std::abort();
      }
    } else {
      std::random_device rd;
      s = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    }
    std::fprintf(stderr, "[seed] VT_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

}  // namespace vt::test
