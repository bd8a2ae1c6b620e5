#include "consensus/wire.h"

namespace vt::consensus {
namespace {

constexpr std::uint8_t kProposalKind = 1;
constexpr std::uint8_t kVoteKind = 2;

Result<ConsensusMsg> DecodeBody(Reader& r) {
  VT_ASSIGN_OR_RETURN(const std::uint8_t kind, r.GetU8());
  VT_TRY(r.GetU32().status());  // resend count: no meaning to the receiver
  if (kind == kProposalKind) {
    ProposalMsg m;
    VT_ASSIGN_OR_RETURN(m.proposal, Decode(r, DecodeAs<Proposal>{}));
    VT_ASSIGN_OR_RETURN(m.block, r.GetBytes(kMaxBlockPayload));
    return ConsensusMsg(std::move(m));
  }
  if (kind == kVoteKind) {
    VT_ASSIGN_OR_RETURN(Vote v, Decode(r, DecodeAs<Vote>{}));
    return ConsensusMsg(std::move(v));
  }
  return Status::Invalid("enc-unknown-enum", "consensus message kind");
}

}  // namespace

Bytes EncodeMsg(const ConsensusMsg& m, std::uint32_t resend) {
  Writer w;
  if (const auto* p = std::get_if<ProposalMsg>(&m)) {
    w.PutU8(kProposalKind);
    w.PutU32(resend);
    Encode(w, p->proposal);
    w.PutBytes(p->block);
  } else {
    w.PutU8(kVoteKind);
    w.PutU32(resend);
    Encode(w, std::get<Vote>(m));
  }
  return std::move(w).Take();
}

Result<ConsensusMsg> DecodeMsg(ByteSpan bytes) {
  Reader r(bytes);
  auto m = DecodeBody(r);
  if (!m.ok()) return Status::Invalid("consensus-malformed", m.status().ToString());
  if (Status s = r.Finish(); !s.ok()) return Status::Invalid("consensus-malformed", s.ToString());
  return m;
}

void Encode(Writer& w, const FinalBlock& f) {
  w.PutBytes(f.block);
  Encode(w, f.cert);
}

Result<FinalBlock> Decode(Reader& r, DecodeAs<FinalBlock>) {
  FinalBlock f;
  VT_ASSIGN_OR_RETURN(f.block, r.GetBytes(kMaxBlockPayload));
  VT_ASSIGN_OR_RETURN(f.cert, Decode(r, DecodeAs<CommitCertificate>{}));
  return f;
}

}  // namespace vt::consensus
