#include "verify/element.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "common/encoding.h"
#include "kernels/arith_hd.h"
#include "kernels/matmul.h"
#include "kernels/rounding.h"

namespace vt::verify {

bool SameBits(float a, float b) {
  std::uint32_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

bool SameBits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

std::vector<float> RepopsDotPartials(std::span<const float> a, std::span<const float> b) {
  std::vector<float> p;
  p.reserve(a.size() + 1);
  p.push_back(+0.0f);
  for (std::size_t k = 0; k < a.size(); ++k) p.push_back(kernels::hd::RepopsStep(p.back(), a[k], b[k]));
  return p;
}

bool RepopsDotStepHolds(float prev, float a, float b, float next) {
  return SameBits(kernels::hd::RepopsStep(prev, a, b), next);
}

float RepopsLinearValue(float dot, std::optional<float> bias) {
  return bias ? kernels::hd::AddRn(dot, *bias) : dot;
}

std::vector<ExactPartial> CertifiedDotPartials(std::span<const float> a, std::span<const float> b) {
  std::vector<ExactPartial> p;
  p.reserve(a.size() + 1);
  kernels::ExactAccumulator acc;
  p.push_back(acc.Encode());
  for (std::size_t k = 0; k < a.size(); ++k) {
    acc.AddProduct(a[k], b[k]);
    p.push_back(acc.Encode());
  }
  return p;
}

bool CertifiedDotStepHolds(const ExactPartial& prev, float a, float b, const ExactPartial& next) {
  std::optional<kernels::ExactAccumulator> acc = kernels::ExactAccumulator::FromEncoding(prev);
  if (!acc) return false;
  acc->AddProduct(a, b);
  return acc->Encode() == next;
}

std::optional<float> CertifiedLinearValue(const ExactPartial& dot, std::optional<float> bias) {
  std::optional<kernels::ExactAccumulator> acc = kernels::ExactAccumulator::FromEncoding(dot);
  if (!acc) return std::nullopt;
  if (bias) acc->Add(*bias);
  return acc->Round();
}

RoundedPartial RoundedDotStep(const RoundedPartial& p, float a, float b) {
  const double x = a, y = b;  // exact: the products of fp32 values below are exact in fp64
  return RoundedPartial{p.dot + x * y, p.a_sq + x * x, p.b_sq + y * y};
}

bool RoundedPartial::operator==(const RoundedPartial& other) const {
  return std::bit_cast<std::uint64_t>(dot) == std::bit_cast<std::uint64_t>(other.dot) &&
         std::bit_cast<std::uint64_t>(a_sq) == std::bit_cast<std::uint64_t>(other.a_sq) &&
         std::bit_cast<std::uint64_t>(b_sq) == std::bit_cast<std::uint64_t>(other.b_sq);
}

std::vector<RoundedPartial> RoundedDotPartials(std::span<const float> a, std::span<const float> b) {
  std::vector<RoundedPartial> p;
  p.reserve(a.size() + 1);
  p.emplace_back();
  for (std::size_t k = 0; k < a.size(); ++k) p.push_back(RoundedDotStep(p.back(), a[k], b[k]));
  return p;
}

bool RoundedDotStepHolds(const RoundedPartial& prev, float a, float b, const RoundedPartial& next) {
  return RoundedDotStep(prev, a, b) == next;
}

double RoundedLinearReference(const RoundedPartial& dot, std::optional<float> bias) {
  return bias ? dot.dot + static_cast<double>(*bias)
              : dot.dot;  // the kernel adds the bias after the dot product
}

double RoundedLinearSlack(const RoundedPartial& dot, std::optional<float> bias, std::int64_t k) {
  return kernels::GemmSlackValue(kernels::GemmSlackFactor(k + (bias ? 1 : 0)), std::sqrt(dot.a_sq),
                                 std::sqrt(dot.b_sq), bias ? std::fabs(static_cast<double>(*bias)) : 0.0);
}

Result<float> RoundAsLogged(double ref, const kernels::RoundingSpec& spec, double slack,
                            std::optional<bool> logged) {
  VT_TRY(spec.Validate());
  if (!logged) return kernels::RoundToBits(ref, spec.bits);
  return kernels::ApplyLogEntry(ref, spec.bits, spec.tau_q16, slack, *logged);
}

Result<float> RoundedLinearValue(const RoundedPartial& dot, std::optional<float> bias, std::int64_t k,
                                 const kernels::RoundingSpec& spec, std::optional<bool> logged) {
  return RoundAsLogged(RoundedLinearReference(dot, bias), spec, RoundedLinearSlack(dot, bias, k), logged);
}

Bytes PartialLeafKind<RoundedPartial>::Encode(const RoundedPartial& p) {
  Writer w;
  for (const double v : {p.dot, p.a_sq, p.b_sq}) w.PutU64(std::bit_cast<std::uint64_t>(v));
  return std::move(w).Take();
}

Bytes PartialLeafKind<float>::Encode(float p) {
  Bytes b(sizeof p);
  std::memcpy(b.data(), &p, sizeof p);
  return b;
}

Bytes PartialLeafKind<double>::Encode(double p) {
  Writer w;
  w.PutU64(std::bit_cast<std::uint64_t>(p));
  return std::move(w).Take();
}

}  // namespace vt::verify
