// Native mode's vectorised transcendentals (kernels/ops/native_math.h): on
// every path this CPU runs (scalar, AVX2+FMA, AVX-512), GELU, its derivative
// and exp(x − m) are within 1 fp32 ulp of an independent long-double
// evaluation of the exact functions, over a sweep of the float line (every
// binade from 2^-30 to the overflow of x³, both signs), the tails where the
// fp32 tanh form cancels, the derivative's zero near x = −0.7518, exp's
// underflow into subnormals and overflow to inf, and the specials. The
// operators use them in native mode only; repops keeps its fixed expression.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "kernels/op_context.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/native_math.h"
#include "kernels/ops/softmax.h"
#include "kernels/tensor.h"

namespace vt::kernels::nativemath {
namespace {

using LD = long double;

float FromBits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The spacing of fp32 values at the reference r (2^-149 below 2^-126).
double Ulp32(LD r) {
  const LD a = std::fabs(r);
  if (!(a >= LD(FLT_MIN))) return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(static_cast<double>(a)) - 23);
}

// |ours − ref| in fp32 ulps of ref; 0 when both are the same infinity or
// both NaN; +inf when only one is NaN or infinite.
double UlpError(float ours, LD ref) {
  if (std::isnan(ref) || std::isnan(ours)) return std::isnan(ref) && std::isnan(ours) ? 0.0 : INFINITY;
  const LD rounded_ref = static_cast<float>(ref);  // overflow: the fp32 answer is inf
  if (std::isinf(rounded_ref) || std::isinf(ours)) return rounded_ref == LD(ours) ? 0.0 : INFINITY;
  return static_cast<double>(std::fabs(LD(ours) - ref) / Ulp32(ref));
}

constexpr LD kC = 0.797884560802865355879892119868763737L;  // sqrt(2/π)
constexpr LD kA = 0.044715L;

// z = 2·sqrt(2/π)·(x + 0.044715·x³); σ(z), 1 − σ(z) without cancellation.
struct Sig {
  LD s, sc;
};
Sig RefSigmoid(LD x) {
  const LD z = 2 * kC * (x + kA * x * x * x);
  const LD e = std::exp(-std::fabs(z));
  const LD big = 1 / (1 + e), small = e / (1 + e);
  return z >= 0 ? Sig{big, small} : Sig{small, big};
}
LD RefGelu(LD x) {
  if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<LD>::quiet_NaN();  // (0.5·x)·(1 + t) at ±inf
  return x * RefSigmoid(x).s;
}
LD RefGeluGrad(LD dy, LD x) {
  if (std::isinf(x)) return std::numeric_limits<LD>::quiet_NaN();
  const Sig g = RefSigmoid(x);
  return dy * (g.s + x * g.s * g.sc * (2 * kC * (1 + 3 * kA * x * x)));
}
// The definition's tanh form, where it does not cancel (|x| ≤ 4).
LD TanhGelu(LD x) { return 0.5L * x * (1 + std::tanh(kC * (x + kA * x * x * x))); }
LD TanhGeluGrad(LD x) {
  const LD t = std::tanh(kC * (x + kA * x * x * x));
  return 0.5L * (1 + t) + 0.5L * x * (1 - t * t) * kC * (1 + 3 * kA * x * x);
}

// Inputs: a stride through every binade of both signs, dense runs around
// the interesting points, and the specials.
std::vector<float> SweepInputs(float max_abs) {
  std::vector<float> v;
  const std::uint32_t lo = 0x30800000u;  // 2^-30
  std::uint32_t hi;
  std::memcpy(&hi, &max_abs, 4);
  for (std::uint32_t b = lo; b <= hi; b += 1013) {
    v.push_back(FromBits(b));
    v.push_back(-FromBits(b));
  }
  for (float centre : {-0.7517916f, -3.0f, -9.0f, -10.2f, 1.0f, 0.5f}) {
    std::uint32_t c;
    std::memcpy(&c, &centre, 4);
    for (std::uint32_t d = 0; d < 4000; ++d) v.push_back(FromBits(c - 2000 + d));
  }
  for (float s : {0.0f, -0.0f, FLT_MIN, -FLT_MIN, 1e-40f, -1e-40f, 1e-45f, -1e-45f, FLT_MAX, -FLT_MAX, 1e20f,
                  -1e20f, 7e12f, -7e12f, INFINITY, -INFINITY, NAN}) {
    v.push_back(s);
  }
  return v;
}

std::vector<Simd> Paths() {
  std::vector<Simd> out;
  for (Simd s : {Simd::kScalar, Simd::kAvx2, Simd::kAvx512}) {
    if (PathFor(s) == s) {
      out.push_back(s);
    } else {
      std::cout << "[ note ] path " << SimdName(s) << " not available on this CPU: not tested here\n";
    }
  }
  return out;
}

TEST(NativeMath, GeluIsWithinOneUlpOnEveryPath) {
  const std::vector<float> x = SweepInputs(3e12f);
  for (Simd path : Paths()) {
    std::vector<float> y(x.size());
    Gelu(x.data(), y.data(), static_cast<std::int64_t>(x.size()), path);
    double worst = 0, worst_tanh = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double e = UlpError(y[i], RefGelu(x[i]));
      ASSERT_LE(e, 1.0) << SimdName(path) << " gelu(" << x[i] << ") = " << y[i] << ", want " << double(RefGelu(x[i]));
      worst = std::max(worst, e);
      if (std::fabs(x[i]) <= 4.0f) worst_tanh = std::max(worst_tanh, UlpError(y[i], TanhGelu(x[i])));
    }
    EXPECT_LE(worst_tanh, 1.0) << "against the tanh form";
    std::cout << "[ note ] " << SimdName(path) << ": gelu max " << worst << " ulp (tanh form, |x| <= 4: "
              << worst_tanh << ") over " << x.size() << " inputs\n";
  }
}

