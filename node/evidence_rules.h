#pragma once
// The chain's evidence rules (contract_vm/evidence.h) for BFT consensus: an
// evidence item is a consensus::DuplicateVote (docs/formats.md), valid when
// consensus::VerifyEvidence accepts it against the genesis validator set;
// the offence is (the signer's key, height, round, vote type).
// docs/node.md "Evidence and slashing".

#include <cstdint>
#include <optional>

#include "consensus/commit.h"
#include "consensus/messages.h"
#include "contract_vm/evidence.h"

namespace vt::node {

class VoteEvidenceRules final : public vm::EvidenceRules {
 public:
  VoteEvidenceRules(std::uint64_t chain_id, consensus::ValidatorSet set) : m_chain_id(chain_id), m_set(std::move(set)) {}
  // Invalid "evidence-malformed" (with the codec's reason), or
  // consensus::VerifyEvidence's reason.
  Result<vm::Offence> Check(ByteSpan item) const noexcept override;
  // The offence `ev` would prove, without checking its signatures;
  // nullopt when its validator index is outside the set.
  std::optional<vm::Offence> OffenceOf(const consensus::DuplicateVote& ev) const;

 private:
  std::uint64_t m_chain_id;
  consensus::ValidatorSet m_set;
};

// The bytes a block carries for `ev`.
Bytes EncodeEvidence(const consensus::DuplicateVote& ev);

}  // namespace vt::node
