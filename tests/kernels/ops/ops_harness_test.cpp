// One harness for every operator in every mode (ggml's test-backend-ops,
// evmone's TEST_P over interpreters):
//   OpMode.MatchesFp64Reference        case × mode: outputs vs the fp64 reference
//   OpGradient.MatchesFiniteDifferences gradient case × mode: backward vs central
//                                       differences of the fp64 reference
//   OpRepops.BitwiseAcrossThreadsAndSimd threads {1,2,3,8} × every SIMD path
//   OpRepops.GoldenHashes               outputs of fixed Philox inputs, hard-coded
//   OpRounded.ReplayAcrossThreads       record a log, replay on other thread counts
//   OpRounded.ForgedLogRejected         far-from-boundary and out-of-range entries
//   OpRounded.ReferenceFunctionsAreTheReferenceRun  per-value references = the reference run
//   OpOutputs.EveryValueWrittenAfterUnzeroedResize  case × mode: no output value left unwritten
//   OpMode.NaNInputsDoNotCrash, OpShapes.* hostile inputs through RunOp
// Randomised inputs come from vt::test::TestSeed() (VT_TEST_SEED replays).

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "common/philox.h"
#include "kernels/ops/op_util.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "tests/kernels/ops/ops_cases.h"
#include "tests/kernels/supported_simds.h"
#include "tests/kernels/values_hash.h"
#include "tests/support/test_seed.h"

namespace vt::kernels::testing {
namespace {

const OpCase& FindCase(const std::string& name) {
  for (const OpCase& c : AllCases()) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << "no case " << name;
  return AllCases().front();
}

// A per-case stream salt that does not move when cases are added.
std::uint32_t Salt(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (unsigned char ch : name) h = (h ^ ch) * 16777619u;
  return h;
}

std::vector<std::string> CaseNames(bool gradient_only = false, bool with_inputs_only = false) {
  std::vector<std::string> names;
  for (const OpCase& c : AllCases()) {
    if ((!gradient_only || c.grad) && (!with_inputs_only || !c.inputs.empty())) names.push_back(c.name);
  }
  return names;
}

ExecConfig Config(Mode mode, int threads = 2, Simd simd = Simd::kAuto) {
  ExecConfig cfg;
  cfg.mode = mode;
  cfg.threads = threads;
  cfg.simd = simd;
  return cfg;
}

std::vector<T64> AllToT64(const std::vector<Tensor>& ts) {
  std::vector<T64> out;
  for (const Tensor& t : ts) out.push_back(ToT64(t));
  return out;
}

// Spacing of fp32 at |x|.
double Ulp32(double x) {
  const float f = static_cast<float>(std::fabs(x));
  return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity())) - static_cast<double>(f);
}

std::string ParamName(const std::string& name, Mode mode) { return name + "_" + std::string(ModeName(mode)); }

// ---- outputs vs the fp64 reference ----------------------------------------------------

class OpMode : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(OpMode, MatchesFp64Reference) {
  const auto& [name, mode] = GetParam();
  const OpCase& c = FindCase(name);
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(name));
  const RunResult r = RunNode(Config(mode), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<T64> ref = c.reference(AllToT64(inputs));
  ASSERT_EQ(r.outputs.size(), ref.size());
  for (std::size_t o = 0; o < ref.size(); ++o) {
    ASSERT_EQ(r.outputs[o].shape(), ref[o].shape) << "output " << o;
    int failures = 0;
    double worst = 0;
    for (std::int64_t i = 0; i < ref[o].numel(); ++i) {
      const double want = ref[o].v[i], got = r.outputs[o][i];
      // Rounded mode: fp64 then one rounding, so within one fp32 ulp of the
      // exact value (plus fp64 noise). fp32 modes: the per-case tolerance.
      const double tol = mode == Mode::kRounded ? Ulp32(want) + 1e-12 : c.atol + c.rtol * std::fabs(want);
      const double err = std::fabs(got - want);
      worst = std::max(worst, err / tol);
      if (!(err <= tol) && ++failures <= 3) {
        ADD_FAILURE() << name << " output " << o << "[" << i << "]: got " << got << ", fp64 reference " << want
                      << " (tolerance " << tol << ")";
      }
    }
    EXPECT_EQ(failures, 0) << "output " << o << ": worst error/tolerance " << worst;
  }
}

TEST_P(OpMode, NaNInputsDoNotCrash) {
  const auto& [name, mode] = GetParam();
  const OpCase& c = FindCase(name);
  std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(name));
  for (Tensor& t : inputs) std::fill(t.values().begin(), t.values().end(), std::numeric_limits<float>::quiet_NaN());
  const RunResult a = RunNode(Config(mode), c.kind, c.attrs, Pointers(inputs), c.rng);
  // Index inputs (embedding, labels) reject NaN; everything else computes NaNs.
  ASSERT_TRUE(a.status.ok() || a.status.is_invalid()) << a.status.ToString();
  if (a.status.is_invalid()) {
    EXPECT_EQ(a.status.reason(), "bad-index") << a.status.ToString();
    return;
  }
  if (mode == Mode::kNative) return;
  const RunResult b = RunNode(Config(mode, 3), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(b.status.ok()) << b.status.ToString();
  for (std::size_t o = 0; o < a.outputs.size(); ++o) EXPECT_TRUE(a.outputs[o].BitwiseEqual(b.outputs[o])) << o;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpMode,
                         ::testing::Combine(::testing::ValuesIn(CaseNames()),
                                            ::testing::Values(Mode::kNative, Mode::kRepops, Mode::kRounded)),
                         [](const auto& p) { return ParamName(std::get<0>(p.param), std::get<1>(p.param)); });

// ---- gradients vs finite differences ----------------------------------------------------

