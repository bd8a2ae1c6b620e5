// Throughput of the crypto library against plain OpenSSL / libsecp256k1
// calls measured in the same run.
//
//   crypto_bench            full run, then a summary table with ratios
//   crypto_bench --quick    tiny sizes and minimal time (the CTest smoke run)
// Other flags go to Google Benchmark (e.g. --benchmark_filter=Merkle).

#include <benchmark/benchmark.h>
#include <openssl/sha.h>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "crypto/chunk_hash.h"
#include "crypto/keys.h"
#include "crypto/merkle.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "tests/support/bench_main.h"

namespace {

using vt::Bytes;
using vt::ByteSpan;
using vt::Hash256;
namespace crypto = vt::crypto;

bool g_quick = false;
std::size_t MerkleLeaves() { return g_quick ? 1024 : std::size_t{1} << 20; }

Bytes Filled(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 131 + 7);
  return b;
}

// ---- SHA-256 -------------------------------------------------------------------

void BM_Sha256(benchmark::State& state) {
  const Bytes msg = Filled(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(crypto::Sha256Digest(msg));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

// Baseline: OpenSSL's single-call SHA256() (it fetches the digest per call).
void BM_Sha256OpenSslOneCall(benchmark::State& state) {
  const Bytes msg = Filled(static_cast<std::size_t>(state.range(0)));
  std::array<unsigned char, 32> out{};
  for (auto _ : state) {
    SHA256(msg.data(), msg.size(), out.data());
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

// ---- tagged hashing --------------------------------------------------------------

void BM_TaggedHash64(benchmark::State& state) {
  static const crypto::TaggedHasher hasher(crypto::tags::kTensor);
  const Bytes item = Filled(64);
  for (auto _ : state) benchmark::DoNotOptimize(hasher.Hash(item));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Baseline: the definition without a midstate, SHA256(t || t || data) with the
// tag hash t recomputed per item.
void BM_TaggedHash64NoMidstate(benchmark::State& state) {
  const Bytes item = Filled(64);
  const std::string_view tag = crypto::tags::kTensor;
  for (auto _ : state) {
    const Hash256 t = crypto::Sha256Digest(tag);
    crypto::Sha256 h;
    h.Update(t.span()).Update(t.span()).Update(item);
    benchmark::DoNotOptimize(h.Finalize());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// ---- Merkle --------------------------------------------------------------------

std::vector<Hash256> Leaves() {
  std::vector<Hash256> leaves(MerkleLeaves());
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    std::memcpy(leaves[i].bytes.data(), &i, sizeof i);
  }
  return leaves;
}

void BM_MerkleRoot(benchmark::State& state) {
  const auto leaves = Leaves();
  for (auto _ : state) benchmark::DoNotOptimize(crypto::MerkleRoot(leaves));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * leaves.size()));
}

// Comparison: the tree with every level kept (what a worker holds to answer
// proofs and walk moves).
void BM_MerkleTreeBuild(benchmark::State& state) {
  const auto leaves = Leaves();
  for (auto _ : state) benchmark::DoNotOptimize(crypto::MerkleTree::FromLeafHashes(leaves).root());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * leaves.size()));
}

// A dispute's partial-results tree (verify::PartialsTree): one leaf per fp32
// value, hashed from its 4 bytes. Kept whole, or only from level 8 up with
// the leaves rehashed on demand (MerkleTree::FromLeafSource) — what a party
// holds for a value of GPT-2's clip norm (1.2·10^8 leaves).
constexpr unsigned kKeptFrom = 8;

std::shared_ptr<const std::vector<float>> PartialValues() {
  auto v = std::make_shared<std::vector<float>>(MerkleLeaves());
  for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = static_cast<float>(i) * 0.5f;
  return v;
}
Hash256 ValueLeaf(float x) {
  std::uint8_t b[4];
  std::memcpy(b, &x, 4);
  return crypto::MerkleLeafHash(ByteSpan(b, 4));
}
crypto::MerkleTree WholeValueTree(const std::vector<float>& values) {
  std::vector<Hash256> leaves;
  leaves.reserve(values.size());
  for (float x : values) leaves.push_back(ValueLeaf(x));
  return crypto::MerkleTree::FromLeafHashes(std::move(leaves));
}
crypto::MerkleTree KeptValueTree(std::shared_ptr<const std::vector<float>> values) {
  const std::size_t n = values->size();
  return crypto::MerkleTree::FromLeafSource(
      n, [values](std::uint64_t i) { return ValueLeaf((*values)[i]); }, kKeptFrom);
}

void BM_PartialsTreeWhole(benchmark::State& state) {
  const auto values = PartialValues();
  for (auto _ : state) benchmark::DoNotOptimize(WholeValueTree(*values).root());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * values->size()));
}
void BM_PartialsTreeKept(benchmark::State& state) {
  const auto values = PartialValues();
  for (auto _ : state) benchmark::DoNotOptimize(KeptValueTree(values).root());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * values->size()));
}
// One proof (a walk's final reveal) from each.
template <bool kKept>
void BM_PartialsProve(benchmark::State& state) {
  const auto values = PartialValues();
  const crypto::MerkleTree tree = kKept ? KeptValueTree(values) : WholeValueTree(*values);
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tree.Prove(i));
    i = (i + 7919) % values->size();
  }
}

