#pragma once
// The common frame of a benchmark binary that prints a summary table after
// Google Benchmark's own output: `--quick` (CTest's short pass, label bench)
// and a reporter that remembers seconds per iteration by benchmark name, so
// the summary can put ours beside its baseline measured in the same run.

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vt::bench {

// Which clock a benchmark's seconds come from. CPU time is the default:
// the build machines are shared, and preemption by other jobs should not
// show up as slowness of the code. Benchmarks that wait on sockets or
// threads register with UseRealTime; their names end in "/real_time".
enum class Clock {
  kCpu,
  kReal,
  kRealWhereRegistered,  // real time for names with "real_time", CPU time otherwise
};

class SecondsReporter : public benchmark::ConsoleReporter {
 public:
  explicit SecondsReporter(Clock clock) : m_clock(clock) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.iterations <= 0 || run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const bool real =
          m_clock == Clock::kReal || (m_clock == Clock::kRealWhereRegistered &&
                                      run.benchmark_name().find("real_time") != std::string::npos);
      m_seconds[run.benchmark_name()] =
          (real ? run.real_accumulated_time : run.cpu_accumulated_time) / static_cast<double>(run.iterations);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // Seconds per iteration of the benchmark named exactly `name`; 0 if it did
  // not run (filtered out, or it failed).
  double Seconds(const std::string& name) const {
    const auto it = m_seconds.find(name);
    return it == m_seconds.end() ? 0.0 : it->second;
  }

  // The same for the first name that starts with `prefix` (names may carry
  // suffixes such as "/real_time").
  double SecondsWithPrefix(std::string_view prefix) const {
    for (auto it = m_seconds.lower_bound(std::string(prefix)); it != m_seconds.end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) == 0) return it->second;
      break;
    }
    return 0.0;
  }

 private:
  Clock m_clock;
  std::map<std::string, double> m_seconds;
};

// Runs a benchmark binary: strips `--quick` (setting `quick`; it also sets
// Google Benchmark's minimum time to one short pass), hands the rest of the
// arguments to Google Benchmark, calls `setup` (register benchmarks, set log
// levels), runs them and calls `summary` with the reporter. Returns the
// process's exit code (2 for an unknown argument).
template <typename Setup, typename Summary>
int RunBenchmarks(int argc, char** argv, bool& quick, Clock clock, Setup setup, Summary summary) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--quick") {
      quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  static char min_time[] = "--benchmark_min_time=0.001";
  if (quick) args.push_back(min_time);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
  setup();
  SecondsReporter reporter(clock);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  summary(static_cast<const SecondsReporter&>(reporter));
  benchmark::Shutdown();
  return 0;
}

}  // namespace vt::bench
