// Fuzz target for the referee's call-argument decoders and the arbitration
// payload: byte 0 picks the type, the rest is its encoding. Properties: no
// crash, no unbounded allocation, rejections are Invalid, accepted values
// re-encode to the same bytes.
#include <cstddef>
#include <cstdint>

#include "contract_vm/arbitration.h"
#include "referee/messages.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vt;
  using namespace vt::referee;
  if (size == 0) return 0;
  const ByteSpan in(data + 1, size - 1);
  switch (data[0] % 18) {
    case 0: (void)fuzz::RoundTrip<PostBountyArgs>(in, "PostBountyArgs"); break;
    case 1: (void)fuzz::RoundTrip<BountyIdArgs>(in, "BountyIdArgs"); break;
    case 2: (void)fuzz::RoundTrip<CommitArgs>(in, "CommitArgs"); break;
    case 3: (void)fuzz::RoundTrip<OpenGameArgs>(in, "OpenGameArgs"); break;
    case 4: (void)fuzz::RoundTrip<RevealChildrenArgs>(in, "RevealChildrenArgs"); break;
    case 5: (void)fuzz::RoundTrip<StepRootArgs>(in, "StepRootArgs"); break;
    case 6: (void)fuzz::RoundTrip<NodeRootArgs>(in, "NodeRootArgs"); break;
    case 7: (void)fuzz::RoundTrip<RevealRecordArgs>(in, "RevealRecordArgs"); break;
    case 8: (void)fuzz::RoundTrip<ArbitrateArgs>(in, "ArbitrateArgs"); break;
    case 9: (void)fuzz::RoundTrip<GameIdArgs>(in, "GameIdArgs"); break;
    case 10: (void)fuzz::RoundTrip<LogProofs>(in, "LogProofs"); break;
    case 12: (void)fuzz::RoundTrip<ChunkRootArgs>(in, "ChunkRootArgs"); break;
    case 13: (void)fuzz::RoundTrip<RevealChunkArgs>(in, "RevealChunkArgs"); break;
    case 14: (void)fuzz::RoundTrip<PartialsRootArgs>(in, "PartialsRootArgs"); break;
    case 15: (void)fuzz::RoundTrip<RevealStepArgs>(in, "RevealStepArgs"); break;
    case 16: (void)fuzz::RoundTrip<OpenElementArgs>(in, "OpenElementArgs"); break;
    case 17: (void)fuzz::RoundTrip<RevealReduceStepArgs>(in, "RevealReduceStepArgs"); break;
    default: (void)fuzz::RoundTrip<vm::ArbitrationPayload>(in, "ArbitrationPayload"); break;
  }
  return 0;
}
