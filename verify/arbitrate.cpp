#include "verify/arbitrate.h"

#include <optional>
#include <string>
#include <utility>

#include "kernels/mode.h"
#include "kernels/op_context.h"
#include "kernels/ops/registry.h"
#include "kernels/rounding.h"
#include "kernels/tensor_codec.h"
#include "protocol/data_order.h"
#include "protocol/state.h"
#include "verify/batch_opening.h"
#include "verify/certified_price.h"
#include "verify/descent.h"
#include "verify/graph_source.h"

namespace vt::verify {
namespace {

Status Bad(std::string_view reason, const Status& cause) { return Status::Invalid(reason, cause.ToString()); }

bool IsLogReason(const std::string& reason) { return reason.rfind("log-", 0) == 0; }

Status ChargeProof(Meter& meter, const crypto::MerkleProof& proof) {
  return meter.Charge(Cost::kProofSiblings, proof.siblings.size());
}

// A proof of leaf `index` of `count` leaves, charged before it is checked.
Status ChargeAndCheckProofAt(Meter& meter, const Hash256& root, const Hash256& leaf, const crypto::MerkleProof& proof,
                             std::uint64_t index, std::uint64_t count, std::string_view reason) {
  VT_TRY(ChargeProof(meter, proof));
  return CheckProofAt(root, leaf, proof, index, count, reason);
}

}  // namespace

Status CheckProofAt(const Hash256& root, const Hash256& leaf, const crypto::MerkleProof& proof, std::uint64_t index,
                    std::uint64_t count, std::string_view reason) {
  if (proof.leaf_index != index || proof.leaf_count != count)
    return Status::Invalid(reason, "proof for leaf " + std::to_string(proof.leaf_index) + " of " +
                                       std::to_string(proof.leaf_count) + ", expected " + std::to_string(index) +
                                       " of " + std::to_string(count));
  if (Status s = crypto::VerifyMerkleProof(root, leaf, proof); !s.ok()) return Status::Invalid(reason, s.ToString());
  return Status::Ok();
}

Status ChargeReexecution(Meter& meter, std::uint8_t mode, std::uint16_t op_kind, std::uint64_t flops,
                         std::uint64_t outputs, std::span<const std::vector<std::int64_t>> input_shapes,
                         std::span<const std::int64_t> attr_ints) {
  if (mode != static_cast<std::uint8_t>(kernels::Mode::kCertified)) return meter.Charge(Cost::kFlops, flops);
  const CertifiedWork w = CertifiedWorkOf(op_kind, flops, outputs, input_shapes, attr_ints);
  VT_TRY(meter.Charge(Cost::kFlops, w.plain_flops));
  VT_TRY(meter.Charge(Cost::kExactFlops, w.exact_flops));
  VT_TRY(meter.Charge(Cost::kExactOutputs, w.rounded_outputs));
  VT_TRY(meter.Charge(Cost::kExactTerms, w.terms));
  VT_TRY(meter.Charge(Cost::kExactElements, w.elements));
  return meter.Charge(Cost::kExactTranscendentals, w.transcendentals);
}

bool OutcomeConfirms(const ArbitrationOutcome& outcome, const protocol::NodeRecord& record, bool logged) {
  if (outcome.kind != ArbitrationKind::kExecuted) return false;
  return record.output_hashes == outcome.output_hashes && (!logged || record.log_hash == outcome.log_hash);
}

Result<ArbitrationOutcome> ArbitrateNode(const StepGraphSource& graphs, const StepGraph& graph,
                                         const ArbitrationCase& c, const ArbitrationPayload& payload, Meter& meter) {
  const protocol::JobSpec& job = c.job;
  if (c.node_count != graph.nodes.size() + 1 || c.node_index >= c.node_count)
    return Status::Invalid("arb-bad-node-index");
  const bool assemble = c.node_index == graph.nodes.size();
  const NodeSpec spec = NodeSpecAt(graph, c.node_index);

  // The header of h_t: its position tells the tensor count, its fields the
  // step and the data cursor.
  VT_TRY(CheckStateHeader(BatchCase{&job, c.step, c.state_hash, graph.num_state_tensors}, payload.header,
                          payload.header_proof, meter));

  if (payload.inputs.size() != spec.inputs.size()) return Status::Invalid("arb-bad-input-count");

  bool reads_batch = false;
  for (const auto& ref : spec.inputs) reads_batch |= ref.source == protocol::InputSource::kBatch;
  std::vector<kernels::Tensor> batch;
  if (reads_batch) {
    VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> indices,
                        ChargedBatchIndices(graphs, job, payload.header, meter));
    if (payload.examples.size() != indices.size())
      return Status::Invalid("arb-bad-examples", "wrong example count");
    std::vector<Bytes> leaves;
    leaves.reserve(indices.size());
    for (std::size_t k = 0; k < indices.size(); ++k) {
      VT_TRY(CheckExampleAt(job, k, indices[k], payload.examples[k], meter));
      leaves.push_back(payload.examples[k].leaf);
    }
    auto assembled = graphs.AssembleBatch(job, leaves);
    if (!assembled.ok()) return Bad("arb-bad-examples", assembled.status());
    batch = std::move(assembled).value();
  } else if (!payload.examples.empty()) {
    return Status::Invalid("arb-bad-examples", "the node does not read the batch");
  }