TEST(NativeMath, GeluDerivativeIsWithinOneUlpOnEveryPath) {
  const std::vector<float> x = SweepInputs(3e12f);
  std::vector<float> dy(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dy[i] = (i % 3 == 0) ? 1.0f : (i % 3 == 1 ? -0.37f : 2.5e-3f);
  for (Simd path : Paths()) {
    std::vector<float> dx(x.size());
    GeluBackward(dy.data(), x.data(), dx.data(), static_cast<std::int64_t>(x.size()), path);
    double worst = 0, worst_tanh = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const LD ref = RefGeluGrad(dy[i], x[i]);
      const double e = UlpError(dx[i], ref);
      ASSERT_LE(e, 1.0) << SimdName(path) << " gelu'(" << x[i] << ")·" << dy[i] << " = " << dx[i] << ", want "
                        << double(ref);
      worst = std::max(worst, e);
      if (std::fabs(x[i]) <= 4.0f) worst_tanh = std::max(worst_tanh, UlpError(dx[i], dy[i] * TanhGeluGrad(x[i])));
    }
    EXPECT_LE(worst_tanh, 1.0) << "against the tanh form";
    std::cout << "[ note ] " << SimdName(path) << ": gelu' max " << worst << " ulp (tanh form, |x| <= 4: "
              << worst_tanh << ")\n";
  }
}

TEST(NativeMath, ExpShiftedIsWithinOneUlpOnEveryPath) {
  std::vector<float> x;
  for (float v : SweepInputs(120.0f)) x.push_back(v);
  for (float v = -110.0f; v <= 95.0f; v += 0.0137f) x.push_back(v);  // underflow to overflow
  for (Simd path : Paths()) {
    double worst = 0;
    for (float m : {0.0f, 1.5f, -3.25f, 88.0f}) {
      std::vector<float> y(x.size());
      ExpShifted(x.data(), m, y.data(), static_cast<std::int64_t>(x.size()), path);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const LD ref = std::exp(LD(x[i]) - LD(m));
        const double e = UlpError(y[i], ref);
        ASSERT_LE(e, 1.0) << SimdName(path) << " exp(" << x[i] << " - " << m << ") = " << y[i] << ", want "
                          << double(ref);
        worst = std::max(worst, e);
      }
    }
    std::cout << "[ note ] " << SimdName(path) << ": exp max " << worst << " ulp\n";
  }
}

