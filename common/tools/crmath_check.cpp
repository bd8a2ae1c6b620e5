// vt-crmath-check: compares a common/crmath.h function with MPFR over a range
// of float bit patterns (all 2^32 by default), on several threads, resumable.
//
//   vt-crmath-check --fn exp [--from 0] [--to 0x100000000] [--threads 2]
//                   [--state exp.state] [--chunk 1048576] [--list-slow N] [--stride N]
//   vt-crmath-check --bench        ns per call, crmath vs detmath
//   vt-crmath-check --scan-reduction   least |f| of the Sin/Cos reduction
//   vt-crmath-check --array tanh|exp [--from N] [--to N] [--threads N]
//                   TanhArray (ExpArray) against Tanh (Exp), themselves checked
//                   against MPFR, bit for bit, over every pattern in [from, to)
//
// With --state, progress (the contiguous prefix of finished chunks and its
// counts) is saved after each chunk and a rerun with the same arguments
// resumes there. Exit status: 0 when every input matched, 1 on a mismatch,
// 2 on bad arguments.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/crmath.h"
#include "common/detmath.h"
#include "common/tools/crmath_reference.h"

namespace {

using vt::crmath::reference::FnInfo;
using vt::detmath::BitsFloat;
using vt::detmath::FloatBits;

struct Counts {
  std::uint64_t checked = 0;
  std::uint64_t mismatches = 0;
  std::uint64_t slow = 0;
  std::uint64_t undecided = 0;
  void Add(const Counts& o) {
    checked += o.checked;
    mismatches += o.mismatches;
    slow += o.slow;
    undecided += o.undecided;
  }
};

struct Options {
  std::string fn;
  std::uint64_t from = 0;
  std::uint64_t to = std::uint64_t{1} << 32;
  unsigned threads = 2;
  std::uint64_t chunk = std::uint64_t{1} << 20;
  std::string state;
  bool bench = false;
  std::uint64_t list_slow = 0;  // print up to this many inputs that took the slow path
  std::uint64_t stride = 1;     // check every stride-th pattern only (a sampled sweep)
  bool scan_reduction = false;
  std::string array;  // --array: the array function to check against its scalar one
};

std::optional<std::uint64_t> ParseU64(const char* s) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  return v;
}

std::optional<Options> ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--bench") {
      o.bench = true;
      continue;
    }
    if (a == "--scan-reduction") {
      o.scan_reduction = true;
      continue;
    }
    if (i + 1 >= argc) return std::nullopt;
    const char* v = argv[++i];
    if (a == "--fn") {
      o.fn = v;
    } else if (a == "--array") {
      o.array = v;
    } else if (a == "--state") {
      o.state = v;
    } else {
      const auto n = ParseU64(v);
      if (!n) return std::nullopt;
      if (a == "--from")
        o.from = *n;
      else if (a == "--to")
        o.to = *n;
      else if (a == "--threads")
        o.threads = static_cast<unsigned>(std::clamp<std::uint64_t>(*n, 1, 256));
      else if (a == "--chunk")
        o.chunk = std::max<std::uint64_t>(*n, 1);
      else if (a == "--list-slow")
        o.list_slow = *n;
      else if (a == "--stride")
        o.stride = std::max<std::uint64_t>(*n, 1);
      else
        return std::nullopt;
    }
  }
  if (o.to > (std::uint64_t{1} << 32) || o.from > o.to) return std::nullopt;
  o.chunk = (o.chunk + o.stride - 1) / o.stride * o.stride;  // every chunk starts on the stride
  return o;
}

// The run's identity in the state file: function and stride (a sampled sweep
// never resumes an exhaustive one).
std::string RunName(const Options& o) { return o.fn + "/" + std::to_string(o.stride); }

// The saved progress: inputs [from, next) are done with these counts.
struct Progress {
  std::uint64_t next;
  Counts counts;
  double seconds = 0;
};

