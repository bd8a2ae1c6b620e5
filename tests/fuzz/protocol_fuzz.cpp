// Fuzz target for the protocol objects (protocol/types.h, protocol/state.h):
// byte 0 picks the decoder — job spec, node record, commitment, state
// header — the rest is the encoding. Properties: no crash, no unbounded
// allocation, rejections are Invalid, accepted values re-encode to the same
// bytes. An accepted job spec is within the protocol limits, and the
// arbitration's view of it (step graph, batch indices after charging their
// work) never crashes.
#include <cstddef>
#include <cstdint>

#include "common/limits.h"
#include "contract_vm/graph_source.h"
#include "protocol/data_order.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void CheckJob(vt::ByteSpan in) {
  using namespace vt;
  auto job = protocol::DecodeJobSpec(in);
  if (!job.ok()) {
    fuzz::CheckRejection(job.status(), "job spec rejection is not Invalid");
    return;
  }
  const Bytes again = protocol::EncodeJobSpec(*job);
  fuzz::Check(again.size() == in.size() && std::equal(again.begin(), again.end(), in.begin()),
              "job spec re-encodes differently");
  fuzz::Check(job->dataset_size <= limits::kMaxDatasetSize && job->batch_size <= limits::kMaxBatchSize &&
                  job->num_steps <= limits::kMaxSteps,
              "accepted job spec above a limit");
  const vm::KernelsGraphSource graphs;
  (void)graphs.Build(*job, job->seed % 4);
  // What arbitration does with the data order, under a modest gas budget.
  if (protocol::BatchIndicesWork(job->dataset_size, 0, job->batch_size) <= (std::uint64_t{1} << 20)) {
    protocol::StateHeader h;
    auto idx = graphs.BatchIndices(*job, h);
    fuzz::Check(!idx.ok() || idx->size() == job->batch_size, "batch of the wrong size");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vt;
  if (size == 0) return 0;
  const ByteSpan in(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: CheckJob(in); break;
    case 1: (void)fuzz::RoundTrip<protocol::NodeRecord>(in, "NodeRecord"); break;
    case 2: (void)fuzz::RoundTrip<protocol::Commitment>(in, "Commitment"); break;
    default: (void)fuzz::RoundTrip<protocol::StateHeader>(in, "StateHeader"); break;
  }
  return 0;
}
