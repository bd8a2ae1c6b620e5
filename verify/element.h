#pragma once
// The element level of the dispute (docs/referee.md, "Element-level
// descent"), first brick: the repops dot product — the GEMM element of
// linear and matmul. Where the level-5 bisection over one output value's
// partial results ends, the referee checks a single step with these
// functions; both parties compute the partial results on demand, for that
// one value only. The step is kernels' own (hd::RepopsStep), not a copy.
//
// Certified mode (docs/kernels.md) has the same element with other partial
// results: a value is CR(Σ a·b + bias) of the exact sum, so its partial
// results are the exact prefix sums, order-free by definition.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "kernels/certified.h"
#include "kernels/mode.h"

namespace vt::verify {

// The K+1 partial sums of a repops GEMM element: p_0 = +0,
// p_{k+1} = hd::RepopsStep(p_k, a_k, b_k) (fp32, product then sum, each
// rounded to nearest, no fma). Precondition: a.size() == b.size().
std::vector<float> RepopsDotPartials(std::span<const float> a, std::span<const float> b);

// The last check of the bisection: `next` is, bit for bit, the repops step
// from `prev` with factors a and b.
bool RepopsDotStepHolds(float prev, float a, float b, float next);

// A linear layer's output value from its dot product: y = p_K + bias (one
// fp32 add, bias last; kernels/ops/linear.cpp), or p_K without a bias.
float RepopsLinearValue(float dot, std::optional<float> bias);

// Certified mode: p_m = Σ_{j<m} a_j·b_j exactly, p_0 = 0, each committed as
// kernels::ExactAccumulator's canonical encoding (81 bytes; equal sums
// encode alike whatever order they were added in).
using ExactPartial = kernels::ExactAccumulator::Encoded;
std::vector<ExactPartial> CertifiedDotPartials(std::span<const float> a, std::span<const float> b);

// `next` is, byte for byte, `prev` plus a·b exactly (false if `prev` is no
// accumulator state: a flags byte ≥ 8).
bool CertifiedDotStepHolds(const ExactPartial& prev, float a, float b, const ExactPartial& next);

// A certified GEMM output from its exact dot product: CR(dot + bias) with
// the bias one more exact term (kernels/ops/linear.cpp, conv.cpp), or
// CR(dot). nullopt if `dot` is no accumulator state.
std::optional<float> CertifiedLinearValue(const ExactPartial& dot, std::optional<float> bias);

// Rounded mode (kernels/rounding.h): a GEMM output is the canonical fp64
// dot product (kernels GemmF64Reference: sequential from +0, each product
// and sum rounded to fp64), plus the bias in fp64, rounded to b bits — to
// nearest, or as the solver's log says where the acceptance rule accepts
// its entry with the GEMM's error bound β (kernels/matmul.h), which needs
// the squared norms of both factor vectors, fp64 sums sequential like the
// dot product (GemmNormsSq). So a partial result carries all three:
// p_m = (Σ_{j<m} a_j·b_j, Σ a_j², Σ b_j²), p_0 = (+0, +0, +0), 24 bytes.
struct RoundedPartial {
  double dot = 0.0, a_sq = 0.0, b_sq = 0.0;
  // Bit for bit (+0 ≠ −0, a NaN equals its own pattern only).
  bool operator==(const RoundedPartial& other) const;
};
// One step: each sum plus its product of the two factors (exact in fp64), rounded once.
RoundedPartial RoundedDotStep(const RoundedPartial& prev, float a, float b);
std::vector<RoundedPartial> RoundedDotPartials(std::span<const float> a, std::span<const float> b);
bool RoundedDotStepHolds(const RoundedPartial& prev, float a, float b, const RoundedPartial& next);
// Rounded mode's one rule for a value from its canonical reference `ref`:
// RoundToBits(ref) where the log has no entry, else the neighbour the entry
// (`logged`: its direction) names where kernels::ApplyLogEntry accepts it
// with the spec's τ and β = `slack` ("log-entry-outside-region" where not).
// The spec's reasons for bad bits. Callers pass τ = 0 for an operator exact
// in fp64.
Result<float> RoundAsLogged(double ref, const kernels::RoundingSpec& spec, double slack,
                            std::optional<bool> logged);
// A rounded GEMM output from its K-term dot product: ref = dot + bias (fp64)
// rounded by the node's `spec` to nearest, or, where the log has an entry
// (`logged`: its direction), by kernels::ApplyLogEntry with
// β = GemmSlackValue(GemmSlackFactor(K (+1 with a bias)), √a_sq, √b_sq, |bias|)
// and the node's τ (GEMMs are not exact in fp64: τ applies). Invalid
// "log-entry-outside-region" when the rule rejects the entry (the solver's
// log is wrong), or the spec's reason.
Result<float> RoundedLinearValue(const RoundedPartial& dot, std::optional<float> bias, std::int64_t k,
                                 const kernels::RoundingSpec& spec, std::optional<bool> logged);
// The reference value ref and the bound β RoundedLinearValue judges an entry with.
double RoundedLinearReference(const RoundedPartial& dot, std::optional<float> bias);
double RoundedLinearSlack(const RoundedPartial& dot, std::optional<float> bias, std::int64_t k);

// The kinds of partial result a walk commits (verify/descent.h keeps one
// implementation of each check for all): repops' fp32 (dot and reduction
// rules), certified's exact sums (both rules), a rounded job's dot product
// (RoundedPartial) and its reductions' fp64 sums (double, the fixed-sequence
// fp64 of rounded mode's kernels: verify/reduce_rule.h). Per kind, the
// bytes a leaf commits (its leaf hash's preimage; little-endian) and the
// first leaf of every walk.
template <class Leaf>
struct PartialLeafKind;
template <>
struct PartialLeafKind<float> {
  static Bytes Encode(float p);
  static float Start() { return +0.0f; }
};
template <>
struct PartialLeafKind<double> {
  static Bytes Encode(double p);
  static double Start() { return +0.0; }
};
template <>
struct PartialLeafKind<ExactPartial> {
  static Bytes Encode(const ExactPartial& p) { return Bytes(p.begin(), p.end()); }
  static ExactPartial Start() { return ExactPartial{}; }
};
template <>
struct PartialLeafKind<RoundedPartial> {
  static Bytes Encode(const RoundedPartial& p);
  static RoundedPartial Start() { return RoundedPartial{}; }
};

// What the descent needs of a dot product's partial results, per leaf type:
// one step, the final value.
template <class Leaf>
struct DotPartialRule;
template <>
struct DotPartialRule<float> {
  static bool StepHolds(float prev, float a, float b, float next) {
    return RepopsDotStepHolds(prev, a, b, next);
  }
  static std::optional<float> Value(float dot, std::optional<float> bias) {
    return RepopsLinearValue(dot, bias);
  }
};
template <>
struct DotPartialRule<ExactPartial> {
  static bool StepHolds(const ExactPartial& prev, float a, float b, const ExactPartial& next) {
    return CertifiedDotStepHolds(prev, a, b, next);
  }
  static std::optional<float> Value(const ExactPartial& dot, std::optional<float> bias) {
    return CertifiedLinearValue(dot, bias);
  }
};

// Rounded mode's epilogue needs the node's rounding and its log
// (RoundedLinearValue, JudgeRoundedDotEpilogue in verify/descent.h): no Value.
template <>
struct DotPartialRule<RoundedPartial> {
  static bool StepHolds(const RoundedPartial& prev, float a, float b, const RoundedPartial& next) {
    return RoundedDotStepHolds(prev, a, b, next);
  }
};

// Bit-for-bit equality of two fp32 values (+0 ≠ −0; a NaN equals only its
// own bit pattern), the equality every commitment uses.
bool SameBits(float a, float b);
bool SameBits(double a, double b);

}  // namespace vt::verify
