// "Different hardware" on one machine: OpenBLAS picks its kernels per CPU
// model and OPENBLAS_CORETYPE forces a model, fixed at process start, so each
// configuration runs in a child process (kernels_coretype_probe) and reports
// the hash of one fixed matmul's output.
//
// (a) The problem is real: native fp32 sgemm gives different bits under
//     different core types and (for some) thread counts; rounded mode without
//     logs (fp64 dgemm rounded to nearest fp32) differs too on inputs with
//     cancellation — here a large term that cancels exactly inside each dot
//     product, so the fp64 rounding errors depend on how each kernel
//     associates the sum.
// (b) Rounded mode with the trainer's log replays bitwise identically under
//     every core type and thread count — at the default τ = 2^-12 ulp, where
//     the GEMM error bound β widens the logging region of each output as far
//     as its own dot product can diverge (kernels/rounding.h). The
//     transformer-shaped zero-mean case (512×768×2304) puts many outputs near
//     zero, where cancellation makes the divergence large in ulps of the
//     result; "cancel24" (a 2^24 term cancelling inside every dot product)
//     makes it ~2^-8 ulp, where τ alone (no β) mismatches and τ with β does not.

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include "tests/support/openblas_coretypes.h"

namespace {

struct ProbeResult {
  std::string corename;
  std::string hash;
  std::size_t entries = 0;
  std::string raw;
};

ProbeResult RunProbe(const std::string& coretype, const std::string& args, const std::string& dump = "") {
  const std::string env =
      (coretype.empty() ? "env -u OPENBLAS_CORETYPE" : "env OPENBLAS_CORETYPE=" + coretype) +
      (dump.empty() ? std::string() : " VT_PROBE_DUMP='" + dump + "'");
  const std::string cmd = env + " '" VT_CORETYPE_PROBE "' " + args;
  ProbeResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) r.raw += buf;
  pclose(pipe);
  const auto space = r.raw.find(' ');
  if (space != std::string::npos && r.raw.rfind("error", 0) != 0) {
    r.corename = r.raw.substr(0, space);
    r.hash = r.raw.substr(space + 1);
    while (!r.hash.empty() && (r.hash.back() == '\n' || r.hash.back() == '\r')) r.hash.pop_back();
    const auto second = r.hash.find(' ');
    if (second != std::string::npos) {
      r.entries = std::strtoull(r.hash.c_str() + second + 1, nullptr, 10);
      r.hash.resize(second);
    }
  }
  return r;
}

std::string Name(const std::string& coretype) { return coretype.empty() ? "(default)" : coretype; }

constexpr const char* kUniform = "256 256 256 uniform";
constexpr const char* kCancel = "256 256 256 cancel";

TEST(CrossCoreTypeTest, NativeSgemmDiffersAcrossCoreTypesAndThreads) {
  std::set<std::string> hashes;
  bool thread_dependent = false;
  for (const std::string& ct : vt::test::OpenBlasCoreTypes()) {
    const ProbeResult t1 = RunProbe(ct, std::string("native 1 ") + kUniform);
    const ProbeResult t2 = RunProbe(ct, std::string("native 2 ") + kUniform);
    ASSERT_FALSE(t1.hash.empty()) << Name(ct) << ": " << t1.raw;
    ASSERT_FALSE(t2.hash.empty()) << Name(ct) << ": " << t2.raw;
    if (!ct.empty()) {
      EXPECT_EQ(t1.corename, ct) << "OPENBLAS_CORETYPE was not honoured";
    }
    std::printf("[native] %-12s threads=1 %s threads=2 %s\n", Name(ct).c_str(), t1.hash.substr(0, 16).c_str(),
                t2.hash.substr(0, 16).c_str());
    hashes.insert(t1.hash);
    hashes.insert(t2.hash);
    thread_dependent = thread_dependent || t1.hash != t2.hash;
  }
  EXPECT_GE(hashes.size(), 3u) << "expected fp32 sgemm bits to depend on the OpenBLAS core type";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // OpenBLAS 0.3.21's Haswell sgemm splits k between threads for this shape.
    EXPECT_TRUE(thread_dependent) << "expected some core type's sgemm bits to depend on the thread count";
  }
}

