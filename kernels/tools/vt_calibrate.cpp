// vt-calibrate: measures rounded-mode τ for matmul shapes across thread
// counts and OpenBLAS core types, and prints a TauTable.
//
//   vt-calibrate --shape 512x768x2304 --shape 512x3072x768
//       --coretypes default,Prescott,Haswell,SkylakeX --threads 1,2 --margin 8
//
// OpenBLAS chooses its kernels once per process (OPENBLAS_CORETYPE is read at
// load time), so every core type runs in a child process of this same binary
// (--child), which writes the fp64 matmul outputs (raw little-endian doubles)
// to a file. The parent compares all of them with the first configuration,
// takes the largest divergence in b-bit ulps beyond each output's error bound
// β (kernels/matmul.h GemmSlackF64: what rounded mode's logging region
// already covers) and sets τ = margin × that, at least the 2^-12 floor
// (kernels/calibration.h). Both the raw divergence and the excess over β are
// printed. Keys are node keys, "matmul/MxK,KxN" (TauKeyForInputs). Inputs are Philox-generated full-precision
// fp32 values of either sign and magnitudes 2^-8..2, in matrices of the given shape. Output: a human table,
// or --json; --out writes the canonical TauTable bytes (hex with --hex).

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli_number.h"
#include "common/encoding.h"
#include "common/philox.h"
#include "kernels/calibration.h"
#include "kernels/matmul.h"

using namespace vt;
using namespace vt::kernels;

