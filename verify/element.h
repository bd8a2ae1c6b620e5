#pragma once
// The element level of the dispute (docs/referee.md, "Element-level
// descent"), first brick: the repops dot product — the GEMM element of
// linear and matmul. Where the level-5 bisection over one output value's
// partial results ends, the referee checks a single step with these
// functions; both parties compute the partial results on demand, for that
// one value only. The step is kernels' own (hd::RepopsStep), not a copy.
//
// The workers' answers call these (worker/element_answers.h); the
// referee's game phases do not yet: its game still ends at node level.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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

// Bit-for-bit equality of two fp32 values (+0 ≠ −0; a NaN equals only its
// own bit pattern), the equality every commitment uses.
bool SameBits(float a, float b);

}  // namespace vt::verify