  // Open every input against the agreed hashes.
  const InputHashContext at{c.state_hash, graph.num_state_tensors, c.node_root, c.node_count, c.node_index};
  std::vector<kernels::Tensor> tensors(spec.inputs.size());
  std::vector<const kernels::Tensor*> input_ptrs(spec.inputs.size(), nullptr);
  std::vector<Hash256> input_hashes(spec.inputs.size());
  for (std::size_t k = 0; k < spec.inputs.size(); ++k) {
    const protocol::InputRef& ref = spec.inputs[k];
    const InputOpening& in = payload.inputs[k];
    const std::string which = "input " + std::to_string(k);
    if (ref.source == protocol::InputSource::kBatch) {
      if (!in.tensor.empty() || in.proof || in.producer)
        return Status::Invalid("arb-bad-input-tensor", which + ": batch inputs come from the examples");
      if (ref.index >= batch.size()) return Status::Error("graph-invalid", "batch index beyond the batch");
      input_ptrs[k] = &batch[ref.index];
      continue;
    }
    // The tensor (or, for the assemble node, only its hash).
    if (assemble) {
      if (!in.tensor.empty()) return Status::Invalid("arb-bad-input-tensor", which + ": assemble takes hashes");
      input_hashes[k] = in.tensor_hash;
    } else {
      VT_TRY(meter.Charge(Cost::kHashBytes, in.tensor.size()));
      auto t = kernels::DecodeTensorBytes(in.tensor);
      if (!t.ok()) return Bad("arb-bad-input-tensor", t.status());
      tensors[k] = std::move(t).value();
      input_hashes[k] = tensors[k].Hash();
      input_ptrs[k] = &tensors[k];
    }
    if (!in.proof) return Status::Invalid("arb-bad-input-proof", which + ": no proof");
    VT_TRY(ChargeProof(meter, *in.proof));
    VT_TRY(VerifyInputHash(at, ref, input_hashes[k], *in.proof, in.producer, which));
  }

  ArbitrationOutcome outcome;
  const bool rounded = job.mode == static_cast<std::uint8_t>(kernels::Mode::kRounded);
  if (assemble) {
    if (!payload.log.empty()) return Status::Invalid("arb-bad-log", "the assemble node has no log");
    auto next = graphs.NextHeader(job, payload.header);
    if (!next.ok()) return Status::Error("graph-invalid", next.status().ToString());
    if (next->tensor_names.size() != input_hashes.size())
      return Status::Error("graph-invalid", "next header names a different tensor count");
    VT_TRY(meter.Charge(Cost::kMerkleHashes, 2 * (input_hashes.size() + 1)));
    outcome.output_hashes.push_back(protocol::StateHashFromLeaves(input_hashes, *next));
    return outcome;
  }

  // Re-execute the one operator.
  auto attrs = DecodeExact<kernels::OpAttrs>(spec.attrs);
  if (!attrs.ok()) return Status::Error("graph-invalid", "node attributes: " + attrs.status().ToString());
  auto kind = kernels::OpKindFromValue(spec.op_kind);
  if (!kind.ok()) return Status::Error("graph-invalid", "node op kind: " + kind.status().ToString());
  std::vector<kernels::Shape> shapes;
  for (const kernels::Tensor* t : input_ptrs) shapes.push_back(t->shape());
  outcome.flops = kernels::OpFlops(*kind, *attrs, shapes);
  VT_TRY(ChargeReexecution(meter, job.mode, spec.op_kind, outcome.flops, DeclaredOutputValues(spec), shapes,
                           attrs->ints));

