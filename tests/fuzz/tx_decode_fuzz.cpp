// Fuzz target: transactions and blocks as peers and RPC clients send them.
// Byte 0 picks the decoder (even: transaction, odd: block), the rest is the
// encoding. Properties: no crash, no unbounded allocation, rejections are
// Invalid, accepted values re-encode to the same bytes; a decoded block's
// EncodedBlockSize is its encoding's size; every accepted transaction is at
// most limits::kMaxTxBytes.
#include <cstddef>
#include <cstdint>

#include "common/limits.h"
#include "contract_vm/block.h"
#include "contract_vm/tx.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vt;
  if (size == 0) return 0;
  const ByteSpan in(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto tx = vm::DecodeTransaction(in);
    if (!tx.ok()) {
      fuzz::CheckRejection(tx.status(), "tx rejection is not Invalid");
      return 0;
    }
    const Bytes again = vm::EncodeTransaction(*tx);
    fuzz::Check(again.size() == in.size() && std::equal(again.begin(), again.end(), in.begin()),
                "tx re-encodes differently");
    fuzz::Check(again.size() <= limits::kMaxTxBytes, "decoded tx above the limit");
    (void)vm::VerifyTransactionSignature(*tx);
    (void)vm::TxSenderAddress(*tx);
  } else {
    auto block = fuzz::RoundTrip<vm::Block>(in, "block");
    if (!block.ok()) return 0;
    fuzz::Check(vm::EncodedBlockSize(*block) == in.size(), "EncodedBlockSize differs from the encoding");
    (void)vm::VerifyBlockSignature(block->header);
    (void)vm::TxRoot(block->txs);
  }
  return 0;
}