// Bytes of hashes a tree over n leaves keeps from `level` up.
double KeptHashBytes(std::uint64_t n, unsigned level) {
  const crypto::MerkleShape shape(n);
  double bytes = 0;
  for (unsigned l = level; l <= shape.height(); ++l) bytes += 32.0 * static_cast<double>(shape.NodesAt(l));
  return bytes;
}

// ---- bulk chunk-tree hashing ------------------------------------------------------

// A tensor chunk tree's leaves (1 KiB chunks, crypto/chunk_hash.h) over a
// buffer larger than the caches, and the node pairs of its lowest level,
// through each path this CPU has and through the dispatched default.
using crypto::detail::ChunkHashPath;
constexpr std::size_t kChunkBytes = 1024;
std::size_t ChunkBufferBytes() { return g_quick ? std::size_t{64} << 10 : std::size_t{16} << 20; }

struct NamedPath {
  ChunkHashPath path;
  const char* name;   // in benchmark names
  const char* label;  // in the summary
};
constexpr NamedPath kChunkHashPaths[] = {{ChunkHashPath::kPortable, "portable", "OpenSSL, one by one"},
                                         {ChunkHashPath::kShaNi, "sha_ni", "SHA-NI 4 lanes"},
                                         {ChunkHashPath::kAvx512, "avx512", "AVX-512 16 lanes"}};

const NamedPath& ChunkHashPathNamed(ChunkHashPath path) {
  for (const NamedPath& p : kChunkHashPaths) {
    if (p.path == path) return p;
  }
  std::abort();
}

