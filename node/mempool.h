#pragma once
// Mempool: the pending transactions a node gossips and proposes, under rules
// a stranger cannot abuse (docs/node.md, "Mempool"):
//
// * one pending transaction per (sender, nonce); a same-nonce replacement
//   needs a strictly higher gas price, otherwise it is refused with
//   "mempool-replacement-underpriced";
// * a nonce window: at most `nonce_ahead` nonces past the sender's account
//   ("mempool-nonce-too-far");
// * funds: the sender's balance covers the upfront cost (max fee + amount)
//   of everything it has pending, the new transaction included
//   ("mempool-insufficient-funds") — so keys without funds queue nothing;
// * bounded per sender ("mempool-sender-full") and in total, count and
//   bytes: when full, the cheapest sender tail (lowest gas price, then the
//   furthest nonce, then the newest) is evicted if the newcomer pays more,
//   otherwise the newcomer is refused ("mempool-full").
//
// The caller checks the transaction itself first (Vm::CheckAdmission:
// signature, sizes, gas, full execution for the account's next nonce) and
// passes the sender's account. Thread-safe.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "common/limits.h"
#include "common/result.h"
#include "contract_vm/vm.h"

namespace vt::node {

struct MempoolLimits {
  std::size_t max_txs = 20'000;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t per_sender = limits::kMaxPendingPerSender;
  std::uint64_t nonce_ahead = limits::kMaxNonceAhead;
};

// Why a transaction left the pool without being included.
struct Displaced {
  Hash256 tx_id;
  std::string reason;  // "mempool-replaced", "mempool-evicted"
};

class Mempool {
 public:
  explicit Mempool(MempoolLimits bounds = {}) : m_limits(bounds) {}

  // Admits `tx` (already checked by Vm::CheckAdmission) given its sender's
  // account at the tip. On success, the transactions it pushed out.
  // Invalid: "mempool-duplicate", "tx-bad-nonce" (used nonce),
  // "mempool-nonce-too-far", "mempool-replacement-underpriced",
  // "mempool-insufficient-funds", "mempool-sender-full", "mempool-full",
  // "tx-too-large" (above limits::kMaxTxBytes), and the reasons of
  // vm::CheckStateless that it repeats (sender key, fee overflow).
  Result<std::vector<Displaced>> Add(const vm::Transaction& tx, std::size_t encoded_size, const vm::Account& sender);
  bool Contains(const Hash256& id) const;

  // What a block can include, in an order that applies: per sender the run
  // of consecutive nonces starting at `account_nonce(sender)`, senders
  // interleaved by gas price (highest first, then oldest). At most `max`.
  using NonceOf = std::function<std::uint64_t(const crypto::Address&)>;
  std::vector<vm::Transaction> Candidates(std::size_t max, const NonceOf& account_nonce) const;
  // The sender's pending nonces, ascending.
  std::vector<std::uint64_t> PendingNonces(const crypto::Address& sender) const;

  // After a block: drop the included ones, and the ones whose nonce the
  // chain has passed (they can never apply).
  void Remove(const std::vector<Hash256>& ids);
  void DropStale(const NonceOf& account_nonce);
  std::size_t size() const;
  std::size_t bytes() const;

 private:
  struct Entry {
    vm::Transaction tx;
    Hash256 id;
    std::size_t size = 0;
    std::uint64_t seq = 0;
    vm::Amount upfront = 0;  // max fee + transferred amount
  };
  using Queue = std::map<std::uint64_t, Entry>;  // by nonce
  struct Where {
    crypto::Address sender;
    std::uint64_t nonce = 0;
  };

  void EraseLocked(const crypto::Address& sender, Queue::iterator it);
  // The sender tail to evict for a newcomer of `price` from `newcomer`, or
  // null when none is cheaper.
  const Entry* CheapestTailLocked(const crypto::Address& newcomer, vm::Amount price, crypto::Address* owner) const;

  MempoolLimits m_limits;
  mutable std::mutex m_mu;
  std::map<crypto::Address, Queue> m_senders;
  std::map<Hash256, Where> m_ids;
  std::size_t m_bytes = 0;
  std::uint64_t m_seq = 0;
};

}  // namespace vt::node