TEST(CrossCoreTypeTest, RoundedWithoutLogsDiffersOnCancellingInputs) {
  std::set<std::string> hashes;
  for (const std::string& ct : vt::test::OpenBlasCoreTypes()) {
    for (int threads : {1, 2}) {
      const ProbeResult r = RunProbe(ct, "rounded-nolog " + std::to_string(threads) + " " + kCancel);
      ASSERT_FALSE(r.hash.empty()) << Name(ct) << ": " << r.raw;
      std::printf("[rounded, no log] %-12s threads=%d %s\n", Name(ct).c_str(), threads, r.hash.substr(0, 16).c_str());
      hashes.insert(r.hash);
    }
  }
  // OpenBLAS's Prescott dgemm associates the k sum differently from the
  // newer kernels; rounding its fp64 results to nearest flips a few values.
  EXPECT_GE(hashes.size(), 2u) << "expected rounded-to-nearest fp64 results to differ between core types";
}

TEST(CrossCoreTypeTest, RoundedWithLogsReplaysBitwiseEverywhere) {
  const std::string log_path = ::testing::TempDir() + "vt_crosscore_" + std::to_string(getpid()) + ".log";
  for (const std::string& trainer : {std::string(""), std::string("Prescott")}) {
    const ProbeResult rec = RunProbe(trainer, "record 1 " + std::string(kCancel) + " " + log_path);
    ASSERT_FALSE(rec.hash.empty()) << rec.raw;
    for (const std::string& ct : vt::test::OpenBlasCoreTypes()) {
      for (int threads : {1, 2}) {
        const ProbeResult rep =
            RunProbe(ct, "replay " + std::to_string(threads) + " " + kCancel + " " + log_path);
        EXPECT_EQ(rep.hash, rec.hash) << "trainer " << Name(trainer) << ", replayer " << Name(ct) << " threads "
                                      << threads << ": " << rep.raw;
      }
    }
  }
  std::remove(log_path.c_str());
}

std::vector<std::uint32_t> ReadBits(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::uint32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::size_t Mismatches(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  if (a.size() != b.size() || a.empty()) return static_cast<std::size_t>(-1);
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i] ? 1 : 0;
  return n;
}

constexpr const char* kZeroMean = "512 768 2304 zeromean";
constexpr double kZeroMeanValues = 512.0 * 2304.0;
constexpr const char* kCancel24 = "256 256 256 cancel24";
constexpr double kCancel24Values = 256.0 * 256.0;

// Records with `record_mode` under each trainer core type, replays with
// `replay_mode` under every core type and thread count; returns the total
// number of output values that differ from the trainer's.
std::size_t ReplayMismatches(const std::string& record_mode, const std::string& replay_mode,
                             const char* inputs, double values) {
  const std::string tag = ::testing::TempDir() + "vt_crosscore_" + std::to_string(getpid());
  const std::string log_path = tag + ".log", rec_dump = tag + ".rec", rep_dump = tag + ".rep";
  std::size_t total = 0;
  for (const std::string& trainer : {std::string(""), std::string("Prescott")}) {
    const ProbeResult rec = RunProbe(trainer, record_mode + " 1 " + inputs + " " + log_path, rec_dump);
    EXPECT_FALSE(rec.hash.empty()) << rec.raw;
    if (rec.hash.empty()) return static_cast<std::size_t>(-1);
    const std::vector<std::uint32_t> want = ReadBits(rec_dump);
    std::printf("[%s] trainer %-10s logged %zu of %.0f values (%.4f %%)\n", record_mode.c_str(),
                Name(trainer).c_str(), rec.entries, values,
                100.0 * static_cast<double>(rec.entries) / values);
    for (const std::string& ct : vt::test::OpenBlasCoreTypes()) {
      for (int threads : {1, 2}) {
        const ProbeResult rep = RunProbe(
            ct, replay_mode + " " + std::to_string(threads) + " " + inputs + " " + log_path, rep_dump);
        EXPECT_FALSE(rep.hash.empty()) << rep.raw;
        const std::size_t mm = Mismatches(want, ReadBits(rep_dump));
        std::printf("  [%s] replayer %-12s threads=%d mismatches %zu\n", replay_mode.c_str(),
                    Name(ct).c_str(), threads, mm);
        total += mm;
      }
    }
  }
  for (const std::string& p : {log_path, rec_dump, rep_dump}) std::remove(p.c_str());
  return total;
}