void BM_LeafHashes(benchmark::State& state, ChunkHashPath path) {
  const Bytes data = Filled(ChunkBufferBytes());
  std::vector<Hash256> out(data.size() / kChunkBytes);
  for (auto _ : state) {
    crypto::detail::MerkleLeafHashesOfChunks(path, data, kChunkBytes, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}

void BM_NodeHashes(benchmark::State& state, ChunkHashPath path) {
  std::vector<Hash256> in(2 * ChunkBufferBytes() / kChunkBytes), out(in.size() / 2);
  for (std::size_t i = 0; i < in.size(); ++i) std::memcpy(in[i].bytes.data(), &i, sizeof i);
  for (auto _ : state) {
    crypto::detail::MerkleNodeHashesOfPairs(path, in, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.size() * Hash256::kSize));
}

// ---- Schnorr -------------------------------------------------------------------

const crypto::SecretKey& BenchKey() {
  static const crypto::SecretKey key = [] {
    auto k = crypto::SecretKey::FromBytes(
        vt::FromHex("B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF").value());
    return std::move(k).value();
  }();
  return key;
}

void BM_SchnorrSign(benchmark::State& state) {
  const Bytes msg = Filled(32);
  const std::array<std::uint8_t, 32> aux{};
  for (auto _ : state) benchmark::DoNotOptimize(crypto::SignWithAux(BenchKey(), msg, aux));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_SchnorrVerify(benchmark::State& state) {
  const Bytes msg = Filled(32);
  const crypto::Signature sig = crypto::Sign(BenchKey(), msg).value();
  const crypto::PublicKey& pub = BenchKey().public_key();
  for (auto _ : state) benchmark::DoNotOptimize(crypto::Verify(pub, msg, sig));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Baselines: libsecp256k1 called directly (no self-verification after signing).
struct RawSecp {
  secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
  secp256k1_keypair keypair{};
  secp256k1_xonly_pubkey pub{};
  RawSecp() {
    const auto secret = BenchKey().UnsafeSecretBytes();
    if (secp256k1_keypair_create(ctx, &keypair, secret.data()) != 1 ||
        secp256k1_keypair_xonly_pub(ctx, &pub, nullptr, &keypair) != 1) {
      std::abort();
    }
  }
  ~RawSecp() { secp256k1_context_destroy(ctx); }
  RawSecp(const RawSecp&) = delete;
  RawSecp& operator=(const RawSecp&) = delete;
};

void BM_RawSecpSign(benchmark::State& state) {
  static RawSecp raw;
  const Bytes msg = Filled(32);
  std::array<unsigned char, 32> aux{};
  std::array<unsigned char, 64> sig{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        secp256k1_schnorrsig_sign32(raw.ctx, sig.data(), msg.data(), &raw.keypair, aux.data()));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_RawSecpVerify(benchmark::State& state) {
  static RawSecp raw;
  const Bytes msg = Filled(32);
  std::array<unsigned char, 32> aux{};
  std::array<unsigned char, 64> sig{};
  if (secp256k1_schnorrsig_sign32(raw.ctx, sig.data(), msg.data(), &raw.keypair, aux.data()) != 1)
    std::abort();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        secp256k1_schnorrsig_verify(raw.ctx, sig.data(), msg.data(), msg.size(), &raw.pub));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void Register() {
  for (std::int64_t size : {std::int64_t{64}, std::int64_t{1024}, std::int64_t{1} << 20}) {
    benchmark::RegisterBenchmark("Sha256", BM_Sha256)->Arg(size);
    benchmark::RegisterBenchmark("Sha256OpenSslOneCall", BM_Sha256OpenSslOneCall)->Arg(size);
  }
  benchmark::RegisterBenchmark("TaggedHash64", BM_TaggedHash64);
  benchmark::RegisterBenchmark("TaggedHash64NoMidstate", BM_TaggedHash64NoMidstate);
  benchmark::RegisterBenchmark("MerkleRoot", BM_MerkleRoot)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("MerkleTreeBuild", BM_MerkleTreeBuild)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("PartialsTreeWhole", BM_PartialsTreeWhole)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("PartialsTreeKept", BM_PartialsTreeKept)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("PartialsProveWhole", BM_PartialsProve<false>)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("PartialsProveKept", BM_PartialsProve<true>)->Unit(benchmark::kMicrosecond);
  for (const auto& [path, name, label] : kChunkHashPaths) {
    if (!crypto::detail::ChunkHashPathAvailable(path)) continue;
    benchmark::RegisterBenchmark((std::string("LeafHashes/") + name).c_str(), BM_LeafHashes, path)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("NodeHashes/") + name).c_str(), BM_NodeHashes, path)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("LeafHashes/default", BM_LeafHashes, crypto::detail::DefaultChunkHashPath())
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("SchnorrSign", BM_SchnorrSign)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("RawSecpSign", BM_RawSecpSign)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("SchnorrVerify", BM_SchnorrVerify)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("RawSecpVerify", BM_RawSecpVerify)->Unit(benchmark::kMicrosecond);
}

void PrintSummary(const vt::bench::SecondsReporter& r) {
  auto ratio = [](double ours, double base) { return base > 0 && ours > 0 ? base / ours : 0.0; };
  std::printf("\nSummary (CPU time; ratio = ours / baseline throughput, same run; >1 means faster)\n");
  if (g_quick) std::printf("(--quick: one short pass with cold caches; these numbers mean nothing)\n");
  std::printf("%-34s %20s   %-34s %20s %8s\n", "operation", "ours", "baseline", "baseline value", "ratio");
  for (std::int64_t size : {std::int64_t{64}, std::int64_t{1024}, std::int64_t{1} << 20}) {
    const std::string arg = "/" + std::to_string(size);
    const double ours = r.Seconds("Sha256" + arg);
    const double base = r.Seconds("Sha256OpenSslOneCall" + arg);
    const std::string label = size == 64 ? "64 B" : size == 1024 ? "1 KiB" : "1 MiB";
    auto mbs = [&](double s) { return s > 0 ? static_cast<double>(size) / s / 1e6 : 0.0; };
    std::printf("%-34s %15.1f MB/s   %-34s %15.1f MB/s %8.2f\n",
                ("SHA-256 " + label + " (EVP, reused ctx)").c_str(), mbs(ours),
                "OpenSSL SHA256() single call", mbs(base), ratio(ours, base));
  }
  {
    const double ours = r.Seconds("TaggedHash64");
    const double base = r.Seconds("TaggedHash64NoMidstate");
    std::printf("%-34s %13.2f Mitem/s   %-34s %13.2f Mitem/s %8.2f\n", "tagged hash 64 B (midstate)",
                ours > 0 ? 1e-6 / ours : 0.0, "tagged hash without midstate", base > 0 ? 1e-6 / base : 0.0,
                ratio(ours, base));
  }
  {
    const double ours = r.Seconds("MerkleRoot");
    const double base = r.Seconds("MerkleTreeBuild");
    const double n = static_cast<double>(MerkleLeaves());
    std::printf("%-34s %12.1f ms %6.2f M/s  %-34s %12.1f ms %6.2f M/s %5.2f\n",
                ("Merkle root, " + std::to_string(MerkleLeaves()) + " leaves").c_str(), ours * 1e3,
                ours > 0 ? n / ours / 1e6 : 0.0, "full tree kept (MerkleTree)", base * 1e3,
                base > 0 ? n / base / 1e6 : 0.0, ratio(ours, base));
  }
  {
    const std::uint64_t n = MerkleLeaves();
    const double ours = r.Seconds("PartialsTreeKept"), base = r.Seconds("PartialsTreeWhole");
    const double kept_mb = (KeptHashBytes(n, kKeptFrom) + 4.0 * static_cast<double>(n)) / 1e6;
    const double whole_mb = KeptHashBytes(n, 0) / 1e6;
    std::printf("%-34s %12.1f ms %7.1f MB  %-34s %12.1f ms %7.1f MB %5.2f\n",
                ("partials tree, kept from level " + std::to_string(kKeptFrom)).c_str(), ours * 1e3, kept_mb,
                "every level kept", base * 1e3, whole_mb, ratio(ours, base));
    const double prove = r.Seconds("PartialsProveKept"), prove_base = r.Seconds("PartialsProveWhole");
    std::printf("%-34s %15.1f us   %-34s %15.1f us %8.2f\n", "  one proof from it", prove * 1e6,
                "from the whole tree", prove_base * 1e6, ratio(prove, prove_base));
    std::printf(
        "  (MB: the hashes kept and, for the kept tree, its own 4-byte values; a party holds the values "
        "besides either; %.1fx less)\n",
        kept_mb > 0 ? whole_mb / kept_mb : 0.0);
  }
  {
    // Bulk chunk-tree hashing: each path against each slower one, then the
    // dispatched default against the path it replaced (SHA-NI, 4 lanes).
    auto gbs = [](double s, std::size_t bytes) { return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0.0; };
    auto row = [&](const std::string& what, double ours, const char* base_label, double base,
                   std::size_t bytes) {
      if (ours <= 0 || base <= 0) return;
      std::printf("%-34s %15.2f GB/s   %-34s %15.2f GB/s %8.2f\n", what.c_str(), gbs(ours, bytes), base_label,
                  gbs(base, bytes), ratio(ours, base));
    };
    const std::size_t leaf_bytes = ChunkBufferBytes();
    const std::size_t pair_bytes = 2 * ChunkBufferBytes() / kChunkBytes * Hash256::kSize;
    for (const auto& [op, what, bytes] : {std::tuple{"LeafHashes", "1 KiB leaves, ", leaf_bytes},
                                          std::tuple{"NodeHashes", "node pairs, ", pair_bytes}}) {
      auto seconds = [&, op = op](const NamedPath& p) { return r.Seconds(std::string(op) + "/" + p.name); };
      for (std::size_t o = std::size(kChunkHashPaths); o-- > 1;) {
        for (std::size_t b = 0; b < o; ++b) {
          row(what + std::string(kChunkHashPaths[o].label), seconds(kChunkHashPaths[o]),
              kChunkHashPaths[b].label, seconds(kChunkHashPaths[b]), bytes);
        }
      }
    }
    const NamedPath& dispatched = ChunkHashPathNamed(crypto::detail::DefaultChunkHashPath());
    const NamedPath& before = ChunkHashPathNamed(ChunkHashPath::kShaNi);
    row(std::string("1 KiB leaves, default (") + dispatched.name + ")", r.Seconds("LeafHashes/default"),
        before.label, r.Seconds(std::string("LeafHashes/") + before.name), leaf_bytes);
  }
  {
    const double ours = r.Seconds("SchnorrSign");
    const double base = r.Seconds("RawSecpSign");
    std::printf("%-34s %17.0f /s   %-34s %17.0f /s %8.2f\n", "Schnorr sign (+ self-verify)",
                ours > 0 ? 1 / ours : 0.0, "libsecp256k1 sign32, no check", base > 0 ? 1 / base : 0.0,
                ratio(ours, base));
  }
  {
    const double ours = r.Seconds("SchnorrVerify");
    const double base = r.Seconds("RawSecpVerify");
    std::printf("%-34s %17.0f /s   %-34s %17.0f /s %8.2f\n", "Schnorr verify", ours > 0 ? 1 / ours : 0.0,
                "libsecp256k1 verify", base > 0 ? 1 / base : 0.0, ratio(ours, base));
  }
}

}  // namespace

int main(int argc, char** argv) {
  return vt::bench::RunBenchmarks(
      argc, argv, g_quick, vt::bench::Clock::kCpu, [] { Register(); }, PrintSummary);
}
