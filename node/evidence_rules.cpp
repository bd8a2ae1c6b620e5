#include "node/evidence_rules.h"

namespace vt::node {

Result<vm::Offence> VoteEvidenceRules::Check(ByteSpan item) const noexcept {
  auto ev = DecodeExact<consensus::DuplicateVote>(item);
  if (!ev.ok()) return Status::Invalid("evidence-malformed", ev.status().ToString());
  VT_TRY(consensus::VerifyEvidence(m_chain_id, m_set, *ev));
  return *OffenceOf(*ev);  // verified: the validator is in the set
}

std::optional<vm::Offence> VoteEvidenceRules::OffenceOf(const consensus::DuplicateVote& ev) const {
  if (ev.a.validator >= m_set.size()) return std::nullopt;
  vm::Offence o;
  o.validator = m_set.key(ev.a.validator).bytes();
  o.height = ev.a.height;
  o.round = ev.a.round;
  o.kind = static_cast<std::uint8_t>(ev.a.type);
  return o;
}

Bytes EncodeEvidence(const consensus::DuplicateVote& ev) { return EncodeToBytes(ev); }

}  // namespace vt::node
