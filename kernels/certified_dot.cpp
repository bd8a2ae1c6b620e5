#include "kernels/certified_dot.h"

#include <cmath>
#include <limits>

#include "kernels/simd_clones.h"

namespace vt::kernels {

// Why Finish's bound holds (u = 2^-53; the build has -ffp-contract=off, so
// every operation below rounds once, round to nearest):
//
// 1. Every product of two finite fp32 values is exact in fp64 (24 + 24
//    significant bits, exponents in [-298, 254]), and so is c0. Every value
//    below is a multiple of 2^-298 (sums and roundings of such multiples
//    stay multiples: a rounding only coarsens the grid), so no fp64
//    subnormal or underflow occurs, and |terms| ≤ 2^256·2^40: no overflow.
// 2. TwoSum(σ, x): t = fl(σ + x), z = t − σ, e = (σ − (t − z)) + (x − z) is
//    error-free (Knuth): σ + x = t + e exactly, and |e| ≤ u·|t|.
// 3. After all steps (the lanes, then their cascade in Finish): the exact
//    sum S = σ + Q where σ is the final running sum and Q = Σ e_i over every
//    step i (N steps). The computed Q̂ sums those e_i (each exact) by some
//    tree of fp64 additions: |Q̂ − Q| ≤ γ_{N−1}·Σ|e_i| ≤ γ_{N−1}·u·Σ|t_i|
//    (γ_n = n·u/(1 − n·u)). The computed Ŝ of the non-negative |t_i|
//    satisfies Σ|t_i| ≤ Ŝ/(1 − γ_N).
// 4. value = fl(σ + Q̂): |value − (σ + Q̂)| ≤ u·|value|. Together:
//    |value − S| ≤ u·|value| + γ_{N−1}·u·Ŝ/(1 − γ_N)
//                ≤ u·|value| + N·u²·Ŝ·(1 + 2^-10)   for N ≤ 2^40
//    (γ_{N−1}/(1 − γ_N) ≤ N·u·(1 + 3N·u) and 3N·u ≤ 3·2^-13).
// 5. The bound is evaluated as fl(fl(u·|value| + fl(N·u · u·Ŝ))·(1 + 2^-9)):
//    the scalings by u are exact (no underflow, 1.), the three roundings lose
//    at most (1 − u)³, and (1 − u)³·(1 + 2^-9) ≥ 1 + 2^-10.
// A NaN or infinite term makes Ŝ (every |t| is summed) NaN or +inf, and the
// bound with it: CertifyApprox decides nothing then.

namespace {

constexpr int kLanes = CompensatedDot::kLanes;

[[gnu::always_inline]] inline void TwoSumStep(double& sigma, double& q, double& s, double x) {
  const double t = sigma + x;
  const double z = t - sigma;
  q += (sigma - (t - z)) + (x - z);
  s += t < 0.0 ? -t : t;
  sigma = t;
}

// The lanes' steps over k contiguous terms: term p goes to lane p mod kLanes.
VT_SIMD_CLONES void AddContiguous(const float* __restrict a, const float* __restrict b, std::int64_t k,
                                  double* __restrict sigma, double* __restrict q, double* __restrict s) {
  double sg[kLanes], qq[kLanes], ss[kLanes];
  for (int l = 0; l < kLanes; ++l) sg[l] = sigma[l], qq[l] = q[l], ss[l] = s[l];
  std::int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      TwoSumStep(sg[l], qq[l], ss[l], static_cast<double>(a[p + l]) * static_cast<double>(b[p + l]));
    }
  }
  for (int l = 0; p < k; ++p, ++l) {
    TwoSumStep(sg[l], qq[l], ss[l], static_cast<double>(a[p]) * static_cast<double>(b[p]));
  }
  for (int l = 0; l < kLanes; ++l) sigma[l] = sg[l], q[l] = qq[l], s[l] = ss[l];
}

}  // namespace

CompensatedDot::CompensatedDot(float c0) { sigma_[0] = static_cast<double>(c0); }

void CompensatedDot::Add(const float* a, std::int64_t a_stride, const float* b, std::int64_t b_stride,
                         std::int64_t k) {
  if (k <= 0) return;
  terms_ += k;
  if (a_stride == 1 && b_stride == 1) {
    AddContiguous(a, b, k, sigma_, q_, s_);
    return;
  }
  // Strided terms, copied a chunk at a time into contiguous ones (any
  // assignment of terms to lanes gives a valid bound).
  constexpr std::int64_t kChunk = 256;
  float ac[kChunk], bc[kChunk];
  for (std::int64_t p0 = 0; p0 < k; p0 += kChunk) {
    const std::int64_t len = k - p0 < kChunk ? k - p0 : kChunk;
    for (std::int64_t p = 0; p < len; ++p) {
      ac[p] = a[(p0 + p) * a_stride];
      bc[p] = b[(p0 + p) * b_stride];
    }
    AddContiguous(ac, bc, len, sigma_, q_, s_);
  }
}

CompensatedDot::Result CompensatedDot::Finish() const {
  double sigma = sigma_[0], q = q_[0], s = s_[0];
  for (int l = 1; l < kLanes; ++l) {
    TwoSumStep(sigma, q, s, sigma_[l]);
    q += q_[l];
    s += s_[l];
  }
  Result r;
  r.value = sigma + q;
  const std::int64_t steps = terms_ + kLanes;  // every TwoSum: the terms' and the cascade's
  if (terms_ > kMaxTerms) {
    r.bound = std::numeric_limits<double>::infinity();
    return r;
  }
  constexpr double u = 0x1p-53;
  const double abs_value = r.value < 0.0 ? -r.value : r.value;
  r.bound = (u * abs_value + (static_cast<double>(steps) * u) * (u * s)) * (1.0 + 0x1p-9);
  return r;
}

}  // namespace vt::kernels