// The measure can fail: the fp32 tanh form (what native mode computed
// before, libm tanhf) cancels in GELU's negative tail, far beyond 1 ulp.
TEST(NativeMath, TheUlpMeasureRejectsTheCancellingTanhForm) {
  double worst = 0;
  for (float x = -9.0f; x < -3.0f; x += 0.01f) {
    const float u = 0.7978845608f * (x + 0.044715f * ((x * x) * x));
    worst = std::max(worst, UlpError((0.5f * x) * (1.0f + std::tanh(u)), RefGelu(x)));
  }
  EXPECT_GT(worst, 1000.0);
}

// Every length (vector body and tail), in place and out of place, gives the
// same values as one long call.
TEST(NativeMath, TailsAndInPlaceMatchTheWholeArray) {
  std::vector<float> x(41);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -6.0f + 0.3f * static_cast<float>(i);
  for (Simd path : Paths()) {
    std::vector<float> whole(x.size()), whole_exp(x.size());
    Gelu(x.data(), whole.data(), static_cast<std::int64_t>(x.size()), path);
    ExpShifted(x.data(), 0.25f, whole_exp.data(), static_cast<std::int64_t>(x.size()), path);
    for (std::size_t n = 0; n <= x.size(); ++n) {
      for (std::size_t at = 0; at + n <= x.size(); at += 7) {
        std::vector<float> part(x.begin() + static_cast<std::ptrdiff_t>(at),
                                x.begin() + static_cast<std::ptrdiff_t>(at + n));
        Gelu(part.data(), part.data(), static_cast<std::int64_t>(n), path);  // in place
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(part[i], whole[at + i]) << n << " " << at << " " << i;
        part.assign(x.begin() + static_cast<std::ptrdiff_t>(at), x.begin() + static_cast<std::ptrdiff_t>(at + n));
        ExpShifted(part.data(), 0.25f, part.data(), static_cast<std::int64_t>(n), path);
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(part[i], whole_exp[at + i]) << n << " " << at << " " << i;
      }
    }
  }
}

// The operators use these in native mode, and only there.
TEST(NativeMath, OperatorsUseThemInNativeModeOnly) {
  Tensor x({3, 37});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = -5.0f + 0.09f * static_cast<float>(i);
  ExecConfig native;
  native.mode = Mode::kNative;
  native.threads = 2;
  ExecConfig repops = native;
  repops.mode = Mode::kRepops;
  Tensor yn, yr, sn;
  ASSERT_TRUE(GeluForward(OpContext(native), x, yn).ok());
  ASSERT_TRUE(GeluForward(OpContext(repops), x, yr).ok());
  std::vector<float> want(static_cast<std::size_t>(x.numel()));
  Gelu(x.data(), want.data(), x.numel());
  int differ = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(yn[i], want[static_cast<std::size_t>(i)]) << i;
    differ += yn[i] != yr[i];
  }
  EXPECT_GT(differ, 0) << "repops must keep its own fp32 expression (detmath tanh)";
  ASSERT_TRUE(SoftmaxForward(OpContext(native), x, sn).ok());
  for (std::int64_t r = 0; r < 3; ++r) {
    LD m = -INFINITY, s = 0;
    for (std::int64_t k = 0; k < 37; ++k) m = std::max<LD>(m, x[r * 37 + k]);
    for (std::int64_t k = 0; k < 37; ++k) s += std::exp(LD(x[r * 37 + k]) - m);
    for (std::int64_t k = 0; k < 37; ++k) {
      EXPECT_LE(UlpError(sn[r * 37 + k], std::exp(LD(x[r * 37 + k]) - m) / s), 4.0) << r << " " << k;
    }
  }
}

}  // namespace
}  // namespace vt::kernels::nativemath