// A gradient case's upstream gradient dy: uniform in [-1, 1), shaped like
// the weighted output of the forward's `outputs`.
Tensor MakeDy(const OpCase& c, std::uint64_t seed, const std::vector<Tensor>& outputs) {
  Tensor dy(outputs[static_cast<std::size_t>(c.grad->output)].shape());
  PhiloxStream rng(seed, Salt(c.name) ^ 0xd1u, 99);
  for (std::int64_t i = 0; i < dy.numel(); ++i) {
    dy[i] = static_cast<float>(static_cast<double>(rng.NextU32() >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return dy;
}

// The backward node's inputs, in g.sources' order.
std::vector<const Tensor*> BackwardInputs(const GradSpec& g, const Tensor& dy,
                                          const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& outputs) {
  std::vector<const Tensor*> in;
  for (const Src& s : g.sources) {
    in.push_back(s.kind == Src::kDy      ? &dy
                 : s.kind == Src::kInput ? &inputs[static_cast<std::size_t>(s.index)]
                                         : &outputs[static_cast<std::size_t>(s.index)]);
  }
  return in;
}

// ---- every output value written ------------------------------------------------------

// Tensor::Resize leaves a new output's values unspecified, so an operator
// must write every one of them. With the test switch on, Resize fills them
// with kUnwrittenFloatBits (a signalling NaN no arithmetic returns): the
// forward and backward outputs of every case, in every mode and at 1 and
// 3 threads, must hold none, and must equal the run with the switch off
// bit for bit (native: no fixed order, so only the first check).
class OpOutputs : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(OpOutputs, EveryValueWrittenAfterUnzeroedResize) {
  const auto& [name, mode] = GetParam();
  const OpCase& c = FindCase(name);
  const std::uint64_t seed = vt::test::TestSeed();
  const std::vector<Tensor> inputs = MakeInputs(c, seed, Salt(name));
  // Forward then (where the case has one) backward outputs, all in a row.
  const auto run = [&](const ExecConfig& config, bool fill) {
    SetResizeFillForTesting(fill);
    std::vector<Tensor> all;
    const RunResult fwd = RunNode(config, c.kind, c.attrs, Pointers(inputs), c.rng);
    EXPECT_TRUE(fwd.status.ok()) << OpKindName(c.kind) << ": " << fwd.status.ToString();
    if (fwd.status.ok() && c.grad) {
      const Tensor dy = MakeDy(c, seed, fwd.outputs);
      const RunResult bwd = RunNode(config, c.grad->backward, c.grad->attrs,
                                    BackwardInputs(*c.grad, dy, inputs, fwd.outputs), c.rng);
      EXPECT_TRUE(bwd.status.ok()) << OpKindName(c.grad->backward) << ": " << bwd.status.ToString();
      all = fwd.outputs;
      all.insert(all.end(), bwd.outputs.begin(), bwd.outputs.end());
    } else {
      all = fwd.outputs;
    }
    SetResizeFillForTesting(false);
    return all;
  };
  for (const int threads : {1, 3}) {
    for (const bool f64_reference : {false, true}) {
      if (f64_reference && mode != Mode::kRounded) continue;
      SCOPED_TRACE(::testing::Message() << "threads=" << threads << " f64_reference=" << f64_reference);
      ExecConfig config = Config(mode, threads);
      config.f64_reference = f64_reference;
      const std::vector<Tensor> filled = run(config, true);
      for (std::size_t o = 0; o < filled.size(); ++o) {
        EXPECT_FALSE(HasUnwrittenValue(filled[o]))
            << "output " << o << " (forward outputs first) has unwritten values";
      }
      if (mode == Mode::kNative) continue;
      const std::vector<Tensor> plain = run(config, false);
      ASSERT_EQ(plain.size(), filled.size());
      for (std::size_t o = 0; o < plain.size(); ++o)
        EXPECT_TRUE(plain[o].BitwiseEqual(filled[o])) << "output " << o;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpOutputs,
                         ::testing::Combine(::testing::ValuesIn(CaseNames()),
                                            ::testing::Values(Mode::kNative, Mode::kRepops, Mode::kRounded,
                                                              Mode::kCertified)),
                         [](const auto& p) { return ParamName(std::get<0>(p.param), std::get<1>(p.param)); });

class OpGradient : public ::testing::TestWithParam<std::tuple<std::string, Mode>> {};

TEST_P(OpGradient, MatchesFiniteDifferences) {
  const auto& [name, mode] = GetParam();
  const OpCase& c = FindCase(name);
  const GradSpec& g = *c.grad;
  const std::uint64_t seed = vt::test::TestSeed();
  const std::vector<Tensor> inputs = MakeInputs(c, seed, Salt(name));
  const ExecConfig cfg = Config(mode);
  const RunResult fwd = RunNode(cfg, c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(fwd.status.ok()) << fwd.status.ToString();

  const Tensor dy = MakeDy(c, seed, fwd.outputs);
  const std::vector<const Tensor*> bwd_in = BackwardInputs(g, dy, inputs, fwd.outputs);
  const RunResult bwd = RunNode(cfg, g.backward, g.attrs, bwd_in, c.rng);
  ASSERT_TRUE(bwd.status.ok()) << bwd.status.ToString();

  // Loss L(x) = Σ dy · reference(x)[output], differentiated centrally in fp64.
  const std::vector<T64> ref_in = AllToT64(inputs);
  const T64 dy64 = ToT64(dy);
  auto loss = [&](const std::vector<T64>& in) {
    const std::vector<T64> out = c.reference(in);
    double l = 0;
    for (std::int64_t i = 0; i < dy64.numel(); ++i) l += dy64.v[i] * out[static_cast<std::size_t>(g.output)].v[i];
    return l;
  };
  const double h = 1e-6;
  for (std::size_t w = 0; w < g.wrt.size(); ++w) {
    const std::size_t in_index = static_cast<std::size_t>(g.wrt[w]);
    const Tensor& grad = bwd.outputs[static_cast<std::size_t>(g.grad_outputs[w])];
    ASSERT_EQ(grad.shape(), inputs[in_index].shape()) << "gradient " << w;
    int failures = 0;
    for (std::int64_t e = 0; e < grad.numel(); ++e) {
      std::vector<T64> plus = ref_in, minus = ref_in;
      plus[in_index].v[e] += h;
      minus[in_index].v[e] -= h;
      const double fd = (loss(plus) - loss(minus)) / (2 * h);
      // Rounded mode rounds an fp64 gradient once: ~1e-7 relative, plus the
      // fp32 rounding of saved forward outputs it reads.
      const double tol = mode == Mode::kRounded ? 1e-6 + 1e-5 * std::fabs(fd) : g.atol + g.rtol * std::fabs(fd);
      if (!(std::fabs(grad[e] - fd) <= tol) && ++failures <= 3) {
        ADD_FAILURE() << name << " d/d input " << in_index << "[" << e << "]: backward " << grad[e]
                      << ", finite difference " << fd << " (tolerance " << tol << ")";
      }
    }
    EXPECT_EQ(failures, 0) << "input " << in_index;
  }
}

INSTANTIATE_TEST_SUITE_P(Differentiable, OpGradient,
                         ::testing::Combine(::testing::ValuesIn(CaseNames(true)),
                                            ::testing::Values(Mode::kNative, Mode::kRepops, Mode::kRounded)),
                         [](const auto& p) { return ParamName(std::get<0>(p.param), std::get<1>(p.param)); });

// ---- repops: bitwise reproducibility -------------------------------------------------------

class OpRepops : public ::testing::TestWithParam<std::string> {};

TEST_P(OpRepops, BitwiseAcrossThreadsAndSimd) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  const RunResult base = RunNode(Config(Mode::kRepops, 1, Simd::kScalar), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(base.status.ok()) << base.status.ToString();
  for (int threads : {1, 2, 3, 8}) {
    for (Simd simd : testing::SupportedSimds()) {
      const RunResult r = RunNode(Config(Mode::kRepops, threads, simd), c.kind, c.attrs, Pointers(inputs), c.rng);
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      ASSERT_EQ(r.outputs.size(), base.outputs.size());
      for (std::size_t o = 0; o < r.outputs.size(); ++o) {
        EXPECT_TRUE(r.outputs[o].BitwiseEqual(base.outputs[o]))
            << "output " << o << " differs with threads=" << threads << " simd=" << SimdName(simd);
      }
    }
  }
}

// Golden hashes: the first 16 hex digits of the flat v1 hash (ValuesHash) of each repops
// output (comma-separated, in output order) for inputs drawn from Philox with
// the fixed seed kGoldenSeed. Computed once with g++ 12 on x86-64 (AVX-512
// machine) and checked to be identical under clang++ 14, every thread count
// and every SIMD path. A change here means the repops result of an operator
// changed: that is a protocol change (new results are not the old ones).
constexpr std::uint64_t kGoldenSeed = 0x7665726974726169ULL;  // "veritrai"

const std::map<std::string, std::string>& Goldens() {
  static const std::map<std::string, std::string> goldens = {
      {"matmul", "165e3be1fe2cd058"},
      {"matmul_tt_batched", "903975df4d001882"},
      {"matmul_ta_shared", "e5f2091a583b5a8d"},
      {"matmul_tb_shared", "0a60a4cbcfcba7ac"},
      {"linear", "4487c136fdb8520b"},
      {"linear_nobias", "de28f6ce9bdcb84c"},
      {"linear_big", "2f1b4f7368a1bdb4"},
      {"conv2d", "01c506a3333efdc4"},
      {"conv2d_stride_nobias", "02cb63ff6a08d43e"},
      {"conv2d_big", "963fd4869e7f175a"},
      {"conv2d_5x5_same", "f06f0f4957671c9b"},
      {"conv2d_1x1", "1c13ad96c8a07783"},
      {"conv2d_narrow", "25f51af8b9af53c6"},
      {"conv2d_column", "0838047b0b46c579"},
      {"conv2d_taller", "faff0f684c019f3b"},
      {"conv2d_shorter", "50199094ab460c74"},
      {"maxpool2d", "b9985114e99a9e01"},
      {"avgpool2d", "d996fe9a4fd8b12c"},
      {"maxpool2d_2x2", "ba244846a3dc60f3"},
      {"avgpool2d_2x2", "eda36bb8f1b29cfb"},
      {"avgpool2d_global", "1ec066090668de11"},
      {"batchnorm2d_train",
       "642221f87f0c3e86,e0b74bad9b9c914a,2ed705736400ede1,1f8b52e2945bd1f7,f13fc2a0dbc3f984"},
      {"batchnorm2d_eval", "aa8638e94cd43548"},
      {"layernorm", "4e1f45d576e51794,c874ae1541a25c88,8abaa455d544daf8"},
      {"embedding", "be2f6955deb92b71"},
      {"relu", "072a85c538d0f093"},
      {"gelu", "07925d3031a5bc32"},
      {"softmax", "aacde05036f85f6c"},
      {"attention", "cea35673eb710329,39d0e2d3e709cd02"},
      {"attention_big", "eaa8df2eea94bb7c,5423ed3512191424"},
      {"dropout", "46ac7018039cff62,5f3c736e5e6c13cf"},
      {"add", "4ceb273a67be5f23"},
      {"reshape", "cca069edcd785eb9"},
      {"transpose", "4a30b9bdc41b373a"},
      {"sum_all", "8e7f3a294609d652"},
      {"sum_axis1", "e9cd060e136a00a3"},
      {"sum_axis2", "72395434b8c5284c"},
      {"mean_all", "6f35585b22c8be9a"},
      {"mean_axis0", "8a7827f8fdccc3e7"},
      {"cross_entropy", "2ae61e20944de19a"},
      {"sgd", "31f6a4f8a2df8996,f3dcb076247b284c"},
      {"sgd_nesterov", "1514c0bf49df1d86,5a7f57d25d5aaa60"},
      {"adamw", "92648eb976543a6b,1bfb2c31b5ebf2f2,8ce078448714ed20"},
      {"clip_active", "7e4f5e8c70e11326,84399b5fb2aede9b,b3d6080369f4280e,f64235a414739567"},
      {"clip_inactive", "5cbfdbd4c20a7e0f,0ecf3463e5fc859d,ee590e41861a512b,7fbb02c31101ea18"},
      {"lr_constant_warmup", "6c2268f5f8b5991d"},
      {"lr_cosine", "79ac5b02ba544721"},
      {"lr_cosine_end", "555474b64a1ac22a"},
      {"lr_linear", "5565ef522c2bb1a4"},
  };
  return goldens;
}

std::string ShortHashes(const std::vector<Tensor>& outputs) {
  std::string s;
  for (const Tensor& t : outputs) {
    if (!s.empty()) s += ",";
    s += testing::ValuesHash(t).Hex().substr(0, 16);
  }
  return s;
}

TEST_P(OpRepops, GoldenHashes) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, kGoldenSeed, Salt(c.name));
  const RunResult r = RunNode(Config(Mode::kRepops, 3), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::string got = ShortHashes(r.outputs);
  const auto it = Goldens().find(c.name);
  ASSERT_TRUE(it != Goldens().end()) << "no golden for this case; computed:\n      {\"" << c.name << "\", \"" << got
                                     << "\"},";
  EXPECT_EQ(it->second, got) << "computed:\n      {\"" << c.name << "\", \"" << got << "\"},";
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpRepops, ::testing::ValuesIn(CaseNames()),
                         [](const auto& p) { return p.param; });

// ---- rounded mode: logs ---------------------------------------------------------------------

class OpRounded : public ::testing::TestWithParam<std::string> {};

TEST_P(OpRounded, ReplayAcrossThreads) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  const RunResult rec = RunNode(Config(Mode::kRounded, 1), c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(rec.status.ok()) << rec.status.ToString();
  for (int threads : {2, 3, 8}) {
    const RunResult rep = RunNode(Config(Mode::kRounded, threads), c.kind, c.attrs, Pointers(inputs), c.rng, &rec.log);
    ASSERT_TRUE(rep.status.ok()) << rep.status.ToString();
    for (std::size_t o = 0; o < rec.outputs.size(); ++o) {
      EXPECT_TRUE(rep.outputs[o].BitwiseEqual(rec.outputs[o])) << "output " << o << " threads=" << threads;
    }
  }
  // A logged direction is obeyed: flipping one entry (near its boundary, so
  // still accepted) moves exactly that value to the other neighbour.
  if (!rec.log.entries.empty()) {
    RoundingLog flipped = rec.log;
    flipped.entries[0].up = !flipped.entries[0].up;
    const RunResult rep = RunNode(Config(Mode::kRounded, 2), c.kind, c.attrs, Pointers(inputs), c.rng, &flipped);
    ASSERT_TRUE(rep.status.ok()) << rep.status.ToString();
    std::uint64_t pos = 0, changed = 0, changed_at = 0;
    for (std::size_t o = 0; o < rec.outputs.size(); ++o) {
      for (std::int64_t i = 0; i < rec.outputs[o].numel(); ++i, ++pos) {
        if (std::bit_cast<std::uint32_t>(rec.outputs[o][i]) != std::bit_cast<std::uint32_t>(rep.outputs[o][i])) {
          ++changed;
          changed_at = pos;
        }
      }
    }
    EXPECT_EQ(changed, 1u);
    EXPECT_EQ(changed_at, rec.log.entries[0].position);
  }
}

// Operators that round their outputs in pieces (op_util.h RoundInPieces,
// RoundGemmByRows) give the values and the log of one piece: with pieces of
// a few values (and GEMM pieces of one row), forward and backward, on the
// vendor GEMM and on the canonical reference.
TEST_P(OpRounded, PiecewiseRoundingIsOneRounding) {
  const OpCase& c = FindCase(GetParam());
  const std::uint64_t seed = vt::test::TestSeed();
  const std::vector<Tensor> inputs = MakeInputs(c, seed, Salt(c.name));
  for (const bool f64_reference : {false, true}) {
    for (const int threads : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "f64_reference=" << f64_reference << " threads=" << threads);
      ExecConfig config = Config(Mode::kRounded, threads);
      config.f64_reference = f64_reference;
      const auto run = [&](std::optional<opsdetail::RoundPieces> pieces) {
        opsdetail::SetRoundPiecesForTesting(pieces);
        std::vector<RunResult> out;
        out.push_back(RunNode(config, c.kind, c.attrs, Pointers(inputs), c.rng));
        if (c.grad && out[0].status.ok()) {
          const Tensor dy = MakeDy(c, seed, out[0].outputs);
          out.push_back(RunNode(config, c.grad->backward, c.grad->attrs,
                                BackwardInputs(*c.grad, dy, inputs, out[0].outputs), c.rng));
        }
        opsdetail::SetRoundPiecesForTesting(std::nullopt);
        return out;
      };
      const std::vector<RunResult> whole = run(std::nullopt);
      const std::vector<RunResult> pieces = run(opsdetail::RoundPieces{5, 3, 1});
      ASSERT_EQ(pieces.size(), whole.size());
      for (std::size_t r = 0; r < whole.size(); ++r) {
        ASSERT_TRUE(whole[r].status.ok()) << whole[r].status.ToString();
        ASSERT_TRUE(pieces[r].status.ok()) << pieces[r].status.ToString();
        EXPECT_EQ(pieces[r].log, whole[r].log) << (r == 0 ? "forward" : "backward");
        for (std::size_t o = 0; o < whole[r].outputs.size(); ++o) {
          EXPECT_TRUE(pieces[r].outputs[o].BitwiseEqual(whole[r].outputs[o]))
              << (r == 0 ? "forward" : "backward") << " output " << o;
        }
      }
    }
  }
}

TEST_P(OpRounded, ForgedLogRejected) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  // τ = 2^-16 ulp: the replay window (4τ) then covers a 2^-13 fraction of
  // values, so even single-output operators have a position far from it.
  // The window check itself does not depend on τ.
  ExecConfig cfg = Config(Mode::kRounded, 2);
  cfg.rounding.tau_q16 = 1;
  const RunResult rec = RunNode(cfg, c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(rec.status.ok()) << rec.status.ToString();
  // Concatenated fp64 reference values: pick a position far from its
  // rounding boundary (outside the replay window) that is not logged.
  std::vector<double> exact;
  for (const T64& t : c.reference(AllToT64(inputs))) exact.insert(exact.end(), t.v.begin(), t.v.end());
  ASSERT_FALSE(exact.empty());
  const std::uint64_t start = vt::test::TestSeed() % exact.size();
  std::optional<LogEntry> forged;
  for (std::uint64_t k = 0; k < exact.size() && !forged; ++k) {
    const std::uint64_t pos = (start + k) % exact.size();
    const RoundingRegion region = ClassifyRounding(exact[pos], cfg.rounding);
    const bool logged = std::any_of(rec.log.entries.begin(), rec.log.entries.end(),
                                    [&](const LogEntry& e) { return e.position == pos; });
    if (region.has_boundary && !region.within_replay_window && !logged) {
      forged = LogEntry{pos, !region.nearest_is_up};
    }
  }
  if (!forged) GTEST_SKIP() << "all " << exact.size() << " outputs lie within the replay window for this seed";
  RoundingLog bad = rec.log;
  bad.entries.push_back(*forged);
  std::sort(bad.entries.begin(), bad.entries.end(),
            [](const LogEntry& a, const LogEntry& b) { return a.position < b.position; });
  const RunResult rep = RunNode(cfg, c.kind, c.attrs, Pointers(inputs), c.rng, &bad);
  ASSERT_TRUE(rep.status.is_invalid()) << rep.status.ToString();
  EXPECT_EQ(rep.status.reason(), "log-entry-outside-region");

  // An entry past the node's last output is rejected at Finish().
  RoundingLog past = rec.log;
  past.entries.push_back(LogEntry{exact.size(), true});
  const RunResult rep2 = RunNode(cfg, c.kind, c.attrs, Pointers(inputs), c.rng, &past);
  ASSERT_TRUE(rep2.status.is_invalid()) << rep2.status.ToString();
  EXPECT_EQ(rep2.status.reason(), "log-entry-out-of-range");
}

// An operator's reference functions (Outputs::SetReference: what a trainer
// rounds at the honest limit instead of its vendor value) are the canonical
// reference run at every position: a trainer on its vendor GEMM that takes
// every value from them (the test switch) records the same outputs and the
// same log, bit for bit, as a trainer recording on the reference itself.
// Asked for a scattered subset of positions (as the capped values are:
// one in 4, one in 64), the functions give the reference run's values there
// too.
void ExpectReferenceFunctionsAreTheReferenceRun(OpKind kind, const OpAttrs& attrs,
                                                const std::vector<const Tensor*>& inputs,
                                                const RngAddress& op_rng) {
  ExecConfig vendor = Config(Mode::kRounded, 2);
  ExecConfig reference = vendor;
  reference.f64_reference = true;
  const RunResult want = RunNode(reference, kind, attrs, inputs, op_rng);
  ASSERT_TRUE(want.status.ok()) << want.status.ToString();
  // The operators with reference functions.
  const bool has_fns = kind == OpKind::kMatMul || kind == OpKind::kMatMulBackward ||
                       kind == OpKind::kLinear || kind == OpKind::kLinearBackward ||
                       kind == OpKind::kConv2d || kind == OpKind::kConv2dBackward ||
                       kind == OpKind::kAttention || kind == OpKind::kAttentionBackward;
  using Ask = bool (*)(std::size_t);
  const Ask every = [](std::size_t) { return true; };
  const Ask scattered = [](std::size_t i) { return (i * 0x9E3779B97F4A7C15ull) >> 62 == 1; };
  const Ask sparse = [](std::size_t i) { return (i * 0x9E3779B97F4A7C15ull) >> 58 == 7; };
  for (const Ask ask : {every, scattered, sparse}) {
    NodeRounding from_fns = NodeRounding::Record(vendor.rounding);
    std::vector<Tensor> got;
    NodeRounding::SetReferenceAskForTesting(ask);
    const Status st = RunOp(OpContext(vendor, &from_fns, op_rng), kind, attrs, inputs, got);
    NodeRounding::SetReferenceAskForTesting(nullptr);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (ask == every) {
      ASSERT_EQ(from_fns.reference_values() > 0, has_fns) << OpKindName(kind);
    }
    if (!has_fns) return;
    ASSERT_EQ(got.size(), want.outputs.size());
    if (ask == every) {
      for (std::size_t o = 0; o < want.outputs.size(); ++o) {
        EXPECT_TRUE(got[o].BitwiseEqual(want.outputs[o])) << OpKindName(kind) << " output " << o;
      }
      EXPECT_EQ(from_fns.log(), want.log) << OpKindName(kind);
      continue;
    }
    for (std::size_t o = 0; o < want.outputs.size(); ++o) {
      const std::span<const float> g = got[o].values(), w = want.outputs[o].values();
      ASSERT_EQ(g.size(), w.size());
      for (std::size_t i = 0; i < g.size(); ++i) {
        if (!ask(i)) continue;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(g[i]), std::bit_cast<std::uint32_t>(w[i]))
            << OpKindName(kind) << " output " << o << " element " << i;
      }
    }
  }
}

TEST_P(OpRounded, ReferenceFunctionsAreTheReferenceRun) {
  const OpCase& c = FindCase(GetParam());
  const std::uint64_t seed = vt::test::TestSeed();
  const std::vector<Tensor> inputs = MakeInputs(c, seed, Salt(c.name));
  ExpectReferenceFunctionsAreTheReferenceRun(c.kind, c.attrs, Pointers(inputs), c.rng);
  if (!c.grad) return;
  // The backward node, on the forward's reference outputs.
  ExecConfig reference = Config(Mode::kRounded, 2);
  reference.f64_reference = true;
  const RunResult fwd = RunNode(reference, c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(fwd.status.ok()) << fwd.status.ToString();
  const Tensor dy = MakeDy(c, seed, fwd.outputs);
  ExpectReferenceFunctionsAreTheReferenceRun(c.grad->backward, c.grad->attrs,
                                             BackwardInputs(*c.grad, dy, inputs, fwd.outputs), c.rng);
}

// Rounded mode's Bind leaves its fp64 buffers uninitialised, so every
// operator must write every value itself: forward and backward, on the
// vendor GEMM and on the canonical reference, on one thread and three.
// (The test switch fills the buffers with a NaN no operation makes, and
// Commit fails where one is left.)
TEST_P(OpRounded, EveryOutputValueWritten) {
  const OpCase& c = FindCase(GetParam());
  const std::uint64_t seed = vt::test::TestSeed();
  const std::vector<Tensor> inputs = MakeInputs(c, seed, Salt(c.name));
  opsdetail::SetUnwrittenCheckForTesting(true);
  for (const bool f64_reference : {false, true}) {
    for (const int threads : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << "f64_reference=" << f64_reference << " threads=" << threads);
      ExecConfig config = Config(Mode::kRounded, threads);
      config.f64_reference = f64_reference;
      const RunResult fwd = RunNode(config, c.kind, c.attrs, Pointers(inputs), c.rng);
      EXPECT_TRUE(fwd.status.ok()) << OpKindName(c.kind) << ": " << fwd.status.ToString();
      if (!c.grad || !fwd.status.ok()) continue;
      const Tensor dy = MakeDy(c, seed, fwd.outputs);
      const RunResult bwd = RunNode(config, c.grad->backward, c.grad->attrs,
                                    BackwardInputs(*c.grad, dy, inputs, fwd.outputs), c.rng);
      EXPECT_TRUE(bwd.status.ok()) << OpKindName(c.grad->backward) << ": " << bwd.status.ToString();
    }
  }
  opsdetail::SetUnwrittenCheckForTesting(false);
}

// Rounded-mode golden hashes: forward and (where the case has one) backward
// on the canonical reference (f64_reference: the bits every replay, and the
// referee, compute) at b = 24, each as its outputs' short hashes then the short hash
// of its log (HashRoundingLog), ";" between forward and backward. Inputs
// from kGoldenSeed. Computed with g++ 12 on x86-64 at commit ef8c03d, before
// rounded mode's operands were widened inside the GEMMs and its outputs
// rounded in pieces: those changes kept every bit. A change here means the
// values or the logs a replay computes changed: a protocol change.
const std::map<std::string, std::string>& RoundedGoldens() {
  static const std::map<std::string, std::string> goldens = {
      {"matmul", "6cadcff21c00921c,be71eafa647e6d8a;5e111e513c675473,d78100a3d3486c66,459663128901d8cc"},
      {"matmul_tt_batched",
       "8ac034010b174adc,f63bbf703df78cd1;2be23ed8abd59ae7,d8edd6d0e964912c,b8e551441da67637"},
      {"matmul_ta_shared",
       "9012dd8b4dca74f5,136bc50ead554310;d5fb28b7e749841b,bd068bd86386817f,14520f5376e924f4"},
      {"matmul_tb_shared",
       "9956dc09b7ad343b,b85f461fdd25e4a4;a4f178587bec41e2,40713ff527fe00d1,dacf885619ce6172"},
      {"linear",
       "e37552d548a237e7,f65427c6408b630d;f5134fb4bd4f25ae,e5e84e7ddd65f4b0,0693a6edb8862d32,"
       "7b1c8f8fcffc3347"},
      {"linear_nobias",
       "f19a4bf4b0b2daf3,27d813bc0de3f62e;8d19dfaa939f2955,85d47024589474b6,36a7c0ee638c236b,"
       "c737efb0a272c312"},
      {"linear_big", "d52593bb6de0f685,af4d65dfc079c25a"},
      {"conv2d",
       "eed2036808bb6e88,f9ea2cb0d50393bc;15a49f9c82da2538,9fb45e8afe3e0a83,38fab5c64626e737,"
       "afa74f0e905849bb"},
      {"conv2d_stride_nobias",
       "88b2a6fa19164f4e,1c9731d85b7590b8;7bba2712ef6e0df7,15ce5faa3f950a5d,cd76359ebda16e01,"
       "9acbf9999fcc3047"},
      {"conv2d_big", "ea958ac3b69e6bef,c96319675e0d2164"},
      {"conv2d_5x5_same",
       "37bad30841638d98,4c625b4ecbc3f402;f77d5a07d080a2ac,3320631ea3c05303,88cc0ca4c46df05b,"
       "19cf68c58d125713"},
      {"conv2d_1x1",
       "ba956de7c643f663,4ca91d11acb04fa3;fc38c9b268e07492,13f59ede472c81a2,dcd60e6f1e5bbb40,"
       "68553b970fc527a6"},
      {"conv2d_narrow",
       "3162115115b50785,faf89fbe8850a656;dc50489a764ec14b,880bfa3f72b192e8,17b968a212986e38,"
       "3f0b8aa2017066dc"},
      {"conv2d_column",
       "c270429ccade9fde,ec2a26a3d6c3abe4;9d75c2eaee549d6a,42fd94341ed1931d,ea4dafe785abf759,"
       "ba81b3d15f51149a"},
      {"conv2d_taller",
       "b33a965dc0daf352,cf5b29ee2e792dd8;f9514b5118aa26ca,4491a64585d7eed6,9f967b7ddd5bf0a8,"
       "a8b500d0a61e78d4"},
      {"conv2d_shorter",
       "b97dac324cdd9790,e8b040bbbf558a85;f7cabc00d0b4fb2c,b050c525753530d9,961dc8325d2877e4,"
       "41c8cc31743fe565"},
      {"maxpool2d", "4f5f5fec3b7871d5,aa381f2820813172;125ee052d1effc6f,aa381f2820813172"},
      {"avgpool2d", "119717b063240258,aa381f2820813172;c89beae1b6309750,aa381f2820813172"},
      {"maxpool2d_2x2", "4b4ba829a1c4ebfe,aa381f2820813172;2a1cbb5172287629,aa381f2820813172"},
      {"avgpool2d_2x2", "6ac786b025feeff0,aa381f2820813172;4356ae2b15fabf4d,aa381f2820813172"},
      {"avgpool2d_global", "31abed886502d7e4,aa381f2820813172;8a34d7afb9aa0d0a,aa381f2820813172"},
      {"batchnorm2d_train",
       "560e42b2119c73a5,6bb6e37b0e36161e,abf3a79e65591543,7da4f0d46ceb916b,ade929dc0a12fcdb,"
       "aa381f2820813172;62fedd5d2cd32be6,d58241e8577edd6f,5bb0e0b97d6ff2c4,aa381f2820813172"},
      {"batchnorm2d_eval", "28385eeaffa978e5,aa381f2820813172"},
      {"layernorm",
       "42f253daa760053d,cd2626ab364da3f3,3d79e329cb7df4ef,aa381f2820813172;f356662e6b06245c,"
       "0a7fe310c5838272,895f2253f819c3c3,aa381f2820813172"},
      {"embedding", "fad06ee85409c105,aa381f2820813172;9603b0b414d964a1,aa381f2820813172"},
      {"relu", "36f8da7a0348fe82,aa381f2820813172;3f01d6714be50a07,aa381f2820813172"},
      {"gelu", "5b8a5d3ed2a865e4,aa381f2820813172;c553e3f65d54dc15,aa381f2820813172"},
      {"softmax", "d156e7e34e97179f,aa381f2820813172;d0059ae0387dea1d,aa381f2820813172"},
      {"attention", "0c34ff3def1175b6,910e34d6f3ab4908,089b4c565a19065c;22519a6537ac21c0,be6504a34d5383e6"},
      {"attention_big", "2cde10bc89d250ba,dea04851f856532c,69223d262489c1bb"},
      {"dropout", "dda253bd330b6fff,5f3c736e5e6c13cf,aa381f2820813172;e3b9bb39b5cc8257,aa381f2820813172"},
      {"add", "c06916b53c3a5cc9,aa381f2820813172;cdc76388df000354,cdc76388df000354,aa381f2820813172"},
      {"reshape", "7555d8c2cae9c18c,aa381f2820813172;a919d26f16360cfd,aa381f2820813172"},
      {"transpose", "bc9e8d931ed4f9b2,aa381f2820813172;b65e25d84b71fa0d,aa381f2820813172"},
      {"sum_all", "3c86b1a92268b081,aa381f2820813172;68f1a8072035c9b4,aa381f2820813172"},
      {"sum_axis1", "9b0f9df3531ec135,aa381f2820813172;c8afa4df71734f16,aa381f2820813172"},
      {"sum_axis2", "23cd906f042131ab,aa381f2820813172;4ff25aacb3abd36b,aa381f2820813172"},
      {"mean_all", "4416e73f74deb172,aa381f2820813172;54bdbeb41191a996,aa381f2820813172"},
      {"mean_axis0", "3b79b634368a4ba0,aa381f2820813172;06b901533b75f7b4,aa381f2820813172"},
      {"cross_entropy", "6043ef831386944b,aa381f2820813172;69e4662970035833,aa381f2820813172"},
      {"sgd", "c079a2c9961c6c12,a0fbd42cc2ed9d10,aa381f2820813172"},
      {"sgd_nesterov", "3772e184d32a13ff,2db50084a5c09ebb,aa381f2820813172"},
      {"adamw", "1364d786d584ca6c,4a260b53a7a1a024,925cc0813dc4d518,aa381f2820813172"},
      {"clip_active", "13f5aadc2af1ffcc,845633f7579fa1cc,03dde57d2931a637,1295ea302fd90fac,aa381f2820813172"},
      {"clip_inactive",
       "2f94896b10d3c546,307354178e0e9c8e,badbc3268cc03c4b,6babe7efe317e0b8,aa381f2820813172"},
      {"lr_constant_warmup", "3f5ace8040f44b1e,aa381f2820813172"},
      {"lr_cosine", "f715c1bb74fc186b,aa381f2820813172"},
      {"lr_cosine_end", "974a38adba4e0470,aa381f2820813172"},
      {"lr_linear", "e01e1fc23427ed79,aa381f2820813172"},
  };
  return goldens;
}

std::string RoundedRunHashes(const RunResult& r) {
  return ShortHashes(r.outputs) + "," + HashRoundingLog(r.log).Hex().substr(0, 16);
}

TEST_P(OpRounded, GoldenHashes) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, kGoldenSeed, Salt(c.name));
  ExecConfig config = Config(Mode::kRounded, 3);
  config.f64_reference = true;
  config.rounding.bits = 24;       // a coarse grid and a wide region (τ = 1/16 ulp),
  config.rounding.tau_q16 = 4096;  // so that every log holds entries
  const RunResult fwd = RunNode(config, c.kind, c.attrs, Pointers(inputs), c.rng);
  ASSERT_TRUE(fwd.status.ok()) << fwd.status.ToString();
  std::string got = RoundedRunHashes(fwd);
  if (c.grad) {
    const Tensor dy = MakeDy(c, kGoldenSeed, fwd.outputs);
    const RunResult bwd = RunNode(config, c.grad->backward, c.grad->attrs,
                                  BackwardInputs(*c.grad, dy, inputs, fwd.outputs), c.rng);
    ASSERT_TRUE(bwd.status.ok()) << bwd.status.ToString();
    got += ";" + RoundedRunHashes(bwd);
  }
  const auto it = RoundedGoldens().find(c.name);
  ASSERT_TRUE(it != RoundedGoldens().end())
      << "no golden for this case; computed:\n      {\"" << c.name << "\", \"" << got << "\"},";
  EXPECT_EQ(it->second, got) << "computed:\n      {\"" << c.name << "\", \"" << got << "\"},";
}

// β of every Round call since the last clear, as bit patterns, in call order
// (OpRounded.RecordAcrossThreads).
std::vector<std::vector<std::uint64_t>>& SeenSlack() {
  static std::vector<std::vector<std::uint64_t>> seen;
  return seen;
}
void KeepSlack(std::span<const double> slack) {
  std::vector<std::uint64_t>& bits = SeenSlack().emplace_back();
  for (const double b : slack) bits.push_back(std::bit_cast<std::uint64_t>(b));
}

// Recording splits work by thread count (images side by side, chunks of
// channels); the values, β and the log must not move: forward and backward
// recorded on 2 and 3 threads equal 1 thread's, on the trainer's GEMM and on
// the reference, with a coarse grid so that logs hold entries. β is compared
// as handed to the rounding: in cases this small it rarely widens a region
// past τ·u, so the log alone would let a wrong β pass.
TEST_P(OpRounded, RecordAcrossThreads) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  struct Observing {
    Observing() { NodeRounding::SetSlackObserverForTesting(KeepSlack); }
    ~Observing() { NodeRounding::SetSlackObserverForTesting(nullptr); }
  } observing;
  for (const bool f64_reference : {false, true}) {
    struct Recorded {
      std::vector<RunResult> runs;
      std::vector<std::vector<std::uint64_t>> slack;
    };
    const auto record = [&](int threads) {
      ExecConfig config = Config(Mode::kRounded, threads);
      config.f64_reference = f64_reference;
      config.rounding.bits = 24;
      config.rounding.tau_q16 = 4096;
      SeenSlack().clear();
      Recorded r{{RunNode(config, c.kind, c.attrs, Pointers(inputs), c.rng)}, {}};
      if (c.grad && r.runs[0].status.ok()) {
        const Tensor dy = MakeDy(c, vt::test::TestSeed(), r.runs[0].outputs);
        r.runs.push_back(RunNode(config, c.grad->backward, c.grad->attrs,
                                 BackwardInputs(*c.grad, dy, inputs, r.runs[0].outputs), c.rng));
      }
      r.slack = std::move(SeenSlack());
      return r;
    };
    const Recorded one = record(1);
    for (const RunResult& r : one.runs) ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    // The GEMM operators' β is there to compare (a node without β hands an empty span).
    const bool gemm = c.name.starts_with("conv2d") || c.name.starts_with("linear") || c.name.starts_with("matmul");
    const auto nonzero = [](const std::vector<std::uint64_t>& b) {
      return std::any_of(b.begin(), b.end(), [](std::uint64_t x) { return x != 0; });
    };
    if (gemm) {
      EXPECT_TRUE(std::any_of(one.slack.begin(), one.slack.end(), nonzero)) << "no β seen";
    }
    for (const int threads : {2, 3}) {
      SCOPED_TRACE(::testing::Message() << "f64_reference=" << f64_reference << " threads=" << threads);
      const Recorded more = record(threads);
      ASSERT_EQ(more.runs.size(), one.runs.size());
      for (std::size_t k = 0; k < one.runs.size(); ++k) {
        ASSERT_TRUE(more.runs[k].status.ok()) << more.runs[k].status.ToString();
        for (std::size_t o = 0; o < one.runs[k].outputs.size(); ++o) {
          EXPECT_TRUE(more.runs[k].outputs[o].BitwiseEqual(one.runs[k].outputs[o])) << "run " << k << " output " << o;
        }
        EXPECT_EQ(more.runs[k].log, one.runs[k].log) << "run " << k;
      }
      EXPECT_TRUE(more.slack == one.slack) << "β differs";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpRounded, ::testing::ValuesIn(CaseNames()),
                         [](const auto& p) { return p.param; });

// ---- hostile shapes through RunOp ------------------------------------------------------------

class OpShapes : public ::testing::TestWithParam<std::string> {};

TEST_P(OpShapes, WrongShapesRejected) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Tensor> bad = inputs;
    Shape s = inputs[i].shape();
    s.push_back(2);
    bad[i] = Tensor(s, std::vector<float>(static_cast<std::size_t>(NumElements(s)), 0.5f));
    const RunResult r = RunNode(Config(Mode::kRepops), c.kind, c.attrs, Pointers(bad), c.rng);
    const bool bound = std::find(c.shape_bound.begin(), c.shape_bound.end(), static_cast<int>(i)) != c.shape_bound.end();
    if (bound) {
      EXPECT_TRUE(r.status.is_invalid()) << "input " << i << ": " << r.status.ToString();
    } else {
      EXPECT_TRUE(r.status.ok() || r.status.is_invalid()) << "input " << i << ": " << r.status.ToString();
    }
    // Rank 9: above every operator's limit.
    bad[i] = Tensor(Shape(9, 1), {1.0f});
    const RunResult deep = RunNode(Config(Mode::kRepops), c.kind, c.attrs, Pointers(bad), c.rng);
    EXPECT_TRUE(deep.status.is_invalid()) << "input " << i << ": " << deep.status.ToString();
  }
}

