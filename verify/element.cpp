#include "verify/element.h"

#include <cstring>

#include "kernels/arith_hd.h"

namespace vt::verify {

bool SameBits(float a, float b) {
  std::uint32_t x = 0, y = 0;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
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

Bytes DotPartialRule<float>::LeafBytes(float p) {
  Bytes b(sizeof p);
  std::memcpy(b.data(), &p, sizeof p);
  return b;
}

}  // namespace vt::verify
