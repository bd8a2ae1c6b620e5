#pragma once
// The certified GEMM's second evaluation (docs/kernels.md, "The compensated
// second look"): for the rare outputs the fast path's bound leaves open, c0 +
// Σ a_p·b_p over fp32 inputs is evaluated again, alone, by a compensated sum
// in fp64 (Ogita, Rump and Oishi's Sum2 on products that fp64 holds exactly),
// with a rigorous bound on its distance from the exact value. The bound is
// about 2^-53 of the result plus N·2^-106 of the terms' sizes, against the
// fast path's N·2^-53: CertifyApprox then decides all but the outputs that
// lie within that of an fp32 rounding boundary (exact ties), which the exact
// accumulator sums. Any order of the terms gives a valid bound, so the lanes
// below need no fixed order (the decided value is the correctly rounded one
// whatever the evaluation).

#include <cstdint>

namespace vt::kernels {

class CompensatedDot {
 public:
  static constexpr int kLanes = 16;  // independent sums: two AVX-512 vectors, to hide the add latency
  // The largest number of terms Finish's bound is proven for.
  static constexpr std::int64_t kMaxTerms = std::int64_t{1} << 40;

  explicit CompensatedDot(float c0);

  // Adds Σ_{p<k} a[p·a_stride]·b[p·b_stride].
  void Add(const float* a, std::int64_t a_stride, const float* b, std::int64_t b_stride, std::int64_t k);

  // value with |value − (c0 + Σ terms)| ≤ bound; bound is +inf or NaN where a
  // term was not finite, or past kMaxTerms.
  struct Result {
    double value = 0;
    double bound = 0;
  };
  Result Finish() const;

 private:
  // Lane l: sigma (the running sum), q (the sum of its TwoSums' exact
  // errors, rounded), s (Σ|sigma| after every step, rounded).
  double sigma_[kLanes] = {}, q_[kLanes] = {}, s_[kLanes] = {};
  std::int64_t terms_ = 0;
};

}  // namespace vt::kernels