TEST(CrossCoreTypeTest, ZeroMeanTransformerShapeReplaysWithErrorBound) {
  EXPECT_EQ(ReplayMismatches("record", "replay", kZeroMean, kZeroMeanValues), 0u)
      << "with the GEMM error bound, replay must match bitwise under every core type and thread count";
}

TEST(CrossCoreTypeTest, HeavyCancellationNeedsTheErrorBound) {
  // The default τ = 2^-12 without β: the outputs diverge by ~2^-8 ulp across
  // core types, so replayed values differ (Prescott's dgemm vs the others)...
  const std::size_t without =
      ReplayMismatches("record-noslack", "replay-noslack", kCancel24, kCancel24Values);
  EXPECT_GT(without, 0u) << "expected tau = 2^-12 alone to mismatch under heavy cancellation";
  // ...and with β (which logs much more here: β caps at u/4) none do.
  EXPECT_EQ(ReplayMismatches("record", "replay", kCancel24, kCancel24Values), 0u);
}

TEST(CrossCoreTypeTest, RepopsIgnoresTheBlasCoreType) {
  std::set<std::string> hashes;
  for (const std::string& ct : vt::test::OpenBlasCoreTypes()) {
    const ProbeResult r = RunProbe(ct, std::string("repops 2 ") + kUniform);
    ASSERT_FALSE(r.hash.empty()) << r.raw;
    hashes.insert(r.hash);
  }
  EXPECT_EQ(hashes.size(), 1u);
}

// The probe's "<corename> <threads>" line for `args`, under two OpenBLAS threads.
std::pair<std::string, unsigned> ProbeThreads(const std::string& args) {
  const std::string cmd = "env OPENBLAS_NUM_THREADS=2 '" VT_CORETYPE_PROBE "' " + args;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {"popen failed", 0};
  char buf[256] = {};
  const bool got = std::fgets(buf, sizeof buf, pipe) != nullptr;
  pclose(pipe);
  unsigned threads = 0;
  char core[64] = {};
  if (!got || std::sscanf(buf, "%63s %u", core, &threads) != 2) return {std::string("bad line: ") + buf, 0};
  return {core, threads};
}

// OpenBLAS's pthread build starts its worker threads as it loads and lets
// each spin for ~0.1 s of a core; kernels/matmul.cpp stops them before main.
// Asked for two of them (OPENBLAS_NUM_THREADS), a process linking the kernels
// has none left when its main starts: only its own thread.
TEST(BlasThreadsTest, NoOpenBlasWorkerSpinsBeforeMain) {
  const auto [core, threads] = ProbeThreads("threads");
  EXPECT_EQ(threads, 1u) << "threads at main under OpenBLAS core " << core;
}

// Setting OpenBLAS's thread count starts its workers again (they then spin
// as at load), even setting it to one, where no call uses them: after a
// one-thread native GEMM, first or after a two-thread one, the process is
// back to its own thread. (After a two-thread one the workers are there:
// the count sees them.)
TEST(BlasThreadsTest, NoOpenBlasWorkerLeftAfterAOneThreadCall) {
  EXPECT_GT(ProbeThreads("threads-after 2").second, 1u);
  for (const char* counts : {"1", "2,1", "1,2,1"}) {
    const auto [core, threads] = ProbeThreads(std::string("threads-after ") + counts);
    EXPECT_EQ(threads, 1u) << "GEMMs on " << counts << " threads, OpenBLAS core " << core;
  }
}

}  // namespace
