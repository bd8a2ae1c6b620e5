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

}  // namespace vt::node
