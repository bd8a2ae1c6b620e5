#include "consensus/commit.h"

#include <algorithm>
#include <map>

namespace vt::consensus {

CommitCertificate MakeCertificate(std::uint64_t height, std::uint32_t round, const Hash256& block,
                                  const std::vector<Vote>& precommits) {
  std::map<std::uint32_t, crypto::Signature> by_validator;
  for (const Vote& v : precommits)
    if (v.type == VoteType::kPrecommit && v.height == height && v.round == round && v.block == block)
      by_validator.emplace(v.validator, v.sig);
  CommitCertificate c{height, round, block, {}};
  for (const auto& [index, sig] : by_validator) c.sigs.push_back(CommitSig{index, sig});
  return c;
}

Status VerifyCertificate(std::uint64_t chain_id, const ValidatorSet& set, const CommitCertificate& cert,
                         std::uint64_t height, const Hash256& block) {
  if (cert.height != height) return Status::Invalid("commit-wrong-height");
  if (cert.block != block) return Status::Invalid("commit-wrong-block");
  for (std::size_t i = 0; i < cert.sigs.size(); ++i) {
    if (cert.sigs[i].validator >= set.size() || (i > 0 && cert.sigs[i].validator <= cert.sigs[i - 1].validator))
      return Status::Invalid("commit-unsorted");
  }
  // Count before checking signatures: a short certificate costs no verification.
  if (cert.sigs.size() < set.quorum())
    return Status::Invalid("commit-no-quorum", std::to_string(cert.sigs.size()) + " of " +
                                                   std::to_string(set.quorum()) + " needed");
  Vote v{VoteType::kPrecommit, cert.height, cert.round, cert.block, 0, {}};
  for (const CommitSig& s : cert.sigs) {
    v.validator = s.validator;
    v.sig = s.sig;
    VT_TRY(VerifyVote(chain_id, set, v));
  }
  return Status::Ok();
}

DuplicateVote MakeEvidence(Vote first, Vote second) {
  if (second.block < first.block) std::swap(first, second);
  return DuplicateVote{std::move(first), std::move(second)};
}

Status VerifyEvidence(std::uint64_t chain_id, const ValidatorSet& set, const DuplicateVote& ev) {
  const Vote& a = ev.a;
  const Vote& b = ev.b;
  if (a.validator != b.validator || a.type != b.type || a.height != b.height || a.round != b.round ||
      a.block == b.block)
    return Status::Invalid("evidence-not-conflicting");
  if (!(a.block < b.block)) return Status::Invalid("evidence-not-canonical");
  VT_TRY(VerifyVote(chain_id, set, a));
  VT_TRY(VerifyVote(chain_id, set, b));
  return Status::Ok();
}

void Encode(Writer& w, const CommitCertificate& c) {
  w.PutU64(c.height);
  w.PutU32(c.round);
  w.PutHash(c.block);
  w.PutVector(c.sigs, [](Writer& ww, const CommitSig& s) {
    ww.PutU32(s.validator);
    ww.PutFixed(s.sig.bytes);
  });
}

Result<CommitCertificate> Decode(Reader& r, DecodeAs<CommitCertificate>) {
  CommitCertificate c;
  VT_ASSIGN_OR_RETURN(c.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(c.round, r.GetU32());
  VT_ASSIGN_OR_RETURN(c.block, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.sigs, r.GetVector<CommitSig>(
                                  [](Reader& rr) -> Result<CommitSig> {
                                    CommitSig s;
                                    VT_ASSIGN_OR_RETURN(s.validator, rr.GetU32());
                                    VT_ASSIGN_OR_RETURN(const ByteSpan sig, rr.GetFixed(crypto::Signature::kSize));
                                    std::copy(sig.begin(), sig.end(), s.sig.bytes.begin());
                                    return s;
                                  },
                                  kMaxValidators));
  return c;
}

void Encode(Writer& w, const DuplicateVote& e) {
  Encode(w, e.a);
  Encode(w, e.b);
}

Result<DuplicateVote> Decode(Reader& r, DecodeAs<DuplicateVote>) {
  DuplicateVote e;
  VT_ASSIGN_OR_RETURN(e.a, Decode(r, DecodeAs<Vote>{}));
  VT_ASSIGN_OR_RETURN(e.b, Decode(r, DecodeAs<Vote>{}));
  return e;
}

}  // namespace vt::consensus