bool LoadState(const Options& o, Progress* p) {
  FILE* f = std::fopen(o.state.c_str(), "r");
  if (!f) return false;
  char fn[64] = {};
  std::uint64_t from = 0, to = 0;
  const int n = std::fscanf(
      f, "%63s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %lf", fn,
      &from, &to, &p->next, &p->counts.checked, &p->counts.mismatches, &p->counts.slow, &p->counts.undecided,
      &p->seconds);
  std::fclose(f);
  if (n != 9 || RunName(o) != fn || from != o.from || to != o.to) {
    std::fprintf(stderr, "state file %s is for another run; not resuming\n", o.state.c_str());
    return false;
  }
  return true;
}

void SaveState(const Options& o, const Progress& p) {
  const std::string tmp = o.state + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return;
  std::fprintf(
      f, "%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %.1f\n",
      RunName(o).c_str(), o.from, o.to, p.next, p.counts.checked, p.counts.mismatches, p.counts.slow,
      p.counts.undecided, p.seconds);
  std::fclose(f);
  std::rename(tmp.c_str(), o.state.c_str());
}

void PrintLine(const char* tag, const Options& o, const Progress& p) {
  std::printf("%s fn=%s from=0x%" PRIx64 " to=0x%" PRIx64 " done_to=0x%" PRIx64 " checked=%" PRIu64
              " mismatches=%" PRIu64 " slow=%" PRIu64 " undecided=%" PRIu64 " seconds=%.1f\n",
              tag, o.fn.c_str(), o.from, o.to, p.next, p.counts.checked, p.counts.mismatches, p.counts.slow,
              p.counts.undecided, p.seconds);
  std::fflush(stdout);
}

Counts CheckRange(const FnInfo& info, std::uint64_t lo, std::uint64_t hi, std::uint64_t stride,
                  std::uint64_t list_slow, std::mutex& print_mu, std::atomic<int>& printed,
                  std::atomic<std::uint64_t>& listed) {
  Counts c;
  vt::crmath::PathCounts& path = vt::crmath::ThreadPathCounts();
  const vt::crmath::PathCounts before = path;
  for (std::uint64_t b = lo; b < hi; b += stride) {
    const float x = BitsFloat(static_cast<std::uint32_t>(b));
    const std::uint64_t slow_before = path.slow;
    const float got = info.crmath(x);
    if (path.slow != slow_before && listed.fetch_add(1) < list_slow) {
      const std::lock_guard<std::mutex> lock(print_mu);
      std::printf("SLOW %s 0x%08x\n", info.name, static_cast<unsigned>(b));
    }
    const float want = vt::crmath::reference::Reference(info.fn, x);
    ++c.checked;
    if (FloatBits(got) != FloatBits(want)) {
      ++c.mismatches;
      if (printed.fetch_add(1) < 50) {
        const std::lock_guard<std::mutex> lock(print_mu);
        std::printf("MISMATCH %s(0x%08x = %.9g): got 0x%08x (%.9g) want 0x%08x (%.9g)\n", info.name,
                    static_cast<unsigned>(b), static_cast<double>(x), FloatBits(got), static_cast<double>(got),
                    FloatBits(want), static_cast<double>(want));
      }
    }
  }
  c.slow = path.slow - before.slow;
  c.undecided = path.undecided - before.undecided;
  return c;
}