namespace {

struct MatShape {
  std::int64_t m = 0, k = 0, n = 0;
};

bool ParseShape(const std::string& s, MatShape& out) {
  return std::sscanf(s.c_str(), "%ldx%ldx%ld", &out.m, &out.k, &out.n) == 3 && out.m > 0 && out.k > 0 &&
         out.n > 0;
}

struct Operands {
  std::vector<double> a, b;
};

Operands MakeOperands(const MatShape& sh, std::uint64_t seed) {
  const auto fill = [&](std::uint32_t tensor, std::int64_t count) {
    PhiloxStream s(seed, 0, tensor);
    std::vector<double> v(static_cast<std::size_t>(count));
    for (auto& x : v) {
      // Full 24-bit significands at exponents 2^-8..2^0, either sign: products
      // use all 48 bits, so fp64 partial sums round and the BLAS kernel's
      // association shows. (U[-1, 1) on a 2^-23 grid would sum exactly.)
      const std::uint32_t w = s.NextU32();
      const float frac = 1.0f + static_cast<float>(w & 0x7FFFFF) * 0x1p-23f;
      const int e = -static_cast<int>((w >> 23) % 9);
      x = static_cast<double>((w >> 31) != 0 ? -frac : frac) * std::ldexp(1.0, e);
    }
    return v;
  };
  return {fill(1, sh.m * sh.k), fill(2, sh.k * sh.n)};
}

GemmArgs Args(const MatShape& sh) {
  return GemmArgs{sh.m, sh.n, sh.k, false, false, sh.k, sh.n, sh.n, false};
}

std::vector<double> MatMulFp64(const MatShape& sh, int threads, std::uint64_t seed) {
  const Operands in = MakeOperands(sh, seed);
  std::vector<double> c(static_cast<std::size_t>(sh.m * sh.n));
  ExecConfig config;
  config.threads = threads;
  GemmF64(config, Args(sh), in.a.data(), in.b.data(), c.data());
  return c;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

Result<std::vector<double>> RunChild(const std::string& self, const std::string& coretype, const std::string& shape,
                                     int threads, std::uint64_t seed, const std::string& dir) {
  const std::string file = dir + "/vt_calibrate_" + std::to_string(getpid()) + ".bin";
  const std::string env = coretype == "default" ? "env -u OPENBLAS_CORETYPE" : "env OPENBLAS_CORETYPE=" + coretype;
  const std::string cmd = env + " '" + self + "' --child --shape " + shape + " --threads " + std::to_string(threads) +
                          " --seed " + std::to_string(seed) + " --dump '" + file + "'";
  if (std::system(cmd.c_str()) != 0) return Status::Error("child-failed", cmd);
  std::ifstream f(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(file.c_str());
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(double));
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calibrate rounded-mode tau for matmul shapes across threads and OpenBLAS core types"};
  std::vector<std::string> shapes;
  std::string coretypes = "default,Prescott,Nehalem,Haswell";
  std::string threads_list = "1,2";
  int bits = 32;
  double margin = 8.0;
  std::uint64_t seed = 1;
  std::string out_path;
  bool json = false, hex = false, child = false;
  std::string dump;
  app.add_option("--shape", shapes, "matmul shape MxKxN (repeatable)")->required();
  app.add_option("--coretypes", coretypes, "comma-separated OPENBLAS_CORETYPE values ('default' = unset)")
      ->capture_default_str();
  app.add_option("--threads", threads_list, "comma-separated thread counts")->capture_default_str();
  vt::cli::AddNumber(&app, "--bits", bits, "rounding bits b (23..32)", 23, 32)->capture_default_str();
  app.add_option("--margin", margin, "tau = margin x max divergence beyond beta (floor 2^-12)")
      ->capture_default_str();
  vt::cli::AddNumber(&app, "--seed", seed, "Philox seed of the synthetic inputs")->capture_default_str();
  app.add_option("--out", out_path, "write the canonical TauTable bytes to this file");
  app.add_flag("--hex", hex, "print the canonical TauTable bytes as hex");
  app.add_flag("--json", json, "machine-readable output");
  app.add_flag("--child", child, "internal: compute one configuration")->group("");
  app.add_option("--dump", dump, "internal: where the child writes its fp64 outputs")->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (bits < kMinRoundingBits || bits > kMaxRoundingBits || !(margin > 0)) {
    std::fprintf(stderr, "bad --bits or --margin\n");
    return 2;
  }
  std::vector<MatShape> parsed;
  for (const auto& s : shapes) {
    MatShape sh;
    if (!ParseShape(s, sh)) {
      std::fprintf(stderr, "bad shape '%s' (want MxKxN)\n", s.c_str());
      return 2;
    }
    parsed.push_back(sh);
  }
  std::vector<int> thread_counts;
  for (const auto& t : Split(threads_list)) thread_counts.push_back(std::atoi(t.c_str()));

  if (child) {
    const auto values = MatMulFp64(parsed[0], thread_counts.empty() ? 1 : thread_counts[0], seed);
    std::ofstream f(dump, std::ios::binary);
    f.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(double)));
    return f ? 0 : 1;
  }

  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    std::fprintf(stderr, "cannot find own executable\n");
    return 1;
  }
  self[len] = '\0';
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";

  CalibrationOptions options;
  options.bits = bits;
  options.margin = margin;
  TauTable table;
  nlohmann::json report = nlohmann::json::array();
  int failures = 0;
  if (!json) {
    std::printf("%-28s %8s %14s %14s %12s %12s %10s\n", "op", "configs", "max div (ulp)", "beyond beta",
                "differing", "over beta", "tau_q16");
  }
  for (std::size_t si = 0; si < parsed.size(); ++si) {
    // β of every output, from the inputs (the same in every configuration).
    std::vector<double> beta(static_cast<std::size_t>(parsed[si].m * parsed[si].n));
    {
      const Operands in = MakeOperands(parsed[si], seed);
      GemmSlackF64(Args(parsed[si]), in.a.data(), in.b.data(), beta.data());
    }
    std::vector<double> reference;
    DivergenceStats div;
    int configs = 0;
    for (const auto& ct : Split(coretypes)) {
      for (int t : thread_counts) {
        if (!json) std::fprintf(stderr, "  %s: core type %s, %d threads\n", shapes[si].c_str(), ct.c_str(), t);
        auto values = RunChild(self, ct, shapes[si], t, seed, dir);
        if (!values.ok()) {
          std::fprintf(stderr, "%s\n", values.status().ToString().c_str());
          return 1;
        }
        ++configs;
        if (reference.empty()) {
          reference = std::move(*values);
        } else if (values->size() == reference.size()) {
          div.Merge(MeasureDivergence(reference, *values, bits, beta));
        }
      }
    }
    const std::vector<Shape> inputs = {{parsed[si].m, parsed[si].k}, {parsed[si].k, parsed[si].n}};
    const std::string key = TauKeyForInputs("matmul", inputs);
    auto tau = TauFromDivergence(div, options);
    if (tau.ok()) table.Set(key, *tau);
    if (!tau.ok()) ++failures;
    if (json) {
      report.push_back({{"op", key},
                        {"configs", configs},
                        {"max_divergence_ulps", div.max_ulps},
                        {"max_excess_over_beta_ulps", div.max_excess_ulps},
                        {"differing", div.differing},
                        {"beyond_beta", div.beyond_slack},
                        {"compared", div.compared},
                        {"tau_q16", tau.ok() ? nlohmann::json(*tau) : nlohmann::json(nullptr)},
                        {"status", tau.status().ToString()}});
    } else {
      std::printf("%-28s %8d %14.3e %14.3e %12llu %12llu %10s\n", key.c_str(), configs, div.max_ulps,
                  div.max_excess_ulps, static_cast<unsigned long long>(div.differing),
                  static_cast<unsigned long long>(div.beyond_slack),
                  tau.ok() ? std::to_string(*tau).c_str() : tau.status().reason().c_str());
    }
  }
  const Bytes encoded = EncodeToBytes(table);
  if (json) {
    std::printf("%s\n", nlohmann::json{{"ops", report}, {"tau_table_hex", ToHex(encoded)}}.dump(2).c_str());
  } else if (hex) {
    std::printf("tau table: %s\n", ToHex(encoded).c_str());
  }
  if (!out_path.empty()) {
    std::ofstream f(out_path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(encoded.data()), static_cast<std::streamsize>(encoded.size()));
    if (!f) return 1;
  }
  return failures == 0 ? 0 : 1;
}
