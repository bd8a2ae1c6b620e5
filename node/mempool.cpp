#include "node/mempool.h"

#include <queue>
#include <string>
#include <tuple>

namespace vt::node {

Result<std::vector<Displaced>> Mempool::Add(const vm::Transaction& tx, std::size_t encoded_size,
                                            const vm::Account& account) {
  if (encoded_size > limits::kMaxTxBytes)
    return Status::Invalid(vm::reasons::kTooLarge, std::to_string(encoded_size) + " bytes");
  VT_ASSIGN_OR_RETURN(const crypto::Address sender, vm::TxSenderAddress(tx));
  auto max_fee = vm::CheckedMul(tx.gas_limit, tx.gas_price);
  if (!max_fee.ok()) return Status::Invalid(vm::reasons::kAmountOverflow, "gas_limit * gas_price");
  vm::Amount upfront = *max_fee;
  if (const auto* t = std::get_if<vm::TransferPayload>(&tx.payload)) {
    auto total = vm::CheckedAdd(upfront, t->amount);
    if (!total.ok()) return Status::Invalid(vm::reasons::kAmountOverflow, "fee + amount");
    upfront = *total;
  }
  if (tx.nonce < account.nonce) return Status::Invalid(vm::reasons::kBadNonce, "nonce already used");
  if (tx.nonce - account.nonce > m_limits.nonce_ahead)
    return Status::Invalid("mempool-nonce-too-far", "nonce " + std::to_string(tx.nonce) + " is more than " +
                                                        std::to_string(m_limits.nonce_ahead) + " past the account's " +
                                                        std::to_string(account.nonce));
  const Hash256 id = vm::TxId(tx);

  std::lock_guard lock(m_mu);
  if (m_ids.count(id)) return Status::Invalid("mempool-duplicate");
  Queue& queue = m_senders[sender];
  // Drop the sender's entry again if we refuse and it was empty.
  struct Cleanup {
    std::map<crypto::Address, Queue>& senders;
    const crypto::Address& sender;
    ~Cleanup() {
      auto it = senders.find(sender);
      if (it != senders.end() && it->second.empty()) senders.erase(it);
    }
  } cleanup{m_senders, sender};

  const auto same = queue.find(tx.nonce);
  if (same != queue.end() && tx.gas_price <= same->second.tx.gas_price)
    return Status::Invalid("mempool-replacement-underpriced",
                           "nonce " + std::to_string(tx.nonce) + " is pending at gas price " +
                               std::to_string(same->second.tx.gas_price) + "; a replacement must pay more");
  if (same == queue.end() && queue.size() >= m_limits.per_sender)
    return Status::Invalid("mempool-sender-full",
                           "the sender has " + std::to_string(queue.size()) + " pending transactions");
  // Everything the sender has pending must be payable together.
  vm::Amount committed = upfront;
  for (const auto& [nonce, e] : queue) {
    if (nonce == tx.nonce) continue;  // being replaced
    auto sum = vm::CheckedAdd(committed, e.upfront);
    if (!sum.ok()) return Status::Invalid("mempool-insufficient-funds", "pending costs overflow");
    committed = *sum;
  }
  if (committed > account.balance)
    return Status::Invalid("mempool-insufficient-funds", "pending transactions cost " + std::to_string(committed) +
                                                             ", balance " + std::to_string(account.balance));

  std::vector<Displaced> displaced;
  const std::size_t freed = same != queue.end() ? same->second.size : 0;
  const std::size_t count_after = m_ids.size() + (same != queue.end() ? 0 : 1);
  // Make room: evict cheaper sender tails while the pool would be over a bound.
  std::size_t excess_count = count_after > m_limits.max_txs ? count_after - m_limits.max_txs : 0;
  std::size_t bytes_after = m_bytes - freed + encoded_size;
  std::vector<std::pair<crypto::Address, std::uint64_t>> victims;
  {
    // Plan first (refusing leaves the pool untouched), then evict.
    std::map<crypto::Address, std::size_t> taken;  // tails already planned per sender
    while (excess_count > 0 || bytes_after > m_limits.max_bytes) {
      const Entry* worst = nullptr;
      crypto::Address owner;
      std::tuple<vm::Amount, std::size_t, std::uint64_t> worst_rank{};
      for (const auto& [who, q] : m_senders) {
        if (who == sender) continue;  // never trade one's own earlier nonce for a later one
        const std::size_t skip = taken.count(who) ? taken[who] : 0;
        if (q.size() <= skip) continue;
        auto it = q.end();
        std::advance(it, -static_cast<std::ptrdiff_t>(skip + 1));
        const Entry& e = it->second;
        // Cheapest first, then the furthest in the sender's queue, then the newest.
        const auto rank = std::make_tuple(e.tx.gas_price, ~(q.size() - skip), ~e.seq);
        if (worst == nullptr || rank < worst_rank) {
          worst = &e;
          worst_rank = rank;
          owner = who;
        }
      }
      if (worst == nullptr || worst->tx.gas_price >= tx.gas_price)
        return Status::Invalid("mempool-full", "the pool is full of transactions paying at least as much");
      victims.emplace_back(owner, worst->tx.nonce);
      ++taken[owner];
      if (excess_count > 0) --excess_count;
      bytes_after -= worst->size;
    }
  }
  for (const auto& [who, nonce] : victims) {
    Queue& q = m_senders[who];
    const auto it = q.find(nonce);
    displaced.push_back(Displaced{it->second.id, "mempool-evicted"});
    EraseLocked(who, it);
  }
  if (same != queue.end()) {
    displaced.push_back(Displaced{same->second.id, "mempool-replaced"});
    EraseLocked(sender, same);
  }
  Queue& q = m_senders[sender];  // EraseLocked may have dropped an emptied queue
  q.emplace(tx.nonce, Entry{tx, id, encoded_size, m_seq++, upfront});
  m_ids.emplace(id, Where{sender, tx.nonce});
  m_bytes += encoded_size;
  return displaced;
}

void Mempool::EraseLocked(const crypto::Address& sender, Queue::iterator it) {
  auto q = m_senders.find(sender);
  m_bytes -= it->second.size;
  m_ids.erase(it->second.id);
  q->second.erase(it);
  if (q->second.empty()) m_senders.erase(q);
}

bool Mempool::Contains(const Hash256& id) const {
  std::lock_guard lock(m_mu);
  return m_ids.count(id) != 0;
}

std::vector<vm::Transaction> Mempool::Candidates(std::size_t max, const NonceOf& account_nonce) const {
  std::lock_guard lock(m_mu);
  // One cursor per sender at its account nonce; a heap picks the best head.
  struct Head {
    vm::Amount price;
    std::uint64_t seq;
    const Queue* queue;
    Queue::const_iterator it;
  };
  auto worse = [](const Head& a, const Head& b) {
    return a.price != b.price ? a.price < b.price : a.seq > b.seq;
  };
  std::priority_queue<Head, std::vector<Head>, decltype(worse)> heads(worse);
  for (const auto& [who, q] : m_senders) {
    const auto it = q.find(account_nonce(who));
    if (it != q.end()) heads.push(Head{it->second.tx.gas_price, it->second.seq, &q, it});
  }
  std::vector<vm::Transaction> out;
  while (!heads.empty() && out.size() < max) {
    Head h = heads.top();
    heads.pop();
    out.push_back(h.it->second.tx);
    const std::uint64_t next_nonce = h.it->first + 1;
    auto next = std::next(h.it);
    if (next != h.queue->end() && next->first == next_nonce)
      heads.push(Head{next->second.tx.gas_price, next->second.seq, h.queue, next});
  }
  return out;
}

std::vector<std::uint64_t> Mempool::PendingNonces(const crypto::Address& sender) const {
  std::lock_guard lock(m_mu);
  std::vector<std::uint64_t> out;
  const auto q = m_senders.find(sender);
  if (q == m_senders.end()) return out;
  for (const auto& [nonce, e] : q->second) out.push_back(nonce);
  return out;
}

void Mempool::Remove(const std::vector<Hash256>& ids) {
  std::lock_guard lock(m_mu);
  for (const Hash256& id : ids) {
    const auto w = m_ids.find(id);
    if (w == m_ids.end()) continue;
    const Where where = w->second;
    auto q = m_senders.find(where.sender);
    EraseLocked(where.sender, q->second.find(where.nonce));
  }
}

void Mempool::DropStale(const NonceOf& account_nonce) {
  std::lock_guard lock(m_mu);
  for (auto s = m_senders.begin(); s != m_senders.end();) {
    const std::uint64_t next = account_nonce(s->first);
    Queue& q = s->second;
    while (!q.empty() && q.begin()->first < next) {
      m_bytes -= q.begin()->second.size;
      m_ids.erase(q.begin()->second.id);
      q.erase(q.begin());
    }
    s = q.empty() ? m_senders.erase(s) : std::next(s);
  }
}

std::size_t Mempool::size() const {
  std::lock_guard lock(m_mu);
  return m_ids.size();
}

std::size_t Mempool::bytes() const {
  std::lock_guard lock(m_mu);
  return m_bytes;
}

}  // namespace vt::node
