#include "node/blob_gate.h"

#include <algorithm>

#include "node/blob_rules.h"

namespace vt::node {

BlobGate::Check BlobGate::Examine(const std::vector<referee::BlobRequirement>& reqs) {
  Check out;
  for (const referee::BlobRequirement& req : reqs) {
    const Hash256 id = referee::RequirementId(req);
    {
      std::lock_guard lock(m_mu);
      if (const auto it = m_verdicts.find(id); it != m_verdicts.end()) {
        if (it->second.ok()) continue;
        return Check{State::kInvalid, it->second, {}};
      }
    }
    auto bytes = m_db.GetBlob(req.hash);
    if (!bytes.ok() || !*bytes) {
      if (std::find(out.missing.begin(), out.missing.end(), req.hash) == out.missing.end())
        out.missing.push_back(req.hash);
      continue;
    }
    Status verdict = VerifyBlob(req, **bytes);
    {
      std::lock_guard lock(m_mu);
      if (m_verdicts.emplace(id, verdict).second) {
        m_verdict_order.push_back(id);
        if (m_verdict_order.size() > kMaxVerdicts) {
          m_verdicts.erase(m_verdict_order.front());
          m_verdict_order.pop_front();
        }
      }
    }
    if (!verdict.ok()) return Check{State::kInvalid, verdict, {}};
  }
  if (!out.missing.empty()) out.state = State::kMissing;
  return out;
}

bool BlobGate::TxWaitedTooLong(const Hash256& tx_id, std::uint64_t now_ms) {
  std::lock_guard lock(m_mu);
  // Forget entries of transactions that left the mempool some other way.
  for (auto it = m_tx_waiting.begin(); it != m_tx_waiting.end();) {
    if (now_ms > it->second + 4 * kTxWaitMs) it = m_tx_waiting.erase(it);
    else ++it;
  }
  const auto [it, fresh] = m_tx_waiting.emplace(tx_id, now_ms);
  return !fresh && now_ms > it->second + kTxWaitMs;
}

void BlobGate::ForgetTx(const Hash256& tx_id) {
  std::lock_guard lock(m_mu);
  m_tx_waiting.erase(tx_id);
}

void BlobGate::Park(net::PeerId from, const vm::Block& block, std::uint64_t now_ms) {
  std::lock_guard lock(m_mu);
  const Hash256 hash = vm::BlockHash(block.header);
  if (m_parked.count(hash)) return;
  if (m_parked.size() >= kMaxParked) {
    auto oldest = std::min_element(m_parked.begin(), m_parked.end(),
                                   [](const auto& a, const auto& b) { return a.second.since_ms < b.second.since_ms; });
    m_parked.erase(oldest);
  }
  m_parked.emplace(hash, Parked{from, block, now_ms});
}

void BlobGate::Unpark(const Hash256& block_hash) {
  std::lock_guard lock(m_mu);
  m_parked.erase(block_hash);
}

std::vector<BlobGate::Parked> BlobGate::ParkedBlocks() const {
  std::vector<Parked> out;
  {
    std::lock_guard lock(m_mu);
    for (const auto& [hash, p] : m_parked) out.push_back(p);
  }
  std::sort(out.begin(), out.end(),
            [](const Parked& a, const Parked& b) { return a.block.header.height < b.block.header.height; });
  return out;
}

std::size_t BlobGate::parked() const {
  std::lock_guard lock(m_mu);
  return m_parked.size();
}

}  // namespace vt::node