  kernels::ExecConfig config;
  config.mode = static_cast<kernels::Mode>(job.mode);
  config.threads = 1;
  // Rounded mode: the canonical fp64 reference (no vendor BLAS, no libm; a
  // replaying NodeRounding implies it too), so the verdict is a pure
  // function of the block's bytes. Log entries are judged against it by the
  // one acceptance rule every challenger's replay applies (kernels
  // hd::AcceptsEntry; docs/kernels.md "The acceptance rule").
  config.f64_reference = true;
  // Certified mode: every GEMM output by the exact path only (kernels/
  // certified.h): the same bits as any honest fast path, by construction.
  config.certified_exact_only = true;
  std::optional<kernels::NodeRounding> rounding;
  if (rounded) {
    config.rounding.bits = job.rounding_bits;
    config.rounding.tau_q16 = spec.tau_q16;
    // Paid before the work: decoding (the declared payload, read from the
    // frame), then the log tree's hashes (a leaf and an inner node an entry).
    auto payload_size = kernels::RoundingLogPayloadSize(payload.log);
    if (!payload_size.ok()) return Bad("arb-bad-log", payload_size.status());
    VT_TRY(meter.Charge(Cost::kHashBytes, *payload_size));
    auto log = kernels::DecodeRoundingLog(payload.log);
    if (!log.ok()) return Bad("arb-bad-log", log.status());
    VT_TRY(meter.Charge(Cost::kMerkleHashes, 2 * static_cast<std::uint64_t>(log->entries.size())));
    outcome.log_hash = kernels::HashRoundingLog(*log);
    rounding.emplace(kernels::NodeRounding::Replay(config.rounding, std::move(log).value()));
  } else if (!payload.log.empty()) {
    return Status::Invalid("arb-bad-log", "only rounded mode has logs");
  }
  const kernels::OpContext ctx(config, rounding ? &*rounding : nullptr,
                               kernels::RngAddress{job.seed, c.step, c.node_index});
  std::vector<kernels::Tensor> outputs;
  Status run = kernels::RunOp(ctx, *kind, *attrs, input_ptrs, outputs);
  if (run.ok() && rounding) run = rounding->Finish();
  if (run.is_error()) return run;
  if (!run.ok()) {
    outcome.kind = IsLogReason(run.reason()) ? ArbitrationKind::kLogRejected : ArbitrationKind::kOpFailed;
    outcome.detail = run.ToString();
    return outcome;
  }
  if (outputs.size() != spec.num_outputs)
    return Status::Error("graph-invalid", "the operator's output count differs from the node spec");
  for (const kernels::Tensor& t : outputs) {
    VT_TRY(meter.Charge(Cost::kHashBytes, static_cast<std::uint64_t>(t.numel()) * sizeof(float)));
    outcome.output_hashes.push_back(t.Hash());
  }
  return outcome;
}

Status VerifyLogChain(const LogPosition& at, const Hash256& log_hash, const LogChain& chain, const Hash256& log_root,
                      Meter& meter) {
  if (at.checkpoint_interval == 0 || at.node_count == 0)
    return Status::Invalid("arb-bad-log-proof", "no log tree for this job");
  // The interval j holding step t: checkpoints j and j+1 bound it.
  const std::uint64_t j = at.step / at.checkpoint_interval;
  const std::uint64_t s0 = protocol::CheckpointStepAt(at.num_steps, at.checkpoint_interval, j);
  const std::uint64_t s1 = protocol::CheckpointStepAt(at.num_steps, at.checkpoint_interval, j + 1);
  constexpr std::string_view kReason = "arb-bad-log-proof";
  VT_TRY(ChargeAndCheckProofAt(meter, chain.step_log_root, log_hash, chain.node_in_step, at.node, at.node_count - 1,
                               kReason));
  VT_TRY(ChargeAndCheckProofAt(meter, chain.interval_log_hash, chain.step_log_root, chain.step_in_interval,
                               at.step - s0, s1 - s0, kReason));
  return ChargeAndCheckProofAt(meter, log_root, chain.interval_log_hash, chain.interval_in_root, j,
                               protocol::CheckpointCount(at.num_steps, at.checkpoint_interval) - 1, kReason);
}

}  // namespace vt::verify
