// vt-kernels-golden: prints the hashes of fixed kernel outputs (Philox
// inputs), one per line, so that two builds (g++ and clang++, or two
// machines) can be compared with diff. Every line must be identical; the
// native line is expected to differ between CPU models / core types and is
// printed for contrast.

#include <bit>
#include <cstdio>
#include <string>
#include <vector>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"

using namespace vt;
using namespace vt::kernels;

namespace {

std::vector<float> PhiloxFloats(std::uint64_t seed, std::uint32_t tensor, std::size_t n) {
  PhiloxStream s(seed, 0, tensor);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(s.NextU32() >> 8) * 0x1p-23f - 1.0f;
  return v;
}

}  // namespace

int main() {
  int failures = 0;
  // Repops GEMM, every SIMD path this CPU has, 1 and 3 threads (same cases
  // as the golden test in tests/kernels/core/gemm_test.cpp).
  struct Case {
    std::int64_t m, n, k;
    bool ta, tb;
  };
  for (const Case& cs : {Case{64, 64, 64, false, false}, Case{33, 70, 300, true, false},
                         Case{128, 96, 513, false, true}}) {
    const auto a = PhiloxFloats(42, 1, static_cast<std::size_t>(cs.m * cs.k));
    const auto b = PhiloxFloats(42, 2, static_cast<std::size_t>(cs.k * cs.n));
    const GemmArgs g{cs.m, cs.n, cs.k, cs.ta, cs.tb, cs.ta ? cs.m : cs.k, cs.tb ? cs.k : cs.n, cs.n, false};
    std::string first;
    for (Simd simd : {Simd::kScalar, Simd::kAvx2, Simd::kAvx512}) {
      if (!SimdSupported(simd)) continue;
      for (int threads : {1, 3}) {
        Tensor c({cs.m, cs.n});
        GemmRepops(ExecConfig{Mode::kRepops, threads, simd, {}}, g, a.data(), b.data(), c.data());
        const std::string h = c.Hash().Hex();
        if (first.empty()) first = h;
        if (h != first) {
          std::printf("MISMATCH repops %s threads=%d\n", std::string(SimdName(simd)).c_str(), threads);
          ++failures;
        }
      }
    }
    std::printf("repops_gemm %lldx%lldx%lld ta=%d tb=%d %s\n", static_cast<long long>(cs.m),
                static_cast<long long>(cs.k), static_cast<long long>(cs.n), cs.ta, cs.tb, first.c_str());
  }
  // RoundToBits over a fixed set of fp64 values, every b.
  {
    PhiloxStream s(42, 0, 3);
    for (int bits = 23; bits <= 32; ++bits) {
      Tensor t({4096});
      for (std::int64_t i = 0; i < 4096; ++i) {
        // Any fp64 bit pattern: NaNs, infinities, huge, tiny, subnormal.
        const double x = std::bit_cast<double>(s.NextU64());
        t[i] = RoundToBits(x, bits);
      }
      std::printf("round_to_bits b=%d %s\n", bits, t.Hash().Hex().c_str());
    }
  }
  // Rounded MatMul as recorded here: output and log hash. With the same BLAS
  // library these must match between compilers; across CPU models the fp64
  // values may differ below τ, and then only replay with one log is exact.
  {
    const Tensor a({64, 200}, PhiloxFloats(42, 4, 64 * 200));
    const Tensor b({200, 48}, PhiloxFloats(42, 5, 200 * 48));
    ExecConfig config;
    config.mode = Mode::kRounded;
    NodeRounding rec = NodeRounding::Record(config.rounding);
    Tensor out;
    if (!MatMul(OpContext(config, &rec), a, b, out).ok()) ++failures;
    std::printf("rounded_matmul_logged_entries %lld\n", static_cast<long long>(rec.log().entries.size()));
    std::printf("rounded_matmul_output %s\n", out.Hash().Hex().c_str());
    std::printf("rounded_matmul_log %s\n", HashRoundingLog(rec.log()).Hex().c_str());
    config.mode = Mode::kNative;
    Tensor native;
    if (!MatMul(OpContext(config), a, b, native).ok()) ++failures;
    std::printf("native_matmul (differs by CPU model; for contrast) %s\n", native.Hash().Hex().c_str());
  }
  return failures == 0 ? 0 : 1;
}
