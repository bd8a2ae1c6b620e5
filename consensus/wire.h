#pragma once
// Payloads of the P2P `consensus` message (net MsgType 18; docs/formats.md)
// and of a final block served by sync:
//
//   ConsensusMsg = u8 kind ‖ u32 resend ‖ body
//     kind 1: Proposal ‖ bytes block      (the proposed block travels with its proposal)
//     kind 2: Vote
//   `resend` is 0 when a message is first sent and the sender's re-send
//   count after that (not signed): gossip deduplicates by content, and a
//   re-sent message must get through to a peer that lost the first copy.
//   FinalBlock   = bytes block ‖ CommitCertificate
//
// Caps: a block at most kMaxBlockPayload bytes; the certificate's own caps.

#include <cstdint>
#include <variant>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "consensus/commit.h"
#include "consensus/messages.h"

namespace vt::consensus {

inline constexpr std::size_t kMaxBlockPayload = std::size_t{8} << 20;  // limits::kMaxBlockBytes

struct ProposalMsg {
  Proposal proposal;
  Bytes block;
  bool operator==(const ProposalMsg&) const = default;
};

using ConsensusMsg = std::variant<ProposalMsg, Vote>;

Bytes EncodeMsg(const ConsensusMsg& m, std::uint32_t resend = 0);
// Invalid "consensus-malformed" (with the codec's reason as detail).
Result<ConsensusMsg> DecodeMsg(ByteSpan bytes);

struct FinalBlock {
  Bytes block;
  CommitCertificate cert;
  bool operator==(const FinalBlock&) const = default;
};

void Encode(Writer& w, const FinalBlock& f);
Result<FinalBlock> Decode(Reader& r, DecodeAs<FinalBlock>);

}  // namespace vt::consensus
