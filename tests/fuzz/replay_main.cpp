// Without libFuzzer (g++ builds), fuzz targets link this driver instead: it
// feeds every file of the given corpus directories (or files) to the target
// once, so the corpus is a regression test under CTest.
//
// VT_FUZZ_MUTATE_SECONDS=S additionally runs a plain mutational fuzzer for S
// seconds (no coverage feedback: byte flips, inserts, deletions, truncation,
// splices of corpus inputs; seed VT_FUZZ_SEED). Each input is written to
// ./fuzz-current-<pid> before it runs, so a crash leaves its reproducer
// behind; the driver prints how many executions it ran. This is for machines
// without clang + libFuzzer; prefer the VERITRAIN_FUZZ build.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Input = std::vector<std::uint8_t>;

Input Mutate(std::mt19937_64& rng, const std::vector<Input>& corpus) {
  Input in = corpus.empty() ? Input{} : corpus[rng() % corpus.size()];
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = in.empty() ? 0 : rng() % in.size();
    switch (rng() % 7) {
      case 0:
        if (!in.empty()) in[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
        break;
      case 1:
        if (!in.empty()) in[at] = static_cast<std::uint8_t>(rng());
        break;
      case 2:  // an interesting byte: 0, 0xff, 0x7f, 0x80, small counts
      {
        static constexpr std::uint8_t kInteresting[] = {0, 1, 2, 0x7f, 0x80, 0xfe, 0xff, 0x10, 0x40};
        if (!in.empty()) in[at] = kInteresting[rng() % std::size(kInteresting)];
        break;
      }
      case 3:
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(rng()));
        break;
      case 4:
        if (!in.empty()) in.erase(in.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      case 5:
        in.resize(at);
        break;
      default: {  // splice the tail of another input
        if (corpus.empty()) break;
        const Input& other = corpus[rng() % corpus.size()];
        if (other.empty()) break;
        const std::size_t from = rng() % other.size();
        in.resize(at);
        in.insert(in.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
        break;
      }
    }
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<Input> corpus;
  auto run = [&](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    Input buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
    corpus.push_back(std::move(buf));
  };
  for (int i = 1; i < argc; ++i) {
    fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) run(e.path());
    } else if (fs::exists(arg)) {
      run(arg);
    } else {
      std::fprintf(stderr, "no such corpus: %s\n", argv[i]);
      return 1;
    }
  }
  std::printf("replayed %zu corpus inputs\n", corpus.size());
  if (const char* secs = std::getenv("VT_FUZZ_MUTATE_SECONDS")) {
    const char* seed_env = std::getenv("VT_FUZZ_SEED");
    std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 1);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(std::strtoll(secs, nullptr, 10));
    const std::string current = "fuzz-current-" + std::to_string(::getpid());
    std::uint64_t execs = 0;
    while (std::chrono::steady_clock::now() < end) {
      for (int k = 0; k < 256; ++k) {
        const Input in = Mutate(rng, corpus);
        {
          std::ofstream f(current, std::ios::binary | std::ios::trunc);
          f.write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
        }
        LLVMFuzzerTestOneInput(in.data(), in.size());
        ++execs;
      }
    }
    std::remove(current.c_str());
    std::printf("mutational fuzzing: %llu executions, no crash\n", static_cast<unsigned long long>(execs));
  }
  return corpus.empty() ? 1 : 0;
}
