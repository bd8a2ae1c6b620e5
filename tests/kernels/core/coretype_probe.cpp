// Child process for the cross-"hardware" tests (crosscore_test.cpp): runs one
// fixed matmul in one mode under whatever OPENBLAS_CORETYPE it was started
// with and prints "<corename> <tensor hash>". OpenBLAS picks its kernels once
// at load time, so each core type needs its own process.
//
//   kernels_coretype_probe native|rounded-nolog|repops THREADS M K N INPUTS
//   kernels_coretype_probe record|replay|record-noslack|replay-noslack THREADS M K N INPUTS LOGFILE
//   kernels_coretype_probe threads    prints "<corename> <threads of this process at main>"
//   kernels_coretype_probe threads-after T1,T2,…   one native GEMM per thread count, in order, then
//                                                  prints "<corename> <threads of this process>"
// INPUTS: uniform | cancel | cancel24 (the cancelling term 2^24 instead of
// 2^20: fp64 divergence ~2^-8 ulp of the result) | zeromean. record/replay use MatMul (rounded mode
// with the GEMM error bound β); the -noslack variants round the same dgemm
// output with τ alone (what rounded mode did before β), to show why β is
// needed. Rounded modes record on OpenBLAS dgemm (config.simd scalar: GemmF64
// would otherwise run our own AVX-512 or AVX2 kernel). With VT_PROBE_DUMP=path the output values (raw fp32)
// are written there; the line printed is "<corename> <hash> <log entries>".

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"

using namespace vt;
using namespace vt::kernels;