int RunCheck(const Options& o) {
  const auto info = vt::crmath::reference::FindFunction(o.fn);
  if (!info) {
    std::fprintf(stderr, "unknown --fn %s (exp log sin cos tanh erf rsqrt)\n", o.fn.c_str());
    return 2;
  }
  Progress progress{o.from, {}, 0};
  if (!o.state.empty() && LoadState(o, &progress)) PrintLine("RESUME", o, progress);
  const double earlier_seconds = progress.seconds;
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t first = progress.next;
  std::atomic<std::uint64_t> next_chunk{0};
  const std::uint64_t chunks = (o.to - first + o.chunk - 1) / o.chunk;
  std::mutex mu;                             // guards progress, finished, the state file and stdout
  std::map<std::uint64_t, Counts> finished;  // chunks done beyond the prefix
  std::atomic<int> printed{0};
  std::atomic<std::uint64_t> listed{0};
  auto last_print = start;
  auto worker = [&] {
    for (;;) {
      const std::uint64_t k = next_chunk.fetch_add(1);
      if (k >= chunks) return;
      const std::uint64_t lo = first + k * o.chunk;
      const std::uint64_t hi = std::min(o.to, lo + o.chunk);
      const Counts c = CheckRange(*info, lo, hi, o.stride, o.list_slow, mu, printed, listed);
      const std::lock_guard<std::mutex> lock(mu);
      finished[lo] = c;
      while (!finished.empty() && finished.begin()->first == progress.next) {
        progress.counts.Add(finished.begin()->second);
        progress.next = std::min(o.to, progress.next + o.chunk);
        finished.erase(finished.begin());
      }
      const auto now = std::chrono::steady_clock::now();
      progress.seconds = earlier_seconds + std::chrono::duration<double>(now - start).count();
      if (!o.state.empty()) SaveState(o, progress);
      if (now - last_print > std::chrono::seconds(60)) {
        last_print = now;
        PrintLine("PROGRESS", o, progress);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < o.threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  progress.seconds =
      earlier_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.state.empty()) SaveState(o, progress);
  PrintLine("DONE", o, progress);
  return progress.counts.mismatches == 0 ? 0 : 1;
}

// The least |f| of the Sin/Cos reduction over every float in [pi/4, FLT_MAX].
int RunScanReduction(unsigned threads) {
  constexpr std::uint32_t kFirst = 0x3f490fdcu;  // the least float above pi/4
  constexpr std::uint32_t kEnd = 0x7f800000u;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<double, std::uint32_t>> best(threads, {1.0, 0});
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::uint32_t b = kFirst + t; b < kEnd; b += threads) {
        const double f = vt::crmath::detail::QuarterTurnFraction(BitsFloat(b));
        if (f < best[t].first) best[t] = {f, b};
      }
    });
  }
  for (std::thread& th : pool) th.join();
  const auto min = *std::min_element(best.begin(), best.end());
  std::printf("SCAN-REDUCTION inputs=%u min|f|=%a (2^%.2f quarter turns) at x=0x%08x (%.9g) seconds=%.1f\n",
              kEnd - kFirst, min.first, std::log2(min.first), min.second,
              static_cast<double>(BitsFloat(min.second)),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

// The array functions (blocks of fast evaluations and a branch-free
// acceptance test) and their scalar functions.
struct ArrayFn {
  const char* name;
  void (*array)(const float*, float*, std::int64_t);
  float (*scalar)(float);
};
constexpr ArrayFn kArrays[] = {{"tanh", vt::crmath::TanhArray, vt::crmath::Tanh},
                               {"exp", vt::crmath::ExpArray, vt::crmath::Exp}};

// An array function against its scalar function, over every pattern in
// [from, to), in place as the operators call it, in uneven pieces so that
// blocks start at varied offsets.
int RunArray(const Options& o) {
  const ArrayFn* fn = nullptr;
  for (const ArrayFn& f : kArrays) {
    if (o.array == f.name) fn = &f;
  }
  if (fn == nullptr) {
    std::fprintf(stderr, "unknown --array %s (tanh exp)\n", o.array.c_str());
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  std::atomic<std::uint64_t> next{o.from}, checked{0}, mismatches{0};
  std::mutex mu;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < o.threads; ++t) {
    pool.emplace_back([&] {
      std::vector<float> xs, out;
      for (;;) {
        const std::uint64_t lo = next.fetch_add(kChunk);
        if (lo >= o.to) return;
        const std::uint64_t hi = std::min(o.to, lo + kChunk);
        xs.resize(hi - lo);
        for (std::uint64_t b = lo; b < hi; ++b) xs[b - lo] = BitsFloat(static_cast<std::uint32_t>(b));
        out = xs;
        for (std::size_t i0 = 0, len = 1; i0 < out.size(); i0 += len, len = len * 7 % 997 + 1) {
          const std::size_t n = std::min(len, out.size() - i0);
          fn->array(out.data() + i0, out.data() + i0, static_cast<std::int64_t>(n));
        }
        std::uint64_t bad = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
          const std::uint32_t want = FloatBits(fn->scalar(xs[i]));
          if (FloatBits(out[i]) == want) continue;
          if (bad++ < 10) {
            const std::lock_guard<std::mutex> lock(mu);
            std::printf("MISMATCH %s array(0x%08x): got 0x%08x want 0x%08x\n", fn->name, FloatBits(xs[i]),
                        FloatBits(out[i]), want);
          }
        }
        checked += xs.size();
        mismatches += bad;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  std::printf("DONE array %s from=0x%08" PRIx64 " to=0x%09" PRIx64 " checked=%" PRIu64 " mismatches=%" PRIu64
              " seconds=%.1f\n",
              fn->name, o.from, o.to, checked.load(), mismatches.load(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return mismatches.load() == 0 ? 0 : 1;
}

// ns per call over 2^20 inputs spread over each function's working range.
int RunBench() {
  constexpr int kInputs = 1 << 20;
  std::printf("%-6s %14s %14s %8s\n", "fn", "crmath ns/call", "detmath ns/call", "ratio");
  for (const FnInfo& info : vt::crmath::reference::AllFunctions()) {
    std::vector<float> xs(kInputs);
    std::uint64_t s = 0x9e3779b97f4a7c15ull;
    for (float& x : xs) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(s >> 11) * 0x1p-53;  // [0, 1)
      switch (info.fn) {
        case vt::crmath::reference::Fn::kLog:
        case vt::crmath::reference::Fn::kRsqrt:
          x = static_cast<float>(u * 100.0 + 1e-3);
          break;
        default:
          x = static_cast<float>(u * 20.0 - 10.0);
      }
    }
    auto time = [&](float (*f)(float)) {
      float sink = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 3; ++rep)
        for (const float x : xs) sink += f(x);
      const double ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
      if (sink == 12345.0f) std::printf(" ");  // keeps the calls
      return ns / (3.0 * kInputs);
    };
    const double cr = time(info.crmath);
    const double det = time(info.detmath);
    std::printf("%-6s %14.1f %14.1f %8.2f\n", info.name, cr, det, cr / det);
    // The array form (as certified GELU and softmax call it: 4096 values a
    // call), ns per value.
    for (const ArrayFn& array : kArrays) {
      if (info.crmath != array.scalar) continue;
      std::vector<float> out(kInputs);
      const auto t0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < kInputs; i += 4096) array.array(xs.data() + i, out.data() + i, 4096);
      }
      const double ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
          (3.0 * kInputs);
      std::printf("%-6s %14.1f %14.1f %8.2f  (%s[], ns per value)\n", (std::string(info.name) + "[]").c_str(),
                  ns, det, ns / det, info.name);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto o = ParseArgs(argc, argv);
  if (o && o->scan_reduction) return RunScanReduction(o->threads);
  if (o && !o->array.empty()) return RunArray(*o);
  if (!o || (!o->bench && o->fn.empty())) {
    std::fprintf(
        stderr,
        "usage: vt-crmath-check --fn NAME [--from N] [--to N] [--threads N] [--state FILE] [--chunk N]\n"
        "       vt-crmath-check --bench | --scan-reduction [--threads N]\n"
        "       vt-crmath-check --array tanh|exp [--from N] [--to N] [--threads N]\n");
    return 2;
  }
  return o->bench ? RunBench() : RunCheck(*o);
}
