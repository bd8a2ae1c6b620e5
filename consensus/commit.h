#pragma once
// What the consensus protocol leaves behind for others to check:
//
// * CommitCertificate — proof that a block is final: precommits of a quorum
//   (n − f ≥ 2f+1) of the validators for (chain id, height, round, block).
//   Stored with each block and served with sync, so a syncing node verifies
//   finality itself before it applies a block.
//     CommitCertificate = u64 height ‖ u32 round ‖ hash block ‖ vector<u32 validator ‖ fixed64 sig>
//   (validators strictly increasing: one encoding per set of signers).
//
// * DuplicateVote — evidence of equivocation: two votes signed by one
//   validator for the same height, round and type naming different blocks
//   (nil counts as a block). Canonical order: a.block < b.block (nil first),
//   so one double-sign has exactly one evidence encoding.
//     DuplicateVote = Vote a ‖ Vote b

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "consensus/messages.h"

namespace vt::consensus {

// The largest certificate encoding: a signature of every validator.
inline constexpr std::size_t kMaxCertificateBytes = 8 + 4 + 32 + kMaxVarintBytes + kMaxValidators * (4 + 64);

struct CommitSig {
  std::uint32_t validator = 0;
  crypto::Signature sig;
  bool operator==(const CommitSig&) const = default;
};

struct CommitCertificate {
  std::uint64_t height = 0;
  std::uint32_t round = 0;
  Hash256 block;
  std::vector<CommitSig> sigs;  // validator indices strictly increasing
  bool operator==(const CommitCertificate&) const = default;
};

// From the precommits that decided (any order; each for `block` at
// height/round). Keeps the first of each validator.
CommitCertificate MakeCertificate(std::uint64_t height, std::uint32_t round, const Hash256& block,
                                  const std::vector<Vote>& precommits);

// Invalid "commit-wrong-height", "commit-wrong-block", "commit-unsorted"
// (indices not strictly increasing, or outside the set), "commit-no-quorum",
// or "consensus-bad-signature".
Status VerifyCertificate(std::uint64_t chain_id, const ValidatorSet& set, const CommitCertificate& cert,
                         std::uint64_t height, const Hash256& block);

struct DuplicateVote {
  Vote a;
  Vote b;
  bool operator==(const DuplicateVote&) const = default;
};

// Puts two conflicting votes in canonical order.
DuplicateVote MakeEvidence(Vote first, Vote second);

// Invalid "evidence-not-conflicting" (different signer, height, round or
// type, or the same block), "evidence-not-canonical", "consensus-bad-validator"
// or "consensus-bad-signature".
Status VerifyEvidence(std::uint64_t chain_id, const ValidatorSet& set, const DuplicateVote& ev);

void Encode(Writer& w, const CommitCertificate& c);
Result<CommitCertificate> Decode(Reader& r, DecodeAs<CommitCertificate>);
void Encode(Writer& w, const DuplicateVote& e);
Result<DuplicateVote> Decode(Reader& r, DecodeAs<DuplicateVote>);

}  // namespace vt::consensus