namespace {

// "uniform": U[-1, 1). "cancel": U[0.5, 1) (so no result is near zero, where
// fp64 errors are large relative to the fp32 ulp), plus one large term per
// output that cancels exactly: A[:, 0] = 2^20·U (cancel24: 2^24·U), A[:, k−1] = −A[:, 0],
// B[k−1, :] = B[0, :] (like gradients that nearly sum to zero). The exact
// result is ordinary, but the fp64 partial sums carry the large term, so
// their rounding errors (~2^-12 of an fp32 ulp of the result) depend on how
// the BLAS kernel associates the k sum.
struct Inputs {
  Tensor a, b;
};
// "zeromean": full 24-bit significands at magnitudes 2^-8..2 of either sign
// (vt-calibrate's inputs): products use all 48 bits, so the fp64 partial sums
// round and every BLAS association shows, and the zero-mean dot products put
// many outputs near zero, where cancellation makes the fp64 divergence large
// in ulps of the result.
std::vector<float> ZeroMean(std::uint32_t tensor, std::int64_t count) {
  PhiloxStream s(2024, 0, tensor);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (auto& x : v) {
    const std::uint32_t w = s.NextU32();
    const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
    const int e = -static_cast<int>((w >> 23) % 9);
    x = std::ldexp((w >> 31) != 0 ? -frac : frac, e);
  }
  return v;
}
Inputs MakeInputs(std::int64_t m, std::int64_t k, std::int64_t n, bool cancel, bool zeromean, float big) {
  if (zeromean) return {Tensor({m, k}, ZeroMean(1, m * k)), Tensor({k, n}, ZeroMean(2, k * n))};
  const auto fill = [](std::uint32_t tensor, std::int64_t count) {
    PhiloxStream s(2024, 0, tensor);
    std::vector<float> v(static_cast<std::size_t>(count));
    for (auto& x : v) x = static_cast<float>(s.NextU32() >> 8) * 0x1p-23f - 1.0f;
    return v;
  };
  std::vector<float> a = fill(1, m * k), b = fill(2, k * n);
  if (cancel) {
    for (auto& x : a) x = 0.75f + 0.25f * x;
    for (auto& x : b) x = 0.75f + 0.25f * x;
  }
  if (cancel && k >= 2) {
    for (std::int64_t i = 0; i < m; ++i) {
      a[static_cast<std::size_t>(i * k)] *= big;
      a[static_cast<std::size_t>(i * k + k - 1)] = -a[static_cast<std::size_t>(i * k)];
    }
    for (std::int64_t j = 0; j < n; ++j) b[static_cast<std::size_t>((k - 1) * n + j)] = b[static_cast<std::size_t>(j)];
  }
  return {Tensor({m, k}, std::move(a)), Tensor({k, n}, std::move(b))};
}

int Fail(const std::string& why) {
  std::printf("error %s\n", why.c_str());
  return 1;
}

std::size_t TaskCount() {
  std::size_t tasks = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++tasks;
  return tasks;
}

// One native 64³ GEMM (OpenBLAS sgemm) per thread count of the comma-separated list.
void NativeGemms(const char* list) {
  const std::int64_t n = 64;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  const GemmArgs g{n, n, n, false, false, n, n, n, false};
  for (const char* p = list; *p != '\0';) {
    char* end = nullptr;
    ExecConfig config;
    config.threads = static_cast<int>(std::strtol(p, &end, 10));
    GemmNative(config, g, a.data(), b.data(), c.data());
    p = *end == ',' ? end + 1 : end;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "threads") == 0) {
    // Before anything runs: the threads the libraries' load left behind.
    std::printf("%s %zu\n", openblas_get_corename(), TaskCount());
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "threads-after") == 0) {
    NativeGemms(argv[2]);
    // A joined thread can outlive its join in /proc for a moment: wait up
    // to a second for the count to come down to this thread.
    std::size_t tasks = TaskCount();
    for (int i = 0; i < 100 && tasks > 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      tasks = TaskCount();
    }
    std::printf("%s %zu\n", openblas_get_corename(), tasks);
    return 0;
  }
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s MODE THREADS M K N uniform|cancel [LOG]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  ExecConfig config;
  config.threads = std::atoi(argv[2]);
  // The vendor's fp64 GEMM, whose bits follow the core type, is what these
  // tests are about: keep GemmF64 off our own fp64 kernels (which give the
  // same bits under every core type) by asking for no SIMD path of ours.
  config.simd = Simd::kScalar;
  const std::int64_t m = std::atoll(argv[3]), k = std::atoll(argv[4]), n = std::atoll(argv[5]);
  const bool cancel24 = std::strcmp(argv[6], "cancel24") == 0;
  const Inputs in = MakeInputs(m, k, n, cancel24 || std::strcmp(argv[6], "cancel") == 0,
                               std::strcmp(argv[6], "zeromean") == 0, cancel24 ? 0x1p24f : 0x1p20f);
  const Tensor& a = in.a;
  const Tensor& b = in.b;
  Tensor out;
  Status status;
  std::size_t entries = 0;
  // τ alone on the dgemm output (no β): rounded mode before the error bound.
  const auto round_noslack = [&](NodeRounding& rounding) {
    const std::vector<double> a64(a.values().begin(), a.values().end()),
        b64(b.values().begin(), b.values().end());
    std::vector<double> c64(static_cast<std::size_t>(m * n));
    GemmF64(config, GemmArgs{m, n, k, false, false, k, n, n, false}, a64.data(), b64.data(), c64.data());
    out.Resize({m, n});
    return rounding.Round(c64, out.values());
  };
  if (mode == "native" || mode == "repops") {
    config.mode = mode == "native" ? Mode::kNative : Mode::kRepops;
    status = MatMul(OpContext(config), a, b, out);
  } else if (mode == "rounded-nolog" || mode == "record" || mode == "record-noslack") {
    config.mode = Mode::kRounded;
    if (mode == "rounded-nolog") config.rounding.tau_q16 = 0;
    NodeRounding rounding = NodeRounding::Record(config.rounding);
    status =
        mode == "record-noslack" ? round_noslack(rounding) : MatMul(OpContext(config, &rounding), a, b, out);
    entries = rounding.log().entries.size();
    if (mode != "rounded-nolog" && status.ok()) {
      if (argc < 8) return Fail("no log file");
      const Bytes bytes = EncodeRoundingLog(rounding.log());
      std::ofstream f(argv[7], std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!f) return Fail("cannot write log");
    }
  } else if (mode == "replay" || mode == "replay-noslack") {
    if (argc < 8) return Fail("no log file");
    std::ifstream f(argv[7], std::ios::binary);
    const Bytes bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto log = DecodeRoundingLog(bytes);
    if (!log.ok()) return Fail(log.status().reason());
    config.mode = Mode::kRounded;
    entries = log->entries.size();
    // Without β the acceptance rule rejects some of the trainer's entries
    // (its value and the replayer's differ by more than τ·u): skip them, as
    // a challenger does, and count the mismatches that follow.
    NodeRounding rounding = mode == "replay-noslack"
                                ? NodeRounding::ReplaySkippingInvalid(config.rounding, std::move(*log))
                                : NodeRounding::Replay(config.rounding, std::move(*log));
    status =
        mode == "replay-noslack" ? round_noslack(rounding) : MatMul(OpContext(config, &rounding), a, b, out);
    if (status.ok()) status = rounding.Finish();
  } else {
    return Fail("unknown mode " + mode);
  }
  if (!status.ok()) return Fail(status.reason());
  if (const char* dump = std::getenv("VT_PROBE_DUMP"); dump != nullptr && *dump != '\0') {
    std::ofstream f(dump, std::ios::binary);
    f.write(reinterpret_cast<const char*>(out.data()),
            static_cast<std::streamsize>(out.numel() * sizeof(float)));
    if (!f) return Fail("cannot write dump");
  }
  std::printf("%s %s %zu\n", openblas_get_corename(), out.Hash().Hex().c_str(), entries);
  return 0;
}
