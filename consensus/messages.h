#pragma once
// Consensus messages of the BFT finality protocol (docs/node.md, "Consensus")
// and the validator set they are counted against.
//
//   Vote     = u8 type ‖ u64 height ‖ u32 round ‖ optional<hash> block ‖ u32 validator ‖ fixed64 sig
//   Proposal = u64 height ‖ u32 round ‖ optional<u32> valid_round ‖ hash block ‖ u32 proposer ‖ fixed64 sig
//
// A vote for no block (nil) has no hash. Signatures are BIP-340 by the
// validator's genesis key over
//   TaggedHash("veritrain/consensus/vote/v1",     u64 chain_id ‖ u8 type ‖ u64 height ‖ u32 round ‖ optional<hash>)
//   TaggedHash("veritrain/consensus/proposal/v1", u64 chain_id ‖ u64 height ‖ u32 round ‖ optional<u32> ‖ hash)
// so a signature binds the chain and everything but the signer's index (the
// index only names which key to check it with).

#include <cstdint>
#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/keys.h"

namespace vt::consensus {

// Protocol bounds on what a peer may make us store or count.
inline constexpr std::size_t kMaxValidators = 1024;
inline constexpr std::size_t kVoteBytes = 1 + 8 + 4 + 33 + 4 + 64;          // a vote's largest encoding
inline constexpr std::size_t kProposalBytes = 8 + 4 + 5 + 32 + 4 + 64;      // a proposal's largest encoding

enum class VoteType : std::uint8_t { kPrevote = 1, kPrecommit = 2 };

struct Vote {
  VoteType type = VoteType::kPrevote;
  std::uint64_t height = 0;
  std::uint32_t round = 0;
  std::optional<Hash256> block;  // nullopt: nil
  std::uint32_t validator = 0;   // index into the validator set
  crypto::Signature sig;
  bool operator==(const Vote&) const = default;
};

struct Proposal {
  std::uint64_t height = 0;
  std::uint32_t round = 0;
  // The round in which this block got a polka (2f+1 prevotes) before, when
  // the proposer re-proposes it; nullopt for a fresh block.
  std::optional<std::uint32_t> valid_round;
  Hash256 block;
  std::uint32_t proposer = 0;
  crypto::Signature sig;
  bool operator==(const Proposal&) const = default;
};

// The fixed validator set (from genesis), equal voting power each.
// n = 3f + 1 tolerates f faulty validators; a quorum is n − f (≥ 2f + 1).
class ValidatorSet {
 public:
  // Invalid "consensus-no-validators", "consensus-too-many-validators" or
  // "consensus-duplicate-validator".
  static Result<ValidatorSet> Create(std::vector<crypto::PublicKey> keys);

  std::size_t size() const { return m_keys.size(); }
  std::size_t faulty() const { return (m_keys.size() - 1) / 3; }  // f
  std::size_t quorum() const { return m_keys.size() - faulty(); }  // n − f
  const crypto::PublicKey& key(std::uint32_t index) const { return m_keys[index]; }
  std::optional<std::uint32_t> IndexOf(const crypto::PublicKey& key) const;
  // Proposer rotation by height and round: (height + round) mod n.
  std::uint32_t Proposer(std::uint64_t height, std::uint32_t round) const;

 private:
  std::vector<crypto::PublicKey> m_keys;
};

Hash256 VoteSignHash(std::uint64_t chain_id, const Vote& v);
Hash256 ProposalSignHash(std::uint64_t chain_id, const Proposal& p);

// Fill in `sig` (deterministic signing: no randomness needed to vote).
Status SignVote(std::uint64_t chain_id, const crypto::SecretKey& key, Vote& v);
Status SignProposal(std::uint64_t chain_id, const crypto::SecretKey& key, Proposal& p);

// Invalid "consensus-bad-validator" (index outside the set),
// "consensus-bad-signature"; for a proposal also "consensus-wrong-proposer"
// (not the rotation's proposer of that height and round).
Status VerifyVote(std::uint64_t chain_id, const ValidatorSet& set, const Vote& v);
Status VerifyProposal(std::uint64_t chain_id, const ValidatorSet& set, const Proposal& p);

void Encode(Writer& w, const Vote& v);
Result<Vote> Decode(Reader& r, DecodeAs<Vote>);
void Encode(Writer& w, const Proposal& p);
Result<Proposal> Decode(Reader& r, DecodeAs<Proposal>);

}  // namespace vt::consensus
