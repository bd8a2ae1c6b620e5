#pragma once
// Gas: every transaction pays for what it makes the chain do. The schedule is
// consensus (changing a number is a fork); the arbitration precompile is
// metered by the operator's flop count (kernels OpFlops), so re-executing a
// GPT-2 matmul costs what it costs.

#include <cstdint>
#include <limits>

#include "common/result.h"

namespace vt::vm {

struct GasSchedule {
  std::uint64_t tx_base = 1000;         // signature check, account update
  std::uint64_t tx_byte = 1;            // per encoded transaction byte (data availability)
  std::uint64_t state_read = 20;        // per Get
  std::uint64_t state_write = 100;      // per Put/Delete
  std::uint64_t state_byte = 1;         // per byte of key and value written
  std::uint64_t hash_block = 2;         // per 64 bytes hashed by a contract
  std::uint64_t merkle_node = 4;        // per node hash in a proof or walk check
  std::uint64_t sig_verify = 500;       // BIP-340 verification inside a contract
  std::uint64_t event = 50;             // per event, plus event_byte per data byte
  std::uint64_t event_byte = 1;
  std::uint64_t flops_per_gas = 1000;   // arbitration: ceil(flops / flops_per_gas)
  // Certified-mode arbitration runs the exact path (kernels/certified.h,
  // certified_exact_only), priced per operator class (verify/
  // certified_price.h: which work of which operator is counted in which
  // unit) at each class's adversarial worst case, from
  // `kernels_certified_bench --price` (table 5: one thread, thread CPU time,
  // every time in units of the repops gas measured in the same run, ≈ 7.1 ns
  // = 1 000 repops flops) times a margin of 2, rounded up (docs/kernels.md
  // "Certified mode", "Price"):
  // GEMM-like: the exact GEMM on spread exponents, 1.49 ns per flop = 0.21 gas.
  std::uint64_t exact_flops_per_gas = 2;  // ceil(flops / exact_flops_per_gas): 500× the repops price
  // GEMM-like and reductions: per value rounded from an exact accumulator
  // (fold, bit scan, rounding; 512×2×512 spread: 263 ns = 37 gas).
  std::uint64_t exact_output_gas = 75;
  // Reductions: per term with every output forced onto the slow path (a
  // cancelling 2^60 pair per row, 64 of 64 rows slow): 4.1 ns = 0.58 gas
  // (an earlier one-off probe: 7.5–8.6 ns); 3 keeps 2× over that probe too.
  std::uint64_t exact_term_gas = 3;
  // Element-wise outputs (no accumulator: relu, add, SGD/AdamW updates), on
  // top of their flops at the repops rate: add 0.26 ns = 0.04 gas per output.
  std::uint64_t exact_element_gas = 2;
  // Transcendentals (common/crmath.h): per call at fast evaluation + the
  // double-double slow path, the worst of the functions certified kernels
  // call (kernels/ops/certified_math.h: Exp 855 ns = 121 gas, Tanh 846, Cos
  // 678, Log 497).
  std::uint64_t exact_transcendental_gas = 250;
  std::uint64_t graph_node = 10;        // building a step graph, per node
  std::uint64_t blob_byte = 1;          // per byte of a blob a transaction names (referee/blob_rules.h):
                                        // carried to, verified and kept by every validator

  std::uint64_t data_order_element = 2; // arbitration: per element of the data-order permutations (BatchIndicesWork)
};

inline constexpr GasSchedule kGas{};

inline constexpr std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// Counts gas against a limit; Charge fails with "tx-out-of-gas" (and then
// pins used() at the limit, as the whole limit is spent).
class GasMeter {
 public:
  explicit GasMeter(std::uint64_t limit) : m_limit(limit) {}

  Status Charge(std::uint64_t gas) noexcept {
    if (gas > m_limit - m_used) {
      m_used = m_limit;
      return Status::Invalid("tx-out-of-gas");
    }
    m_used += gas;
    return Status::Ok();
  }
  // Saturating helpers for costs computed from sizes.
  static std::uint64_t Mul(std::uint64_t a, std::uint64_t b) noexcept {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::numeric_limits<std::uint64_t>::max();
    return a * b;
  }
  static std::uint64_t Add(std::uint64_t a, std::uint64_t b) noexcept {
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
  }

  std::uint64_t limit() const { return m_limit; }
  std::uint64_t used() const { return m_used; }
  std::uint64_t left() const { return m_limit - m_used; }

 private:
  std::uint64_t m_limit;
  std::uint64_t m_used = 0;
};

// The gas rules of the schedule, one function each, for whoever charges them
// (the VM, contracts, the arbitration precompile) and for whoever bounds them
// in advance (contract_vm/arbitration_cost.h). All saturate.
// Intrinsic gas of a transaction of `tx_bytes` encoded bytes.
inline std::uint64_t IntrinsicGas(std::uint64_t tx_bytes) noexcept {
  return GasMeter::Add(kGas.tx_base, GasMeter::Mul(kGas.tx_byte, tx_bytes));
}
// Hashing `bytes` bytes (one block per 64 bytes, plus one).
inline std::uint64_t HashGas(std::uint64_t bytes) noexcept {
  return GasMeter::Mul(kGas.hash_block, CeilDiv(bytes, 64) + 1);
}
// `node_hashes` node hashes of a Merkle proof or walk check.
inline std::uint64_t MerkleGas(std::uint64_t node_hashes) noexcept {
  return GasMeter::Mul(kGas.merkle_node, node_hashes);
}
// Checking an inclusion proof with `siblings` siblings (the leaf, then one hash per sibling).
inline std::uint64_t ProofGas(std::uint64_t siblings) noexcept { return MerkleGas(GasMeter::Add(siblings, 1)); }
// Re-executing an operator of `flops` estimated flops.
inline std::uint64_t FlopsGas(std::uint64_t flops) noexcept { return CeilDiv(flops, kGas.flops_per_gas); }
// Certified mode: re-executing `flops` flops by the exact path, and rounding
// `outputs` output values from exact accumulators.
inline std::uint64_t ExactFlopsGas(std::uint64_t flops) noexcept { return CeilDiv(flops, kGas.exact_flops_per_gas); }
inline std::uint64_t ExactOutputsGas(std::uint64_t outputs) noexcept {
  return GasMeter::Mul(kGas.exact_output_gas, outputs);
}
// Writing a storage entry whose key and value total `bytes` bytes.
inline std::uint64_t WriteGas(std::uint64_t bytes) noexcept {
  return GasMeter::Add(kGas.state_write, GasMeter::Mul(kGas.state_byte, bytes));
}
// Emitting an event with `data_bytes` bytes of data.
inline std::uint64_t EventGas(std::uint64_t data_bytes) noexcept {
  return GasMeter::Add(kGas.event, GasMeter::Mul(kGas.event_byte, data_bytes));
}
// Moving funds in or out of an escrow (two reads and two writes).
inline constexpr std::uint64_t kEscrowMoveGas = 2 * (kGas.state_read + kGas.state_write);
// Building a step graph of `nodes` operator nodes (and its assemble node).
inline std::uint64_t GraphGas(std::uint64_t nodes) noexcept {
  return GasMeter::Mul(kGas.graph_node, GasMeter::Add(nodes, 1));
}

}  // namespace vt::vm
