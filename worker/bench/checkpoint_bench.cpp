// State hashing and checkpoint throughput for a 10 M-parameter training state,
// against raw SHA-256 of the same bytes measured in the same run.
//
//   checkpoint_bench            full run, then a summary table with ratios
//   checkpoint_bench --quick    a 100 k-parameter state, minimal time (CTest smoke run)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=Hash).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/random.h"
#include "crypto/sha256.h"
#include "kernels/graph/executor.h"
#include "tests/support/bench_main.h"
#include "worker/checkpoint_store.h"
#include "worker/state.h"

namespace {

namespace worker = vt::worker;
using vt::Bytes;

bool g_quick = false;

std::int64_t Parameters() { return g_quick ? 100'000 : 10'000'000; }

// An MLP-like state: a few large weight matrices and small biases, values of
// a typical initialisation (normal, std 0.02), plus a step counter and cursor.
const worker::TrainingState& BenchState() {
  static const worker::TrainingState state = [] {
    worker::TrainingState s;
    const std::int64_t total = Parameters();
    // Four layers taking 40/30/20/10 % of the parameters, each with a bias.
    const int shares[] = {40, 30, 20, 10};
    vt::PhiloxStream rng(42, 0, 0);
    for (int layer = 0; layer < 4; ++layer) {
      const std::int64_t cols = 1000;
      const std::int64_t rows = total * shares[layer] / 100 / cols;
      vt::kernels::Tensor w({rows, cols});
      for (float& v : w.values()) v = 0.02f * vt::NextNormal(rng);
      vt::kernels::Tensor b({rows});
      for (float& v : b.values()) v = 0.02f * vt::NextNormal(rng);
      s.tensors.emplace("layer" + std::to_string(layer) + ".weight", std::move(w));
      s.tensors.emplace("layer" + std::to_string(layer) + ".bias", std::move(b));
    }
    s.step = 1000;
    s.cursor = {3, 1234};
    return s;
  }();
  return state;
}

std::int64_t StateBytes() {
  std::int64_t n = 0;
  for (const auto& [name, t] : BenchState().tensors) n += t.numel() * 4;
  return n;
}

// The tensor bytes in one buffer: what raw SHA-256 hashes.
const Bytes& ConcatenatedBytes() {
  static const Bytes bytes = [] {
    Bytes b;
    for (const auto& [name, t] : BenchState().tensors) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(t.data());
      b.insert(b.end(), p, p + t.numel() * 4);
    }
    return b;
  }();
  return bytes;
}

std::filesystem::path BenchDir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("vt_checkpoint_bench_" + std::to_string(::getpid()));
  return dir;
}

void BM_RawSha256(benchmark::State& state) {
  const Bytes& bytes = ConcatenatedBytes();
  for (auto _ : state) benchmark::DoNotOptimize(vt::crypto::Sha256Digest(bytes));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * StateBytes());
}

void BM_StateHash(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(worker::StateHash(BenchState()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * StateBytes());
}

std::map<bool, double> g_ratio;  // byte_shuffle -> compression ratio of a saved file
std::map<std::pair<bool, int>, double> g_encode_ratio;  // (byte_shuffle, zstd level) -> compression ratio

// zstd levels the encode rows compare; the store's default is one of them.
constexpr int kLevels[] = {3, 1, -1, -4};

// The file's bytes alone (state hash given): the CPU part of a save.
void BM_Encode(benchmark::State& state) {
  const bool shuffle = state.range(0) != 0;
  const int level = static_cast<int>(state.range(1));
  const vt::Hash256 hash = worker::StateHash(BenchState());
  std::size_t size = 0;
  for (auto _ : state) {
    size = worker::EncodeCheckpointFile(BenchState(), hash, {level, shuffle}).size();
    benchmark::DoNotOptimize(size);
  }
  g_encode_ratio[{shuffle, level}] = static_cast<double>(StateBytes()) / static_cast<double>(size);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * StateBytes());
}

// The store's defaults (its zstd level), with or without the byte shuffle.
worker::CheckpointOptions Options(bool shuffle) {
  worker::CheckpointOptions o;
  o.byte_shuffle = shuffle;
  return o;
}

void BM_Save(benchmark::State& state) {
  const bool shuffle = state.range(0) != 0;
  auto store = worker::CheckpointStore::Open(BenchDir() / (shuffle ? "shuffle" : "plain"), Options(shuffle));
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }
  vt::Hash256 hash;
  for (auto _ : state) {
    auto h = store->Put(BenchState());
    if (!h.ok()) {
      state.SkipWithError(h.status().ToString().c_str());
      return;
    }
    hash = *h;
  }
  const double file = static_cast<double>(std::filesystem::file_size(store->PathFor(hash)));
  g_ratio[shuffle] = static_cast<double>(StateBytes()) / file;
  state.counters["ratio"] = g_ratio[shuffle];
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * StateBytes());
}

