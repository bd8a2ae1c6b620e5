#pragma once
// BlobGate: the node's side of blob availability (docs/node.md, "Blob
// availability"). What a transaction's blobs must hold is referee/blob_rules.h
// and node/blob_rules.h; this class keeps the bookkeeping around it:
// * verdicts on (blob, rule) pairs, cached — a verdict never changes;
// * mempool transactions whose blobs are still on their way, dropped after
//   kTxWaitMs (a withheld blob never gets a transaction into a block).
// A proposal whose blobs are missing is not prevoted (Node::CheckBlock);
// nothing waits for them: a later round or height proposes again. The wait
// bound is local policy, not consensus: consensus is only that a validator
// prevotes a block where all its named blobs are present and verify.
// Thread-safe (one mutex); verification runs outside it.

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "common/result.h"
#include "node/chain_db.h"
#include "referee/blob_rules.h"

namespace vt::node {

class BlobGate {
 public:
  static constexpr std::uint64_t kTxWaitMs = 20'000;
  static constexpr std::size_t kMaxVerdicts = 4096;

  explicit BlobGate(const ChainDb& db) : m_db(db) {}

  enum class State { kReady, kMissing, kInvalid };
  struct Check {
    State state = State::kReady;
    Status why = Status::Ok();     // kInvalid: VerifyBlob's reason
    std::vector<Hash256> missing;  // kMissing: blobs not in the store
  };
  // Ready when every blob is in the store and verifies; Invalid as soon as
  // one present blob fails (permanent: blobs are content-addressed); else
  // Missing with what to fetch.
  Check Examine(const std::vector<referee::BlobRequirement>& reqs);

  // A mempool transaction found waiting for blobs at `now_ms`: true once it
  // has waited more than kTxWaitMs since first found so.
  bool TxWaitedTooLong(const Hash256& tx_id, std::uint64_t now_ms);
  void ForgetTx(const Hash256& tx_id);

 private:
  const ChainDb& m_db;
  mutable std::mutex m_mu;
  std::map<Hash256, Status> m_verdicts;  // by referee::RequirementId
  std::deque<Hash256> m_verdict_order;   // FIFO eviction
  std::map<Hash256, std::uint64_t> m_tx_waiting;
};

}  // namespace vt::node
