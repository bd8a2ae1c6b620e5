#include "consensus/messages.h"

#include <algorithm>
#include <set>

#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::consensus {
namespace {

void PutBlockRef(Writer& w, const std::optional<Hash256>& block) {
  w.PutOptional(block, [](Writer& ww, const Hash256& h) { ww.PutHash(h); });
}

void EncodeVoteBody(Writer& w, const Vote& v) {
  w.PutU8(static_cast<std::uint8_t>(v.type));
  w.PutU64(v.height);
  w.PutU32(v.round);
  PutBlockRef(w, v.block);
}

void EncodeProposalBody(Writer& w, const Proposal& p) {
  w.PutU64(p.height);
  w.PutU32(p.round);
  w.PutOptional(p.valid_round, [](Writer& ww, std::uint32_t r) { ww.PutU32(r); });
  w.PutHash(p.block);
}

Result<crypto::Signature> SignHash(const crypto::SecretKey& key, const Hash256& msg) {
  // Deterministic (all-zero aux): a validator never needs fresh randomness
  // to vote, and a repeated vote is byte-identical.
  const std::array<std::uint8_t, 32> aux{};
  return crypto::SignWithAux(key, msg.span(), aux);
}

}  // namespace

Result<ValidatorSet> ValidatorSet::Create(std::vector<crypto::PublicKey> keys) {
  if (keys.empty()) return Status::Invalid("consensus-no-validators");
  if (keys.size() > kMaxValidators) return Status::Invalid("consensus-too-many-validators");
  std::set<crypto::PublicKey> seen(keys.begin(), keys.end());
  if (seen.size() != keys.size()) return Status::Invalid("consensus-duplicate-validator");
  ValidatorSet set;
  set.m_keys = std::move(keys);
  return set;
}

std::optional<std::uint32_t> ValidatorSet::IndexOf(const crypto::PublicKey& key) const {
  const auto it = std::find(m_keys.begin(), m_keys.end(), key);
  if (it == m_keys.end()) return std::nullopt;
  return static_cast<std::uint32_t>(it - m_keys.begin());
}

std::uint32_t ValidatorSet::Proposer(std::uint64_t height, std::uint32_t round) const {
  return static_cast<std::uint32_t>((height + round) % m_keys.size());
}

Hash256 VoteSignHash(std::uint64_t chain_id, const Vote& v) {
  static const crypto::TaggedHasher hasher(crypto::tags::kConsensusVote);
  Writer w;
  w.PutU64(chain_id);
  EncodeVoteBody(w, v);
  return hasher.Hash(w.bytes());
}

Hash256 ProposalSignHash(std::uint64_t chain_id, const Proposal& p) {
  static const crypto::TaggedHasher hasher(crypto::tags::kConsensusProposal);
  Writer w;
  w.PutU64(chain_id);
  EncodeProposalBody(w, p);
  return hasher.Hash(w.bytes());
}

Status SignVote(std::uint64_t chain_id, const crypto::SecretKey& key, Vote& v) {
  VT_ASSIGN_OR_RETURN(v.sig, SignHash(key, VoteSignHash(chain_id, v)));
  return Status::Ok();
}

Status SignProposal(std::uint64_t chain_id, const crypto::SecretKey& key, Proposal& p) {
  VT_ASSIGN_OR_RETURN(p.sig, SignHash(key, ProposalSignHash(chain_id, p)));
  return Status::Ok();
}

Status VerifyVote(std::uint64_t chain_id, const ValidatorSet& set, const Vote& v) {
  if (v.validator >= set.size()) return Status::Invalid("consensus-bad-validator");
  if (!crypto::Verify(set.key(v.validator), VoteSignHash(chain_id, v).span(), v.sig))
    return Status::Invalid("consensus-bad-signature", "vote");
  return Status::Ok();
}

Status VerifyProposal(std::uint64_t chain_id, const ValidatorSet& set, const Proposal& p) {
  if (p.proposer >= set.size()) return Status::Invalid("consensus-bad-validator");
  if (p.proposer != set.Proposer(p.height, p.round)) return Status::Invalid("consensus-wrong-proposer");
  if (p.valid_round && *p.valid_round >= p.round) return Status::Invalid("consensus-bad-valid-round");
  if (!crypto::Verify(set.key(p.proposer), ProposalSignHash(chain_id, p).span(), p.sig))
    return Status::Invalid("consensus-bad-signature", "proposal");
  return Status::Ok();
}

void Encode(Writer& w, const Vote& v) {
  EncodeVoteBody(w, v);
  w.PutU32(v.validator);
  w.PutFixed(v.sig.bytes);
}

Result<Vote> Decode(Reader& r, DecodeAs<Vote>) {
  Vote v;
  VT_ASSIGN_OR_RETURN(const std::uint8_t type, r.GetU8());
  if (type != static_cast<std::uint8_t>(VoteType::kPrevote) && type != static_cast<std::uint8_t>(VoteType::kPrecommit))
    return Status::Invalid("enc-unknown-enum", "vote type");
  v.type = static_cast<VoteType>(type);
  VT_ASSIGN_OR_RETURN(v.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.round, r.GetU32());
  VT_ASSIGN_OR_RETURN(v.block, r.GetOptional<Hash256>([](Reader& rr) { return rr.GetHash(); }));
  VT_ASSIGN_OR_RETURN(v.validator, r.GetU32());
  VT_ASSIGN_OR_RETURN(const ByteSpan sig, r.GetFixed(crypto::Signature::kSize));
  std::copy(sig.begin(), sig.end(), v.sig.bytes.begin());
  return v;
}

void Encode(Writer& w, const Proposal& p) {
  EncodeProposalBody(w, p);
  w.PutU32(p.proposer);
  w.PutFixed(p.sig.bytes);
}

Result<Proposal> Decode(Reader& r, DecodeAs<Proposal>) {
  Proposal p;
  VT_ASSIGN_OR_RETURN(p.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(p.round, r.GetU32());
  VT_ASSIGN_OR_RETURN(p.valid_round, r.GetOptional<std::uint32_t>([](Reader& rr) { return rr.GetU32(); }));
  VT_ASSIGN_OR_RETURN(p.block, r.GetHash());
  VT_ASSIGN_OR_RETURN(p.proposer, r.GetU32());
  VT_ASSIGN_OR_RETURN(const ByteSpan sig, r.GetFixed(crypto::Signature::kSize));
  std::copy(sig.begin(), sig.end(), p.sig.bytes.begin());
  return p;
}

}  // namespace vt::consensus
