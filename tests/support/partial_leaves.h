#pragma once
// How the element-level tests handle a dot rule's partial sums, per leaf
// type (docs/referee.md, "Element-level descent"): fp32 sums in a repops job,
// exact sums in a certified one, fp64 sums in a rounded one (three for a
// dot product, one for a reduction; verify::PartialLeafKind). Honest parties get
// their leaves from the rule; test liars bend them with Nudge and MadeUp.

#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "kernels/arith_hd.h"
#include "kernels/certified.h"
#include "kernels/mode.h"
#include "verify/certified_sum.h"
#include "verify/element.h"
#include "verify/reduce_rule.h"

namespace vt::test {

template <class Leaf>
struct PartialLeaves;

template <>
struct PartialLeaves<float> {
  static constexpr kernels::Mode kMode = kernels::Mode::kRepops;
  static bool Same(float a, float b) { return verify::SameBits(a, b); }
  static float Value(float p, std::optional<float> bias) { return verify::RepopsLinearValue(p, bias); }
  // The leaf after one step of the rule.
  static float Step(float p, float a, float b) { return kernels::hd::RepopsStep(p, a, b); }
  // The nearest leaf off `p`, on the side of `by`'s sign.
  static float Nudge(float p, float by) { return std::nextafter(p, by < 0 ? -INFINITY : INFINITY); }
  // A made-up leaf holding `v`.
  static float MadeUp(float v) { return v; }
};

template <>
struct PartialLeaves<verify::ExactPartial> {
  using Leaf = verify::ExactPartial;
  static constexpr kernels::Mode kMode = kernels::Mode::kCertified;
  static bool Same(const Leaf& a, const Leaf& b) { return a == b; }
  static float Value(const Leaf& p, std::optional<float> bias) {
    return verify::CertifiedLinearValue(p, bias).value();
  }
  static Leaf Step(const Leaf& p, float a, float b) {
    kernels::ExactAccumulator acc = Open(p);
    acc.AddProduct(a, b);
    return acc.Encode();
  }
  // `p` plus `by` exactly (a tiny `by` may leave the rounded value alike);
  // a held value (verify::HeldValue) the nearest value off it instead.
  static Leaf Nudge(const Leaf& p, float by) {
    if (const std::optional<float> v = verify::HeldValueOf(p))
      return verify::HeldValue(std::nextafter(*v, by < 0 ? -INFINITY : INFINITY));
    kernels::ExactAccumulator acc = Open(p);
    acc.Add(by);
    return acc.Encode();
  }
  static Leaf MadeUp(float v) {
    kernels::ExactAccumulator acc;
    acc.Add(v);
    return acc.Encode();
  }

 private:
  // Every other leaf a test bends is an accumulator state (the rule's own, or one it made).
  static kernels::ExactAccumulator Open(const Leaf& p) {
    return kernels::ExactAccumulator::FromEncoding(p).value();
  }
};

// Rounded mode's dot rule: fp64 sums of the dot product and both squared
// norms (its value needs the job's rounding and log: no Value here).
template <>
struct PartialLeaves<verify::RoundedPartial> {
  using Leaf = verify::RoundedPartial;
  static constexpr kernels::Mode kMode = kernels::Mode::kRounded;
  static bool Same(const Leaf& a, const Leaf& b) { return a == b; }
  static Leaf Step(const Leaf& p, float a, float b) { return verify::RoundedDotStep(p, a, b); }
  // The nearest fp64 dot product off `p`'s, on the side of `by`'s sign
  // (well below an fp32 ulp: the rounded value may stay alike).
  static Leaf Nudge(const Leaf& p, float by) {
    Leaf n = p;
    n.dot = std::nextafter(p.dot, by < 0 ? -INFINITY : INFINITY);
    return n;
  }
  static Leaf MadeUp(float v) { return Leaf{v, double{v} * v, 1.0}; }
};

// Rounded mode's reduction rule: one fp64 sum a leaf (verify/reduce_rule.h,
// ReduceElement::fp64).
template <>
struct PartialLeaves<double> {
  static constexpr kernels::Mode kMode = kernels::Mode::kRounded;
  static bool Same(double a, double b) { return verify::SameBits(a, b); }
  static double Nudge(double p, float by) { return std::nextafter(p, by < 0 ? -INFINITY : INFINITY); }
  static double MadeUp(float v) { return v; }
};

// Certified walks: leaf `leaf` by the rule (verify::CertifiedStepLeaf) from
// the leaves before it and the values `value_at` gives — how a test liar
// that bent an earlier leaf goes on.
inline verify::ExactPartial FollowRule(const verify::ReduceElement& el,
                                       std::span<const verify::ExactPartial> p, std::uint64_t leaf,
                                       const verify::ValueAt& value_at) {
  const verify::ReduceStep st = verify::ReduceStepAt(el, leaf).value();
  const std::vector<verify::ReadValue> reads = verify::ReadStep(verify::StepReads(el, st), value_at).value();
  std::vector<float> v;
  for (const verify::ReadValue& r : reads) v.push_back(r.value);
  return verify::CertifiedStepLeaf(el, st, p[st.left], p[st.reads_right ? st.right : 0], v).value().value();
}

// Rounded walks likewise: leaf `leaf` by the fp64 rule (verify::StepValue<double>).
inline double FollowRule(const verify::ReduceElement& el, std::span<const double> p, std::uint64_t leaf,
                         const verify::ValueAt& value_at) {
  const verify::ReduceStep st = verify::ReduceStepAt(el, leaf).value();
  const std::vector<verify::ReadValue> reads = verify::ReadStep(verify::StepReads(el, st), value_at).value();
  std::vector<double> v;
  for (const verify::ReadValue& r : reads) v.push_back(r.value);
  return verify::StepValue<double>(el, st, p[st.left], p[st.reads_right ? st.right : 0], v).value();
}

}  // namespace vt::test
