#include "verify/batch_opening.h"

#include <algorithm>
#include <string>

#include "protocol/data_order.h"
#include "verify/arbitrate.h"
#include "verify/graph_source.h"

namespace vt::verify {
namespace {

Status Bad(std::string_view reason, const Status& cause) { return Status::Invalid(reason, cause.ToString()); }

}  // namespace

Status CheckStateHeader(const BatchCase& at, const protocol::StateHeader& header,
                        const crypto::MerkleProof& proof, Meter& meter) {
  // The header's own bytes are bounded by the protocol's name limits and
  // paid as the transaction's bytes; the proof is charged here.
  VT_TRY(meter.Charge(Cost::kProofSiblings, proof.siblings.size()));
  if (Status s = protocol::VerifyStateHeader(at.state_hash, header, proof); !s.ok())
    return Bad("arb-bad-header", s);
  if (header.tensor_names.size() != at.num_state_tensors)
    return Status::Invalid("arb-bad-header", "tensor count differs from the step graph");
  if (header.step != at.step) return Status::Invalid("arb-header-step-mismatch");
  return Status::Ok();
}

Result<std::vector<std::uint64_t>> ChargedBatchIndices(const StepGraphSource& graphs,
                                                       const protocol::JobSpec& job,
                                                       const protocol::StateHeader& header, Meter& meter) {
  // Whole-epoch permutations (dataset_size words each): paid for before they are built.
  VT_TRY(meter.Charge(Cost::kDataOrderElements,
                      protocol::BatchIndicesWork(job.dataset_size, header.data_offset, job.batch_size)));
  auto indices = graphs.BatchIndices(job, header);
  if (!indices.ok()) return Bad("arb-bad-examples", indices.status());
  return indices;
}

Status CheckExampleAt(const protocol::JobSpec& job, std::uint64_t k, std::uint64_t index,
                      const ExampleOpening& ex, Meter& meter) {
  VT_TRY(meter.Charge(Cost::kHashBytes, ex.leaf.size()));
  VT_TRY(meter.Charge(Cost::kProofSiblings, ex.proof.siblings.size()));
  if (ex.proof.leaf_index != index || ex.proof.leaf_count != job.dataset_size)
    return Status::Invalid("arb-bad-examples",
                           "example " + std::to_string(k) + " is not at its batch position");
  if (Status s = crypto::VerifyMerkleProof(job.dataset_root, crypto::MerkleLeafHash(ex.leaf), ex.proof);
      !s.ok())
    return Bad("arb-bad-examples", s);
  return Status::Ok();
}

Result<OpenedBatch> VerifyBatchOpening(const StepGraphSource& graphs, const BatchCase& at,
                                       const BatchOpening& opening, Meter& meter) {
  const protocol::JobSpec& job = *at.job;
  if (opening.positions.size() != opening.examples.size() || opening.positions.empty())
    return Status::Invalid("elem-bad-batch", "one example per position, at least one");
  for (std::size_t i = 0; i < opening.positions.size(); ++i) {
    if (opening.positions[i] >= job.batch_size || (i > 0 && opening.positions[i] <= opening.positions[i - 1]))
      return Status::Invalid("elem-bad-batch", "positions must increase and lie in the batch");
  }
  VT_TRY(CheckStateHeader(at, opening.header, opening.header_proof, meter));
  VT_ASSIGN_OR_RETURN(std::vector<std::uint64_t> indices,
                      ChargedBatchIndices(graphs, job, opening.header, meter));
  OpenedBatch batch;
  for (std::size_t i = 0; i < opening.positions.size(); ++i) {
    const std::uint64_t k = opening.positions[i];
    if (k >= indices.size()) return Status::Invalid("elem-bad-batch", "position beyond the batch");
    VT_TRY(CheckExampleAt(job, k, indices[k], opening.examples[i], meter));
    // Decoding costs what hashing the leaf did (charged above): the same bytes.
    auto tensors = graphs.AssembleBatch(job, std::span<const Bytes>(&opening.examples[i].leaf, 1));
    if (!tensors.ok()) return Bad("arb-bad-examples", tensors.status());
    batch.m_examples.emplace(k, std::move(tensors).value());
  }
  return batch;
}

Result<float> OpenedBatch::Value(std::uint32_t which, const kernels::Shape& shape, std::int64_t index) const {
  const std::int64_t numel = kernels::NumElements(shape);
  if (shape.empty() || shape[0] < 1 || index < 0 || index >= numel) return Status::Invalid("elem-bad-index");
  const std::int64_t per = numel / shape[0];
  const auto it = m_examples.find(static_cast<std::uint64_t>(index / per));
  if (it == m_examples.end() || which >= it->second.size())
    return Status::Invalid("elem-batch-not-opened", "batch value " + std::to_string(index));
  const kernels::Tensor& t = it->second[which];
  if (t.numel() != per)
    return Status::Invalid("elem-bad-batch", "the example does not have the batch's shape");
  return t[index % per];
}

std::vector<std::uint64_t> BatchPositionsOf(const kernels::Shape& shape, std::int64_t first,
                                            std::int64_t count) {
  std::vector<std::uint64_t> positions;
  const std::int64_t numel = kernels::NumElements(shape);
  if (shape.empty() || shape[0] < 1 || count <= 0 || numel <= 0) return positions;
  const std::int64_t per = numel / shape[0];
  for (std::int64_t k = first / per; k <= (first + count - 1) / per; ++k)
    positions.push_back(static_cast<std::uint64_t>(k));
  return positions;
}

BatchOpening OpenBatch(const protocol::StateHeader& header, const crypto::MerkleProof& header_proof,
                       std::span<const ExampleOpening> batch, std::span<const std::uint64_t> positions) {
  BatchOpening o;
  o.header = header;
  o.header_proof = header_proof;
  for (std::uint64_t k : positions) {
    if (k >= batch.size()) continue;
    o.positions.push_back(k);
    o.examples.push_back(batch[k]);
  }
  return o;
}

void Encode(Writer& w, const BatchOpening& v) {
  protocol::Encode(w, v.header);
  crypto::Encode(w, v.header_proof);
  w.PutVector(v.positions, [](Writer& out, std::uint64_t k) { out.PutU64(k); });
  w.PutVector(v.examples);
}

Result<BatchOpening> Decode(Reader& r, DecodeAs<BatchOpening>) {
  BatchOpening v;
  VT_ASSIGN_OR_RETURN(v.header, protocol::Decode(r, DecodeAs<protocol::StateHeader>{}));
  VT_ASSIGN_OR_RETURN(v.header_proof, crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}));
  VT_ASSIGN_OR_RETURN(v.positions,
                      r.GetVector<std::uint64_t>([](Reader& rr) { return rr.GetU64(); }, kMaxExamples));
  VT_ASSIGN_OR_RETURN(v.examples, r.GetVector<ExampleOpening>(kMaxExamples));
  return v;
}

}  // namespace vt::verify
