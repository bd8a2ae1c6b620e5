// Child process for the cross-"hardware" tests (crosscore_test.cpp): runs one
// fixed matmul in one mode under whatever OPENBLAS_CORETYPE it was started
// with and prints "<corename> <tensor hash>". OpenBLAS picks its kernels once
// at load time, so each core type needs its own process.
//
//   kernels_coretype_probe native|rounded-nolog|repops THREADS M K N uniform|cancel
//   kernels_coretype_probe record|replay THREADS M K N uniform|cancel LOGFILE

#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "common/philox.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"

using namespace vt;
using namespace vt::kernels;

namespace {

// "uniform": U[-1, 1). "cancel": U[0.5, 1) (so no result is near zero, where
// fp64 errors are large relative to the fp32 ulp), plus one large term per
// output that cancels exactly: A[:, 0] = 2^20·U, A[:, k−1] = −A[:, 0],
// B[k−1, :] = B[0, :] (like gradients that nearly sum to zero). The exact
// result is ordinary, but the fp64 partial sums carry the large term, so
// their rounding errors (~2^-12 of an fp32 ulp of the result) depend on how
// the BLAS kernel associates the k sum.
struct Inputs {
  Tensor a, b;
};
Inputs MakeInputs(std::int64_t m, std::int64_t k, std::int64_t n, bool cancel) {
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
      a[static_cast<std::size_t>(i * k)] *= 0x1p20f;
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s MODE THREADS M K N uniform|cancel [LOG]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  ExecConfig config;
  config.threads = std::atoi(argv[2]);
  const std::int64_t m = std::atoll(argv[3]), k = std::atoll(argv[4]), n = std::atoll(argv[5]);
  const Inputs in = MakeInputs(m, k, n, std::strcmp(argv[6], "cancel") == 0);
  const Tensor& a = in.a;
  const Tensor& b = in.b;
  Tensor out;
  Status status;
  if (mode == "native" || mode == "repops") {
    config.mode = mode == "native" ? Mode::kNative : Mode::kRepops;
    status = MatMul(OpContext(config), a, b, out);
  } else if (mode == "rounded-nolog" || mode == "record") {
    config.mode = Mode::kRounded;
    if (mode == "rounded-nolog") config.rounding.tau_q16 = 0;
    NodeRounding rounding = NodeRounding::Record(config.rounding);
    status = MatMul(OpContext(config, &rounding), a, b, out);
    if (mode == "record" && status.ok()) {
      if (argc < 8) return Fail("no log file");
      const Bytes bytes = EncodeRoundingLog(rounding.log());
      std::ofstream f(argv[7], std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!f) return Fail("cannot write log");
    }
  } else if (mode == "replay") {
    if (argc < 8) return Fail("no log file");
    std::ifstream f(argv[7], std::ios::binary);
    const Bytes bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto log = DecodeRoundingLog(bytes);
    if (!log.ok()) return Fail(log.status().reason());
    config.mode = Mode::kRounded;
    NodeRounding rounding = NodeRounding::Replay(config.rounding, std::move(*log));
    status = MatMul(OpContext(config, &rounding), a, b, out);
    if (status.ok()) status = rounding.Finish();
  } else {
    return Fail("unknown mode " + mode);
  }
  if (!status.ok()) return Fail(status.reason());
  std::printf("%s %s\n", openblas_get_corename(), out.Hash().Hex().c_str());
  return 0;
}