TEST_P(OpShapes, EmptyAndHugeEmptyInputsRejected) {
  const OpCase& c = FindCase(GetParam());
  const std::vector<Tensor> inputs = MakeInputs(c, vt::test::TestSeed(), Salt(c.name));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<Tensor> bad = inputs;
    Shape s = inputs[i].shape();
    s[0] = 0;
    bad[i] = Tensor(s);
    const RunResult r = RunNode(Config(Mode::kRepops), c.kind, c.attrs, Pointers(bad), c.rng);
    ASSERT_TRUE(r.status.is_invalid()) << "input " << i << ": " << r.status.ToString();
    EXPECT_EQ(r.status.reason(), "empty-tensor");
    // Zero elements but dimensions whose product overflows int64 if the zero is skipped.
    Result<Tensor> huge = Tensor::FromValues({std::int64_t{1} << 40, 0, std::int64_t{1} << 40}, {});
    ASSERT_TRUE(huge.ok());
    bad[i] = *huge;
    for (Mode mode : {Mode::kNative, Mode::kRepops, Mode::kRounded}) {
      const RunResult h = RunNode(Config(mode), c.kind, c.attrs, Pointers(bad), c.rng);
      ASSERT_TRUE(h.status.is_invalid()) << "input " << i << ": " << h.status.ToString();
    }
  }
}

// (Operators without input tensors — the schedules — have nothing to mis-shape.)
INSTANTIATE_TEST_SUITE_P(AllOps, OpShapes, ::testing::ValuesIn(CaseNames(false, true)),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace vt::kernels::testing
