// Certified arbitration is priced per operator class at the class's worst
// case (verify/certified_price.h, contract_vm/gas.h): an adversary who forces
// every output of a reduction onto the slow path, or every transcendental
// call onto crmath's slow path, is charged at least that work's count times
// the table's price; element-wise updates no longer pay the accumulator's
// per-output rounding. Counts, not timings.

#include <gtest/gtest.h>

#include "contract_vm/arbitration.h"
#include "contract_vm/gas.h"
#include "kernels/certified.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "verify/arbitrate.h"
#include "verify/certified_price.h"

namespace vt::verify {
namespace {

constexpr auto kCertified = static_cast<std::uint8_t>(kernels::Mode::kCertified);

std::uint64_t ChargedGas(kernels::OpKind kind, std::uint64_t flops, std::uint64_t outputs) {
  vm::GasMeter gas(std::uint64_t{1} << 62);
  vm::GasCosts costs(gas);
  EXPECT_TRUE(ChargeReexecution(costs, kCertified, static_cast<std::uint16_t>(kind), flops, outputs).ok());
  return gas.used();
}

std::uint64_t Flops(kernels::OpKind kind, const kernels::OpAttrs& attrs, const std::vector<kernels::Shape>& shapes) {
  return kernels::OpFlops(kind, attrs, shapes);
}

TEST(CertifiedPrice, AllSlowPathReductionIsChargedPerTerm) {
  // Every row opens with a cancelling 2^60 pair: no fp64 bound decides it.
  for (const std::int64_t n : {std::int64_t{3}, std::int64_t{17}, std::int64_t{1024}}) {
    const std::int64_t rows = 8;
    kernels::Tensor x(kernels::Shape{rows, n});
    for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = 0.1f * static_cast<float>(i % 7) + 0.05f;  // no row sums to 0
    for (std::int64_t r = 0; r < rows; ++r) x[r * n] = 0x1p60f, x[r * n + 1] = -0x1p60f;
    kernels::ExecConfig config;
    config.mode = kernels::Mode::kCertified;
    config.threads = 1;
    config.certified_exact_only = true;
    const kernels::OpContext ctx(config);
    const kernels::Tensor* in[] = {&x};
    std::vector<kernels::Tensor> out;
    const auto slow0 = kernels::CertifiedCounts().slow[static_cast<int>(kernels::CertKind::kSum)];
    ASSERT_TRUE(kernels::RunOp(ctx, kernels::OpKind::kSum, kernels::ReduceAttrs(1), in, out).ok());
    const auto slow = kernels::CertifiedCounts().slow[static_cast<int>(kernels::CertKind::kSum)] - slow0;
    EXPECT_EQ(slow, static_cast<std::uint64_t>(rows)) << "the adversarial input forces every output slow";
    const std::uint64_t terms = static_cast<std::uint64_t>(rows * n);
    const std::uint64_t gas =
        ChargedGas(kernels::OpKind::kSum, Flops(kernels::OpKind::kSum, kernels::ReduceAttrs(1), {x.shape()}),
                   static_cast<std::uint64_t>(rows));
    EXPECT_GE(gas, terms * vm::kGas.exact_term_gas + slow * vm::kGas.exact_output_gas);
  }
}

TEST(CertifiedPrice, EveryTranscendentalCallIsChargedAtTheSlowPath) {
  // gelu (one tanh per value), softmax (one exp per value), cross-entropy
  // (one exp per logit): each call priced as if on crmath's slow path.
  const kernels::Shape s{16, 33};
  const std::uint64_t n = 16 * 33;
  for (const kernels::OpKind kind : {kernels::OpKind::kGelu, kernels::OpKind::kSoftmax}) {
    const std::uint64_t gas = ChargedGas(kind, Flops(kind, {}, {s}), n);
    EXPECT_GE(gas, n * vm::kGas.exact_transcendental_gas) << static_cast<int>(kind);
  }
  const std::uint64_t ce = ChargedGas(kernels::OpKind::kCrossEntropy,
                                      Flops(kernels::OpKind::kCrossEntropy, {}, {s, kernels::Shape{16}}), 1);
  EXPECT_GE(ce, n * vm::kGas.exact_transcendental_gas + n * vm::kGas.exact_term_gas);
  // The schedule's one cos.
  EXPECT_GE(ChargedGas(kernels::OpKind::kLrSchedule, Flops(kernels::OpKind::kLrSchedule, {}, {}), 1),
            vm::kGas.exact_transcendental_gas);
}

TEST(CertifiedPrice, ElementWiseUpdatesPayNoAccumulatorRounding) {
  // AdamW over n parameters: 3n outputs, element-wise: far below the
  // accumulator's 40 gas per output the flat price charged.
  const kernels::Shape s{4096};
  const std::vector<kernels::Shape> shapes{s, s, s, s, kernels::Shape{}};
  const std::uint64_t flops = Flops(kernels::OpKind::kAdamW, {}, shapes);
  const std::uint64_t gas = ChargedGas(kernels::OpKind::kAdamW, flops, 3 * 4096);
  EXPECT_EQ(gas, vm::FlopsGas(flops) + 3 * 4096 * vm::kGas.exact_element_gas);
  EXPECT_LT(gas, 3 * 4096 * vm::kGas.exact_output_gas / 4);
}

TEST(CertifiedPrice, ShapesCountAttentionExpsAndBiasTermsExactly) {
  // attention over qkv [2, 16, 3·8], 4 heads: 2·4·16·16 exps (each summed once);
  // without shapes, the looser flops / 5 stands and is never smaller.
  const std::vector<std::vector<std::int64_t>> qkv{{2, 16, 24}};
  const std::vector<std::int64_t> heads{4};
  const kernels::OpAttrs attrs{heads, {}};
  const std::uint64_t flops = kernels::OpFlops(kernels::OpKind::kAttention, attrs, qkv);
  const auto kind = static_cast<std::uint16_t>(kernels::OpKind::kAttention);
  const CertifiedWork exact = CertifiedWorkOf(kind, flops, 2 * 16 * 8, qkv, heads);
  EXPECT_EQ(exact.transcendentals, 2u * 4 * 16 * 16);
  EXPECT_EQ(exact.terms, 2u * 4 * 16 * 16);
  EXPECT_GE(CertifiedWorkOf(kind, flops, 2 * 16 * 8).transcendentals, exact.transcendentals);
  // linear_backward: dy [32, 10] → 320 bias-gradient terms.
  const std::vector<std::vector<std::int64_t>> lin{{32, 10}, {32, 64}, {10, 64}};
  const auto lb = static_cast<std::uint16_t>(kernels::OpKind::kLinearBackward);
  const std::uint64_t lflops = kernels::OpFlops(kernels::OpKind::kLinearBackward, {}, lin);
  EXPECT_EQ(CertifiedWorkOf(lb, lflops, 32 * 64 + 10 * 64 + 10, lin).terms, 320u);
  EXPECT_GE(CertifiedWorkOf(lb, lflops, 32 * 64 + 10 * 64 + 10).terms, 320u);
}

TEST(CertifiedPrice, UnlistedOperatorIsNeverCheaperThanAnyClass) {
  const std::uint64_t flops = 1 << 20, outputs = 1 << 10;
  const std::uint64_t unknown = ChargedGas(static_cast<kernels::OpKind>(9999), flops, outputs);
  for (const kernels::OpKind kind : {kernels::OpKind::kMatMul, kernels::OpKind::kSum, kernels::OpKind::kGelu,
                                     kernels::OpKind::kAdamW, kernels::OpKind::kAttention}) {
    EXPECT_TRUE(HasCertifiedPrice(static_cast<std::uint16_t>(kind)));
    EXPECT_GE(unknown, ChargedGas(kind, flops, outputs)) << static_cast<int>(kind);
  }
  EXPECT_FALSE(HasCertifiedPrice(9999));
}

}  // namespace
}  // namespace vt::verify