void BM_Load(benchmark::State& state) {
  const bool shuffle = state.range(0) != 0;
  auto store = worker::CheckpointStore::Open(BenchDir() / (shuffle ? "shuffle" : "plain"), Options(shuffle));
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }
  auto hash = store->Put(BenchState());
  if (!hash.ok()) {
    state.SkipWithError(hash.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto loaded = store->Get(*hash);
    if (!loaded.ok()) {
      state.SkipWithError(loaded.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(loaded->step);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * StateBytes());
}

void Register() {
  benchmark::RegisterBenchmark("RawSha256", BM_RawSha256)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("StateHash", BM_StateHash)->Unit(benchmark::kMillisecond);
  for (int shuffle : {1, 0}) {
    for (const int level : kLevels) {
      benchmark::RegisterBenchmark("Encode", BM_Encode)->Args({shuffle, level})->Unit(benchmark::kMillisecond);
    }
    // Real time: saving is fsync-bound, and that waiting is the cost.
    benchmark::RegisterBenchmark("Save", BM_Save)->Arg(shuffle)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark("Load", BM_Load)->Arg(shuffle)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
}

void PrintSummary(const vt::bench::SecondsReporter& r) {
  const double mb = static_cast<double>(StateBytes()) / 1e6;
  auto mbs = [&](double s) { return s > 0 ? mb / s : 0.0; };
  const double sha = r.Seconds("RawSha256");
  std::printf("\nSummary: %lld-parameter state (%.1f MB of fp32), saved at zstd level %d\n",
              static_cast<long long>(Parameters()), mb, worker::CheckpointOptions{}.zstd_level);
  if (g_quick) std::printf("(--quick: one short pass on a small state; these numbers mean nothing)\n");
  std::printf("%-62s %12s %14s %12s\n", "operation", "MB/s", "vs raw SHA-256", "compression");
  std::printf("%-62s %12.1f %14s %12s\n", "raw SHA-256 of the tensor bytes (baseline)", mbs(sha), "1.00",
              "-");
  const double hash = r.Seconds("StateHash");
  std::printf("%-62s %12.1f %14.2f %12s\n", "StateHash (tensor hashes + Merkle root)", mbs(hash),
              hash > 0 ? sha / hash : 0.0, "-");
  for (int shuffle : {1, 0}) {
    const std::string suffix = "/" + std::to_string(shuffle) + "/real_time";
    const std::string how = shuffle != 0 ? "byte-shuffled" : "plain";
    for (const int level : kLevels) {
      const double encode = r.Seconds("Encode/" + std::to_string(shuffle) + "/" + std::to_string(level));
      const auto it = g_encode_ratio.find({shuffle != 0, level});
      std::printf("%-62s %12.1f %14.2f %11.2fx\n",
                  ("checkpoint file bytes, " + how + ", zstd " + std::to_string(level) + " (encode only)").c_str(),
                  mbs(encode), encode > 0 ? sha / encode : 0.0, it == g_encode_ratio.end() ? 0.0 : it->second);
    }
    const double save = r.Seconds("Save" + suffix);
    const double load = r.Seconds("Load" + suffix);
    const auto it = g_ratio.find(shuffle != 0);
    const double ratio = it == g_ratio.end() ? 0.0 : it->second;
    std::printf("%-62s %12.1f %14.2f %11.2fx\n", ("checkpoint save, " + how + " (incl. hash, fsync)").c_str(),
                mbs(save), save > 0 ? sha / save : 0.0, ratio);
    std::printf("%-62s %12.1f %14.2f %12s\n", ("checkpoint load, " + how + " (incl. verify)").c_str(),
                mbs(load), load > 0 ? sha / load : 0.0, "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // The allocation policy of every training process (vt-worker, the solver),
  // whose background writer encodes the checkpoints: freed buffers are
  // reused, not returned to the kernel and faulted in afresh.
  vt::kernels::graph::KeepFreedMemoryForReuse();
  const int rc = vt::bench::RunBenchmarks(
      argc, argv, g_quick, vt::bench::Clock::kRealWhereRegistered, [] { Register(); }, PrintSummary);
  std::error_code ec;
  std::filesystem::remove_all(BenchDir(), ec);
  return rc;
}
